//! Bulk transfer (`kind = "tput"`, `weft tput`, ttcp): a source that sends as fast as its
//! transport takes, or at a paced rate, until `stop`; and a sink that takes everything and
//! counts what arrived within a measurement span.
//!
//! Over a stream (TCP) the source writes `len`-byte messages one call at a time (ttcp's buffer;
//! each write blocks until the send buffer has taken it, [`Input::Written`]) and closes at
//! `stop`, cutting short a write still blocked; the sink reads whatever has arrived and closes
//! when the source has closed and everything is read. Over datagrams (UDP) the source sends a
//! `len`-byte datagram at each instant of its [`Pace`] before `stop` (or, unpaced, each as
//! soon as the last send call returned), each carrying its sequence number and send time
//! ([`Tag::stamped`]); the sink counts the datagrams and bytes of each sender and accounts
//! their loss, duplicates, reordering and jitter ([`datagrams`]).
//!
//! [`goodput_metrics`] names the rates every engine reports.

pub mod datagrams;

use serde_json::{Map, Value, json};

use super::rr::Via;
use super::{Application, Input, Output, PeerId, Tag};
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use crate::units::Rate;
pub use datagrams::DatagramStats;

/// The metric keys of bulk-transfer results.
pub mod keys {
    /// Payload rate, Mbit/s (the workload's default metric).
    pub const GOODPUT_MBPS: &str = "goodput_mbps";
    /// Payload rate, KiB/s (ttcp's unit).
    pub const PAYLOAD_KIB_S: &str = "payload_kib_s";
    /// Prefix of one kind of sender's goodput, Mbit/s ([`super::goodput_by_kind`]), followed
    /// by the kind (its host preset's name).
    pub const GOODPUT_OF: &str = "goodput_mbps_of_";
}

/// When the senders are of more than one kind, each kind's summed value under
/// `keys::GOODPUT_OF<kind>`, in order of first appearance; empty for one kind or none, so that
/// other results keep their form (a study that ran several kinds' sessions at once reports each
/// kind's aggregate). `senders` yields each sender's kind and its value (its goodput, Mbit/s, or
/// 1 to count it).
pub fn goodput_by_kind<'a>(
    senders: impl IntoIterator<Item = (&'a str, f64)>,
) -> Vec<(String, f64)> {
    let mut sums: Vec<(&str, f64)> = Vec::new();
    for (kind, v) in senders {
        match sums.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, sum)) => *sum += v,
            None => sums.push((kind, v)),
        }
    }
    if sums.len() < 2 {
        return Vec::new();
    }
    sums.into_iter()
        .map(|(kind, v)| (format!("{}{kind}", keys::GOODPUT_OF), v))
        .collect()
}

/// The payload rate `bps` (bits per second) under [`keys`].
pub fn goodput_metrics(bps: f64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(keys::GOODPUT_MBPS.into(), json!(bps / 1e6));
    m.insert(keys::PAYLOAD_KIB_S.into(), json!(bps / 8.0 / 1024.0));
    m
}

/// When a paced source sends: message `k` at `phase + k * bits / rate` (exact integer
/// arithmetic, so that a long run does not drift).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    /// The first message's instant, ns.
    pub phase: u64,
    /// Bit-nanoseconds of one message at the rate's unit: its bits times 10^9.
    pub bit_ns: u128,
    /// Bits per second.
    pub rate: u128,
}

impl Pace {
    /// Messages occupying `bits` each at `rate`, starting at a phase drawn uniformly over one
    /// period from `rng` (so that equal sources do not move in lock step).
    pub fn new(bits: u64, rate: Rate, rng: &mut Rng) -> Self {
        let bit_ns = u128::from(bits.max(1)) * 1_000_000_000;
        let rate = u128::from(rate.as_bps().max(1));
        let period = (bit_ns / rate).max(1) as u64;
        Pace {
            phase: rng.below(period),
            bit_ns,
            rate,
        }
    }

