//! Switching by VPI/VCI: a switch whose topology carries circuits ([`Circuits`], from a
//! [`crate::vc::Plan`]) forwards a cell train by its cross-connect table, not by MAC address.
//! A host labels each frame with the VPI/VCI it has bound to the destination (its own side of
//! Classical IP's address -> VC binding); every switch looks the label up under the port it came
//! in on ((in port, VPI/VCI) -> (out port, VPI/VCI), or a path entry that rewrites the VPI and
//! leaves the VCI alone) and rewrites it; the host at the end accepts it only on a label it has
//! bound. Cells on a circuit a switch has no entry for are counted and dropped, as are frames a
//! host has no circuit for and frames that reach a host on a label it does not know.
//!
//! A circuit or path may carry a traffic contract ([`crate::vc::CircuitContract`], resolved to
//! the entry it applies to): the switch polices or shapes the cells arriving on that entry
//! ([`super::vc_contract::Enforced`]) before they join their output's queue.
//!
//! The tables are the plan's, its ports the database's numbers; [`VcSwitch`] keeps the map from
//! those to the switch's own ports, so a table and its contracts can be cleared (a switch that
//! lost its manager loses both) and installed again from the plan as it is
//! ([`VcSwitch::install`], what the connection manager pushes).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::frame::Frame;
use super::network::Network;
use super::switch::SwitchCore;
use super::topology::{Topology, TopologyError};
use super::train::Train;
use super::vc_contract::Enforced;
use crate::element::PortId;
use crate::vc::{ContractAt, Entry, Held, HostDb, Plan, PortContract, Table, TableError, Vc};

/// What a port of the database is in the topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PortRef {
    /// The link of host `i` (topology index).
    Host(usize),
    /// Trunk `k` (topology index), at this switch's end.
    Trunk(usize),
}

/// The circuits a topology's switches forward by: each switch's table as planned (database
/// port numbers), what each of those ports is, and each host's bindings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Circuits {
    /// Per switch (topology order): its cross-connect entries.
    pub tables: Vec<Vec<Entry>>,
    /// Per switch: each database port number and what it is.
    pub ports: Vec<Vec<(u32, PortRef)>>,
    /// Per host (topology order): the label it sends on to each destination host.
    pub send: Vec<Vec<(usize, Vc)>>,
    /// A switch that fails and is restored by its manager during the run (`[vc] fail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<super::vc_failure::VcFailure>,
    /// Per switch: the contracts it enforces, by database input port and label (VCI 0: a
    /// path), from `[[vc.contract]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contracts: Vec<Vec<PortContract>>,
}

impl Circuits {
    /// The circuits of `plan` (made from `db`) on `topo`: the database's switches and hosts are
    /// the topology's by name, and its trunks between two switches are the topology's between
    /// them, in order.
    pub fn from_plan(plan: &Plan, db: &HostDb, topo: &Topology) -> Result<Self, TopologyError> {
        let err = |m: String| TopologyError::Scenario(format!("[vc]: {m}"));
        let switch = |name: &str| {
            topo.switches
                .iter()
                .position(|s| s.name == name)
                .ok_or_else(|| err(format!("switch {name} is not a [[switch]] of the scenario")))
        };
        let host = |name: &str| {
            topo.hosts
                .iter()
                .position(|h| h.name == name)
                .ok_or_else(|| err(format!("host {name} is not a [[host]] of the scenario")))
        };
        let ns = topo.switches.len();
        let mut ports: Vec<Vec<(u32, PortRef)>> = vec![Vec::new(); ns];
        for h in &db.hosts {
            let (s, i) = (switch(&h.switch)?, host(&h.name)?);
            if topo.hosts[i].switch != s {
                return Err(err(format!(
                    "host {} is on switch {} in [vc] and on {} in the scenario's links",
                    h.name, h.switch, topo.switches[topo.hosts[i].switch].name
                )));
            }
            ports[s].push((h.port, PortRef::Host(i)));
        }
        let mut taken = vec![false; topo.trunks.len()];
        for t in &db.trunks {
            let (a, b) = (switch(&t.ends[0])?, switch(&t.ends[1])?);
            let k = (0..topo.trunks.len())
                .find(|&k| {
                    !taken[k] && {
                        let e = topo.trunks[k].ends;
                        e == [a, b] || e == [b, a]
                    }
                })
                .ok_or_else(|| {
                    err(format!(
                        "trunk {}-{} has no link between those switches in the scenario",
                        t.ends[0], t.ends[1]
                    ))
                })?;
            taken[k] = true;
            ports[a].push((t.ports[0], PortRef::Trunk(k)));
            ports[b].push((t.ports[1], PortRef::Trunk(k)));
        }
        let mut tables = vec![Vec::new(); ns];
        for t in &plan.tables {
            tables[switch(&t.switch)?] = t.entries.clone();
        }
        let mut send = vec![Vec::new(); topo.hosts.len()];
        for b in &plan.hosts {
            let i = host(&b.host)?;
            for p in &b.peers {
                send[i].push((host(&p.host)?, Vc::new(p.vpi, p.vci)));
            }
        }
        Ok(Circuits {
            tables,
            ports,
            send,
            failure: None,
            contracts: Vec::new(),
        })
    }

