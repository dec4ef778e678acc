//! The few IP header fields a datacenter switch reads and rewrites in real Ethernet frames (the
//! emulator's): the traffic class (DSCP and ECN), the flow's 5-tuple, and the payload cut off by
//! trimming. IPv4 and IPv6 without VLAN tags, as the emulated hosts send them; any other frame
//! is left alone. IPv4's header checksum is updated incrementally (RFC 1624), never recomputed,
//! so that a header damaged on the line stays damaged.

use super::frame::{ETH_HEADER, Ecn, FlowKey, TRIMMED_DSCP};

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const IPV6_HEADER: usize = 40;

/// Where the IP header of a frame is and what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ip {
    /// IPv4 with a header of this many bytes (options included).
    V4(usize),
    /// IPv6 (fixed 40-byte header; extension headers count as payload).
    V6,
}

/// The IP header of an Ethernet frame, if the frame carries one whole.
fn ip(f: &[u8]) -> Option<Ip> {
    let ethertype = u16::from_be_bytes([*f.get(12)?, *f.get(13)?]);
    let first = *f.get(ETH_HEADER)?;
    match ethertype {
        ETHERTYPE_IPV4 if first >> 4 == 4 => {
            let ihl = usize::from(first & 0x0f) * 4;
            (ihl >= 20 && f.len() >= ETH_HEADER + ihl).then_some(Ip::V4(ihl))
        }
        ETHERTYPE_IPV6 if first >> 4 == 6 && f.len() >= ETH_HEADER + IPV6_HEADER => Some(Ip::V6),
        _ => None,
    }
}

/// The traffic class byte (IPv4's TOS, IPv6's traffic class): DSCP in the upper six bits, ECN in
/// the lower two; `None` if the frame is not IP.
pub fn traffic_class(f: &[u8]) -> Option<u8> {
    let h = ETH_HEADER;
    match ip(f)? {
        Ip::V4(_) => Some(f[h + 1]),
        Ip::V6 => Some((f[h] << 4) | (f[h + 1] >> 4)),
    }
}

/// Rewrites the traffic class byte (IPv4's checksum updated); false if the frame is not IP.
pub fn set_traffic_class(f: &mut [u8], tc: u8) -> bool {
    let h = ETH_HEADER;
    match ip(f) {
        Some(Ip::V4(_)) => {
            let old = u16::from_be_bytes([f[h], f[h + 1]]);
            f[h + 1] = tc;
            let new = u16::from_be_bytes([f[h], f[h + 1]]);
            fix_checksum(f, old, new);
            true
        }
        Some(Ip::V6) => {
            f[h] = (f[h] & 0xf0) | (tc >> 4);
            f[h + 1] = (f[h + 1] & 0x0f) | (tc << 4);
            true
        }
        None => false,
    }
}

/// One's-complement sum of `data` as big-endian 16-bit words, added to `initial` (a partial sum
/// such as a pseudo-header's), without the final complement.
pub fn sum16(data: &[u8], initial: u32) -> u32 {
    let mut sum = initial as u64;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u32
}

/// The Internet checksum of `data` (RFC 1071) starting from the partial sum `initial`:
/// zero when computed over data that includes a correct checksum.
pub fn checksum(data: &[u8], initial: u32) -> u16 {
    !(sum16(data, initial) as u16)
}

/// RFC 1624's incremental update of the IPv4 header checksum (at bytes 10-11 of the header)
/// after one 16-bit word changed from `old` to `new`: HC' = ~(~HC + ~m + m').
fn fix_checksum(f: &mut [u8], old: u16, new: u16) {
    let at = ETH_HEADER + 10;
    let hc = u16::from_be_bytes([f[at], f[at + 1]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    f[at..at + 2].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// The ECN field of the frame's IP header ([`Ecn::NotEct`] if it is not IP).
pub fn ecn(f: &[u8]) -> Ecn {
    traffic_class(f).map_or(Ecn::NotEct, Ecn::from_bits)
}

/// Marks the frame Congestion Experienced if it is ECN-capable (ECT(0), ECT(1) or already CE):
/// true if it now carries CE, false if it is not ECN-capable (RFC 3168: the queue drops it
/// instead) or not IP.
pub fn mark_ce(f: &mut [u8]) -> bool {
    match traffic_class(f) {
        Some(tc) if Ecn::from_bits(tc) == Ecn::Ce => true,
        Some(tc) if Ecn::from_bits(tc) != Ecn::NotEct => set_traffic_class(f, tc | Ecn::Ce as u8),
        _ => false,
    }
}

/// The frame's 5-tuple (addresses folded to 32 bits for IPv6); a frame that is not IP is keyed
/// by its MAC addresses, protocol 0.
pub fn flow_key(f: &[u8]) -> FlowKey {
    let h = ETH_HEADER;
    let (src, dst, proto, l4) = match ip(f) {
        Some(Ip::V4(ihl)) => (
            be32(f, h + 12),
            be32(f, h + 16),
            f[h + 9],
            // Only the first fragment carries the ports.
            (u16::from_be_bytes([f[h + 6], f[h + 7]]) & 0x1fff == 0).then_some(h + ihl),
        ),
        Some(Ip::V6) => (
            fold(&f[h + 8..h + 24]),
            fold(&f[h + 24..h + 40]),
            f[h + 6],
            Some(h + IPV6_HEADER),
        ),
        None => {
            return FlowKey {
                src: fold(f.get(6..12).unwrap_or(&[])),
                dst: fold(f.get(0..6).unwrap_or(&[])),
                ..FlowKey::default()
            };
        }
    };
    let ports = l4
        .filter(|_| proto == PROTO_TCP || proto == PROTO_UDP)
        .and_then(|at| f.get(at..at + 4));
    let (sport, dport) = ports.map_or((0, 0), |p| {
        (
            u16::from_be_bytes([p[0], p[1]]),
            u16::from_be_bytes([p[2], p[3]]),
        )
    });
    FlowKey {
        src,
        dst,
        proto,
        sport,
        dport,
    }
}

fn be32(f: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]])
}

