//! From a captured frame of any supported link type to a compact summary of its network and
//! transport headers ([`PacketInfo`]), without allocating.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::wire::{
    ETHERTYPE_IPV4, ETHERTYPE_IPV6, IPPROTO_TCP, IPPROTO_UDP, Ipv4Packet, Ipv6Packet, TcpSegment,
    UdpDatagram, be16,
};

/// Link-layer types understood (LINKTYPE_* numbers from the pcap registry).
pub mod linktype {
    /// BSD loopback: 4-byte address family in the capturing host's byte order.
    pub const NULL: u16 = 0;
    /// Ethernet (and 802.3 with LLC/SNAP).
    pub const ETHERNET: u16 = 1;
    /// FDDI with LLC/SNAP.
    pub const FDDI: u16 = 10;
    /// Raw IP (BSD DLT_RAW value 12).
    pub const RAW_12: u16 = 12;
    /// Raw IP (OpenBSD DLT_RAW value 14).
    pub const RAW_14: u16 = 14;
    /// Raw IPv4 or IPv6, version from the first nibble.
    pub const RAW: u16 = 101;
    /// OpenBSD loopback: 4-byte address family in network byte order.
    pub const LOOP: u16 = 108;
    /// Linux cooked capture, version 1.
    pub const LINUX_SLL: u16 = 113;
    /// SunATM: 4-byte pseudo-header, then LLC/SNAP or LANE.
    pub const SUNATM: u16 = 123;
    /// Raw IPv4.
    pub const IPV4: u16 = 228;
    /// Raw IPv6.
    pub const IPV6: u16 = 229;
    /// Linux cooked capture, version 2.
    pub const LINUX_SLL2: u16 = 276;
}

/// What the network layer of a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Net {
    /// Could not be decoded (unknown link type or truncated link header).
    #[default]
    Unknown,
    /// IPv4.
    Ipv4,
    /// IPv6.
    Ipv6,
    /// A non-IP EtherType (ARP, IPX, ...).
    Other(u16),
}

/// The transport layer of an IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Transport {
    /// Not IP, or a non-first fragment, or the transport header was cut off.
    #[default]
    None,
    /// TCP.
    Tcp(TcpInfo),
    /// UDP.
    Udp {
        /// Source port.
        sport: u16,
        /// Destination port.
        dport: u16,
    },
    /// ICMP or ICMPv6.
    Icmp {
        /// Type.
        ty: u8,
        /// Code.
        code: u8,
    },
}

/// The TCP fields the analyses use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TcpInfo {
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flags byte.
    pub flags: u8,
    /// Timestamp option (TSval, TSecr), if any.
    pub ts: Option<(u32, u32)>,
}

/// IP fragment information.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Frag {
    /// True if the packet is a fragment (offset > 0 or more fragments follow).
    pub is_fragment: bool,
    /// Offset of the fragment in the original datagram, in bytes.
    pub offset: u32,
    /// More fragments follow.
    pub more: bool,
}

/// A decoded packet: addresses, protocol, ports, lengths. Offsets are into the captured frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    /// The network layer.
    pub net: Net,
    /// 802.1Q/802.1ad tags passed through (0, 1, 2 or more).
    pub vlans: u8,
    /// Source address (unspecified when not IP).
    pub src: IpAddr,
    /// Destination address (unspecified when not IP).
    pub dst: IpAddr,
    /// IP protocol of the transport (after IPv6 extension headers), 0 when not IP.
    pub proto: u8,
    /// Length of the IP packet per its header, in bytes (0 when not IP).
    pub ip_len: u32,
    /// IPv4 identification or IPv6 fragment identification.
    pub ip_id: u32,
    /// Fragmentation.
    pub frag: Frag,
    /// Transport header.
    pub transport: Transport,
    /// Offset of the transport payload in the frame, in bytes.
    pub payload_off: u32,
    /// Length of the transport payload per the headers, in bytes (may exceed what was captured).
    pub payload_len: u32,
}

impl Default for PacketInfo {
    fn default() -> Self {
        PacketInfo {
            net: Net::Unknown,
            vlans: 0,
            src: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            dst: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            proto: 0,
            ip_len: 0,
            ip_id: 0,
            frag: Frag::default(),
            transport: Transport::None,
            payload_off: 0,
            payload_len: 0,
        }
    }
}

