//! Request/response (`kind = "rr"`, `weft rr`): a client that asks a server one request at a
//! time and times each answer, as an echo test, netperf's TCP_RR or the studies' echo tools do;
//! and the server that answers.
//!
//! Over a stream (TCP) the client writes a `request`-byte message with one call once the
//! connection is open, reads until the whole `response` has arrived, and writes the next. The
//! server answers once the whole request has arrived ([`Answer::Whole`]), or writes back each
//! read at once as an RFC 862 echo service does ([`Answer::Echo`]). A request whose answer has
//! not arrived `timeout` after it was written counts as lost; TCP loses no answer, it only
//! delays it, and the stream must stay in step, so the client keeps reading, discards the late
//! answer when it comes and then writes the next request (netperf and sockperf keep their
//! connection too). If the stream fails, the request in flight is lost and the client asks no
//! more ([`RrClient::failed`]).
//!
//! Over datagrams (UDP) each request and each answer is one datagram (which the network may
//! fragment); a request not answered within `timeout` is lost, and a late answer is told from
//! the awaited one by the request's number, which every request carries in its first bytes
//! ([`Tag`]) and every answer carries back.
//!
//! [`Latencies`] turns the round trips into the metrics every engine reports, under the keys of
//! [`keys`].

use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use super::{Application, Input, Output, PeerId, StreamError, Tag};
use crate::time::{Duration, Instant};

/// How the server answers a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Answer {
    /// Once the whole request has been read, with one write of the answer (netperf's TCP_RR).
    #[default]
    Whole,
    /// Each read written straight back (an RFC 862 echo service, such as inetd's).
    Echo,
}

/// How a client reaches its server, and a server its clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// One stream (stream 0).
    Stream,
    /// Datagrams; for a client, to and from this peer.
    Datagram(PeerId),
}

/// What the client asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RrSpec {
    /// Bytes of each request.
    pub request: u64,
    /// Bytes of each answer.
    pub response: u64,
    /// Requests to make.
    pub count: u64,
    /// How long an answer may take before its request counts as lost.
    pub timeout: Duration,
    /// The first request is not asked before this instant (other traffic warms up first).
    pub start: Instant,
    /// Over a stream, how long past its time-out a late answer is still waited for before the
    /// client gives up, counting the stream as dead (`None`: for as long as the driver runs).
    pub give_up: Option<Duration>,
}

/// Bytes of a request's number that a request of `request` bytes answered by `response` bytes
/// carries, and its answer carries back: what both hold, at most 8.
pub fn tag_len(request: u64, response: u64) -> usize {
    request.min(response).min(8) as usize
}

/// The metric keys of request/response results.
pub mod keys {
    /// Mean round trip, microseconds (the workload's default metric).
    pub const RTT_MEAN_US: &str = "rtt_mean_us";
    /// Mean round trip, milliseconds.
    pub const RTT_MS: &str = "rtt_ms";
    /// Shortest round trip, microseconds.
    pub const RTT_MIN_US: &str = "rtt_min_us";
    /// Median round trip, microseconds.
    pub const RTT_P50_US: &str = "rtt_p50_us";
    /// 99th percentile round trip, microseconds.
    pub const RTT_P99_US: &str = "rtt_p99_us";
    /// Fraction of the requests asked that got no answer in time, 0..=1.
    pub const RR_LOSS: &str = "rr_loss";
    /// Requests asked.
    pub const REQUESTS: &str = "requests";
}

/// The request in flight.
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

/// The client: `count` requests, one at a time.
#[derive(Clone, Debug)]
pub struct RrClient {
    spec: RrSpec,
    via: Via,
    /// The stream is open (always true over datagrams).
    connected: bool,
    /// The stream was closed by the peer: nothing more is asked.
    closed: bool,
    failed: Option<StreamError>,
    current: Option<InFlight>,
    /// When the next request may be asked (`None`: not before an answer or a time-out).
    next: Option<Instant>,
    issued: u64,
    /// Answers that carried no awaited number, or had the wrong size.
    stray: u64,
    /// The first bytes of the answer being read, as far as they have come (streams with
    /// bytes): they must carry the request's number.
    head: Vec<u8>,
    /// An answer on the stream did not carry its request's number: the stream lost its
    /// framing, and nothing more is asked.
    unframed: bool,
    /// A late answer did not come within `give_up`.
    gave_up: bool,
    latencies: Latencies,
}

