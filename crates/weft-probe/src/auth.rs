//! Agents that only serve clients holding their key (`weft serve --key-file F`).
//!
//! A client with a key opens its control connection with `AuthHello` (its random nonce) instead
//! of `Request`; the agent answers `AuthChallenge` (its own nonce, and its MAC over both nonces as
//! [`Role::Server`]); the client checks that MAC, then sends `AuthProof` (its MAC as
//! [`Role::Client`]) and its `Request` or `Relay` at once, so a keyed test costs one round trip
//! more than a keyless one. The MACs are those of [`weft_gate::auth`] (the same scheme as
//! `weft send`/`weft recv`) under a key derived for this protocol ([`PROTOCOL`]): a MAC made for
//! a transfer is worthless here. The key never crosses the wire, and each side proves it only
//! against the other's fresh nonce, so nothing seen on the wire can be replayed.
//!
//! ```text
//! client                                        agent (with a key)
//!   | -- AuthHello { nonce_c } -------------------> |
//!   | <----------- AuthChallenge { nonce_s, mac_s } |   mac_s = MAC(server, nonce_c, nonce_s)
//!   | -- AuthProof { mac_c } ---------------------> |   mac_c = MAC(client, nonce_c, nonce_s)
//!   | -- Request | Relay -------------------------> |
//! ```
//!
//! An agent with a key answers a `Request` that came without a proof, and an agent without a
//! key answers an `AuthHello`, with an `Error` of code `auth` that says what to do. Data
//! connections present the test's random cookie, which only an authenticated client learns.
//! Later control messages are not tagged: the proof keeps strangers from starting tests, not an
//! attacker on the path from taking over a connection (as with iperf3's authentication).

use crate::control::Control;
use crate::error::ProbeError;
use crate::proto::{AuthChallenge, AuthHello, AuthProof, Hex, Message};

pub use weft_gate::auth::{Key, Role};

/// The context this protocol derives its key from the user's key with.
pub const PROTOCOL: &str = "weft-probe v1 control channel";

/// The handshake's "session number" in the MAC: the probe has none at this point, and both
/// fresh nonces already make each handshake's MACs unique.
const SESSION: u64 = 0;

fn random_nonce() -> Result<[u8; 16], ProbeError> {
    weft_gate::auth::nonce().map_err(|e| ProbeError::io("reading random bytes", e))
}

/// The client's side: proves `key` to the agent on `control` and checks that the agent holds it
/// too. Call right after connecting, before sending the request.
pub fn client_hello(control: &mut Control, key: &Key) -> Result<(), ProbeError> {
    let key = key.for_protocol(PROTOCOL);
    let cn = random_nonce()?;
    control.send(&Message::AuthHello(AuthHello { nonce: Hex(cn) }))?;
    let reply = match control.recv() {
        Err(ProbeError::Remote { code, message })
            if code == "bad-message" && message.contains("unknown message type") =>
        {
            return Err(ProbeError::Auth(format!(
                "the agent does not know keys (it runs an older weft: {message}); update it, or \
                 run the client without --key-file"
            )));
        }
        r => r?,
    };
    let (sn, mac) = match reply {
        Message::AuthChallenge(c) => (c.nonce.0, c.mac.0),
        other => {
            return Err(ProbeError::Protocol(format!(
                "expected AuthChallenge, got {:?}",
                other.msg_type()
            )));
        }
    };
    if !key.verify(Role::Server, &cn, &sn, SESSION, &mac) {
        return Err(ProbeError::Auth(
            "the agent could not prove the key (is its --key-file the same as this one?)".into(),
        ));
    }
    control.send(&Message::AuthProof(AuthProof {
        mac: Hex(key.mac(Role::Client, &cn, &sn, SESSION)),
    }))
}

/// The agent's side after a client's `AuthHello`: challenges it and reads its proof. On
/// success the client's request is the next message. `key` is the agent's (user) key.
pub fn agent_hello(control: &mut Control, key: &Key, hello: &AuthHello) -> Result<(), ProbeError> {
    let key = key.for_protocol(PROTOCOL);
    let cn = hello.nonce.0;
    let sn = random_nonce()?;
    control.send(&Message::AuthChallenge(AuthChallenge {
        nonce: Hex(sn),
        mac: Hex(key.mac(Role::Server, &cn, &sn, SESSION)),
    }))?;
    match control.recv()? {
        Message::AuthProof(p) if key.verify(Role::Client, &cn, &sn, SESSION, &p.mac.0) => Ok(()),
        Message::AuthProof(_) => Err(ProbeError::Auth(
            "the client did not prove this agent's key (is its --key-file the same as the \
             agent's?)"
                .into(),
        )),
        other => Err(ProbeError::Protocol(format!(
            "expected AuthProof, got {:?}",
            other.msg_type()
        ))),
    }
}

/// The agent's refusal of a request that came without a proof of its key.
pub fn key_required() -> ProbeError {
    ProbeError::Auth(
        "this agent requires a key: run the client with --key-file FILE holding the agent's key"
            .into(),
    )
}

/// The refusal of a keyless agent to a client that wants to prove a key.
pub fn no_key_here() -> ProbeError {
    ProbeError::Auth(
        "this agent has no key (it runs without --key-file), so it cannot prove one; run the \
         client without --key-file, or give the agent the key"
            .into(),
    )
}
