//! One switch: ports, each with an output queue ([`Egress`]) and, on a host's port, the host's
//! side of the link ([`Ingress`]); between them nothing (output-queued) or an input-queued cell
//! fabric ([`FabricStage`]). Frames go to the port towards their destination MAC (a table the
//! network fills from the topology, plus addresses learned from unknown senders); broadcast and
//! unknown destinations are flooded on the ports of the spanning tree, bypassing the fabric.
//! Nothing here reads a clock.

use std::collections::HashMap;

use serde::Serialize;

use super::egress::{Egress, EgressStats};
use super::fabric_stage::{FabricSpec, FabricStage, FabricStageError, FabricStats};
use super::frame::{Frame, Mac, host_of_mac, is_group};
use super::ingress::{Ingress, IngressStats};
use super::link::LinkSpec;
use super::train::Train;
use crate::element::PortId;
use crate::engine::Deadlines;
use crate::fabric::Rng;
use crate::time::{Duration, Instant};

/// Addresses a switch learns from senders it has no route for, at most.
pub const MAX_LEARNED: usize = 4096;

/// What is at the far end of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PortKind {
    /// A host (the index of the host in the topology).
    Host(usize),
    /// Another switch.
    Switch(usize),
}

/// The counters of one port.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PortStats {
    /// Host to switch (a host's port).
    pub ingress: IngressStats,
    /// Switch to the far end.
    pub egress: EgressStats,
}

struct Port<F> {
    kind: PortKind,
    ingress: Option<Ingress>,
    egress: Egress<F>,
}

/// One switch of a network.
pub struct SwitchCore<F> {
    ports: Vec<Port<F>>,
    fabric: Option<FabricStage<F>>,
    /// Output port towards host `i` (by its MAC, [`super::frame::host_mac`]).
    to_host: Vec<Option<PortId>>,
    learned: HashMap<Mac, PortId>,
    flood: Vec<bool>,
    latency: u64,
    /// Each host port's next deadline.
    due: Deadlines,
    /// Each trunk port's next deadline, apart from the host ports' so that the engine's poll
    /// for trunk trains on every turn costs one look at the earliest.
    trunk_due: Deadlines,
    /// The trunk port whose trains [`SwitchCore::poll_trunk_train`] is taking (its slot of
    /// arrivals has ended); its deadline is renewed when it has no more.
    trunk_serving: Option<PortId>,
    /// Trains an ingress line made of one frame (kept to reuse its allocation).
    trains: Vec<Train<F>>,
    /// Frames that were too short to switch, or had nowhere to go.
    pub runts: u64,
}

impl<F> std::fmt::Debug for SwitchCore<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwitchCore")
            .field("ports", &self.ports.len())
            .finish_non_exhaustive()
    }
}

impl<F: Frame> SwitchCore<F> {
    /// A switch with `fabric` whose ports lead to `ports` over the given links; random choices
    /// (fair order, faults, fabric contention) drawn from streams of `seed`. `latency` is added
    /// to every frame that crosses it.
    pub fn new(
        fabric: &FabricSpec,
        ports: &[(PortKind, LinkSpec)],
        latency: Duration,
        seed: u64,
    ) -> Result<Self, FabricStageError> {
        let built = ports
            .iter()
            .enumerate()
            .map(|(i, (kind, link))| Port {
                kind: *kind,
                ingress: matches!(kind, PortKind::Host(_))
                    .then(|| Ingress::new(link, Rng::for_stream(seed, 2 * i as u64))),
                egress: Egress::new(
                    link,
                    Rng::for_stream(seed, 2 * i as u64 + 1),
                    matches!(kind, PortKind::Switch(_)),
                ),
            })
            .collect();
        let links = ports.iter().map(|(_, l)| l.clone()).collect();
        Ok(SwitchCore {
            ports: built,
            fabric: FabricStage::new(fabric, links, seed ^ 0xfab)?,
            to_host: Vec::new(),
            learned: HashMap::new(),
            flood: vec![true; ports.len()],
            latency: latency.as_nanos(),
            due: Deadlines::new(ports.len()),
            trunk_due: Deadlines::new(ports.len()),
            trunk_serving: None,
            trains: Vec::new(),
            runts: 0,
        })
    }

