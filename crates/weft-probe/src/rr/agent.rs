//! The agent side of a request/response test: open a data endpoint (a TCP listener or a UDP
//! socket), announce it, and answer requests from the client's address until the client says it
//! is done, the test runs past the agent's maximum duration, or the data path stays idle past
//! the idle time-out. See [`crate::proto::rr_spec`] for the exchange.
//!
//! Whatever arrives on the data path is answered or dropped, never trusted: requests are read as
//! byte counts (TCP) or datagrams of the announced size (UDP); datagrams of another size or from
//! another address are counted and dropped; connections from another address are closed.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use crate::control::Control;
use crate::cpu::ThreadCpu;
use crate::error::ProbeError;
use crate::proto::rr_spec::RR_PORT_KEY;
use crate::proto::{Accept, CpuUse, Finished, Message, RrSpec, StreamEnd, Transport};
use crate::server::TestContext;

use super::busy::{self, BusyPoll, Spinner};
use super::config::{MAX_UDP_PAYLOAD_V4, MAX_UDP_PAYLOAD_V6};
use super::place::{CpuTrace, pin_current_thread};
use super::wire;

/// Key of the request's `params` asking the agent to pin its serving thread to a CPU (a
/// number; `weft rr --affinity N,M`).
pub const AGENT_CPU_KEY: &str = "agent_cpu";

/// Key of the request's `params` asking the agent to busy-poll its data socket (`true`;
/// `weft rr --busy-poll`).
pub const BUSY_POLL_KEY: &str = "busy_poll";

/// While spinning, how often the bounds (client done, deadlines) are looked at.
const SPIN_CHECK: Duration = Duration::from_millis(1);

/// How often a blocked data-path wait looks at the control state and the clocks.
const SLICE: Duration = Duration::from_millis(20);

/// The control watcher's view of the client.
const RUNNING: u8 = 0;
const DONE: u8 = 1;
const GONE: u8 = 2;

/// What the agent did on the data path.
#[derive(Debug, Default)]
struct Counts {
    requests: u64,
    request_bytes: u64,
    responses: u64,
    response_bytes: u64,
    /// Connections or datagrams refused: wrong address, wrong size.
    refused: u64,
    /// The CPUs the serving thread answered on.
    cpus: CpuTrace,
}

