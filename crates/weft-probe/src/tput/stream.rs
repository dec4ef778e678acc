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

use weft_model::app::bulk::{BulkSink, BulkSource, Pace};
use weft_model::app::rr::Via;
use weft_model::app::{Application, Input, Output};
use weft_sock as sock;
use weft_sock::datagram::{self, Peers};
use weft_sock::stream::{self, Observer};

use crate::cpu::ThreadCpu;
use crate::error::ProbeError;
use crate::proto::data::{Hello, UDP_HEADER_LEN};
use crate::proto::{Amount, StreamEnd, UdpCounts};

/// Bytes and writes/datagrams so far on one stream, read by the interval ticker.
#[derive(Debug, Default)]
pub struct Counter {
    /// Bytes so far.
    pub bytes: AtomicU64,
    /// System calls (TCP) or datagrams (UDP) so far.
    pub packets: AtomicU64,
    /// UDP receivers: datagrams missing so far (see `DatagramStats::missing`).
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

/// A bulk application on one of tput's UDP streams: what is not the test's data (a
/// retransmitted hello, a runt shorter than the header) kept from it, and what it sends and
/// takes counted into the stream's [`Counter`] (with the instant data last moved, ns since the
/// test's start) for the interval reports.
struct UdpStream<'a, A> {
    app: A,
    counter: &'a Counter,
    last: u64,
}

impl<'a, A> UdpStream<'a, A> {
    fn new(app: A, counter: &'a Counter) -> Self {
        UdpStream {
            app,
            counter,
            last: 0,
        }
    }

    fn count(&mut self, n: u64, now: weft_model::Instant) {
        self.counter.bytes.fetch_add(n, Ordering::Relaxed);
        self.counter.packets.fetch_add(1, Ordering::Relaxed);
        self.last = now.0;
    }
}

impl<A: Application> Application for UdpStream<'_, A> {
    fn handle_input(&mut self, now: weft_model::Instant, input: Input<'_>) {
        if let Input::Datagram { len, data, .. } = input {
            if data.is_some_and(|d| d.len() < UDP_HEADER_LEN || Hello::parse(d).is_ok()) {
                return;
            }
            self.count(len, now);
        }
        self.app.handle_input(now, input);
    }

    fn handle_timeout(&mut self, now: weft_model::Instant) {
        self.app.handle_timeout(now);
    }

    fn poll_output(&mut self, now: weft_model::Instant) -> Option<Output> {
        let o = self.app.poll_output(now)?;
        if let Output::Send { len, .. } = o {
            self.count(len, now);
        }
        Some(o)
    }

    fn poll_timeout(&self) -> Option<weft_model::Instant> {
        self.app.poll_timeout()
    }

    fn is_done(&self) -> bool {
        self.app.is_done()
    }
}

/// The socket driver's options for a tput UDP stream: short waits, so that the abort flag and
/// the drain are looked at often.
fn udp_options() -> sock::Options {
    sock::Options {
        tick: weft_model::Duration::from_millis(20),
        ..sock::Options::default()
    }
}

