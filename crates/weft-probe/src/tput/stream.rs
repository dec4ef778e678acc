//! The data path: one function per (transport, role), each run on its own thread. Over TCP the
//! source and sink are the core's bulk applications ([`weft_model::app::bulk`]) on the socket
//! driver ([`weft_sock::stream`]), the ones the simulator and the emulator run.
//!
//! Buffers are allocated once per stream; the loops do no allocation. Counters shared with the
//! interval ticker are relaxed atomics updated once per system call. A stream stops when its
//! amount is sent, at end of stream (TCP receiver), after the drain (UDP receiver), on the
//! abort flag, or when the peer stays silent for the idle time-out. The controlling thread
//! unblocks streams on abort by shutting their sockets down.

use std::cell::Cell;
use std::io::ErrorKind;
use std::net::{TcpStream, UdpSocket};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use weft_model::app::Application;
use weft_model::app::bulk::{BulkSink, BulkSource};
use weft_model::app::rr::Via;
use weft_sock as sock;
use weft_sock::buf::PageBuf;
use weft_sock::stream::{self, Observer};

use super::udp_stats::UdpRecvStats;
use crate::cpu::ThreadCpu;
use crate::error::ProbeError;
use crate::proto::data::{UDP_HEADER_LEN, emit_udp_header, parse_udp_header};
use crate::proto::{Amount, StreamEnd};

/// Bytes and writes/datagrams so far on one stream, read by the interval ticker.
#[derive(Debug, Default)]
pub struct Counter {
    /// Bytes so far.
    pub bytes: AtomicU64,
    /// System calls (TCP) or datagrams (UDP) so far.
    pub packets: AtomicU64,
    /// UDP receivers: datagrams missing so far (see `UdpRecvStats::missing`).
    pub missing: AtomicU64,
}

/// What a stream thread returns.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Final counters.
    pub end: StreamEnd,
    /// CPU the thread used.
    pub cpu: ThreadCpu,
}

/// When a UDP receiver may stop: once the sender's count is known and either all of it arrived
/// or the drain period after the count arrived has passed.
///
/// Why a drain: the sender's `SenderDone` travels on the TCP control connection and can overtake
/// datagrams still queued in the network or in the receiver's socket buffer. Stopping at once
/// would count those as lost (iperf3's stop message races its data the same way). The receiver
/// keeps reading until every datagram is accounted for, or until nothing more can plausibly
/// arrive: [`UdpDrain::DRAIN`] after the count arrived.
#[derive(Debug, Default)]
pub struct UdpDrain {
    expected: Mutex<Option<(u64, Instant)>>,
}

impl UdpDrain {
    /// How long a UDP receiver keeps reading after the sender's count arrived.
    pub const DRAIN: Duration = Duration::from_millis(300);

    /// Records the sender's datagram count (now).
    pub fn set_expected(&self, n: u64) {
        if let Ok(mut e) = self.expected.lock() {
            *e = Some((n, Instant::now() + Self::DRAIN));
        }
    }

    fn expected(&self) -> Option<(u64, Instant)> {
        self.expected.lock().ok().and_then(|e| *e)
    }
}

fn amount_limits(amount: Amount, len: usize, start: Instant) -> (u64, Option<Instant>) {
    match amount {
        Amount::Bytes(b) => (b, None),
        Amount::Count(c) => (c.saturating_mul(len as u64), None),
        Amount::TimeNs(t) => (u64::MAX, Some(start + Duration::from_nanos(t))),
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

fn elapsed_ns(start: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(start).as_nanos() as u64
}

/// Sends on a TCP stream until `amount` is sent, then half-closes it (the receiver's EOF): the
/// core's bulk source ([`BulkSource`], ttcp's) on the socket driver.
pub fn tcp_send(
    s: TcpStream,
    amount: Amount,
    len: usize,
    start: Instant,
    idle: Duration,
    counter: &Counter,
    abort: &AtomicBool,
) -> Result<Outcome, ProbeError> {
    let (total, until) = amount_limits(amount, len, start);
    let stop = until.map_or(weft_model::Instant(u64::MAX), |u| {
        weft_model::Instant(elapsed_ns(start, u))
    });
    let mut app = BulkSource::new(Via::Stream, len.max(1) as u64, stop, None);
    if total != u64::MAX {
        app = app.with_limit(total);
    }
    let opts = sock::Options::default();
    drive_tcp(&mut app, &s, start, &opts, idle, counter, abort, Dir::Send)
}

/// Receives on a TCP stream until end of stream (the count then includes every byte the sender
/// wrote, however late it arrived): the core's bulk sink ([`BulkSink`]) on the socket driver.
pub fn tcp_recv(
    s: TcpStream,
    len: usize,
    start: Instant,
    idle: Duration,
    counter: &Counter,
    abort: &AtomicBool,
) -> Result<Outcome, ProbeError> {
    let mut app = BulkSink::all();
    let opts = sock::Options {
        read_len: len.clamp(64 * 1024, 4 * 1024 * 1024),
        ..sock::Options::default()
    };
    drive_tcp(&mut app, &s, start, &opts, idle, counter, abort, Dir::Recv)
}

/// Which way a TCP stream's data goes, for its errors' words.
#[derive(Clone, Copy)]
enum Dir {
    Send,
    Recv,
}

/// The socket driver's calls counted into a stream's [`Counter`], with the last instant data
/// moved (ns since the test's start).
struct Counting<'a> {
    counter: &'a Counter,
    last: &'a Cell<u64>,
}

impl Counting<'_> {
    fn count(&mut self, n: u64, now: weft_model::Instant) {
        self.counter.bytes.fetch_add(n, Ordering::Relaxed);
        self.counter.packets.fetch_add(1, Ordering::Relaxed);
        self.last.set(now.0);
    }
}

