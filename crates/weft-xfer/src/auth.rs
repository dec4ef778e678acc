//! Control-channel authentication with a pre-shared key: a keyed BLAKE3 MAC (BLAKE3's keyed mode
//! is a PRF, used here where HMAC would be used with SHA-2) over both sides' random nonces, the
//! session id and the role, so that a MAC can be neither replayed into another session nor
//! reflected back to the side that made it.

/// A 32-byte key derived from the user's secret.
#[derive(Clone)]
pub struct Key([u8; 32]);

/// Who computes a MAC: the sender proves the key with `Auth`, the receiver with `Welcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The side that sends files.
    Sender,
    /// The side that receives files.
    Receiver,
}

impl Key {
    /// Derives the MAC key from a secret of any length (a passphrase or the bytes of a key file).
    pub fn from_secret(secret: &[u8]) -> Self {
        Key(blake3::derive_key(
            "weft-xfer v1 control channel key",
            secret,
        ))
    }

    /// The MAC that `role` sends for this handshake.
    pub fn mac(
        &self,
        role: Role,
        client_nonce: &[u8; 16],
        server_nonce: &[u8; 16],
        session: u64,
    ) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        h.update(match role {
            Role::Sender => b"sender  ",
            Role::Receiver => b"receiver",
        });
        h.update(client_nonce);
        h.update(server_nonce);
        h.update(&session.to_be_bytes());
        *h.finalize().as_bytes()
    }

    /// Checks a MAC received from `role`, in constant time.
    pub fn verify(
        &self,
        role: Role,
        client_nonce: &[u8; 16],
        server_nonce: &[u8; 16],
        session: u64,
        got: &[u8; 32],
    ) -> bool {
        blake3::Hash::from(self.mac(role, client_nonce, server_nonce, session))
            == blake3::Hash::from(*got)
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_binds_key_role_nonces_and_session() {
        let k = Key::from_secret(b"secret");
        let m = k.mac(Role::Sender, &[1; 16], &[2; 16], 42);
        assert!(k.verify(Role::Sender, &[1; 16], &[2; 16], 42, &m));
        assert!(!k.verify(Role::Receiver, &[1; 16], &[2; 16], 42, &m));
        assert!(!k.verify(Role::Sender, &[1; 16], &[3; 16], 42, &m));
        assert!(!k.verify(Role::Sender, &[1; 16], &[2; 16], 43, &m));
        assert!(!Key::from_secret(b"other").verify(Role::Sender, &[1; 16], &[2; 16], 42, &m));
    }
}