    /// Adds the contracts `at` (resolved against the plan these circuits are from) to the
    /// switches that enforce them, which must be the topology's.
    pub fn set_contracts(
        &mut self,
        at: &[ContractAt],
        topo: &Topology,
    ) -> Result<(), TopologyError> {
        self.contracts = vec![Vec::new(); topo.switches.len()];
        for a in at {
            let s = topo
                .switches
                .iter()
                .position(|s| s.name == a.switch)
                .ok_or_else(|| {
                    TopologyError::Scenario(format!(
                        "[vc]: contract: switch {} is not a [[switch]] of the scenario",
                        a.switch
                    ))
                })?;
            self.contracts[s].push(a.at_port());
        }
        Ok(())
    }
}

/// Gives each switch of a network being built its circuits `c`: its table, its database ports
/// as its own (`host_port[h]`: host `h`'s switch and port; `trunk_port[k]`: trunk `k`'s port at
/// each end) and the bindings of the hosts on its ports.
pub(super) fn install<F: Frame>(
    switches: &mut [SwitchCore<F>],
    c: &Circuits,
    host_port: &[(usize, PortId)],
    trunk_port: &[[PortId; 2]],
    topo: &Topology,
) -> Result<(), TopologyError> {
    for (s, sw) in switches.iter_mut().enumerate() {
        let own = |r: PortRef| match r {
            PortRef::Host(h) => host_port.get(h).filter(|hp| hp.0 == s).map(|hp| hp.1),
            PortRef::Trunk(k) => {
                let end = topo.trunks.get(k)?.ends.iter().position(|&e| e == s)?;
                trunk_port.get(k).map(|p| p[end])
            }
        };
        let map = c
            .ports
            .get(s)
            .into_iter()
            .flatten()
            .filter_map(|&(n, r)| Some((n, own(r)?)));
        let mut v = VcSwitch::new(sw.ports(), map);
        for (h, sends) in c.send.iter().enumerate() {
            if let Some(&(hs, p)) = host_port.get(h).filter(|hp| hp.0 == s) {
                debug_assert_eq!(hs, s);
                for &(to, vc) in sends {
                    v.bind(p, to, vc);
                }
            }
        }
        let entries = c.tables.get(s).map_or(&[][..], Vec::as_slice);
        let contracts = c.contracts.get(s).map_or(&[][..], Vec::as_slice);
        v.install(entries, contracts).map_err(|e| {
            TopologyError::Scenario(format!("[vc]: switch {}: {e}", topo.switches[s].name))
        })?;
        sw.set_circuits(v);
    }
    Ok(())
}

