//! Traffic between emulated hosts, run on threads inside the hosts' namespaces: bulk TCP with a
//! receiver window clamp, constant-rate UDP, UDP request/response, and message passing among N
//! ranks (`weft mp`'s executor, one rank per host). Used by `weft emu run`, by
//! the scenario engine and by the fidelity tests. Any other tool (iperf3, `weft tput`) can be run
//! with [`crate::Emulation::command`].

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;
use weft_model::Rate;

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

/// Round-trip times of a request/response run.
#[derive(Clone, Debug, Serialize)]
pub struct RrResult {
    /// Round-trip times of answered requests, ns, in order.
    pub rtt_ns: Vec<u64>,
    /// Requests that got no answer within the time-out.
    pub lost: u64,
}

impl RrResult {
    /// The `q` quantile (0..1) of the round-trip times, ns (0 if none).
    pub fn quantile(&self, q: f64) -> u64 {
        let mut v = self.rtt_ns.clone();
        v.sort_unstable();
        if v.is_empty() {
            return 0;
        }
        v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)]
    }
}

fn werr(what: &str) -> impl Fn(std::io::Error) -> EmuError + '_ {
    move |e| EmuError::Workload(what.to_string(), e.to_string())
}

type Nested<R> = std::thread::JoinHandle<Result<Result<R, EmuError>, EmuError>>;

