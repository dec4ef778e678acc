//! The simulator's frame: a small descriptor the switch carries instead of bytes, with what the
//! applications and captures need. Its bytes are made up only when a capture asks for them: an
//! Ethernet frame with an IPv4 header (checksummed) and a UDP header, the payload zero but for
//! the frame's sequence number; or, for a TCP segment, the IPv4 and TCP headers the sans-IO
//! connection's [`Segment`] stands for (checksums included) and a zero payload, so that tshark
//! reads simulated captures like emulated ones.
//!
//! Like a real frame it carries an IP traffic class (DSCP and ECN, [`SimFrame::tos`]) and can be
//! trimmed to its headers; its bytes then say so as the emulator's would ([`weft_model::net::ip`]).

use weft_model::fabric::Rng;
use weft_model::net::{ETH_HEADER, Ecn, FlowKey, Frame, Mac, TRIMMED_DSCP, Topology, host_mac, ip};
use weft_model::tcp::Segment;
use weft_model::tcp::ipv4::{Ipv4Repr, PROTO_TCP};

/// Bytes of the IPv4 header (no options) in front of a simulated TCP segment.
pub const IP_HEADER: u32 = 20;

/// Bytes of IPv4 and UDP headers in a simulated datagram.
pub const UDP_IP_HEADERS: u32 = 28;

/// The UDP port both ends of a simulated datagram use (its bytes and its 5-tuple).
pub const UDP_PORT: u16 = 5001;

/// One simulated Ethernet frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimFrame {
    /// Sending host (index in the topology).
    pub src: u16,
    /// Receiving host.
    pub dst: u16,
    /// Bytes of the frame, its 14-byte Ethernet header included.
    pub len: u32,
    /// The sender's number for it (per sending application).
    pub seq: u32,
    /// When the application handed it to its host (ns).
    pub born: u64,
    /// A bit was flipped on the way (fault injection): the receiver's checksum drops it.
    pub corrupted: bool,
    /// Bytes of payload of the whole datagram this frame is a fragment of (IP reassembles it
    /// from its fragments): the frame's own payload unless the datagram was cut.
    pub message: u32,
    /// The transport packet it carries: a TCP segment, an NDP or DCQCN packet, or nothing
    /// but a UDP datagram's sequence number. One field for the three, since a frame carries at
    /// most one: the frame is moved at every hop, and three options of them made it 152 bytes.
    carries: Carried,
    /// The IP traffic class byte: DSCP in the upper six bits (its upper three, the priority
    /// class), ECN in the lower two. Zero (best effort, not ECN-capable) unless the sender sets
    /// it.
    pub tos: u8,
    /// A queue cut its payload ([`Frame::trim`]): it occupies the line as its headers alone,
    /// and a receiver that does not know trimming drops it, as its checksum would fail.
    pub trimmed: bool,
}

/// What a [`SimFrame`] carries above IP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carried {
    /// A UDP datagram of the frame's sequence number and zeros.
    Udp,
    /// A TCP segment.
    Tcp(Segment),
    /// An NDP packet, in a UDP datagram.
    Ndp(weft_model::ndp::Packet),
    /// A DCQCN (RoCEv2) packet, in a UDP datagram.
    Dcqcn(weft_model::dcqcn::Packet),
}

impl SimFrame {
    /// A UDP datagram of `ip_len` bytes (IP header included) from host `src` to host `dst`.
    pub fn udp(src: usize, dst: usize, ip_len: u32, seq: u32, born: u64) -> Self {
        let message = ip_len.saturating_sub(UDP_IP_HEADERS);
        Self::fragment(src, dst, ip_len, seq, born, u64::from(message))
    }

    /// A frame of `ip_len` bytes (IP header included) of a UDP datagram of `message` bytes of
    /// payload from host `src` to host `dst`.
    pub fn fragment(
        src: usize,
        dst: usize,
        ip_len: u32,
        seq: u32,
        born: u64,
        message: u64,
    ) -> Self {
        SimFrame {
            src: src as u16,
            dst: dst as u16,
            len: ip_len + ETH_HEADER as u32,
            seq,
            born,
            corrupted: false,
            message: message.min(u64::from(u32::MAX)) as u32,
            carries: Carried::Udp,
            tos: 0,
            trimmed: false,
        }
    }

