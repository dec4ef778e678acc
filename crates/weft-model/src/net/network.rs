//! A network of switches built from a [`Topology`]: each host's link ends on a port of its
//! switch, trunks join switches, and frames are routed on shortest paths (broadcasts along a
//! spanning tree). The network is the sans-IO element both engines drive
//! ([`crate::engine::run`]): frames in from hosts, frames out to hosts, the next deadline.

use serde::Serialize;

use super::abr_loop::{AbrLoop, RmArrival};
use super::capture::{Direction, LinkId, Tap};
use super::egress::EgressStats;
use super::fabric_stage::{FabricStageError, FabricStats};
use super::frame::Frame;
use super::link_failure::FailTarget;
use super::pfc_loop::{Event, PfcLoop};
use super::switch::{PortDeadlines, PortKind, PortStats, SwitchCore};
use super::topology::{Topology, TopologyError};
use crate::element::{Element, PortId};
use crate::rng::Rng;
use crate::time::Instant;

/// A network that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// The topology is not valid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A switch's fabric cannot be built.
    #[error(transparent)]
    Fabric(#[from] FabricStageError),
}

/// Counters of a trunk, per direction.
#[derive(Clone, Debug, Serialize)]
pub struct TrunkStats {
    /// The two switches, by name.
    pub ends: [String; 2],
    /// The queue from the first end towards the second, and the other way.
    pub egress: [EgressStats; 2],
}

/// Where a trunk port leads.
#[derive(Clone, Copy, Debug)]
struct TrunkEnd {
    trunk: usize,
    peer: usize,
    peer_port: PortId,
    forward: bool,
}

/// The switches and links of a topology, as one element whose ports are the hosts.
pub struct Network<F> {
    switches: Vec<SwitchCore<F>>,
    names: Vec<String>,
    host_port: Vec<(usize, PortId)>,
    trunk_end: Vec<Vec<Option<TrunkEnd>>>,
    /// Every port's deadline, by its number in the network.
    due: PortDeadlines,
    /// The switch and port of each number in the network.
    port_at: Vec<(usize, PortId)>,
    /// The switches with an input-queued fabric.
    fabrics: Vec<usize>,
    /// The switches with forwarding processors (routers).
    routers: Vec<usize>,
    /// The trunk port (network number) whose trains are being handed on; its deadline is
    /// renewed when it has no more.
    trunk_serving: Option<usize>,
    tap: Option<Box<dyn Tap<F> + Send>>,
    /// The RM-cell loop of the hosts whose links are ABR sources (`None`: no such host).
    abr: Option<AbrLoop<F>>,
    /// RM cells delivered with the last frame (kept to reuse its allocation).
    rm: Vec<RmArrival>,
    /// Pause frames in flight and the hosts' NICs, when some link is lossless.
    pfc: Option<PfcLoop<F>>,
    /// The failures still to apply: instant (ns), what, down or back up; latest first.
    failures: Vec<(u64, FailTarget, bool)>,
    /// Whether the run has failures at all (to report what they cost).
    has_failures: bool,
}

impl<F> std::fmt::Debug for Network<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("switches", &self.names)
            .field("hosts", &self.host_port.len())
            .finish_non_exhaustive()
    }
}

