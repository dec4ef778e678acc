//! The coordinator's conversation with each rank, as `Ext` messages of the control protocol
//! after the usual `Request(mp)` / `Accept`:
//!
//! ```text
//! coordinator                                   agent (rank r)
//!   | -- Request(kind = mp, rank r) ------------> |  checked against the agent's limits
//!   | <---------------------------- Accept ------ |  cookie; daemon route: its UDP port
//!   | -- Ext(roster: every rank's agent) -------> |
//!   |        ranks dial lower ranks (data hellos with the peer's cookie), exchange mp hellos
//!   | <---------------------------- Ext(ready) -- |
//!   | -- Ext(go) --------------------------------> |
//!   | <-------------------------- Ext(sample) --- |  one per pattern and size
//!   | <---------------------------- Ext(done) --- |  with what the rank moved
//!   | -- Bye ------------------------------------> |
//! ```
//!
//! Any failure is an `Error` message instead, after which the agent closes the connection.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::pvmd::DaemonStats;
use super::rank::RankSample;

/// Where a rank is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    /// The agent's control address (ranks dial it with a data hello).
    pub addr: SocketAddr,
    /// The cookie of the rank's test there, 32 hex digits.
    pub cookie: String,
    /// The rank's daemon (daemon route).
    #[serde(default)]
    pub daemon: Option<SocketAddr>,
}

/// What a rank moved in the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankStats {
    /// Messages sent.
    pub messages_sent: u64,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Messages that arrived before their receives were posted.
    pub unexpected: u64,
    /// The rank's daemon (daemon route).
    #[serde(default)]
    pub daemon: Option<DaemonStats>,
}

/// An mp `Ext` message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mp", rename_all = "lowercase")]
pub enum MpMsg {
    /// Coordinator to rank: every rank's whereabouts, in rank order.
    Roster {
        /// One per rank.
        peers: Vec<Peer>,
    },
    /// Rank to coordinator: connected to every peer; the plans agree.
    Ready,
    /// Coordinator to rank: start measuring.
    Go,
    /// Rank to coordinator: one pattern at one size.
    Sample(RankSample),
    /// Rank to coordinator: finished.
    Done {
        /// What it moved.
        stats: RankStats,
    },
}

impl MpMsg {
    /// As the JSON body of an `Ext` message.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// From an `Ext` body, or `None` if it is not an mp message.
    pub fn from_value(v: serde_json::Value) -> Option<MpMsg> {
        serde_json::from_value(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_through_ext_bodies() {
        let msgs = [
            MpMsg::Roster {
                peers: vec![Peer {
                    addr: "10.0.0.1:5301".parse().unwrap(),
                    cookie: "00".repeat(16),
                    daemon: Some("10.0.0.1:4000".parse().unwrap()),
                }],
            },
            MpMsg::Ready,
            MpMsg::Go,
            MpMsg::Done {
                stats: RankStats::default(),
            },
        ];
        for m in msgs {
            let v = m.to_value();
            assert!(v["mp"].is_string(), "{v}");
            assert_eq!(MpMsg::from_value(v), Some(m));
        }
        assert_eq!(MpMsg::from_value(serde_json::json!({"rr": 1})), None);
    }
}
