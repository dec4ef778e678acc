//! Relayed tests: a client asks agent A to be the client of a test toward agent B and to report
//! what it measured (`weft pattern --pairs A:B`).
//!
//! ```text
//! client                          agent A (relay)                    agent B (target)
//!   | -- Relay(RelaySpec) --------> |  relaying allowed? version, limits, time bound
//!   | <--------- Accept | Error --- |  A's test slot is taken
//!   |                               | -- Request(TestSpec) --------> |  A is an ordinary client
//!   |                               | <------------ Accept | Error - |  the weft handshake: no
//!   |                               |   data hellos, Ready, data     |  data before B accepts
//!   | <-------- Relayed | Error --- |  both ends' counts
//!   | -- Bye ---------------------> |
//! ```
//!
//! `Relay` and `Relayed` are message types 10 and 11 of control-protocol version 1; an agent
//! that predates them answers `unknown message type 10`. The body carries its own `version`
//! ([`RELAY_VERSION`]) so that the request can grow without a new protocol version.
//!
//! **Bounds.** An agent that sends traffic wherever it is told is an amplifier, so a relay is
//! bounded like any test: it takes one of the relay's test slots (`--max-tests`), must be
//! bounded by time within `--max-duration`, and its streams and buffer length are checked
//! against the relay's limits. The target is sent nothing but a weft `Request` until it has
//! answered with a weft `Accept`, so only a weft agent that agreed to the test receives data,
//! and data only ever goes to the target's own address. A relay asks the target for a plain
//! test, never for another relay, so relays do not chain. `weft serve --no-relay` refuses
//! relay requests altogether.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::message::{CpuUse, SockInfo, StreamEnd};
use super::spec::{TputSpec, Transport};
use crate::rr::SizeResult;

/// The version of the relay request body this build speaks.
pub const RELAY_VERSION: u32 = 1;

/// Client to relay: run this test as the client toward `target`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelaySpec {
    /// Version of this body ([`RELAY_VERSION`]); an agent refuses versions it does not know.
    pub version: u32,
    /// The target agent's control address (an address, not a name: the relay resolves nothing).
    pub target: SocketAddr,
    /// What to run toward the target.
    pub test: RelayTest,
}

/// The test a relay runs as the client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum RelayTest {
    /// Throughput; `direction` is seen from the relay: `forward` sends relay -> target.
    Tput(TputSpec),
    /// Request/response latency at one size, relay -> target and back.
    Rr(RelayRr),
}

/// A request/response test run by a relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayRr {
    /// TCP or UDP.
    pub transport: Transport,
    /// Request (and echoed response) size in bytes.
    pub size: u32,
    /// Unmeasured transactions first.
    pub warmup: u64,
    /// Measured transactions, when `time_ns` is not given.
    #[serde(default)]
    pub count: Option<u64>,
    /// Measure for this long instead, in nanoseconds.
    #[serde(default)]
    pub time_ns: Option<u64>,
}

/// Relay to client: what the relayed test measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
// One report per relayed test, parsed once: the variants' sizes (both a few hundred bytes) do
// not matter, and boxing one would only move the lint to the other.
#[allow(clippy::large_enum_variant)]
pub enum RelayReport {
    /// A throughput test's raw counts, which the client reconciles itself.
    Tput(RelayTput),
    /// A request/response test's record of its one size.
    Rr(SizeResult),
}

/// Both ends' final counters of one direction, stream by stream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirCounts {
    /// The sending end's streams.
    pub sender: Vec<StreamEnd>,
    /// The receiving end's streams, in the same order.
    pub receiver: Vec<StreamEnd>,
}

