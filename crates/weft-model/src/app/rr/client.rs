//! The client of request/response: asks `count` requests (at most `burst` in flight, 1 unless
//! told), times each answer, and reports each request to its [`Record`].

use std::collections::VecDeque;

use super::{Latencies, RrSpec, Via, tag_len};
use crate::app::{Application, Input, Output, StreamError, Tag};
use crate::time::{Duration, Instant};

/// Lost requests' numbers a datagram client remembers, to tell a late answer from a stray one.
const LOST_MEMORY: usize = 4096;

/// Where a client reports its requests, and whether it may ask another. [`Latencies`] keeps
/// every round trip and asks as many requests as the spec's count; a driver may keep its own
/// books (`weft rr`'s warm-up, stop rules and histograms) behind the same calls.
pub trait Record {
    /// Whether another request may be asked, besides the spec's count (a record that stops at
    /// a time reads its own clock).
    fn may_ask(&self) -> bool {
        true
    }

    /// Request `seq` was asked at `now`.
    fn asked(&mut self, _seq: u64, _now: Instant) {}

    /// Request `seq` was answered `rtt` after it was asked, at `now`.
    fn answered(&mut self, seq: u64, rtt: Duration, now: Instant);

    /// Request `seq` got no answer in time (noticed at `now`). True asks the client to stop
    /// asking (too many lost in a row).
    fn lost(&mut self, seq: u64, now: Instant) -> bool;
}

impl Record for Latencies {
    fn answered(&mut self, _seq: u64, rtt: Duration, _now: Instant) {
        self.rtt_ns.push(rtt.0);
    }

    fn lost(&mut self, _seq: u64, _now: Instant) -> bool {
        self.lost += 1;
        false
    }
}

impl<R: Record + ?Sized> Record for &mut R {
    fn may_ask(&self) -> bool {
        (**self).may_ask()
    }

    fn asked(&mut self, seq: u64, now: Instant) {
        (**self).asked(seq, now)
    }

    fn answered(&mut self, seq: u64, rtt: Duration, now: Instant) {
        (**self).answered(seq, rtt, now)
    }

    fn lost(&mut self, seq: u64, now: Instant) -> bool {
        (**self).lost(seq, now)
    }
}

/// A request in flight.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    /// Its number.
    seq: u64,
    /// When it was asked (its write or send call began).
    issued: Instant,
    /// Answer bytes read so far (streams).
    got: u64,
    /// Already counted as lost (streams: its answer is still read, then discarded).
    late: bool,
}

/// The client: `count` requests, `burst` at a time (1 unless [`RrClient::with_burst`]).
#[derive(Clone, Debug)]
pub struct RrClient<R = Latencies> {
    spec: RrSpec,
    via: Via,
    /// Requests kept in flight at most.
    burst: usize,
    /// The number of the first request.
    first_seq: u64,
    /// The stream is open (always true over datagrams).
    connected: bool,
    /// The stream was closed by the peer: nothing more is asked.
    closed: bool,
    failed: Option<StreamError>,
    /// The requests in flight, in the order asked (so their deadlines ascend).
    flight: VecDeque<InFlight>,
    /// When the next request may be asked (`None`: not before an answer or a time-out).
    next: Option<Instant>,
    issued: u64,
    /// Answers that answered no request the client waits for or remembers.
    stray: u64,
    /// Datagram answers that came after their request counted as lost.
    late: u64,
    /// Numbers of the requests lost over datagrams, the latest [`LOST_MEMORY`].
    lost_seqs: VecDeque<u64>,
    /// The length of a datagram answer that answered a request with the wrong size.
    wrong_size: Option<u64>,
    /// The first bytes of the answer being read, as far as they have come (streams with
    /// bytes): they must carry the request's number.
    head: Vec<u8>,
    /// An answer on the stream did not carry its request's number: the stream lost its
    /// framing, and nothing more is asked.
    unframed: bool,
    /// A late answer did not come within `give_up`.
    gave_up: bool,
    /// The record asked to stop ([`Record::lost`]).
    stopped: bool,
    record: R,
}

impl RrClient<Latencies> {
    /// A client asking `spec` via `via`, keeping every round trip.
    pub fn new(spec: RrSpec, via: Via) -> Self {
        Self::with_record(spec, via, Latencies::default())
    }

    /// The round trips of the requests answered in time, and the requests lost.
    pub fn latencies(&self) -> &Latencies {
        &self.record
    }
}

