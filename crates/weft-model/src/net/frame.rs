//! What the switch carries: Ethernet frames, as real bytes (the emulator) or as small
//! descriptors (the simulator). The switch needs a frame's length and its MAC addresses; fault
//! injection needs to corrupt it; captures need its bytes. Today's datacenter fabrics also read
//! and rewrite a few IP header fields: the ECN field (queues mark Congestion Experienced), the
//! priority class (PFC pauses one class at a time), the 5-tuple (ECMP hashes it) and the
//! payload (a trimming queue cuts it off and forwards the header).
//!
//! The priority class is the DSCP's class selector (its upper three bits: DSCP 26, RoCE's
//! usual, is class 3), not a VLAN tag's PCP. The emulated hosts send untagged frames and can set
//! their DSCP per socket (`IP_TOS`), a tag would need VLAN interfaces in every namespace, and
//! DSCP-based PFC ("trust DSCP") is what routed (layer 3) RoCE fabrics use, since a VLAN tag
//! does not survive a router hop.

use serde::Serialize;

use super::ip;
use crate::rng::Rng;

/// An Ethernet MAC address.
pub type Mac = [u8; 6];

/// Bytes of Ethernet header on the frames the switch carries (no VLAN tag, no FCS).
pub const ETH_HEADER: usize = 14;

/// The broadcast address.
pub const BROADCAST: Mac = [0xff; 6];

/// The MAC address of host `i` of a topology (locally administered, unique in a run).
pub const fn host_mac(i: usize) -> Mac {
    [0x02, 0x77, 0x65, 0x66, (i >> 8) as u8, i as u8]
}

/// The host index of a MAC made by [`host_mac`], if it is one.
pub const fn host_of_mac(m: &Mac) -> Option<usize> {
    if m[0] == 0x02 && m[1] == 0x77 && m[2] == 0x65 && m[3] == 0x66 {
        Some(((m[4] as usize) << 8) | m[5] as usize)
    } else {
        None
    }
}

/// True for group (broadcast and multicast) addresses.
pub const fn is_group(m: &Mac) -> bool {
    m[0] & 1 == 1
}

/// The DSCP a trimming queue writes into the frames it cuts, so that receivers (and captures)
/// tell a trimmed header from a whole packet, as Ultra Ethernet and SONiC's trimming do (the
/// value is configurable there; no standard one exists). Its class selector, 7, is the highest
/// priority class.
pub const TRIMMED_DSCP: u8 = 63;

/// The ECN field of the IP header (RFC 3168), its two low-order bits of the traffic class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable (`00`): a congested queue drops it.
    #[default]
    NotEct = 0,
    /// ECN-capable, ECT(1) (`01`; L4S uses it).
    Ect1 = 1,
    /// ECN-capable, ECT(0) (`10`; what DCTCP, DCQCN and Linux with ECN send).
    Ect0 = 2,
    /// Congestion Experienced (`11`): a queue marked it.
    Ce = 3,
}

impl Ecn {
    /// The codepoint in the two low-order bits of a traffic class byte.
    pub const fn from_bits(tc: u8) -> Self {
        match tc & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// True for ECT(0), ECT(1) and CE: a queue may mark the frame instead of dropping it.
    pub const fn is_capable(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }
}

/// The 5-tuple that names a frame's flow for multipath hashing: IPv4 addresses (IPv6 ones
/// folded to 32 bits), the IP protocol and the TCP or UDP ports (zero for other protocols). A
/// frame that is not IP is keyed by its MAC addresses, protocol 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// Source address.
    pub src: u32,
    /// Destination address.
    pub dst: u32,
    /// IP protocol (6 TCP, 17 UDP).
    pub proto: u8,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
}

