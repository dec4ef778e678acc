//! Request/response over real Linux TCP between two emulated hosts, the emulator's side of an
//! `rr` workload with `proto = "tcp"`: one connection opened before the first request (netperf
//! TCP_RR's shape), the client writing each request with one call and reading until the whole
//! answer has arrived; the server answering once the whole request has arrived, or echoing each
//! read at once (an RFC 862 echo service). Nagle's algorithm stays on unless `nodelay` (as the
//! simulated hosts). Client and server are the core's ([`weft_model::app::rr`], the simulator's
//! too) on the socket driver ([`weft_sock::stream`]).
//!
//! A late answer counts as lost, as on the simulator: the client keeps the connection and keeps
//! reading, drops the late answer when it arrives, and writes the next request. Only if nothing
//! arrives for [`GIVE_UP`] past the time-out (or the connection breaks) does the client stop,
//! counting the request in flight as lost; the requests not asked are not counted.

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::Duration;

use weft_model::app::rr::{Answer, Latencies, RrClient, RrServer, RrSpec, Via};
use weft_sock::{Clock, Options, stream};

use crate::emulation::Emulation;
use crate::error::EmuError;
use crate::workload::join;

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

fn nanos(d: Duration) -> weft_model::Duration {
    weft_model::Duration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Socket options both ends take.
fn configure(s: &TcpStream, spec: &TcpRrSpec) -> Result<(), EmuError> {
    s.set_nodelay(spec.nodelay).map_err(werr("rr nodelay"))?;
    if let Some(w) = spec.window {
        let fd = s.as_raw_fd();
        for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
            weft_sys::sockopt::set_int(fd, libc::SOL_SOCKET, opt, w.min(i32::MAX as u32) as i32)
                .map_err(werr("rr window"))?;
        }
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
) -> Result<Latencies, EmuError> {
    let dst = emu.host(to)?.addr;
    let (tx, rx) = mpsc::channel();
    let server = emu.in_host(to, move || -> Result<u64, EmuError> {
        let l = weft_sys::sockopt::tcp_listener(None, None).map_err(werr("rr listen"))?;
        let _ = tx.send(l.local_addr().map(|a| a.port()).unwrap_or(0));
        let s = crate::workload::accept(&l, GIVE_UP, "rr accept")?;
        configure(&s, &spec)?;
        let answer = if spec.echo {
            Answer::Echo
        } else {
            Answer::Whole
        };
        let (req, resp) = (spec.request as u64, spec.response as u64);
        let mut app = RrServer::new(req, resp, answer, Via::Stream);
        // Until the client closes (a reset ends the test as a close would).
        stream::drive(&mut app, &s, &Clock::start(), &Options::default())
            .map_err(werr("rr server"))?;
        Ok(app.answered())
    })?;
    let port = match rx.recv() {
        Ok(p) => p,
        Err(_) => {
            let e = EmuError::Workload("rr".into(), "the server failed to start".into());
            return Err(join(server, "rr server").err().unwrap_or(e));
        }
    };
    let client = emu.in_host(from, move || -> Result<Latencies, EmuError> {
        let s = TcpStream::connect_timeout(&SocketAddr::new(dst.into(), port), GIVE_UP)
            .map_err(werr("rr connect"))?;
        configure(&s, &spec)?;
        let rr = RrSpec {
            request: spec.request as u64,
            response: spec.response as u64,
            count: u64::from(spec.count),
            timeout: nanos(spec.timeout),
            start: weft_model::Instant::ZERO,
            give_up: Some(nanos(GIVE_UP)),
        };
        let mut app = RrClient::new(rr, Via::Stream);
        stream::drive(&mut app, &s, &Clock::start(), &Options::default())
            .map_err(werr("rr client"))?;
        // Closing tells the server the test is over.
        drop(s);
        if app.unframed() {
            return Err(EmuError::Workload(
                "rr".into(),
                "an answer does not carry its request's number: the stream lost its framing".into(),
            ));
        }
        Ok(app.latencies().clone())
    })?;
    let r = join(client, "rr client");
    join(server, "rr server")?;
    r
}