impl<F: Frame> Network<F> {
    /// Builds the network of `topo` (validated first).
    pub fn new(topo: &Topology) -> Result<Self, NetworkError> {
        topo.validate()?;
        let ns = topo.switches.len();
        // Ports of each switch: its hosts in host order, then its trunks in trunk order.
        let mut ports: Vec<Vec<(PortKind, super::link::LinkSpec)>> = vec![Vec::new(); ns];
        let mut host_port = Vec::new();
        for (i, h) in topo.hosts.iter().enumerate() {
            host_port.push((h.switch, ports[h.switch].len()));
            ports[h.switch].push((PortKind::Host(i), h.link.clone()));
        }
        let mut trunk_port = Vec::new();
        for t in &topo.trunks {
            let [a, b] = t.ends;
            let pa = ports[a].len();
            ports[a].push((PortKind::Switch(b), t.links[0].clone()));
            let pb = ports[b].len();
            ports[b].push((PortKind::Switch(a), t.links[1].clone()));
            trunk_port.push([pa, pb]);
        }
        let mut trunk_end: Vec<Vec<Option<TrunkEnd>>> =
            ports.iter().map(|p| vec![None; p.len()]).collect();
        for (k, (t, [pa, pb])) in topo.trunks.iter().zip(&trunk_port).enumerate() {
            let [a, b] = t.ends;
            trunk_end[a][*pa] = Some(TrunkEnd {
                trunk: k,
                peer: b,
                peer_port: *pb,
                forward: true,
            });
            trunk_end[b][*pb] = Some(TrunkEnd {
                trunk: k,
                peer: a,
                peer_port: *pa,
                forward: false,
            });
        }
        let mut switches = Vec::with_capacity(ns);
        let mut port_at = Vec::new();
        for (s, spec) in topo.switches.iter().enumerate() {
            let seed = Rng::for_stream(topo.seed, 0x5717c4 + s as u64).next_u64();
            let mut sw = SwitchCore::new(
                &spec.fabric,
                &ports[s],
                spec.latency,
                spec.cut_through,
                seed,
                port_at.len(),
            )?;
            if let Some(b) = spec.shared_buffer {
                sw.set_shared_buffer(b);
            }
            if let Some(f) = spec.forwarding {
                sw.set_forwarding(f);
            }
            switches.push(sw);
            port_at.extend((0..ports[s].len()).map(|p| (s, p)));
        }
        // Routes: from every switch, the equal-cost ports towards every host on shortest paths
        // (one group per switch and destination switch), spread by the topology's multipath.
        let mut group = vec![0u16; ns];
        let mut on_switch: Vec<Vec<usize>> = vec![Vec::new(); ns];
        for (h, host) in topo.hosts.iter().enumerate() {
            on_switch[host.switch].push(h);
        }
        let adjacent = topo.adjacency();
        for (d, hosts) in on_switch.iter().enumerate().filter(|(_, h)| !h.is_empty()) {
            let ports = equal_cost_ports(&adjacent, &trunk_port, &topo.trunks, d);
            for (s, sw) in switches.iter_mut().enumerate() {
                group[s] = if s == d {
                    0
                } else if ports[s].is_empty() {
                    u16::MAX
                } else {
                    sw.group_of(&ports[s])
                };
            }
            for &h in hosts {
                for (s, sw) in switches.iter_mut().enumerate() {
                    if s == d {
                        sw.set_route(h, host_port[h].1);
                    } else if group[s] != u16::MAX {
                        sw.set_group(h, group[s]);
                    }
                }
            }
        }
        // The hosts of a concentrator's ring share its one port on the switch, the first host's
        // ([`super::Ringed`] hands the switch their frames there).
        for r in &topo.rings {
            let Some(&(s, p)) = r.port_host().and_then(|h| host_port.get(h)) else {
                continue;
            };
            for &h in &r.hosts {
                if host_port.get(h).is_some_and(|&(hs, _)| hs == s) {
                    switches[s].set_route(h, p);
                }
            }
        }
        for (s, sw) in switches.iter_mut().enumerate() {
            let seed = Rng::for_stream(topo.seed, 0xec3_0000 + s as u64).next_u64();
            sw.set_multipath(topo.multipath, seed);
        }
        // Broadcasts only along the spanning tree.
        let tree = topo.switch_tree();
        for (k, [pa, pb]) in trunk_port.iter().enumerate() {
            if !tree.contains(&Some(k)) {
                let [a, b] = topo.trunks[k].ends;
                switches[a].set_flood(*pa, false);
                switches[b].set_flood(*pb, false);
            }
        }
        if let Some(c) = &topo.circuits {
            super::vc_switch::install(&mut switches, c, &host_port, &trunk_port, topo)?;
        }
        Ok(Network {
            fabrics: (0..ns).filter(|&s| switches[s].has_fabric()).collect(),
            routers: (0..ns).filter(|&s| switches[s].has_forwarding()).collect(),
            switches,
            names: topo.switches.iter().map(|s| s.name.clone()).collect(),
            host_port,
            trunk_end,
            due: PortDeadlines::new(port_at.len()),
            port_at,
            trunk_serving: None,
            tap: None,
            abr: {
                let sources: Vec<usize> = (0..topo.hosts.len())
                    .filter(|&h| topo.hosts[h].link.abr.is_some() && topo.hosts[h].link.is_atm())
                    .collect();
                (!sources.is_empty()).then(|| AbrLoop::new(topo.hosts.len(), sources))
            },
            rm: Vec::new(),
            pfc: {
                let lossless = topo.hosts.iter().any(|h| h.link.pfc.is_some())
                    || topo
                        .trunks
                        .iter()
                        .any(|t| t.links.iter().any(|l| l.pfc.is_some()));
                let rates: Vec<_> = topo
                    .hosts
                    .iter()
                    .map(|h| h.link.pfc.and(h.link.rate))
                    .collect();
                lossless.then(|| PfcLoop::new(&rates))
            },
            failures: super::link_failure::schedule(&topo.failures),
            has_failures: !topo.failures.is_empty(),
        })
    }

