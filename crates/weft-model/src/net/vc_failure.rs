//! A switch that loses its connection manager, and the manager's restore, in simulated time
//! (issue 28; Sandia's worst failure, `000` section VI): a scenario's `[vc] fail` names the
//! switch, when it fails and for how long, and the one-way delay of the control channel between
//! the manager and the switches. At `at` the switch's table is cleared (every cell that reaches
//! it on a circuit is counted and dropped: [`super::VcStats::cells_unknown`]); at `at + for` it
//! comes back empty and says hello; the manager ([`Manager`], the same decisions the emulator's
//! manager process takes) gets the hello one delay later and pushes the table, which the switch
//! installs one delay after that; its acknowledgement reaches the manager a delay later. The
//! restore time (hello received to acknowledgement received) is then two control delays, as the
//! emulator measures it over its socket.
//!
//! ```toml
//! [vc]
//! forward = "mesh"
//! fail = { switch = "bay2", at = "2ms", for = "5ms", control_delay = "100us" }
//! ```

use serde::{Deserialize, Serialize};

use super::frame::Frame;
use super::network::Network;
use super::topology::Topology;
use crate::element::{Element, PortId};
use crate::time::{Duration, Instant};
use crate::vc::{Held, Manager, Push, Restore};

/// The failure of one switch (`[vc] fail`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VcFailure {
    /// The switch that fails (a `[[vc.switch]]`).
    pub switch: String,
    /// When its table is cleared, from the start of the run.
    pub at: Duration,
    /// How long it stays away from its manager (`for`).
    #[serde(rename = "for")]
    pub down: Duration,
    /// One-way delay of the control channel between the manager and a switch. Not from a
    /// study: none gives its management network's delay; the default, 100 us, is the order
    /// the emulator measures over its Unix socket (`weft emu fail`: ~0.1 ms hello to ack).
    #[serde(default = "VcFailure::default_control_delay")]
    pub control_delay: Duration,
}

impl VcFailure {
    /// The default one-way control delay: 100 us.
    pub fn default_control_delay() -> Duration {
        Duration::from_micros(100)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The switch's table is cleared.
    Fail,
    /// The manager receives the switch's hello (it came back empty) and pushes its table.
    Hello,
    /// The switch receives the table and installs it.
    Install,
    /// The manager receives the acknowledgement.
    Ack,
}

/// A network whose failing switch is restored by its manager (without a failure: the network
/// as it is).
pub struct VcManaged<F: Frame> {
    /// The network.
    pub net: Network<F>,
    failure: Option<(usize, VcFailure)>,
    manager: Manager,
    next: Option<(Instant, Step)>,
    pushed: Option<Push>,
}

impl<F: Frame> VcManaged<F> {
    /// `net` (built from `topo`) under a manager of `topo`'s circuits, every switch holding
    /// its table and contracts, with the failure the circuits name.
    pub fn new(net: Network<F>, topo: &Topology) -> Self {
        let switches: Vec<String> = topo.switches.iter().map(|s| s.name.clone()).collect();
        let c = topo.circuits.as_ref();
        let tables = per_switch(switches.len(), c.map(|c| &c.tables));
        let contracts = per_switch(switches.len(), c.map(|c| &c.contracts));
        let mut manager = Manager::from_tables(switches.clone(), tables, contracts);
        for s in 0..switches.len() {
            let whole = manager.whole(s).unwrap_or_default();
            manager.handle_hello(Instant::ZERO, s, whole);
        }
        let failure = c.and_then(|c| c.failure.as_ref()).and_then(|f| {
            let s = switches.iter().position(|n| *n == f.switch)?;
            Some((s, f.clone()))
        });
        let next = failure
            .as_ref()
            .map(|(_, f)| (Instant(f.at.as_nanos()), Step::Fail));
        VcManaged {
            net,
            failure,
            manager,
            next,
            pushed: None,
        }
    }

    /// The restore of the failed switch, once its acknowledgement has reached the manager.
    pub fn restore(&self) -> Option<&Restore> {
        self.manager.restores.first()
    }

    /// The network, with whatever the run left in it.
    pub fn into_network(self) -> Network<F> {
        self.net
    }

    /// Takes every step due at or before `now`.
    fn advance(&mut self, now: Instant) {
        let Some((s, f)) = &self.failure else { return };
        let (s, d) = (*s, f.control_delay);
        let back = Instant(f.at.as_nanos() + f.down.as_nanos());
        while let Some((t, step)) = self.next.filter(|(t, _)| *t <= now) {
            self.next = match step {
                Step::Fail => {
                    if let Some(v) = self.net.switch_mut(s).and_then(|x| x.circuits_mut()) {
                        v.clear();
                    }
                    self.manager.handle_lost(t, s);
                    Some((back.max(t) + d, Step::Hello))
                }
                Step::Hello => {
                    self.manager.handle_hello(t, s, Held::default());
                    self.pushed = self.manager.poll_push_for(s);
                    Some((t + d, Step::Install))
                }
                Step::Install => {
                    let v = self.net.switch_mut(s).and_then(|x| x.circuits_mut());
                    if let (Some(v), Some(p)) = (v, self.pushed.take()) {
                        let _ = v.install(&p.entries, &p.contracts);
                    }
                    Some((t + d, Step::Ack))
                }
                Step::Ack => {
                    let held = self
                        .net
                        .switch(s)
                        .and_then(|x| x.circuits())
                        .map_or(Held::default(), |v| v.held());
                    self.manager.handle_ack(t, s, held);
                    None
                }
            };
        }
    }
}

/// `n` lists, one per switch, from `of` (a switch it has none for: empty).
fn per_switch<T: Clone>(n: usize, of: Option<&Vec<Vec<T>>>) -> Vec<Vec<T>> {
    (0..n)
        .map(|s| of.and_then(|v| v.get(s)).cloned().unwrap_or_default())
        .collect()
}

impl<F: Frame> Element<F> for VcManaged<F> {
    fn handle_input(&mut self, now: Instant, port: PortId, item: F) {
        self.advance(now);
        self.net.handle_input(now, port, item);
    }
    fn poll_output(&mut self, now: Instant) -> Option<(PortId, F)> {
        self.advance(now);
        self.net.poll_output(now)
    }
    fn poll_output_due(&mut self, now: Instant) -> Option<(PortId, Instant, F)> {
        self.advance(now);
        self.net.poll_output_due(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        let step = self.next.map(|(t, _)| t);
        match (self.net.poll_timeout(), step) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