    /// A TCP segment from host `src` to host `dst`, in an IPv4 datagram of 20 + the segment's
    /// header and payload bytes.
    pub fn tcp(src: usize, dst: usize, seg: Segment, born: u64) -> Self {
        SimFrame {
            src: src as u16,
            dst: dst as u16,
            len: ETH_HEADER as u32 + IP_HEADER + seg.header_len() as u32 + seg.len,
            seq: seg.seq.0,
            born,
            corrupted: false,
            message: seg.len,
            carries: Carried::Tcp(seg),
            tos: 0,
            trimmed: false,
        }
    }

    /// An NDP packet from host `src` to host `dst` in a UDP datagram (its NDP header counted
    /// as UDP payload); control packets in NDP's priority class
    /// ([`weft_model::ndp::CONTROL_DSCP`]), and its ports the flow's, so that ECMP keeps a
    /// flow on one path.
    pub fn ndp(src: usize, dst: usize, p: weft_model::ndp::Packet, born: u64) -> Self {
        let ip_len = UDP_IP_HEADERS + p.len();
        let mut f = Self::udp(src, dst, ip_len, p.flow, born);
        f.carries = Carried::Ndp(p);
        if p.is_empty() {
            f = f.with_dscp(weft_model::ndp::CONTROL_DSCP);
        }
        f
    }

    /// A DCQCN packet from host `src` to host `dst` in a UDP datagram (RoCEv2's header counted
    /// as UDP payload): data ECN-capable in the lossless class
    /// ([`weft_model::dcqcn::DATA_DSCP`]), control packets in the priority class
    /// ([`weft_model::dcqcn::CONTROL_DSCP`]); its ports the flow's, so that ECMP keeps a flow
    /// on one path.
    pub fn dcqcn(src: usize, dst: usize, p: weft_model::dcqcn::Packet, born: u64) -> Self {
        let ip_len = UDP_IP_HEADERS + p.len();
        let mut f = Self::udp(src, dst, ip_len, p.flow, born);
        f.carries = Carried::Dcqcn(p);
        if p.is_empty() {
            f.with_dscp(weft_model::dcqcn::CONTROL_DSCP)
        } else {
            f.with_dscp(weft_model::dcqcn::DATA_DSCP)
                .with_ecn(Ecn::Ect0)
        }
    }

    /// The TCP segment it carries (`None`: a UDP datagram).
    pub fn segment(&self) -> Option<&Segment> {
        match &self.carries {
            Carried::Tcp(seg) => Some(seg),
            _ => None,
        }
    }

    /// The NDP packet it carries, in a UDP datagram (`None`: not NDP).
    pub fn ndp_packet(&self) -> Option<weft_model::ndp::Packet> {
        match self.carries {
            Carried::Ndp(p) => Some(p),
            _ => None,
        }
    }

    /// The DCQCN (RoCEv2) packet it carries, in a UDP datagram (`None`: not DCQCN).
    pub fn dcqcn_packet(&self) -> Option<weft_model::dcqcn::Packet> {
        match self.carries {
            Carried::Dcqcn(p) => Some(p),
            _ => None,
        }
    }

    /// The frame with its ECN field set to `ecn` (a sender that negotiated ECN sends ECT(0)).
    pub fn with_ecn(mut self, ecn: Ecn) -> Self {
        self.tos = (self.tos & !3) | ecn as u8;
        self
    }

    /// The frame with DSCP `dscp` (0..=63; its upper three bits are the priority class).
    pub fn with_dscp(mut self, dscp: u8) -> Self {
        self.tos = (dscp << 2) | (self.tos & 3);
        self
    }

    /// True if a receiver's checksum accepts it: neither damaged on the line nor trimmed (a
    /// trimmed frame is only of use to a transport that reads trimmed headers).
    pub fn checksum_ok(&self) -> bool {
        !self.corrupted && !self.trimmed
    }