impl Observer for Counting<'_> {
    fn wrote(&mut self, n: u64, now: weft_model::Instant) {
        self.count(n, now);
    }

    fn read(&mut self, n: u64, now: weft_model::Instant) {
        self.count(n, now);
    }
}

/// Runs `app` on `s` with the test's clock, counting into `counter`, until the application is
/// done, the stream ends, the abort flag is set, or nothing moves for `idle`. Returns the
/// stream's counts (the bytes it wrote or read, the calls, the instant data last moved) and the
/// CPU the thread used.
#[allow(clippy::too_many_arguments)]
fn drive_tcp<A: Application>(
    app: &mut A,
    s: &TcpStream,
    start: Instant,
    opts: &sock::Options,
    idle: Duration,
    counter: &Counter,
    abort: &AtomicBool,
    dir: Dir,
) -> Result<Outcome, ProbeError> {
    let cpu0 = ThreadCpu::thread();
    let clock = sock::Clock::since(start);
    let last = Cell::new(0);
    let entered = clock.now().0;
    let idle_ns = u64::try_from(idle.as_nanos()).unwrap_or(u64::MAX);
    let stalled = Cell::new(false);
    let mut counting = Counting {
        counter,
        last: &last,
    };
    let aborted = || abort.load(Ordering::Relaxed);
    let report = stream::drive_observed(app, s, &clock, opts, &mut counting, |_, now| {
        let moved = last.get().max(entered);
        stalled.set(now.0.saturating_sub(moved) > idle_ns);
        aborted() || stalled.get()
    });
    let (doing, stall) = match dir {
        Dir::Send => ("sending data", "nothing could be sent"),
        Dir::Recv => ("receiving data", "nothing received"),
    };
    if aborted() {
        return Err(ProbeError::Protocol("test aborted".into()));
    }
    let report = report.map_err(|e| ProbeError::io(doing, e))?;
    if stalled.get() {
        return Err(ProbeError::Timeout(format!(
            "data stream stalled: {stall} for {idle:?}"
        )));
    }
    if let Some(f) = report.error {
        return Err(ProbeError::io(doing, f.to_io()));
    }
    Ok(Outcome {
        end: StreamEnd {
            bytes: match dir {
                Dir::Send => report.written,
                Dir::Recv => report.read,
            },
            packets: counter.packets.load(Ordering::Relaxed),
            elapsed_ns: last.get(),
            udp: None,
        },
        cpu: ThreadCpu::thread().since(cpu0),
    })
}