/// An Ethernet frame as the switch sees it.
pub trait Frame: Clone {
    /// Bytes of the frame, its 14-byte Ethernet header included (no FCS).
    fn frame_len(&self) -> usize;
    /// Destination MAC address.
    fn dst(&self) -> Mac;
    /// Source MAC address.
    fn src(&self) -> Mac;
    /// Damages the frame as a bit error on the line would (fault injection).
    fn corrupt(&mut self, rng: &mut Rng);
    /// Appends the frame's bytes to `out` (captures).
    fn write_bytes(&self, out: &mut Vec<u8>);
    /// The ECN field of its IP header ([`Ecn::NotEct`] if it is not IP).
    fn ecn(&self) -> Ecn;
    /// Marks it Congestion Experienced (a congested queue does) if it is ECN-capable: true if it
    /// now carries CE, false if it is not ECN-capable (the queue then drops it, RFC 3168) or not
    /// IP.
    fn mark_ce(&mut self) -> bool;
    /// Its priority class, 0..=7, for per-priority flow control: the class selector of its
    /// DSCP (the DSCP's upper three bits); 0 if it is not IP.
    fn priority(&self) -> u8;
    /// Its flow's 5-tuple (multipath hashing).
    fn flow_key(&self) -> FlowKey;
    /// True once a queue has trimmed it ([`Frame::trim`]).
    fn is_trimmed(&self) -> bool;
    /// Cuts its payload, leaving the Ethernet, IP and transport headers, and marks it trimmed
    /// ([`TRIMMED_DSCP`]): what a trimming queue forwards instead of dropping it. False (and
    /// unchanged) if it cannot be trimmed: not IP, or trimmed already.
    fn trim(&mut self) -> bool;
}

impl Frame for Vec<u8> {
    fn frame_len(&self) -> usize {
        self.len()
    }
    fn dst(&self) -> Mac {
        mac_at(self, 0)
    }
    fn src(&self) -> Mac {
        mac_at(self, 6)
    }
    /// Flips one bit after the Ethernet header, so that the IP or transport checksum catches it
    /// (the emulated links carry no FCS); a header-only frame gets a bit flipped anywhere.
    fn corrupt(&mut self, rng: &mut Rng) {
        if self.is_empty() {
            return;
        }
        let from = if self.len() > ETH_HEADER {
            ETH_HEADER
        } else {
            0
        };
        let at = from + rng.below((self.len() - from) as u64) as usize;
        let bit = rng.below(8) as u32;
        if let Some(b) = self.get_mut(at) {
            *b ^= 1 << bit;
        }
    }
    fn write_bytes(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
    fn ecn(&self) -> Ecn {
        ip::ecn(self)
    }
    fn mark_ce(&mut self) -> bool {
        ip::mark_ce(self)
    }
    fn priority(&self) -> u8 {
        ip::traffic_class(self).map_or(0, |tc| tc >> 5)
    }
    fn flow_key(&self) -> FlowKey {
        ip::flow_key(self)
    }
    fn is_trimmed(&self) -> bool {
        ip::is_trimmed(self)
    }
    fn trim(&mut self) -> bool {
        ip::trim(self)
    }
}

fn mac_at(f: &[u8], at: usize) -> Mac {
    let mut m = [0u8; 6];
    if let Some(s) = f.get(at..at + 6) {
        m.copy_from_slice(s);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_macs_round_trip_and_are_unicast() {
        for i in [0, 1, 255, 256, 1000] {
            let m = host_mac(i);
            assert!(!is_group(&m));
            assert_eq!(host_of_mac(&m), Some(i));
        }
        assert!(is_group(&BROADCAST));
        assert_eq!(host_of_mac(&BROADCAST), None);
    }

    #[test]
    fn corruption_flips_one_bit_past_the_header() {
        let f = vec![0u8; 100];
        let mut g = f.clone();
        g.corrupt(&mut Rng::new(3));
        let diff: Vec<usize> = (0..100).filter(|&i| f[i] != g[i]).collect();
        assert_eq!(diff.len(), 1);
        assert!(diff[0] >= ETH_HEADER);
        assert_eq!((f[diff[0]] ^ g[diff[0]]).count_ones(), 1);
    }

    #[test]
    fn real_frames_give_their_priority_from_the_dscp() {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        // DSCP 26 (AF31, RoCE's usual), ECT(0).
        f[15] = (26 << 2) | Ecn::Ect0 as u8;
        assert_eq!(f.priority(), 3);
        assert_eq!(f.ecn(), Ecn::Ect0);
        assert!(f.mark_ce());
        assert_eq!((f.priority(), f.ecn()), (3, Ecn::Ce));
        assert!(f.trim());
        assert!(f.is_trimmed());
        assert_eq!(f.priority(), TRIMMED_DSCP >> 3);
        assert_eq!(vec![0u8; 60].priority(), 0);
    }

    #[test]
    fn ecn_codepoints_round_trip() {
        for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            assert_eq!(Ecn::from_bits(0xfc | e as u8), e);
        }
        assert!(!Ecn::NotEct.is_capable());
        assert!(Ecn::Ect1.is_capable() && Ecn::Ce.is_capable());
    }
}
