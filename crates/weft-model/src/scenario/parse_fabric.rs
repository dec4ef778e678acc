//! The `[fabric]` table of a scenario file: a datacenter topology from a generator
//! ([`crate::net::ShapeSpec`]), expanded into the file's hosts, switches and links so that every
//! engine builds it as if it had been written out.
//!
//! ```toml
//! [fabric]
//! topology = "fat-tree"       # fat-tree (k) | leaf-spine (leaves, hosts_per_leaf, spines or oversubscription)
//! k = 4                       # hosts h0 .. h15; switches e<pod>.<i>, a<pod>.<j>, c<m>
//! host_link = { tech = "10gige", delay = "1us", mtu = 9000 }   # host to edge (leaf)
//! agg_link = { tech = "10gige", delay = "1us" }    # edge to aggregation (leaf to spine); default host_link's
//! core_link = { tech = "10gige", delay = "1us" }   # aggregation to core; default agg_link's
//! switch = { buffer = "100 frames", ecn_threshold = "20 frames", latency = "500ns" }   # every switch
//! ```
//!
//! A leaf-spine's `oversubscription` (what a leaf's hosts can send over what its uplinks carry)
//! gives its spine count: `hosts_per_leaf * host rate / (ratio * uplink rate)`, rounded.

use std::collections::HashSet;

use serde::Serialize;
use toml::de::DeValue;

use super::parse::{LINK_KEYS, SWITCH_KEYS, link_body, switch_body};
use super::reader::{Result, Tbl};
use super::{Host, Link, Switch};
use crate::app::traffic::Traffic;
use crate::net::{MAX_HOSTS, Multipath, ShapeSpec, Tier, oversubscription, spines_for};
use crate::time::Duration;

/// The generator a scenario's `[fabric]` table asked for, as the engines see it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FabricGen {
    /// The generator and its size.
    pub shape: ShapeSpec,
    /// The link of each tier, host first ([`Tier`] order; a leaf-spine has two).
    pub tiers: Vec<Link>,
    /// How the switches spread frames over equal-cost ports (`multipath = "ecmp" | "spray" |
    /// "spray-rr" | "flowlet"`, `flowlet_gap`; default per-flow ECMP).
    pub multipath: Multipath,
    /// A leaf-spine's oversubscription (1: non-blocking); a fat-tree's is 1.
    pub oversubscription: f64,
    /// The first host and switch it added, and the first link (indices into the scenario's
    /// lists; the nodes the file wrote itself come before them).
    pub first: [usize; 3],
    /// The links and switches lost during the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fail: Vec<FailSpec>,
}

/// A link or switch the fabric loses during the run (`[[fabric.fail]]`), by name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailSpec {
    /// The trunk's two switches (`link = ["a0.0", "c0"]`), or none.
    pub link: Option<[String; 2]>,
    /// The switch (`switch = "c0"`), or none.
    pub switch: Option<String>,
    /// When it goes down, from the start of the run.
    pub at: Duration,
    /// How long it stays down (`for`; none: to the end).
    #[serde(rename = "for")]
    pub down: Option<Duration>,
}

const KEYS: &[&str] = &[
    "topology",
    "k",
    "leaves",
    "spines",
    "hosts_per_leaf",
    "oversubscription",
    "host_link",
    "agg_link",
    "core_link",
    "switch",
    "multipath",
    "flowlet_gap",
    "fail",
];

