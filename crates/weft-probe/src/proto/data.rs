//! Fixed binary formats on the data path: the hello a data connection or UDP socket presents to
//! attach itself to a test, and the header of every UDP data datagram.
//!
//! ```text
//! hello (24 bytes):  WEFD|WEFU  version  0  stream(u16 BE)  cookie(16 bytes)
//! UDP datagram:      seq(u64 LE)  send time(u64 LE, ns since the sender's start)  payload...
//! ```
//!
//! A UDP data datagram's header is the core's stamped tag (`weft_model::app::Tag::stamped`),
//! written by the socket driver, which the simulator's and the emulator's bulk sources carry
//! too. A receiver takes a UDP datagram that parses as a hello for a (possibly retransmitted)
//! hello, never data: a data datagram would need to be a hello's length or longer, with a
//! sequence number whose bytes 4 and 5 are [`VERSION`] and 0 (at least 12,884,901,888
//! datagrams: four hours at a million a second, beyond the longest test).

use super::ProtoError;
use super::frame::VERSION;

/// Magic of a TCP data-connection hello.
pub const DATA_MAGIC: [u8; 4] = *b"WEFD";
/// Magic of a UDP hello datagram.
pub const UDP_MAGIC: [u8; 4] = *b"WEFU";
/// Length of a hello in bytes.
pub const HELLO_LEN: usize = 24;
/// Length of the UDP data header in bytes (`Tag::STAMPED_LEN`); the smallest UDP `--len`.
pub const UDP_HEADER_LEN: usize = weft_model::app::Tag::STAMPED_LEN;

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
        assert_eq!(&b[..8], &[b'W', b'E', b'F', b'D', 3, 0, 1, 2]);
        assert_eq!(Hello::parse(&b).unwrap(), h);
        let u = Hello { udp: true, ..h };
        assert_eq!(&u.emit()[..4], b"WEFU");
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
    fn cookie_hex_round_trips_and_rejects_bad_text() {
        let c = [0xab; 16];
        assert_eq!(cookie_from_hex(&cookie_to_hex(&c)), Some(c));
        assert_eq!(cookie_from_hex("zz"), None);
        assert_eq!(cookie_from_hex(&"é".repeat(16)), None);
        assert_eq!(cookie_from_hex(&"g".repeat(32)), None);
    }
}