    /// Reports every frame crossing a link to `tap` from now on.
    pub fn set_tap(&mut self, tap: Box<dyn Tap<F> + Send>) {
        self.tap = Some(tap);
    }

    /// Removes the tap (to finish its files).
    pub fn take_tap(&mut self) -> Option<Box<dyn Tap<F> + Send>> {
        self.tap.take()
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.host_port.len()
    }

    /// Applies the failures and returns due by `now`, each at its instant.
    fn apply_failures(&mut self, now: Instant) {
        while let Some(&(t, what, down)) = self.failures.last().filter(|f| f.0 <= now.0) {
            self.failures.pop();
            match what {
                FailTarget::Trunk(k) => self.set_trunk_down(Instant(t), k, down),
                FailTarget::Switch(s) => self.set_switch_down(Instant(t), s, down),
            };
        }
    }

    /// A frame from host `host` at `now`.
    pub fn handle_frame(&mut self, now: Instant, host: usize, frame: F) {
        if !self.failures.is_empty() {
            self.apply_failures(now);
        }
        let Some(&(s, p)) = self.host_port.get(host) else {
            return;
        };
        if let Some(l) = self.abr.as_mut().filter(|l| l.is_source(host)) {
            let busy = self.switches[s]
                .ingress_mut(p)
                .is_some_and(|i| i.free_at() > now.0);
            if busy || l.holds(host) {
                l.hold(host, frame);
                return;
            }
        }
        // A NIC paused, or holding frames from a pause, holds this one behind them.
        let frame = match self.pfc.as_mut() {
            Some(l) => match l.hold(
                now.0,
                host,
                frame,
                self.switches[s].ingress_free_at(p).unwrap_or(0),
            ) {
                Ok(()) => return,
                Err(f) => f,
            },
            None => frame,
        };
        self.inject(now, host, s, p, frame);
    }

    /// Host `host`'s frame goes on its line at `now` into port `p` of switch `s`: the tap sees
    /// it, the switch takes it, and the pauses that made are sent.
    fn inject(&mut self, now: Instant, host: usize, s: usize, p: PortId, frame: F) {
        if let Some(tap) = &mut self.tap {
            tap.record(LinkId::Host(host), now.0, Direction::FromHost, &frame);
        }
        self.switches[s].handle_frame(now, p, frame, host as u32, &mut self.due);
        self.send_pauses(s);
    }

    /// Sends the pause frames switch `s`'s lossless inputs have made on their way: each reaches
    /// the far end of its port a link delay later; an XOFF is refreshed while it is wanted.
    fn send_pauses(&mut self, s: usize) {
        let Some(l) = self.pfc.as_mut() else {
            return;
        };
        let sw = &mut self.switches[s];
        if !sw.has_pauses() {
            return;
        }
        sw.drain_pauses(&mut l.out);
        for p in l.out.drain(..) {
            let arrive = Instant(p.at + sw.port_delay(p.port));
            match sw.port_kind(p.port) {
                Some(PortKind::Host(host)) => l.events.push(
                    arrive,
                    Event::Host {
                        host,
                        frame: p.frame,
                    },
                ),
                Some(PortKind::Switch(_)) => {
                    if let Some(e) = self.trunk_end[s][p.port] {
                        l.events.push(
                            arrive,
                            Event::Pause {
                                s: e.peer,
                                port: e.peer_port,
                                frame: p.frame,
                            },
                        );
                    }
                }
                None => {}
            }
            if p.frame.quanta > 0
                && let Some(r) = sw.pause_refresh_at(p.port)
                && l.refreshing.insert((s, p.port))
            {
                l.events
                    .push(Instant(r), Event::Refresh { s, port: p.port });
            }
        }
    }

