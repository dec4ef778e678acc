//! Request/response over real Linux TCP between two emulated hosts, the emulator's side of an
//! `rr` workload with `proto = "tcp"`: one connection opened before the first request (netperf
//! TCP_RR's shape), the client writing each request with one call and reading until the whole
//! answer has arrived; the server answering once the whole request has arrived, or echoing each
//! read at once (an RFC 862 echo service). Nagle's algorithm stays on unless `nodelay` (as the
//! simulated hosts).
//!
//! A late answer counts as lost, as on the simulator: the client keeps the connection and keeps
//! reading, drops the late answer when it arrives, and writes the next request. Only if nothing
//! arrives for [`GIVE_UP`] past the time-out (or the connection breaks) does the client stop,
//! counting the request in flight as lost; the requests not asked are not counted.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use weft_probe::rr::wire;

use crate::emulation::Emulation;
use crate::error::EmuError;
use crate::workload::RrResult;

/// How long past its time-out a late answer is still waited for.
pub const GIVE_UP: Duration = Duration::from_secs(30);

/// What one pair runs.
#[derive(Clone, Copy, Debug)]
pub struct TcpRrSpec {
    /// Bytes of each request.
    pub request: usize,
    /// Bytes of each answer (an echo answers with the request's).
    pub response: usize,
    /// Requests to make.
    pub count: u32,
    /// How long an answer may take before its request counts as lost.
    pub timeout: Duration,
    /// `TCP_NODELAY` on both ends.
    pub nodelay: bool,
    /// The server echoes each read instead of answering whole requests.
    pub echo: bool,
    /// Both ends' socket buffers, bytes (`SO_SNDBUF`/`SO_RCVBUF`), if the workload sets `window`.
    pub window: Option<u32>,
    /// The congestion control both ends use (Linux's name), if the workload sets `cc`.
    pub cc: Option<&'static str>,
}

fn werr(what: &'static str) -> impl Fn(std::io::Error) -> EmuError {
    move |e| EmuError::Workload(what.to_string(), e.to_string())
}

/// Socket options both ends take.
fn configure(s: &TcpStream, spec: &TcpRrSpec) -> Result<(), EmuError> {
    s.set_nodelay(spec.nodelay).map_err(werr("rr nodelay"))?;
    if let Some(w) = spec.window {
        weft_probe::sockopt::set_window(s, u64::from(w))
            .map_err(|e| EmuError::Workload("rr window".into(), e.to_string()))?;
    }
    if let Some(cc) = spec.cc {
        weft_sys::sockopt::set_congestion(s.as_raw_fd(), cc).map_err(werr("rr congestion"))?;
    }
    Ok(())
}

/// `spec.count` requests from host `from` to a server on host `to` over one TCP connection.
pub fn tcp_rr(
    emu: &Emulation,
    from: &str,
    to: &str,
    spec: TcpRrSpec,
) -> Result<RrResult, EmuError> {
    let dst = emu.host(to)?.addr;
    let (tx, rx) = mpsc::channel();
    let server = emu.in_host(to, move || -> Result<u64, EmuError> {
        let l = weft_sys::sockopt::tcp_listener(None, None).map_err(werr("rr listen"))?;
        let _ = tx.send(l.local_addr().map(|a| a.port()).unwrap_or(0));
        // Give up if no client connects (it failed): the thread must not outlive the run.
        l.set_nonblocking(true).map_err(werr("rr listen"))?;
        let give_up = Instant::now() + GIVE_UP;
        let mut s = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < give_up => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(werr("rr accept")(e)),
            }
        };
        s.set_nonblocking(false).map_err(werr("rr accept"))?;
        configure(&s, &spec)?;
        serve(&mut s, &spec)
    })?;
    let port = match rx.recv() {
        Ok(p) => p,
        Err(_) => {
            let e = EmuError::Workload("rr".into(), "the server failed to start".into());
            return Err(join(server, "rr server").err().unwrap_or(e));
        }
    };
    let client = emu.in_host(from, move || -> Result<RrResult, EmuError> {
        let mut s = TcpStream::connect_timeout(&SocketAddr::new(dst.into(), port), GIVE_UP)
            .map_err(werr("rr connect"))?;
        configure(&s, &spec)?;
        let r = ask(&mut s, &spec);
        // Closing tells the server the test is over.
        drop(s);
        r
    })?;
    let r = join(client, "rr client");
    join(server, "rr server")?;
    r
}

