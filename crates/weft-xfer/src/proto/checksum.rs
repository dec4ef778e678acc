//! The per-buffer checksum of reliable mode, chosen by the sender (`weft send --checksum`) and
//! named in its `ClientHello`: BLAKE3 (the default; keyed with a per-session key when the ends
//! share a pre-shared key, so that a forged or tampered datagram cannot pass), or XXH3-128 (about
//! five times faster, against corruption only: anyone can compute it).
//!
//! Either way a buffer's checksum is 32 bytes on the wire (XXH3's 16, zero-padded), and the
//! whole-file digest is BLAKE3 over the buffers' checksums ([`super::file_digest`]).

/// Which checksum protects each buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checksum {
    /// BLAKE3 (keyed when the session has a pre-shared key).
    #[default]
    Blake3,
    /// XXH3-128 (crate `twox-hash`, which picks AVX2 at run time; `xxhash-rust` takes SIMD only
    /// from compile-time target features, SSE2 in a portable build): detects corruption, not
    /// tampering.
    Xxh3,
}

impl Checksum {
    /// Every checksum this build knows, in wire order.
    pub const ALL: [Checksum; 2] = [Checksum::Blake3, Checksum::Xxh3];

    /// Its number in the `ClientHello`.
    pub fn to_wire(self) -> u8 {
        match self {
            Checksum::Blake3 => 0,
            Checksum::Xxh3 => 1,
        }
    }

    /// The checksum numbered `v`, or `None` for one this build does not know.
    pub fn from_wire(v: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.to_wire() == v)
    }

    /// Its name on the command line and in JSON summaries.
    pub fn name(self) -> &'static str {
        match self {
            Checksum::Blake3 => "blake3",
            Checksum::Xxh3 => "xxh3",
        }
    }

    /// The checksum called `s` (see [`Checksum::name`]).
    pub fn parse(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("unknown checksum {s:?}: expected blake3 or xxh3"))
    }
}

/// Computes buffers' checksums for one session: the algorithm and, for keyed BLAKE3, the key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct BlockHasher {
    kind: Checksum,
    key: Option<[u8; 32]>,
}

impl std::fmt::Debug for BlockHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("BlockHasher")
            .field("kind", &self.kind)
            .field("keyed", &self.key.is_some())
            .finish()
    }
}

impl Default for BlockHasher {
    fn default() -> Self {
        BlockHasher::new(Checksum::Blake3, None)
    }
}

impl BlockHasher {
    /// A hasher of `kind`; `key` (a per-session secret) keys BLAKE3 and is ignored by XXH3,
    /// which has no key worth the name.
    pub fn new(kind: Checksum, key: Option<[u8; 32]>) -> Self {
        let key = if kind == Checksum::Blake3 { key } else { None };
        BlockHasher { kind, key }
    }

    /// The algorithm.
    pub fn kind(&self) -> Checksum {
        self.kind
    }

    /// Whether the checksum is keyed (a tampered buffer cannot be given a matching one).
    pub fn keyed(&self) -> bool {
        self.key.is_some()
    }

    /// The checksum of `data`, 32 bytes.
    pub fn hash(&self, data: &[u8]) -> [u8; 32] {
        match (self.kind, &self.key) {
            (Checksum::Blake3, None) => *blake3::hash(data).as_bytes(),
            (Checksum::Blake3, Some(k)) => *blake3::keyed_hash(k, data).as_bytes(),
            (Checksum::Xxh3, _) => {
                let mut out = [0u8; 32];
                out[..16].copy_from_slice(&twox_hash::XxHash3_128::oneshot(data).to_be_bytes());
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_wire_numbers_round_trip_and_unknown_ones_are_refused() {
        for c in Checksum::ALL {
            assert_eq!(Checksum::parse(c.name()), Ok(c));
            assert_eq!(Checksum::from_wire(c.to_wire()), Some(c));
        }
        assert_eq!(Checksum::from_wire(7), None);
        assert!(
            Checksum::parse("md5")
                .unwrap_err()
                .contains("blake3 or xxh3")
        );
    }

    #[test]
    fn each_checksum_sees_a_flipped_bit_and_the_key_changes_blake3() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let mut bad = data.clone();
        bad[54_321] ^= 4;
        let plain = BlockHasher::new(Checksum::Blake3, None);
        let keyed = BlockHasher::new(Checksum::Blake3, Some([9; 32]));
        let other_key = BlockHasher::new(Checksum::Blake3, Some([8; 32]));
        let xxh = BlockHasher::new(Checksum::Xxh3, Some([9; 32]));
        for h in [plain, keyed, xxh] {
            assert_ne!(h.hash(&data), h.hash(&bad), "{h:?}");
        }
        assert_eq!(plain.hash(&data), *blake3::hash(&data).as_bytes());
        assert_ne!(keyed.hash(&data), plain.hash(&data));
        assert_ne!(keyed.hash(&data), other_key.hash(&data));
        assert!(keyed.keyed() && !xxh.keyed(), "XXH3 takes no key");
        assert_eq!(
            xxh.hash(&data)[..16],
            twox_hash::XxHash3_128::oneshot(&data).to_be_bytes()
        );
        assert_eq!(xxh.hash(&data)[16..], [0; 16]);
    }
}
