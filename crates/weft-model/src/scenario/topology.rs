//! A scenario file's hosts, switches and links as a [`Topology`], the same for the simulator and
//! the emulator: every host on its link to its switch, links between switches as trunks, each
//! switch's buffer and drop policy on the queues it feeds, its fabric at the rate of its fastest
//! link. A scenario without switches gets one output-queued switch that stands for the wire.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use crate::net::{
    ETH_HEADER, FabricKind, FabricSpec, HostSpec, LinkSpec, SwitchSpec, Topology, TopologyError,
    TrunkSpec, Vc, frame_cells,
};
use crate::queue::{Buffer, Capacity, DropPolicy};
use crate::scenario::{self, Fabric, Scenario};
use crate::time::Duration;
use crate::units::Rate;

/// The output buffer of a switch that gives none: large enough never to fill in a run.
pub const UNBOUNDED_BUFFER: Buffer = Buffer::bytes(64 << 20);

impl Topology {
    /// The topology of scenario `s` with random streams seeded by `seed`, and notes on what was
    /// assumed.
    pub fn from_scenario(
        s: &Scenario,
        seed: u64,
    ) -> Result<(Topology, Vec<String>), TopologyError> {
        let mut notes = Vec::new();
        // By name, once: a generated fabric has thousands of nodes.
        let switch_index: HashMap<&str, usize> = s
            .switches
            .iter()
            .enumerate()
            .map(|(k, sw)| (sw.name.as_str(), k))
            .collect();
        let host_index: HashMap<&str, usize> = s
            .hosts
            .iter()
            .enumerate()
            .map(|(k, h)| (h.name.as_str(), k))
            .collect();
        let mut links_at: HashMap<&str, Vec<&scenario::Link>> = HashMap::new();
        for l in &s.links {
            for e in &l.ends {
                links_at.entry(e.as_str()).or_default().push(l);
            }
        }
        let switch_of = |name: &str| switch_index.get(name).copied();
        let host_of = |name: &str| host_index.get(name).copied();
        let wire = s.switches.is_empty();
        if wire {
            notes.push("no switch: the hosts are joined by one output-queued switch that stands for the wire".into());
        }
        let mut hosts = Vec::new();
        for (i, h) in s.hosts.iter().enumerate() {
            let links: &[&scenario::Link] =
                links_at.get(h.name.as_str()).map_or(&[], Vec::as_slice);
            let Some(l) = links.first() else {
                return Err(TopologyError::Scenario(format!(
                    "host {} has no link",
                    h.name
                )));
            };
            if links.len() > 1 {
                notes.push(format!(
                    "host {} has {} links; only the first ({} - {}) is used",
                    h.name,
                    links.len(),
                    l.ends[0],
                    l.ends[1]
                ));
            }
            let other = if l.ends[0] == h.name {
                &l.ends[1]
            } else {
                &l.ends[0]
            };
            let (switch, owner) = match switch_of(other) {
                Some(k) => (k, Some(&s.switches[k])),
                None if wire && host_of(other).is_some() => (0, None),
                None => {
                    return Err(TopologyError::Scenario(format!(
                        "host {} is linked to host {other}: links between hosts need a switch between them",
                        h.name
                    )));
                }
            };
            let mut link = link_spec(l, owner);
            link.abr = h.abr;
            link.vc = Vc {
                vpi: 0,
                vci: 100 + i as u16,
            };
            if wire && i == 0 {
                // The first host is the far end of every wire: its own link is ideal.
                link = LinkSpec::ethernet(None, Duration::ZERO);
                link.mtu = l.tech.mtu.0.clamp(68, 65_000) as u32;
                link.buffer = UNBOUNDED_BUFFER;
            }
            hosts.push(HostSpec {
                name: h.name.clone(),
                addr: address(h)?,
                link,
                switch,
            });
        }
        let mut trunks = Vec::new();
        for l in &s.links {
            let (Some(a), Some(b)) = (switch_of(&l.ends[0]), switch_of(&l.ends[1])) else {
                continue;
            };
            let mut links = [
                link_spec(l, Some(&s.switches[a])),
                link_spec(l, Some(&s.switches[b])),
            ];
            for (k, x) in links.iter_mut().enumerate() {
                x.vc = Vc {
                    vpi: 1,
                    vci: (100 + trunks.len() * 2 + k) as u16,
                };
            }
            trunks.push(TrunkSpec {
                ends: [a, b],
                links,
            });
        }
        // Each switch's links: its hosts' in host order, then its trunks'.
        let mut links_of: Vec<Vec<&LinkSpec>> = vec![Vec::new(); s.switches.len()];
        for h in &hosts {
            if let Some(l) = links_of.get_mut(h.switch) {
                l.push(&h.link);
            }
        }
        for t in &trunks {
            for (e, l) in t.ends.iter().zip(&t.links) {
                links_of[*e].push(l);
            }
        }
        let mut switches: Vec<SwitchSpec> = s
            .switches
            .iter()
            .zip(&links_of)
            .map(|(sw, links)| SwitchSpec {
                shared_buffer: sw.shared,
                name: sw.name.clone(),
                fabric: fabric_of(sw, links),
                latency: sw.latency,
                cut_through: sw.cut_through,
                forwarding: sw.forwarding,
            })
            .collect();
        if wire {
            switches.push(SwitchSpec {
                shared_buffer: None,
                forwarding: None,
                name: "wire".into(),
                fabric: FabricSpec::default(),
                latency: Duration::ZERO,
                cut_through: false,
            });
        }
        let mut topo = Topology {
            hosts,
            switches,
            trunks,
            seed,
            multipath: s.fabric.as_ref().map(|f| f.multipath).unwrap_or_default(),
            circuits: None,
            rings: Vec::new(),
            failures: Vec::new(),
        };
        topo.validate()?;
        // A ring carries its hosts' frames in place of their links' lines: those keep their
        // framing (the frames' bytes on the ring), with no rate and no delay of their own.
        for r in &s.rings {
            let hosts: Vec<usize> = r.hosts.iter().filter_map(|h| host_of(h)).collect();
            for &h in &hosts {
                topo.hosts[h].link.rate = None;
                topo.hosts[h].link.delay = Duration::ZERO;
            }
            notes.push(format!(
                "hosts {} share a ring in front of a port of {}",
                r.hosts.join(", "),
                r.switch
            ));
            topo.rings.push(crate::net::RingSegment {
                spec: r.spec(),
                hosts,
            });
        }
        for f in s.fabric.iter().flat_map(|f| &f.fail) {
            topo.failures.push(failure(f, &topo)?);
        }
        if let (Some(db), Some(shape)) = (&s.vc, &s.vc_forward) {
            let err = |m: String| TopologyError::Scenario(format!("[vc]: {m}"));
            let plan = crate::vc::plan(db, shape).map_err(|e| err(e.to_string()))?;
            if let Err(p) = plan.verify(db) {
                return Err(err(format!("the plan does not check: {}", p[0])));
            }
            let mut c = crate::net::Circuits::from_plan(&plan, db, &topo)?;
            c.failure = s.vc_failure.clone();
            let at = crate::vc::resolve_all(&s.vc_contracts, &plan).map_err(err)?;
            if !at.is_empty() {
                c.set_contracts(&at, &topo)?;
            }
            topo.circuits = Some(c);
            notes.push(format!(
                "the switches forward by the {} plan of [vc]: {} circuits, {} cross-connect entries",
                plan.shape, plan.counts.vcs, plan.counts.entries
            ));
        }
        Ok((topo, notes))
    }

