//! The messages of the control protocol (their representation) and how they map to frames.
//!
//! A test runs as follows; every arrow is one framed message on the control connection:
//!
//! ```text
//! client                                   agent
//!   | -- Request(TestSpec) -------------------> |  validated against the agent's limits
//!   | <------------------- Accept | Error ----- |  test id, cookie, UDP ports
//!   |   data connections: each sends a 24-byte DataHello with the cookie (TCP) or a UdpHello
//!   | <---------------------------- Ready ----- |  all streams attached; effective socket options
//!   |   data flows; either side may send Interval reports
//!   | -- SenderDone --------------------------> |  (each sender, when it has sent everything)
//!   | <-------------------------- Finished ---- |  the agent's final counts and CPU use
//!   | -- Bye ---------------------------------> |
//! ```
//!
//! `Ext` carries test-kind-specific JSON (for example the request/response agent's messages).
//! `Relay` and `Relayed` ask an agent to run a test toward another agent and carry its report
//! back (see [`super::relay`]).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::ProtoError;
use super::auth::{AuthChallenge, AuthHello, AuthOk, AuthProof};
use super::frame::{Frame, HEADER_LEN, emit_header};
use super::relay::{RelayReport, RelaySpec};
use super::spec::TestSpec;

/// Numeric codes of the message types (the `type` byte of the header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MessageType {
    /// [`Message::Request`].
    Request = 1,
    /// [`Message::Accept`].
    Accept = 2,
    /// [`Message::Ready`].
    Ready = 3,
    /// [`Message::Interval`].
    Interval = 4,
    /// [`Message::SenderDone`].
    SenderDone = 5,
    /// [`Message::Finished`].
    Finished = 6,
    /// [`Message::Error`].
    Error = 7,
    /// [`Message::Bye`].
    Bye = 8,
    /// [`Message::Ext`].
    Ext = 9,
    /// [`Message::Relay`].
    Relay = 10,
    /// [`Message::Relayed`].
    Relayed = 11,
    /// [`Message::AuthHello`].
    AuthHello = 12,
    /// [`Message::AuthChallenge`].
    AuthChallenge = 13,
    /// [`Message::AuthProof`].
    AuthProof = 14,
    /// [`Message::AuthOk`] (protocol 2).
    AuthOk = 15,
}

impl MessageType {
    /// The type for a code, or `None` for an unknown code.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => MessageType::Request,
            2 => MessageType::Accept,
            3 => MessageType::Ready,
            4 => MessageType::Interval,
            5 => MessageType::SenderDone,
            6 => MessageType::Finished,
            7 => MessageType::Error,
            8 => MessageType::Bye,
            9 => MessageType::Ext,
            10 => MessageType::Relay,
            11 => MessageType::Relayed,
            12 => MessageType::AuthHello,
            13 => MessageType::AuthChallenge,
            14 => MessageType::AuthProof,
            15 => MessageType::AuthOk,
            _ => return None,
        })
    }
}

/// The agent accepted a test: how the client attaches its data streams.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accept {
    /// The agent's number for this test (for logs).
    pub test_id: u64,
    /// 32 hex digits: the secret each data connection or UDP hello presents.
    pub cookie: String,
    /// UDP tests: the agent's UDP port for each stream, in stream order (client-to-agent streams
    /// first, then agent-to-client streams for `bidir`). Empty for TCP.
    #[serde(default)]
    pub udp_ports: Vec<u16>,
}

/// Effective options of one data socket, read back from the kernel with getsockopt.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SockInfo {
    /// SO_SNDBUF as the kernel reports it, in bytes (Linux reports twice the request).
    pub sndbuf: u64,
    /// SO_RCVBUF as the kernel reports it, in bytes (Linux reports twice the request).
    pub rcvbuf: u64,
    /// TCP_MAXSEG in bytes (TCP only).
    #[serde(default)]
    pub mss: Option<u32>,
    /// TCP_CONGESTION (TCP only).
    #[serde(default)]
    pub cc: Option<String>,
}