/// What a relayed throughput test counted at the relay and at the target.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RelayTput {
    /// The target's number for the test.
    pub target_test_id: u64,
    /// Relay -> target, if data flowed that way.
    #[serde(default)]
    pub up: Option<DirCounts>,
    /// Target -> relay, if data flowed that way.
    #[serde(default)]
    pub down: Option<DirCounts>,
    /// The relay's data sockets at the start (up streams first).
    #[serde(default)]
    pub relay_sockets: Vec<SockInfo>,
    /// The target's data sockets at the start.
    #[serde(default)]
    pub target_sockets: Vec<SockInfo>,
    /// The relay's data sockets at the end.
    #[serde(default)]
    pub relay_sockets_end: Vec<SockInfo>,
    /// The target's data sockets at the end.
    #[serde(default)]
    pub target_sockets_end: Vec<SockInfo>,
    /// The relay's CPU use for the test.
    pub relay_cpu: CpuUse,
    /// The target's CPU use for the test.
    pub target_cpu: CpuUse,
    /// Wall time of the data phase at the relay, ns.
    pub wall_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::frame::emit_header;
    use crate::proto::{Amount, Message, MessageType, ProtoError};

    fn tput() -> TputSpec {
        TputSpec::tcp(1000, Amount::TimeNs(5))
    }

    #[test]
    fn relay_request_bytes() {
        let m = Message::Relay(RelaySpec {
            version: 1,
            target: "127.0.0.1:9".parse().unwrap(),
            test: RelayTest::Rr(RelayRr {
                transport: Transport::Udp,
                size: 64,
                warmup: 2,
                count: Some(10),
                time_ns: None,
            }),
        });
        let body = br#"{"version":1,"target":"127.0.0.1:9","test":{"kind":"rr","transport":"udp","size":64,"warmup":2,"count":10,"time_ns":null}}"#;
        let b = m.to_bytes();
        assert_eq!(&b[..12], &emit_header(10, body.len() as u32));
        assert_eq!(&b[..6], b"WEFT\x03\x0a");
        assert_eq!(&b[12..], body);
        assert_eq!(Message::parse_bytes(&b, 4096).unwrap(), m);
    }

    #[test]
    fn relay_request_with_tput_round_trips_and_ipv6_targets_parse() {
        let m = Message::Relay(RelaySpec {
            version: 1,
            target: "[::1]:5301".parse().unwrap(),
            test: RelayTest::Tput(tput()),
        });
        let b = m.to_bytes();
        assert_eq!(b[5], MessageType::Relay as u8);
        let text = std::str::from_utf8(&b[12..]).unwrap();
        assert!(
            text.starts_with(r#"{"version":1,"target":"[::1]:5301","test":{"kind":"tput","#),
            "{text}"
        );
        assert_eq!(Message::parse_bytes(&b, 4096).unwrap(), m);
    }

    #[test]
    fn relayed_report_round_trips() {
        let end = |bytes| StreamEnd {
            bytes,
            packets: 3,
            elapsed_ns: 7,
            udp: None,
        };
        let m = Message::Relayed(Box::new(RelayReport::Tput(RelayTput {
            target_test_id: 4,
            up: Some(DirCounts {
                sender: vec![end(100)],
                receiver: vec![end(100)],
            }),
            down: None,
            relay_cpu: CpuUse {
                user_ns: 1,
                sys_ns: 2,
                wall_ns: 3,
            },
            wall_ns: 9,
            ..RelayTput::default()
        })));
        let b = m.to_bytes();
        assert_eq!(b[5], 11);
        assert!(b[12..].starts_with(br#"{"kind":"tput","target_test_id":4,"up":{"sender":"#));
        assert_eq!(Message::parse_bytes(&b, 4096).unwrap(), m);
    }

    #[test]
    fn malformed_relay_bodies_are_refused() {
        let bad: [&[u8]; 5] = [
            br#"{"version":1,"target":"nowhere","test":{"kind":"rr","transport":"tcp","size":1,"warmup":0}}"#,
            br#"{"version":1,"target":"127.0.0.1:1","test":{"kind":"relay"}}"#,
            br#"{"version":-1,"target":"127.0.0.1:1","test":{"kind":"rr","transport":"tcp","size":1,"warmup":0}}"#,
            br#"{"target":"127.0.0.1:1"}"#,
            br#"[]"#,
        ];
        for body in bad {
            let mut b = emit_header(MessageType::Relay as u8, body.len() as u32).to_vec();
            b.extend_from_slice(body);
            assert!(
                matches!(
                    Message::parse_bytes(&b, 4096),
                    Err(ProtoError::BadBody { msg_type: 10, .. })
                ),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let body = br#"{"kind":"tput","target_test_id":"x"}"#;
        let mut b = emit_header(MessageType::Relayed as u8, body.len() as u32).to_vec();
        b.extend_from_slice(body);
        assert!(matches!(
            Message::parse_bytes(&b, 4096),
            Err(ProtoError::BadBody { msg_type: 11, .. })
        ));
    }
}
