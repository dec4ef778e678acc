//! Bulk transfer (`kind = "tput"`, `weft tput`, ttcp): a source that sends as fast as its
//! transport takes, or at a paced rate, until `stop`; and a sink that takes everything and
//! counts what arrived within a measurement span.
//!
//! Over a stream (TCP) the source writes `len`-byte messages one call at a time (ttcp's buffer;
//! each write blocks until the send buffer has taken it, [`Input::Written`]) and closes at
//! `stop`, cutting short a write still blocked; the sink reads whatever has arrived and closes
//! when the source has closed and everything is read. Over datagrams (UDP) the source sends a
//! `len`-byte datagram at each instant of its [`Pace`] before `stop`; the sink counts the
//! datagrams and bytes of each sender.
//!
//! [`goodput_metrics`] names the rates every engine reports.

use serde_json::{Map, Value, json};

use super::rr::Via;
use super::{Application, Input, Output, PeerId, Tag};
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use crate::units::Rate;

/// The metric keys of bulk-transfer results.
pub mod keys {
    /// Payload rate, Mbit/s (the workload's default metric).
    pub const GOODPUT_MBPS: &str = "goodput_mbps";
    /// Payload rate, KiB/s (ttcp's unit).
    pub const PAYLOAD_KIB_S: &str = "payload_kib_s";
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
    /// A write call is blocked (streams).
    writing: bool,
    closed: bool,
    /// The next paced send (datagrams).
    next: Option<Instant>,
    sent: u64,
    /// Bytes to write before closing (a flow of a given size); `None`: until `stop`.
    limit: Option<u64>,
    written: u64,
    /// The stream is established ([`Input::Connected`]): a sized flow closes only then (a
    /// close before the handshake ends would abort the connection, as `close` in SYN-SENT).
    connected: bool,
}

impl BulkSource {
    /// A source of `len`-byte messages via `via` until `stop`: over a stream as fast as it
    /// takes them; over datagrams at the instants of `pace` (`None`: none are sent).
    pub fn new(via: Via, len: u64, stop: Instant, pace: Option<Pace>) -> Self {
        let next = pace.map(|p| p.at(0)).filter(|&t| t < stop);
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
            written: 0,
            connected: false,
        }
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
}

impl Application for BulkSource {
    fn handle_input(&mut self, _now: Instant, input: Input<'_>) {
        match input {
            Input::Written { .. } => self.writing = false,
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
                // A send is never earlier than the one before.
                self.next = self
                    .pace
                    .map(|p| p.at(self.sent).max(t))
                    .filter(|&n| n < self.stop);
                Some(Output::Send {
                    peer,
                    len: self.len,
                    tag: Some(Tag::new(k, (self.len as usize).min(8))),
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
            Via::Datagram(_) => self.next.is_none(),
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
                }
                self.per_peer[peer].0 += 1;
                self.per_peer[peer].1 += len;
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
    fn a_stream_source_writes_one_message_at_a_time_and_closes_at_the_stop() {
        let mut s = BulkSource::new(Via::Stream, 8192, Instant(100), None);
        let w = |o| matches!(o, Some(Output::Write { len: 8192, .. }));
        assert!(w(s.poll_output(Instant(0))));
        assert_eq!(s.poll_output(Instant(0)), None, "blocked in its write");
        s.handle_input(Instant(5), Input::Written { stream: 0 });
        assert!(w(s.poll_output(Instant(5))));
        assert_eq!(s.poll_timeout(), Some(Instant(100)));
        assert_eq!(
            s.poll_output(Instant(100)),
            Some(Output::Close { stream: 0 })
        );
        assert_eq!((s.poll_output(Instant(200)), s.sent()), (None, 2));
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