impl RrClient {
    /// A client asking `spec` via `via`.
    pub fn new(spec: RrSpec, via: Via) -> Self {
        RrClient {
            spec,
            via,
            connected: matches!(via, Via::Datagram(_)),
            closed: false,
            failed: None,
            current: None,
            next: (spec.count > 0).then_some(spec.start),
            issued: 0,
            stray: 0,
            head: Vec::new(),
            unframed: false,
            gave_up: false,
            latencies: Latencies::default(),
        }
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

    /// What it asks.
    pub fn spec(&self) -> &RrSpec {
        &self.spec
    }

    /// The round trips of the requests answered in time, and the requests lost.
    pub fn latencies(&self) -> &Latencies {
        &self.latencies
    }

    /// Requests asked.
    pub fn requests(&self) -> u64 {
        self.issued
    }

    /// Answers that did not answer the request in flight (late ones over datagrams included).
    pub fn stray(&self) -> u64 {
        self.stray
    }

    /// Why the stream failed, if it did.
    pub fn failed(&self) -> Option<StreamError> {
        self.failed
    }

    fn tag_len(&self) -> usize {
        tag_len(self.spec.request, self.spec.response)
    }

    fn deadline(&self) -> Option<Instant> {
        let c = self.current?;
        if !c.late {
            return Some(c.issued + self.spec.timeout);
        }
        self.spec.give_up.map(|g| c.issued + self.spec.timeout + g)
    }

    /// May ask a request (at `next`).
    fn may_ask(&self) -> bool {
        self.connected
            && !self.closed
            && !self.unframed
            && !self.gave_up
            && self.failed.is_none()
            && self.current.is_none()
            && self.issued < self.spec.count
    }

    /// A stream read `n` answer bytes by `now` (`data`: the bytes, if the driver has them).
    fn read(&mut self, now: Instant, n: u64, data: Option<&[u8]>) {
        let Some(mut c) = self.current else { return };
        let k = self.tag_len();
        if let Some(d) = data
            && self.head.len() < k
        {
            let take = (k - self.head.len()).min(d.len());
            self.head.extend_from_slice(&d[..take]);
            if self.head.len() == k && !Tag::read(&self.head, k).is_some_and(|t| t.carries(c.seq)) {
                self.unframed = true;
            }
        }
        c.got += n;
        if c.got < self.spec.response {
            self.current = Some(c);
            return;
        }
        // One request at a time: nothing beyond the answer can have arrived.
        self.current = None;
        self.head.clear();
        self.next = Some(now.max(self.spec.start));
        let rtt = now.0 - c.issued.0;
        if !c.late && rtt <= self.spec.timeout.0 {
            self.latencies.rtt_ns.push(rtt);
        } else if !c.late {
            self.latencies.lost += 1;
        }
    }

    /// A datagram answer arrived at `now`.
    fn datagram(&mut self, now: Instant, input: &Input<'_>, len: u64) {
        let Some(c) = self.current else {
            self.stray += 1;
            return;
        };
        let answers = input.tag(self.tag_len()).is_none_or(|t| t.carries(c.seq));
        if !answers || len != self.spec.response || now >= c.issued + self.spec.timeout {
            self.stray += 1;
            return;
        }
        self.latencies.rtt_ns.push(now.0 - c.issued.0);
        self.current = None;
        self.next = Some(now.max(self.spec.start));
    }
}

impl Application for RrClient {
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
                    if self.current.take().is_some_and(|c| !c.late) {
                        self.latencies.lost += 1;
                    }
                }
            }
            (Input::Datagram { peer, len, .. }, Via::Datagram(server)) if peer == server => {
                self.datagram(now, &input, len)
            }
            _ => {}
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let Some(c) = self.current else { return };
        if c.late {
            if self
                .spec
                .give_up
                .is_some_and(|g| now >= c.issued + self.spec.timeout + g)
            {
                self.gave_up = true;
            }
            return;
        }
        if now < c.issued + self.spec.timeout {
            return;
        }
        self.latencies.lost += 1;
        match self.via {
            Via::Stream => self.current = Some(InFlight { late: true, ..c }),
            Via::Datagram(_) => {
                self.current = None;
                self.next = Some(now);
            }
        }
    }

    fn poll_output(&mut self, now: Instant) -> Option<Output> {
        if !self.may_ask() || self.next.is_none_or(|t| now < t) {
            return None;
        }
        let seq = self.issued;
        self.issued += 1;
        self.next = None;
        self.current = Some(InFlight {
            seq,
            issued: now,
            got: 0,
            late: false,
        });
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
        (self.current.is_none() || self.gave_up || self.unframed) && !self.may_ask()
    }
}