impl<F: Frame> Network<F> {
    /// The counters of every switch's circuits added up (`None`: it forwards by MAC address).
    pub fn vc_stats(&self) -> Option<VcStats> {
        let mut out: Option<VcStats> = None;
        for s in (0..).map_while(|s| self.switch(s)) {
            let Some(v) = s.circuits() else { continue };
            let v = v.stats();
            let o = out.get_or_insert_with(VcStats::default);
            o.frames += v.frames;
            o.cells += v.cells;
            o.frames_unknown += v.frames_unknown;
            o.cells_unknown += v.cells_unknown;
            o.unbound += v.unbound;
            o.misdelivered += v.misdelivered;
            o.group += v.group;
            o.circuits_used += v.circuits_used;
            o.cells_policed += v.cells_policed;
            o.frames_policed += v.frames_policed;
            o.frames_tagged += v.frames_tagged;
            o.cells_shaped += v.cells_shaped;
            o.max_shaping_delay_ns = o.max_shaping_delay_ns.max(v.max_shaping_delay_ns);
        }
        out
    }
}

/// Counters of a switch's circuits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VcStats {
    /// Frames switched by an entry.
    pub frames: u64,
    /// Cells of those frames.
    pub cells: u64,
    /// Frames dropped on a circuit the table has no entry for.
    pub frames_unknown: u64,
    /// Cells of those frames.
    pub cells_unknown: u64,
    /// Frames a host sent to a destination it has no circuit to (dropped at its link).
    pub unbound: u64,
    /// Frames that reached a host on a label it has not bound (dropped there).
    pub misdelivered: u64,
    /// Broadcast and multicast frames, which no circuit carries (dropped).
    pub group: u64,
    /// Distinct circuits (input port and label) that carried a frame.
    pub circuits_used: usize,
    /// Cells that broke a policed circuit's or path's contract (dropped, or tagged).
    #[serde(skip_serializing_if = "is_zero")]
    pub cells_policed: u64,
    /// Frames damaged by that policing (a cell of theirs was dropped).
    #[serde(skip_serializing_if = "is_zero")]
    pub frames_policed: u64,
    /// Frames tagged CLP = 1 by that policing instead.
    #[serde(skip_serializing_if = "is_zero")]
    pub frames_tagged: u64,
    /// Cells partial packet discard dropped unjudged after a policed cell of their frame
    /// ([`crate::shaper::VcContract::ppd`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub cells_discarded: u64,
    /// Cells a shaped circuit's or path's contract held back.
    #[serde(skip_serializing_if = "is_zero")]
    pub cells_shaped: u64,
    /// The longest a shaper held a frame's last cell (ns).
    #[serde(skip_serializing_if = "is_zero")]
    pub max_shaping_delay_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One switch's circuit switching: its table in its own port numbers, the bindings of the hosts
/// on its ports, and its counters.
#[derive(Clone, Debug, Default)]
pub struct VcSwitch {
    /// Database port -> the switch's port.
    ports: HashMap<u32, PortId>,
    table: Table,
    /// Per port: the label its host sends on to each destination host.
    send: Vec<HashMap<usize, Vc>>,
    /// Per port: the labels its host receives on.
    recv: Vec<HashSet<Vc>>,
    used: HashSet<(PortId, Vc)>,
    /// The contracts enforced on the cells arriving on an input and label (VCI 0: a path).
    contracts: HashMap<(PortId, Vc), Enforced>,
    stats: VcStats,
}

impl VcSwitch {
    /// A switch of `ports` ports whose database ports are `map` (database number, own port),
    /// with no entries yet.
    pub fn new(ports: usize, map: impl IntoIterator<Item = (u32, PortId)>) -> Self {
        VcSwitch {
            ports: map.into_iter().collect(),
            send: vec![HashMap::new(); ports],
            recv: vec![HashSet::new(); ports],
            ..VcSwitch::default()
        }
    }