/// All data streams are attached and the test starts now.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ready {
    /// The agent's data sockets, in stream order.
    pub streams: Vec<SockInfo>,
}

/// Byte and datagram counters of one side over one reporting interval.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interval {
    /// Start of the interval in nanoseconds since the start of the test (Ready).
    pub start_ns: u64,
    /// End of the interval in nanoseconds since the start of the test.
    pub end_ns: u64,
    /// Bytes sent in the interval over all streams.
    pub tx_bytes: u64,
    /// Bytes received in the interval over all streams.
    pub rx_bytes: u64,
    /// Datagrams received in the interval (UDP).
    #[serde(default)]
    pub rx_packets: u64,
    /// Change in datagrams missing over the interval (UDP): new gaps minus gaps filled by late
    /// arrivals; negative when reordered datagrams filled earlier gaps.
    #[serde(default)]
    pub rx_lost: i64,
}

/// A sender has sent everything; its per-stream totals, so the receiver can reconcile.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderDone {
    /// Bytes sent per stream.
    pub bytes: Vec<u64>,
    /// Writes (TCP) or datagrams (UDP) per stream.
    pub packets: Vec<u64>,
}

/// UDP receive accounting of one stream (see `crate::tput::udp_stats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpCounts {
    /// Datagrams the sender says it sent.
    pub expected: u64,
    /// Distinct datagrams received.
    pub received: u64,
    /// Datagrams never received: `expected - received`.
    pub lost: u64,
    /// Datagrams received more than once (extra copies).
    pub duplicates: u64,
    /// Datagrams that arrived after one with a higher sequence number.
    pub reordered: u64,
    /// RFC 3550 interarrival jitter at the end of the test, in nanoseconds.
    pub jitter_ns: f64,
}

/// Final counters of one stream at one end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamEnd {
    /// Bytes (payload including weft's datagram header for UDP).
    pub bytes: u64,
    /// Writes/reads (TCP) or datagrams (UDP).
    pub packets: u64,
    /// From the start of the test to the last byte, in nanoseconds.
    pub elapsed_ns: u64,
    /// UDP receivers only.
    #[serde(default)]
    pub udp: Option<UdpCounts>,
}

/// CPU time used by one end for a test (its data and control threads), and the wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuUse {
    /// User CPU time in nanoseconds.
    pub user_ns: u64,
    /// System CPU time in nanoseconds.
    pub sys_ns: u64,
    /// Wall-clock time of the test in nanoseconds.
    pub wall_ns: u64,
}

impl CpuUse {
    /// User plus system time as a percentage of wall time (can exceed 100 with several threads).
    pub fn percent(&self) -> f64 {
        if self.wall_ns == 0 {
            return 0.0;
        }
        (self.user_ns + self.sys_ns) as f64 * 100.0 / self.wall_ns as f64
    }
}

/// The agent's final report: counts after its receivers drained and its senders finished.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    /// Streams on which the agent sent, in order.
    pub tx: Vec<StreamEnd>,
    /// Streams on which the agent received, in order.
    pub rx: Vec<StreamEnd>,
    /// The agent's CPU use for this test.
    pub cpu: CpuUse,
    /// The agent's data sockets at the end of the test (buffers after auto-tuning), in the
    /// stream order of `Ready`.
    #[serde(default)]
    pub sockets_end: Vec<SockInfo>,
    /// Request/response tests: where the agent's serving thread ran and how it waited
    /// (`{"cpus": CpuTrace, "busy_poll": BusyPoll}` of `rr::place` and `rr::busy`); absent
    /// from older agents and other tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<serde_json::Value>,
}

/// A failure, sent before the sender drops the connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorMsg {
    /// A short machine-readable code: `bad-message`, `limit`, `busy`, `timeout`, `unsupported`,
    /// `socket`, `refused`, `relay`, `internal`.
    pub code: String,
    /// What went wrong and what to do, for a person.
    pub message: String,
}