    /// Bytes of Ethernet, IP and transport headers: what is left of it once trimmed.
    pub fn header_len(&self) -> u32 {
        let transport = match &self.carries {
            Carried::Tcp(seg) => seg.header_len() as u32,
            Carried::Ndp(_) => UDP_IP_HEADERS - IP_HEADER + weft_model::ndp::HEADER_BYTES,
            Carried::Dcqcn(_) => UDP_IP_HEADERS - IP_HEADER + weft_model::dcqcn::HEADER_BYTES,
            Carried::Udp => UDP_IP_HEADERS - IP_HEADER,
        };
        (ETH_HEADER as u32 + IP_HEADER + transport).min(self.len)
    }

    /// Bytes of UDP or TCP payload it carries (none once trimmed).
    pub fn payload(&self) -> u32 {
        if self.trimmed {
            return 0;
        }
        match self.segment() {
            Some(seg) => seg.len,
            None => self.len.saturating_sub(ETH_HEADER as u32 + UDP_IP_HEADERS),
        }
    }

    /// Appends the IPv4 datagram of a TCP segment: headers as the connection sent them, a zero
    /// payload; a corrupted frame has its last byte flipped, so the TCP checksum fails.
    fn write_tcp(&self, seg: &Segment, out: &mut Vec<u8>) {
        let src = Topology::addr_of_index(self.src as usize).octets();
        let dst = Topology::addr_of_index(self.dst as usize).octets();
        let tcp_len = seg.header_len() + seg.len as usize;
        let ipv4 = Ipv4Repr {
            src,
            dst,
            protocol: PROTO_TCP,
            ttl: 64,
            ident: self.seq as u16,
            dont_fragment: true,
            payload_len: tcp_len,
        };
        let start = out.len();
        out.resize(start + IP_HEADER as usize + tcp_len, 0);
        let body = &mut out[start..];
        // Both emits fail only on lengths a connection never produces (over 64 KiB); such a
        // frame is then written with zero headers rather than not at all.
        let _ = ipv4.emit(body);
        body[1] = self.tos;
        // The checksum again, over the traffic class the representation does not carry.
        body[10..12].fill(0);
        let sum = checksum(&body[..IP_HEADER as usize]);
        body[10..12].copy_from_slice(&sum.to_be_bytes());
        let _ = seg.emit_header(0, (src, dst), &mut body[IP_HEADER as usize..]);
        if self.corrupted
            && let Some(b) = out.last_mut()
        {
            *b ^= 0xff;
        }
    }
}