    /// The instant of message `k`.
    pub fn at(&self, k: u64) -> Instant {
        Instant(self.phase + (u128::from(k) * self.bit_ns / self.rate) as u64)
    }
}

/// The source.
#[derive(Clone, Debug)]
pub struct BulkSource {
    via: Via,
    len: u64,
    stop: Instant,
    pace: Option<Pace>,
    /// A write call is blocked (streams), or a send call (unpaced datagrams).
    writing: bool,
    closed: bool,
    /// The next paced send (datagrams).
    next: Option<Instant>,
    sent: u64,
    /// Bytes to write before closing (a flow of a given size); `None`: until `stop`.
    limit: Option<u64>,
    /// Datagrams to send in all; `None`: until `stop`.
    count: Option<u64>,
    written: u64,
    /// Bytes of the write call still blocked (streams; 0 when none is).
    pending: u64,
    /// The stream is established ([`Input::Connected`]): a sized flow closes only then (a
    /// close before the handshake ends would abort the connection, as `close` in SYN-SENT).
    connected: bool,
}

impl BulkSource {
    /// A source of `len`-byte messages via `via` until `stop`: over a stream as fast as it
    /// takes them; over datagrams at the instants of `pace`, or with `None` each as soon as
    /// the send call before it returned ([`Input::Written`], which a driver of blocking sends
    /// gives; without it an unpaced source sends one datagram).
    pub fn new(via: Via, len: u64, stop: Instant, pace: Option<Pace>) -> Self {
        let first = pace.map_or(Instant::ZERO, |p| p.at(0));
        let next = Some(first).filter(|&t| t < stop);
        BulkSource {
            via,
            len,
            stop,
            pace,
            writing: false,
            closed: false,
            next,
            sent: 0,
            limit: None,
            count: None,
            written: 0,
            pending: 0,
            connected: false,
        }
    }

    /// The source sends `n` datagrams in all, or stops at `stop` if that comes first
    /// (datagrams only).
    pub fn with_count(mut self, n: u64) -> Self {
        self.count = Some(n);
        if n == 0 {
            self.next = None;
        }
        self
    }

    /// Whether the source may send another datagram at `t`.
    fn more(&self, t: Instant) -> bool {
        t < self.stop && self.count.is_none_or(|c| self.sent < c)
    }

    /// The source writes `bytes` in all (the last message short) and closes, or closes at
    /// `stop` if that comes first: a flow of a given size (streams only).
    pub fn with_limit(mut self, bytes: u64) -> Self {
        self.limit = Some(bytes);
        self
    }

    /// Messages written or sent.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Bytes of the write calls that have returned (streams): what the application knows it
    /// handed to its transport, as an FTP client's hash marks count it. A write still blocked
    /// on a full send buffer is not counted, though the buffer may hold part of it.
    pub fn written_returned(&self) -> u64 {
        self.written - self.pending
    }
}

