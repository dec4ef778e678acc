//! One switch: ports, each with an output queue ([`Egress`]) and, on a host's port, the host's
//! side of the link ([`Ingress`]); between them nothing (output-queued) or an input-queued cell
//! fabric ([`FabricStage`]). Frames go to the port towards their destination MAC (a table the
//! network fills from the topology, plus addresses learned from unknown senders); broadcast and
//! unknown destinations are flooded on the ports of the spanning tree, bypassing the fabric.
//! Each port's next deadline goes into the network's [`PortDeadlines`], which serves the ports
//! of all its switches in one order. Nothing here reads a clock.

use std::collections::HashMap;

use serde::Serialize;

use super::egress::{Egress, EgressStats, Released};
use super::fabric_stage::{FabricSpec, FabricStage, FabricStageError, FabricStats};
use super::forwarding::{Forwarded, Forwarder, ForwardingSpec, ForwardingStats};
use super::frame::{Frame, Mac, host_of_mac, is_group};
use super::ingress::{Ingress, IngressStats};
use super::link::LinkSpec;
use super::multipath::{Multipath, PathChooser};
use super::pfc::{Admit, PauseFrame, PfcIngress, PfcIngressStats};
use super::port_failure::DownPorts;
use super::shared_buffer::{SharedBuffer, SharedBufferSpec};
use super::train::{Counted, Train};
use super::vc_switch::VcSwitch;
use crate::element::PortId;
use crate::engine::Deadlines;
use crate::rng::Rng;
use crate::time::{Duration, Instant};

/// Addresses a switch learns from senders it has no route for, at most.
pub const MAX_LEARNED: usize = 4096;

/// The group of a host the switch has no route to.
const NO_ROUTE: u16 = u16::MAX;

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
    /// The lossless input from the far end ([`LinkSpec::pfc`]; absent when lossy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc: Option<PfcIngressStats>,
}

/// A pause frame a switch's lossless input sends its far end: the port, the instant it leaves
/// (ns) and the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseOut {
    /// The port whose far end is paused or resumed.
    pub port: PortId,
    /// When it is sent (ns).
    pub at: u64,
    /// The pause frame.
    pub frame: PauseFrame,
}

/// The deadlines of the ports of all the switches of a network, each port under its number in
/// the network (its switch's first number plus its own): host ports and trunk ports apart, so
/// that the next port due, and whether a trunk has trains to hand on, are one look each.
#[derive(Clone, Debug, Default)]
pub struct PortDeadlines {
    /// Ports towards hosts.
    pub host: Deadlines,
    /// Ports towards other switches.
    pub trunk: Deadlines,
}

impl PortDeadlines {
    /// The deadlines of `ports` ports, none set.
    pub fn new(ports: usize) -> Self {
        PortDeadlines {
            host: Deadlines::new(ports),
            trunk: Deadlines::new(ports),
        }
    }
}

struct Port<F> {
    kind: PortKind,
    ingress: Option<Ingress>,
    egress: Egress<F>,
    /// The lossless input from the far end: bytes per class that came in by this port.
    pfc: Option<PfcIngress>,
}