/// The server: answers each request of `request` bytes with `response` bytes, as `answer`
/// says; over datagrams, every client that asks.
#[derive(Clone, Debug)]
pub struct RrServer {
    request: u64,
    response: u64,
    answer: Answer,
    via: Via,
    /// Bytes of the current request read so far (streams, [`Answer::Whole`]).
    got: u64,
    /// Its first bytes, as far as they have come (streams with bytes): the answer carries
    /// them back.
    head: Vec<u8>,
    /// The answers to give, in order.
    out: VecDeque<Output>,
    answered: u64,
}

impl RrServer {
    /// A server for requests of `request` bytes answered with `response` bytes, as `answer`
    /// says, via `via` (over datagrams the peer of [`Via::Datagram`] is not used: it answers
    /// whoever asks).
    pub fn new(request: u64, response: u64, answer: Answer, via: Via) -> Self {
        RrServer {
            request: request.max(1),
            response,
            answer,
            via,
            got: 0,
            head: Vec::new(),
            out: VecDeque::new(),
            answered: 0,
        }
    }

    /// The bytes `d` of requests read on `stream`: each whole request answered with its
    /// first bytes' tag.
    fn requests(&mut self, stream: usize, mut d: &[u8]) {
        let k = tag_len(self.request, self.response);
        while !d.is_empty() {
            let take = ((self.request - self.got) as usize).min(d.len());
            if self.head.len() < k {
                let h = (k - self.head.len()).min(take);
                self.head.extend_from_slice(&d[..h]);
            }
            self.got += take as u64;
            d = &d[take..];
            if self.got == self.request {
                self.got = 0;
                self.answered += 1;
                let tag = Tag::read(&self.head, k);
                self.head.clear();
                self.out.push_back(Output::Write {
                    stream,
                    len: self.response,
                    tag,
                });
            }
        }
    }

    /// Requests answered ([`Answer::Whole`]), or reads written back ([`Answer::Echo`]).
    pub fn answered(&self) -> u64 {
        self.answered
    }
}

impl Application for RrServer {
    fn handle_input(&mut self, _now: Instant, input: Input<'_>) {
        match (input, self.via, self.answer) {
            (Input::Read { stream, len, .. }, Via::Stream, Answer::Echo) => {
                self.answered += 1;
                self.out.push_back(Output::Echo { stream, len });
            }
            (
                Input::Read {
                    stream,
                    len,
                    data: None,
                },
                Via::Stream,
                Answer::Whole,
            ) => {
                self.got += len;
                while self.got >= self.request {
                    self.got -= self.request;
                    self.answered += 1;
                    self.out.push_back(Output::Write {
                        stream,
                        len: self.response,
                        tag: None,
                    });
                }
            }
            (
                Input::Read {
                    stream,
                    data: Some(d),
                    ..
                },
                Via::Stream,
                Answer::Whole,
            ) => self.requests(stream, d),
            (Input::Datagram { peer, .. }, Via::Datagram(_), _) => {
                self.answered += 1;
                let tag = input.tag(tag_len(self.request, self.response));
                self.out.push_back(Output::Send {
                    peer,
                    len: self.response,
                    tag,
                });
            }
            _ => {}
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self, _now: Instant) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

/// Round trips and losses: what request/response measures, and its metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Latencies {
    /// Round trips of the requests answered in time, ns, in the order answered.
    pub rtt_ns: Vec<u64>,
    /// Requests that got no answer in time.
    pub lost: u64,
}

impl Latencies {
    /// Adds `other`'s round trips and losses.
    pub fn extend(&mut self, other: &Latencies) {
        self.rtt_ns.extend_from_slice(&other.rtt_ns);
        self.lost += other.lost;
    }