/// One control message (the representation; [`Message::emit`] and [`Message::parse`] convert).
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// Client: run this test.
    Request(TestSpec),
    /// Agent: test accepted.
    Accept(Accept),
    /// Agent: data streams attached, go.
    Ready(Ready),
    /// Either: counters over an interval.
    Interval(Interval),
    /// Either sender: all sent.
    SenderDone(SenderDone),
    /// Agent: final counts.
    Finished(Finished),
    /// Either: a failure; the connection closes after it.
    Error(ErrorMsg),
    /// Either: done, closing.
    Bye,
    /// Test-kind-specific JSON (e.g. request/response).
    Ext(serde_json::Value),
    /// Client: act as the client of a test toward another agent (instead of `Request`).
    Relay(RelaySpec),
    /// Relay: what the relayed test measured (boxed: it is the largest message by far).
    Relayed(Box<RelayReport>),
    /// Client with a key: its challenge (first message, before `Request` or `Relay`).
    AuthHello(AuthHello),
    /// Agent with a key: its challenge.
    AuthChallenge(AuthChallenge),
    /// Client: its proof of the key (first: the agent proves nothing to an unproven client).
    AuthProof(AuthProof),
    /// Agent: its proof of the key, once the client's held.
    AuthOk(AuthOk),
}

impl Message {
    /// The type code of this message.
    pub fn msg_type(&self) -> MessageType {
        match self {
            Message::Request(_) => MessageType::Request,
            Message::Accept(_) => MessageType::Accept,
            Message::Ready(_) => MessageType::Ready,
            Message::Interval(_) => MessageType::Interval,
            Message::SenderDone(_) => MessageType::SenderDone,
            Message::Finished(_) => MessageType::Finished,
            Message::Error(_) => MessageType::Error,
            Message::Bye => MessageType::Bye,
            Message::Ext(_) => MessageType::Ext,
            Message::Relay(_) => MessageType::Relay,
            Message::Relayed(_) => MessageType::Relayed,
            Message::AuthHello(_) => MessageType::AuthHello,
            Message::AuthChallenge(_) => MessageType::AuthChallenge,
            Message::AuthProof(_) => MessageType::AuthProof,
            Message::AuthOk(_) => MessageType::AuthOk,
        }
    }

    /// A short error message with `code` and `message`.
    pub fn error(code: &str, message: impl Into<String>) -> Self {
        Message::Error(ErrorMsg {
            code: code.to_string(),
            message: message.into(),
        })
    }

    /// Parses a checked frame's type and JSON body.
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Self, ProtoError> {
        let code = frame.msg_type();
        let ty = MessageType::from_code(code).ok_or(ProtoError::UnknownType(code))?;
        let body = frame.body();
        if body.len() != frame.body_len() as usize {
            return Err(ProtoError::Truncated {
                need: HEADER_LEN + frame.body_len() as usize,
                have: HEADER_LEN + body.len(),
            });
        }
        Ok(match ty {
            MessageType::Request => Message::Request(json(ty, body)?),
            MessageType::Accept => Message::Accept(json(ty, body)?),
            MessageType::Ready => Message::Ready(json(ty, body)?),
            MessageType::Interval => Message::Interval(json(ty, body)?),
            MessageType::SenderDone => Message::SenderDone(json(ty, body)?),
            MessageType::Finished => Message::Finished(json(ty, body)?),
            MessageType::Error => Message::Error(json(ty, body)?),
            MessageType::Bye => {
                if !body.is_empty() {
                    // Version 1 Bye has no body; accept `{}`-like JSON for extensibility.
                    let _: serde_json::Value = json(ty, body)?;
                }
                Message::Bye
            }
            MessageType::Ext => Message::Ext(json(ty, body)?),
            MessageType::Relay => Message::Relay(json(ty, body)?),
            MessageType::Relayed => Message::Relayed(json(ty, body)?),
            MessageType::AuthHello => Message::AuthHello(json(ty, body)?),
            MessageType::AuthChallenge => Message::AuthChallenge(json(ty, body)?),
            MessageType::AuthProof => Message::AuthProof(json(ty, body)?),
            MessageType::AuthOk => Message::AuthOk(json(ty, body)?),
        })
    }