    /// This topology as workload `w` runs on it: the workload's `multipath` in place of the
    /// fabric's (the one place the simulator and the emulator both take it from).
    pub fn for_workload(mut self, w: &scenario::Workload) -> Self {
        if let Some(m) = w.multipath {
            self.multipath = m;
        }
        self
    }
}

/// A `[[fabric.fail]]` on the switches and trunks of `topo`.
fn failure(
    f: &super::parse_fabric::FailSpec,
    topo: &Topology,
) -> Result<crate::net::LinkFailure, TopologyError> {
    let err = |m: String| TopologyError::Scenario(format!("[[fabric.fail]]: {m}"));
    let switch = |n: &str| {
        topo.switches
            .iter()
            .position(|s| s.name == n)
            .ok_or_else(|| err(format!("no switch is called {n:?}")))
    };
    let target = match (&f.link, &f.switch) {
        (Some([a, b]), _) => {
            let (a, b) = (switch(a)?, switch(b)?);
            let k = topo
                .trunks
                .iter()
                .position(|t| t.ends == [a, b] || t.ends == [b, a])
                .ok_or_else(|| err(format!("no link joins {:?}", f.link)))?;
            crate::net::FailTarget::Trunk(k)
        }
        (None, Some(s)) => crate::net::FailTarget::Switch(switch(s)?),
        (None, None) => return Err(err("names no link or switch".into())),
    };
    Ok(crate::net::LinkFailure {
        target,
        at: f.at,
        down: f.down,
    })
}