/// Runs the agent side of one request/response test on an accepted control connection.
///
/// The server calls this after it validated the request and reserved a test slot; an `Err` is
/// sent to the client as an `Error` message by the caller.
pub fn serve(ctx: &mut TestContext, spec: &RrSpec) -> Result<(), ProbeError> {
    check(ctx, spec)?;
    let agent_cpu = spec
        .params
        .get(AGENT_CPU_KEY)
        .and_then(serde_json::Value::as_u64);
    if let Some(c) = agent_cpu {
        let c = u32::try_from(c).unwrap_or(u32::MAX);
        // This thread serves this one test and ends with it: the pin goes with it.
        pin_current_thread(c).map_err(ProbeError::Limit)?;
    }
    let spin = spec
        .params
        .get(BUSY_POLL_KEY)
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    tracing::info!(transport = ?spec.transport, request = spec.request_size,
                   response = spec.response_size, cpu = ?agent_cpu, busy_poll = spin,
                   "rr test starts");
    let client_ip = ctx
        .control
        .stream()
        .peer_addr()
        .map_err(|e| ProbeError::io("reading the client's address", e))?
        .ip();
    let cpu0 = ThreadCpu::thread();
    let started = Instant::now();
    let endpoint = match spec.transport {
        Transport::Tcp => {
            let l = TcpListener::bind(SocketAddr::new(ctx.local_ip(), 0))
                .map_err(|e| ProbeError::io("binding the rr data listener", e))?;
            Endpoint::Tcp(l)
        }
        Transport::Udp => Endpoint::Udp(ctx.bind_udp()?),
    };
    let port = endpoint.port()?;
    ctx.control.send(&Message::Accept(Accept {
        test_id: ctx.test_id,
        cookie: ctx.cookie_hex(),
        udp_ports: if spec.transport == Transport::Udp {
            vec![port]
        } else {
            Vec::new()
        },
    }))?;
    ctx.control
        .send(&Message::Ext(serde_json::json!({ RR_PORT_KEY: port })))?;
    let state = watch_control(&ctx.control)?;
    let bounds = Bounds {
        client_ip,
        deadline: ctx.hard_deadline(),
        idle: ctx.limits.idle_timeout,
        state,
    };
    let mut counts = Counts::default();
    let mut busy_poll = BusyPoll::default();
    let ended = match &endpoint {
        Endpoint::Tcp(l) => serve_tcp(
            l,
            spec,
            &bounds,
            &mut counts,
            spin.then_some(&mut busy_poll),
        ),
        Endpoint::Udp(s) => {
            if spin {
                s.set_nonblocking(true)
                    .map_err(|e| ProbeError::io("non-blocking socket for --busy-poll", e))?;
                busy_poll = BusyPoll::enable(s);
            }
            serve_udp(s, spec, &bounds, &mut counts, spin)
        }
    };
    tracing::info!(requests = counts.requests, cpus = %counts.cpus.label(),
                   busy_poll = %busy_poll.label(), ok = ended.is_ok(), "rr test ends");
    if counts.refused > 0 {
        ctx.log(&format!(
            "refused {} connections or datagrams on the data path",
            counts.refused
        ));
    }
    ended?;
    let cpu = ThreadCpu::thread().since(cpu0);
    let wall_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    ctx.control.send(&Message::Finished(Finished {
        tx: vec![StreamEnd {
            bytes: counts.response_bytes,
            packets: counts.responses,
            elapsed_ns: wall_ns,
            udp: None,
        }],
        rx: vec![StreamEnd {
            bytes: counts.request_bytes,
            packets: counts.requests,
            elapsed_ns: wall_ns,
            udp: None,
        }],
        cpu: CpuUse {
            user_ns: cpu.user_ns,
            sys_ns: cpu.sys_ns,
            wall_ns,
        },
        sockets_end: Vec::new(),
        placement: Some(serde_json::json!({ "cpus": counts.cpus, "busy_poll": busy_poll })),
    }))?;
    Ok(())
}

/// Refuses requests outside the agent's limits.
fn check(ctx: &TestContext, spec: &RrSpec) -> Result<(), ProbeError> {
    let max = match spec.transport {
        Transport::Tcp => ctx.limits.max_len,
        Transport::Udp if ctx.local_ip().is_ipv6() => MAX_UDP_PAYLOAD_V6.min(ctx.limits.max_len),
        Transport::Udp => MAX_UDP_PAYLOAD_V4.min(ctx.limits.max_len),
    };
    for (what, v) in [
        ("request", spec.request_size),
        ("response", spec.response_size),
    ] {
        if v == 0 || v > max {
            return Err(ProbeError::Limit(format!(
                "{what} size {v} is outside this agent's range of 1 to {max} bytes"
            )));
        }
    }
    Ok(())
}

enum Endpoint {
    Tcp(TcpListener),
    Udp(UdpSocket),
}

impl Endpoint {
    fn port(&self) -> Result<u16, ProbeError> {
        let a = match self {
            Endpoint::Tcp(l) => l.local_addr(),
            Endpoint::Udp(s) => s.local_addr(),
        };
        a.map(|a| a.port())
            .map_err(|e| ProbeError::io("reading the data port", e))
    }
}

/// When the data path must stop.
struct Bounds {
    client_ip: IpAddr,
    deadline: Instant,
    idle: Duration,
    state: Arc<AtomicU8>,
}

