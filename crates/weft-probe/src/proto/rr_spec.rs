//! The body of a request/response test request, and the rr-specific messages.
//!
//! One test measures one request size. The exchange on the control connection:
//!
//! ```text
//! client                                        agent
//!   | -- Request(Rr(RrSpec)) ----------------------> |  checked against the agent's limits
//!   | <----------------------- Accept | Error ------ |  udp_ports = [port] for UDP
//!   | <------------- Ext {"rr_port": port} --------- |  the data endpoint (TCP listener or UDP)
//!   |   transactions on the data endpoint: request of `request_size` bytes, answer of
//!   |   `response_size` bytes whose first min(8, both sizes) bytes repeat the request's
//!   | -- SenderDone {packets: [requests sent]} ----> |  the client has finished and closed
//!   | <--------------------------- Finished -------- |  rx: requests seen, tx: answers sent
//!   | -- Bye --------------------------------------> |
//! ```
//!
//! The data endpoint answers only the control connection's peer address; TCP data needs no
//! hello, so a cold transaction costs exactly one connection set-up, as with netperf TCP_CRR.

use serde::{Deserialize, Serialize};

use super::spec::Transport;

/// Parameters of a request/response (`weft rr`) test, as the client sends them to the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RrSpec {
    /// TCP or UDP.
    #[serde(default)]
    pub transport: Transport,
    /// A connection (TCP) or socket (UDP) per transaction: the agent accepts a connection per
    /// transaction instead of one for the whole test.
    #[serde(default)]
    pub cold: bool,
    /// Request size in bytes.
    #[serde(default)]
    pub request_size: u32,
    /// Response size in bytes (equal to `request_size` for an echo).
    #[serde(default)]
    pub response_size: u32,
    /// Keys this version does not know, kept so that newer clients' requests still parse.
    #[serde(flatten)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// Name of the `Ext` message key that announces the data port.
pub const RR_PORT_KEY: &str = "rr_port";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Message, TestSpec};

    #[test]
    fn request_round_trips_with_its_fields() {
        let spec = RrSpec {
            transport: Transport::Udp,
            cold: true,
            request_size: 64,
            response_size: 1024,
            params: Default::default(),
        };
        let m = Message::Request(TestSpec::Rr(spec.clone()));
        let text = String::from_utf8(m.body_json()).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"rr","transport":"udp","cold":true,"request_size":64,"response_size":1024}"#
        );
        assert_eq!(Message::parse_bytes(&m.to_bytes(), 4096).unwrap(), m);
    }

    #[test]
    fn unknown_keys_are_kept_and_bad_types_refused() {
        let r: TestSpec =
            serde_json::from_str(r#"{"kind":"rr","request_size":8,"future":1}"#).unwrap();
        let TestSpec::Rr(r) = r else { panic!("not rr") };
        assert_eq!(r.request_size, 8);
        assert_eq!(r.params["future"], 1);
        assert!(serde_json::from_str::<TestSpec>(r#"{"kind":"rr","request_size":-1}"#).is_err());
        assert!(serde_json::from_str::<TestSpec>(r#"{"kind":"rr","cold":"yes"}"#).is_err());
    }
}