/// Sends datagrams of `len` bytes (header included) at `rate_bps` (0 = as fast as the socket
/// takes them) on a connected UDP socket until `amount` is sent: the core's bulk source
/// ([`BulkSource`], each datagram carrying its sequence number and send time) on the socket
/// driver, its sends blocking as the socket's would.
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
    let len = len.max(UDP_HEADER_LEN) as u64;
    let (total_bytes, until) = amount_limits(amount, len as usize, start);
    let stop = until.map_or(weft_model::Instant(u64::MAX), |u| {
        weft_model::Instant(elapsed_ns(start, u))
    });
    // Datagram k is due at start + k * gap, computed from k so that rounding never accumulates.
    let pace = (rate_bps > 0).then(|| Pace {
        phase: 0,
        bit_ns: u128::from(len) * 8 * 1_000_000_000,
        rate: u128::from(rate_bps),
    });
    let mut source = BulkSource::new(Via::Datagram(0), len, stop, pace);
    match amount {
        Amount::Count(c) => source = source.with_count(c),
        Amount::Bytes(_) => source = source.with_count(total_bytes.div_ceil(len)),
        Amount::TimeNs(_) => {}
    }
    let peer = s
        .peer_addr()
        .map_err(|e| ProbeError::io("sending datagrams", e))?;
    let mut app = UdpStream::new(source, counter);
    let opts = sock::Options {
        refused_ends: true,
        block_full: true,
        ..udp_options()
    };
    let run = datagram::drive(
        &mut app,
        &s,
        &mut Peers::fixed(vec![peer]),
        &sock::Clock::since(start),
        &opts,
        |_, _| abort.load(Ordering::Relaxed),
    );
    if abort.load(Ordering::Relaxed) {
        return Err(ProbeError::Protocol("test aborted".into()));
    }
    match run {
        Ok(_) => {}
        // An ICMP port unreachable for an earlier datagram: nothing listens there (any more).
        // The peer's socket is open for the whole test, so this is a peer that died or an
        // address that never asked for the stream: stop rather than keep flooding it.
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
            return Err(ProbeError::Protocol(format!(
                "the peer refused the datagrams (ICMP port unreachable) after {} were sent: \
                 nothing listens at {peer} any more",
                app.app.sent()
            )));
        }
        Err(e) => return Err(ProbeError::io("sending a datagram", e)),
    }
    Ok(Outcome {
        end: StreamEnd {
            bytes: counter.bytes.load(Ordering::Relaxed),
            packets: app.app.sent(),
            elapsed_ns: app.last,
            udp: None,
        },
        cpu: ThreadCpu::thread().since(cpu0),
    })
}

/// Receives datagrams on a connected UDP socket until the sender's count is known and drained
/// (see [`UdpDrain`]): the core's bulk sink ([`BulkSink`]) on the socket driver, which accounts
/// loss, duplicates, reordering and jitter ([`weft_model::app::bulk::DatagramStats`]).
pub fn udp_recv(
    s: UdpSocket,
    start: Instant,
    idle: Duration,
    counter: &Counter,
    drain: &UdpDrain,
    abort: &AtomicBool,
) -> Result<Outcome, ProbeError> {
    let cpu0 = ThreadCpu::thread();
    let peer = s
        .peer_addr()
        .map_err(|e| ProbeError::io("receiving datagrams", e))?;
    let clock = sock::Clock::since(start);
    let entered = clock.now().0;
    let idle_ns = u64::try_from(idle.as_nanos()).unwrap_or(u64::MAX);
    let stalled = Cell::new(false);
    let mut app = UdpStream::new(BulkSink::all(), counter);
    let run = datagram::drive(
        &mut app,
        &s,
        &mut Peers::fixed(vec![peer]),
        &clock,
        &udp_options(),
        |a, now| {
            let seq = a.app.sequence(0);
            counter
                .missing
                .store(seq.map_or(0, |q| q.missing()), Ordering::Relaxed);
            if abort.load(Ordering::Relaxed) {
                return true;
            }
            let received = seq.map_or(0, |q| q.received());
            match drain.expected() {
                Some((exp, until)) => received >= exp || Instant::now() >= until,
                None => {
                    stalled.set(now.0.saturating_sub(a.last.max(entered)) > idle_ns);
                    stalled.get()
                }
            }
        },
    );
    if abort.load(Ordering::Relaxed) {
        return Err(ProbeError::Protocol("test aborted".into()));
    }
    run.map_err(|e| ProbeError::io("receiving a datagram", e))?;
    if stalled.get() {
        return Err(ProbeError::Timeout(format!(
            "UDP stream stalled: nothing received for {idle:?}"
        )));
    }
    let expected = drain.expected().map_or(0, |(e, _)| e);
    let sink = &app.app;
    let udp = sink.sequence(0).map_or(
        UdpCounts {
            expected,
            lost: expected,
            ..UdpCounts::default()
        },
        |q| UdpCounts {
            expected,
            received: q.received(),
            lost: q.lost(expected),
            duplicates: q.duplicates(),
            reordered: q.reordered(),
            jitter_ns: q.jitter_ns(),
        },
    );
    Ok(Outcome {
        end: StreamEnd {
            bytes: sink.bytes(),
            packets: sink.datagrams(),
            elapsed_ns: app.last,
            udp: Some(udp),
        },
        cpu: ThreadCpu::thread().since(cpu0),
    })
}