    /// Applies the pause frames, refreshes and NIC releases due by `now`.
    fn run_pfc(&mut self, now: Instant) {
        loop {
            let Some((at, ev)) = self.pfc.as_mut().and_then(|l| l.events.pop_due(now)) else {
                return;
            };
            match ev {
                Event::Pause { s, port, frame } => {
                    self.switches[s].handle_pause(at.0, port, frame, &mut self.due);
                }
                Event::Refresh { s, port } => {
                    if let Some(l) = self.pfc.as_mut() {
                        l.refreshing.remove(&(s, port));
                    }
                    self.switches[s].refresh_pauses(at.0, port);
                    self.send_pauses(s);
                    // An XOFF sent while this refresh was pending wants its own, later.
                    if let (Some(l), Some(r)) =
                        (self.pfc.as_mut(), self.switches[s].pause_refresh_at(port))
                        && r > at.0
                        && l.refreshing.insert((s, port))
                    {
                        l.events.push(Instant(r), Event::Refresh { s, port });
                    }
                }
                Event::Host { host, frame } => {
                    if let Some(l) = self.pfc.as_mut() {
                        l.pause_host(at.0, host, frame);
                    }
                }
                Event::Release { host } => {
                    if self
                        .pfc
                        .as_mut()
                        .is_some_and(|l| l.take_release(host, at.0))
                    {
                        self.release_host(at, host);
                    }
                }
            }
        }
    }

    /// Host `host`'s NIC sends what it holds from `now`, one frame each time its line is free,
    /// until its head is paused.
    fn release_host(&mut self, now: Instant, host: usize) {
        let Some(&(s, p)) = self.host_port.get(host) else {
            return;
        };
        loop {
            let free = self.switches[s].ingress_free_at(p).unwrap_or(0);
            let Some(l) = self.pfc.as_mut() else {
                return;
            };
            if free > now.0 {
                if l.holds(host) {
                    l.schedule(host, free);
                }
                return;
            }
            let Some(f) = l.next_frame(now.0, host) else {
                return;
            };
            self.inject(now, host, s, p, f);
        }
    }

    /// A PFC deadlock at `now` (ns), if there is one: a cycle of switch outputs, each paused by
    /// the next switch's input while that input's frames wait at the next output of the cycle,
    /// itself paused. Named `switch:port`, in order.
    pub fn pfc_deadlock(&self, now: u64) -> Option<Vec<String>> {
        self.pfc.as_ref()?;
        let mut waits = vec![Vec::new(); self.port_at.len()];
        for (g, &(s, p)) in self.port_at.iter().enumerate() {
            if !self.switches[s].port_paused(now, p) {
                continue;
            }
            let Some(e) = self.trunk_end[s][p] else {
                continue;
            };
            let peer_base = self.switches[e.peer].base();
            waits[g].extend(
                self.switches[e.peer]
                    .paused_holding(now, e.peer_port)
                    .map(|o| peer_base + o),
            );
        }
        let cycle = super::pfc::find_deadlock(&waits)?;
        Some(
            cycle
                .into_iter()
                .map(|g| {
                    let (s, p) = self.port_at[g];
                    format!("{}:{p}", self.names[s])
                })
                .collect(),
        )
    }

    /// Nanoseconds host `host`'s NIC was paused up to `now` (ns), and the most frames it held.
    pub fn host_pause(&self, now: u64, host: usize) -> (u64, usize) {
        self.pfc.as_ref().map_or((0, 0), |l| {
            (
                l.host_paused_ns(now, host),
                l.nics
                    .get(host)
                    .and_then(Option::as_ref)
                    .map_or(0, |n| n.max_held),
            )
        })
    }

    /// The refreshes of XOFFs pending (one per paused port at the most).
    #[cfg(test)]
    pub(super) fn refreshes_pending(&self) -> usize {
        self.pfc.as_ref().map_or(0, |l| {
            l.events
                .iter()
                .filter(|(_, e)| matches!(e, Event::Refresh { .. }))
                .count()
        })
    }

    /// Pause frames (XOFF and XON) the switches' lossless inputs sent, over every port.
    pub fn pfc_frames_sent(&self) -> u64 {
        self.port_at
            .iter()
            .filter_map(|&(s, p)| self.switches[s].port_stats(p)?.pfc)
            .map(|s| s.pauses_sent + s.resumes_sent)
            .sum()
    }

    /// Frames the switches' lossless inputs dropped beyond their headroom.
    pub fn pfc_drops(&self) -> u64 {
        self.switches.iter().map(|s| s.pfc_drops).sum()
    }

