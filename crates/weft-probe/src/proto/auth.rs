//! The messages of the authenticated hello (see [`crate::auth`] for the exchange): nonces and
//! MACs travel as hex strings in the JSON bodies.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use weft_gate::auth::{from_hex, to_hex};

/// `N` bytes carried as `2N` lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hex<const N: usize>(pub [u8; N]);

impl<const N: usize> Serialize for Hex<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&to_hex(&self.0))
    }
}

impl<'de, const N: usize> Deserialize<'de> for Hex<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        from_hex::<N>(&s)
            .map(Hex)
            .ok_or_else(|| serde::de::Error::custom(format!("expected {} hex digits", 2 * N)))
    }
}

/// Client: "I hold a key; here is my challenge" (instead of a `Request` as first message).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthHello {
    /// The client's random nonce.
    pub nonce: Hex<16>,
}

/// Agent: its own challenge (protocol 2: no proof yet; the client proves first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthChallenge {
    /// The agent's random nonce.
    pub nonce: Hex<16>,
}

/// Agent: its proof of the key over both nonces, sent only once the client's proof held.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthOk {
    /// The agent's MAC ([`weft_gate::Role::Server`]) over both nonces.
    pub mac: Hex<32>,
}

/// Client: its proof of the key over both nonces; the request follows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthProof {
    /// The client's MAC ([`weft_gate::Role::Client`]) over both nonces.
    pub mac: Hex<32>,
}
