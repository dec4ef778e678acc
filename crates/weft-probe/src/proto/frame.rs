//! The binary header of a control message, as a zero-copy view over bytes (smoltcp style).
//!
//! ```text
//!  0      4       5      6          8               12
//!  +------+-------+------+----------+---------------+----------------+
//!  | WEFT | vers. | type | reserved | body length   | body (JSON)    |
//!  +------+-------+------+----------+---------------+----------------+
//!    4 B    u8      u8     u16 = 0    u32 big-endian   length bytes
//! ```
//!
//! [`Frame::new_checked`] validates everything a reader needs before it trusts a field: the
//! magic, the version, the reserved bits and that the buffer holds the whole body. A reader of a
//! stream checks the header alone first ([`Frame::check_header`]) so that it can refuse an
//! oversized length before allocating anything.

use super::ProtoError;

/// The four bytes every control message starts with.
pub const MAGIC: [u8; 4] = *b"WEFT";
/// The control-protocol version this build speaks. A peer that sends another version gets an
/// `Error` message naming both, framed in the peer's own version so that it can read it, and is
/// dropped. Version 2: the client proves a key first (`AuthChallenge` lost its MAC, `AuthOk`
/// carries the agent's), and after a keyed handshake every message carries a tag (see
/// `crate::control`); the data hellos carry the version too. Version 3: a UDP data datagram
/// carries its sequence number and send time little-endian (the core's stamped
/// `weft_model::app::Tag`, which the simulator and the emulator send too), where version 2 had
/// them big-endian.
pub const VERSION: u8 = 3;
/// Length of the fixed header in bytes.
pub const HEADER_LEN: usize = 12;
/// Default upper bound on a message body in bytes (the server's `--max-message`).
pub const DEFAULT_MAX_MESSAGE: u32 = 64 * 1024;

/// A view of a control message (header and body) over a byte buffer.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps `buffer` without checking anything; field accessors may then see garbage but never
    /// panic (they read through `get`).
    pub fn new_unchecked(buffer: T) -> Self {
        Frame { buffer }
    }

    /// Wraps `buffer` after [`Frame::check_header`] and a check that the whole body is present.
    pub fn new_checked(buffer: T, max_body: u32) -> Result<Self, ProtoError> {
        let frame = Frame::new_unchecked(buffer);
        frame.check_header(max_body)?;
        let need = HEADER_LEN + frame.body_len() as usize;
        let have = frame.buffer.as_ref().len();
        if have < need {
            return Err(ProtoError::Truncated { need, have });
        }
        Ok(frame)
    }

    /// Checks the header only: length, magic, version, reserved bits and the body-length bound.
    pub fn check_header(&self, max_body: u32) -> Result<(), ProtoError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(ProtoError::Truncated {
                need: HEADER_LEN,
                have: b.len(),
            });
        }
        let magic = self.magic();
        if magic != MAGIC {
            return Err(ProtoError::BadMagic(magic));
        }
        if self.version() != VERSION {
            return Err(ProtoError::UnsupportedVersion(self.version()));
        }
        if self.reserved() != 0 {
            return Err(ProtoError::ReservedBits(self.reserved()));
        }
        if self.body_len() > max_body {
            return Err(ProtoError::TooLarge {
                len: self.body_len(),
                max: max_body,
            });
        }
        Ok(())
    }

    fn byte(&self, i: usize) -> u8 {
        self.buffer.as_ref().get(i).copied().unwrap_or(0)
    }

    /// The first four bytes (zeros where the buffer is shorter).
    pub fn magic(&self) -> [u8; 4] {
        [self.byte(0), self.byte(1), self.byte(2), self.byte(3)]
    }

    /// The protocol version field.
    pub fn version(&self) -> u8 {
        self.byte(4)
    }

    /// The raw message-type code.
    pub fn msg_type(&self) -> u8 {
        self.byte(5)
    }

    /// The reserved field, zero in versions 1 and 2.
    pub fn reserved(&self) -> u16 {
        u16::from_be_bytes([self.byte(6), self.byte(7)])
    }

    /// Length of the body in bytes, as the header claims it.
    pub fn body_len(&self) -> u32 {
        u32::from_be_bytes([self.byte(8), self.byte(9), self.byte(10), self.byte(11)])
    }

    /// The body bytes actually present, at most [`Frame::body_len`] of them.
    pub fn body(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = HEADER_LEN
            .saturating_add(self.body_len() as usize)
            .min(b.len());
        b.get(HEADER_LEN.min(end)..end).unwrap_or(&[])
    }
}

/// Writes a header for a body of `body_len` bytes of message type `msg_type`.
pub fn emit_header(msg_type: u8, body_len: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..4].copy_from_slice(&MAGIC);
    h[4] = VERSION;
    h[5] = msg_type;
    h[8..12].copy_from_slice(&body_len.to_be_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    static GOOD: [u8; 14] = [
        b'W', b'E', b'F', b'T', 0x03, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, b'{', b'}',
    ];

    #[test]
    fn reads_fields_of_a_good_frame() {
        let f = Frame::new_checked(&GOOD[..], 100).unwrap();
        assert_eq!(f.magic(), MAGIC);
        assert_eq!(f.version(), 3);
        assert_eq!(f.msg_type(), 7);
        assert_eq!(f.body_len(), 2);
        assert_eq!(f.body(), b"{}");
    }

    #[test]
    fn emitted_header_matches_bytes() {
        assert_eq!(emit_header(7, 2), GOOD[..12]);
    }

    #[test]
    fn rejects_short_and_truncated_buffers() {
        assert_eq!(
            Frame::new_checked(&GOOD[..5], 100).unwrap_err(),
            ProtoError::Truncated { need: 12, have: 5 }
        );
        assert_eq!(
            Frame::new_checked(&GOOD[..13], 100).unwrap_err(),
            ProtoError::Truncated { need: 14, have: 13 }
        );
    }

    #[test]
    fn rejects_bad_magic_version_reserved_and_size() {
        let mut b = GOOD;
        b[0] = b'X';
        assert!(matches!(
            Frame::new_checked(&b[..], 100),
            Err(ProtoError::BadMagic(_))
        ));
        let mut b = GOOD;
        b[4] = 1;
        assert_eq!(
            Frame::new_checked(&b[..], 100).unwrap_err(),
            ProtoError::UnsupportedVersion(1)
        );
        let mut b = GOOD;
        b[7] = 1;
        assert_eq!(
            Frame::new_checked(&b[..], 100).unwrap_err(),
            ProtoError::ReservedBits(1)
        );
        let mut b = GOOD;
        b[8] = 0xff;
        assert_eq!(
            Frame::new_checked(&b[..], 100).unwrap_err(),
            ProtoError::TooLarge {
                len: 0xff00_0002,
                max: 100
            }
        );
    }

    #[test]
    fn unchecked_view_of_garbage_never_panics() {
        let f = Frame::new_unchecked(&[0xffu8; 3][..]);
        assert_eq!(f.body(), b"");
        assert_eq!(f.body_len(), 0);
        let f = Frame::new_unchecked(&[0xffu8; 20][..]);
        assert_eq!(f.body().len(), 8);
    }
}