    /// Records port `port`'s new deadline after its queue changed.
    fn reschedule(&mut self, port: PortId) {
        self.schedule(port, false);
    }

    /// Port `port`'s next deadline after it was served (behind the other ports due at the
    /// same instant).
    fn renew(&mut self, port: PortId) {
        self.schedule(port, true);
    }

    fn schedule(&mut self, port: PortId, served: bool) {
        let p = &self.ports[port];
        let t = p.egress.poll_timeout().map(Instant);
        let due = match p.kind {
            PortKind::Host(_) => &mut self.due,
            PortKind::Switch(_) => &mut self.trunk_due,
        };
        if served {
            due.renew(port, t);
        } else {
            due.set(port, t);
        }
    }

    /// Number of ports.
    pub fn ports(&self) -> usize {
        self.ports.len()
    }

    /// What is at the far end of `port`.
    pub fn port_kind(&self, port: PortId) -> Option<PortKind> {
        self.ports.get(port).map(|p| p.kind)
    }

    /// Sets the port towards host `host`.
    pub fn set_route(&mut self, host: usize, port: PortId) {
        if self.to_host.len() <= host {
            self.to_host.resize(host + 1, None);
        }
        self.to_host[host] = Some(port);
    }

    /// Whether broadcasts go out of `port` (off for trunks outside the spanning tree).
    pub fn set_flood(&mut self, port: PortId, on: bool) {
        if let Some(f) = self.flood.get_mut(port) {
            *f = on;
        }
    }

    /// A frame from the host on `port` at `now`, of flow `flow`.
    pub fn handle_frame(&mut self, now: Instant, port: PortId, frame: F, flow: u32) {
        if frame.frame_len() < super::frame::ETH_HEADER {
            self.runts += 1;
            return;
        }
        let Some(ingress) = self.ports.get_mut(port).and_then(|p| p.ingress.as_mut()) else {
            self.runts += 1;
            return;
        };
        let mut trains = std::mem::take(&mut self.trains);
        ingress.handle_frame(now, frame, &mut |t| trains.push(t));
        for mut t in trains.drain(..) {
            t.flow = flow;
            self.handle_train(port, t);
        }
        self.trains = trains;
    }

    /// A train reaches the switch on `port` (from its host's line, or from another switch).
    pub fn handle_train(&mut self, port: PortId, mut t: Train<F>) {
        if port >= self.ports.len() {
            self.runts += 1;
            return;
        }
        t.first += self.latency;
        let (dst, src) = (t.frame.dst(), t.frame.src());
        if !is_group(&src) && host_of_mac(&src).is_none() && self.learned.len() < MAX_LEARNED {
            self.learned.entry(src).or_insert(port);
        }
        let out = if is_group(&dst) {
            None
        } else {
            host_of_mac(&dst)
                .and_then(|h| self.to_host.get(h).copied().flatten())
                .or_else(|| self.learned.get(&dst).copied())
        };
        match out {
            Some(o) if o == port => self.runts += 1,
            Some(o) => match &mut self.fabric {
                Some(f) => f.handle_train(port, o, t),
                None => {
                    self.ports[o].egress.handle_train(t);
                    self.reschedule(o);
                }
            },
            None => {
                for o in 0..self.ports.len() {
                    if o != port && self.flood[o] {
                        self.ports[o].egress.handle_train(t.clone());
                        self.reschedule(o);
                    }
                }
            }
        }
    }

    /// Moves what the fabric has delivered by `now` to the output queues (nothing to do on an
    /// output-queued switch: asked on every poll, so the test is inlined).
    #[inline]
    fn advance_fabric(&mut self, now: u64) {
        if self.fabric.is_some() {
            self.advance_fabric_now(now);
        }
    }

