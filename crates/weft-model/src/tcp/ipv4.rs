//! The IPv4 header around a TCP segment (RFC 791), just enough to write captures of simulated
//! TCP and to exchange segments with a real stack: a checked view, a representation with
//! `parse` and `emit`, and the Internet checksum (RFC 1071, kept in `net::ip`). No options are
//! written, fragments are refused rather than reassembled.

use super::wire::WireError;
/// The Internet checksum, at the network layer where frames' headers are checked and
/// updated too.
pub use crate::net::ip::{checksum, sum16};

/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// Length of an IPv4 header without options, bytes.
pub const HEADER_LEN: usize = 20;

/// An IPv4 header, as far as weft needs one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Protocol of the payload.
    pub protocol: u8,
    /// Time to live.
    pub ttl: u8,
    /// Identification field.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_fragment: bool,
    /// Payload length, bytes.
    pub payload_len: usize,
}

/// A view of an IPv4 packet whose header length and total length have been checked against the
/// buffer.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Checks version, header length and total length; after this no accessor can fail.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        let first = *b.first().ok_or(WireError::Truncated)?;
        if first >> 4 != 4 {
            return Err(WireError::Malformed);
        }
        let ihl = usize::from(first & 0x0f) * 4;
        if ihl < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if b.len() < ihl.max(HEADER_LEN) {
            return Err(WireError::Truncated);
        }
        let total = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if total < ihl {
            return Err(WireError::Malformed);
        }
        if total > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(Ipv4Packet { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Header length, bytes.
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[0] & 0x0f) * 4
    }
    /// Total length field, bytes.
    pub fn total_len(&self) -> usize {
        usize::from(u16::from_be_bytes([self.b()[2], self.b()[3]]))
    }
    /// Identification.
    pub fn ident(&self) -> u16 {
        u16::from_be_bytes([self.b()[4], self.b()[5]])
    }
    /// Don't-fragment flag.
    pub fn dont_fragment(&self) -> bool {
        self.b()[6] & 0x40 != 0
    }
    /// True if this is a fragment (more fragments, or a non-zero offset).
    pub fn is_fragment(&self) -> bool {
        u16::from_be_bytes([self.b()[6], self.b()[7]]) & 0x3fff != 0
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.b()[8]
    }
    /// Protocol.
    pub fn protocol(&self) -> u8 {
        self.b()[9]
    }
    /// Source address.
    pub fn src(&self) -> [u8; 4] {
        let b = self.b();
        [b[12], b[13], b[14], b[15]]
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 4] {
        let b = self.b();
        [b[16], b[17], b[18], b[19]]
    }
    /// True if the header checksum is right.
    pub fn checksum_ok(&self) -> bool {
        checksum(&self.b()[..self.header_len()], 0) == 0
    }
    /// The payload (up to the total length; trailing link padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..self.total_len()]
    }
}

impl Ipv4Repr {
    /// Reads an unfragmented IPv4 packet with a correct header checksum; returns the header and
    /// the payload.
    pub fn parse(bytes: &[u8]) -> Result<(Ipv4Repr, &[u8]), WireError> {
        let p = Ipv4Packet::new_checked(bytes)?;
        if !p.checksum_ok() {
            return Err(WireError::Checksum);
        }
        if p.is_fragment() {
            return Err(WireError::Unsupported);
        }
        let payload = &bytes[p.header_len()..p.total_len()];
        Ok((
            Ipv4Repr {
                src: p.src(),
                dst: p.dst(),
                protocol: p.protocol(),
                ttl: p.ttl(),
                ident: p.ident(),
                dont_fragment: p.dont_fragment(),
                payload_len: payload.len(),
            },
            payload,
        ))
    }

    /// Writes the 20-byte header (checksum included) at the start of `out`.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        let total = HEADER_LEN + self.payload_len;
        if total > usize::from(u16::MAX) {
            return Err(WireError::Malformed);
        }
        let h = out.get_mut(..HEADER_LEN).ok_or(WireError::Truncated)?;
        h[0] = 0x45;
        h[1] = 0;
        h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        h[4..6].copy_from_slice(&self.ident.to_be_bytes());
        h[6..8].copy_from_slice(&(if self.dont_fragment { 0x4000u16 } else { 0 }).to_be_bytes());
        h[8] = self.ttl;
        h[9] = self.protocol;
        h[10..12].fill(0);
        h[12..16].copy_from_slice(&self.src);
        h[16..20].copy_from_slice(&self.dst);
        let c = checksum(h, 0);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        Ok(())
    }
}

/// The partial sum of the TCP/UDP pseudo-header (RFC 793 section 3.1).
pub fn pseudo_header_sum(src: [u8; 4], dst: [u8; 4], protocol: u8, len: usize) -> u32 {
    let mut ph = [0u8; 12];
    ph[..4].copy_from_slice(&src);
    ph[4..8].copy_from_slice(&dst);
    ph[9] = protocol;
    ph[10..12].copy_from_slice(&(len as u16).to_be_bytes());
    sum16(&ph, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header as Linux writes one for TCP (DF set, TTL 64), checksum filled in here.
    #[test]
    fn parses_a_real_header_and_emits_it_back() {
        let bytes: [u8; 24] = [
            0x45, 0x00, 0x00, 0x18, 0xb8, 0x61, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, 192, 168, 0,
            199, 192, 168, 0, 1, 1, 2, 3, 4,
        ];
        let mut fixed = bytes;
        let c = checksum(&fixed[..20], 0);
        fixed[10..12].copy_from_slice(&c.to_be_bytes());
        let (repr, payload) = Ipv4Repr::parse(&fixed).unwrap();
        assert_eq!(repr.src, [192, 168, 0, 199]);
        assert_eq!(repr.protocol, PROTO_TCP);
        assert!(repr.dont_fragment);
        assert_eq!(payload, &[1, 2, 3, 4]);
        let mut out = [0u8; 20];
        repr.emit(&mut out).unwrap();
        assert_eq!(out, fixed[..20]);
        // A flipped bit fails the checksum; a short buffer is truncated, never a panic.
        let mut bad = fixed;
        bad[15] ^= 1;
        assert_eq!(Ipv4Repr::parse(&bad), Err(WireError::Checksum));
        assert_eq!(Ipv4Repr::parse(&fixed[..10]), Err(WireError::Truncated));
        assert_eq!(Ipv4Repr::parse(&[0x65]), Err(WireError::Malformed));
    }
}