impl Frame for SimFrame {
    fn frame_len(&self) -> usize {
        if self.trimmed {
            self.header_len() as usize
        } else {
            self.len as usize
        }
    }
    fn dst(&self) -> Mac {
        host_mac(self.dst as usize)
    }
    fn src(&self) -> Mac {
        host_mac(self.src as usize)
    }
    fn corrupt(&mut self, _rng: &mut Rng) {
        self.corrupted = true;
    }
    /// The bytes of the whole frame; a trimmed one is written whole and then cut as a trimming
    /// queue cuts real bytes.
    fn write_bytes(&self, out: &mut Vec<u8>) {
        if self.trimmed {
            let mut whole = Vec::with_capacity(self.len as usize);
            SimFrame {
                trimmed: false,
                ..*self
            }
            .write_bytes(&mut whole);
            ip::cut_to_headers(&mut whole);
            out.extend_from_slice(&whole);
            return;
        }
        let start = out.len();
        out.extend_from_slice(&self.dst());
        out.extend_from_slice(&self.src());
        out.extend_from_slice(&0x0800u16.to_be_bytes());
        if let Some(seg) = self.segment() {
            return self.write_tcp(seg, out);
        }
        let ip_len = self
            .len
            .saturating_sub(ETH_HEADER as u32)
            .max(UDP_IP_HEADERS) as u16;
        let src = Topology::addr_of_index(self.src as usize).octets();
        let dst = Topology::addr_of_index(self.dst as usize).octets();
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[1] = self.tos;
        ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
        ip[4..6].copy_from_slice(&(self.seq as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        let sum = checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        out.extend_from_slice(&ip);
        let udp_len = ip_len - 20;
        out.extend_from_slice(&UDP_PORT.to_be_bytes());
        out.extend_from_slice(&UDP_PORT.to_be_bytes());
        out.extend_from_slice(&udp_len.to_be_bytes());
        // No UDP checksum (allowed over IPv4); a corrupted frame says so in its payload.
        out.extend_from_slice(&0u16.to_be_bytes());
        let payload = udp_len.saturating_sub(8) as usize;
        let body = out.len();
        out.resize(body + payload, 0);
        let seq = self.seq.to_be_bytes();
        let n = payload.min(4);
        out[body..body + n].copy_from_slice(&seq[..n]);
        if self.corrupted && payload > 4 {
            out[body + 4] = 0xff;
        }
        debug_assert_eq!(out.len() - start, ETH_HEADER + ip_len as usize);
    }
    fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.tos)
    }
    fn mark_ce(&mut self) -> bool {
        if !self.ecn().is_capable() {
            return false;
        }
        self.tos |= Ecn::Ce as u8;
        true
    }
    fn priority(&self) -> u8 {
        self.tos >> 5
    }
    fn flow_key(&self) -> FlowKey {
        let addr = |h: u16| u32::from(Topology::addr_of_index(h as usize));
        let flow = match self.carries {
            Carried::Ndp(p) => Some(p.flow),
            Carried::Dcqcn(p) => Some(p.flow),
            _ => None,
        };
        let (proto, sport, dport) = match (self.segment(), flow) {
            (Some(seg), _) => (PROTO_TCP, seg.src_port, seg.dst_port),
            (None, Some(f)) => (17, 40_000u16.wrapping_add(f as u16), UDP_PORT),
            (None, None) => (17, UDP_PORT, UDP_PORT),
        };
        FlowKey {
            src: addr(self.src),
            dst: addr(self.dst),
            proto,
            sport,
            dport,
        }
    }
    fn is_trimmed(&self) -> bool {
        self.trimmed
    }
    fn trim(&mut self) -> bool {
        if self.trimmed {
            return false;
        }
        self.trimmed = true;
        self.tos = (TRIMMED_DSCP << 2) | (self.tos & 3);
        true
    }
}