    /// Requests asked: answered and lost.
    pub fn asked(&self) -> u64 {
        self.rtt_ns.len() as u64 + self.lost
    }

    /// The round trips sorted.
    pub fn sorted(&self) -> Vec<u64> {
        let mut v = self.rtt_ns.clone();
        v.sort_unstable();
        v
    }

    /// The `q` quantile (0..=1) of the round trips, ns, by nearest rank (0 if none).
    pub fn quantile(&self, q: f64) -> u64 {
        quantile(&self.sorted(), q)
    }

    /// The metrics under [`keys`]: the round trip's mean (in microseconds and milliseconds),
    /// minimum, median and 99th percentile when any request was answered, and always the loss
    /// and the requests asked.
    pub fn metrics(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let all = self.sorted();
        let asked = self.asked();
        if let Some(&min) = all.first() {
            let mean = all.iter().sum::<u64>() as f64 / all.len() as f64;
            m.insert(keys::RTT_MEAN_US.into(), json!(mean / 1e3));
            m.insert(keys::RTT_MS.into(), json!(mean / 1e6));
            m.insert(keys::RTT_MIN_US.into(), json!(min as f64 / 1e3));
            m.insert(
                keys::RTT_P50_US.into(),
                json!(quantile(&all, 0.5) as f64 / 1e3),
            );
            m.insert(
                keys::RTT_P99_US.into(),
                json!(quantile(&all, 0.99) as f64 / 1e3),
            );
        }
        m.insert(
            keys::RR_LOSS.into(),
            json!(if asked == 0 {
                0.0
            } else {
                self.lost as f64 / asked as f64
            }),
        );
        m.insert(keys::REQUESTS.into(), json!(asked));
        m
    }
}

/// The `q` quantile (0..=1) of sorted `v`, by nearest rank (0 if empty).
pub fn quantile(v: &[u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)]
}

#[cfg(test)]
mod tests {
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
    fn tags_compare_on_their_bytes() {
        let t = Tag::new(0x1_0203, 2);
        let mut b = [0u8; 4];
        t.write(&mut b);
        assert_eq!(b, [3, 2, 0, 0]);
        let back = Tag::read(&b, 2).expect("two bytes");
        assert!(back.carries(0x1_0203) && back.carries(0x0203) && !back.carries(0x0204));
        assert!(Tag::new(5, 0).carries(7));
        assert_eq!(Tag::read(&b[..1], 2), None);
    }

    #[test]
    fn metrics_have_every_key_and_the_loss_of_nothing_asked_is_zero() {
        let l = Latencies {
            rtt_ns: vec![3000, 1000, 2000],
            lost: 1,
        };
        let m = l.metrics();
        assert_eq!(m[keys::RTT_MEAN_US], 2.0);
        assert_eq!(m[keys::RTT_MIN_US], 1.0);
        assert_eq!(m[keys::RTT_P50_US], 2.0);
        assert_eq!(m[keys::RTT_P99_US], 3.0);
        assert_eq!(m[keys::RR_LOSS], 0.25);
        let none = Latencies::default().metrics();
        assert_eq!(none[keys::RR_LOSS], 0.0);
        assert!(!none.contains_key(keys::RTT_MEAN_US));
    }
}