fn join<R>(h: Nested<R>, what: &str) -> Result<R, EmuError> {
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
        // Give up if no sender connects (it failed): the thread must not outlive the run.
        l.set_nonblocking(true).map_err(werr("tcp listen"))?;
        let give_up = Instant::now() + time + Duration::from_secs(10);
        let mut s = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < give_up =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(werr("tcp accept")(e)),
            }
        };
        s.set_nonblocking(false).map_err(werr("tcp accept"))?;
        let mut buf = vec![0u8; 1 << 16];
        // As for UDP: the steady rate is what arrives in [first + warmup, first + time), so
        // that concurrent flows are measured over the same span.
        let (mut bytes, mut first, mut window_bytes) = (0u64, None::<Instant>, 0u64);
        let mut last = Instant::now();
        loop {
            let n = s.read(&mut buf).map_err(werr("tcp read"))?;
            if n == 0 {
                break;
            }
            let now = Instant::now();
            let t = now - *first.get_or_insert(now);
            if t >= warmup && t < time {
                window_bytes += n as u64;
            }
            bytes += n as u64;
            last = now;
        }
        let seconds = first.map_or(0.0, |f| (last - f).as_secs_f64());
        let span = time.saturating_sub(warmup).as_secs_f64();
        let steady_bps = if span > 0.0 {
            window_bytes as f64 * 8.0 / span
        } else {
            0.0
        };
        let mean_bps = if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds
        } else {
            0.0
        };
        Ok(TcpResult {
            bytes,
            seconds,
            steady_bps,
            mean_bps,
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
        let mut s =
            TcpStream::connect(SocketAddr::new(dst.into(), port)).map_err(werr("tcp connect"))?;
        if let Some(cc) = cc {
            weft_sys::sockopt::set_congestion(s.as_raw_fd(), cc)
                .map_err(werr("tcp congestion control"))?;
        }
        let buf = vec![0x5au8; 1 << 16];
        let start = Instant::now();
        let mut sent = 0u64;
        if window.is_some() {
            s.set_nodelay(true).map_err(werr("tcp nodelay"))?;
        }
        while start.elapsed() < time {
            let n = match window {
                None => buf.len(),
                Some(w) => {
                    // Keep at most `w` bytes unacknowledged: the window, enforced at the sender.
                    let outq =
                        weft_sys::sockopt::tcp_outq(s.as_raw_fd()).map_err(werr("tcp outq"))?;
                    let room = (w as usize).saturating_sub(outq as usize).min(buf.len());
                    if room == 0 {
                        std::thread::sleep(Duration::from_micros(100));
                        continue;
                    }
                    room
                }
            };
            s.write_all(&buf[..n]).map_err(werr("tcp write"))?;
            sent += n as u64;
        }
        s.shutdown(std::net::Shutdown::Write)
            .map_err(werr("tcp shutdown"))?;
        Ok(sent)
    })?;
    join(src, "tcp sender")?;
    join(sink, "tcp receiver")
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
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .map_err(werr("udp timeout"))?;
        let mut buf = vec![0u8; 65536];
        // The steady rate counts what arrives in [first + warmup, first + time): the sender's
        // schedule shifted by the path's delay, so sparse or bursty deliveries are not
        // stretched over a short interval.
        let (mut count, mut first, mut window_bytes) = (0u64, None::<Instant>, 0u64);
        let deadline = Instant::now() + time + Duration::from_secs(3);
        while Instant::now() < deadline {
            match s.recv(&mut buf) {
                Ok(n) => {
                    let now = Instant::now();
                    let f = *first.get_or_insert(now);
                    let t = now - f;
                    if t >= warmup && t < time {
                        window_bytes += n as u64;
                    }
                    count += 1;
                }
                Err(_) if first.is_some_and(|f| f.elapsed() > time) => break,
                Err(_) => {}
            }
        }
        let span = time.saturating_sub(warmup).as_secs_f64();
        let steady = if span > 0.0 {
            window_bytes as f64 * 8.0 / span
        } else {
            0.0
        };
        Ok((count, steady))
    })?;
    let port = rx
        .recv()
        .map_err(|_| EmuError::Workload("udp".into(), "receiver failed to start".into()))?;
    let src = emu.in_host(from, move || -> Result<u64, EmuError> {
        let s = UdpSocket::bind("0.0.0.0:0").map_err(werr("udp bind"))?;
        s.connect(SocketAddr::new(dst.into(), port))
            .map_err(werr("udp connect"))?;
        let buf = vec![0x33u8; payload];
        let gap = Duration::from_secs_f64(payload as f64 * 8.0 / rate.as_bps().max(1) as f64);
        let start = Instant::now();
        let mut sent = 0u64;
        while start.elapsed() < time {
            // Catch up with the schedule, then sleep until the next datagram is due.
            let due = start + gap.mul_f64(sent as f64);
            let now = Instant::now();
            if now < due {
                std::thread::sleep(due - now);
            }
            if s.send(&buf).is_ok() {
                sent += 1;
            } else {
                std::thread::sleep(Duration::from_micros(50));
                sent += 1;
            }
        }
        Ok(sent)
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
/// bytes, one at a time, each answered with `sizes.1` bytes (the request's first bytes, then
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
) -> Result<RrResult, EmuError> {
    let dst = emu.host(to)?.addr;
    let (size, response) = (sizes.0, sizes.1.max(4));
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let (tx, rx) = mpsc::channel();
    let echo = emu.in_host(to, move || -> Result<(), EmuError> {
        let s = UdpSocket::bind("0.0.0.0:0").map_err(werr("echo bind"))?;
        let _ = tx.send(s.local_addr().map(|a| a.port()).unwrap_or(0));
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(werr("echo timeout"))?;
        let mut buf = vec![0u8; 65536];
        let mut answer = vec![0u8; response];
        while !stop2.load(Ordering::Relaxed) {
            if let Ok((n, peer)) = s.recv_from(&mut buf) {
                let k = n.min(4).min(response);
                answer[..k].copy_from_slice(&buf[..k]);
                let _ = s.send_to(&answer, peer);
            }
        }
        Ok(())
    })?;
    let port = rx
        .recv()
        .map_err(|_| EmuError::Workload("rr".into(), "responder failed to start".into()))?;
    let client = emu.in_host(from, move || -> Result<RrResult, EmuError> {
        let s = UdpSocket::bind("0.0.0.0:0").map_err(werr("rr bind"))?;
        s.connect(SocketAddr::new(dst.into(), port))
            .map_err(werr("rr connect"))?;
        s.set_read_timeout(Some(timeout))
            .map_err(werr("rr timeout"))?;
        let mut req = vec![0u8; size.max(4)];
        let mut buf = vec![0u8; 65536];
        let mut r = RrResult {
            rtt_ns: Vec::new(),
            lost: 0,
        };
        let mut nonblocking = false;
        for i in 0..count {
            req[..4].copy_from_slice(&i.to_be_bytes());
            let t0 = Instant::now();
            s.send(&req).map_err(werr("rr send"))?;
            let deadline = t0 + timeout;
            let spin_at = spin_after.map(|d| t0 + d);
            loop {
                let now = Instant::now();
                if now >= deadline {
                    r.lost += 1;
                    break;
                }
                // Sleep in the kernel until `spin_after`, then poll without sleeping so that
                // the host's wake-up latency does not add to the round trip.
                let spin = spin_at.is_some_and(|at| now >= at);
                if spin != nonblocking {
                    s.set_nonblocking(spin).map_err(werr("rr nonblocking"))?;
                    nonblocking = spin;
                }
                if !spin {
                    let until = spin_at.map_or(deadline, |at| at.min(deadline));
                    let wait = until
                        .saturating_duration_since(now)
                        .max(Duration::from_micros(1));
                    s.set_read_timeout(Some(wait)).map_err(werr("rr timeout"))?;
                }
                match s.recv(&mut buf) {
                    Ok(n) if n >= 4 && buf[..4] == i.to_be_bytes() => {
                        r.rtt_ns.push(t0.elapsed().as_nanos() as u64);
                        break;
                    }
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        std::hint::spin_loop();
                    }
                    Err(e) => return Err(werr("rr recv")(e)),
                }
            }
        }
        Ok(r)
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
    spec: &weft_probe::mp::MpSpec,
) -> Result<weft_probe::mp::MpResult, EmuError> {
    use weft_probe::mp::{MpError, inproc};
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
