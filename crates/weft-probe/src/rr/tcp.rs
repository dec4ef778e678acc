//! TCP request/response loops: warm (one persistent connection), cold (a connection per
//! transaction, timed separately), and bursts of several transactions in flight.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::busy::{self, BusyPoll};
use super::meter::Meter;
use super::wire;

/// What one size's loop is asked to do.
#[derive(Clone, Copy, Debug)]
pub struct Leg {
    /// Where the data endpoint is.
    pub addr: SocketAddr,
    /// Request size, bytes.
    pub req: usize,
    /// Response size, bytes.
    pub resp: usize,
    /// Transactions in flight.
    pub burst: u32,
    /// Longest a connect, read or write may block.
    pub timeout: Duration,
    /// Spin on a non-blocking socket instead of sleeping (`--busy-poll`).
    pub spin: bool,
}

/// Requests above this many bytes are written from a thread of their own (see `transact`).
const LARGE: usize = 128 * 1024;

/// Why a size stopped before its stop rule was met.
pub type Abort = String;

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn connect(leg: &Leg) -> Result<TcpStream, Abort> {
    let s = TcpStream::connect_timeout(&leg.addr, leg.timeout)
        .map_err(|e| format!("TCP connect to {} failed: {e}", leg.addr))?;
    s.set_nodelay(true)
        .map_err(|e| format!("TCP_NODELAY: {e}"))?;
    s.set_read_timeout(Some(leg.timeout))
        .map_err(|e| format!("read time-out: {e}"))?;
    s.set_write_timeout(Some(leg.timeout))
        .map_err(|e| format!("write time-out: {e}"))?;
    Ok(s)
}

fn io_abort(what: &str, leg: &Leg, e: std::io::Error) -> Abort {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            format!(
                "no {what} within the {:?} time-out from {}",
                leg.timeout, leg.addr
            )
        }
        std::io::ErrorKind::UnexpectedEof => {
            format!("{} closed the connection before answering", leg.addr)
        }
        _ => format!("{what} on {} failed: {e}", leg.addr),
    }
}

fn transact(
    s: &mut TcpStream,
    leg: &Leg,
    req: &mut [u8],
    resp: &mut [u8],
    seq: u64,
) -> Result<(), Abort> {
    let k = wire::seq_len(leg.req, leg.resp);
    wire::put_seq(req, k, seq);
    // Spinning: the socket is non-blocking and the time-out is a deadline checked while spinning.
    let (spin, deadline) = (leg.spin, Instant::now() + leg.timeout);
    let write = move |w: &mut TcpStream, b: &[u8]| {
        if spin {
            busy::write_all(w, b, deadline)
        } else {
            w.write_all(b)
        }
    };
    let read = move |r: &mut TcpStream, b: &mut [u8]| {
        if spin {
            busy::read_exact(r, b, deadline)
        } else {
            r.read_exact(b)
        }
    };
    if req.len() <= LARGE {
        write(s, req).map_err(|e| io_abort("send", leg, e))?;
        read(s, resp).map_err(|e| io_abort("response", leg, e))?;
    } else {
        // An echo service starts answering before the request is complete: write from a
        // second thread so that neither end blocks on a full buffer.
        let mut w = s
            .try_clone()
            .map_err(|e| format!("cloning the socket: {e}"))?;
        let req: &[u8] = req;
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || write(&mut w, req));
            let read = read(s, resp).map_err(|e| io_abort("response", leg, e));
            let wrote = writer
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked")))
                .map_err(|e| io_abort("send", leg, e));
            wrote.and(read)
        })?;
    }
    if !wire::has_seq(resp, k, seq) {
        return Err(format!(
            "the response from {} does not carry the request's sequence number: the peer \
             is not an echo service or a weft agent, or the stream lost its framing",
            leg.addr
        ));
    }
    Ok(())
}