impl Bounds {
    /// `Ok(true)` when the client is done, `Ok(false)` to go on, `Err` when a bound is passed.
    fn check(&self, last_activity: Instant) -> Result<bool, ProbeError> {
        match self.state.load(Ordering::SeqCst) {
            DONE => return Ok(true),
            GONE => {
                return Err(ProbeError::Protocol(
                    "the client closed the control connection mid-test".into(),
                ));
            }
            _ => {}
        }
        let now = Instant::now();
        if now >= self.deadline {
            return Err(ProbeError::Limit(
                "the test ran past this agent's maximum duration (--max-duration); \
                 ask for fewer transactions per size"
                    .into(),
            ));
        }
        if now.duration_since(last_activity) >= self.idle {
            return Err(ProbeError::Timeout(format!(
                "no request on the data path for {:?} (the agent's idle time-out)",
                self.idle
            )));
        }
        Ok(false)
    }
}

/// Reads control messages on a thread of its own until the client's `SenderDone` (or `Bye`), or
/// the connection's end; the thread ends when the server shuts the connection down.
fn watch_control(control: &Control) -> Result<Arc<AtomicU8>, ProbeError> {
    let mut c = control.try_clone()?;
    c.set_read_timeout(None)?;
    let state = Arc::new(AtomicU8::new(RUNNING));
    let st = Arc::clone(&state);
    std::thread::Builder::new()
        .name("weft-rr-ctl".into())
        .spawn(move || {
            loop {
                match c.recv() {
                    Ok(Message::SenderDone(_) | Message::Bye) => {
                        let _ =
                            st.compare_exchange(RUNNING, DONE, Ordering::SeqCst, Ordering::SeqCst);
                    }
                    Ok(_) => {}
                    Err(_) => {
                        let _ =
                            st.compare_exchange(RUNNING, GONE, Ordering::SeqCst, Ordering::SeqCst);
                        return;
                    }
                }
            }
        })
        .map_err(|e| ProbeError::io("starting the control watcher", e))?;
    Ok(state)
}

/// Waits up to `t` for `fd` to become readable.
fn readable(fd: &impl AsRawFd, t: Duration) -> std::io::Result<bool> {
    let ns = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
    Ok(weft_sys::readable(&[fd.as_raw_fd()], Some(ns))?[0])
}

fn serve_tcp(
    l: &TcpListener,
    spec: &RrSpec,
    b: &Bounds,
    counts: &mut Counts,
    mut spin: Option<&mut BusyPoll>,
) -> Result<(), ProbeError> {
    let mut last = Instant::now();
    let mut req = vec![0u8; spec.request_size as usize];
    let mut resp = vec![0u8; spec.response_size as usize];
    loop {
        if b.check(last)? {
            return Ok(());
        }
        if !readable(l, SLICE).map_err(|e| ProbeError::io("waiting for a data connection", e))? {
            continue;
        }
        let (s, peer) = match l.accept() {
            Ok(x) => x,
            Err(_) => continue,
        };
        if peer.ip() != b.client_ip {
            counts.refused += 1;
            continue;
        }
        last = Instant::now();
        if let Some(bp) = spin.as_deref_mut() {
            if s.set_nonblocking(true).is_err() {
                continue;
            }
            *bp = BusyPoll::enable(&s);
            serve_tcp_conn_spin(s, b, &mut req, &mut resp, counts, &mut last)?;
        } else {
            serve_tcp_conn(s, b, &mut req, &mut resp, counts, &mut last)?;
        }
    }
}