/// One switch of a network.
pub struct SwitchCore<F> {
    ports: Vec<Port<F>>,
    fabric: Option<FabricStage<F>>,
    /// The group of equal-cost output ports towards host `i` (by its MAC,
    /// [`super::frame::host_mac`]), an index into `groups`; [`NO_ROUTE`] for none.
    to_host: Vec<u16>,
    /// Sets of equal-cost output ports, each once.
    groups: Vec<Box<[PortId]>>,
    /// Which port of a group a frame takes.
    paths: PathChooser,
    learned: HashMap<Mac, PortId>,
    flood: Vec<bool>,
    latency: u64,
    /// Each port's link, when the switch cuts through (to time a frame on its way in and out).
    cut_through: Option<Vec<LinkSpec>>,
    /// The network's number of this switch's port 0 (its ports' deadlines are kept by the
    /// network, [`PortDeadlines`], under these numbers).
    base: usize,
    /// Trains an ingress line made of one frame (kept to reuse its allocation).
    trains: Vec<Train<F>>,
    /// Its circuits, when it forwards by VPI/VCI instead of by MAC address.
    vc: Option<VcSwitch>,
    /// Pause frames its lossless inputs have to send ([`SwitchCore::drain_pauses`]).
    pauses: Vec<PauseOut>,
    /// Frames its held queues released (kept to reuse its allocation).
    released: Vec<Released>,
    /// The buffer its Ethernet output queues share, when it has one
    /// ([`SwitchCore::set_shared_buffer`]); lent to each output while it is served.
    pool: Option<SharedBuffer>,
    /// Its forwarding processors, when it is a router whose packets each cost it time
    /// ([`SwitchCore::set_forwarding`]).
    forwarder: Option<Forwarder<F>>,
    /// Frames a lossless input dropped beyond its headroom, over all ports.
    pub pfc_drops: u64,
    /// Frames that were too short to switch, or had nowhere to go.
    pub runts: u64,
    /// Its ports that are down ([`SwitchCore::set_port_down`]), and what they lost.
    pub down: DownPorts,
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
    /// to every frame that crosses it; with `cut_through` a frame goes on from the instant its
    /// first bit arrived (plus `latency`) instead of its last, but never so early that the
    /// output would send bits not yet received ([`SwitchCore::handle_train`]). Its ports are
    /// numbered from `base` in the network's [`PortDeadlines`].
    pub fn new(
        fabric: &FabricSpec,
        ports: &[(PortKind, LinkSpec)],
        latency: Duration,
        cut_through: bool,
        seed: u64,
        base: usize,
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
                pfc: link
                    .pfc
                    .filter(|_| !link.is_atm())
                    .map(|p| PfcIngress::new(p, link.rate.unwrap_or(crate::units::Rate(u64::MAX)))),
            })
            .collect();
        let links = ports.iter().map(|(_, l)| l.clone()).collect();
        Ok(SwitchCore {
            ports: built,
            fabric: FabricStage::new(fabric, links, seed ^ 0xfab)?,
            to_host: Vec::new(),
            groups: Vec::new(),
            paths: PathChooser::new(Multipath::default(), seed ^ 0xec3),
            learned: HashMap::new(),
            flood: vec![true; ports.len()],
            latency: latency.as_nanos(),
            cut_through: cut_through.then(|| ports.iter().map(|(_, l)| l.clone()).collect()),
            base,
            trains: Vec::new(),
            vc: None,
            pauses: Vec::new(),
            released: Vec::new(),
            pool: None,
            forwarder: None,
            pfc_drops: 0,
            runts: 0,
            down: DownPorts::default(),
        })
    }

    /// Records port `port`'s new deadline in `d` after its queue changed.
    fn reschedule(&self, port: PortId, d: &mut PortDeadlines) {
        self.schedule(port, false, d);
    }

    /// Port `port`'s next deadline after it was served (behind the other ports due at the
    /// same instant).
    pub fn renew(&self, port: PortId, d: &mut PortDeadlines) {
        self.schedule(port, true, d);
    }

    fn schedule(&self, port: PortId, served: bool, d: &mut PortDeadlines) {
        let p = &self.ports[port];
        let t = p.egress.poll_timeout().map(Instant);
        let due = match p.kind {
            PortKind::Host(_) => &mut d.host,
            PortKind::Switch(_) => &mut d.trunk,
        };
        if served {
            due.renew(self.base + port, t);
        } else {
            due.set(self.base + port, t);
        }
    }

    /// The network's number of its port 0 ([`PortDeadlines`]).
    pub fn base(&self) -> usize {
        self.base
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
        let g = self.group_of(&[port]);
        self.set_group(host, g);
    }

    /// Sets the equal-cost ports towards host `host` (none: no route).
    pub fn set_routes(&mut self, host: usize, ports: &[PortId]) {
        let g = if ports.is_empty() {
            NO_ROUTE
        } else {
            self.group_of(ports)
        };
        self.set_group(host, g);
    }

    /// How frames are spread over equal-cost ports, with its random stream from `seed`.
    pub fn set_multipath(&mut self, policy: Multipath, seed: u64) {
        self.paths = PathChooser::new(policy, seed);
    }

    /// The group (index) of `ports`, added if new.
    pub fn group_of(&mut self, ports: &[PortId]) -> u16 {
        if let Some(g) = self.groups.iter().position(|g| **g == *ports) {
            return g as u16;
        }
        self.groups.push(ports.into());
        (self.groups.len() - 1) as u16
    }

    /// Sets the group towards host `host`.
    pub fn set_group(&mut self, host: usize, group: u16) {
        if self.to_host.len() <= host {
            self.to_host.resize(host + 1, NO_ROUTE);
        }
        self.to_host[host] = group;
    }

    /// The port a frame of `t` to host `h` leaves by, if the switch has a route: `Some(None)`
    /// when every port of the route is down. Only the ports that are up are chosen from, so
    /// multipath forwarding rehashes over what remains.
    fn route(&mut self, h: usize, t: &Train<F>) -> Option<Option<PortId>> {
        let g = *self.to_host.get(h).filter(|&&g| g != NO_ROUTE)? as usize;
        let ports = self.down.live(self.groups.get(g)?);
        Some(match ports.len() {
            0 => None,
            1 => Some(ports[0]),
            _ => Some(self.paths.choose(t.first, t.frame.flow_key(), g, ports)),
        })
    }

    /// Whether broadcasts go out of `port` (off for trunks outside the spanning tree).
    pub fn set_flood(&mut self, port: PortId, on: bool) {
        if let Some(f) = self.flood.get_mut(port) {
            *f = on;
        }
    }

    /// A frame from the host on `port` at `now`, of flow `flow`.
    pub fn handle_frame(
        &mut self,
        now: Instant,
        port: PortId,
        frame: F,
        flow: u32,
        d: &mut PortDeadlines,
    ) {
        if frame.frame_len() < super::frame::ETH_HEADER {
            self.runts += 1;
            return;
        }
        if self.down.is_down(port) {
            self.down.add_lost(port, 1);
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
            if let Some(vc) = &mut self.vc {
                let dst = t.frame.dst();
                let to = if is_group(&dst) {
                    None
                } else {
                    host_of_mac(&dst)
                };
                if !vc.label(port, to, &mut t) {
                    continue;
                }
            }
            self.handle_train(port, t, d);
        }
        self.trains = trains;
    }

    /// A train reaches the switch on `port` (from its host's line, or from another switch).
    pub fn handle_train(&mut self, port: PortId, mut t: Train<F>, d: &mut PortDeadlines) {
        if port >= self.ports.len() {
            self.runts += 1;
            return;
        }
        let at = t.last();
        let Some(counted) = self.admit(port, &t) else {
            return;
        };
        t.first += self.latency;
        if let Some(vc) = &mut self.vc {
            if let Some(o) = vc.route(port, &mut t) {
                self.forward(port, o, t, d);
            }
            self.release(counted, at);
            return;
        }
        let (dst, src) = (t.frame.dst(), t.frame.src());
        if !is_group(&src) && host_of_mac(&src).is_none() && self.learned.len() < MAX_LEARNED {
            self.learned.entry(src).or_insert(port);
        }
        let out = if is_group(&dst) {
            None
        } else {
            match host_of_mac(&dst).and_then(|h| self.route(h, &t)) {
                Some(Some(o)) => Some(o),
                Some(None) => {
                    // Every path towards the host is down.
                    self.down.unrouted += 1;
                    self.release(counted, at);
                    return;
                }
                None => self.learned.get(&dst).copied(),
            }
        };
        match out {
            Some(o) if o == port => {
                self.runts += 1;
                self.release(counted, at);
            }
            Some(o) => {
                // An output that holds its frames (a lossless or trimming queue behind no
                // fabric) releases the count as each leaves; any other, the input at once.
                let holds = self.fabric.is_none()
                    && self.ports.get(o).is_some_and(|p| p.egress.holds_frames());
                if holds {
                    t.counted = counted;
                }
                self.forward(port, o, t, d);
                if !holds {
                    self.release(counted, at);
                }
            }
            None => {
                for o in 0..self.ports.len() {
                    if o != port && self.flood[o] && !self.down.is_down(o) {
                        self.ports[o].egress.handle_train(t.clone());
                        self.reschedule(o, d);
                    }
                }
                self.release(counted, at);
            }
        }
    }

    /// Counts train `t` in at the lossless input of `port`: `None` if it is dropped beyond the
    /// headroom; else what was counted (`None` on a lossy input), with the pause to send if
    /// the count reached XOFF.
    #[allow(clippy::option_option)]
    fn admit(&mut self, port: PortId, t: &Train<F>) -> Option<Option<Counted>> {
        let Some(ing) = self.ports[port].pfc.as_mut() else {
            return Some(None);
        };
        let (class, bytes) = (t.frame.priority(), t.frame.frame_len() as u32);
        let at = t.last();
        match ing.admit(at, class, bytes as u64) {
            Admit::Accepted => {}
            Admit::Pause(frame) => self.pauses.push(PauseOut { port, at, frame }),
            Admit::Dropped => {
                self.pfc_drops += 1;
                return None;
            }
        }
        Some(Some(Counted {
            from: port as u32,
            class,
            bytes,
        }))
    }

    /// The lossless input that counted a frame releases it at `at` (ns), with the resume to send
    /// if its count fell to XON.
    fn release(&mut self, counted: Option<Counted>, at: u64) {
        let Some(c) = counted else { return };
        let port = c.from as usize;
        let Some(ing) = self.ports.get_mut(port).and_then(|p| p.pfc.as_mut()) else {
            return;
        };
        if let Some(frame) = ing.release(c.class, c.bytes as u64) {
            self.pauses.push(PauseOut { port, at, frame });
        }
    }

    /// Releases at the lossless inputs what the output of `port` has sent or dropped.
    fn collect_released(&mut self, port: PortId) {
        let mut r = std::mem::take(&mut self.released);
        if let Some(p) = self.ports.get_mut(port) {
            p.egress.drain_released(&mut r);
        }
        for x in r.drain(..) {
            self.release(Some(x.counted), x.at);
        }
        self.released = r;
    }

    /// A pause frame from the far end of `port` arrives at `now` (ns): its output holds or
    /// resumes the class.
    pub fn handle_pause(
        &mut self,
        now: u64,
        port: PortId,
        frame: PauseFrame,
        d: &mut PortDeadlines,
    ) {
        if let Some(p) = self.ports.get_mut(port) {
            p.egress.handle_pause(now, frame);
            self.reschedule(port, d);
        }
    }

    /// The XOFFs the lossless input of `port` sends again by `now` (ns) to keep its far end
    /// paused ([`PfcIngress::handle_timeout`]).
    pub fn refresh_pauses(&mut self, now: u64, port: PortId) {
        let pauses = &mut self.pauses;
        if let Some(ing) = self.ports.get_mut(port).and_then(|p| p.pfc.as_mut()) {
            ing.handle_timeout(now, &mut |frame| {
                pauses.push(PauseOut {
                    port,
                    at: now,
                    frame,
                })
            });
        }
    }

    /// When the lossless input of `port` next sends an XOFF again (ns).
    pub fn pause_refresh_at(&self, port: PortId) -> Option<u64> {
        self.ports.get(port)?.pfc.as_ref()?.poll_timeout()
    }

    /// True if pause frames wait to be sent ([`SwitchCore::drain_pauses`]).
    pub fn has_pauses(&self) -> bool {
        !self.pauses.is_empty()
    }

    /// Moves the pause frames its lossless inputs have to send into `out`.
    pub fn drain_pauses(&mut self, out: &mut Vec<PauseOut>) {
        out.append(&mut self.pauses);
    }

    /// The one-way delay of the link on `port` (ns).
    pub fn port_delay(&self, port: PortId) -> u64 {
        self.ports
            .get(port)
            .map_or(0, |p| p.egress.link().delay.as_nanos())
    }

    /// The outputs of this switch that are paused at `now` (ns) holding frames that came in by
    /// `port`: what a pause of `port`'s far end waits on.
    pub fn paused_holding(&self, now: u64, port: PortId) -> impl Iterator<Item = PortId> + '_ {
        (0..self.ports.len())
            .filter(move |&o| self.ports[o].egress.paused_holding(now, port as u32))
    }

    /// True if the output of `port` is paused at `now` (ns) with frames waiting.
    pub fn port_paused(&self, now: u64, port: PortId) -> bool {
        self.ports.get(port).is_some_and(|p| p.egress.paused(now))
    }

    /// Sends train `t` from port `from` on to port `to`, through the fabric if there is one.
    fn forward(&mut self, from: PortId, to: PortId, mut t: Train<F>, d: &mut PortDeadlines) {
        if to >= self.ports.len() {
            self.runts += 1;
            return;
        }
        if self.down.is_down(to) {
            self.down.unrouted += 1;
            return;
        }
        if let Some(fw) = &mut self.forwarder {
            // A router stores the packet whole and forwards it when its processor has served
            // it ([`SwitchCore::advance_forwarding`]); it never cuts through.
            fw.handle_train(from, to, t);
            return;
        }
        self.cut(from, to, &mut t);
        self.deliver(from, to, t, d);
    }

    /// Hands train `t` from port `from` to the output of port `to`, through the fabric if
    /// there is one.
    fn deliver(&mut self, from: PortId, to: PortId, t: Train<F>, d: &mut PortDeadlines) {
        match &mut self.fabric {
            Some(f) => f.handle_train(from, to, t),
            None => {
                self.ports[to].egress.handle_train(t);
                self.reschedule(to, d);
            }
        }
    }

    /// From now on every frame it routes to a port waits for its forwarding processors
    /// ([`Forwarder`]) once it is in whole, and goes on to its output queue when served; set
    /// before any frame arrives. Broadcasts, which it floods, do not wait.
    pub fn set_forwarding(&mut self, spec: ForwardingSpec) {
        self.forwarder = Some(Forwarder::new(spec));
    }

    /// True if it has forwarding processors ([`SwitchCore::set_forwarding`]).
    pub fn has_forwarding(&self) -> bool {
        self.forwarder.is_some()
    }

    /// The counters of its forwarding processors (`None`: it has none).
    pub fn forwarding_stats(&self) -> Option<ForwardingStats> {
        self.forwarder.as_ref().map(|f| f.stats)
    }

    /// When its forwarding processors next take a frame (`None`: none on its way, or no
    /// processors).
    pub fn forwarding_timeout(&self) -> Option<Instant> {
        self.forwarder.as_ref().and_then(Forwarder::poll_timeout)
    }

    /// Serves what has reached its forwarding processors by `now` and hands each frame served
    /// to its output (a frame dropped for a full queue is released at its lossless input, if
    /// one counted it).
    pub fn advance_forwarding(&mut self, now: Instant, d: &mut PortDeadlines) {
        let Some(mut fw) = self
            .forwarder
            .take_if(|f| f.poll_timeout().is_some_and(|t| t <= now))
        else {
            return;
        };
        fw.advance(now, &mut |x| match x {
            Forwarded::On { from, to, train } => {
                if self.down.is_down(to) {
                    self.down.unrouted += 1;
                    self.release(train.counted, train.first);
                } else {
                    self.deliver(from, to, train, d);
                }
            }
            Forwarded::Dropped(t) => self.release(t.counted, t.last()),
        });
        self.forwarder = Some(fw);
    }

    /// Takes `port` down at `now` (ns), or brings it back up (`down` false). Going down, what
    /// its output holds is lost and counted ([`DownPorts::lost`]), and nothing is forwarded to
    /// it, nor taken from its host, until it is up again; its deadline is renewed in `d`.
    /// Returns the frames lost. A host's output holds its frames until they are due at the
    /// host, so all it has in its queue or on its line is lost; a trunk's output hands its
    /// frames to the far switch one slot after they arrive (their instants settled), so the
    /// frames a failed trunk had queued or on its line still reach the far end: not modelled.
    pub fn set_port_down(
        &mut self,
        now: Instant,
        port: PortId,
        down: bool,
        d: &mut PortDeadlines,
    ) -> u64 {
        if port >= self.ports.len() || !self.down.set(port, down) || !down {
            return 0;
        }
        // Empties the output as if its line ran on for an hour, then forgets that it did:
        // its counters stay as they were at the failure.
        let far = now.as_nanos() + 3_600_000_000_000;
        // The shared buffer is not lent for it (the hour would free every port's share): what
        // the port held of it is free at the failure.
        if let Some(b) = self.pool.as_mut() {
            b.forget_port(port);
        }
        let p = &mut self.ports[port];
        let before = p.egress.stats.clone();
        let mut lost = 0;
        loop {
            let got = match p.kind {
                PortKind::Host(_) => p.egress.poll_frame(far).is_some(),
                PortKind::Switch(_) => p.egress.poll_train(far).is_some(),
            };
            if !got {
                break;
            }
            lost += 1;
        }
        p.egress.stats = before;
        let mut rm = Vec::new();
        p.egress.drain_rm(&mut rm);
        // What a lossless input counted of the lost frames is released at the failure.
        let mut r = std::mem::take(&mut self.released);
        p.egress.drain_released(&mut r);
        for x in r.drain(..) {
            self.release(Some(x.counted), now.as_nanos());
        }
        self.released = r;
        self.down.add_lost(port, lost);
        self.reschedule(port, d);
        lost
    }

    /// From now on its Ethernet output queues share one buffer of `spec`, each admitting a frame
    /// only below the dynamic threshold ([`SharedBuffer`]); set before any frame arrives.
    pub fn set_shared_buffer(&mut self, spec: SharedBufferSpec) {
        self.pool = Some(SharedBuffer::new(spec, self.ports.len()));
    }

    /// Its shared buffer (`None`: each queue has its own).
    pub fn shared_buffer(&self) -> Option<&SharedBuffer> {
        self.pool.as_ref()
    }

    /// Runs `f` on the output of `port` with the shared buffer lent to it, if there is one.
    fn on_output<R>(&mut self, port: PortId, f: impl FnOnce(&mut Egress<F>) -> R) -> Option<R> {
        let p = self.ports.get_mut(port)?;
        p.egress.pool = self.pool.take().map(|mut b| {
            b.lend_to(port);
            b
        });
        let r = f(&mut p.egress);
        self.pool = p.egress.pool.take();
        Some(r)
    }

    /// Forwards by circuit from now on: by `vc`'s table instead of by MAC address.
    pub fn set_circuits(&mut self, vc: VcSwitch) {
        self.vc = Some(vc);
    }

    /// The host's side of the link on `port` (`None`: a trunk's port).
    pub fn ingress_mut(&mut self, port: PortId) -> Option<&mut Ingress> {
        self.ports.get_mut(port).and_then(|p| p.ingress.as_mut())
    }

    /// When the host's side of the link on `port` is free of the cells given it (ns).
    pub fn ingress_free_at(&self, port: PortId) -> Option<u64> {
        self.ports.get(port)?.ingress.as_ref().map(Ingress::free_at)
    }

    /// Moves the RM cells the queue on `port` delivered to its host into `out`.
    pub fn drain_rm(&mut self, port: PortId, out: &mut Vec<super::abr_loop::RmArrival>) {
        if let Some(p) = self.ports.get_mut(port) {
            p.egress.drain_rm(out);
        }
    }

    /// Its circuits (`None`: it forwards by MAC address).
    pub fn circuits(&self) -> Option<&VcSwitch> {
        self.vc.as_ref()
    }

    /// Its circuits, to clear or install a table.
    pub fn circuits_mut(&mut self) -> Option<&mut VcSwitch> {
        self.vc.as_mut()
    }

    /// A cut-through switch sends a whole frame (not cells) from port `from` to port `to` as
    /// soon as its first bit is in (its train arrives when its last bit is): earlier by the
    /// frame's time on the slower of the two lines, so that the output never runs ahead of the
    /// input. A store-and-forward switch leaves the train as it is.
    fn cut(&self, from: PortId, to: PortId, t: &mut Train<F>) {
        let Some(links) = &self.cut_through else {
            return;
        };
        if t.units != 1 {
            return;
        }
        let line = |p: PortId| {
            links
                .get(p)
                .filter(|l| !l.is_atm())
                .and_then(|l| Some((l.rate?, l.wire_bytes(t.frame.frame_len()))))
                .map(|(r, bytes)| r.time_to_send(crate::units::Size(bytes)).as_nanos())
        };
        if let (Some(a), Some(b)) = (line(from), line(to)) {
            t.first = t.first.saturating_sub(a.min(b));
        }
    }

    /// Moves what the fabric has delivered by `now` to the output queues.
    pub fn advance_fabric(&mut self, now: Instant, d: &mut PortDeadlines) {
        let now = now.as_nanos();
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
            self.reschedule(o, d);
        }
    }

    /// True if the switch has an input-queued fabric.
    pub fn has_fabric(&self) -> bool {
        self.fabric.is_some()
    }

    /// When the fabric next needs [`SwitchCore::advance_fabric`] (`None`: no fabric, or
    /// nothing in it).
    pub fn fabric_timeout(&self) -> Option<Instant> {
        self.fabric
            .as_ref()
            .and_then(FabricStage::poll_timeout)
            .map(Instant)
    }

    /// The next frame host port `port` (due by `now`) delivers: its due instant (ns) and the
    /// frame, if it has one; the port's deadline is renewed in `d`.
    pub fn poll_host_port(
        &mut self,
        now: Instant,
        port: PortId,
        d: &mut PortDeadlines,
    ) -> Option<(u64, F)> {
        let got = self.on_output(port, |e| e.poll_frame(now.as_nanos()))?;
        self.collect_released(port);
        self.renew(port, d);
        got
    }

    /// The next train trunk port `port` (due by `now`) sends towards the next switch, if any.
    /// Its deadline is left as it is: [`SwitchCore::renew`] it when it has no more.
    pub fn poll_trunk_port(&mut self, now: Instant, port: PortId) -> Option<Train<F>> {
        let t = self.on_output(port, |e| e.poll_train(now.as_nanos()))?;
        self.collect_released(port);
        t
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
            pfc: p.pfc.as_ref().map(|i| i.stats),
        })
    }
}
