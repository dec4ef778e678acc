//! A shared FDDI ring in closed form: the share of its time that carries frames when some
//! stations always have frames (Jain's timed-token result,
//! [`crate::net::saturated_efficiency`]), and what that leaves the stations' transport payload
//! once each frame's framing, and the ACKs a bulk TCP transfer sends back on the same ring, are
//! paid for. The simulator runs the protocol itself ([`crate::net::TokenRing`]).

use crate::net::{RingSpec, saturated_efficiency};
use crate::scenario::{Metric, RingWorkload, Scenario, Workload};
use crate::tech::Tech;
use crate::units::Size;

/// Bytes of TCP and IP headers in each segment (no options), and of an ACK's datagram.
pub const TCP_IP_HEADERS: u64 = 40;

/// The frames of a ring workload: bytes on the line of a data frame (an IP datagram of `size`
/// bytes) and of an ACK, and the transport payload of a data frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingFrames {
    /// A data frame's bytes on the line: preamble, MAC header, LLC/SNAP, datagram, trailer.
    pub data_bytes: u64,
    /// An ACK's bytes on the line (a 40-byte datagram).
    pub ack_bytes: u64,
    /// Transport payload of a data frame, bytes.
    pub payload: u64,
}

impl RingFrames {
    /// The frames of datagrams of `size` bytes on FDDI (LLC/SNAP, RFC 1188).
    pub fn fddi(size: u64) -> Self {
        let fddi = Tech::preset("fddi").expect("the fddi preset exists");
        RingFrames {
            data_bytes: fddi.wire_bytes(size),
            ack_bytes: fddi.wire_bytes(TCP_IP_HEADERS),
            payload: size.saturating_sub(TCP_IP_HEADERS),
        }
    }
}

/// The ring a workload describes.
pub fn spec_of(r: &RingWorkload) -> RingSpec {
    RingSpec::fddi(r.stations, r.fibre_km, r.station_delay, r.ttrt)
}

/// A saturated ring's answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RingEstimate {
    /// Share of the ring's time carrying frames (Jain's efficiency), 0..=1.
    pub efficiency: f64,
    /// Transport payload of all active stations together, Mbit/s.
    pub goodput_mbps: f64,
    /// That payload over the ring's rate, 0..=1 (study 003's line efficiency).
    pub line_efficiency: f64,
    /// Each active station's share of the payload, Mbit/s.
    pub station_mbps: f64,
}

/// `active` stations of `spec` always have frames of `frames`; with `acks`, one more station
/// sends an ACK for every second frame (TCP's delayed ACK, RFC 1122) and takes its turns too.
pub fn estimate(spec: &RingSpec, active: u32, acks: bool, frames: RingFrames) -> RingEstimate {
    let senders = active.max(1);
    let efficiency = saturated_efficiency(spec, senders + u32::from(acks));
    // Line bytes of two data frames (and one ACK), against their payload.
    let line = 2 * frames.data_bytes + if acks { frames.ack_bytes } else { 0 };
    let share = (2 * frames.payload) as f64 / line as f64;
    let rate = spec.rate.as_bps() as f64 / 1e6;
    let goodput_mbps = rate * efficiency * share;
    RingEstimate {
        efficiency,
        goodput_mbps,
        line_efficiency: goodput_mbps / rate,
        station_mbps: goodput_mbps / f64::from(senders),
    }
}

/// Transport payload a TCP workload's flows carry together at most, Mbit/s, through the
/// scenario's rings (`[[ring]]`) that they cross with datagrams of `mtu` bytes: on a ring with
/// senders of `w`, those senders always having segments and the port answering with ACKs; on a
/// ring with only receivers, the port sending and the receivers answering. The smallest over
/// the rings crossed; `None` if they cross none.
pub fn tcp_bound(s: &Scenario, w: &Workload, mtu: u64) -> Option<f64> {
    let frames = RingFrames::fddi(mtu);
    s.rings
        .iter()
        .filter_map(|r| {
            let on = |names: &[String]| r.hosts.iter().filter(|h| names.contains(h)).count();
            let active = match (on(&w.from), on(&w.to)) {
                (0, 0) => return None,
                (0, _) => 1,
                (n, _) => n as u32,
            };
            Some(estimate(&r.spec(), active, true, frames).goodput_mbps)
        })
        .min_by(f64::total_cmp)
}

/// The model's point of a `ring` workload: its metrics into `metrics`.
pub fn ring_point(
    r: &RingWorkload,
    size: Option<Size>,
    metrics: &mut std::collections::BTreeMap<String, f64>,
    notes: &mut Vec<String>,
) {
    let Some(size) = size else {
        notes.push("a ring workload needs `size`".into());
        return;
    };
    let e = estimate(&spec_of(r), r.active, r.acks, RingFrames::fddi(size.0));
    metrics.insert(Metric::EFFICIENCY.into(), e.efficiency);
    metrics.insert(Metric::GOODPUT_MBPS.into(), e.goodput_mbps);
    metrics.insert(Metric::LINE_EFFICIENCY.into(), e.line_efficiency);
    metrics.insert(Metric::STATION_MBPS.into(), e.station_mbps);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    fn ring(stations: u32, fibre_km: f64) -> RingSpec {
        RingSpec::fddi(
            stations,
            fibre_km,
            Duration::from_micros(1),
            Duration::from_millis(8),
        )
    }

    #[test]
    fn an_fddi_frame_carries_its_framing_and_llc() {
        // 4352-byte datagram: preamble 8, SD FC DA SA 14, LLC/SNAP 8, FCS ED FS 6.
        let f = RingFrames::fddi(4352);
        assert_eq!(f.data_bytes, 4352 + 8 + 14 + 8 + 6);
        assert_eq!(f.ack_bytes, 40 + 36);
        assert_eq!(f.payload, 4312);
    }

    #[test]
    fn acks_on_the_ring_take_their_share_of_it() {
        let f = RingFrames::fddi(4352);
        let without = estimate(&ring(4, 0.1), 2, false, f);
        let with = estimate(&ring(4, 0.1), 2, true, f);
        // 2 x 4388 + 76 line bytes carry 2 x 4312 payload: 0.9742 of a nearly ideal ring.
        assert!((with.line_efficiency - 8624.0 / 8852.0).abs() < 0.001);
        assert!(with.line_efficiency < without.line_efficiency - 0.008);
    }

    #[test]
    fn ten_stations_share_one_ring() {
        let e = estimate(&ring(10, 1.0), 10, false, RingFrames::fddi(4352));
        assert!((e.station_mbps * 10.0 - e.goodput_mbps).abs() < 1e-9);
        assert!(e.station_mbps < 10.0 && e.station_mbps > 9.5, "{e:?}");
    }
}