/// Answers requests on one connection until the client closes it. A connection error ends only
/// the connection (a cold client may reset it); bounds end the test.
fn serve_tcp_conn(
    mut s: TcpStream,
    b: &Bounds,
    req: &mut [u8],
    resp: &mut [u8],
    counts: &mut Counts,
    last: &mut Instant,
) -> Result<(), ProbeError> {
    let _ = s.set_nodelay(true);
    if s.set_read_timeout(Some(SLICE)).is_err() || s.set_write_timeout(Some(b.idle)).is_err() {
        return Ok(());
    }
    let mut got = 0;
    loop {
        let Some(rest) = req.get_mut(got..) else {
            return Ok(());
        };
        match s.read(rest) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                got += n;
                counts.request_bytes += n as u64;
                *last = Instant::now();
                if got == req.len() {
                    got = 0;
                    counts.requests += 1;
                    // A busy connection never times out: look at the bounds now and then.
                    if counts.requests % 256 == 0 && b.check(*last)? {
                        return Ok(());
                    }
                    wire::answer_into(req, resp);
                    if s.write_all(resp).is_err() {
                        return Ok(());
                    }
                    counts.responses += 1;
                    counts.response_bytes += resp.len() as u64;
                    counts.cpus.sample();
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if b.check(*last)? {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Ok(()),
        }
    }
}

/// As [`serve_tcp_conn`] on a non-blocking socket, spinning between requests (`--busy-poll`).
fn serve_tcp_conn_spin(
    mut s: TcpStream,
    b: &Bounds,
    req: &mut [u8],
    resp: &mut [u8],
    counts: &mut Counts,
    last: &mut Instant,
) -> Result<(), ProbeError> {
    let _ = s.set_nodelay(true);
    let mut got = 0;
    let mut spinner = Spinner::default();
    let mut checked = Instant::now();
    loop {
        let Some(rest) = req.get_mut(got..) else {
            return Ok(());
        };
        match s.read(rest) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                got += n;
                counts.request_bytes += n as u64;
                *last = Instant::now();
                if got == req.len() {
                    got = 0;
                    counts.requests += 1;
                    wire::answer_into(req, resp);
                    if busy::write_all(&mut s, resp, *last + b.idle).is_err() {
                        return Ok(());
                    }
                    counts.responses += 1;
                    counts.response_bytes += resp.len() as u64;
                    counts.cpus.sample();
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => spinner.spin(),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Ok(()),
        }
        // A spinning loop never times out on its own: look at the bounds every millisecond.
        if checked.elapsed() >= SPIN_CHECK {
            checked = Instant::now();
            if b.check(*last)? {
                return Ok(());
            }
        }
    }
}

fn serve_udp(
    s: &UdpSocket,
    spec: &RrSpec,
    b: &Bounds,
    counts: &mut Counts,
    spin: bool,
) -> Result<(), ProbeError> {
    if !spin {
        s.set_read_timeout(Some(SLICE))
            .map_err(|e| ProbeError::io("UDP read time-out", e))?;
    }
    let mut spinner = Spinner::default();
    let mut checked = Instant::now();
    let want = spec.request_size as usize;
    // One byte more than a request, so that an oversized datagram is seen as such.
    let mut buf = vec![0u8; want + 1];
    let mut resp = vec![0u8; spec.response_size as usize];
    let mut last = Instant::now();
    loop {
        match s.recv_from(&mut buf) {
            Ok((n, from)) => {
                if from.ip() != b.client_ip || n != want {
                    counts.refused += 1;
                } else if let Some(r) = buf.get(..n) {
                    last = Instant::now();
                    counts.requests += 1;
                    counts.request_bytes += n as u64;
                    wire::answer_into(r, &mut resp);
                    // A send that fails (buffer full, ICMP from a closed client socket) is a
                    // lost answer, which the client counts.
                    if s.send_to(&resp, from).is_ok() {
                        counts.responses += 1;
                        counts.response_bytes += resp.len() as u64;
                        counts.cpus.sample();
                    }
                }
            }
            Err(e) if spin && e.kind() == ErrorKind::WouldBlock => {
                spinner.spin();
                if checked.elapsed() < SPIN_CHECK {
                    continue;
                }
                checked = Instant::now();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // ICMP errors from earlier answers surface here on some kernels; keep serving.
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(ProbeError::io("receiving a request", e)),
        }
        if b.check(last)? {
            return Ok(());
        }
    }
}