impl<R: Record> RrClient<R> {
    /// A client asking `spec` via `via`, reporting to `record`.
    pub fn with_record(spec: RrSpec, via: Via, record: R) -> Self {
        RrClient {
            spec,
            via,
            burst: 1,
            first_seq: 0,
            connected: matches!(via, Via::Datagram(_)),
            closed: false,
            failed: None,
            flight: VecDeque::new(),
            next: (spec.count > 0).then_some(spec.start),
            issued: 0,
            stray: 0,
            late: 0,
            lost_seqs: VecDeque::new(),
            wrong_size: None,
            head: Vec::new(),
            unframed: false,
            gave_up: false,
            stopped: false,
            record,
        }
    }

    /// Keeps up to `n` requests in flight (netperf's burst; at least 1). Over a stream the
    /// answers come in the order asked.
    pub fn with_burst(mut self, n: u64) -> Self {
        self.burst = usize::try_from(n.max(1)).unwrap_or(usize::MAX);
        self
    }

    /// Numbers the requests from `seq` (a client that continues another's count).
    pub fn starting_at(mut self, seq: u64) -> Self {
        self.first_seq = seq;
        self
    }

    /// Where the requests were reported.
    pub fn record(&self) -> &R {
        &self.record
    }

    /// The record, the client done with.
    pub fn into_record(self) -> R {
        self.record
    }

    /// An answer on the stream did not carry its request's number (its bytes were checked):
    /// the stream lost its framing, or the peer is not an echo service.
    pub fn unframed(&self) -> bool {
        self.unframed
    }

    /// The client stopped waiting for a late answer after [`RrSpec::give_up`].
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }

    /// The record asked the client to stop ([`Record::lost`]).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// What it asks.
    pub fn spec(&self) -> &RrSpec {
        &self.spec
    }

    /// Requests asked.
    pub fn requests(&self) -> u64 {
        self.issued
    }

    /// Requests asked and neither answered nor lost (over a stream, late ones included).
    pub fn in_flight(&self) -> usize {
        self.flight.len()
    }

    /// Answers that answered no request in flight or remembered as lost, or had the wrong
    /// size.
    pub fn stray(&self) -> u64 {
        self.stray
    }

    /// Datagram answers that came after their request had counted as lost.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// The length of a datagram that answered a request with another size than the spec's
    /// response (the peer truncates or pads): nothing more is asked.
    pub fn wrong_size(&self) -> Option<u64> {
        self.wrong_size
    }

    /// Why the stream failed, if it did.
    pub fn failed(&self) -> Option<StreamError> {
        self.failed
    }

    fn tag_len(&self) -> usize {
        tag_len(self.spec.request, self.spec.response)
    }

    /// When `c` times out, or (late over a stream) when the client gives up on it.
    fn deadline_of(&self, c: &InFlight) -> Option<Instant> {
        if !c.late {
            return Some(c.issued + self.spec.timeout);
        }
        self.spec.give_up.map(|g| c.issued + self.spec.timeout + g)
    }

    fn deadline(&self) -> Option<Instant> {
        self.flight.iter().filter_map(|c| self.deadline_of(c)).min()
    }

    /// Nothing more will be asked whatever comes.
    fn halted(&self) -> bool {
        self.closed
            || self.unframed
            || self.gave_up
            || self.stopped
            || self.wrong_size.is_some()
            || self.failed.is_some()
    }

    /// May ask a request (at `next`).
    fn may_ask(&self) -> bool {
        self.connected
            && !self.halted()
            && self.flight.len() < self.burst
            && self.issued < self.spec.count
            && self.record.may_ask()
    }

    /// Request `c` counted as lost at `now`.
    fn lose(&mut self, c: &InFlight, now: Instant) {
        if self.record.lost(c.seq, now) {
            self.stopped = true;
        }
    }

    /// A stream read `n` answer bytes by `now` (`data`: the bytes, if the driver has them).
    fn read(&mut self, now: Instant, mut n: u64, mut data: Option<&[u8]>) {
        let k = self.tag_len();
        while n > 0 {
            let Some(mut c) = self.flight.front().copied() else {
                return;
            };
            let take = n.min(self.spec.response - c.got);
            if let Some(d) = data {
                if self.head.len() < k {
                    let h = (k - self.head.len()).min(d.len());
                    self.head.extend_from_slice(&d[..h]);
                    if self.head.len() == k
                        && !Tag::read(&self.head, k).is_some_and(|t| t.carries(c.seq))
                    {
                        self.unframed = true;
                    }
                }
                data = d.get(take as usize..);
            }
            c.got += take;
            n -= take;
            if c.got < self.spec.response {
                self.flight[0] = c;
                return;
            }
            self.flight.pop_front();
            self.head.clear();
            self.next = Some(now.max(self.spec.start));
            let rtt = now.0 - c.issued.0;
            if !c.late && rtt <= self.spec.timeout.0 {
                self.record.answered(c.seq, Duration(rtt), now);
            } else if !c.late {
                self.lose(&c, now);
            }
        }
    }

    /// A datagram answer of `len` bytes arrived at `now`.
    fn datagram(&mut self, now: Instant, input: &Input<'_>, len: u64) {
        let tag = input.tag(self.tag_len());
        let hit = match tag {
            Some(t) => self.flight.iter().position(|c| t.carries(c.seq)),
            None => (!self.flight.is_empty()).then_some(0),
        };
        let Some(i) = hit else {
            if tag.is_some_and(|t| self.lost_seqs.iter().any(|&s| t.carries(s))) {
                self.late += 1;
            } else {
                self.stray += 1;
            }
            return;
        };
        let c = self.flight[i];
        if len != self.spec.response {
            self.wrong_size = Some(len);
            self.stray += 1;
            return;
        }
        if now >= c.issued + self.spec.timeout {
            // Its time-out counts it lost.
            self.late += 1;
            return;
        }
        self.flight.remove(i);
        self.record
            .answered(c.seq, Duration(now.0 - c.issued.0), now);
        self.next = Some(now.max(self.spec.start));
    }

    /// Every request in flight lost: the stream failed.
    fn stream_failed(&mut self, now: Instant) {
        for c in std::mem::take(&mut self.flight) {
            if !c.late {
                self.lose(&c, now);
            }
        }
    }
}

