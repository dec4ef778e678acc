//! Agents that only serve clients holding their key (`weft serve --key-file F`).
//!
//! A client with a key opens its control connection with `AuthHello` (its random nonce) instead
//! of `Request`; the agent answers `AuthChallenge` (its own nonce, nothing more); the client
//! sends `AuthProof` (its MAC over both nonces as [`Role::Client`]) and its `Request` or
//! `Relay` at once; the agent checks the proof and only then sends `AuthOk` (its own MAC as
//! [`Role::Server`]), which the client checks before it reads anything else. So a keyed test
//! costs one round trip more than a keyless one, and **the client proves first** (protocol 2):
//! a stranger who connects to an agent learns nothing it could test guesses of the key against
//! (in protocol 1 the agent sent its MAC first, and every connection handed out one). The MACs
//! are those of [`weft_gate::auth`] (keys stretched with Argon2id, at least 16 bytes) under a
//! key derived for this protocol ([`PROTOCOL`]): a MAC made for a transfer is worthless here.
//!
//! From the proof on, every control message carries a tag under a key of this connection (see
//! [`crate::control::Control`]): a message changed, dropped, replayed or inserted by anyone on
//! the path ends the connection, and an agent that does not hold the key cannot make use of a
//! client's proof (it could relay the handshake, but not speak on the connection after it).
//!
//! ```text
//! client                                        agent (with a key)
//!   | -- AuthHello { nonce_c } -------------------> |
//!   | <------------------ AuthChallenge { nonce_s } |
//!   | -- AuthProof { mac_c } ---------------------> |   mac_c = MAC(client, nonce_c, nonce_s)
//!   | -- Request | Relay  (tagged) ---------------> |
//!   | <---------------------- AuthOk { mac_s } ---- |   mac_s = MAC(server, nonce_c, nonce_s)
//!   | <------------> everything else tagged <-----> |
//! ```
//!
//! An agent with a key answers a `Request` that came without a proof, and an agent without a
//! key answers an `AuthHello`, with an `Error` of code `auth` that says what to do. Data
//! connections present the test's random cookie, which only an authenticated client learns.

use crate::control::Control;
use crate::error::ProbeError;
use crate::proto::{AuthChallenge, AuthHello, AuthOk, AuthProof, Hex, Message};

pub use weft_gate::auth::{Key, Role};

/// The context this protocol derives its key from the user's key with.
pub const PROTOCOL: &str = "weft-probe v2 control channel";

/// The handshake's "session number" in the MAC: the probe has none at this point, and both
/// fresh nonces already make each handshake's MACs unique.
const SESSION: u64 = 0;

fn random_nonce() -> Result<[u8; 16], ProbeError> {
    weft_gate::auth::nonce().map_err(|e| ProbeError::io("reading random bytes", e))
}

/// The client's side: proves `key` to the agent on `control`. Call right after connecting;
/// send the request next. The agent's proof (`AuthOk`) is checked by the first
/// [`Control::recv`] after this, before anything the agent says is believed; from here on the
/// client's messages are tagged.
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
    let sn = match reply {
        Message::AuthChallenge(c) => c.nonce.0,
        other => {
            return Err(match control.stream().peer_addr() {
                Ok(agent) => crate::control::unexpected_answer(agent, "AuthChallenge", &other),
                Err(_) => ProbeError::Protocol(format!(
                    "expected AuthChallenge, got {:?}",
                    other.msg_type()
                )),
            });
        }
    };
    control.send(&Message::AuthProof(AuthProof {
        mac: Hex(key.mac(Role::Client, &cn, &sn, SESSION)),
    }))?;
    control.authenticate_as_client(&key, cn, sn);
    Ok(())
}

/// The agent's side after a client's `AuthHello`: challenges it, reads and checks its proof, and
/// only then proves the key itself. On success the client's request is the next message, and
/// every message from here on is tagged. `key` is the agent's (user) key.
pub fn agent_hello(control: &mut Control, key: &Key, hello: &AuthHello) -> Result<(), ProbeError> {
    let key = key.for_protocol(PROTOCOL);
    let cn = hello.nonce.0;
    let sn = random_nonce()?;
    control.send(&Message::AuthChallenge(AuthChallenge { nonce: Hex(sn) }))?;
    match control.recv()? {
        Message::AuthProof(p) if key.verify(Role::Client, &cn, &sn, SESSION, &p.mac.0) => {}
        Message::AuthProof(_) => {
            return Err(ProbeError::Auth(
                "the client did not prove this agent's key (is its --key-file the same as the \
                 agent's?)"
                    .into(),
            ));
        }
        other => {
            return Err(ProbeError::Protocol(format!(
                "expected AuthProof, got {:?}",
                other.msg_type()
            )));
        }
    }
    control.send(&Message::AuthOk(AuthOk {
        mac: Hex(key.mac(Role::Server, &cn, &sn, SESSION)),
    }))?;
    control.authenticate_as_agent(&key, cn, sn);
    Ok(())
}

/// The client's check of the agent's `AuthOk`.
pub(crate) fn check_agent_proof(
    key: &Key,
    cn: &[u8; 16],
    sn: &[u8; 16],
    msg: Message,
) -> Result<(), ProbeError> {
    match msg {
        Message::AuthOk(ok) if key.verify(Role::Server, cn, sn, SESSION, &ok.mac.0) => Ok(()),
        Message::AuthOk(_) => Err(ProbeError::Auth(
            "the agent could not prove the key (is its --key-file the same as this one?)".into(),
        )),
        Message::Error(e) if e.code == "auth" => Err(ProbeError::Auth(e.message)),
        Message::Error(e) => Err(ProbeError::Remote {
            code: e.code,
            message: e.message,
        }),
        other => Err(ProbeError::Protocol(format!(
            "expected AuthOk, got {:?}",
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