impl Application for BulkSource {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        match input {
            Input::Written { .. } => {
                self.writing = false;
                self.pending = 0;
                // An unpaced datagram source sends again once its send call returned.
                if matches!(self.via, Via::Datagram(_)) && self.pace.is_none() && self.more(now) {
                    self.next = Some(now);
                }
            }
            Input::Connected { .. } => self.connected = true,
            _ => {}
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self, now: Instant) -> Option<Output> {
        match self.via {
            Via::Stream => {
                if self.closed {
                    return None;
                }
                if now >= self.stop {
                    self.closed = true;
                    return Some(Output::Close { stream: 0 });
                }
                if self.writing {
                    return None;
                }
                // A sized flow closes once its last write has been taken.
                let left = self.limit.map(|l| l.saturating_sub(self.written));
                if left == Some(0) {
                    if !self.connected {
                        return None;
                    }
                    self.closed = true;
                    return Some(Output::Close { stream: 0 });
                }
                let len = left.map_or(self.len, |l| l.min(self.len));
                self.writing = true;
                self.sent += 1;
                self.written += len;
                self.pending = len;
                Some(Output::Write {
                    stream: 0,
                    len,
                    tag: None,
                })
            }
            Via::Datagram(peer) => {
                let t = self.next.filter(|&t| t <= now)?;
                let k = self.sent;
                self.sent += 1;
                self.next = match self.pace {
                    // A send is never earlier than the one before.
                    Some(p) => Some(p.at(self.sent).max(t)).filter(|&n| self.more(n)),
                    None => {
                        self.writing = true;
                        None
                    }
                };
                Some(Output::Send {
                    peer,
                    len: self.len,
                    tag: Some(Tag::stamped(k, now, self.len as usize)),
                })
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self.via {
            Via::Stream => (!self.closed).then_some(self.stop),
            Via::Datagram(_) => self.next,
        }
    }

    fn is_done(&self) -> bool {
        match self.via {
            Via::Stream => self.closed,
            Via::Datagram(_) => self.next.is_none() && !self.writing,
        }
    }
}

/// The sink.
#[derive(Clone, Debug)]
pub struct BulkSink {
    /// Counts in `measured` what arrives in `[from, until)`.
    span: (Instant, Instant),
    /// The span starts this long after the first byte and lasts the second this long (set
    /// when the first byte arrives).
    from_first: Option<(Duration, Duration)>,
    /// When the first and the last bytes arrived.
    first: Option<Instant>,
    last: Option<Instant>,
    closed: bool,
    /// Messages (datagrams) and bytes received from each peer (datagrams), by peer.
    per_peer: Vec<(u64, u64)>,
    /// The sequence accounting of each peer's datagrams, by peer.
    sequences: Vec<DatagramStats>,
    read: u64,
    measured: u64,
}

impl BulkSink {
    /// A sink counting in [`BulkSink::measured`] the bytes that arrive in `[from, until)`.
    pub fn new(from: Instant, until: Instant) -> Self {
        BulkSink {
            span: (from, until),
            from_first: None,
            first: None,
            last: None,
            closed: false,
            per_peer: Vec::new(),
            sequences: Vec::new(),
            read: 0,
            measured: 0,
        }
    }

    /// A sink counting in [`BulkSink::measured`] the bytes that arrive in `[first + warmup,
    /// first + time)`, `first` being when the first byte arrived: concurrent flows measured
    /// over the same span of their senders' schedules, shifted by the path's delay.
    pub fn from_first(warmup: Duration, time: Duration) -> Self {
        BulkSink {
            from_first: Some((warmup, time)),
            ..BulkSink::all()
        }
    }

    /// When the first and the last bytes arrived (`None` before any).
    pub fn arrivals(&self) -> Option<(Instant, Instant)> {
        Some((self.first?, self.last?))
    }

    /// A sink counting everything.
    pub fn all() -> Self {
        BulkSink::new(Instant::ZERO, Instant(u64::MAX))
    }

    /// Bytes received.
    pub fn bytes(&self) -> u64 {
        self.read
    }

    /// Bytes received within the measurement span.
    pub fn measured(&self) -> u64 {
        self.measured
    }

    /// Datagrams received.
    pub fn datagrams(&self) -> u64 {
        self.per_peer.iter().map(|p| p.0).sum()
    }

    /// Datagrams and bytes received from `peer`.
    pub fn from_peer(&self, peer: PeerId) -> (u64, u64) {
        self.per_peer.get(peer).copied().unwrap_or_default()
    }

    /// The loss, reordering and jitter of `peer`'s datagrams (`None` before any arrived).
    pub fn sequence(&self, peer: PeerId) -> Option<&DatagramStats> {
        self.sequences.get(peer)
    }

    fn count(&mut self, now: Instant, len: u64) {
        if self.first.is_none() {
            self.first = Some(now);
            if let Some((warmup, time)) = self.from_first {
                self.span = (now + warmup, now + time);
            }
        }
        self.last = Some(now);
        self.read += len;
        if now >= self.span.0 && now < self.span.1 {
            self.measured += len;
        }
    }
}

impl Application for BulkSink {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        match input {
            Input::Read { len, .. } => self.count(now, len),
            Input::Datagram { peer, len, .. } => {
                if self.per_peer.len() <= peer {
                    self.per_peer.resize(peer + 1, (0, 0));
                    self.sequences.resize_with(peer + 1, DatagramStats::default);
                }
                self.per_peer[peer].0 += 1;
                self.per_peer[peer].1 += len;
                // A datagram shorter than a stamped tag carries its number only.
                let tag = input.tag(Tag::STAMPED_LEN).or_else(|| input.tag(8));
                if let Some(t) = tag {
                    self.sequences[peer].on_datagram(t.value, t.stamp, now);
                }
                self.count(now, len);
            }
            Input::Closed { .. } => self.closed = true,
            _ => {}
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    /// ttcp's receiver closes when it reads the end of the stream.
    fn poll_output(&mut self, _now: Instant) -> Option<Output> {
        if self.closed {
            self.closed = false;
            return Some(Output::Close { stream: 0 });
        }
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{Link, Pair};

    #[test]
    fn a_paced_source_sends_on_its_schedule_until_the_stop() {
        let pace = Pace {
            phase: 10,
            bit_ns: 8_000 * 1_000_000_000,
            rate: 8_000_000,
        };
        assert_eq!(pace.at(3), Instant(10 + 3_000_000));
        let link = Link {
            delay: Duration::from_micros(10),
            lose_every: 0,
        };
        let stop = Instant(Duration::from_millis(10).0);
        let mut p = Pair::datagrams(
            BulkSource::new(Via::Datagram(1), 1000, stop, Some(pace)),
            BulkSink::new(Instant::ZERO, stop),
            link,
        );
        p.run(Instant(Duration::from_secs(1).0));
        // One a millisecond from 10 ns: ten before the stop, all of them in the span.
        assert_eq!(p.client.sent(), 10);
        assert_eq!(p.server.from_peer(0), (10, 10_000));
        assert_eq!(p.server.measured(), 10_000);
        assert!(p.client.is_done());
    }

    #[test]
    fn an_unpaced_datagram_source_sends_when_its_last_send_returned_until_its_count() {
        let mut s = BulkSource::new(Via::Datagram(0), 100, Instant(1000), None).with_count(3);
        let sent = |o: Option<Output>| match o {
            Some(Output::Send { len: 100, tag, .. }) => tag.expect("tagged"),
            other => panic!("{other:?}"),
        };
        let t = sent(s.poll_output(Instant(0)));
        assert_eq!((t.value, t.stamp), (0, Some(0)));
        assert_eq!(
            s.poll_output(Instant(1)),
            None,
            "its send call has not returned"
        );
        assert!(!s.is_done());
        s.handle_input(Instant(2), Input::Written { stream: 0 });
        assert_eq!(s.poll_timeout(), Some(Instant(2)));
        let t = sent(s.poll_output(Instant(3)));
        assert_eq!((t.value, t.stamp), (1, Some(3)), "stamped when it leaves");
        s.handle_input(Instant(4), Input::Written { stream: 0 });
        assert_eq!(sent(s.poll_output(Instant(4))).value, 2);
        s.handle_input(Instant(5), Input::Written { stream: 0 });
        assert_eq!(
            (s.poll_output(Instant(5)), s.sent()),
            (None, 3),
            "its count"
        );
        assert!(s.is_done());
        let mut late = BulkSource::new(Via::Datagram(0), 100, Instant(10), None);
        sent(late.poll_output(Instant(0)));
        late.handle_input(Instant(10), Input::Written { stream: 0 });
        assert!(late.is_done(), "no send at or after the stop");
    }

    #[test]
    fn the_sink_accounts_each_senders_sequence_and_jitter_from_the_stamps() {
        let mut k = BulkSink::all();
        let mut bytes = [0u8; 100];
        // Peer 1 sends 0, 2, 1 (each 10 ns after the one before, 50 ns in flight, then 70 for
        // the last); peer 0 one datagram too short for a stamp.
        for (seq, sent, at) in [(0, 0, 50), (2, 10, 60), (1, 20, 90)] {
            Tag::stamped(seq, Instant(sent), 100).write(&mut bytes);
            let d = Input::Datagram {
                peer: 1,
                len: 100,
                tag: None,
                data: Some(&bytes),
            };
            k.handle_input(Instant(at), d);
        }
        let short = [7u8, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let d = Input::Datagram {
            peer: 0,
            len: 10,
            tag: None,
            data: Some(&short),
        };
        k.handle_input(Instant(100), d);
        let q = k.sequence(1).expect("peer 1");
        assert_eq!((q.received(), q.reordered(), q.lost(4)), (3, 1, 1));
        assert!((q.jitter_ns() - 20.0 / 16.0).abs() < 1e-9);
        let q = k.sequence(0).expect("peer 0");
        assert_eq!((q.received(), q.jitter_ns()), (1, 0.0));
        assert_eq!((k.datagrams(), k.bytes()), (4, 310));
    }

    #[test]
    fn a_stream_source_writes_one_message_at_a_time_and_closes_at_the_stop() {
        let mut s = BulkSource::new(Via::Stream, 8192, Instant(100), None);
        let w = |o| matches!(o, Some(Output::Write { len: 8192, .. }));
        assert!(w(s.poll_output(Instant(0))));
        assert_eq!(s.poll_output(Instant(0)), None, "blocked in its write");
        assert_eq!(s.written_returned(), 0, "the write has not returned");
        s.handle_input(Instant(5), Input::Written { stream: 0 });
        assert_eq!(s.written_returned(), 8192);
        assert!(w(s.poll_output(Instant(5))));
        assert_eq!(s.poll_timeout(), Some(Instant(100)));
        assert_eq!(
            s.poll_output(Instant(100)),
            Some(Output::Close { stream: 0 })
        );
        assert_eq!((s.poll_output(Instant(200)), s.sent()), (None, 2));
        // The second write, still blocked when the source closed, never returned.
        assert_eq!(s.written_returned(), 8192);
    }

    #[test]
    fn a_sized_source_writes_its_bytes_and_closes() {
        let mut s = BulkSource::new(Via::Stream, 8192, Instant(100), None).with_limit(10_000);
        let written = |o| match o {
            Some(Output::Write { len, .. }) => len,
            other => panic!("{other:?}"),
        };
        assert_eq!(written(s.poll_output(Instant(0))), 8192);
        s.handle_input(Instant(1), Input::Written { stream: 0 });
        assert_eq!(written(s.poll_output(Instant(1))), 1808);
        assert_eq!(s.poll_output(Instant(1)), None, "blocked in its last write");
        s.handle_input(Instant(2), Input::Written { stream: 0 });
        assert_eq!(s.poll_output(Instant(2)), None, "not connected yet");
        s.handle_input(Instant(3), Input::Connected { stream: 0 });
        assert_eq!(s.poll_output(Instant(3)), Some(Output::Close { stream: 0 }));
        assert!(s.is_done());
    }

    #[test]
    fn the_sink_counts_the_span_and_closes_at_the_end_of_the_stream() {
        let mut k = BulkSink::new(Instant(10), Instant(20));
        for (t, n) in [(5, 1), (10, 2), (19, 4), (20, 8)] {
            let read = Input::Read {
                stream: 0,
                len: n,
                data: None,
            };
            k.handle_input(Instant(t), read);
        }
        assert_eq!((k.bytes(), k.measured()), (15, 6));
        assert_eq!(k.poll_output(Instant(30)), None);
        let end = Input::Closed {
            stream: 0,
            error: None,
        };
        k.handle_input(Instant(30), end);
        assert_eq!(
            k.poll_output(Instant(30)),
            Some(Output::Close { stream: 0 })
        );
        assert_eq!(k.poll_output(Instant(30)), None);
    }
}