    /// Serves what has reached every router's forwarding processors by `now`.
    fn advance_routers(&mut self, now: Instant) {
        for &s in &self.routers {
            self.switches[s].advance_forwarding(now, &mut self.due);
        }
    }

    /// Moves what every input-queued fabric has delivered by `now` to its output queues.
    fn advance_fabrics(&mut self, now: Instant) {
        for &s in &self.fabrics {
            self.switches[s].advance_fabric(now, &mut self.due);
        }
    }

    /// Moves every train sent over a trunk by `now` to the switch at its far end: the trunk
    /// ports whose slot of arrivals has ended, in the order of their deadlines, each until it
    /// has no more.
    fn move_trunk_trains(&mut self, now: Instant) {
        loop {
            let g = match self.trunk_serving {
                Some(g) => g,
                None => match self.due.trunk.peek_due(now) {
                    Some(g) => g,
                    None => return,
                },
            };
            let (s, port) = self.port_at[g];
            let Some(t) = self.switches[s].poll_trunk_port(now, port) else {
                self.trunk_serving = None;
                self.switches[s].renew(port, &mut self.due);
                continue;
            };
            self.trunk_serving = Some(g);
            let Some(end) = self.trunk_end[s][port] else {
                continue;
            };
            if let Some(tap) = &mut self.tap {
                if !t.damaged {
                    let dir = if end.forward {
                        Direction::FromHost
                    } else {
                        Direction::ToHost
                    };
                    tap.record(LinkId::Trunk(end.trunk), t.last(), dir, &t.frame);
                }
            }
            self.switches[end.peer].handle_train(end.peer_port, t, &mut self.due);
            self.send_pauses(end.peer);
            self.send_pauses(s);
        }
    }

