//! Traffic between emulated hosts, run on threads inside the hosts' namespaces: bulk TCP with a
//! receiver window clamp, constant-rate UDP, UDP request/response, and message passing among N
//! ranks (`weft mp`'s executor, one rank per host). Used by `weft emu run`, by
//! the scenario engine and by the fidelity tests. Any other tool (iperf3, `weft tput`) can be run
//! with [`crate::Emulation::command`].
//!
//! The transfers and the request/response are the core's applications
//! ([`weft_model::app::bulk`], [`weft_model::app::rr`]), the same the simulator's hosts run, on
//! real sockets through the socket driver ([`weft_sock`]); this file only opens the sockets in
//! the right namespaces and turns the applications' counts into results.

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;
use weft_model::Rate;
use weft_model::app::bulk::{BulkSink, BulkSource, Pace};
use weft_model::app::rr::{Answer, Latencies, RrClient, RrServer, RrSpec, Via};
use weft_sock::datagram::{self, Peers};
use weft_sock::{Clock, Options, stream};

use crate::emulation::Emulation;
use crate::error::EmuError;

/// What a bulk TCP transfer achieved.
#[derive(Clone, Debug, Serialize)]
pub struct TcpResult {
    /// Payload bytes received.
    pub bytes: u64,
    /// Seconds from the first to the last byte.
    pub seconds: f64,
    /// Payload rate over the steady part (after the warm-up), bits/s.
    pub steady_bps: f64,
    /// Payload rate over the whole transfer, bits/s.
    pub mean_bps: f64,
}

/// What a constant-rate UDP stream achieved.
#[derive(Clone, Debug, Serialize)]
pub struct UdpResult {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams received.
    pub received: u64,
    /// Payload rate received over the steady part, bits/s.
    pub steady_bps: f64,
}

pub(crate) fn werr(what: &str) -> impl Fn(std::io::Error) -> EmuError + '_ {
    move |e| EmuError::Workload(what.to_string(), e.to_string())
}

type Nested<R> = std::thread::JoinHandle<Result<Result<R, EmuError>, EmuError>>;

pub(crate) fn join<R>(h: Nested<R>, what: &str) -> Result<R, EmuError> {
    h.join()
        .map_err(|_| EmuError::Workload(what.into(), "thread panicked".into()))??
}

/// Bulk TCP from host `from` to host `to` for `time`, the receiver's window clamped to `window`
/// bytes (receive buffer 4x that). The steady rate skips the first `warmup`.
pub fn tcp_bulk(
    emu: &Emulation,
    from: &str,
    to: &str,
    window: Option<u32>,
    time: Duration,
    warmup: Duration,
) -> Result<TcpResult, EmuError> {
    tcp_bulk_cc(emu, from, to, window, None, time, warmup)
}

/// A bound on any one run of the driver: what it is asked to take, and then some.
fn bounded(time: Duration) -> Options {
    Options {
        until: Some(model_time(time + Duration::from_secs(30))),
        ..Options::default()
    }
}