    /// Binds, for the host on `port`, the label it sends on to host `to`; it receives on the
    /// same label (circuits are duplex).
    pub fn bind(&mut self, port: PortId, to: usize, vc: Vc) {
        if let (Some(s), Some(r)) = (self.send.get_mut(port), self.recv.get_mut(port)) {
            s.insert(to, vc);
            r.insert(vc);
        }
    }

    /// Installs `entries` and enforces `contracts` (database port numbers; a contract on a
    /// label VCI 0 covers every channel of that path) in place of the table and contracts there
    /// were, each contract with no cell seen yet. On an error (two entries for one input, or a
    /// contract on a port that is not this switch's) the switch keeps what it had.
    pub fn install(
        &mut self,
        entries: &[Entry],
        contracts: &[PortContract],
    ) -> Result<(), TableError> {
        let mut t = Table::new();
        for e in entries {
            let port = |p: u32| self.ports.get(&p).map(|&q| q as u32).unwrap_or(u32::MAX);
            let mut own = e.clone();
            own.in_port = port(e.in_port);
            own.out_port = port(e.out_port);
            t.insert(&own)?;
        }
        let mut enforced = HashMap::new();
        for c in contracts {
            let &own = self
                .ports
                .get(&c.in_port)
                .ok_or(TableError::Port { port: c.in_port })?;
            enforced.insert((own, c.label), Enforced::new(c.contract));
        }
        self.table = t;
        self.contracts = enforced;
        Ok(())
    }

    /// Removes every entry and every contract (the switch lost its manager, or restarted).
    pub fn clear(&mut self) {
        self.table.clear();
        self.contracts.clear();
    }

    /// Entries in the table.
    pub fn entries(&self) -> usize {
        self.table.len()
    }

    /// What it holds: entries, and contracts enforced.
    pub fn held(&self) -> Held {
        Held {
            entries: self.table.len(),
            contracts: self.contracts.len(),
        }
    }

    /// Its counters.
    pub fn stats(&self) -> VcStats {
        VcStats {
            circuits_used: self.used.len(),
            ..self.stats.clone()
        }
    }

    /// Labels a frame from the host on `port` for destination host `to` (`None`: a group
    /// address); false if the host has no circuit to it (the frame is counted and dropped).
    pub fn label<F>(&mut self, port: PortId, to: Option<usize>, t: &mut Train<F>) -> bool {
        let Some(to) = to else {
            self.stats.group += 1;
            return false;
        };
        match self.send.get(port).and_then(|s| s.get(&to)) {
            Some(&vc) => {
                t.vc = vc;
                true
            }
            None => {
                self.stats.unbound += 1;
                false
            }
        }
    }

    /// The port a train that came in on `port` goes out of, its label rewritten; `None` if the
    /// table has no entry for it, it would reach a host on a label the host has not bound, or
    /// its contract's policer dropped every cell of it (counted, and the train dropped).
    pub fn route<F>(&mut self, port: PortId, t: &mut Train<F>) -> Option<PortId> {
        let Some((out, vc)) = self.table.lookup(port as u32, t.vc) else {
            self.stats.frames_unknown += 1;
            self.stats.cells_unknown += t.units;
            return None;
        };
        let out = out as PortId;
        if !self.send.get(out).is_none_or(HashMap::is_empty)
            && !self.recv.get(out).is_some_and(|r| r.contains(&vc))
        {
            self.stats.misdelivered += 1;
            return None;
        }
        self.used.insert((port, t.vc));
        self.stats.frames += 1;
        self.stats.cells += t.units;
        if !self.enforce(port, t) {
            return None;
        }
        t.vc = vc;
        Some(out)
    }

