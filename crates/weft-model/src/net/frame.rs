//! What the switch carries: Ethernet frames, as real bytes (the emulator) or as small
//! descriptors (the simulator). The switch needs a frame's length and its MAC addresses; fault
//! injection needs to corrupt it; captures need its bytes.

use crate::fabric::Rng;

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
}