/// The link `l` with the output queue of switch `owner` (the one that sends onto it).
fn link_spec(l: &scenario::Link, owner: Option<&scenario::Switch>) -> LinkSpec {
    let mut link = LinkSpec::from_tech(&l.tech, l.delay);
    link.faults = l.faults();
    link.contract = l.contract;
    link.buffer = owner.and_then(|sw| sw.buffer).unwrap_or(UNBOUNDED_BUFFER);
    link.drop = owner.map_or(DropPolicy::Tail, |sw| sw.drop);
    link.clp_threshold = owner.and_then(|sw| sw.clp_threshold);
    link.ecn_threshold = owner.and_then(|sw| sw.ecn_threshold);
    link.ecn_red = owner.and_then(|sw| sw.ecn_red);
    link.trim = owner.is_some_and(|sw| sw.trim);
    link.pfc = owner
        .and_then(|sw| sw.pfc)
        .filter(|_| !link.is_atm())
        .map(|p| {
            let frame = link.mtu_frame().1;
            let bytes = |b: Buffer| b.in_unit_of(crate::queue::Capacity::Bytes(0), 1, frame);
            let rate = link.rate.unwrap_or(Rate::mbps(10_000));
            crate::net::PfcSpec {
                xoff: bytes(p.xoff),
                xon: bytes(p.xon),
                headroom: crate::net::PfcSpec::headroom_for(rate, link.delay.as_nanos(), frame),
                // Every class but 7 (control and headers) is lossless.
                classes: 0x7f,
            }
        });
    link.efci_threshold = owner.and_then(|sw| sw.efci_threshold);
    link.abr_er = owner.and_then(|sw| sw.abr_er);
    link
}

fn address(h: &scenario::Host) -> Result<Option<Ipv4Addr>, TopologyError> {
    let Some(a) = &h.addr else {
        return Ok(None);
    };
    a.split('/')
        .next()
        .unwrap_or(a)
        .parse::<Ipv4Addr>()
        .map(Some)
        .map_err(|_| TopologyError::Scenario(format!("host {}: address {a:?} is not IPv4", h.name)))
}