fn model_time(d: Duration) -> weft_model::Instant {
    weft_model::Instant(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn model_duration(d: Duration) -> weft_model::Duration {
    weft_model::Duration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Bits per second of `bytes` over `seconds` (0 over nothing).
fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

/// As [`tcp_bulk`], the sender's congestion control set to `cc` (Linux's name: "reno",
/// "cubic") when given.
pub fn tcp_bulk_cc(
    emu: &Emulation,
    from: &str,
    to: &str,
    window: Option<u32>,
    cc: Option<&'static str>,
    time: Duration,
    warmup: Duration,
) -> Result<TcpResult, EmuError> {
    let dst = emu.host(to)?.addr;
    let (tx, rx) = mpsc::channel();
    let sink = emu.in_host(to, move || -> Result<TcpResult, EmuError> {
        let l = weft_sys::sockopt::tcp_listener(window.map(|w| w.saturating_mul(4)), window)
            .map_err(werr("tcp listen"))?;
        let _ = tx.send(l.local_addr().map(|a| a.port()).unwrap_or(0));
        let s = accept(&l, time + Duration::from_secs(10), "tcp accept")?;
        // As for UDP: the steady rate is what arrives in [first + warmup, first + time), so
        // that concurrent flows are measured over the same span.
        let mut app = BulkSink::from_first(model_duration(warmup), model_duration(time));
        stream::drive(&mut app, &s, &Clock::start(), &bounded(time))
            .map_err(werr("tcp receive"))?;
        let seconds = app
            .arrivals()
            .map_or(0.0, |(first, last)| (last.0 - first.0) as f64 / 1e9);
        Ok(TcpResult {
            bytes: app.bytes(),
            seconds,
            steady_bps: rate(app.measured(), time.saturating_sub(warmup).as_secs_f64()),
            mean_bps: rate(app.bytes(), seconds),
        })
    })?;
    let port = rx
        .recv()
        .map_err(|_| EmuError::Workload("tcp".into(), "receiver failed to start".into()));
    let port = match port {
        Ok(p) => p,
        Err(e) => return Err(join(sink, "tcp receiver").err().unwrap_or(e)),
    };
    let src = emu.in_host(from, move || -> Result<u64, EmuError> {
        let s =
            TcpStream::connect(SocketAddr::new(dst.into(), port)).map_err(werr("tcp connect"))?;
        if let Some(cc) = cc {
            weft_sys::sockopt::set_congestion(s.as_raw_fd(), cc)
                .map_err(werr("tcp congestion control"))?;
        }
        if window.is_some() {
            s.set_nodelay(true).map_err(werr("tcp nodelay"))?;
        }
        // With a window, at most `window` bytes unacknowledged: the window, enforced at the
        // sender.
        let opts = Options {
            max_outq: window,
            ..bounded(time)
        };
        let mut app = BulkSource::new(Via::Stream, 1 << 16, model_time(time), None);
        let r = stream::drive(&mut app, &s, &Clock::start(), &opts).map_err(werr("tcp send"))?;
        Ok(r.written)
    })?;
    join(src, "tcp sender")?;
    join(sink, "tcp receiver")
}

/// One flow of a sized-flow run ([`tcp_sized_flows`]).
#[derive(Clone, Debug, Serialize)]
pub struct SizedFlow {
    /// Sending host.
    pub from: String,
    /// Receiving host.
    pub to: String,
    /// Payload bytes the receiver read.
    pub bytes: u64,
    /// When its last byte arrived, from the common start, ns (`None`: nothing arrived).
    pub last_ns: Option<u64>,
}

/// One TCP flow of `bytes` for each (sender, receiver) of `pairs`, all started at one instant:
/// each receiver listens first, then every sender connects at the common start and writes
/// `bytes` and closes (`cc`: Linux's congestion control, when given). A flow's completion is
/// the arrival of its last byte at its receiver, counted from the start (the handshake
/// included, as the simulator's flows start with theirs). Each flow is bounded by `time`.
pub fn tcp_sized_flows(
    emu: &Emulation,
    pairs: &[(String, String)],
    bytes: u64,
    cc: Option<&'static str>,
    time: Duration,
) -> Result<Vec<SizedFlow>, EmuError> {
    let dsts = pairs
        .iter()
        .map(|(_, to)| emu.host(to).map(|h| h.addr))
        .collect::<Result<Vec<_>, _>>()?;
    let mut receivers = Vec::new();
    for (_, to) in pairs {
        let (port_tx, port_rx) = mpsc::channel();
        let (start_tx, start_rx) = mpsc::channel::<Instant>();
        let sink = emu.in_host(to, move || -> Result<(u64, Option<u64>), EmuError> {
            let l = weft_sys::sockopt::tcp_listener(None, None).map_err(werr("tcp listen"))?;
            let _ = port_tx.send(l.local_addr().map(|a| a.port()).unwrap_or(0));
            let start = start_rx
                .recv()
                .map_err(|_| EmuError::Workload("tcp".into(), "no start given".into()))?;
            let s = accept(&l, time + Duration::from_secs(10), "tcp accept")?;
            let mut app = BulkSink::all();
            stream::drive(&mut app, &s, &Clock::since(start), &bounded(time))
                .map_err(werr("tcp receive"))?;
            Ok((app.bytes(), app.arrivals().map(|(_, last)| last.0)))
        })?;
        let port = port_rx
            .recv()
            .map_err(|_| EmuError::Workload("tcp".into(), "a receiver failed to start".into()));
        receivers.push((sink, port, start_tx));
    }
    // The start, a little after every receiver listens (and every sender thread is up).
    let start = Instant::now() + Duration::from_millis(20 + 2 * pairs.len() as u64);
    let mut senders = Vec::new();
    for (((from, _), (_, port, start_tx)), &dst) in pairs.iter().zip(&receivers).zip(&dsts) {
        let _ = start_tx.send(start);
        let Ok(port) = *port else { continue };
        senders.push(emu.in_host(from, move || -> Result<u64, EmuError> {
            std::thread::sleep(start.saturating_duration_since(Instant::now()));
            let s = connect_with(SocketAddr::new(dst.into(), port), cc)?;
            let mut app =
                BulkSource::new(Via::Stream, 1 << 16, model_time(time), None).with_limit(bytes);
            let r = stream::drive(&mut app, &s, &Clock::since(start), &bounded(time))
                .map_err(werr("tcp send"))?;
            Ok(r.written)
        })?);
    }
    let mut first_error = None;
    for h in senders {
        if let Err(e) = join(h, "tcp sender") {
            first_error.get_or_insert(e);
        }
    }
    let mut flows = Vec::new();
    for ((from, to), (sink, port, _)) in pairs.iter().zip(receivers) {
        if let Err(e) = port {
            first_error.get_or_insert(e);
        }
        match join(sink, "tcp receiver") {
            Ok((bytes, last_ns)) => flows.push(SizedFlow {
                from: from.clone(),
                to: to.clone(),
                bytes,
                last_ns,
            }),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(flows),
    }
}

/// A TCP connection to `to` whose congestion control is `cc` (Linux's name) from its SYN on:
/// dctcp asks for ECN in the handshake, which a socket switched to it after connecting has
/// already done without.
fn connect_with(to: SocketAddr, cc: Option<&str>) -> Result<TcpStream, EmuError> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).map_err(werr("tcp socket"))?;
    if let Some(cc) = cc {
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(werr("tcp congestion control"))?;
    }
    s.connect(&to.into()).map_err(werr("tcp connect"))?;
    Ok(s.into())
}

/// Accepts one connection on `l` within `wait` (the thread must not outlive the run if the
/// other end failed).
pub(crate) fn accept(
    l: &std::net::TcpListener,
    wait: Duration,
    what: &str,
) -> Result<TcpStream, EmuError> {
    l.set_nonblocking(true).map_err(werr(what))?;
    let give_up = Instant::now() + wait;
    loop {
        match l.accept() {
            Ok((s, _)) => return Ok(s),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < give_up => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(werr(what)(e)),
        }
    }
}

/// Constant-rate UDP from `from` to `to`: `payload`-byte datagrams at `rate` (payload bits/s) for
/// `time`. The steady rate is measured at the receiver after `warmup`.
pub fn udp_cbr(
    emu: &Emulation,
    from: &str,
    to: &str,
    rate: Rate,
    payload: usize,
    time: Duration,
    warmup: Duration,
) -> Result<UdpResult, EmuError> {
    let dst = emu.host(to)?.addr;
    let (tx, rx) = mpsc::channel();
    let sink = emu.in_host(to, move || -> Result<(u64, f64), EmuError> {
        let s = UdpSocket::bind("0.0.0.0:0").map_err(werr("udp bind"))?;
        weft_sys::sockopt::set_rcvbuf(s.as_raw_fd(), 16 << 20).map_err(werr("udp rcvbuf"))?;
        let _ = tx.send(s.local_addr().map(|a| a.port()).unwrap_or(0));
        // The steady rate counts what arrives in [first + warmup, first + time): the sender's
        // schedule shifted by the path's delay, so sparse or bursty deliveries are not
        // stretched over a short interval.
        let mut app = BulkSink::from_first(model_duration(warmup), model_duration(time));
        let opts = Options {
            until: Some(model_time(time + Duration::from_secs(3))),
            tick: weft_model::Duration::from_millis(50),
            ..Options::default()
        };
        // Done once nothing has come for 300 ms after the sender's time.
        let quiet = model_duration(time + Duration::from_millis(300));
        let done = |k: &BulkSink, now: weft_model::Instant| {
            k.arrivals().is_some_and(|(first, last)| {
                now.0 > first.0 + quiet.0 && now.0 > last.0 + 300_000_000
            })
        };
        datagram::drive(
            &mut app,
            &s,
            &mut Peers::learning(),
            &Clock::start(),
            &opts,
            done,
        )
        .map_err(werr("udp receive"))?;
        let span = time.saturating_sub(warmup).as_secs_f64();
        Ok((app.datagrams(), self::rate(app.measured(), span)))
    })?;
    let port = rx
        .recv()
        .map_err(|_| EmuError::Workload("udp".into(), "receiver failed to start".into()))?;
    let src = emu.in_host(from, move || -> Result<u64, EmuError> {
        let s = UdpSocket::bind("0.0.0.0:0").map_err(werr("udp bind"))?;
        let pace = Pace {
            phase: 0,
            bit_ns: payload as u128 * 8 * 1_000_000_000,
            rate: u128::from(rate.as_bps().max(1)),
        };
        let mut app = BulkSource::new(
            Via::Datagram(0),
            payload as u64,
            model_time(time),
            Some(pace),
        );
        let mut peers = Peers::fixed(vec![SocketAddr::new(dst.into(), port)]);
        datagram::drive(
            &mut app,
            &s,
            &mut peers,
            &Clock::start(),
            &bounded(time),
            |_, _| false,
        )
        .map_err(werr("udp send"))?;
        Ok(app.sent())
    })?;
    let sent = join(src, "udp sender")?;
    let (received, steady_bps) = join(sink, "udp receiver")?;
    Ok(UdpResult {
        sent,
        received,
        steady_bps,
    })
}

/// UDP request/response from `from` to a responder on `to`: `count` requests of `sizes.0`
/// bytes, one at a time, each answered with `sizes.1` bytes (the request's number, then
/// filler) and waiting up to `timeout` for its answer. With `spin_after`, the client sleeps that
/// long after each request and then busy-polls for the answer, which takes the host's wake-up
/// latency out of the measurement.
pub fn udp_rr(
    emu: &Emulation,
    from: &str,
    to: &str,
    sizes: (usize, usize),
    count: u32,
    timeout: Duration,
    spin_after: Option<Duration>,
) -> Result<Latencies, EmuError> {
    let dst = emu.host(to)?.addr;
    let (size, response) = (sizes.0 as u64, sizes.1.max(4) as u64);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let (tx, rx) = mpsc::channel();
    let echo = emu.in_host(to, move || -> Result<(), EmuError> {
        let s = UdpSocket::bind("0.0.0.0:0").map_err(werr("echo bind"))?;
        let _ = tx.send(s.local_addr().map(|a| a.port()).unwrap_or(0));
        let mut app = RrServer::new(size, response, Answer::Whole, Via::Datagram(0));
        let done = |_: &RrServer, _| stop2.load(Ordering::Relaxed);
        datagram::drive(
            &mut app,
            &s,
            &mut Peers::learning(),
            &Clock::start(),
            &Options::default(),
            done,
        )
        .map_err(werr("echo"))?;
        Ok(())
    })?;
    let port = rx
        .recv()
        .map_err(|_| EmuError::Workload("rr".into(), "responder failed to start".into()))?;
    let client = emu.in_host(from, move || -> Result<Latencies, EmuError> {
        let s = UdpSocket::bind("0.0.0.0:0").map_err(werr("rr bind"))?;
        let spec = RrSpec {
            request: size,
            response,
            count: u64::from(count),
            timeout: model_duration(timeout),
            start: weft_model::Instant::ZERO,
            give_up: None,
        };
        let mut app = RrClient::new(spec, Via::Datagram(0));
        let opts = Options {
            spin_after: spin_after.map(model_duration),
            ..Options::default()
        };
        let mut peers = Peers::fixed(vec![SocketAddr::new(dst.into(), port)]);
        datagram::drive(&mut app, &s, &mut peers, &Clock::start(), &opts, |_, _| {
            false
        })
        .map_err(werr("rr"))?;
        Ok(app.latencies().clone())
    })?;
    let r = join(client, "rr client");
    stop.store(true, Ordering::Relaxed);
    join(echo, "rr responder")?;
    r
}

/// The switch driver for message passing: it sleeps between frames instead of busy-polling for
/// 50 ms after each. Message passing is latency-bound and sparse; a busy-polling switch on a
/// shared machine is descheduled for milliseconds at a time once its share of the CPU is used,
/// while a sleeping one wakes at once. Measured on the shared 2-core VM (load average 9-12):
/// 4 hosts, 250 us links, 8-byte ping-pong p99 0.6 ms sleeping against 18-21 ms busy-polling
/// (p50 0.54 ms both); 1 ms links at 50 Mbit/s, busy-polling for 0.3 ms after each frame made
/// every collective 1.5-2.5 times slower than sleeping.
pub fn mp_driver() -> crate::driver::DriverConfig {
    crate::driver::DriverConfig {
        busy_poll_ns: 0,
        ..Default::default()
    }
}

/// Message passing among the hosts `ranks` (rank 0 first): every pattern of `spec`, each rank a
/// thread in its host's namespace on the host's address, the ranks connected through the
/// emulated fabric directly or through their daemons (`spec.route`).
pub fn mp(
    emu: &Emulation,
    ranks: &[String],
    spec: &weft_sock::mp::MpSpec,
) -> Result<weft_sock::mp::MpResult, EmuError> {
    use weft_sock::mp::{MpError, inproc};
    let ips = ranks
        .iter()
        .map(|h| emu.host(h).map(|i| std::net::IpAddr::V4(i.addr)))
        .collect::<Result<Vec<_>, _>>()?;
    let spawn = |r: usize, job: inproc::Job| -> Result<(), MpError> {
        let host = ranks
            .get(r)
            .ok_or_else(|| MpError::Config(format!("no host for rank {r}")))?;
        emu.in_host(host, job)
            .map(drop)
            .map_err(|e| MpError::Remote(e.to_string()))
    };
    inproc::run_threads(&ips, ranks.to_vec(), spec, &spawn)
        .map_err(|e| EmuError::Workload("mp".into(), e.to_string()))
}