impl<R: Record> Application for RrClient<R> {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        match (input, self.via) {
            (Input::Connected { .. }, Via::Stream) => self.connected = true,
            (Input::Read { len, data, .. }, Via::Stream) => self.read(now, len, data),
            (Input::Closed { error, .. }, Via::Stream) => {
                self.closed = true;
                if let Some(e) = error
                    && self.failed.is_none()
                {
                    self.failed = Some(e);
                    self.stream_failed(now);
                }
            }
            (Input::Datagram { peer, len, .. }, Via::Datagram(server)) if peer == server => {
                self.datagram(now, &input, len)
            }
            _ => {}
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let mut i = 0;
        while let Some(c) = self.flight.get(i).copied() {
            i += 1;
            if c.late {
                if self
                    .spec
                    .give_up
                    .is_some_and(|g| now >= c.issued + self.spec.timeout + g)
                {
                    self.gave_up = true;
                }
                continue;
            }
            if now < c.issued + self.spec.timeout {
                // Asked later than this one: not due either.
                break;
            }
            self.lose(&c, now);
            match self.via {
                Via::Stream => self.flight[i - 1].late = true,
                Via::Datagram(_) => {
                    i -= 1;
                    self.flight.remove(i);
                    if self.lost_seqs.len() == LOST_MEMORY {
                        self.lost_seqs.pop_front();
                    }
                    self.lost_seqs.push_back(c.seq);
                    self.next = Some(now);
                }
            }
        }
    }