impl PacketInfo {
    /// Source and destination ports of TCP or UDP.
    pub fn ports(&self) -> Option<(u16, u16)> {
        match self.transport {
            Transport::Tcp(t) => Some((t.sport, t.dport)),
            Transport::Udp { sport, dport } => Some((sport, dport)),
            _ => None,
        }
    }

    /// The captured transport payload (empty if not captured).
    pub fn payload<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        let start = self.payload_off as usize;
        let end = start
            .saturating_add(self.payload_len as usize)
            .min(frame.len());
        frame.get(start..end).unwrap_or(&[])
    }
}

/// Decodes a frame of link type `linktype`. Never fails: what cannot be decoded is left at its
/// default (`Net::Unknown`, `Transport::None`).
#[inline]
pub fn decode(linktype: u16, frame: &[u8]) -> PacketInfo {
    let mut info = PacketInfo::default();
    let (off, ethertype) = match link_to_network(linktype, frame, &mut info.vlans) {
        Some(x) => x,
        None => return info,
    };
    let Some(l3) = frame.get(off..) else {
        return info;
    };
    match ethertype {
        ETHERTYPE_IPV4 => decode_ipv4(l3, off, &mut info),
        ETHERTYPE_IPV6 => decode_ipv6(l3, off, &mut info),
        other => info.net = Net::Other(other),
    }
    info
}

/// Offset of the network header and its EtherType, for each link type.
fn link_to_network(linktype: u16, f: &[u8], vlans: &mut u8) -> Option<(usize, u16)> {
    use linktype::*;
    match linktype {
        ETHERNET => ethernet(f, 0, vlans),
        NULL | LOOP => {
            let b = f.get(0..4)?;
            let fam = if linktype == LOOP {
                u32::from_be_bytes([b[0], b[1], b[2], b[3]])
            } else {
                // Host byte order of the capturing machine: the family is small either way.
                let le = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                if le < 0x100 {
                    le
                } else {
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
                }
            };
            match fam {
                2 => Some((4, ETHERTYPE_IPV4)),
                10 | 24 | 28 | 30 => Some((4, ETHERTYPE_IPV6)),
                _ => None,
            }
        }
        RAW | RAW_12 | RAW_14 => match f.first()? >> 4 {
            4 => Some((0, ETHERTYPE_IPV4)),
            6 => Some((0, ETHERTYPE_IPV6)),
            _ => None,
        },
        IPV4 => Some((0, ETHERTYPE_IPV4)),
        IPV6 => Some((0, ETHERTYPE_IPV6)),
        LINUX_SLL => {
            if f.len() < 16 {
                return None;
            }
            cooked_protocol(be16(f, 14), f, 16, vlans)
        }
        LINUX_SLL2 => {
            if f.len() < 20 {
                return None;
            }
            cooked_protocol(be16(f, 0), f, 20, vlans)
        }
        FDDI => llc_snap(f, 13),
        SUNATM => {
            let kind = f.first()? & 0x0f;
            match kind {
                // LANE: a 2-byte LE client id, then an Ethernet frame.
                1 => ethernet(f, 6, vlans),
                _ => llc_snap(f, 4),
            }
        }
        _ => None,
    }
}

fn cooked_protocol(proto: u16, f: &[u8], off: usize, vlans: &mut u8) -> Option<(usize, u16)> {
    match proto {
        // 802.2 LLC frame follows.
        0x0004 => llc_snap(f, off),
        0x8100 | 0x88a8 | 0x9100 => vlan_chain(f, off, proto, vlans),
        p if p >= 0x0600 => Some((off, p)),
        _ => None,
    }
}

#[inline]
fn ethernet(f: &[u8], off: usize, vlans: &mut u8) -> Option<(usize, u16)> {
    if f.len() < off + 14 {
        return None;
    }
    let et = be16(f, off + 12);
    vlan_chain(f, off + 14, et, vlans)
}

#[inline]
fn vlan_chain(f: &[u8], mut off: usize, mut et: u16, vlans: &mut u8) -> Option<(usize, u16)> {
    while matches!(et, 0x8100 | 0x88a8 | 0x9100) {
        if f.len() < off + 4 {
            return None;
        }
        et = be16(f, off + 2);
        off += 4;
        *vlans = vlans.saturating_add(1);
    }
    if et < 0x0600 {
        // An 802.3 length field: LLC (and maybe SNAP) follows.
        return llc_snap(f, off);
    }
    Some((off, et))
}

