//! The studies' routers as [`ForwardingSpec`]s (`forwarding = "NAME"` on a `[[switch]]`), each
//! value with its source: a vendor's document, or the one figure of a study it is fitted to.
//!
//! | preset | per packet | per byte | source |
//! |---|---|---|---|
//! | `cisco7000-autonomous` | 10 us | 15 ns | the Switch Processor's autonomous switching "in the 100kpps range" (the cisco-networking FAQ, "How are packets switched?"); one crossing of the 533 Mbit/s CxBus (Cisco 7000 SP installation note, 1996; *Inside Cisco IOS Software Architecture* ch. 4: 32 bits at 16.67 MHz) |
//! | `decnis600-ebn` | 476.5 us | 0 | **fitted** to study 002's ping through the DECNIS against without it (`dhpc_ebn.rtt_ms_via_router` 17 ms, `dhpc_ebn.rtt_ms_direct` 16 ms) |
//!
//! Not here, for want of a source found: the Cisco 7000's fast switching on its Route
//! Processor and silicon switching on the SSP (no packet rate for either in the documents
//! found; the AGS+, its predecessor, fast-switched 7,000 to 14,000 packets a second), its input
//! hold queue, and DEC's own packet rate for the DECNIS 500/600 (the Digital Technical Journal's
//! description, vol. 5 no. 1, 1993, reports "performance results achieved during system test",
//! which were not found in readable form); the DECNIS forwards on each receiving linecard
//! (distributed forwarding, the same article), which one pool of processors does not separate.

use super::ForwardingSpec;
use crate::time::Duration;

/// The Cisco 7000's Switch Processor (SP) switching autonomously: 100,000 packets a second
/// (10 us each, the FAQ's "in the 100kpps range", taken as the per-packet cost; the bus time of
/// a minimum packet, under 1 us, is not taken off it) and each byte once across the 533 Mbit/s
/// CxBus (15.0 ns).
pub fn cisco7000_autonomous() -> ForwardingSpec {
    ForwardingSpec {
        per_packet: Duration::from_micros(10),
        per_byte_ps: 15_009,
        processors: 1,
        queue: None,
    }
}

/// The per-packet cost of the DECNIS 600 of study 002 (ns), **fitted**: its ping went from
/// 17 ms through the DECNIS to 16 ms without it (`dhpc_ebn.rtt_ms_via_router`,
/// `dhpc_ebn.rtt_ms_direct`), so each of the ping's two crossings (request and reply, 84-byte
/// IP packets: the default 56 bytes of data) costs half of 1 ms less the time to store the
/// packet off its cell link (3 cells: 8.5 us at OC-3c in, 38.5 us at the E3's 33 Mbit/s
/// back). Both figures are printed to two digits, so this is good to about 0.25 ms; whatever
/// else the GIGAswitch/ATM's path changed is in it too.
pub const DECNIS600_EBN_PER_PACKET_NS: u64 = 476_480;

/// The DECNIS 600 of study 002 with its per-packet cost fitted to the ping
/// ([`DECNIS600_EBN_PER_PACKET_NS`]); no cost per byte (none known).
pub fn decnis600_ebn() -> ForwardingSpec {
    ForwardingSpec {
        per_packet: Duration(DECNIS600_EBN_PER_PACKET_NS),
        per_byte_ps: 0,
        processors: 1,
        queue: None,
    }
}

/// The preset names, in order.
pub const NAMES: &[&str] = &["cisco7000-autonomous", "decnis600-ebn"];

/// The preset named `name`.
pub fn by_name(name: &str) -> Option<ForwardingSpec> {
    match name {
        "cisco7000-autonomous" => Some(cisco7000_autonomous()),
        "decnis600-ebn" => Some(decnis600_ebn()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Figures;
    use crate::tech::Tech;
    use crate::units::Rate;

    #[test]
    fn the_decnis_is_the_fit_to_the_ping() {
        let f = Figures::bundled().unwrap();
        let via = f.number("dhpc_ebn.rtt_ms_via_router").unwrap();
        let direct = f.number("dhpc_ebn.rtt_ms_direct").unwrap();
        let oc3 = Tech::preset("oc3c").unwrap();
        let mut e3 = Tech::preset("e3").unwrap();
        e3.rate = Rate::mbps(33);
        let ping = 84;
        let stored = oc3.wire_time(ping).0 + e3.wire_time(ping).0;
        let fit = ((via - direct) * 1e6 - stored as f64) / 2.0;
        assert_eq!(
            (oc3.wire_time(ping).0, e3.wire_time(ping).0),
            (8_494, 38_546)
        );
        assert!(
            (fit - DECNIS600_EBN_PER_PACKET_NS as f64).abs() < 1.0,
            "{fit}"
        );
    }

    #[test]
    fn the_cisco_moves_a_minimum_packet_at_its_rated_rate() {
        let c = cisco7000_autonomous();
        // 100 kpps is its per-packet cost; 8 bits / 533 Mbit/s a byte.
        assert_eq!(c.service(0), Duration::from_micros(10));
        assert!((c.per_byte_ps as f64 - 8e12 / 533e6).abs() < 1.0);
        // A 9180-byte packet: 10 + 137.8 us, 6,770 a second, far above what 60 Mbit/s needs.
        assert!((c.packet_rate(9180).unwrap() - 1e9 / 147_783.0).abs() < 0.1);
        for n in NAMES {
            assert!(by_name(n).is_some());
        }
    }
}
