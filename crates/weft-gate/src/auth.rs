//! Authentication with a pre-shared key of at least [`MIN_KEY_LEN`] bytes, stretched with
//! Argon2id ([`Key::from_secret`]): a keyed BLAKE3 MAC (BLAKE3's keyed mode is a PRF, used
//! here where HMAC would be used with SHA-2) over both sides' random nonces, a session number and
//! the role, so that a MAC can be neither replayed into another handshake nor reflected back to
//! the side that made it. The key itself never crosses the wire.
//!
//! Each protocol that uses a key derives its own from it ([`Key::for_protocol`]): a MAC made in
//! one protocol's handshake is then worthless in another's, even when the same key file
//! configures both (`weft recv` and `weft serve` on one host).
//!
//! After a handshake, [`FrameAuth`] tags every control frame of a channel: a keyed BLAKE3, under
//! a key derived for this session from the pre-shared key and both nonces, over the direction,
//! the frame's sequence number in that direction (counted by both ends, not sent: TCP delivers
//! in order, so a replayed, dropped, reordered or reflected frame fails the check) and the
//! frame's type and body.

use std::io;

/// A random challenge, 16 bytes.
pub type Nonce = [u8; 16];

/// A 32-byte key derived from the user's secret.
#[derive(Clone)]
pub struct Key([u8; 32]);

/// Which side computes a MAC. The client (the side that connects: `weft send`, `weft tput`)
/// and the server (the agent: `weft recv`, `weft serve`) MAC different labels, so a MAC is
/// never valid when reflected to the side that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The side that connects.
    Client,
    /// The side that listens.
    Server,
}

impl Role {
    /// The label hashed into MACs. (`weft send` and `weft recv` were the first protocol to use
    /// these, as "sender" and "receiver"; the labels stay so that their peers keep agreeing.)
    fn label(self) -> &'static [u8; 8] {
        match self {
            Role::Client => b"sender  ",
            Role::Server => b"receiver",
        }
    }

    /// The other side.
    pub fn peer(self) -> Role {
        match self {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        }
    }
}

/// The shortest secret accepted, bytes: 128 bits, so that a random key is out of reach of
/// guessing whatever the stretching costs (a one-byte key was accepted before, and fell to 256
/// guesses).
pub const MIN_KEY_LEN: usize = 16;

/// Argon2id's memory per key derivation, KiB, and its passes: the first of OWASP's recommended
/// settings (19 MiB, 2 passes, 1 lane), some tens of milliseconds once per process.
const ARGON2_KIB: u32 = 19 * 1024;
const ARGON2_PASSES: u32 = 2;

/// The salt of the stretching: fixed, since both ends must derive the same key before either
/// has said anything. It keeps weft's derivations apart from any other use of Argon2id.
const SALT: &[u8] = b"weft pre-shared key, version 2";

/// Why a secret cannot be a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Fewer than [`MIN_KEY_LEN`] bytes.
    #[error(
        "the key is {0} bytes; at least {MIN_KEY_LEN} are needed (make one with `head -c 32 \
         /dev/urandom > KEY`)"
    )]
    TooShort(usize),
    /// The key derivation failed (it needs 19 MiB of memory).
    #[error("deriving the key failed: {0}")]
    Derive(String),
}

impl Key {
    /// Derives the MAC key from a secret (a passphrase or the bytes of a key file) of at least
    /// [`MIN_KEY_LEN`] bytes, stretched with Argon2id (crate `argon2`, RustCrypto): each guess
    /// of an attacker who recorded a handshake then costs 19 MiB and two passes over it, not
    /// one hash. Argon2id is the password hash of RFC 9106 and OWASP's first choice; a KDF
    /// without a work factor (HKDF, BLAKE3's derive_key) makes guessing cheap, and scrypt or
    /// PBKDF2 are older and weaker per unit of work. Called once per process and key.
    pub fn from_secret(secret: &[u8]) -> Result<Self, KeyError> {
        if secret.len() < MIN_KEY_LEN {
            return Err(KeyError::TooShort(secret.len()));
        }
        let params = argon2::Params::new(ARGON2_KIB, ARGON2_PASSES, 1, Some(32))
            .map_err(|e| KeyError::Derive(e.to_string()))?;
        let a = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut out = [0u8; 32];
        a.hash_password_into(secret, SALT, &mut out)
            .map_err(|e| KeyError::Derive(e.to_string()))?;
        Ok(Key(blake3::derive_key("weft v2 pre-shared key", &out)))
    }

