//! The agent side of a request/response test: open a data endpoint (a TCP listener or a UDP
//! socket), announce it, and answer requests from the client's address until the client says it
//! is done, the test runs past the agent's maximum duration, or the data path stays idle past
//! the idle time-out. See [`crate::proto::rr_spec`] for the exchange.
//!
//! Whatever arrives on the data path is answered or dropped, never trusted: requests are read as
//! byte counts (TCP) or datagrams of the announced size (UDP); datagrams of another size or from
//! another address are counted and dropped; connections from another address are closed.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use weft_model::app::rr::{Answer, RrServer, Via};
use weft_sock::datagram::{self, Peers};
use weft_sock::{Clock, Options, stream};

use crate::control::Control;
use crate::cpu::ThreadCpu;
use crate::error::ProbeError;
use crate::proto::rr_spec::RR_PORT_KEY;
use crate::proto::{Accept, CpuUse, Finished, Message, RrSpec, StreamEnd, Transport};
use crate::server::TestContext;

use super::busy::BusyPoll;
use super::config::{MAX_UDP_PAYLOAD_V4, MAX_UDP_PAYLOAD_V6};
use super::place::{CpuTrace, pin_current_thread};

/// Key of the request's `params` asking the agent to pin its serving thread to a CPU (a
/// number; `weft rr --affinity N,M`).
pub const AGENT_CPU_KEY: &str = "agent_cpu";

/// Key of the request's `params` asking the agent to busy-poll its data socket (`true`;
/// `weft rr --busy-poll`).
pub const BUSY_POLL_KEY: &str = "busy_poll";

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

/// The socket driver's options: its longest wait is [`SLICE`], so that the bounds are looked
/// at that often; under `--busy-poll` it spins instead of sleeping.
fn options(spin: bool) -> Options {
    Options {
        tick: weft_model::Duration(u64::try_from(SLICE.as_nanos()).unwrap_or(u64::MAX)),
        spin_after: spin.then_some(weft_model::Duration::ZERO),
        ..Options::default()
    }
}

/// The bounds, looked at on each turn of the socket driver: the last request's time (a CPU
/// sample at each turn that answered), and why the driver stopped.
struct Watch<'a> {
    bounds: &'a Bounds,
    last: Instant,
    answered: u64,
    cpus: &'a mut CpuTrace,
    /// Set when a bound stopped the driver: `Ok` when the client is done, `Err` past a bound.
    end: Option<Result<(), ProbeError>>,
}

impl<'a> Watch<'a> {
    fn new(bounds: &'a Bounds, last: Instant, cpus: &'a mut CpuTrace) -> Self {
        Watch {
            bounds,
            last,
            answered: 0,
            cpus,
            end: None,
        }
    }

    /// Whether the driver must stop now, `server` having answered what it has.
    fn stop(&mut self, server: &RrServer) -> bool {
        if server.answered() != self.answered {
            self.answered = server.answered();
            self.last = Instant::now();
            self.cpus.sample();
        }
        match self.bounds.check(self.last) {
            Ok(false) => false,
            end => {
                self.end = Some(end.map(|_| ()));
                true
            }
        }
    }
}

/// Accepts the client's data connections one after another (a cold client opens one per
/// transaction) and answers on each until it closes, or a bound ends the test.
fn serve_tcp(
    l: &TcpListener,
    spec: &RrSpec,
    b: &Bounds,
    counts: &mut Counts,
    mut spin: Option<&mut BusyPoll>,
) -> Result<(), ProbeError> {
    let mut last = Instant::now();
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
        if let Some(bp) = spin.as_deref_mut() {
            *bp = BusyPoll::enable(&s);
        }
        let _ = s.set_nodelay(true);
        let (end, at) = serve_tcp_conn(&s, spec, b, counts, spin.is_some());
        last = at;
        if let Some(end) = end {
            return end;
        }
    }
}

/// Answers requests on one connection with the core's server until the client closes it. A
/// connection that fails ends only the connection (a cold client may reset it); bounds end the
/// test (`Some`). Returns the last request's time too.
fn serve_tcp_conn(
    s: &TcpStream,
    spec: &RrSpec,
    b: &Bounds,
    counts: &mut Counts,
    spin: bool,
) -> (Option<Result<(), ProbeError>>, Instant) {
    let (req, resp) = (u64::from(spec.request_size), u64::from(spec.response_size));
    let mut server = RrServer::new(req, resp, Answer::Whole, Via::Stream);
    let mut watch = Watch::new(b, Instant::now(), &mut counts.cpus);
    let run = stream::drive_until(&mut server, s, &Clock::start(), &options(spin), |sv, _| {
        watch.stop(sv)
    });
    let (end, last) = (watch.end.take(), watch.last);
    counts.requests += server.answered();
    if let Ok(r) = run {
        counts.request_bytes += r.read;
        counts.responses += r.written / resp;
        counts.response_bytes += r.written / resp * resp;
    }
    (end, last)
}

/// Answers the client's requests, datagrams of the request's size from the client's host, with
/// the core's server until a bound ends the test; datagrams from elsewhere or of another size
/// are counted and dropped.
fn serve_udp(
    s: &UdpSocket,
    spec: &RrSpec,
    b: &Bounds,
    counts: &mut Counts,
    spin: bool,
) -> Result<(), ProbeError> {
    let (req, resp) = (u64::from(spec.request_size), u64::from(spec.response_size));
    let mut server = RrServer::new(req, resp, Answer::Whole, Via::Datagram(0)).exact_size();
    let mut peers = Peers::learning_from(b.client_ip);
    let mut watch = Watch::new(b, Instant::now(), &mut counts.cpus);
    let run = datagram::drive(
        &mut server,
        s,
        &mut peers,
        &Clock::start(),
        &options(spin),
        |sv, _| watch.stop(sv),
    );
    let end = watch.end.take();
    let r = run.map_err(|e| ProbeError::io("receiving a request", e))?;
    counts.requests += server.answered();
    counts.request_bytes += server.answered() * req;
    // A send that failed (buffer full, ICMP from a closed client socket) is a lost answer,
    // which the client counts.
    counts.responses += r.sent;
    counts.response_bytes += r.sent * resp;
    counts.refused += r.ignored + server.refused();
    end.unwrap_or(Ok(()))
}