/// Sends datagrams of `len` bytes (header included) at `rate_bps` (0 = as fast as possible)
/// on a connected UDP socket until `amount` is sent.
#[allow(clippy::too_many_arguments)]
pub fn udp_send(
    s: UdpSocket,
    amount: Amount,
    len: usize,
    rate_bps: u64,
    start: Instant,
    counter: &Counter,
    abort: &AtomicBool,
) -> Result<Outcome, ProbeError> {
    let cpu0 = ThreadCpu::thread();
    let len = len.max(UDP_HEADER_LEN);
    let mut page = PageBuf::pattern(len);
    let buf = page.as_mut_slice();
    let (total_bytes, until) = amount_limits(amount, len, start);
    let total = match amount {
        Amount::Count(c) => c,
        Amount::Bytes(_) => total_bytes.div_ceil(len as u64),
        Amount::TimeNs(_) => u64::MAX,
    };
    // Datagram i is due at start + i * gap; computed from i so rounding never accumulates.
    let gap_num = len as u128 * 8 * 1_000_000_000;
    let mut seq: u64 = 0;
    let mut bytes: u64 = 0;
    let mut last = start;
    while seq < total && !abort.load(Ordering::Relaxed) {
        let now = Instant::now();
        if until.is_some_and(|u| now >= u) {
            break;
        }
        if rate_bps > 0 {
            let due =
                start + Duration::from_nanos((seq as u128 * gap_num / rate_bps as u128) as u64);
            if due > now {
                // Sleep even for short waits: the kernel's timer slack (~50 us) may wake us
                // late, and the datagrams that fell due meanwhile then go out back to back.
                // That costs a little smoothness and saves a core that spinning would burn.
                let wait = due - now;
                if wait > Duration::from_micros(10) {
                    std::thread::sleep(wait);
                } else {
                    std::thread::yield_now();
                }
                continue;
            }
        }
        emit_udp_header(buf, seq, elapsed_ns(start, now));
        match s.send(buf) {
            Ok(n) => {
                seq += 1;
                bytes += n as u64;
                counter.bytes.fetch_add(n as u64, Ordering::Relaxed);
                counter.packets.fetch_add(1, Ordering::Relaxed);
                last = now;
            }
            // A full queue: this one was not sent.
            Err(e)
                if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock)
                    || e.raw_os_error() == Some(libc::ENOBUFS) =>
            {
                std::thread::yield_now();
            }
            // An ICMP port unreachable for an earlier datagram: nothing listens there (any
            // more). The peer's socket is open for the whole test, so this is a peer that died
            // or an address that never asked for the stream: stop rather than keep flooding it.
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                return Err(ProbeError::Protocol(format!(
                    "the peer refused the datagrams (ICMP port unreachable) after {seq} were \
                     sent: nothing listens at {} any more",
                    s.peer_addr()
                        .map_or_else(|_| "the peer".to_string(), |a| a.to_string())
                )));
            }
            Err(e) => return Err(ProbeError::io("sending a datagram", e)),
        }
    }
    if abort.load(Ordering::Relaxed) {
        return Err(ProbeError::Protocol("test aborted".into()));
    }
    Ok(Outcome {
        end: StreamEnd {
            bytes,
            packets: seq,
            elapsed_ns: elapsed_ns(start, last),
            udp: None,
        },
        cpu: ThreadCpu::thread().since(cpu0),
    })
}

/// Receives datagrams on a connected UDP socket until the sender's count is known and drained
/// (see [`UdpDrain`]), accounting loss, duplicates, reordering and jitter.
pub fn udp_recv(
    s: UdpSocket,
    start: Instant,
    idle: Duration,
    counter: &Counter,
    drain: &UdpDrain,
    abort: &AtomicBool,
) -> Result<Outcome, ProbeError> {
    let cpu0 = ThreadCpu::thread();
    // Short time-outs so that the drain condition is checked while the link is quiet.
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let mut page = PageBuf::zeroed(65536);
    let buf = page.as_mut_slice();
    let mut stats = UdpRecvStats::default();
    let mut bytes: u64 = 0;
    let mut packets: u64 = 0;
    let mut last = start;
    let mut last_any = Instant::now();
    loop {
        if abort.load(Ordering::Relaxed) {
            return Err(ProbeError::Protocol("test aborted".into()));
        }
        match s.recv(buf) {
            Ok(n) => {
                let now = Instant::now();
                last_any = now;
                let Some((seq, send_ns)) = parse_udp_header(buf.get(..n).unwrap_or(&[])) else {
                    continue; // a retransmitted hello, or a runt
                };
                stats.on_datagram(seq, send_ns, elapsed_ns(start, now));
                bytes += n as u64;
                packets += 1;
                counter.bytes.fetch_add(n as u64, Ordering::Relaxed);
                counter.packets.fetch_add(1, Ordering::Relaxed);
                counter.missing.store(stats.missing(), Ordering::Relaxed);
                last = now;
                if let Some((exp, _)) = drain.expected() {
                    if stats.received() >= exp {
                        break;
                    }
                }
            }
            Err(e) if is_timeout(&e) || e.kind() == ErrorKind::Interrupted => {
                if let Some((exp, until)) = drain.expected() {
                    if stats.received() >= exp || Instant::now() >= until {
                        break;
                    }
                } else if last_any.elapsed() > idle {
                    return Err(ProbeError::Timeout(format!(
                        "UDP stream stalled: nothing received for {idle:?}"
                    )));
                }
            }
            // ICMP port unreachable from an earlier datagram of ours (hellos): ignore.
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(ProbeError::io("receiving a datagram", e)),
        }
    }
    let expected = drain.expected().map_or(0, |(e, _)| e);
    Ok(Outcome {
        end: StreamEnd {
            bytes,
            packets,
            elapsed_ns: elapsed_ns(start, last),
            udp: Some(stats.counts(expected)),
        },
        cpu: ThreadCpu::thread().since(cpu0),
    })
}
