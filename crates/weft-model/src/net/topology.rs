//! A network as both engines build it: hosts, each on one link to a switch; switches, each with
//! a fabric; trunks between switches. Scenario files are translated into this
//! ([`Topology::from_scenario`]); tests build it directly ([`Topology::star`]).

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use super::fabric_stage::FabricSpec;
use super::frame::{Mac, host_mac};
use super::link::LinkSpec;
use super::multipath::Multipath;
use crate::time::Duration;

/// Most hosts a topology takes: the address plan's, 250 hosts in each of the 256 /24s of
/// 10.77.0.0/16 ([`Topology::addr_of_index`]); host MACs ([`host_mac`]) number 65536.
pub const MAX_HOSTS: usize = 256 * 250;

/// A host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSpec {
    /// Name, unique in the topology: letters, digits, `_` and `.`; at most 32 characters.
    pub name: String,
    /// Address; assigned from 10.77.0.0/16 when `None`.
    pub addr: Option<Ipv4Addr>,
    /// Its link to its switch.
    pub link: LinkSpec,
    /// The switch it is attached to (index into [`Topology::switches`]).
    #[serde(default)]
    pub switch: usize,
}

/// A switch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchSpec {
    /// Name, for reports.
    pub name: String,
    /// Its fabric.
    pub fabric: FabricSpec,
    /// Forwarding latency added to every frame that crosses it.
    #[serde(default)]
    pub latency: Duration,
    /// Forwards a frame as its first bits arrive (after `latency`) instead of once it has
    /// arrived whole: cut-through, for frames between ports of the same rate.
    #[serde(default)]
    pub cut_through: bool,
    /// One buffer its Ethernet output queues share, each admitting a frame only below the
    /// dynamic threshold ([`super::SharedBuffer`]); `None`: each queue has its own buffer
    /// ([`LinkSpec::buffer`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_buffer: Option<super::SharedBufferSpec>,
    /// A router's forwarding processors, which every frame it routes waits for, whole, before
    /// its output queue ([`super::Forwarder`]); `None`: frames cost it no processing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding: Option<super::ForwardingSpec>,
}

/// A link between two switches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrunkSpec {
    /// The two switches (indices into [`Topology::switches`]).
    pub ends: [usize; 2],
    /// The link as seen from each end: `links[0]` is the queue and line from `ends[0]` towards
    /// `ends[1]`, `links[1]` the other way.
    pub links: [LinkSpec; 2],
}

/// Hosts, switches and the links between them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// The hosts, each with its link.
    pub hosts: Vec<HostSpec>,
    /// The switches (at least one).
    pub switches: Vec<SwitchSpec>,
    /// Links between switches.
    #[serde(default)]
    pub trunks: Vec<TrunkSpec>,
    /// Seed of every random stream (fair order, faults, contention).
    pub seed: u64,
    /// How switches spread frames over equal-cost ports (default per-flow ECMP).
    #[serde(default)]
    pub multipath: Multipath,
    /// The circuits the switches forward by (`None`: by MAC address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuits: Option<super::vc_switch::Circuits>,
    /// Shared rings in front of switch ports, in place of their hosts' links (whose own rate
    /// and delay are then none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rings: Vec<super::RingSegment>,
    /// Links and switches lost during the run (`[[fabric.fail]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<super::LinkFailure>,
}

/// A topology that cannot be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TopologyError {
    /// A host name is empty, too long or uses characters other than letters, digits, `_`, `.`.
    #[error("host name {0:?} is not usable: use 1-32 letters, digits, '_' or '.'")]
    BadName(String),
    /// A switch name is empty, too long or uses characters other than letters, digits, `_`,
    /// `.`, `-` (it names capture files under `--capture`, so a `/` would lead out of it).
    #[error("switch name {0:?} is not usable: use 1-32 letters, digits, '_', '.' or '-'")]
    BadSwitchName(String),
    /// Two hosts share a name.
    #[error("two hosts are named {0:?}")]
    Duplicate(String),
    /// An MTU outside 68..=65000.
    #[error("host {0}: MTU {1} is outside 68..=65000")]
    BadMtu(String, u32),
    /// A fault probability outside 0..1.
    #[error("host {0}: {1} {2} is not a probability (0 to 1)")]
    BadProbability(String, &'static str, f64),
    /// A VC contract on a link that does not carry cells.
    #[error("host {0}: a VC contract (pcr/scr) needs an ATM link")]
    ContractNeedsCells(String),
    /// A switch with forwarding processors (a router, which stores each packet whole) that is
    /// also said to cut through.
    #[error("switch {0}: a router (`forwarding`) stores each packet and cannot cut through")]
    RouterCutThrough(String),
    /// Fewer than two hosts or more than [`MAX_HOSTS`].
    #[error("a topology needs 2 to 64000 hosts, not {0}")]
    HostCount(usize),
    /// A host or trunk names a switch that does not exist, or no switch at all.
    #[error("{0}: no such switch")]
    NoSwitch(String),
    /// Some hosts cannot reach each other.
    #[error("host {0} cannot reach host {1}: the switches are not connected")]
    Disconnected(String, String),
    /// A scenario that cannot be turned into a topology.
    #[error("{0}")]
    Scenario(String),
}