    /// A key from 32 bytes already derived (tests and fuzz targets, which cannot pay the
    /// stretching for every key they make). Never from a user's secret.
    pub fn from_derived(bytes: [u8; 32]) -> Self {
        Key(bytes)
    }

    /// The key of another protocol, derived from this one with `context` (for example
    /// `"weft-probe v1 control channel"`), so that MACs of one protocol are never valid in
    /// another.
    pub fn for_protocol(&self, context: &str) -> Key {
        Key(blake3::derive_key(context, &self.0))
    }

    /// The MAC that `role` sends for this handshake.
    pub fn mac(
        &self,
        role: Role,
        client_nonce: &Nonce,
        server_nonce: &Nonce,
        session: u64,
    ) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        h.update(role.label());
        h.update(client_nonce);
        h.update(server_nonce);
        h.update(&session.to_be_bytes());
        *h.finalize().as_bytes()
    }

    /// Checks a MAC received from `role`, in constant time.
    pub fn verify(
        &self,
        role: Role,
        client_nonce: &Nonce,
        server_nonce: &Nonce,
        session: u64,
        got: &[u8; 32],
    ) -> bool {
        blake3::Hash::from(self.mac(role, client_nonce, server_nonce, session))
            == blake3::Hash::from(*got)
    }

    /// The frame MAC state for `me` in the session the handshake (both nonces, session id) set up.
    pub fn frames(
        &self,
        me: Role,
        client_nonce: &Nonce,
        server_nonce: &Nonce,
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

/// Fills `out` with random bytes from the kernel (getrandom(2), through the `getrandom` crate).
pub fn random_bytes(out: &mut [u8]) -> io::Result<()> {
    getrandom::fill(out).map_err(io::Error::from)
}

/// A fresh random nonce.
pub fn nonce() -> io::Result<Nonce> {
    let mut n = [0u8; 16];
    random_bytes(&mut n)?;
    Ok(n)
}

/// Bytes of the big-endian length prefix that starts every frame [`FrameAuth`] seals.
pub const LEN_PREFIX: usize = 4;

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

/// The MAC state of one end of an authenticated control channel whose frames are a 4-byte
/// big-endian length (of what follows) and the frame's bytes.
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
        h.update(from.label());
        h.update(&seq.to_be_bytes());
        h.update(body);
        let mut t = [0u8; TAG_LEN];
        t.copy_from_slice(&h.finalize().as_bytes()[..TAG_LEN]);
        t
    }

    /// The tag of the next message this end sends (`msg` as it travels, its own framing
    /// included); counts it.
    pub fn sign(&mut self, msg: &[u8]) -> [u8; TAG_LEN] {
        let t = self.tag(self.me, self.sent, msg);
        self.sent += 1;
        t
    }

    /// Checks `tag` against the next message from the peer; counts it if it holds. Each message
    /// is accepted once, in order.
    pub fn check(&mut self, msg: &[u8], tag: &[u8]) -> Result<(), FrameAuthError> {
        let want = self.tag(self.me.peer(), self.received, msg);
        if tag.len() != TAG_LEN {
            return Err(FrameAuthError::Short);
        }
        // Constant-time comparison of 16 bytes.
        let diff = want.iter().zip(tag).fold(0u8, |d, (a, b)| d | (a ^ b));
        if diff != 0 {
            return Err(FrameAuthError::BadTag);
        }
        self.received += 1;
        Ok(())
    }

    /// Appends the tag to the frame that starts at `out[start]` (length prefix, then the frame)
    /// and adds it to the length prefix.
    pub fn seal(&mut self, out: &mut Vec<u8>, start: usize) {
        let Some(body) = out.get(start + LEN_PREFIX..) else {
            return;
        };
        let t = self.sign(body);
        out.extend_from_slice(&t);
        let len = (out.len() - start - LEN_PREFIX) as u32;
        if let Some(p) = out.get_mut(start..start + LEN_PREFIX) {
            p.copy_from_slice(&len.to_be_bytes());
        }
    }

    /// Checks the tag at the end of a received frame's `body` (the bytes after the length
    /// prefix) and returns the body without it. Each frame is accepted once, in order.
    pub fn open<'a>(&mut self, body: &'a [u8]) -> Result<&'a [u8], FrameAuthError> {
        let n = body
            .len()
            .checked_sub(TAG_LEN)
            .ok_or(FrameAuthError::Short)?;
        let (msg, tag) = body.split_at(n);
        self.check(msg, tag)?;
        Ok(msg)
    }
}

