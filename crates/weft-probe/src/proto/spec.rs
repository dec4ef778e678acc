//! What a client asks an agent to run: the test request of the control protocol.

use serde::{Deserialize, Serialize};

use super::rr_spec::RrSpec;

/// One test request; the `kind` field of the JSON body says which.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TestSpec {
    /// A throughput test (`weft tput`).
    Tput(TputSpec),
    /// A request/response latency test (`weft rr`).
    Rr(RrSpec),
    /// One rank of a message-passing run (`weft mp`).
    Mp(crate::mp::MpSpec),
}

/// The transport a test's data runs over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// TCP: one connection per stream.
    #[default]
    Tcp,
    /// UDP: one socket pair per stream, rate-paced datagrams with sequence numbers.
    Udp,
}

/// Which way the data of a throughput test flows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Client sends, agent receives (ttcp -t on the client).
    #[default]
    Forward,
    /// Agent sends, client receives (`--reverse`).
    Reverse,
    /// Both at once, each with its own set of streams (`--bidir`).
    Bidir,
}

impl Direction {
    /// Whether the client sends data in this direction.
    pub fn client_sends(self) -> bool {
        matches!(self, Direction::Forward | Direction::Bidir)
    }
    /// Whether the agent sends data in this direction.
    pub fn server_sends(self) -> bool {
        matches!(self, Direction::Reverse | Direction::Bidir)
    }
}

/// How much a sender sends: a total over all of its streams, or a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Amount {
    /// This many bytes in total, split evenly over the streams (`--bytes`).
    Bytes(u64),
    /// This many buffers of `len` bytes in total, split over the streams (`--count`, ttcp -n).
    Count(u64),
    /// For this many nanoseconds on every stream (`--time`).
    TimeNs(u64),
}

/// Parameters of a throughput test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TputSpec {
    /// TCP or UDP.
    pub transport: Transport,
    /// Which way the data flows.
    pub direction: Direction,
    /// Number of parallel streams per direction (`--parallel`).
    pub streams: u16,
    /// Bytes per write / per datagram (`--len`, ttcp -l).
    pub len: u32,
    /// How much each sender sends.
    pub amount: Amount,
    /// Requested SO_SNDBUF/SO_RCVBUF in bytes on every data socket at both ends (`--window`).
    #[serde(default)]
    pub window: Option<u64>,
    /// Requested TCP_MAXSEG in bytes (`--mss`).
    #[serde(default)]
    pub mss: Option<u32>,
    /// Requested TCP congestion control, e.g. `cubic` (`--cc`).
    #[serde(default)]
    pub cc: Option<String>,
    /// TCP_NODELAY on the data sockets.
    #[serde(default)]
    pub nodelay: bool,
    /// UDP: total send rate over all streams of one direction in bits/s; `None` or 0 = unpaced.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// Period of interval reports in nanoseconds (`--interval`); `None` = no interval reports.
    #[serde(default)]
    pub interval_ns: Option<u64>,
}

impl TputSpec {
    /// A forward TCP test on one stream of `len`-byte writes for `amount`, every option at its
    /// default (the fixture of this crate's tests; change fields with struct update syntax).
    pub fn tcp(len: u32, amount: Amount) -> TputSpec {
        TputSpec {
            transport: Transport::Tcp,
            direction: Direction::Forward,
            streams: 1,
            len,
            amount,
            window: None,
            mss: None,
            cc: None,
            nodelay: false,
            rate_bps: None,
            interval_ns: None,
        }
    }
}

impl TputSpec {
    /// The share of a total `amount` that stream `i` of `self.streams` carries (bytes, count) or
    /// the amount itself (time): the first `total % n` streams carry one unit more.
    pub fn stream_amount(&self, i: u16) -> Amount {
        let n = u64::from(self.streams.max(1));
        let share = |total: u64| total / n + u64::from(u64::from(i) < total % n);
        match self.amount {
            Amount::Bytes(b) => Amount::Bytes(share(b)),
            Amount::Count(c) => Amount::Count(share(c)),
            t @ Amount::TimeNs(_) => t,
        }
    }

    /// The duration the test is planned to take in nanoseconds, if given by time.
    pub fn planned_ns(&self) -> Option<u64> {
        match self.amount {
            Amount::TimeNs(t) => Some(t),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(amount: Amount, streams: u16) -> TputSpec {
        TputSpec {
            streams,
            ..TputSpec::tcp(128 * 1024, amount)
        }
    }

    #[test]
    fn splits_totals_over_streams_without_losing_units() {
        let s = spec(Amount::Bytes(10), 3);
        let parts: Vec<_> = (0..3).map(|i| s.stream_amount(i)).collect();
        assert_eq!(
            parts,
            [Amount::Bytes(4), Amount::Bytes(3), Amount::Bytes(3)]
        );
        let s = spec(Amount::TimeNs(5), 3);
        assert_eq!(s.stream_amount(2), Amount::TimeNs(5));
    }

    #[test]
    fn json_names_the_kind() {
        let t = TestSpec::Tput(spec(Amount::Count(7), 1));
        let text = serde_json::to_string(&t).unwrap();
        assert!(text.starts_with(r#"{"kind":"tput""#), "{text}");
        assert_eq!(serde_json::from_str::<TestSpec>(&text).unwrap(), t);
        let r: TestSpec = serde_json::from_str(r#"{"kind":"rr","size":64}"#).unwrap();
        match r {
            TestSpec::Rr(rr) => assert_eq!(rr.params["size"], 64),
            other => panic!("{other:?}"),
        }
    }
}
