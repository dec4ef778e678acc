//! A `ring` workload on the simulator: the timed-token protocol itself
//! ([`weft_model::net::TokenRing`]) with its active stations' queues kept full, and, with
//! `acks`, the ring's last station answering every second frame it receives with an ACK on the
//! same ring. Measured after the first tenth of the run, once the rotations have settled.

use serde_json::{Map, Value, json};
use weft_model::Instant;
use weft_model::calc::ring::{RingFrames, spec_of};
use weft_model::net::TokenRing;
use weft_model::scenario::{Metric, RingWorkload};
use weft_model::time::Duration;
use weft_model::units::Size;

/// Simulated time of a ring workload that gives none.
pub const DEFAULT_RING_TIME: Duration = Duration::from_millis(2000);

/// What a frame on the ring is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A data frame from this station.
    Data(u32),
    /// An ACK.
    Ack,
}

/// Results of one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RingRun {
    /// Share of the measured time frames occupied the ring.
    pub efficiency: f64,
    /// Transport payload delivered in the measured time, Mbit/s.
    pub goodput_mbps: f64,
    /// Payload over the ring's rate.
    pub line_efficiency: f64,
    /// Payload per active station, Mbit/s.
    pub station_mbps: f64,
}

/// Runs the ring of `r` with datagrams of `size` bytes for `time`.
pub fn run_ring(r: &RingWorkload, size: u64, time: Duration) -> RingRun {
    let spec = spec_of(r);
    let frames = RingFrames::fddi(size);
    let n = spec.stations;
    let rate_mbps = spec.rate.as_bps() as f64 / 1e6;
    let mut ring = TokenRing::new(spec);
    let end = time.as_nanos().max(1);
    let warm = end / 10;
    // Without ACKs each station sends to the next; with them, to the last (the answerer).
    let to = |s: u32| if r.acks { n - 1 } else { (s + 1) % n };
    let mut received = vec![0u64; n as usize];
    let (mut payload, mut busy_at_warm) = (0u64, None);
    let mut now = 0;
    loop {
        for s in 0..r.active {
            while ring.queued(s) < 2 {
                ring.handle_frame(Instant(now), s, to(s), frames.data_bytes, Kind::Data(s));
            }
        }
        ring.handle_timeout(Instant(now));
        while let Some((at, t, k)) = ring.poll_delivered(Instant(now)) {
            let Kind::Data(from) = k else { continue };
            if t.0 >= warm {
                payload += frames.payload;
            }
            received[from as usize] += 1;
            if r.acks && received[from as usize] % 2 == 0 {
                ring.handle_frame(t, at, from, frames.ack_bytes, Kind::Ack);
            }
        }
        if busy_at_warm.is_none() && now >= warm {
            busy_at_warm = Some(ring.stats.busy_ns);
        }
        match ring.poll_timeout() {
            Some(t) if t.0 <= end => now = t.0.max(now),
            _ => break,
        }
    }
    let span = (end - warm) as f64;
    let busy = ring.stats.busy_ns - busy_at_warm.unwrap_or(0);
    let goodput_mbps = payload as f64 * 8.0 / span * 1e3;
    RingRun {
        efficiency: busy as f64 / span,
        goodput_mbps,
        line_efficiency: goodput_mbps / rate_mbps,
        station_mbps: goodput_mbps / f64::from(r.active.max(1)),
    }
}

/// The simulator's point of a `ring` workload.
pub fn ring(
    r: &RingWorkload,
    size: Option<Size>,
    time: Option<Duration>,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let Some(size) = size else {
        notes.push("a ring workload needs `size`".into());
        return;
    };
    let run = run_ring(r, size.0, time.unwrap_or(DEFAULT_RING_TIME));
    m.insert(Metric::EFFICIENCY.into(), json!(run.efficiency));
    m.insert(Metric::GOODPUT_MBPS.into(), json!(run.goodput_mbps));
    m.insert(Metric::LINE_EFFICIENCY.into(), json!(run.line_efficiency));
    m.insert(Metric::STATION_MBPS.into(), json!(run.station_mbps));
}

/// What the rings on a network's paths did, into a workload's metrics `m` (nothing if it has
/// none): the payload of `bps` over the rings' rate (study 003's line efficiency), and the
/// tokens the rings' stations held and found late.
pub fn path_metrics(
    rings: &[weft_model::net::RingStats],
    topo: &weft_model::net::Topology,
    bps: f64,
    m: &mut Map<String, Value>,
) {
    let Some(rate) = topo.rings.iter().map(|r| r.spec.rate.as_bps()).min() else {
        return;
    };
    m.insert(
        Metric::LINE_EFFICIENCY.into(),
        json!(bps / (rate as f64).max(1.0)),
    );
    m.insert(
        "ring_captures".into(),
        json!(rings.iter().map(|r| r.captures).sum::<u64>()),
    );
    m.insert(
        "ring_late_tokens".into(),
        json!(rings.iter().map(|r| r.late).sum::<u64>()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(stations: u32, active: u32, acks: bool) -> RingWorkload {
        RingWorkload {
            stations,
            active,
            fibre_km: 0.1,
            station_delay: Duration::from_micros(1),
            ttrt: Duration::from_millis(8),
            acks,
        }
    }

    #[test]
    fn the_answering_stations_acks_cost_the_senders_a_share_of_the_ring() {
        let time = Duration::from_millis(500);
        let with = run_ring(&workload(4, 2, true), 4352, time);
        let without = run_ring(&workload(4, 2, false), 4352, time);
        // Two 4388-byte frames and one 76-byte ACK carry 2 x 4312 bytes of payload.
        let expected = 8624.0 / 8852.0;
        assert!((with.line_efficiency - expected).abs() < 0.003, "{with:?}");
        assert!(
            without.line_efficiency > with.line_efficiency + 0.006,
            "{without:?}"
        );
    }

    #[test]
    fn ten_active_stations_each_get_a_tenth() {
        let r = run_ring(&workload(10, 10, false), 4352, Duration::from_millis(500));
        assert!((r.station_mbps * 10.0 - r.goodput_mbps).abs() < 1e-9);
        assert!(r.station_mbps > 9.5 && r.station_mbps < 10.0, "{r:?}");
    }
}