fn llc_snap(f: &[u8], off: usize) -> Option<(usize, u16)> {
    let llc = f.get(off..off + 3)?;
    if llc == [0xaa, 0xaa, 0x03] {
        if f.len() < off + 8 {
            return None;
        }
        Some((off + 8, be16(f, off + 6)))
    } else {
        None
    }
}

#[inline]
fn decode_ipv4(b: &[u8], base: usize, info: &mut PacketInfo) {
    let Ok(ip) = Ipv4Packet::new_checked(b) else {
        return;
    };
    info.net = Net::Ipv4;
    info.src = IpAddr::V4(Ipv4Addr::from(ip.src()));
    info.dst = IpAddr::V4(Ipv4Addr::from(ip.dst()));
    info.proto = ip.protocol();
    info.ip_len = ip.total_len() as u32;
    info.ip_id = ip.ident() as u32;
    let (offset, more) = (ip.frag_offset(), ip.more_frags());
    info.frag = Frag {
        is_fragment: offset > 0 || more,
        offset,
        more,
    };
    let hl = ip.header_len();
    let l4_len = (ip.total_len() as usize).saturating_sub(hl);
    if offset == 0 {
        decode_transport(
            info.proto,
            b.get(hl..).unwrap_or(&[]),
            base + hl,
            l4_len,
            info,
        );
    }
}

fn decode_ipv6(b: &[u8], base: usize, info: &mut PacketInfo) {
    let Ok(ip) = Ipv6Packet::new_checked(b) else {
        return;
    };
    info.net = Net::Ipv6;
    info.src = IpAddr::V6(Ipv6Addr::from(ip.src()));
    info.dst = IpAddr::V6(Ipv6Addr::from(ip.dst()));
    info.ip_len = 40 + ip.payload_len() as u32;
    let mut nh = ip.next_header();
    let mut off = 40usize;
    let mut remaining = ip.payload_len() as usize;
    // Walk extension headers (bounded: a header is at least 8 bytes).
    for _ in 0..16 {
        let Some(h) = b.get(off..off + 8) else {
            info.proto = nh;
            return;
        };
        let len = match nh {
            0 | 43 | 60 | 135 | 139 | 140 => (h[1] as usize + 1) * 8,
            51 => (h[1] as usize + 2) * 4,
            44 => {
                let fo = u16::from_be_bytes([h[2], h[3]]);
                info.frag = Frag {
                    is_fragment: true,
                    offset: (fo & 0xfff8) as u32,
                    more: fo & 1 != 0,
                };
                info.ip_id = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
                8
            }
            _ => break,
        };
        nh = h[0];
        off += len;
        remaining = remaining.saturating_sub(len);
        if info.frag.is_fragment && info.frag.offset > 0 {
            info.proto = nh;
            return;
        }
    }
    info.proto = nh;
    decode_transport(nh, b.get(off..).unwrap_or(&[]), base + off, remaining, info);
}

#[inline]
fn decode_transport(proto: u8, b: &[u8], base: usize, l4_len: usize, info: &mut PacketInfo) {
    match proto {
        IPPROTO_TCP => {
            if let Ok(t) = TcpSegment::new_checked(b) {
                let hl = t.header_len();
                info.transport = Transport::Tcp(TcpInfo {
                    sport: t.src_port(),
                    dport: t.dst_port(),
                    seq: t.seq(),
                    ack: t.ack(),
                    flags: t.flags(),
                    ts: t.timestamps(),
                });
                info.payload_off = (base + hl) as u32;
                info.payload_len = l4_len.saturating_sub(hl) as u32;
            }
        }
        IPPROTO_UDP => {
            if let Ok(u) = UdpDatagram::new_checked(b) {
                info.transport = Transport::Udp {
                    sport: u.src_port(),
                    dport: u.dst_port(),
                };
                info.payload_off = (base + 8) as u32;
                // A fragmented datagram's length is the UDP field's; otherwise the IP one's.
                let ulen = (u.len() as usize).max(8);
                let len = if info.frag.more {
                    ulen
                } else {
                    ulen.min(l4_len.max(8))
                };
                info.payload_len = (len - 8) as u32;
            }
        }
        1 | 58 => {
            if let (Some(&ty), Some(&code)) = (b.first(), b.get(1)) {
                info.transport = Transport::Icmp { ty, code };
                info.payload_off = (base + 8) as u32;
                info.payload_len = l4_len.saturating_sub(8) as u32;
            }
        }
        _ => {}
    }
}