    /// The next frame due at a host at or before `now`: the host, the instant it was due and
    /// the frame. Trains due on trunks are handed on first; host ports are served in the order
    /// of their deadlines.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Instant, F)> {
        if !self.failures.is_empty() {
            self.apply_failures(now);
        }
        if self.abr.is_some() {
            self.return_rm(now);
        }
        if self.pfc.is_some() {
            self.run_pfc(now);
        }
        if !self.routers.is_empty() {
            self.advance_routers(now);
        }
        if !self.fabrics.is_empty() {
            self.advance_fabrics(now);
        }
        self.move_trunk_trains(now);
        if !self.routers.is_empty() {
            self.advance_routers(now);
        }
        if !self.fabrics.is_empty() {
            self.advance_fabrics(now);
        }
        while let Some(g) = self.due.host.peek_due(now) {
            let (s, port) = self.port_at[g];
            let got = self.switches[s].poll_host_port(now, port, &mut self.due);
            self.send_pauses(s);
            let Some((due, frame)) = got else {
                continue;
            };
            let Some(PortKind::Host(to)) = self.switches[s].port_kind(port) else {
                continue;
            };
            if let Some(tap) = &mut self.tap {
                tap.record(LinkId::Host(to), due, Direction::ToHost, &frame);
            }
            if self.abr.is_some() {
                self.turn_rm_around(s, port, to);
            }
            return Some((to, Instant(due), frame));
        }
        None
    }

    /// Turns around the RM cells delivered to host `to` (on port `port` of switch `s`).
    fn turn_rm_around(&mut self, s: usize, port: PortId, to: usize) {
        self.switches[s].drain_rm(port, &mut self.rm);
        for a in self.rm.drain(..) {
            let Some(&(ss, sp)) = self.host_port.get(a.flow as usize) else {
                continue;
            };
            let er = self.switches[ss]
                .ingress_mut(sp)
                .and_then(|i| i.abr_peak())
                .unwrap_or(crate::units::Rate(u64::MAX));
            if let Some(l) = self.abr.as_mut() {
                l.handle_arrival(to, a, er);
            }
        }
    }

    /// Hands the backward RM cells due by `now` to their sources, and their held frames to the
    /// sources whose lines are free by then.
    fn return_rm(&mut self, now: Instant) {
        let sources = self.abr.as_ref().map_or(0, |l| l.sources().len());
        for k in 0..sources {
            let Some(h) = self.abr.as_ref().map(|l| l.sources()[k]) else {
                break;
            };
            let (s, p) = self.host_port[h];
            while self.switches[s]
                .ingress_mut(p)
                .is_some_and(|i| i.free_at() <= now.0)
            {
                let Some(f) = self.abr.as_mut().and_then(|l| l.release(h)) else {
                    break;
                };
                self.inject(now, h, s, p, f);
            }
        }
        while let Some((h, rm)) = self.abr.as_mut().and_then(|l| l.poll_backward(now)) {
            let Some(&(s, p)) = self.host_port.get(h) else {
                continue;
            };
            if let Some(i) = self.switches[s].ingress_mut(p) {
                i.handle_backward_rm(rm);
            }
        }
    }

    /// The earliest instant at which something changes without new input.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.trunk_serving.is_some() {
            return Some(Instant::ZERO);
        }
        let earlier = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        let mut t = earlier(self.due.host.peek_time(), self.due.trunk.peek_time());
        if let Some(l) = &self.abr {
            t = earlier(t, l.poll_timeout());
            for &h in l.sources().iter().filter(|&&h| l.holds(h)) {
                let (s, p) = self.host_port[h];
                t = earlier(
                    t,
                    self.switch(s)
                        .and_then(|x| x.ingress_free_at(p))
                        .map(Instant),
                );
            }
        }
        for &s in &self.fabrics {
            t = earlier(t, self.switches[s].fabric_timeout());
        }
        for &s in &self.routers {
            t = earlier(t, self.switches[s].forwarding_timeout());
        }
        if let Some(l) = &self.pfc {
            t = earlier(t, l.events.peek_time());
        }
        t = earlier(t, self.failures.last().map(|f| Instant(f.0)));
        t
    }

    /// Counters of host `host`'s port: its link towards the switch, and the switch's queue
    /// towards it.
    pub fn host_stats(&self, host: usize) -> Option<PortStats> {
        let &(s, p) = self.host_port.get(host)?;
        self.switches[s].port_stats(p)
    }

    /// What the switch's queue towards host `host` holds now (cells, bytes or frames).
    pub fn host_queue(&self, host: usize) -> u64 {
        self.host_port
            .get(host)
            .map_or(0, |&(s, p)| self.switches[s].port_occupancy(p))
    }

    /// Counters of every host's port, in host order.
    pub fn all_host_stats(&self) -> Vec<PortStats> {
        (0..self.host_port.len())
            .filter_map(|h| self.host_stats(h))
            .collect()
    }

    /// Counters of every trunk, in trunk order.
    pub fn trunk_stats(&self) -> Vec<TrunkStats> {
        let mut out: Vec<TrunkStats> = Vec::new();
        for (s, ends) in self.trunk_end.iter().enumerate() {
            for (p, e) in ends.iter().enumerate() {
                let Some(e) = e.filter(|e| e.forward) else {
                    continue;
                };
                let here = self.switches[s].port_stats(p).unwrap_or_default().egress;
                let back = self.switches[e.peer]
                    .port_stats(e.peer_port)
                    .unwrap_or_default()
                    .egress;
                out.push(TrunkStats {
                    ends: [self.names[s].clone(), self.names[e.peer].clone()],
                    egress: [here, back],
                });
            }
        }
        out
    }

    /// The fabric counters of the first switch with an input-queued fabric.
    pub fn fabric_stats(&self) -> Option<FabricStats> {
        self.switches.iter().find_map(SwitchCore::fabric_stats)
    }

    /// The most bytes any switch's shared buffer held at once (`None`: no switch has one,
    /// [`super::SharedBufferSpec`]).
    pub fn shared_buffer_peak(&self) -> Option<u64> {
        self.switches
            .iter()
            .filter_map(|s| s.shared_buffer().map(|b| b.max_used))
            .max()
    }

    /// The counters of every router's forwarding processors, by switch name, in topology order
    /// (empty: no switch has any).
    pub fn router_stats(&self) -> Vec<(String, super::ForwardingStats)> {
        self.routers
            .iter()
            .filter_map(|&s| Some((self.names[s].clone(), self.switches[s].forwarding_stats()?)))
            .collect()
    }

    /// Switch `s` (topology order).
    pub fn switch(&self, s: usize) -> Option<&SwitchCore<F>> {
        self.switches.get(s)
    }

    /// Switch `s`, to change its tables.
    pub fn switch_mut(&mut self, s: usize) -> Option<&mut SwitchCore<F>> {
        self.switches.get_mut(s)
    }

    /// The index of the switch called `name`.
    pub fn switch_index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Takes trunk `k` (topology order) down at `now`, both ways, or brings it back up
    /// (`down` false): see [`SwitchCore::set_port_down`]. Returns the frames its two outputs
    /// lost.
    pub fn set_trunk_down(&mut self, now: Instant, k: usize, down: bool) -> u64 {
        let mut lost = 0;
        for (s, p) in self.trunk_ports(k) {
            lost += self.switches[s].set_port_down(now, p, down, &mut self.due);
            self.send_pauses(s);
        }
        lost
    }

    /// Takes switch `s` down at `now` (every port of it, and its neighbours' ports towards it),
    /// or brings it back up (`down` false). Returns the frames lost.
    pub fn set_switch_down(&mut self, now: Instant, s: usize, down: bool) -> u64 {
        let Some(ends) = self.trunk_end.get(s) else {
            return 0;
        };
        let peers: Vec<(usize, PortId)> = ends
            .iter()
            .flatten()
            .map(|e| (e.peer, e.peer_port))
            .collect();
        let mut lost = 0;
        for p in 0..self.switches[s].ports() {
            lost += self.switches[s].set_port_down(now, p, down, &mut self.due);
        }
        self.send_pauses(s);
        for (o, p) in peers {
            lost += self.switches[o].set_port_down(now, p, down, &mut self.due);
            self.send_pauses(o);
        }
        lost
    }

    /// The two ends (switch, port) of trunk `k`.
    fn trunk_ports(&self, k: usize) -> Vec<(usize, PortId)> {
        let mut out = Vec::new();
        for (s, ends) in self.trunk_end.iter().enumerate() {
            for (p, e) in ends.iter().enumerate() {
                if e.is_some_and(|e| e.trunk == k) {
                    out.push((s, p));
                }
            }
        }
        out
    }

    /// Whether links or switches fail during the run (`Topology::failures`).
    pub fn has_failures(&self) -> bool {
        self.has_failures
    }

    /// Frames lost to failures ([`Network::set_trunk_down`], [`Network::set_switch_down`]):
    /// per port that lost any, named `switch:port`, and dropped for want of a live path, over
    /// every switch.
    pub fn fail_lost(&self) -> (Vec<(String, u64)>, u64) {
        let mut ports = Vec::new();
        for &(x, p) in &self.port_at {
            let n = self.switches[x].down.lost(p);
            if n > 0 {
                ports.push((format!("{}:{p}", self.names[x]), n));
            }
        }
        let unrouted = self.switches.iter().map(|s| s.down.unrouted).sum();
        (ports, unrouted)
    }

    /// Frames that were too short to switch or had nowhere to go, over all switches.
    pub fn runts(&self) -> u64 {
        self.switches.iter().map(|s| s.runts).sum()
    }
}

