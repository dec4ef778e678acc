//! Multipath forwarding: how a switch with several equal-cost ports towards a destination picks
//! one for each frame. Per-flow ECMP hashes the frame's 5-tuple with the switch's seed (so that
//! every frame of a flow takes one path, and two switches do not hash alike, which would
//! polarise the fabric); per-packet spraying picks anew for every frame, at random or
//! round-robin over the ports (Ultra Ethernet's and NDP's answer to ECMP's collisions); a
//! flowlet keeps a flow's port until the flow pauses for longer than a gap, then picks again at
//! random (CONGA's and LetFlow's flowlets, without their congestion feedback). Nothing here
//! reads a clock: the caller gives each frame's arrival instant.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::frame::FlowKey;
use crate::element::PortId;
use crate::rng::Rng;
use crate::rng::SplitMix64;
use crate::time::Duration;

/// How a switch spreads frames over equal-cost ports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Multipath {
    /// Per-flow ECMP: a seeded hash of the 5-tuple.
    #[default]
    Ecmp,
    /// Per-packet spraying, each frame to a port drawn uniformly at random.
    Spray,
    /// Per-packet spraying, round-robin over the ports.
    SprayRr,
    /// Flowlets: a flow keeps its port until it pauses for longer than `gap`, then draws one.
    Flowlet {
        /// The pause that ends a flowlet, ns.
        gap: Duration,
    },
}

impl Multipath {
    /// The policy named in a scenario file: `ecmp`, `spray`, `spray-rr`, or `flowlet` (with
    /// `gap`, default [`Multipath::FLOWLET_GAP`]).
    pub fn from_name(name: &str, gap: Option<Duration>) -> Option<Self> {
        Some(match name {
            "ecmp" => Multipath::Ecmp,
            "spray" | "spray-random" => Multipath::Spray,
            "spray-rr" | "round-robin" => Multipath::SprayRr,
            "flowlet" | "flowlets" => Multipath::Flowlet {
                gap: gap.unwrap_or(Self::FLOWLET_GAP),
            },
            _ => return None,
        })
    }

    /// The default flowlet gap: 50 µs, a few round trips of a datacenter fabric (LetFlow,
    /// NSDI 2017, uses 50-500 µs).
    pub const FLOWLET_GAP: Duration = Duration::from_micros(50);
}

/// One switch's choices among its equal-cost port groups.
#[derive(Clone, Debug)]
pub struct PathChooser {
    policy: Multipath,
    /// Key of this switch's ECMP hash.
    key: u64,
    rng: Rng,
    /// Next port of each group, round-robin.
    next: Vec<u32>,
    /// Each flow's last frame (ns) and the port index it took (flowlets).
    flowlets: HashMap<FlowKey, (u64, u32)>,
}

