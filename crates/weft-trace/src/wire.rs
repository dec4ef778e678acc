//! Header views over untrusted bytes (smoltcp's view + representation shape): each view checks
//! its length once in `new_checked` and then reads fields without further bounds checks that can
//! fail. Nothing here allocates or panics, whatever the bytes.

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// IP protocol number of ICMP.
pub const IPPROTO_ICMP: u8 = 1;
/// IP protocol number of TCP.
pub const IPPROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// IP protocol number of ICMPv6.
pub const IPPROTO_ICMPV6: u8 = 58;

#[inline]
pub(crate) fn be16(b: &[u8], i: usize) -> u16 {
    match b.get(i..i + 2) {
        Some(s) => u16::from_be_bytes([s[0], s[1]]),
        None => 0,
    }
}

#[inline]
fn be32(b: &[u8], i: usize) -> u32 {
    match b.get(i..i + 4) {
        Some(s) => u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

/// Why a header could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the header needs.
    Truncated,
    /// A field holds an impossible value (version, header length).
    Malformed,
}

/// An IPv4 header view.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4Packet<'a>(&'a [u8]);

impl<'a> Ipv4Packet<'a> {
    /// Checks version and header length against the bytes.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, WireError> {
        let first = *b.first().ok_or(WireError::Truncated)?;
        if first >> 4 != 4 || (first & 0x0f) < 5 {
            return Err(WireError::Malformed);
        }
        if b.len() < ((first & 0x0f) as usize) * 4 {
            return Err(WireError::Truncated);
        }
        Ok(Ipv4Packet(b))
    }
    /// Header length in bytes.
    pub fn header_len(&self) -> usize {
        ((self.0[0] & 0x0f) as usize) * 4
    }
    /// Total length field, in bytes.
    pub fn total_len(&self) -> u16 {
        be16(self.0, 2)
    }
    /// Identification field.
    pub fn ident(&self) -> u16 {
        be16(self.0, 4)
    }
    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        be16(self.0, 6) & 0x2000 != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u32 {
        ((be16(self.0, 6) & 0x1fff) as u32) * 8
    }
    /// Protocol of the payload.
    pub fn protocol(&self) -> u8 {
        self.0[9]
    }
    /// Source address.
    pub fn src(&self) -> [u8; 4] {
        [self.0[12], self.0[13], self.0[14], self.0[15]]
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 4] {
        [self.0[16], self.0[17], self.0[18], self.0[19]]
    }
}

/// An IPv6 fixed-header view.
#[derive(Clone, Copy, Debug)]
pub struct Ipv6Packet<'a>(&'a [u8]);

impl<'a> Ipv6Packet<'a> {
    /// Checks version and the 40-byte fixed header.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, WireError> {
        let first = *b.first().ok_or(WireError::Truncated)?;
        if first >> 4 != 6 {
            return Err(WireError::Malformed);
        }
        if b.len() < 40 {
            return Err(WireError::Truncated);
        }
        Ok(Ipv6Packet(b))
    }
    /// Payload length field, in bytes (after the fixed header).
    pub fn payload_len(&self) -> u16 {
        be16(self.0, 4)
    }
    /// Next-header field of the fixed header.
    pub fn next_header(&self) -> u8 {
        self.0[6]
    }
    /// Source address.
    pub fn src(&self) -> [u8; 16] {
        let mut a = [0; 16];
        a.copy_from_slice(&self.0[8..24]);
        a
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 16] {
        let mut a = [0; 16];
        a.copy_from_slice(&self.0[24..40]);
        a
    }
}

/// A TCP header view.
#[derive(Clone, Copy, Debug)]
pub struct TcpSegment<'a>(&'a [u8]);

impl<'a> TcpSegment<'a> {
    /// Checks the data offset against the bytes.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, WireError> {
        if b.len() < 20 {
            return Err(WireError::Truncated);
        }
        let hl = ((b[12] >> 4) as usize) * 4;
        if hl < 20 {
            return Err(WireError::Malformed);
        }
        if b.len() < hl {
            return Err(WireError::Truncated);
        }
        Ok(TcpSegment(b))
    }
    /// Header length with options, in bytes.
    pub fn header_len(&self) -> usize {
        ((self.0[12] >> 4) as usize) * 4
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.0, 0)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.0, 2)
    }
    /// Sequence number.
    pub fn seq(&self) -> u32 {
        be32(self.0, 4)
    }
    /// Acknowledgement number.
    pub fn ack(&self) -> u32 {
        be32(self.0, 8)
    }
    /// Flag bits (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10).
    pub fn flags(&self) -> u8 {
        self.0[13]
    }
    /// The timestamp option (TSval, TSecr), if present.
    pub fn timestamps(&self) -> Option<(u32, u32)> {
        let opts = self.0.get(20..self.header_len())?;
        let mut i = 0;
        while let Some(&kind) = opts.get(i) {
            match kind {
                0 => return None,
                1 => i += 1,
                _ => {
                    let len = *opts.get(i + 1)? as usize;
                    if len < 2 {
                        return None;
                    }
                    if kind == 8 && len == 10 {
                        return Some((be32(opts, i + 2), be32(opts, i + 6)));
                    }
                    i += len;
                }
            }
        }
        None
    }
}

/// A UDP header view.
#[derive(Clone, Copy, Debug)]
pub struct UdpDatagram<'a>(&'a [u8]);

impl<'a> UdpDatagram<'a> {
    /// Checks the 8-byte header.
    pub fn new_checked(b: &'a [u8]) -> Result<Self, WireError> {
        if b.len() < 8 {
            return Err(WireError::Truncated);
        }
        Ok(UdpDatagram(b))
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.0, 0)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.0, 2)
    }
    /// Length field (header and payload), in bytes.
    pub fn len(&self) -> u16 {
        be16(self.0, 4)
    }
    /// True if the length field says there is no payload.
    pub fn is_empty(&self) -> bool {
        self.len() <= 8
    }
}