/// Adds the hosts, switches and links of the file's `[fabric]` (if any) to theirs; `names`
/// holds every node name so far.
pub(super) fn expand(
    root: &Tbl<'_, '_>,
    hosts: &mut Vec<Host>,
    switches: &mut Vec<Switch>,
    links: &mut Vec<Link>,
    names: &mut Vec<String>,
) -> Result<Option<FabricGen>> {
    let Some(f) = root.table("fabric", "expected a table: [fabric] with topology = ...")? else {
        return Ok(None);
    };
    f.check_keys(KEYS)?;
    let host_link = tier_link(&f, "host_link")?
        .ok_or_else(|| f.err_table("missing `host_link`: a table such as { tech = \"10gige\" }"))?;
    let agg_link = tier_link(&f, "agg_link")?.unwrap_or_else(|| host_link.clone());
    let core_link = tier_link(&f, "core_link")?.unwrap_or_else(|| agg_link.clone());
    // No `switch` table: what a `[[switch]]` with only a name is.
    let empty = toml::de::DeTable::default();
    let template = match f.get("switch").map(|v| (v, v.get_ref())) {
        None => switch_body(&f.child("switch", &empty, f.span.clone()), String::new())?,
        Some((v, DeValue::Table(t))) => {
            let s = f.child("switch", t, v.span());
            s.check_keys(SWITCH_KEYS)?;
            switch_body(&s, String::new())?
        }
        Some(_) => return Err(f.err("switch", "expected a table of switch keys")),
    };
    let leaf_spine = match f.string("topology")?.as_deref() {
        Some("fat-tree" | "fattree") => false,
        Some("leaf-spine") => true,
        _ => return Err(f.err("topology", "expected fat-tree or leaf-spine")),
    };
    let only = |keys: &[&str], what: &str| -> Result<()> {
        match keys.iter().find(|k| f.get(k).is_some()) {
            Some(k) => Err(f.err(k, format!("only a {what} takes this key"))),
            None => Ok(()),
        }
    };
    let (shape, ratio, tiers) = if leaf_spine {
        only(&["k", "core_link"], "fat-tree")?;
        let leaves = f
            .count32("leaves", 1, 4096)?
            .ok_or_else(|| f.err_table("missing `leaves`"))?;
        let per_leaf = f
            .count32("hosts_per_leaf", 1, 4096)?
            .ok_or_else(|| f.err_table("missing `hosts_per_leaf`"))?;
        let (up, down) = (agg_link.tech.rate.as_bps(), host_link.tech.rate.as_bps());
        let spines = match (
            f.count32("spines", 1, 4096)?,
            f.number("oversubscription", 0.01, 1000.0)?,
        ) {
            (Some(s), None) => s,
            (None, Some(r)) => spines_for(r, per_leaf, down, up),
            _ => {
                return Err(
                    f.err_table("a leaf-spine needs `spines` or `oversubscription` (one of them)")
                );
            }
        };
        let shape = ShapeSpec::LeafSpine {
            leaves,
            spines,
            hosts_per_leaf: per_leaf,
        };
        let ratio = oversubscription(per_leaf, spines, down, up);
        (shape, ratio, vec![host_link, agg_link])
    } else {
        only(
            &["leaves", "spines", "hosts_per_leaf", "oversubscription"],
            "leaf-spine",
        )?;
        let k = f
            .count32("k", 2, 64)?
            .ok_or_else(|| f.err_table("missing `k`: the ports of each switch, even"))?;
        let shape = ShapeSpec::FatTree { k };
        (shape, 1.0, vec![host_link, agg_link, core_link])
    };
    let multipath = multipath(&f)?;
    let built = shape.build().map_err(|e| f.err_table(e))?;
    if hosts.len() + built.hosts.len() > crate::net::MAX_HOSTS {
        return Err(f.err_table(format!(
            "{} hosts with those of the file: at most {}",
            hosts.len() + built.hosts.len(),
            crate::net::MAX_HOSTS
        )));
    }
    let mut taken: HashSet<String> = names.iter().cloned().collect();
    for n in built.hosts.iter().chain(&built.switches) {
        if !taken.insert(n.clone()) {
            return Err(f.err_table(format!(
                "the generated node {n:?} is already the name of another node"
            )));
        }
    }
    let first = [hosts.len(), switches.len(), links.len()];
    let tier_of = |t: Tier| match t {
        Tier::Host => &tiers[0],
        Tier::Agg => &tiers[1],
        Tier::Core => &tiers[tiers.len() - 1],
    };
    let link = |a: &str, b: &str, t: Tier| Link {
        ends: [a.to_string(), b.to_string()],
        ..tier_of(t).clone()
    };
    for (h, &s) in built.hosts.iter().zip(&built.host_switch) {
        hosts.push(Host {
            name: h.clone(),
            addr: None,
            costs: None,
            disk: None,
            abr: None,
            lane_driver: None,
        });
        links.push(link(h, &built.switches[s], Tier::Host));
    }
    for (a, b, t) in &built.trunks {
        links.push(link(&built.switches[*a], &built.switches[*b], *t));
    }
    for name in &built.switches {
        switches.push(Switch {
            name: name.clone(),
            ..template.clone()
        });
    }
    names.extend(built.hosts.iter().chain(&built.switches).cloned());
    let switch_names: Vec<&str> = switches.iter().map(|s| s.name.as_str()).collect();
    let fail = f
        .tables("fail")?
        .iter()
        .map(|t| fail_spec(t, &switch_names))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(FabricGen {
        shape,
        tiers,
        multipath,
        oversubscription: ratio,
        first,
        fail,
    }))
}

