//! The keys of a workload of kind `ring`: a shared FDDI ring and which of its stations send.
//!
//! ```toml
//! [[workload]]
//! kind = "ring"
//! stations = 20            # MACs on the ring
//! active = 20              # stations that always have frames (default: all)
//! fibre_km = 4.0           # fibre around the ring (default 0)
//! station_delay = "1us"    # latency of each station (default 1 us)
//! ttrt = "8ms"             # target token rotation time (default 8 ms)
//! acks = false             # TCP segments answered by the last station's ACKs (default false)
//! size = 4352              # IP datagram of each frame (sweepable)
//! time = "2s"              # simulated time (default 2 s)
//! ```

use super::reader::{Result, Tbl};
use super::{RingWorkload, WorkloadKind};
use crate::net::RingSpec;
use crate::time::Duration;

/// The keys only a workload of kind `ring` takes.
pub(super) const RING_KEYS: &[&str] = &[
    "stations",
    "active",
    "fibre_km",
    "station_delay",
    "ttrt",
    "acks",
];

/// Most stations a ring takes (ANSI X3.139: 500 stations, 1000 physical connections).
const MAX_STATIONS: u64 = 1000;

/// The `ring` keys of a workload, refused on other kinds.
pub(super) fn workload(w: &Tbl<'_, '_>, kind: WorkloadKind) -> Result<Option<RingWorkload>> {
    if kind != WorkloadKind::Ring {
        w.refuse_keys(RING_KEYS.iter().copied(), "ring")?;
        return Ok(None);
    }
    let Some(stations) = w.count("stations", 1, MAX_STATIONS)? else {
        return Err(w.err_table("kind = \"ring\" needs `stations`, the MACs on the ring"));
    };
    let stations = stations as u32;
    let acks = w.boolean("acks")?.unwrap_or(false);
    let most = if acks { stations - 1 } else { stations };
    let active = w.count32("active", 1, stations)?.unwrap_or(most);
    if active > most {
        return Err(w.err(
            "active",
            "with `acks` the last station answers: at most `stations - 1` may send",
        ));
    }
    let ttrt = w
        .duration(
            "ttrt",
            Duration::from_micros(100),
            Duration::from_millis(200),
        )?
        .unwrap_or(Duration::from_millis(8));
    let station_delay = w
        .duration("station_delay", Duration(0), Duration::from_millis(1))?
        .unwrap_or(Duration::from_micros(1));
    let fibre_km = w.number("fibre_km", 0.0, 200.0)?.unwrap_or(0.0);
    let latency = RingSpec::fddi(stations, fibre_km, station_delay, ttrt).latency();
    if latency >= ttrt.as_nanos() {
        return Err(w.err(
            "ttrt",
            "the target rotation must exceed the ring's latency (stations x station_delay + fibre)",
        ));
    }
    Ok(Some(RingWorkload {
        stations,
        active,
        fibre_km,
        station_delay,
        ttrt,
        acks,
    }))
}
