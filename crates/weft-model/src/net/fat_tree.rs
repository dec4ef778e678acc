//! Datacenter topologies from a generator: the 3-tier fat-tree of Al-Fares et al. (SIGCOMM
//! 2008: `k` pods of `k/2` edge and `k/2` aggregation switches, `(k/2)^2` core switches, `k^3/4`
//! hosts, full bisection) and the 2-tier leaf-spine (every leaf joined to every spine). A
//! [`Shape`] names the hosts and switches and lists the links by tier; the scenario file's
//! `[fabric]` table turns it into hosts, switches and links with each tier's technology, delay
//! and buffers ([`crate::scenario`]), so that the simulator and the emulator build the same
//! network from it.

use serde::Serialize;

/// Which generator, and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "topology")]
pub enum ShapeSpec {
    /// A 3-tier fat-tree of `k`-port switches (`k` even, 2..=64): `k^3/4` hosts.
    FatTree {
        /// Ports of every switch.
        k: u32,
    },
    /// A 2-tier leaf-spine: `leaves` leaves with `hosts_per_leaf` hosts each, every leaf
    /// joined to each of `spines` spines by one link.
    LeafSpine {
        /// Leaf (top-of-rack) switches.
        leaves: u32,
        /// Spine switches.
        spines: u32,
        /// Hosts on each leaf.
        hosts_per_leaf: u32,
    },
}

/// The tier a link belongs to: each tier has its own technology, delay and MTU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Host to edge (fat-tree) or leaf (leaf-spine).
    Host,
    /// Edge to aggregation (fat-tree) or leaf to spine (leaf-spine).
    Agg,
    /// Aggregation to core (fat-tree only).
    Core,
}

/// The hosts, switches and links of a generated topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Host names, `h0`, `h1`, ... in host order.
    pub hosts: Vec<String>,
    /// Switch names: fat-tree `e<pod>.<i>`, `a<pod>.<i>`, `c<i>`; leaf-spine `leaf<i>`,
    /// `spine<i>`.
    pub switches: Vec<String>,
    /// The switch each host is on (index into `switches`).
    pub host_switch: Vec<usize>,
    /// Links between switches (indices into `switches`, lower tier first) and their tier.
    pub trunks: Vec<(usize, usize, Tier)>,
}

/// Most hosts a generator makes (the topology's own bound, [`super::MAX_HOSTS`]).
pub const MAX_GENERATED_HOSTS: u64 = super::topology::MAX_HOSTS as u64;

impl ShapeSpec {
    /// Number of hosts.
    pub fn host_count(&self) -> u64 {
        match *self {
            ShapeSpec::FatTree { k } => u64::from(k).pow(3) / 4,
            ShapeSpec::LeafSpine {
                leaves,
                hosts_per_leaf,
                ..
            } => u64::from(leaves) * u64::from(hosts_per_leaf),
        }
    }

    /// What is wrong with the sizes, if anything.
    pub fn check(&self) -> Result<(), String> {
        match *self {
            ShapeSpec::FatTree { k } if k < 2 || k % 2 == 1 || k > 64 => {
                return Err(format!("a fat-tree needs an even k from 2 to 64, not {k}"));
            }
            ShapeSpec::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
            } if leaves == 0 || spines == 0 || hosts_per_leaf == 0 => {
                return Err(format!(
                    "a leaf-spine needs at least one leaf, spine and host per leaf, not {leaves}, {spines}, {hosts_per_leaf}"
                ));
            }
            _ => {}
        }
        let n = self.host_count();
        if !(2..=MAX_GENERATED_HOSTS).contains(&n) {
            return Err(format!(
                "{n} hosts: a generated topology has 2 to {MAX_GENERATED_HOSTS}"
            ));
        }
        Ok(())
    }

    /// The hosts, switches and links ([`ShapeSpec::check`] first).
    pub fn build(&self) -> Result<Shape, String> {
        self.check()?;
        Ok(match *self {
            ShapeSpec::FatTree { k } => fat_tree(k as usize),
            ShapeSpec::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
            } => leaf_spine(leaves as usize, spines as usize, hosts_per_leaf as usize),
        })
    }
}

/// Al-Fares's fat-tree: pod `p` has edge switches `e<p>.<i>` and aggregation switches
/// `a<p>.<j>` (i, j < k/2), each edge joined to every aggregation switch of its pod; edge
/// `e<p>.<i>` has hosts `(p * k/2 + i) * k/2 ..` (k/2 of them); aggregation `a<p>.<j>` is joined
/// to core switches `c<j * k/2 + m>` (m < k/2), so every pod reaches every core once.
fn fat_tree(k: usize) -> Shape {
    let h = k / 2;
    let mut switches = Vec::with_capacity(k * k + h * h);
    for p in 0..k {
        switches.extend((0..h).map(|i| format!("e{p}.{i}")));
    }
    for p in 0..k {
        switches.extend((0..h).map(|j| format!("a{p}.{j}")));
    }
    switches.extend((0..h * h).map(|c| format!("c{c}")));
    let edge = |p: usize, i: usize| p * h + i;
    let agg = |p: usize, j: usize| k * h + p * h + j;
    let core = |c: usize| 2 * k * h + c;
    let mut trunks = Vec::with_capacity(k * h * h * 2);
    for p in 0..k {
        for i in 0..h {
            for j in 0..h {
                trunks.push((edge(p, i), agg(p, j), Tier::Agg));
            }
        }
    }
    for p in 0..k {
        for j in 0..h {
            for m in 0..h {
                trunks.push((agg(p, j), core(j * h + m), Tier::Core));
            }
        }
    }
    let hosts = k * h * h;
    Shape {
        hosts: (0..hosts).map(|i| format!("h{i}")).collect(),
        switches,
        host_switch: (0..hosts).map(|i| i / h).collect(),
        trunks,
    }
}

