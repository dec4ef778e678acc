//! The simulated hosts of a network: applications plugged into the hosts' ports, as the engine's
//! [`Hosts`] on virtual time. Each application says when it next has a frame to hand over; the
//! hosts keep those instants, one per application ([`Deadlines`]), so a turn touches only the
//! applications that are due.

use std::any::Any;

use weft_model::Instant;
use weft_model::engine::{Deadlines, Hosts};
use weft_model::host::{HostCosts, HostCpu};
use weft_model::net::Topology;
use weft_model::scenario::{Host, Scenario};

use super::frame::SimFrame;

/// The machine of each host of `topo` that names a cost model in `s` (`costs`), by host index:
/// one per host, which every application on it shares (each takes a [`HostCpu::thread`] of its
/// own, or a clone to run on another's thread). `None` for a host that costs nothing.
pub fn machines(s: &Scenario, topo: &Topology) -> Vec<Option<HostCpu>> {
    machines_with(s, topo, |c| c)
}

/// As [`machines`], each host's costs first passed through `adapt` (a file transfer's
/// [`HostCosts::moving_files`]).
pub fn machines_with(
    s: &Scenario,
    topo: &Topology,
    adapt: impl Fn(HostCosts) -> HostCosts,
) -> Vec<Option<HostCpu>> {
    topo.hosts
        .iter()
        .map(|h| {
            s.host(&h.name)
                .and_then(Host::cost_preset)
                .map(|c| HostCpu::new(adapt(c)))
        })
        .collect()
}

/// A new thread on host `h`'s machine, if it has one.
pub fn thread_on(machines: &[Option<HostCpu>], h: usize) -> Option<HostCpu> {
    machines.get(h)?.as_ref().map(HostCpu::thread)
}

/// An application on a simulated host (sans-IO, like everything the engine drives).
pub trait App: Any {
    /// The next frame the application hands to its host at or before `now`, with the instant
    /// it did (at or before `now`).
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)>;
    /// A frame reaches the application's host at `now`.
    fn deliver(&mut self, now: Instant, frame: SimFrame);
    /// When it next has something to hand over without new input.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The application, for reading its results after a run.
    fn as_any(&self) -> &dyn Any;
}

/// The applications of every simulated host.
pub struct SimHosts {
    apps: Vec<(usize, Box<dyn App>)>,
    by_host: Vec<Vec<usize>>,
    wake: Deadlines,
    /// The application whose frames are being taken (it was due); its deadline is renewed
    /// when it has no more.
    serving: Option<usize>,
    /// Frames delivered to hosts.
    pub delivered: u64,
}

impl SimHosts {
    /// `apps`, each on the host of the given index, among `hosts` hosts.
    pub fn new(hosts: usize, apps: Vec<(usize, Box<dyn App>)>) -> Self {
        let mut by_host = vec![Vec::new(); hosts];
        for (i, (h, _)) in apps.iter().enumerate() {
            if let Some(v) = by_host.get_mut(*h) {
                v.push(i);
            }
        }
        let mut s = SimHosts {
            wake: Deadlines::new(apps.len()),
            apps,
            by_host,
            serving: None,
            delivered: 0,
        };
        for a in 0..s.apps.len() {
            s.reschedule(a);
        }
        s
    }

    /// Application `i` (in the order given), as `T` if it is one.
    pub fn app<T: 'static>(&self, i: usize) -> Option<&T> {
        self.apps.get(i)?.1.as_any().downcast_ref::<T>()
    }

    /// Every application of type `T`, with its host.
    pub fn apps_of<T: 'static>(&self) -> impl Iterator<Item = (usize, &T)> {
        self.apps
            .iter()
            .filter_map(|(h, a)| a.as_any().downcast_ref::<T>().map(|t| (*h, t)))
    }

    fn reschedule(&mut self, a: usize) {
        self.wake.set(a, self.apps[a].1.poll_timeout());
    }
}

impl Hosts<SimFrame> for SimHosts {
    fn poll_send(&mut self, now: Instant) -> Option<(usize, Instant, SimFrame)> {
        loop {
            let a = match self.serving {
                Some(a) => a,
                None => self.wake.peek_due(now)?,
            };
            let (host, app) = &mut self.apps[a];
            if let Some((at, f)) = app.poll_send(now) {
                self.serving = Some(a);
                return Some((*host, at, f));
            }
            self.serving = None;
            self.wake.renew(a, app.poll_timeout());
        }
    }

    fn deliver(&mut self, now: Instant, port: usize, _due: Instant, frame: SimFrame) {
        self.delivered += 1;
        let Some(apps) = self.by_host.get(port) else {
            return;
        };
        for k in 0..apps.len() {
            let a = self.by_host[port][k];
            self.apps[a].1.deliver(now, frame);
            self.reschedule(a);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.serving.is_some() {
            return Some(Instant::ZERO);
        }
        self.wake.peek_time()
    }
}
