//! A `[[ring]]` table: hosts that share one FDDI ring in front of a switch port (a
//! concentrator's ring), in place of their links' own lines ([`crate::net::Ringed`]).
//!
//! ```toml
//! [[ring]]
//! switch = "gigaswitch"    # the switch whose port is the ring's last station
//! hosts = ["a", "b"]       # its hosts, each with a [[link]] to that switch (its framing)
//! macs = 1                 # stations that only repeat (a concentrator's own MAC; default 0)
//! fibre_km = 0.1           # fibre around the ring (default 0)
//! station_delay = "1us"    # latency of each station (default 1 us)
//! ttrt = "8ms"             # target token rotation time (default 8 ms)
//! ```

use serde::Serialize;

use super::reader::{Result, Tbl};
use super::{Link, Switch};
use crate::net::RingSpec;
use crate::time::Duration;

/// Hosts sharing a ring in front of one switch port.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SharedRing {
    /// The switch whose port is the ring's last station.
    pub switch: String,
    /// Its hosts, its first stations in this order.
    pub hosts: Vec<String>,
    /// Stations that only repeat, between the hosts and the port.
    pub macs: u32,
    /// Fibre around the ring, km.
    pub fibre_km: f64,
    /// Latency of each station.
    pub station_delay: Duration,
    /// Target token rotation time.
    pub ttrt: Duration,
}

impl SharedRing {
    /// The ring: the hosts, the repeating stations and the port.
    pub fn spec(&self) -> RingSpec {
        let stations = self.hosts.len() as u32 + self.macs + 1;
        RingSpec::fddi(stations, self.fibre_km, self.station_delay, self.ttrt)
    }
}

/// The `[[ring]]` tables of a scenario: each host on at most one, linked to the ring's switch.
pub(super) fn rings(
    root: &Tbl<'_, '_>,
    hosts: &[&str],
    switches: &[Switch],
    links: &[Link],
) -> Result<Vec<SharedRing>> {
    let mut out: Vec<SharedRing> = Vec::new();
    for t in root.tables("ring")? {
        t.check_keys(&[
            "switch",
            "hosts",
            "macs",
            "fibre_km",
            "station_delay",
            "ttrt",
        ])?;
        let switch = t.req_string("switch")?;
        if !switches.iter().any(|s| s.name == switch) {
            return Err(t.err("switch", format!("no switch is called {switch:?}")));
        }
        let names = t.names("hosts", hosts)?;
        if names.is_empty() {
            return Err(t.err_table("a ring needs `hosts`"));
        }
        for (k, h) in names.iter().enumerate() {
            if out.iter().any(|r| r.hosts.contains(h)) || names[..k].contains(h) {
                return Err(t.err("hosts", format!("host {h:?} is already on a ring")));
            }
            let linked = links
                .iter()
                .filter(|l| l.ends.contains(h))
                .all(|l| l.ends.contains(&switch));
            if !linked || !links.iter().any(|l| l.ends.contains(h)) {
                return Err(t.err(
                    "hosts",
                    format!("host {h:?} needs its one [[link]] to switch {switch:?}"),
                ));
            }
        }
        let macs = t.count32("macs", 0, 500)?.unwrap_or(0);
        let ttrt = t
            .duration(
                "ttrt",
                Duration::from_micros(100),
                Duration::from_millis(200),
            )?
            .unwrap_or(Duration::from_millis(8));
        let station_delay = t
            .duration("station_delay", Duration(0), Duration::from_millis(1))?
            .unwrap_or(Duration::from_micros(1));
        let fibre_km = t.number("fibre_km", 0.0, 200.0)?.unwrap_or(0.0);
        let ring = SharedRing {
            switch,
            hosts: names,
            macs,
            fibre_km,
            station_delay,
            ttrt,
        };
        if ring.spec().latency() >= ttrt.as_nanos() {
            return Err(t.err(
                "ttrt",
                "the target rotation must exceed the ring's latency (stations x station_delay + fibre)",
            ));
        }
        out.push(ring);
    }
    Ok(out)
}