/// One persistent connection; `burst` transactions in flight.
pub fn run_warm(leg: &Leg, meter: &mut Meter) -> Result<(), Abort> {
    let mut s = connect(leg)?;
    if leg.spin {
        s.set_nonblocking(true)
            .map_err(|e| format!("non-blocking socket for --busy-poll: {e}"))?;
        meter.busy_poll = Some(BusyPoll::enable(&s));
    }
    if leg.burst > 1 {
        return run_burst(s, leg, meter);
    }
    let mut req = wire::request_buffer(leg.req);
    let mut resp = vec![0u8; leg.resp];
    while meter.may_issue() {
        let t0 = Instant::now();
        let seq = meter.issue(t0);
        transact(&mut s, leg, &mut req, &mut resp, seq)?;
        let t1 = Instant::now();
        meter.complete(seq, ns(t1 - t0), None, t1);
    }
    Ok(())
}

/// Connect, transact and close for every transaction; the latency includes the connection
/// set-up, which is also recorded on its own.
pub fn run_cold(leg: &Leg, meter: &mut Meter) -> Result<(), Abort> {
    let mut req = wire::request_buffer(leg.req);
    let mut resp = vec![0u8; leg.resp];
    while meter.may_issue() {
        let t0 = Instant::now();
        let seq = meter.issue(t0);
        let mut s = connect(leg)?;
        let tc = Instant::now();
        transact(&mut s, leg, &mut req, &mut resp, seq)?;
        let t1 = Instant::now();
        drop(s);
        meter.complete(seq, ns(t1 - t0), Some(ns(tc - t0)), t1);
    }
    Ok(())
}

/// Several transactions in flight on one connection: this thread writes requests as credits
/// allow, a reader thread matches responses (in order, TCP being a stream) to their send times.
/// A reader of its own keeps a large burst from deadlocking both ends on full buffers.
fn run_burst(s: TcpStream, leg: &Leg, meter: &mut Meter) -> Result<(), Abort> {
    let mut reader_stream = s
        .try_clone()
        .map_err(|e| format!("cloning the socket: {e}"))?;
    let shared = Mutex::new(meter);
    let (sent_tx, sent_rx) = mpsc::channel::<(u64, Instant)>();
    let (credit_tx, credit_rx) = mpsc::channel::<()>();
    for _ in 0..leg.burst {
        let _ = credit_tx.send(());
    }
    let k = wire::seq_len(leg.req, leg.resp);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| -> Result<(), Abort> {
            // Owned here, so that a reader that stops drops the credits and the writer ends.
            let (credit_tx, sent_rx) = (credit_tx, sent_rx);
            let mut resp = vec![0u8; leg.resp];
            while let Ok((seq, t0)) = sent_rx.recv() {
                reader_stream
                    .read_exact(&mut resp)
                    .map_err(|e| io_abort("response", leg, e))?;
                let t1 = Instant::now();
                if !wire::has_seq(&resp, k, seq) {
                    return Err(format!(
                        "response {seq} from {} is out of order or not an answer",
                        leg.addr
                    ));
                }
                shared
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .complete(seq, ns(t1 - t0), None, t1);
                if credit_tx.send(()).is_err() {
                    break;
                }
            }
            Ok(())
        });
        let mut w = s;
        let mut req = wire::request_buffer(leg.req);
        let mut write_result = Ok(());
        while credit_rx.recv().is_ok() {
            let (seq, t0) = {
                let mut m = shared.lock().unwrap_or_else(PoisonError::into_inner);
                if !m.may_issue() {
                    break;
                }
                let t0 = Instant::now();
                (m.issue(t0), t0)
            };
            wire::put_seq(&mut req, k, seq);
            if sent_tx.send((seq, t0)).is_err() {
                break;
            }
            if let Err(e) = w.write_all(&req) {
                write_result = Err(io_abort("send", leg, e));
                break;
            }
        }
        drop(sent_tx);
        let read_result = reader
            .join()
            .unwrap_or_else(|_| Err("the reader thread panicked".into()));
        read_result.and(write_result)
    })
}