/// One `[[fabric.fail]]`: `link = ["A", "B"]` (two switches) or `switch = "A"`, `at`, `for`.
fn fail_spec(t: &Tbl<'_, '_>, switches: &[&str]) -> Result<FailSpec> {
    t.check_keys(&["link", "switch", "at", "for"])?;
    let link = t.names("link", switches)?;
    let switch = t.names("switch", switches)?;
    let (link, switch) = match (link.as_slice(), switch.as_slice()) {
        ([a, b], []) => (Some([a.clone(), b.clone()]), None),
        ([], [s]) => (None, Some(s.clone())),
        _ => {
            return Err(t.err_table(
                "expected link = [\"SWITCH\", \"SWITCH\"] (a trunk) or switch = \"SWITCH\"",
            ));
        }
    };
    let day = Duration::from_secs(86_400);
    let at = t
        .duration("at", Duration::ZERO, day)?
        .ok_or_else(|| t.err_table("missing `at`: when it fails, such as \"2ms\""))?;
    Ok(FailSpec {
        link,
        switch,
        at,
        down: t.duration("for", Duration(1), day)?,
    })
}

/// The `multipath` (and `flowlet_gap`) keys of `t` (a `[fabric]` or a workload).
pub(super) fn multipath(t: &Tbl<'_, '_>) -> Result<Multipath> {
    let gap = t.duration("flowlet_gap", Duration(1), Duration::from_secs(1))?;
    let m = match t.string("multipath")? {
        None => Multipath::default(),
        Some(name) => Multipath::from_name(&name, gap)
            .ok_or_else(|| t.err("multipath", "expected ecmp, spray, spray-rr or flowlet"))?,
    };
    if gap.is_some() && !matches!(m, Multipath::Flowlet { .. }) {
        return Err(t.err(
            "flowlet_gap",
            "only meaningful with multipath = \"flowlet\"",
        ));
    }
    Ok(m)
}