    /// Parses one whole message from `bytes` (header and body), with a body bound of `max_body`.
    pub fn parse_bytes(bytes: &[u8], max_body: u32) -> Result<Self, ProtoError> {
        let frame = Frame::new_checked(bytes, max_body)?;
        Message::parse(&frame)
    }

    /// The body of this message as JSON bytes.
    pub fn body_json(&self) -> Vec<u8> {
        let r = match self {
            Message::Request(b) => serde_json::to_vec(b),
            Message::Accept(b) => serde_json::to_vec(b),
            Message::Ready(b) => serde_json::to_vec(b),
            Message::Interval(b) => serde_json::to_vec(b),
            Message::SenderDone(b) => serde_json::to_vec(b),
            Message::Finished(b) => serde_json::to_vec(b),
            Message::Error(b) => serde_json::to_vec(b),
            Message::Bye => Ok(Vec::new()),
            Message::Ext(b) => serde_json::to_vec(b),
            Message::Relay(b) => serde_json::to_vec(b),
            Message::Relayed(b) => serde_json::to_vec(b),
            Message::AuthHello(b) => serde_json::to_vec(b),
            Message::AuthChallenge(b) => serde_json::to_vec(b),
            Message::AuthProof(b) => serde_json::to_vec(b),
            Message::AuthOk(b) => serde_json::to_vec(b),
        };
        // Our bodies are plain structs of numbers and strings; a non-finite float would be
        // written as null and refused by the reader, and none is produced (jitter starts at 0
        // and stays finite; latency statistics are 0 when empty).
        r.unwrap_or_default()
    }

    /// Appends header and body to `out` (a reusable buffer).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let body = self.body_json();
        let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&emit_header(self.msg_type() as u8, len));
        out.extend_from_slice(&body);
    }

    /// The message as header and body bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.emit(&mut v);
        v
    }
}