/// Leaves `leaf<i>` with hosts `i * hosts_per_leaf ..`, each joined to every spine `spine<j>`.
fn leaf_spine(leaves: usize, spines: usize, per_leaf: usize) -> Shape {
    let mut switches: Vec<String> = (0..leaves).map(|i| format!("leaf{i}")).collect();
    switches.extend((0..spines).map(|j| format!("spine{j}")));
    let trunks = (0..leaves)
        .flat_map(|i| (0..spines).map(move |j| (i, leaves + j, Tier::Agg)))
        .collect();
    let hosts = leaves * per_leaf;
    Shape {
        hosts: (0..hosts).map(|i| format!("h{i}")).collect(),
        switches,
        host_switch: (0..hosts).map(|i| i / per_leaf).collect(),
        trunks,
    }
}

/// The oversubscription of a leaf-spine: what a leaf's hosts can send over what its uplinks
/// carry, `hosts_per_leaf * host_rate / (spines * uplink_rate)` (1: non-blocking).
pub fn oversubscription(hosts_per_leaf: u32, spines: u32, host_bps: u64, uplink_bps: u64) -> f64 {
    (f64::from(hosts_per_leaf) * host_bps as f64) / (f64::from(spines) * uplink_bps as f64)
}

/// The spines a leaf-spine needs for oversubscription `ratio` (at least one).
pub fn spines_for(ratio: f64, hosts_per_leaf: u32, host_bps: u64, uplink_bps: u64) -> u32 {
    let s = f64::from(hosts_per_leaf) * host_bps as f64 / (ratio * uplink_bps as f64);
    (s.round() as u32).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn degree(s: &Shape, sw: usize) -> usize {
        s.host_switch.iter().filter(|&&x| x == sw).count()
            + s.trunks
                .iter()
                .filter(|(a, b, _)| *a == sw || *b == sw)
                .count()
    }

    #[test]
    fn a_fat_tree_has_al_fares_counts_and_every_switch_has_k_ports() {
        for k in [2usize, 4, 12] {
            let s = ShapeSpec::FatTree { k: k as u32 }.build().unwrap();
            assert_eq!(s.hosts.len(), k * k * k / 4);
            assert_eq!(s.switches.len(), 5 * k * k / 4);
            assert_eq!(s.trunks.len(), k * k * k / 2);
            // Edge and aggregation switches use all k ports; a core switch has one per pod.
            for sw in 0..s.switches.len() {
                assert_eq!(degree(&s, sw), k, "{} in k = {k}", s.switches[sw]);
            }
            let names: std::collections::HashSet<&String> = s.switches.iter().collect();
            assert_eq!(names.len(), s.switches.len());
        }
        let s = ShapeSpec::FatTree { k: 12 }.build().unwrap();
        assert_eq!(s.hosts.len(), 432);
        assert_eq!(s.switches[s.host_switch[431]], "e11.5");
    }

    #[test]
    fn a_leaf_spine_joins_every_leaf_to_every_spine() {
        let spec = ShapeSpec::LeafSpine {
            leaves: 4,
            spines: 2,
            hosts_per_leaf: 6,
        };
        let s = spec.build().unwrap();
        assert_eq!(
            (s.hosts.len(), s.switches.len(), s.trunks.len()),
            (24, 6, 8)
        );
        assert_eq!(degree(&s, 0), 6 + 2);
        assert_eq!(degree(&s, 5), 4);
        // Six 10 Gbit/s hosts over two 10 Gbit/s uplinks: 3:1.
        assert_eq!(oversubscription(6, 2, 10, 10), 3.0);
        assert_eq!(spines_for(3.0, 6, 10, 10), 2);
        assert_eq!(spines_for(1.0, 6, 10, 40), 2, "rounded");
    }

    #[test]
    fn sizes_out_of_range_are_refused() {
        for k in [0, 3, 66] {
            assert!(ShapeSpec::FatTree { k }.check().is_err(), "{k}");
        }
        let big = ShapeSpec::LeafSpine {
            leaves: 1000,
            spines: 1,
            hosts_per_leaf: 1000,
        };
        assert!(big.check().is_err());
        // 8192 hosts: k = 32.
        assert_eq!(ShapeSpec::FatTree { k: 32 }.host_count(), 8192);
        ShapeSpec::FatTree { k: 32 }.check().unwrap();
    }
}