/// Folds bytes into 32 bits (XOR of big-endian words, a short tail zero-padded).
fn fold(b: &[u8]) -> u32 {
    b.chunks(4).fold(0, |acc, c| {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        acc ^ u32::from_be_bytes(w)
    })
}

/// Bytes of the frame that trimming keeps: Ethernet and IP headers and the TCP header (its
/// data offset) or the UDP header; for other protocols the IP header alone. `None` if the frame
/// is not IP or its transport header is cut already.
pub fn header_len(f: &[u8]) -> Option<usize> {
    let h = ETH_HEADER;
    let (ihl, proto) = match ip(f)? {
        Ip::V4(ihl) => (ihl, f[h + 9]),
        Ip::V6 => (IPV6_HEADER, f[h + 6]),
    };
    let l4 = h + ihl;
    let transport = match proto {
        PROTO_TCP => usize::from(*f.get(l4 + 12)? >> 4) * 4,
        PROTO_UDP => 8,
        _ => 0,
    };
    (f.len() >= l4 + transport).then_some(l4 + transport)
}

/// True if the frame has been trimmed: its DSCP is [`TRIMMED_DSCP`], as a trimming switch
/// leaves it.
pub fn is_trimmed(f: &[u8]) -> bool {
    traffic_class(f).is_some_and(|tc| tc >> 2 == TRIMMED_DSCP)
}

/// Cuts the frame to its headers ([`header_len`]) and says so in its DSCP ([`TRIMMED_DSCP`],
/// as Ultra Ethernet and SONiC's trimming do); the IP length is set to what is left and IPv4's
/// checksum updated. The transport header is left as it was, so a receiver that does not know
/// trimming drops the frame (TCP's checksum fails; UDP's length exceeds the datagram) while
/// one that does reads which packet it was. False if the frame is not IP or already trimmed.
pub fn trim(f: &mut Vec<u8>) -> bool {
    if header_len(f).is_none() || is_trimmed(f) {
        return false;
    }
    if let Some(tc) = traffic_class(f) {
        set_traffic_class(f, (TRIMMED_DSCP << 2) | (tc & 3));
    }
    cut_to_headers(f)
}