fn join<R>(
    h: std::thread::JoinHandle<Result<Result<R, EmuError>, EmuError>>,
    what: &str,
) -> Result<R, EmuError> {
    h.join()
        .map_err(|_| EmuError::Workload(what.into(), "thread panicked".into()))??
}

/// The server's loop until the client closes: answers whole requests, or echoes each read.
/// Returns the requests answered (the reads echoed).
fn serve(s: &mut TcpStream, spec: &TcpRrSpec) -> Result<u64, EmuError> {
    let mut buf = vec![0u8; spec.request.max(1 << 16)];
    let mut answer = vec![0u8; spec.response];
    let mut request = vec![0u8; spec.request];
    let (mut got, mut answered) = (0usize, 0u64);
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) => return Ok(answered),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // A client that went away (reset) ends the test as a close would.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Ok(answered),
            Err(e) => return Err(werr("rr server read")(e)),
        };
        if spec.echo {
            answered += 1;
            s.write_all(&buf[..n]).map_err(werr("rr server write"))?;
            continue;
        }
        // Keep the request's first bytes (its sequence number) for the answer.
        let mut at = 0;
        while at < n {
            let take = (spec.request - got).min(n - at);
            request[got..got + take].copy_from_slice(&buf[at..at + take]);
            (got, at) = (got + take, at + take);
            if got == spec.request {
                got = 0;
                answered += 1;
                wire::answer_into(&request, &mut answer);
                s.write_all(&answer).map_err(werr("rr server write"))?;
            }
        }
    }
}

/// The client's requests, one at a time.
fn ask(s: &mut TcpStream, spec: &TcpRrSpec) -> Result<RrResult, EmuError> {
    let k = wire::seq_len(spec.request, spec.response);
    let mut req = wire::request_buffer(spec.request);
    let mut answer = vec![0u8; spec.response];
    let mut r = RrResult {
        rtt_ns: Vec::new(),
        lost: 0,
    };
    for seq in 0..u64::from(spec.count) {
        wire::put_seq(&mut req, k, seq);
        let t0 = Instant::now();
        s.write_all(&req).map_err(werr("rr client write"))?;
        let deadline = t0 + spec.timeout;
        let (mut got, mut late) = (0usize, false);
        while got < answer.len() {
            let now = Instant::now();
            if !late && now >= deadline {
                late = true;
                r.lost += 1;
            }
            let until = if late { deadline + GIVE_UP } else { deadline };
            if now >= until {
                // Nothing for GIVE_UP past the time-out: the connection is taken as dead.
                return Ok(r);
            }
            s.set_read_timeout(Some((until - now).max(Duration::from_micros(1))))
                .map_err(werr("rr client timeout"))?;
            match s.read(&mut answer[got..]) {
                Ok(0) => {
                    if !late {
                        r.lost += 1;
                    }
                    return Ok(r);
                }
                Ok(n) => got += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(werr("rr client read")(e)),
            }
        }
        if !wire::has_seq(&answer, k, seq) {
            return Err(EmuError::Workload(
                "rr".into(),
                format!(
                    "answer {seq} does not carry its request's number: the stream lost its framing"
                ),
            ));
        }
        let rtt = t0.elapsed();
        if late {
            continue;
        }
        if rtt > spec.timeout {
            r.lost += 1;
        } else {
            r.rtt_ns.push(rtt.as_nanos() as u64);
        }
    }
    Ok(r)
}