    /// Enforces the contract, if any, of the circuit (or else the path) `t` came in on; false
    /// if its policer left nothing of `t`.
    fn enforce<F>(&mut self, port: PortId, t: &mut Train<F>) -> bool {
        let channel = (port, t.vc);
        let key = if self.contracts.contains_key(&channel) {
            channel
        } else {
            (port, Vc::new(t.vc.vpi, 0))
        };
        let Some(c) = self.contracts.get_mut(&key) else {
            return true;
        };
        let v = c.apply(t);
        if v.broken > 0 {
            self.stats.cells_policed += v.broken;
            if c.tags() {
                self.stats.frames_tagged += 1;
            } else {
                self.stats.frames_policed += 1;
            }
        }
        self.stats.cells_discarded += v.discarded;
        self.stats.cells_shaped += v.delayed;
        self.stats.max_shaping_delay_ns = self.stats.max_shaping_delay_ns.max(v.held_ns);
        !v.gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shaper::VcContract;

    fn entry(p: u32, i: (u8, Option<u16>), q: u32, o: (u8, Option<u16>)) -> Entry {
        Entry {
            in_port: p,
            in_vpi: i.0,
            in_vci: i.1,
            out_port: q,
            out_vpi: o.0,
            out_vci: o.1,
        }
    }

    fn train(vc: Vc) -> Train<()> {
        let mut t = Train::between((), 0, 90, 10, 0, 0);
        t.vc = vc;
        t
    }

    /// Database ports 3 (a host, our port 0) and 16 (a trunk, our port 1).
    fn switch() -> VcSwitch {
        let mut s = VcSwitch::new(2, [(3, 0), (16, 1)]);
        s.bind(0, 7, Vc::new(0, 138));
        s
    }

    #[test]
    fn a_channel_is_switched_and_relabelled() {
        let mut s = switch();
        s.install(
            &[
                entry(3, (0, Some(138)), 16, (0, Some(40))),
                entry(16, (0, Some(40)), 3, (0, Some(138))),
            ],
            &[],
        )
        .unwrap();
        let mut t = train(Vc::default());
        assert!(s.label(0, Some(7), &mut t));
        assert_eq!(t.vc, Vc::new(0, 138));
        assert_eq!(s.route(0, &mut t), Some(1));
        assert_eq!(t.vc, Vc::new(0, 40));
        let mut back = train(Vc::new(0, 40));
        assert_eq!(s.route(1, &mut back), Some(0));
        assert_eq!(back.vc, Vc::new(0, 138));
        let st = s.stats();
        assert_eq!((st.frames, st.cells, st.circuits_used), (2, 20, 2));
    }

    #[test]
    fn a_path_keeps_the_vci() {
        let mut s = switch();
        s.install(&[entry(16, (5, None), 16, (9, None))], &[])
            .unwrap();
        let mut t = train(Vc::new(5, 321));
        assert_eq!(s.route(1, &mut t), Some(1));
        assert_eq!(t.vc, Vc::new(9, 321));
    }

    #[test]
    fn unknown_circuits_are_counted_and_dropped() {
        let mut s = switch();
        s.install(&[entry(3, (0, Some(138)), 16, (0, Some(40)))], &[])
            .unwrap();
        let mut t = train(Vc::new(0, 139));
        assert_eq!(s.route(0, &mut t), None);
        // Cleared, the circuit it had is unknown too; installed again, it is back.
        s.clear();
        let mut t = train(Vc::new(0, 138));
        assert_eq!(s.route(0, &mut t), None);
        let st = s.stats();
        assert_eq!((st.frames_unknown, st.cells_unknown, st.frames), (2, 20, 0));
        s.install(&[entry(3, (0, Some(138)), 16, (0, Some(40)))], &[])
            .unwrap();
        assert_eq!(s.route(0, &mut train(Vc::new(0, 138))), Some(1));
    }

    fn contract(police: bool) -> VcContract {
        VcContract {
            cdvt: crate::time::Duration(1_000),
            police,
            ..VcContract::peak(crate::units::Rate::mbps(26))
        }
    }

    fn on(port: u32, label: Vc, police: bool) -> PortContract {
        PortContract {
            in_port: port,
            label,
            contract: contract(police),
        }
    }

    #[test]
    fn a_circuit_s_contract_polices_its_cells_and_only_its_own() {
        let mut s = switch();
        let table = [
            entry(3, (0, Some(138)), 16, (0, Some(40))),
            entry(3, (0, Some(139)), 16, (0, Some(41))),
        ];
        let policed = [on(3, Vc::new(0, 138), true)];
        s.install(&table, &policed).unwrap();
        assert_eq!(
            s.held(),
            Held {
                entries: 2,
                contracts: 1
            }
        );
        // Ten cells 1 ns apart: far over 26 Mbit/s. The circuit under contract loses them; the
        // other circuit from the same port passes.
        let mut t = train(Vc::new(0, 138));
        assert_eq!(s.route(0, &mut t), Some(1));
        assert!(t.damaged);
        // Only the conforming first cell goes on.
        assert_eq!(t.units, 1);
        let mut u = train(Vc::new(0, 139));
        assert_eq!(s.route(0, &mut u), Some(1));
        assert!(!u.damaged);
        let st = s.stats();
        assert_eq!((st.frames_policed, st.cells_policed), (1, 9));
        // A contract on a port the switch does not have is refused, and the switch keeps what
        // it had.
        assert_eq!(
            s.install(&table, &[on(4, Vc::new(0, 138), true)]),
            Err(TableError::Port { port: 4 })
        );
        assert_eq!(s.held().contracts, 1);
    }

    #[test]
    fn a_cleared_switch_loses_its_contracts_with_its_table_and_gets_both_back() {
        let mut s = switch();
        let table = [entry(3, (0, Some(138)), 16, (0, Some(40)))];
        let policed = [on(3, Vc::new(0, 138), true)];
        s.install(&table, &policed).unwrap();
        s.clear();
        assert_eq!(s.held(), Held::default());
        // The table alone back: the circuit carries the whole train, unpoliced.
        s.install(&table, &[]).unwrap();
        let mut t = train(Vc::new(0, 138));
        assert_eq!(s.route(0, &mut t), Some(1));
        assert!(!t.damaged && t.units == 10);
        // With its contract, afresh (no cell seen): the first cell conforms, the others break it.
        s.install(&table, &policed).unwrap();
        let mut t = train(Vc::new(0, 138));
        assert_eq!(s.route(0, &mut t), Some(1));
        assert!(t.damaged && t.units == 1);
        assert_eq!(s.stats().cells_policed, 9);
    }

    #[test]
    fn a_path_s_contract_shapes_every_channel_inside_it_as_one_stream() {
        let mut s = switch();
        s.install(
            &[entry(16, (5, None), 16, (9, None))],
            &[on(16, Vc::new(5, 0), false)],
        )
        .unwrap();
        let inc = 1_000_000_000u64.div_ceil(26_000_000 / 424);
        let mut a = train(Vc::new(5, 300));
        let mut b = train(Vc::new(5, 301));
        s.route(1, &mut a);
        s.route(1, &mut b);
        // Two channels' ten cells each, one stream of twenty at the path's peak rate, less the
        // microsecond of tolerance each cell after the first may take.
        assert!(!a.damaged && !b.damaged);
        assert!(
            b.last() + 1_000 >= 19 * inc && b.last() <= 19 * inc,
            "{}",
            b.last()
        );
        assert_eq!(s.stats().cells_shaped, 19);
        assert_eq!(b.vc, Vc::new(9, 301));
    }

    #[test]
    fn hosts_send_only_on_their_circuits_and_accept_only_bound_labels() {
        let mut s = switch();
        assert!(!s.label(0, Some(8), &mut train(Vc::default())));
        assert!(!s.label(0, None, &mut train(Vc::default())));
        // An entry that delivers to the host on a label it has not bound.
        s.install(&[entry(16, (0, Some(40)), 3, (0, Some(99)))], &[])
            .unwrap();
        assert_eq!(s.route(1, &mut train(Vc::new(0, 40))), None);
        let st = s.stats();
        assert_eq!((st.unbound, st.group, st.misdelivered), (1, 1, 1));
    }
}
