//! Control-channel authentication with a pre-shared key: a keyed BLAKE3 MAC (BLAKE3's keyed mode
//! is a PRF, used here where HMAC would be used with SHA-2) over both sides' random nonces, the
//! session id and the role, so that a MAC can be neither replayed into another session nor
//! reflected back to the side that made it.
//!
//! After the handshake every control frame carries a tag ([`FrameAuth`]): a keyed BLAKE3, under
//! a key derived for this session from the pre-shared key and both nonces, over the direction,
//! the frame's sequence number in that direction (counted by both ends, not sent: TCP delivers
//! in order, so a replayed, dropped, reordered or reflected frame fails the check) and the
//! frame's type and body.

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

/// Bytes of tag appended to each control frame after an authenticated handshake.
pub const TAG_LEN: usize = 16;

/// Why a control frame was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameAuthError {
    /// Shorter than a tag.
    #[error("control frame too short to carry its tag")]
    Short,
    /// The tag does not match: tampered, replayed, reordered or reflected.
    #[error("control frame failed authentication (tampered, replayed or out of order)")]
    BadTag,
}

/// The MAC state of one end of an authenticated control channel.
#[derive(Clone)]
pub struct FrameAuth {
    key: [u8; 32],
    me: Role,
    sent: u64,
    received: u64,
}

impl std::fmt::Debug for FrameAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameAuth")
            .field("me", &self.me)
            .field("sent", &self.sent)
            .field("received", &self.received)
            .finish_non_exhaustive()
    }
}

impl FrameAuth {
    fn tag(&self, from: Role, seq: u64, body: &[u8]) -> [u8; TAG_LEN] {
        let mut h = blake3::Hasher::new_keyed(&self.key);
        h.update(match from {
            Role::Sender => b"sender  ",
            Role::Receiver => b"receiver",
        });
        h.update(&seq.to_be_bytes());
        h.update(body);
        let mut t = [0u8; TAG_LEN];
        t.copy_from_slice(&h.finalize().as_bytes()[..TAG_LEN]);
        t
    }

    /// Appends the tag to the frame that starts at `out[start]` (length prefix, type, body) and
    /// adds it to the length prefix.
    pub fn seal(&mut self, out: &mut Vec<u8>, start: usize) {
        let hdr = crate::wire::FRAME_HEADER_LEN;
        let Some(body) = out.get(start + hdr..) else {
            return;
        };
        let t = self.tag(self.me, self.sent, body);
        self.sent += 1;
        out.extend_from_slice(&t);
        let len = (out.len() - start - hdr) as u32;
        if let Some(p) = out.get_mut(start..start + hdr) {
            p.copy_from_slice(&len.to_be_bytes());
        }
    }

    /// Checks the tag at the end of a received frame's `body` (type, body, tag) and returns the
    /// body without it. Each frame is accepted once, in order.
    pub fn open<'a>(&mut self, body: &'a [u8]) -> Result<&'a [u8], FrameAuthError> {
        let n = body
            .len()
            .checked_sub(TAG_LEN)
            .ok_or(FrameAuthError::Short)?;
        let (msg, tag) = body.split_at(n);
        let peer = match self.me {
            Role::Sender => Role::Receiver,
            Role::Receiver => Role::Sender,
        };
        let want = self.tag(peer, self.received, msg);
        // Constant-time comparison of 16 bytes.
        let diff = want.iter().zip(tag).fold(0u8, |d, (a, b)| d | (a ^ b));
        if diff != 0 {
            return Err(FrameAuthError::BadTag);
        }
        self.received += 1;
        Ok(msg)
    }
}

impl Key {
    /// The frame MAC state for `me` in the session the handshake (both nonces, session id) set up.
    pub fn frames(
        &self,
        me: Role,
        client_nonce: &[u8; 16],
        server_nonce: &[u8; 16],
        session: u64,
    ) -> FrameAuth {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        h.update(b"weft-xfer v2 control frames");
        h.update(client_nonce);
        h.update(server_nonce);
        h.update(&session.to_be_bytes());
        FrameAuth {
            key: *h.finalize().as_bytes(),
            me,
            sent: 0,
            received: 0,
        }
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

    fn frame(m: &crate::wire::Control) -> Vec<u8> {
        let mut v = Vec::new();
        m.emit(&mut v);
        v
    }

    #[test]
    fn frames_are_accepted_once_in_order_and_only_untampered() {
        use crate::wire::{Control, FRAME_HEADER_LEN, control::frame_len};
        let k = Key::from_secret(b"secret");
        let mut tx = k.frames(Role::Sender, &[1; 16], &[2; 16], 7);
        let mut rx = k.frames(Role::Receiver, &[1; 16], &[2; 16], 7);
        let msgs = [
            Control::Ready { buf: 1 },
            Control::End {
                buf: 1,
                round: 0,
                sent: 9,
            },
            Control::Bye,
        ];
        let mut sealed = Vec::new();
        for m in &msgs {
            let mut f = frame(m);
            tx.seal(&mut f, 0);
            assert_eq!(frame_len(&f).unwrap(), Some(f.len()));
            sealed.push(f);
        }
        // Tampered: any flipped bit of the type, body or tag.
        for i in FRAME_HEADER_LEN..sealed[0].len() {
            let mut t = sealed[0].clone();
            t[i] ^= 1;
            assert_eq!(
                rx.clone().open(&t[FRAME_HEADER_LEN..]),
                Err(FrameAuthError::BadTag)
            );
        }
        // Out of order.
        assert!(rx.clone().open(&sealed[1][FRAME_HEADER_LEN..]).is_err());
        let b = rx.open(&sealed[0][FRAME_HEADER_LEN..]).unwrap();
        assert_eq!(Control::parse(b).unwrap(), msgs[0]);
        // Replayed.
        assert_eq!(
            rx.open(&sealed[0][FRAME_HEADER_LEN..]),
            Err(FrameAuthError::BadTag)
        );
        for (f, m) in sealed[1..].iter().zip(&msgs[1..]) {
            assert_eq!(
                Control::parse(rx.open(&f[FRAME_HEADER_LEN..]).unwrap()).unwrap(),
                *m
            );
        }
        // Reflected back to its maker, from another session, or under another key.
        let mut f = frame(&msgs[0]);
        let mut tx2 = k.frames(Role::Sender, &[1; 16], &[2; 16], 7);
        tx2.seal(&mut f, 0);
        assert!(
            k.frames(Role::Sender, &[1; 16], &[2; 16], 7)
                .open(&f[FRAME_HEADER_LEN..])
                .is_err()
        );
        assert!(
            k.frames(Role::Receiver, &[1; 16], &[2; 16], 8)
                .open(&f[FRAME_HEADER_LEN..])
                .is_err()
        );
        assert!(
            Key::from_secret(b"other")
                .frames(Role::Receiver, &[1; 16], &[2; 16], 7)
                .open(&f[FRAME_HEADER_LEN..])
                .is_err()
        );
        assert_eq!(rx.open(&[1, 2]), Err(FrameAuthError::Short));
    }
}
