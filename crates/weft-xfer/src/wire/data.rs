//! The data datagram: a 20-byte header and a slice of one buffer.
//!
//! ```text
//!  0      2       3      4             12           16           20
//!  +------+-------+------+--------------+------------+------------+---------
//!  | 'WF' | ver=1 | kind | session u64  | buffer u32 | offset u32 | payload
//!  +------+-------+------+--------------+------------+------------+---------
//! ```
//! All integers big-endian. `buffer` is the session-wide buffer sequence number announced by a
//! `Start` control message; `offset` is the byte offset of the payload inside that buffer. The
//! receiver drops any datagram whose session, buffer or offset does not belong to it.

use super::WireError;

/// The two magic bytes at the start of every data datagram.
pub const MAGIC: [u8; 2] = *b"WF";
/// The data-format version this build speaks.
pub const VERSION: u8 = 1;
/// The only datagram kind so far: a slice of buffer data.
pub const KIND_DATA: u8 = 0;
/// Header length in bytes.
pub const HEADER_LEN: usize = 20;
/// The largest UDP payload over IPv4 (65535 - 20 - 8), bytes.
pub const MAX_DATAGRAM: usize = 65_507;
/// The largest payload one datagram can carry, bytes.
pub const MAX_PAYLOAD: usize = MAX_DATAGRAM - HEADER_LEN;

/// A read-only view of a data datagram over any byte container.
#[derive(Debug, Clone, Copy)]
pub struct DataPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> DataPacket<T> {
    /// Wraps `buf` after checking that it is long enough, has the magic, version and kind.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[0..2] != MAGIC {
            return Err(WireError::BadMagic);
        }
        if b[2] != VERSION {
            return Err(WireError::Version(b[2] as u16));
        }
        if b[3] != KIND_DATA {
            return Err(WireError::UnknownType(b[3]));
        }
        Ok(DataPacket { buf })
    }

    /// The session id the datagram claims.
    pub fn session(&self) -> u64 {
        let b = self.buf.as_ref();
        u64::from_be_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]])
    }

    /// The buffer sequence number.
    pub fn buffer(&self) -> u32 {
        let b = self.buf.as_ref();
        u32::from_be_bytes([b[12], b[13], b[14], b[15]])
    }

    /// Byte offset of the payload inside the buffer.
    pub fn offset(&self) -> u32 {
        let b = self.buf.as_ref();
        u32::from_be_bytes([b[16], b[17], b[18], b[19]])
    }

    /// The buffer bytes carried.
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[HEADER_LEN..]
    }
}

/// The header fields of a data datagram (the payload travels separately).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataRepr {
    /// Session id from the handshake.
    pub session: u64,
    /// Buffer sequence number.
    pub buffer: u32,
    /// Byte offset inside the buffer.
    pub offset: u32,
}

impl DataRepr {
    /// Reads the header fields from a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &DataPacket<T>) -> Self {
        DataRepr {
            session: p.session(),
            buffer: p.buffer(),
            offset: p.offset(),
        }
    }

    /// Appends the header and then `payload` to `out`.
    pub fn emit(&self, payload: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(KIND_DATA);
        out.extend_from_slice(&self.session.to_be_bytes());
        out.extend_from_slice(&self.buffer.to_be_bytes());
        out.extend_from_slice(&self.offset.to_be_bytes());
        out.extend_from_slice(payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 23] = [
        b'W', b'F', 1, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 7, 0, 0, 0x23, 0x28, 0xaa, 0xbb,
        0xcc,
    ];

    #[test]
    fn parses_byte_vector() {
        let p = DataPacket::new_checked(&BYTES[..]).unwrap();
        let r = DataRepr::parse(&p);
        assert_eq!(
            r,
            DataRepr {
                session: 0x1234,
                buffer: 7,
                offset: 9000
            }
        );
        assert_eq!(p.payload(), &[0xaa, 0xbb, 0xcc]);
    }

    #[test]
    fn emits_byte_vector() {
        let mut out = Vec::new();
        DataRepr {
            session: 0x1234,
            buffer: 7,
            offset: 9000,
        }
        .emit(&[0xaa, 0xbb, 0xcc], &mut out);
        assert_eq!(out, BYTES);
    }

    #[test]
    fn rejects_short_foreign_and_future_datagrams() {
        assert_eq!(
            DataPacket::new_checked(&BYTES[..19]).unwrap_err(),
            WireError::Truncated
        );
        let mut b = BYTES;
        b[0] = b'X';
        assert_eq!(
            DataPacket::new_checked(&b[..]).unwrap_err(),
            WireError::BadMagic
        );
        let mut b = BYTES;
        b[2] = 2;
        assert_eq!(
            DataPacket::new_checked(&b[..]).unwrap_err(),
            WireError::Version(2)
        );
        let mut b = BYTES;
        b[3] = 9;
        assert_eq!(
            DataPacket::new_checked(&b[..]).unwrap_err(),
            WireError::UnknownType(9)
        );
    }
}