/// The `traffic` (and `senders`) keys of workload `w`: a permutation's hosts (`from`; all
/// when absent; `to` becomes the same list) or an incast's one receiver (`to`) and its senders
/// (`from`, or the first `senders` other hosts).
pub(super) fn traffic(
    w: &Tbl<'_, '_>,
    kind: super::WorkloadKind,
    hosts: &[&str],
    from: &mut Vec<String>,
    to: &mut Vec<String>,
) -> Result<Option<Traffic>> {
    let senders = w.count("senders", 1, MAX_HOSTS as u64)?;
    let t = match w.string("traffic")?.as_deref() {
        None => {
            if senders.is_some() {
                return Err(w.err("senders", "only meaningful with traffic = \"incast\""));
            }
            return Ok(None);
        }
        Some(_) if kind != super::WorkloadKind::Tput => {
            return Err(w.err(
                "traffic",
                "only a workload of kind = \"tput\" takes this key",
            ));
        }
        Some("permutation") => Traffic::Permutation,
        Some("incast") => Traffic::Incast,
        Some("pairs") => Traffic::Pairs,
        Some(_) => return Err(w.err("traffic", "expected permutation, incast or pairs")),
    };
    match t {
        Traffic::Pairs => {
            if senders.is_some() {
                return Err(w.err("senders", "only meaningful with traffic = \"incast\""));
            }
            if from.len() != to.len() || from.iter().zip(to.iter()).any(|(f, t)| f == t) {
                return Err(w.err(
                    "traffic",
                    "pairs take `from` and `to` lists of one length, each pair two hosts",
                ));
            }
        }
        Traffic::Permutation => {
            if senders.is_some() {
                return Err(w.err("senders", "only meaningful with traffic = \"incast\""));
            }
            if from.is_empty() {
                *from = hosts.iter().map(|h| h.to_string()).collect();
            }
            *to = from.clone();
        }
        Traffic::Incast => {
            if to.len() != 1 {
                return Err(w.err("to", "an incast has one receiver"));
            }
            if let Some(n) = senders {
                if !from.is_empty() {
                    return Err(w.err("senders", "give `from` or `senders`, not both"));
                }
                *from = hosts
                    .iter()
                    .filter(|h| **h != to[0])
                    .take(n as usize)
                    .map(|h| h.to_string())
                    .collect();
                if from.len() < n as usize {
                    return Err(w.err("senders", format!("only {} other hosts", from.len())));
                }
            }
        }
    }
    Ok(Some(t))
}

/// A tier's link template (`host_link = { tech = ..., delay = ... }`), if given.
fn tier_link(f: &Tbl<'_, '_>, key: &str) -> Result<Option<Link>> {
    let Some(l) = f.table(
        key,
        "expected a table of link keys, such as { tech = \"10gige\" }",
    )?
    else {
        return Ok(None);
    };
    l.check_keys(LINK_KEYS)?;
    Ok(Some(link_body(&l, Default::default())?))
}

#[cfg(test)]
mod tests {
    use crate::net::{Network, Topology};
    use crate::scenario::Scenario;
    use crate::units::Rate;

    fn file(fabric: &str) -> String {
        format!(
            "name = \"f\"\n[[host]]\nname = \"x\"\n[[switch]]\nname = \"sx\"\n[[link]]\nends = [\"x\", \"sx\"]\ntech = \"gige\"\n[fabric]\n{fabric}\n"
        )
    }

    #[test]
    fn a_fat_tree_expands_into_hosts_switches_and_tiered_links() {
        let text = file(
            "topology = \"fat-tree\"\nk = 4\nhost_link = { tech = \"10gige\", delay = \"1us\", mtu = 9000 }\ncore_link = { tech = \"gige\", delay = \"5us\" }\nswitch = { buffer = \"100 frames\", latency = \"500ns\" }",
        );
        let s = Scenario::parse(&text, "f.toml").unwrap();
        let g = s.fabric.as_ref().unwrap();
        assert_eq!(g.first, [1, 1, 1]);
        assert_eq!((s.hosts.len(), s.switches.len()), (1 + 16, 1 + 20));
        assert_eq!(s.links.len(), 1 + 16 + 32);
        assert_eq!(s.hosts[1].name, "h0");
        let host = &s.links[1];
        assert_eq!((host.tech.mtu.0, host.delay.as_nanos()), (9000, 1000));
        assert_eq!(host.ends, ["h0".to_string(), "e0.0".to_string()]);
        // Edge to aggregation takes the host tier's link; aggregation to core its own.
        let agg = &s.links[1 + 16];
        assert_eq!(agg.tech.rate, Rate::mbps(10_000));
        let core = s.links.last().unwrap();
        assert!(core.ends[1].starts_with('c'));
        assert_eq!(
            (core.tech.rate, core.delay.as_nanos()),
            (Rate::mbps(1000), 5000)
        );
        let sw = &s.switches[1];
        assert_eq!((sw.name.as_str(), sw.latency.as_nanos()), ("e0.0", 500));
        assert!(sw.buffer.is_some());
        // The file's own host and switch stay apart from the generated ones.
        assert!(Topology::from_scenario(&s, 1).is_err());
    }

