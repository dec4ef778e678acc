//! Fixed binary formats on the data path: the hello a data connection or UDP socket presents to
//! attach itself to a test, and the header of every UDP data datagram.
//!
//! ```text
//! hello (24 bytes):  WEFD|WEFU  version  0  stream(u16 BE)  cookie(16 bytes)
//! UDP datagram:      seq(u64 BE)  send time(u64 BE, ns since the sender's start)  payload...
//! ```
//!
//! A UDP datagram whose first four bytes are `WEFU` is a (possibly retransmitted) hello, never
//! data: sequence numbers would need to reach 0x5745_4655_0000_0000 to collide.

use super::ProtoError;
use super::frame::VERSION;

/// Magic of a TCP data-connection hello.
pub const DATA_MAGIC: [u8; 4] = *b"WEFD";
/// Magic of a UDP hello datagram.
pub const UDP_MAGIC: [u8; 4] = *b"WEFU";
/// Length of a hello in bytes.
pub const HELLO_LEN: usize = 24;
/// Length of the UDP data header in bytes; the smallest UDP `--len`.
pub const UDP_HEADER_LEN: usize = 16;

/// A test's secret, drawn at random by the agent for each test.
pub type Cookie = [u8; 16];

/// The hello a data connection (TCP) or data socket (UDP) sends first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// `true` for UDP (`WEFU`), `false` for a TCP data connection (`WEFD`).
    pub udp: bool,
    /// Index of the stream within the test.
    pub stream: u16,
    /// The cookie from the agent's `Accept`.
    pub cookie: Cookie,
}

impl Hello {
    /// Parses a hello; any other bytes are an error.
    pub fn parse(b: &[u8]) -> Result<Self, ProtoError> {
        let b: &[u8; HELLO_LEN] =
            b.get(..HELLO_LEN)
                .and_then(|s| s.try_into().ok())
                .ok_or(ProtoError::Truncated {
                    need: HELLO_LEN,
                    have: b.len(),
                })?;
        let magic = [b[0], b[1], b[2], b[3]];
        let udp = match magic {
            DATA_MAGIC => false,
            UDP_MAGIC => true,
            m => return Err(ProtoError::BadMagic(m)),
        };
        if b[4] != VERSION {
            return Err(ProtoError::UnsupportedVersion(b[4]));
        }
        if b[5] != 0 {
            return Err(ProtoError::ReservedBits(u16::from(b[5])));
        }
        let mut cookie = [0u8; 16];
        cookie.copy_from_slice(&b[8..24]);
        Ok(Hello {
            udp,
            stream: u16::from_be_bytes([b[6], b[7]]),
            cookie,
        })
    }

    /// The 24 bytes of this hello.
    pub fn emit(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[..4].copy_from_slice(if self.udp { &UDP_MAGIC } else { &DATA_MAGIC });
        b[4] = VERSION;
        b[6..8].copy_from_slice(&self.stream.to_be_bytes());
        b[8..].copy_from_slice(&self.cookie);
        b
    }
}

/// Writes the UDP data header into the first 16 bytes of `buf` (which must hold them).
pub fn emit_udp_header(buf: &mut [u8], seq: u64, send_ns: u64) {
    if let Some(h) = buf.get_mut(..UDP_HEADER_LEN) {
        h[..8].copy_from_slice(&seq.to_be_bytes());
        h[8..].copy_from_slice(&send_ns.to_be_bytes());
    }
}

/// Reads `(seq, send_ns)` from a UDP data datagram, or `None` if it is too short or a hello.
pub fn parse_udp_header(buf: &[u8]) -> Option<(u64, u64)> {
    let h: &[u8; UDP_HEADER_LEN] = buf.get(..UDP_HEADER_LEN)?.try_into().ok()?;
    if h[..4] == UDP_MAGIC {
        return None;
    }
    let mut seq = [0u8; 8];
    let mut ts = [0u8; 8];
    seq.copy_from_slice(&h[..8]);
    ts.copy_from_slice(&h[8..]);
    Some((u64::from_be_bytes(seq), u64::from_be_bytes(ts)))
}

/// The cookie as 32 lower-case hex digits.
pub fn cookie_to_hex(c: &Cookie) -> String {
    c.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a cookie from 32 hex digits.
pub fn cookie_from_hex(s: &str) -> Option<Cookie> {
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    let mut c = [0u8; 16];
    for (i, byte) in c.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_bytes_round_trip() {
        let h = Hello {
            udp: false,
            stream: 258,
            cookie: [7; 16],
        };
        let b = h.emit();
        assert_eq!(&b[..8], &[b'W', b'E', b'F', b'D', 2, 0, 1, 2]);
        assert_eq!(Hello::parse(&b).unwrap(), h);
        let u = Hello { udp: true, ..h };
        assert_eq!(&u.emit()[..4], b"WEFU");
        assert_eq!(parse_udp_header(&u.emit()), None);
    }

    #[test]
    fn hello_rejects_garbage() {
        assert!(matches!(
            Hello::parse(b"GET / HTTP/1.1\r\nHost: x\r\n"),
            Err(ProtoError::BadMagic(_))
        ));
        assert!(matches!(
            Hello::parse(b"WEFD"),
            Err(ProtoError::Truncated { .. })
        ));
        let mut b = Hello {
            udp: false,
            stream: 0,
            cookie: [0; 16],
        }
        .emit();
        b[4] = 9;
        assert_eq!(
            Hello::parse(&b).unwrap_err(),
            ProtoError::UnsupportedVersion(9)
        );
    }

    #[test]
    fn udp_header_round_trips() {
        let mut buf = [0u8; 20];
        emit_udp_header(&mut buf, 0x0102, 0x0304);
        assert_eq!(
            &buf[..16],
            &[0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4]
        );
        assert_eq!(parse_udp_header(&buf), Some((0x0102, 0x0304)));
        assert_eq!(parse_udp_header(&buf[..15]), None);
    }

    #[test]
    fn cookie_hex_round_trips_and_rejects_bad_text() {
        let c = [0xab; 16];
        assert_eq!(cookie_from_hex(&cookie_to_hex(&c)), Some(c));
        assert_eq!(cookie_from_hex("zz"), None);
        assert_eq!(cookie_from_hex(&"é".repeat(16)), None);
        assert_eq!(cookie_from_hex(&"g".repeat(32)), None);
    }
}