/// The Internet checksum of `bytes` (RFC 1071).
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_carries_one_transport_packet_in_the_room_of_a_segment() {
        // The frame is moved at every hop: it holds the largest of the three packets it may
        // carry, not the three side by side (152 bytes when they were three options).
        // (76 bytes of segment and its tag, 27 of the frame's own fields, padded to 8.)
        assert!(std::mem::size_of::<SimFrame>() <= std::mem::size_of::<Segment>() + 36);
        let ndp = weft_model::ndp::Packet {
            flow: 3,
            kind: weft_model::ndp::Kind::Ack { seq: 9 },
        };
        let f = SimFrame::ndp(1, 2, ndp, 0);
        assert_eq!((f.ndp_packet(), f.dcqcn_packet()), (Some(ndp), None));
        assert!(f.segment().is_none());
        assert_eq!(SimFrame::udp(1, 2, 100, 0, 0).ndp_packet(), None);
    }

    #[test]
    fn bytes_are_a_valid_udp_datagram_of_the_frame_length() {
        let f = SimFrame::udp(1, 2, 1500, 7, 0);
        let mut b = Vec::new();
        f.write_bytes(&mut b);
        assert_eq!(b.len(), 1514);
        assert_eq!(&b[0..6], &host_mac(2));
        assert_eq!(&b[12..14], &[0x08, 0x00]);
        // The IP header checksums to zero.
        assert_eq!(checksum(&b[14..34]), 0);
        assert_eq!(u16::from_be_bytes([b[16], b[17]]), 1500);
        assert_eq!(u16::from_be_bytes([b[38], b[39]]), 1480);
        assert_eq!(&b[42..46], &7u32.to_be_bytes());
        assert_eq!(f.payload(), 1472);
    }

    #[test]
    fn a_tcp_segment_is_written_as_the_ipv4_and_tcp_headers_it_stands_for() {
        use weft_model::tcp::{Flags, SeqNum};
        let seg = Segment {
            src_port: 40000,
            dst_port: 5001,
            seq: SeqNum(1000),
            ack: SeqNum(7),
            flags: Flags(Flags::ACK.0 | Flags::PSH.0),
            window: 35600,
            len: 536,
            ..Segment::default()
        };
        let f = SimFrame::tcp(0, 1, seg, 0);
        assert_eq!(f.len, 14 + 20 + 20 + 536);
        assert_eq!(f.payload(), 536);
        let mut b = Vec::new();
        f.write_bytes(&mut b);
        assert_eq!(b.len(), f.len as usize);
        let (ip, tcp) = Ipv4Repr::parse(&b[14..]).unwrap();
        assert_eq!(ip.protocol, PROTO_TCP);
        let (back, payload) = Segment::parse(tcp, Some((ip.src, ip.dst))).unwrap();
        assert_eq!(back, seg);
        assert_eq!(payload.len(), 536);
        // A corrupted frame fails the TCP checksum.
        let mut bad = f;
        bad.corrupted = true;
        let mut b = Vec::new();
        bad.write_bytes(&mut b);
        let (ip, tcp) = Ipv4Repr::parse(&b[14..]).unwrap();
        assert!(Segment::parse(tcp, Some((ip.src, ip.dst))).is_err());
    }

    fn segment(len: u32) -> Segment {
        use weft_model::tcp::{Flags, SeqNum};
        Segment {
            src_port: 40000,
            dst_port: 5001,
            seq: SeqNum(1000),
            flags: Flags::ACK,
            window: 100,
            len,
            ..Segment::default()
        }
    }

    #[test]
    fn the_traffic_class_is_in_the_bytes_and_marks_like_real_bytes() {
        let f = SimFrame::tcp(0, 1, segment(100), 0)
            .with_dscp(26)
            .with_ecn(Ecn::Ect0);
        assert_eq!((f.priority(), f.ecn()), (3, Ecn::Ect0));
        let mut sim = f;
        let mut real = Vec::new();
        f.write_bytes(&mut real);
        assert!(Ipv4Repr::parse(&real[14..]).is_ok(), "checksum holds");
        assert_eq!((real.priority(), real.ecn()), (3, Ecn::Ect0));
        assert_eq!(real.flow_key(), sim.flow_key());
        assert!(sim.mark_ce() && real.mark_ce());
        let mut marked = Vec::new();
        sim.write_bytes(&mut marked);
        assert_eq!(marked, real);
        // Not ECN-capable: not marked.
        let mut plain = SimFrame::udp(0, 1, 1000, 1, 0);
        assert!(!plain.mark_ce());
        assert_eq!(plain.ecn(), Ecn::NotEct);
        let mut b = Vec::new();
        plain.write_bytes(&mut b);
        assert_eq!(b.flow_key(), plain.flow_key());
    }

    #[test]
    fn a_trimmed_frame_is_its_headers_like_trimmed_real_bytes() {
        for f in [
            SimFrame::tcp(2, 3, segment(1448), 0).with_ecn(Ecn::Ect0),
            SimFrame::udp(2, 3, 1500, 9, 0),
        ] {
            let mut real = Vec::new();
            f.write_bytes(&mut real);
            let mut sim = f;
            assert!(sim.trim() && real.trim());
            assert!(!sim.trim(), "trimmed twice");
            assert!(sim.is_trimmed() && !sim.checksum_ok());
            assert_eq!(sim.payload(), 0);
            assert_eq!(sim.frame_len(), real.len());
            let mut b = Vec::new();
            sim.write_bytes(&mut b);
            assert_eq!(b, real);
            assert_eq!(sim.ecn(), f.ecn());
        }
        assert_eq!(SimFrame::tcp(0, 1, segment(1448), 0).header_len(), 14 + 40);
    }
}