    fn poll_output(&mut self, now: Instant) -> Option<Output> {
        if !self.may_ask() || self.next.is_none_or(|t| now < t) {
            return None;
        }
        let seq = self.first_seq + self.issued;
        self.issued += 1;
        self.flight.push_back(InFlight {
            seq,
            issued: now,
            got: 0,
            late: false,
        });
        // With room for more in flight, the next is asked at once.
        self.next = (self.flight.len() < self.burst).then_some(now);
        self.record.asked(seq, now);
        let tag = Some(Tag::new(seq, self.tag_len()));
        let len = self.spec.request;
        Some(match self.via {
            Via::Stream => Output::Write {
                stream: 0,
                len,
                tag,
            },
            Via::Datagram(peer) => Output::Send { peer, len, tag },
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let ask = if self.may_ask() { self.next } else { None };
        [ask, self.deadline()].into_iter().flatten().min()
    }

    fn is_done(&self) -> bool {
        let stuck = self.gave_up || self.unframed || self.stopped || self.wrong_size.is_some();
        (self.flight.is_empty() || stuck) && !self.may_ask()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Answer, RrServer, keys};
    use super::*;
    use crate::app::testing::{Link, Pair};

    fn spec(count: u64) -> RrSpec {
        RrSpec {
            request: 64,
            response: 64,
            count,
            timeout: Duration::from_millis(10),
            start: Instant::ZERO,
            give_up: None,
        }
    }

    #[test]
    fn a_datagram_client_times_each_answer_and_counts_the_lost() {
        // 100 us each way; every third datagram lost.
        let link = Link {
            delay: Duration::from_micros(100),
            lose_every: 3,
        };
        let mut p = Pair::datagrams(
            RrClient::new(spec(30), Via::Datagram(1)),
            RrServer::new(64, 64, Answer::Whole, Via::Datagram(0)),
            link,
        );
        p.run(Instant(Duration::from_secs(1).0));
        let l = p.client.latencies();
        assert_eq!(l.asked(), 30);
        assert!(l.lost > 5 && l.lost < 25, "{l:?}");
        assert!(l.rtt_ns.iter().all(|&r| r == 200_000), "{l:?}");
        let m = l.metrics();
        assert_eq!(m[keys::RTT_P50_US], 200.0);
        assert_eq!(m[keys::REQUESTS], 30);
        assert!(p.client.is_done());
    }

    #[test]
    fn a_stream_client_waits_for_the_whole_answer_and_keeps_step_after_a_late_one() {
        // 6 ms each way against a 10 ms time-out: every answer is late, and every request
        // is still asked, each after the late answer before it.
        let link = Link {
            delay: Duration::from_millis(6),
            lose_every: 0,
        };
        let mut p = Pair::stream(
            RrClient::new(spec(5), Via::Stream),
            RrServer::new(64, 1000, Answer::Whole, Via::Stream),
            link,
        );
        p.run(Instant(Duration::from_secs(1).0));
        let l = p.client.latencies();
        assert_eq!((l.asked(), l.lost, p.client.requests()), (5, 5, 5));
        assert_eq!(p.server.answered(), 5);
    }

    #[test]
    fn an_echo_server_writes_back_each_read() {
        let link = Link {
            delay: Duration::from_micros(50),
            lose_every: 0,
        };
        let mut p = Pair::stream(
            RrClient::new(spec(4), Via::Stream),
            RrServer::new(64, 64, Answer::Echo, Via::Stream),
            link,
        );
        p.run(Instant(Duration::from_secs(1).0));
        assert_eq!(p.client.latencies().rtt_ns, vec![100_000; 4]);
    }

    #[test]
    fn a_failed_stream_loses_the_request_in_flight_and_asks_no_more() {
        let mut c = RrClient::new(spec(3), Via::Stream);
        c.handle_input(Instant::ZERO, Input::Connected { stream: 0 });
        assert!(matches!(
            c.poll_output(Instant::ZERO),
            Some(Output::Write { len: 64, .. })
        ));
        c.handle_input(
            Instant(5),
            Input::Closed {
                stream: 0,
                error: Some(StreamError::Reset),
            },
        );
        assert_eq!((c.latencies().lost, c.requests()), (1, 1));
        assert_eq!(c.poll_output(Instant(10)), None);
        assert_eq!(c.failed(), Some(StreamError::Reset));
    }

    #[test]
    fn with_bytes_the_server_answers_with_the_request_tag_and_the_client_checks_it() {
        let mut sv = RrServer::new(10, 4, Answer::Whole, Via::Stream);
        let mut req = [0u8; 10];
        Tag::new(7, 4).write(&mut req);
        // The request arrives in two reads, the tag split between them.
        for part in [&req[..2], &req[2..]] {
            let read = Input::Read {
                stream: 0,
                len: part.len() as u64,
                data: Some(part),
            };
            sv.handle_input(Instant::ZERO, read);
        }
        let answer = sv.poll_output(Instant::ZERO);
        assert_eq!(
            answer,
            Some(Output::Write {
                stream: 0,
                len: 4,
                tag: Some(Tag::new(7, 4))
            })
        );
        let spec = RrSpec {
            request: 10,
            response: 4,
            ..spec(2)
        };
        let mut c = RrClient::new(spec, Via::Stream);
        c.handle_input(Instant::ZERO, Input::Connected { stream: 0 });
        assert!(c.poll_output(Instant::ZERO).is_some());
        let wrong = [9u8, 0, 0, 0];
        let read = Input::Read {
            stream: 0,
            len: 4,
            data: Some(&wrong),
        };
        c.handle_input(Instant(10), read);
        assert!(c.unframed() && c.is_done(), "an answer to another request");
    }

    #[test]
    fn a_stream_client_gives_up_on_a_late_answer() {
        let spec = RrSpec {
            give_up: Some(Duration::from_millis(5)),
            ..spec(3)
        };
        let mut c = RrClient::new(spec, Via::Stream);
        c.handle_input(Instant::ZERO, Input::Connected { stream: 0 });
        assert!(c.poll_output(Instant::ZERO).is_some());
        let t = c.poll_timeout().expect("its time-out");
        c.handle_timeout(t);
        assert_eq!(c.latencies().lost, 1);
        let t = c.poll_timeout().expect("the give-up");
        assert_eq!(t, Instant(Duration::from_millis(15).0));
        c.handle_timeout(t);
        assert!(c.gave_up() && c.is_done());
    }

    #[test]
    fn a_burst_keeps_that_many_in_flight_and_the_answers_come_in_order() {
        // 100 us each way, 4 in flight: 20 requests in 5 round trips, each answered after one.
        let link = Link {
            delay: Duration::from_micros(100),
            lose_every: 0,
        };
        for stream in [true, false] {
            let c = if stream {
                RrClient::new(spec(20), Via::Stream)
            } else {
                RrClient::new(spec(20), Via::Datagram(1))
            };
            let c = c.with_burst(4);
            let s = if stream {
                RrServer::new(64, 64, Answer::Whole, Via::Stream)
            } else {
                RrServer::new(64, 64, Answer::Whole, Via::Datagram(0))
            };
            let mut p = if stream {
                Pair::stream(c, s, link)
            } else {
                Pair::datagrams(c, s, link)
            };
            let end = p.run(Instant(Duration::from_secs(1).0));
            let l = p.client.latencies();
            assert_eq!(l.asked(), 20, "stream {stream}");
            assert!(!p.client.unframed(), "stream {stream}");
            // One at a time would take 20 round trips of 200 us.
            assert!(end.0 < 20 * 200_000, "stream {stream}: {end:?}");
        }
    }

    /// A record that stops after `stop_after` losses in a row and counts what it is told.
    #[derive(Default)]
    struct Strict {
        asked: Vec<u64>,
        answered: u64,
        lost_in_a_row: u64,
        stop_after: u64,
    }

    impl Record for Strict {
        fn may_ask(&self) -> bool {
            self.asked.len() < 10
        }
        fn asked(&mut self, seq: u64, _now: Instant) {
            self.asked.push(seq);
        }
        fn answered(&mut self, _seq: u64, _rtt: Duration, _now: Instant) {
            self.answered += 1;
            self.lost_in_a_row = 0;
        }
        fn lost(&mut self, _seq: u64, _now: Instant) -> bool {
            self.lost_in_a_row += 1;
            self.lost_in_a_row >= self.stop_after
        }
    }

    #[test]
    fn the_record_numbers_stops_and_limits_the_requests() {
        // Nothing answers: the third loss in a row stops the client.
        let mut c = RrClient::with_record(
            spec(100),
            Via::Datagram(1),
            Strict {
                stop_after: 3,
                ..Strict::default()
            },
        )
        .starting_at(7);
        let mut now = Instant::ZERO;
        while !c.is_done() {
            while c.poll_output(now).is_some() {}
            now = c.poll_timeout().expect("a time-out");
            c.handle_timeout(now);
        }
        assert!(c.stopped());
        assert_eq!(c.record().asked, vec![7, 8, 9]);
        // Everything answered: the record's own limit of 10 ends the run.
        let link = Link {
            delay: Duration::from_micros(10),
            lose_every: 0,
        };
        let c = RrClient::with_record(spec(100), Via::Stream, Strict::default());
        let s = RrServer::new(64, 64, Answer::Whole, Via::Stream);
        let mut p = Pair::stream(c, s, link);
        p.run(Instant(Duration::from_secs(1).0));
        assert_eq!(p.client.record().answered, 10);
        assert!(p.client.is_done());
    }

    #[test]
    fn a_late_datagram_is_told_from_a_stray_one_and_a_wrong_size_stops() {
        let mut c = RrClient::new(spec(5), Via::Datagram(0));
        assert!(c.poll_output(Instant::ZERO).is_some());
        c.handle_timeout(Instant(Duration::from_millis(10).0));
        assert_eq!(c.latencies().lost, 1);
        let answer = |seq: u64, len: u64| {
            let mut b = vec![0u8; len as usize];
            Tag::new(seq, 8).write(&mut b);
            b
        };
        let late = answer(0, 64);
        let at = Instant(Duration::from_millis(11).0);
        fn input(d: &[u8]) -> Input<'_> {
            Input::Datagram {
                peer: 0,
                len: d.len() as u64,
                tag: None,
                data: Some(d),
            }
        }
        c.handle_input(at, input(&late));
        let stray = answer(99, 64);
        c.handle_input(at, input(&stray));
        assert_eq!((c.late(), c.stray()), (1, 1));
        assert!(c.poll_output(at).is_some());
        let short = answer(1, 32);
        c.handle_input(at, input(&short));
        assert_eq!(c.wrong_size(), Some(32));
        assert!(c.is_done() && c.poll_output(at).is_none());
    }
}