fn json<D: DeserializeOwned>(ty: MessageType, body: &[u8]) -> Result<D, ProtoError> {
    serde_json::from_slice(body).map_err(|e| ProtoError::BadBody {
        msg_type: ty as u8,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::auth::Hex;
    use crate::proto::spec::{Amount, Direction, TputSpec, Transport};

    #[test]
    fn bye_is_twelve_bytes() {
        let b = Message::Bye.to_bytes();
        assert_eq!(b, [b'W', b'E', b'F', b'T', 3, 8, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Message::parse_bytes(&b, 0).unwrap(), Message::Bye);
    }

    #[test]
    fn error_message_bytes() {
        let m = Message::error("limit", "x");
        let b = m.to_bytes();
        let body = br#"{"code":"limit","message":"x"}"#;
        assert_eq!(&b[..12], &emit_header(7, body.len() as u32));
        assert_eq!(&b[12..], body);
        assert_eq!(Message::parse_bytes(&b, 1000).unwrap(), m);
    }

    #[test]
    fn request_round_trips() {
        let m = Message::Request(TestSpec::Tput(TputSpec {
            transport: Transport::Udp,
            direction: Direction::Bidir,
            streams: 2,
            len: 1400,
            amount: Amount::TimeNs(1_000_000_000),
            window: Some(65536),
            mss: Some(1000),
            cc: Some("cubic".into()),
            nodelay: true,
            rate_bps: Some(10_000_000),
            interval_ns: Some(100_000_000),
        }));
        let b = m.to_bytes();
        assert_eq!(Message::parse_bytes(&b, 64 * 1024).unwrap(), m);
    }

    #[test]
    fn rejects_unknown_type_bad_json_and_wrong_shape() {
        let mut b = Message::Bye.to_bytes();
        b[5] = 0;
        assert_eq!(
            Message::parse_bytes(&b, 10).unwrap_err(),
            ProtoError::UnknownType(0)
        );
        b[5] = 16;
        assert_eq!(
            Message::parse_bytes(&b, 10).unwrap_err(),
            ProtoError::UnknownType(16)
        );
        let mut b = emit_header(MessageType::Accept as u8, 3).to_vec();
        b.extend_from_slice(b"{x}");
        assert!(matches!(
            Message::parse_bytes(&b, 10),
            Err(ProtoError::BadBody { msg_type: 2, .. })
        ));
        let mut b = emit_header(MessageType::Accept as u8, 2).to_vec();
        b.extend_from_slice(b"[]");
        assert!(matches!(
            Message::parse_bytes(&b, 10),
            Err(ProtoError::BadBody { .. })
        ));
        let mut b = emit_header(MessageType::Request as u8, 16).to_vec();
        b.extend_from_slice(br#"{"kind":"nope"}"#);
        b.push(b' ');
        assert!(matches!(
            Message::parse_bytes(&b, 100),
            Err(ProtoError::BadBody { msg_type: 1, .. })
        ));
    }

    #[test]
    fn every_message_round_trips() {
        let msgs = [
            Message::Accept(Accept {
                test_id: 9,
                cookie: "00ff".into(),
                udp_ports: vec![1, 2],
            }),
            Message::Ready(Ready {
                streams: vec![SockInfo {
                    sndbuf: 1,
                    rcvbuf: 2,
                    mss: Some(3),
                    cc: Some("bbr".into()),
                }],
            }),
            Message::Interval(Interval {
                start_ns: 1,
                end_ns: 2,
                tx_bytes: 3,
                rx_bytes: 4,
                rx_packets: 5,
                rx_lost: -1,
            }),
            Message::SenderDone(SenderDone {
                bytes: vec![10],
                packets: vec![1],
            }),
            Message::Finished(Finished {
                tx: vec![StreamEnd::default()],
                rx: vec![StreamEnd {
                    bytes: 5,
                    packets: 1,
                    elapsed_ns: 7,
                    udp: Some(UdpCounts {
                        expected: 2,
                        received: 1,
                        lost: 1,
                        duplicates: 0,
                        reordered: 0,
                        jitter_ns: 1.5,
                    }),
                }],
                cpu: CpuUse {
                    user_ns: 1,
                    sys_ns: 2,
                    wall_ns: 3,
                },
                sockets_end: vec![SockInfo::default()],
                placement: Some(serde_json::json!({"cpus": {"seen": [1]}})),
            }),
            Message::Ext(serde_json::json!({"rr": 1})),
            Message::AuthHello(AuthHello {
                nonce: Hex([7; 16]),
            }),
            Message::AuthChallenge(AuthChallenge {
                nonce: Hex([0xa5; 16]),
            }),
            Message::AuthProof(AuthProof { mac: Hex([0; 32]) }),
            Message::AuthOk(AuthOk { mac: Hex([1; 32]) }),
        ];
        for m in msgs {
            assert_eq!(Message::parse_bytes(&m.to_bytes(), 4096).unwrap(), m);
        }
    }

    #[test]
    fn auth_messages_carry_hex_and_refuse_anything_else() {
        let b = Message::AuthProof(AuthProof {
            mac: Hex([0xab; 32]),
        })
        .to_bytes();
        assert!(String::from_utf8_lossy(&b[12..]).contains(&"ab".repeat(32)));
        for body in [
            r#"{"mac":"ab"}"#.to_string(),
            format!(r#"{{"mac":"{}"}}"#, "zz".repeat(32)),
            r#"{"mac":7}"#.to_string(),
        ] {
            let mut b = emit_header(MessageType::AuthProof as u8, body.len() as u32).to_vec();
            b.extend_from_slice(body.as_bytes());
            assert!(matches!(
                Message::parse_bytes(&b, 1000),
                Err(ProtoError::BadBody { msg_type: 14, .. })
            ));
        }
    }
}