/// Whether `name` is 1-32 ASCII letters, digits or characters of `extra`.
fn usable_name(name: &str, extra: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

impl Topology {
    /// Hosts on a star around one switch with `fabric`.
    pub fn star(hosts: Vec<HostSpec>, fabric: FabricSpec, seed: u64) -> Self {
        Topology {
            hosts,
            switches: vec![SwitchSpec {
                shared_buffer: None,
                forwarding: None,
                cut_through: false,
                name: "switch".into(),
                fabric,
                latency: Duration::ZERO,
            }],
            trunks: Vec::new(),
            seed,
            multipath: Multipath::default(),
            circuits: None,
            rings: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Checks names, MTUs, probabilities, switch indices and connectivity.
    pub fn validate(&self) -> Result<(), TopologyError> {
        if self.hosts.len() < 2 || self.hosts.len() > MAX_HOSTS {
            return Err(TopologyError::HostCount(self.hosts.len()));
        }
        let mut seen = std::collections::HashSet::new();
        for h in &self.hosts {
            if !usable_name(&h.name, "_.") {
                return Err(TopologyError::BadName(h.name.clone()));
            }
            if !seen.insert(h.name.as_str()) {
                return Err(TopologyError::Duplicate(h.name.clone()));
            }
            check_link(&h.name, &h.link)?;
            if h.switch >= self.switches.len() {
                return Err(TopologyError::NoSwitch(format!("host {}", h.name)));
            }
        }
        // Switch names become file names (`<a>-<b>.pcap` under `--capture`): the rule of host
        // names, and `-`, which the scenarios use; never a `/`, never only dots.
        if let Some(s) = self
            .switches
            .iter()
            .find(|s| !usable_name(&s.name, "_.-") || s.name.chars().all(|c| c == '.'))
        {
            return Err(TopologyError::BadSwitchName(s.name.clone()));
        }
        if let Some(s) = self
            .switches
            .iter()
            .find(|s| s.forwarding.is_some() && s.cut_through)
        {
            return Err(TopologyError::RouterCutThrough(s.name.clone()));
        }
        for (i, t) in self.trunks.iter().enumerate() {
            if t.ends.iter().any(|&e| e >= self.switches.len()) || t.ends[0] == t.ends[1] {
                return Err(TopologyError::NoSwitch(format!("trunk {i}")));
            }
            for l in &t.links {
                check_link(&format!("trunk {i}"), l)?;
            }
        }
        let reach = self.switch_tree();
        let first = &self.hosts[0];
        if let Some(h) = self
            .hosts
            .iter()
            .find(|h| reach[h.switch].is_none() && h.switch != first.switch)
        {
            return Err(TopologyError::Disconnected(
                first.name.clone(),
                h.name.clone(),
            ));
        }
        Ok(())
    }

    /// A breadth-first tree over the switches from the first host's switch: for each switch,
    /// the trunk (index) it was reached by, `None` for the root and unreachable ones.
    pub(crate) fn switch_tree(&self) -> Vec<Option<usize>> {
        self.bfs_from(self.hosts.first().map_or(0, |h| h.switch))
    }

    /// Breadth-first over the switches from `root`: for each switch, the trunk it was reached
    /// by (its first hop back towards `root`).
    pub(crate) fn bfs_from(&self, root: usize) -> Vec<Option<usize>> {
        let n = self.switches.len();
        let mut via = vec![None; n];
        let mut seen = vec![false; n];
        if root >= n {
            return via;
        }
        seen[root] = true;
        let adjacent = self.adjacency();
        let mut queue = std::collections::VecDeque::from([root]);
        while let Some(s) = queue.pop_front() {
            for &(k, other) in &adjacent[s] {
                if !seen[other] {
                    seen[other] = true;
                    via[other] = Some(k);
                    queue.push_back(other);
                }
            }
        }
        via
    }

    /// For each switch, its trunks (index) and the switch at the far end of each, in trunk
    /// order (trunks naming a switch that does not exist are left out).
    pub(crate) fn adjacency(&self) -> Vec<Vec<(usize, usize)>> {
        let n = self.switches.len();
        let mut adj = vec![Vec::new(); n];
        for (k, t) in self.trunks.iter().enumerate() {
            let [a, b] = t.ends;
            if a < n && b < n && a != b {
                adj[a].push((k, b));
                adj[b].push((k, a));
            }
        }
        adj
    }

    /// The address of host `i`: as given, or [`Topology::addr_of_index`].
    pub fn addr_of(&self, i: usize) -> Ipv4Addr {
        self.hosts
            .get(i)
            .and_then(|h| h.addr)
            .unwrap_or(Self::addr_of_index(i))
    }

    /// The address host `i` gets when none is given: 10.77.x.y, 250 hosts to each x (so that
    /// no host gets a .0 or .255 of a /24), for `i` below [`MAX_HOSTS`].
    pub const fn addr_of_index(i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, (i / 250) as u8, (i % 250 + 1) as u8)
    }

    /// The MAC address given to host `i`'s interface.
    pub fn mac_of(i: usize) -> Mac {
        host_mac(i)
    }
}

fn check_link(name: &str, l: &LinkSpec) -> Result<(), TopologyError> {
    if !(68..=65000).contains(&l.mtu) {
        return Err(TopologyError::BadMtu(name.to_string(), l.mtu));
    }
    if let Some((what, p)) = l.faults.invalid() {
        return Err(TopologyError::BadProbability(name.to_string(), what, p));
    }
    if l.contract.is_some() && !l.is_atm() {
        return Err(TopologyError::ContractNeedsCells(name.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, switch: usize) -> HostSpec {
        HostSpec {
            name: name.into(),
            addr: None,
            link: LinkSpec::ethernet(None, Duration::ZERO),
            switch,
        }
    }

    #[test]
    fn validates_and_assigns() {
        let mut t = Topology::star(vec![host("a", 0), host("b", 0)], FabricSpec::default(), 1);
        t.hosts[1].addr = Some(Ipv4Addr::new(192, 168, 9, 9));
        t.validate().unwrap();
        assert_eq!(t.addr_of(0), Ipv4Addr::new(10, 77, 0, 1));
        assert_eq!(t.addr_of(1), Ipv4Addr::new(192, 168, 9, 9));
        let mut bad = t.clone();
        bad.hosts[1].name = "a".into();
        assert_eq!(bad.validate(), Err(TopologyError::Duplicate("a".into())));
        bad.hosts[1].name = "x/y".into();
        assert!(matches!(bad.validate(), Err(TopologyError::BadName(_))));
        // Switch names become capture file names: nothing that leads out of --capture.
        for name in ["../../x", "/etc/x", "..", "", "a b", &"s".repeat(33)] {
            let mut sw = t.clone();
            sw.switches[0].name = name.into();
            assert_eq!(
                sw.validate(),
                Err(TopologyError::BadSwitchName(name.into())),
                "{name:?}"
            );
        }
        let mut sw = t.clone();
        sw.switches[0].name = "core-1.a_b".into();
        sw.validate().unwrap();
        let mut m = t.clone();
        m.hosts[0].link.mtu = 10;
        assert!(matches!(m.validate(), Err(TopologyError::BadMtu(..))));
        let mut p = t.clone();
        p.hosts[0].link.faults.duplicate = 2.0;
        assert!(matches!(
            p.validate(),
            Err(TopologyError::BadProbability(_, "duplicate", _))
        ));
    }

    #[test]
    fn switches_must_be_connected() {
        let mut t = Topology::star(vec![host("a", 0), host("b", 1)], FabricSpec::default(), 1);
        t.switches.push(t.switches[0].clone());
        assert!(matches!(t.validate(), Err(TopologyError::Disconnected(..))));
        let l = LinkSpec::ethernet(None, Duration::ZERO);
        t.trunks.push(TrunkSpec {
            ends: [0, 1],
            links: [l.clone(), l],
        });
        t.validate().unwrap();
        assert_eq!(t.switch_tree(), vec![None, Some(0)]);
    }
}
