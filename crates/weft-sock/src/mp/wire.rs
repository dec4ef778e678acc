//! The frames ranks exchange on their connections (and that the PVM-style daemons carry): a
//! 24-byte header, then `len` bytes of payload. A message of `total` bytes travels as one frame
//! on a direct connection and as several chunk frames (consecutive `offset`s) through a daemon.
//!
//! ```text
//!  0     2     3     4       6       8         12          16          20        24
//!  +-----+-----+-----+-------+-------+---------+-----------+-----------+---------+---------+
//!  | WM  | ver | kind| src   | dst   | seq     | total     | offset    | len     | payload |
//!  +-----+-----+-----+-------+-------+---------+-----------+-----------+---------+---------+
//!   2 B    u8    u8    u16     u16     u32       u32         u32         u32       len bytes
//! ```
//!
//! All integers big-endian. `seq` counts the messages from `src` to `dst` (from 0), so that a
//! receiver notices a message out of order. Kinds: data, hello (payload: ranks u16, plan digest
//! u64), abort (payload: the reason, UTF-8) and bye (empty). [`Header::parse`] checks everything
//! a reader needs before it trusts a length; `fuzz/fuzz_targets/mp_frame.rs` feeds it any bytes.

/// The first two bytes of every frame.
pub const MAGIC: [u8; 2] = *b"WM";
/// The frame version this build speaks; a peer with another is refused at the hello.
pub const VERSION: u8 = 1;
/// Length of the header, bytes.
pub const HEADER_LEN: usize = weft_model::mp::FRAME_HEADER;
/// Largest message, bytes (sizes up to 16 MiB; the all-to-all and exchange move one size per
/// message).
pub const MAX_MESSAGE: u32 = 64 << 20;
/// Largest payload of a control frame (hello, abort, bye), bytes.
pub const MAX_CONTROL: u32 = 1024;
/// Length of a hello's payload, bytes.
pub const HELLO_LEN: usize = 10;

/// What a frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A chunk of a message.
    Data = 1,
    /// The first frame on a connection: who is speaking and which plan it runs.
    Hello = 2,
    /// The sender gives up; the payload says why.
    Abort = 3,
    /// The sender is done and will close its connection.
    Bye = 4,
}

/// Why bytes are not a frame header.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than a header.
    #[error("frame truncated: {0} of {HEADER_LEN} header bytes")]
    Truncated(usize),
    /// Not `WM`.
    #[error("not a weft mp frame (magic {0:02x?})")]
    BadMagic([u8; 2]),
    /// Another frame version.
    #[error(
        "mp frame version {0} is not supported (this build speaks {VERSION}): run the same weft \
         version on every rank"
    )]
    Version(u8),
    /// Unknown kind code.
    #[error("unknown mp frame kind {0}")]
    Kind(u8),
    /// The lengths do not fit together or exceed the limits.
    #[error("bad mp frame lengths: total {total}, offset {offset}, len {len}")]
    Lengths {
        /// Message length.
        total: u32,
        /// Chunk offset.
        offset: u32,
        /// Chunk length.
        len: u32,
    },
}

/// A frame header (the representation; [`Header::parse`] and [`Header::emit`] convert).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// What the frame is.
    pub kind: Kind,
    /// Sending rank.
    pub src: u16,
    /// Receiving rank.
    pub dst: u16,
    /// Message number from `src` to `dst`.
    pub seq: u32,
    /// Length of the whole message, bytes.
    pub total: u32,
    /// Where this chunk starts in the message.
    pub offset: u32,
    /// Payload bytes following the header.
    pub len: u32,
}

impl Header {
    /// A data frame carrying a whole message of `total` bytes.
    pub fn data(src: u16, dst: u16, seq: u32, total: u32) -> Header {
        Header {
            kind: Kind::Data,
            src,
            dst,
            seq,
            total,
            offset: 0,
            len: total,
        }
    }

    /// A control frame (hello, abort, bye) with a payload of `len` bytes.
    pub fn control(kind: Kind, src: u16, dst: u16, len: u32) -> Header {
        Header {
            kind,
            src,
            dst,
            seq: 0,
            total: len,
            offset: 0,
            len,
        }
    }