/// Cuts the frame to its headers ([`header_len`]), its IP length set to what is left (IPv4's
/// checksum updated), its DSCP as it was: [`trim`] without the mark. False if the frame is not
/// IP or its transport header is cut already.
pub fn cut_to_headers(f: &mut Vec<u8>) -> bool {
    let Some(keep) = header_len(f) else {
        return false;
    };
    let h = ETH_HEADER;
    match ip(f) {
        Some(Ip::V4(_)) => {
            let old = u16::from_be_bytes([f[h + 2], f[h + 3]]);
            let new = (keep - h) as u16;
            f[h + 2..h + 4].copy_from_slice(&new.to_be_bytes());
            fix_checksum(f, old, new);
        }
        Some(Ip::V6) => {
            let payload = (keep - h - IPV6_HEADER) as u16;
            f[h + 4..h + 6].copy_from_slice(&payload.to_be_bytes());
        }
        None => return false,
    }
    f.truncate(keep);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
    #[test]
    fn rfc1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(sum16(&data, 0), 0xddf2);
        assert_eq!(checksum(&data, 0), !0xddf2);
    }

    /// An Ethernet frame with an IPv4 header (checksummed) of traffic class `tc` and a TCP
    /// header of 32 bytes (12 of options) before `payload` bytes.
    fn v4_tcp(tc: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; ETH_HEADER + 20 + 32 + payload];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let ip = &mut f[ETH_HEADER..ETH_HEADER + 20];
        ip[0] = 0x45;
        ip[1] = tc;
        ip[2..4].copy_from_slice(&((20 + 32 + payload) as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = PROTO_TCP;
        ip[12..16].copy_from_slice(&[10, 77, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 77, 0, 2]);
        let sum = checksum(ip, 0);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let tcp = &mut f[ETH_HEADER + 20..];
        tcp[0..2].copy_from_slice(&40000u16.to_be_bytes());
        tcp[2..4].copy_from_slice(&5001u16.to_be_bytes());
        tcp[12] = 8 << 4;
        f
    }

    fn v6_udp(tc: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; ETH_HEADER + 40 + 8 + payload];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        let ip = &mut f[ETH_HEADER..];
        ip[0] = 0x60 | (tc >> 4);
        ip[1] = (tc << 4) | 0x0a;
        ip[4..6].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
        ip[6] = PROTO_UDP;
        ip[23] = 1;
        ip[39] = 2;
        ip[40..42].copy_from_slice(&7u16.to_be_bytes());
        ip[42..44].copy_from_slice(&9u16.to_be_bytes());
        ip[44..46].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
        f
    }

    fn ip_checksum_ok(f: &[u8]) -> bool {
        checksum(&f[ETH_HEADER..ETH_HEADER + 20], 0) == 0
    }

    #[test]
    fn ce_marks_ect_frames_and_keeps_the_ipv4_checksum_valid() {
        for ect in [Ecn::Ect0, Ecn::Ect1] {
            let mut f = v4_tcp((26 << 2) | ect as u8, 100);
            assert_eq!(ecn(&f), ect);
            assert!(mark_ce(&mut f));
            assert_eq!(ecn(&f), Ecn::Ce);
            // DSCP untouched, checksum still valid.
            assert_eq!(traffic_class(&f).map(|t| t >> 2), Some(26));
            assert!(ip_checksum_ok(&f));
            // Marking again is a no-op that still reports CE.
            let before = f.clone();
            assert!(mark_ce(&mut f));
            assert_eq!(f, before);
        }
        let mut not_ect = v4_tcp(26 << 2, 100);
        let before = not_ect.clone();
        assert!(!mark_ce(&mut not_ect));
        assert_eq!(not_ect, before);
        let mut v6 = v6_udp(Ecn::Ect0 as u8, 10);
        assert!(mark_ce(&mut v6));
        assert_eq!(ecn(&v6), Ecn::Ce);
        // The flow label's low bits next to the traffic class are untouched.
        assert_eq!(v6[ETH_HEADER + 1] & 0x0f, 0x0a);
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert!(!mark_ce(&mut arp));
        assert_eq!(ecn(&arp), Ecn::NotEct);
    }

    #[test]
    fn a_damaged_header_stays_damaged_when_marked() {
        let mut f = v4_tcp(Ecn::Ect0 as u8, 0);
        f[ETH_HEADER + 8] ^= 0x10; // the TTL, damaged on the line
        assert!(!ip_checksum_ok(&f));
        assert!(mark_ce(&mut f));
        assert!(!ip_checksum_ok(&f));
    }

    #[test]
    fn five_tuples_of_tcp_udp_and_other_frames() {
        let k = flow_key(&v4_tcp(0, 10));
        assert_eq!(
            k,
            FlowKey {
                src: u32::from_be_bytes([10, 77, 0, 1]),
                dst: u32::from_be_bytes([10, 77, 0, 2]),
                proto: PROTO_TCP,
                sport: 40000,
                dport: 5001,
            }
        );
        let k6 = flow_key(&v6_udp(0, 10));
        assert_eq!(
            (k6.src, k6.dst, k6.proto, k6.sport, k6.dport),
            (1, 2, 17, 7, 9)
        );
        // A later fragment carries no ports.
        let mut frag = v4_tcp(0, 10);
        frag[ETH_HEADER + 7] = 1;
        assert_eq!((flow_key(&frag).sport, flow_key(&frag).dport), (0, 0));
        let short = vec![1u8; 5];
        assert_eq!(flow_key(&short).proto, 0);
    }

    #[test]
    fn trimming_cuts_to_the_headers_and_says_so() {
        let mut f = v4_tcp(Ecn::Ect0 as u8, 1000);
        assert_eq!(header_len(&f), Some(ETH_HEADER + 20 + 32));
        assert!(!is_trimmed(&f));
        assert!(trim(&mut f));
        assert_eq!(f.len(), ETH_HEADER + 20 + 32);
        assert!(is_trimmed(&f));
        assert_eq!(ecn(&f), Ecn::Ect0);
        assert_eq!(u16::from_be_bytes([f[16], f[17]]), 52);
        assert!(ip_checksum_ok(&f));
        // The transport header is intact: the flow and its ports are still known.
        assert_eq!(flow_key(&f).dport, 5001);
        assert!(!trim(&mut f), "trimmed twice");
        let mut v6 = v6_udp(0, 500);
        assert!(trim(&mut v6));
        assert_eq!(v6.len(), ETH_HEADER + 48);
        assert_eq!(u16::from_be_bytes([v6[18], v6[19]]), 8);
        // UDP's own length still says 508: an unaware receiver drops the datagram.
        assert_eq!(u16::from_be_bytes([v6[58], v6[59]]), 508);
        let mut cut = v4_tcp(0, 0);
        cut.truncate(ETH_HEADER + 30);
        assert!(!trim(&mut cut));
    }
}