/// Lowercase hex of `bytes` (nonces and MACs in JSON messages).
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// The `N` bytes written as `2N` hex digits, or `None`.
pub fn from_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let b = s.as_bytes();
    if b.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
        *o = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> Key {
        Key::from_derived([n; 32])
    }

    #[test]
    fn mac_binds_key_role_nonces_and_session() {
        let k = key(1);
        let m = k.mac(Role::Client, &[1; 16], &[2; 16], 42);
        assert!(k.verify(Role::Client, &[1; 16], &[2; 16], 42, &m));
        assert!(!k.verify(Role::Server, &[1; 16], &[2; 16], 42, &m));
        assert!(!k.verify(Role::Client, &[1; 16], &[3; 16], 42, &m));
        assert!(!k.verify(Role::Client, &[1; 16], &[2; 16], 43, &m));
        assert!(!key(2).verify(Role::Client, &[1; 16], &[2; 16], 42, &m));
        // Another protocol's key does not accept it.
        let p = k.for_protocol("weft-probe v1 control channel");
        assert!(!p.verify(Role::Client, &[1; 16], &[2; 16], 42, &m));
        assert!(p.verify(
            Role::Client,
            &[1; 16],
            &[2; 16],
            42,
            &p.mac(Role::Client, &[1; 16], &[2; 16], 42)
        ));
    }

    #[test]
    fn keys_are_stretched_and_short_ones_refused() {
        assert_eq!(
            Key::from_secret(b"fifteen bytes!!").unwrap_err(),
            KeyError::TooShort(15)
        );
        let k = Key::from_secret(b"sixteen bytes!!!").unwrap();
        // Argon2id of the secret, not one fast hash of it.
        assert_ne!(
            k.0,
            blake3::derive_key("weft-xfer v1 control channel key", b"sixteen bytes!!!")
        );
        assert_eq!(k.0, Key::from_secret(b"sixteen bytes!!!").unwrap().0);
        let t = std::time::Instant::now();
        let _ = Key::from_secret(b"another sixteen!").unwrap();
        // Some work per guess: tens of ms here (a fast hash takes under a microsecond).
        assert!(
            t.elapsed() > std::time::Duration::from_millis(2),
            "{:?}",
            t.elapsed()
        );
    }

    fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut v = ((body.len() + 1) as u32).to_be_bytes().to_vec();
        v.push(kind);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn frames_are_accepted_once_in_order_and_only_untampered() {
        let k = key(1);
        let mut tx = k.frames(Role::Client, &[1; 16], &[2; 16], 7);
        let mut rx = k.frames(Role::Server, &[1; 16], &[2; 16], 7);
        let msgs = [
            frame(14, &[0, 0, 0, 1]),
            frame(15, &[1; 12]),
            frame(20, &[]),
        ];
        let mut sealed = Vec::new();
        for m in &msgs {
            let mut f = m.clone();
            tx.seal(&mut f, 0);
            let len = u32::from_be_bytes([f[0], f[1], f[2], f[3]]) as usize;
            assert_eq!(len + LEN_PREFIX, f.len());
            sealed.push(f);
        }
        for i in LEN_PREFIX..sealed[0].len() {
            let mut t = sealed[0].clone();
            t[i] ^= 1;
            assert_eq!(
                rx.clone().open(&t[LEN_PREFIX..]),
                Err(FrameAuthError::BadTag)
            );
        }
        assert!(rx.clone().open(&sealed[1][LEN_PREFIX..]).is_err());
        for (f, m) in sealed.iter().zip(&msgs) {
            assert_eq!(rx.open(&f[LEN_PREFIX..]).unwrap(), &m[LEN_PREFIX..]);
        }
        assert_eq!(
            rx.open(&sealed[0][LEN_PREFIX..]),
            Err(FrameAuthError::BadTag)
        );
        assert_eq!(rx.open(&[1, 2]), Err(FrameAuthError::Short));
        // Reflected back to its maker.
        let mut f = msgs[0].clone();
        k.frames(Role::Client, &[1; 16], &[2; 16], 7)
            .seal(&mut f, 0);
        assert!(
            k.frames(Role::Client, &[1; 16], &[2; 16], 7)
                .open(&f[LEN_PREFIX..])
                .is_err()
        );
    }

    #[test]
    fn hex_round_trips_and_refuses_bad_digits() {
        let n: Nonce = [0, 1, 0xab, 0xff, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0x10, 0x7f];
        let s = to_hex(&n);
        assert_eq!(s.len(), 32);
        assert_eq!(from_hex::<16>(&s), Some(n));
        assert_eq!(from_hex::<16>(&s[1..]), None);
        assert_eq!(from_hex::<2>("zz00"), None);
        assert_eq!(from_hex::<2>("é0"), None);
        assert!(nonce().unwrap() != nonce().unwrap());
    }
}
