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

use serde_json::{Map, Value, json};

use super::PeerId;
use super::quantile::nearest_rank;
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
    /// Mean time a client's host takes from an answer's arrival to its next request leaving,
    /// microseconds (the GIGAswitch study's elapsed time C, Table 19).
    pub const CLIENT_TURNAROUND_US: &str = "client_turnaround_us";
    /// Mean time a server's host takes from a request's arrival to its answer leaving, its wait
    /// behind other clients' requests included, microseconds (elapsed time B, Table 19).
    pub const SERVER_TURNAROUND_US: &str = "server_turnaround_us";
    /// Mean time from a client's request leaving to the answer arriving, as an analyser on the
    /// client's link sees it, microseconds (elapsed time A, Table 19).
    pub const CLIENT_WAIT_US: &str = "client_wait_us";
    /// Mean time from a server's answer leaving to that client's next request arriving, as an
    /// analyser on the server's link sees it, microseconds (elapsed time D, Table 19).
    pub const SERVER_WAIT_US: &str = "server_wait_us";
    /// The network's share of a round trip measured from the request (A - B), microseconds:
    /// the GIGAswitch study's switch round trip "forward" (Table 19).
    pub const SWITCH_FORWARD_US: &str = "switch_forward_us";
    /// The network's share measured from the answer (D - C), microseconds: the study's switch
    /// round trip "echo" (Table 19).
    pub const SWITCH_ECHO_US: &str = "switch_echo_us";
    /// The server's turnaround over the network's share of a round trip (the mean of
    /// [`SWITCH_FORWARD_US`] and [`SWITCH_ECHO_US`]): how many times the delay at a loaded
    /// server is the switch's (the GIGAswitch study's "50 times").
    pub const SERVER_OVER_SWITCH: &str = "server_over_switch";
}

mod client;
mod server;

pub use client::{Record, RrClient};
pub use server::RrServer;

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

    /// The mean round trip, ns (`None` if none was answered).
    pub fn mean_ns(&self) -> Option<f64> {
        let n = self.rtt_ns.len();
        (n > 0).then(|| self.rtt_ns.iter().sum::<u64>() as f64 / n as f64)
    }

    /// The `q` quantile (0..=1) of the round trips, ns, by nearest rank (0 if none).
    pub fn quantile(&self, q: f64) -> u64 {
        nearest_rank(&self.sorted(), q).unwrap_or(0)
    }

    /// The metrics under [`keys`]: the round trip's mean (in microseconds and milliseconds),
    /// minimum, median and 99th percentile when any request was answered, and always the loss
    /// and the requests asked.
    pub fn metrics(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let all = self.sorted();
        let asked = self.asked();
        if let (Some(&min), Some(mean)) = (all.first(), self.mean_ns()) {
            m.insert(keys::RTT_MEAN_US.into(), json!(mean / 1e3));
            m.insert(keys::RTT_MS.into(), json!(mean / 1e6));
            m.insert(keys::RTT_MIN_US.into(), json!(min as f64 / 1e3));
            m.insert(
                keys::RTT_P50_US.into(),
                json!(nearest_rank(&all, 0.5).unwrap_or(0) as f64 / 1e3),
            );
            m.insert(
                keys::RTT_P99_US.into(),
                json!(nearest_rank(&all, 0.99).unwrap_or(0) as f64 / 1e3),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Tag;

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