/// The fabric of switch `sw` whose ports lead onto `links`: its kind, the fastest link's rate as
/// the fabric's port rate, and its buffer in cells (frames count as MTU-sized).
fn fabric_of(sw: &scenario::Switch, links: &[&LinkSpec]) -> FabricSpec {
    let kind = match sw.fabric {
        Fabric::OutputQueued => return FabricSpec::default(),
        Fabric::InputFifo => FabricKind::InputFifo {
            contention: sw.contention.into(),
        },
        Fabric::VoqIslip => FabricKind::VoqIslip {
            iterations: sw.iterations,
        },
    };
    let rate = links
        .iter()
        .filter_map(|l| l.rate)
        .max()
        .unwrap_or(Rate::mbps(10_000));
    let cells_per_frame = links
        .iter()
        .map(|l| frame_cells(l, l.mtu as usize + ETH_HEADER))
        .max()
        .unwrap_or(1);
    let cells = Capacity::Cells(0);
    let buffer_cells = sw
        .buffer
        .map_or(1 << 20, |b| b.in_unit_of(cells, cells_per_frame, 0));
    FabricSpec {
        kind,
        rate,
        buffer_cells,
        drop: sw.drop.resolve(cells, cells_per_frame, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tech::Framing;

    const EBN: &str = r#"
name = "ebn"
[[host]]
name = "canberra"
[[host]]
name = "adelaide"
addr = "192.168.7.2"
[[switch]]
name = "decnis"
fabric = "output-queued"
buffer = "300 cells"
drop = "epd"
epd_threshold = "200 cells"
[[switch]]
name = "asx"
fabric = "input-fifo"
[[link]]
ends = ["canberra", "decnis"]
tech = "oc3c"
delay = "10us"
[[link]]
ends = ["decnis", "asx"]
tech = { preset = "e3", rate = "26Mbps" }
delay = "8.48ms"
[[link]]
ends = ["asx", "adelaide"]
tech = "oc3c"
delay = "10us"
loss = 0.01
"#;

    #[test]
    fn switches_stay_switches_and_their_links_become_trunks() {
        let s = Scenario::parse(EBN, "ebn.toml").unwrap();
        let (t, notes) = Topology::from_scenario(&s, 9).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(t.seed, 9);
        assert_eq!((t.hosts[0].switch, t.hosts[1].switch), (0, 1));
        let c = &t.hosts[0].link;
        assert_eq!(c.rate, Some(Rate::bps(149_760_000)));
        assert_eq!(c.delay, Duration::from_micros(10));
        assert!(matches!(c.framing, Framing::Cells));
        // The queue onto canberra's link is decnis's.
        assert_eq!(c.buffer, Buffer::cells(300));
        assert_eq!(
            c.drop,
            DropPolicy::Epd {
                threshold: Buffer::cells(200)
            }
        );
        let a = &t.hosts[1].link;
        assert_eq!(a.faults.loss, 0.01);
        assert_eq!(a.buffer, UNBOUNDED_BUFFER);
        assert_eq!(t.hosts[1].addr, Some(Ipv4Addr::new(192, 168, 7, 2)));
        // One trunk: the 26 Mbit/s VP, each direction with its sender's queue.
        assert_eq!(t.trunks.len(), 1);
        let tr = &t.trunks[0];
        assert_eq!(tr.ends, [0, 1]);
        assert_eq!(tr.links[0].rate, Some(Rate::mbps(26)));
        assert_eq!(tr.links[0].delay, Duration::from_micros(8480));
        assert_eq!(tr.links[0].buffer, Buffer::cells(300));
        assert_eq!(tr.links[1].buffer, UNBOUNDED_BUFFER);
        // asx's input-FIFO fabric runs at its fastest link's rate.
        assert!(matches!(
            t.switches[1].fabric.kind,
            FabricKind::InputFifo { .. }
        ));
        assert_eq!(t.switches[1].fabric.rate, Rate::bps(149_760_000));
    }

    #[test]
    fn hosts_without_a_switch_share_a_wire() {
        let text = r#"
name = "pair"
[[host]]
name = "a"
[[host]]
name = "b"
[[link]]
ends = ["a", "b"]
tech = "ethernet10"
delay = "1ms"
"#;
        let s = Scenario::parse(text, "pair.toml").unwrap();
        let (t, notes) = Topology::from_scenario(&s, 1).unwrap();
        assert_eq!(t.switches.len(), 1);
        assert!(notes.iter().any(|n| n.contains("wire")));
        assert_eq!(t.hosts[0].link.rate, None);
        assert_eq!(t.hosts[1].link.rate, Some(Rate::mbps(10)));
        assert_eq!(t.hosts[1].link.delay, Duration::from_millis(1));
    }
}