    /// Parses and checks the first [`HEADER_LEN`] bytes of `b`: magic, version, kind, and that
    /// the chunk lies within its message, within [`MAX_MESSAGE`] (control frames within
    /// [`MAX_CONTROL`], in one chunk).
    pub fn parse(b: &[u8]) -> Result<Header, WireError> {
        let h: &[u8; HEADER_LEN] = b
            .get(..HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(WireError::Truncated(b.len()))?;
        if h[..2] != MAGIC {
            return Err(WireError::BadMagic([h[0], h[1]]));
        }
        if h[2] != VERSION {
            return Err(WireError::Version(h[2]));
        }
        let kind = match h[3] {
            1 => Kind::Data,
            2 => Kind::Hello,
            3 => Kind::Abort,
            4 => Kind::Bye,
            k => return Err(WireError::Kind(k)),
        };
        let u16_at = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        let u32_at = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let hdr = Header {
            kind,
            src: u16_at(4),
            dst: u16_at(6),
            seq: u32_at(8),
            total: u32_at(12),
            offset: u32_at(16),
            len: u32_at(20),
        };
        let max = if kind == Kind::Data {
            MAX_MESSAGE
        } else {
            MAX_CONTROL
        };
        let whole = kind == Kind::Data || (hdr.offset == 0 && hdr.len == hdr.total);
        let fits = hdr
            .offset
            .checked_add(hdr.len)
            .is_some_and(|end| end <= hdr.total);
        if hdr.total > max || !fits || !whole {
            return Err(WireError::Lengths {
                total: hdr.total,
                offset: hdr.offset,
                len: hdr.len,
            });
        }
        Ok(hdr)
    }

    /// The header's bytes.
    pub fn emit(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..2].copy_from_slice(&MAGIC);
        b[2] = VERSION;
        b[3] = self.kind as u8;
        b[4..6].copy_from_slice(&self.src.to_be_bytes());
        b[6..8].copy_from_slice(&self.dst.to_be_bytes());
        b[8..12].copy_from_slice(&self.seq.to_be_bytes());
        b[12..16].copy_from_slice(&self.total.to_be_bytes());
        b[16..20].copy_from_slice(&self.offset.to_be_bytes());
        b[20..24].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    /// Whether this chunk ends its message.
    pub fn last_chunk(&self) -> bool {
        self.offset + self.len == self.total
    }
}

/// The payload of a hello: how many ranks the sender believes there are, and the digest of the
/// plan it will run ([`crate::mp::spec::MpSpec::digest`]).
pub fn emit_hello(ranks: u16, digest: u64) -> [u8; HELLO_LEN] {
    let mut b = [0u8; HELLO_LEN];
    b[..2].copy_from_slice(&ranks.to_be_bytes());
    b[2..].copy_from_slice(&digest.to_be_bytes());
    b
}

/// Reads a hello's payload: `(ranks, digest)`, or `None` if it has the wrong length.
pub fn parse_hello(b: &[u8]) -> Option<(u16, u64)> {
    if b.len() != HELLO_LEN {
        return None;
    }
    let mut d = [0u8; 8];
    d.copy_from_slice(&b[2..]);
    Some((u16::from_be_bytes([b[0], b[1]]), u64::from_be_bytes(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_round_trip() {
        let h = Header::data(3, 1, 0x0102_0304, 4096);
        let b = h.emit();
        assert_eq!(
            b,
            [
                b'W', b'M', 1, 1, 0, 3, 0, 1, 1, 2, 3, 4, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x10, 0
            ]
        );
        assert_eq!(Header::parse(&b), Ok(h));
        assert!(h.last_chunk());
        let c = Header {
            offset: 4000,
            len: 96,
            ..h
        };
        assert_eq!(Header::parse(&c.emit()), Ok(c));
    }

    #[test]
    fn refuses_bad_headers() {
        let good = Header::data(0, 1, 0, 8).emit();
        assert_eq!(Header::parse(&good[..5]), Err(WireError::Truncated(5)));
        let mut b = good;
        b[0] = b'X';
        assert!(matches!(Header::parse(&b), Err(WireError::BadMagic(_))));
        let mut b = good;
        b[2] = 9;
        assert_eq!(Header::parse(&b), Err(WireError::Version(9)));
        let mut b = good;
        b[3] = 0;
        assert_eq!(Header::parse(&b), Err(WireError::Kind(0)));
        // Chunk beyond its message, oversized message, split control frame.
        let bad = [
            Header {
                offset: 8,
                len: 1,
                ..Header::data(0, 1, 0, 8)
            },
            Header::data(0, 1, 0, MAX_MESSAGE + 1),
            Header {
                offset: u32::MAX,
                len: 2,
                ..Header::data(0, 1, 0, 8)
            },
            Header {
                len: 4,
                ..Header::control(Kind::Abort, 0, 1, 8)
            },
            Header::control(Kind::Abort, 0, 1, MAX_CONTROL + 1),
        ];
        for h in bad {
            assert!(
                matches!(Header::parse(&h.emit()), Err(WireError::Lengths { .. })),
                "{h:?}"
            );
        }
    }

    #[test]
    fn hello_payload_round_trips() {
        let b = emit_hello(9, 0xdead_beef_0000_0001);
        assert_eq!(parse_hello(&b), Some((9, 0xdead_beef_0000_0001)));
        assert_eq!(parse_hello(&b[..9]), None);
    }
}