    fn advance_fabric_now(&mut self, now: u64) {
        let Some(f) = self
            .fabric
            .as_mut()
            .filter(|f| f.poll_timeout().is_some_and(|t| t <= now))
        else {
            return;
        };
        let ports = &mut self.ports;
        let mut touched = Vec::new();
        f.advance(now, &mut |o: usize, t: Train<F>| {
            if let Some(p) = ports.get_mut(o) {
                p.egress.handle_train(t);
                touched.push(o);
            }
        });
        for o in touched {
            self.reschedule(o);
        }
    }

    /// The next frame due at a host at or before `now`: its port, due instant (ns) and the
    /// frame. Ports are served in the order of their deadlines.
    pub fn poll_host_frame(&mut self, now: Instant) -> Option<(PortId, u64, F)> {
        self.advance_fabric(now.as_nanos());
        while let Some(port) = self.due.peek_due(now) {
            let got = self.ports[port].egress.poll_frame(now.as_nanos());
            self.renew(port);
            if let Some((due, frame)) = got {
                return Some((port, due, frame));
            }
        }
        None
    }

    /// True if [`SwitchCore::poll_host_frame`] may have a frame at `now` (a port or the fabric
    /// is due): a cheap test for the engine's every turn.
    #[inline]
    pub fn host_frame_due(&self, now: Instant) -> bool {
        self.due.peek_time().is_some_and(|t| t <= now) || self.fabric_due(now)
    }

    /// True if [`SwitchCore::poll_trunk_train`] may have a train at `now`.
    #[inline]
    pub fn trunk_train_due(&self, now: Instant) -> bool {
        self.trunk_serving.is_some()
            || self.trunk_due.peek_time().is_some_and(|t| t <= now)
            || self.fabric_due(now)
    }

    #[inline]
    fn fabric_due(&self, now: Instant) -> bool {
        self.fabric
            .as_ref()
            .and_then(FabricStage::poll_timeout)
            .is_some_and(|t| t <= now.0)
    }

    /// The next train sent towards another switch by `now`: its port and the train. A trunk
    /// port whose slot of arrivals has ended gives all the trains it can, in the order sent,
    /// before the next port due is served.
    pub fn poll_trunk_train(&mut self, now: Instant) -> Option<(PortId, Train<F>)> {
        self.advance_fabric(now.as_nanos());
        loop {
            let port = match self.trunk_serving {
                Some(p) => p,
                None => self.trunk_due.peek_due(now)?,
            };
            if let Some(t) = self.ports[port].egress.poll_train(now.as_nanos()) {
                self.trunk_serving = Some(port);
                return Some((port, t));
            }
            self.trunk_serving = None;
            self.renew(port);
        }
    }

    /// The earliest instant at which something changes without new input.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.trunk_serving.is_some() {
            return Some(Instant::ZERO);
        }
        let ports = match (self.due.peek_time(), self.trunk_due.peek_time()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let fabric = self
            .fabric
            .as_ref()
            .and_then(FabricStage::poll_timeout)
            .map(Instant);
        match (ports, fabric) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The fabric's counters (`None`: output-queued).
    pub fn fabric_stats(&self) -> Option<FabricStats> {
        self.fabric.as_ref().map(|f| f.stats.clone())
    }

    /// What the output queue of `port` holds now (cells, bytes or frames).
    pub fn port_occupancy(&self, port: PortId) -> u64 {
        self.ports.get(port).map_or(0, |p| p.egress.occupancy())
    }

    /// Counters of `port`.
    pub fn port_stats(&self, port: PortId) -> Option<PortStats> {
        self.ports.get(port).map(|p| PortStats {
            ingress: p
                .ingress
                .as_ref()
                .map(|i| i.stats.clone())
                .unwrap_or_default(),
            egress: p.egress.stats.clone(),
        })
    }
}