/// For every switch, its ports on a shortest path to switch `d` (trunk order; empty for `d`
/// itself and for switches that cannot reach it): the trunks to neighbours one hop nearer.
fn equal_cost_ports(
    adjacent: &[Vec<(usize, usize)>],
    trunk_port: &[[PortId; 2]],
    trunks: &[super::topology::TrunkSpec],
    d: usize,
) -> Vec<Vec<PortId>> {
    let n = adjacent.len();
    let mut dist = vec![u32::MAX; n];
    dist[d] = 0;
    let mut queue = std::collections::VecDeque::from([d]);
    while let Some(s) = queue.pop_front() {
        for &(_, o) in &adjacent[s] {
            if dist[o] == u32::MAX {
                dist[o] = dist[s] + 1;
                queue.push_back(o);
            }
        }
    }
    (0..n)
        .map(|s| {
            if s == d || dist[s] == u32::MAX {
                return Vec::new();
            }
            adjacent[s]
                .iter()
                .filter(|&&(_, o)| dist[o] + 1 == dist[s])
                .map(|&(k, _)| {
                    let side = usize::from(trunks[k].ends[0] != s);
                    trunk_port[k][side]
                })
                .collect()
        })
        .collect()
}

impl<F: Frame> Element<F> for Network<F> {
    fn handle_input(&mut self, now: Instant, port: PortId, item: F) {
        self.handle_frame(now, port, item);
    }
    fn poll_output(&mut self, now: Instant) -> Option<(PortId, F)> {
        self.poll_transmit(now).map(|(h, _, f)| (h, f))
    }
    fn poll_output_due(&mut self, now: Instant) -> Option<(PortId, Instant, F)> {
        self.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Network::poll_timeout(self)
    }
}