impl PathChooser {
    /// A chooser with `policy`, its hash key and random stream drawn from `seed`.
    pub fn new(policy: Multipath, seed: u64) -> Self {
        let mut s = SplitMix64::new(seed);
        PathChooser {
            policy,
            key: s.next_u64(),
            rng: Rng::new(s.next_u64()),
            next: Vec::new(),
            flowlets: HashMap::new(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> Multipath {
        self.policy
    }

    /// The port among `ports` (group `group` of the switch, not empty) for a frame of flow
    /// `flow` arriving at `now` (ns).
    pub fn choose(&mut self, now: u64, flow: FlowKey, group: usize, ports: &[PortId]) -> PortId {
        let n = ports.len() as u64;
        if n <= 1 {
            return ports.first().copied().unwrap_or_default();
        }
        let i = match self.policy {
            Multipath::Ecmp => flow_hash(self.key, &flow) % n,
            Multipath::Spray => self.rng.below(n),
            Multipath::SprayRr => {
                if self.next.len() <= group {
                    self.next.resize(group + 1, 0);
                }
                let i = u64::from(self.next[group]) % n;
                self.next[group] = ((i + 1) % n) as u32;
                i
            }
            Multipath::Flowlet { gap } => {
                let fresh = self.rng.below(n) as u32;
                let e = self.flowlets.entry(flow).or_insert((now, fresh));
                if now.saturating_sub(e.0) > gap.as_nanos() || u64::from(e.1) >= n {
                    e.1 = fresh;
                }
                e.0 = now;
                u64::from(e.1)
            }
        };
        ports[i as usize]
    }
}

/// A 64-bit hash of `flow`'s 5-tuple under `key` (SplitMix64's finaliser over the fields):
/// every frame of a flow hashes alike; another key gives an unrelated hash.
pub fn flow_hash(key: u64, flow: &FlowKey) -> u64 {
    let a = (u64::from(flow.src) << 32) | u64::from(flow.dst);
    let b = (u64::from(flow.proto) << 32) | (u64::from(flow.sport) << 16) | u64::from(flow.dport);
    let mut s = SplitMix64::new(key ^ a);
    let h = s.next_u64();
    SplitMix64::new(h ^ b).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(sport: u16) -> FlowKey {
        FlowKey {
            src: 0x0a4d_0001,
            dst: 0x0a4d_0002,
            proto: 6,
            sport,
            dport: 5001,
        }
    }

    /// The ports each of `frames` frames of flow `f` (one every `every` ns) takes.
    fn ports_of(c: &mut PathChooser, f: FlowKey, frames: u64, every: u64) -> Vec<PortId> {
        (0..frames)
            .map(|k| c.choose(k * every, f, 0, &[4, 5, 6, 7]))
            .collect()
    }

    #[test]
    fn ecmp_keeps_a_flow_on_one_port_and_spreads_flows_by_a_seeded_hash() {
        let mut c = PathChooser::new(Multipath::Ecmp, 1);
        for sport in 0..50 {
            let p = ports_of(&mut c, flow(sport), 20, 1);
            assert!(p.iter().all(|&x| x == p[0]), "flow {sport}: {p:?}");
        }
        let used = |seed| {
            let mut c = PathChooser::new(Multipath::Ecmp, seed);
            (0..400u16)
                .map(|s| c.choose(0, flow(s), 0, &[4, 5, 6, 7]))
                .collect::<Vec<_>>()
        };
        let a = used(1);
        for port in 4..8 {
            let n = a.iter().filter(|&&p| p == port).count();
            assert!((70..130).contains(&n), "port {port}: {n} of 400 flows");
        }
        // Another switch (seed) places the same flows differently.
        let b = used(2);
        let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        assert!(same < 160, "{same} of 400 alike");
    }

    #[test]
    fn spraying_spreads_one_flow_over_every_port() {
        let mut c = PathChooser::new(Multipath::Spray, 3);
        let p = ports_of(&mut c, flow(1), 400, 1);
        for port in 4..8 {
            let n = p.iter().filter(|&&x| x == port).count();
            assert!((70..130).contains(&n), "port {port}: {n} of 400 frames");
        }
    }

    #[test]
    fn round_robin_spraying_cycles_through_the_ports_of_each_group() {
        let mut c = PathChooser::new(Multipath::SprayRr, 3);
        assert_eq!(ports_of(&mut c, flow(1), 6, 1), vec![4, 5, 6, 7, 4, 5]);
        // Each group has its own turn.
        assert_eq!(c.choose(0, flow(2), 1, &[1, 2]), 1);
        assert_eq!(c.choose(0, flow(3), 0, &[4, 5, 6, 7]), 6);
        assert_eq!(c.choose(0, flow(2), 1, &[1, 2]), 2);
    }

    #[test]
    fn a_flowlet_keeps_its_port_until_the_flow_pauses_for_longer_than_the_gap() {
        let gap = Duration::from_micros(50);
        let mut c = PathChooser::new(Multipath::Flowlet { gap }, 5);
        // Frames 1 µs apart: one flowlet, one port.
        let p = ports_of(&mut c, flow(1), 100, 1_000);
        assert!(p.iter().all(|&x| x == p[0]), "{p:?}");
        // Frames 100 µs apart: each starts a flowlet, and the ports vary.
        let q = ports_of(&mut c, flow(2), 100, 100_000);
        let distinct: std::collections::HashSet<_> = q.iter().collect();
        assert_eq!(distinct.len(), 4, "{q:?}");
    }

    #[test]
    fn policies_are_named_as_in_scenario_files() {
        assert_eq!(Multipath::from_name("ecmp", None), Some(Multipath::Ecmp));
        assert_eq!(Multipath::from_name("spray", None), Some(Multipath::Spray));
        assert_eq!(
            Multipath::from_name("spray-rr", None),
            Some(Multipath::SprayRr)
        );
        assert_eq!(
            Multipath::from_name("flowlet", None),
            Some(Multipath::Flowlet {
                gap: Multipath::FLOWLET_GAP
            })
        );
        assert_eq!(Multipath::from_name("ospf", None), None);
    }
}