    #[test]
    fn a_generated_fabric_of_432_hosts_builds_a_network() {
        let text = "name = \"f\"\n[fabric]\ntopology = \"fat-tree\"\nk = 12\nhost_link = { tech = \"10gige\" }";
        let s = Scenario::parse(text, "f.toml").unwrap();
        let (t, notes) = Topology::from_scenario(&s, 1).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            (t.hosts.len(), t.switches.len(), t.trunks.len()),
            (432, 180, 864)
        );
        assert_eq!(t.addr_of(431).octets(), [10, 77, 1, 182]);
        let n = Network::<Vec<u8>>::new(&t).unwrap();
        assert_eq!(n.hosts(), 432);
    }

    #[test]
    fn a_leaf_spine_takes_its_spines_from_the_oversubscription() {
        let text = "name = \"f\"\n[fabric]\ntopology = \"leaf-spine\"\nleaves = 4\nhosts_per_leaf = 12\noversubscription = 3\nhost_link = { tech = \"10gige\" }\nagg_link = { tech = { preset = \"10gige\", rate = \"40Gbps\", line_rate = \"40Gbps\" } }";
        let s = Scenario::parse(text, "f.toml").unwrap();
        let g = s.fabric.as_ref().unwrap();
        // 12 x 10 Gbit/s over 3 = 40 Gbit/s of uplinks: one 40 Gbit/s spine.
        assert_eq!(g.oversubscription, 3.0);
        assert_eq!((s.hosts.len(), s.switches.len()), (48, 5));
    }

    #[test]
    fn bad_fabrics_are_refused_at_their_key() {
        let bad = [
            (
                "topology = \"torus\"\nhost_link = { tech = \"gige\" }",
                "fabric.topology",
            ),
            (
                "topology = \"fat-tree\"\nk = 5\nhost_link = { tech = \"gige\" }",
                "fabric",
            ),
            ("topology = \"fat-tree\"\nk = 4", "fabric"),
            (
                "topology = \"fat-tree\"\nk = 4\nspines = 2\nhost_link = { tech = \"gige\" }",
                "fabric.spines",
            ),
            (
                "topology = \"leaf-spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 1\noversubscription = 2\nhost_link = { tech = \"gige\" }",
                "fabric",
            ),
            (
                "topology = \"fat-tree\"\nk = 4\nhost_link = { tech = \"gige\", ends = [\"a\", \"b\"] }",
                "fabric.host_link.ends",
            ),
            (
                "topology = \"fat-tree\"\nk = 4\nhost_link = { tech = \"gige\" }\nswitch = { name = \"x\" }",
                "fabric.switch.name",
            ),
        ];
        for (body, key) in bad {
            let e = Scenario::parse(&format!("name = \"f\"\n[fabric]\n{body}\n"), "f.toml")
                .unwrap_err();
            assert_eq!(e.key, key, "{body}: {e}");
        }
        // A generated name that the file took already.
        let clash = "name = \"f\"\n[[host]]\nname = \"h1\"\n[fabric]\ntopology = \"fat-tree\"\nk = 2\nhost_link = { tech = \"gige\" }";
        let e = Scenario::parse(clash, "f.toml").unwrap_err();
        assert!(e.message.contains("\"h1\""), "{e}");
    }
}
