//! The check of a plan against its database: every circuit, followed through the switches'
//! tables (not through the plan's own hop lists), must reach its destination host, arrive on the
//! VPI/VCI the destination has bound to its source, and share no label with another circuit on
//! any link in the same direction. `weft vc plan --check` runs it, and so does the property test.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::db::PortUse;
use super::plan::{Hop, Plan};
use super::table::Table;
use super::{HostDb, Vc};

/// Something wrong with a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The circuit (`a->b`), if the problem is one circuit's.
    pub circuit: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.circuit {
            Some(c) => write!(f, "{c}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// What the check found in a plan that passed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// Circuits followed end to end.
    pub vcs: usize,
    /// Switch crossings over all circuits.
    pub hops: usize,
    /// The most switches one circuit crosses.
    pub longest: usize,
    /// Table entries no circuit used.
    pub unused_entries: usize,
}

fn problem(circuit: Option<&str>, message: impl Into<String>) -> Problem {
    Problem {
        circuit: circuit.map(str::to_string),
        message: message.into(),
    }
}

impl Plan {
    /// Checks the plan against `db`: every circuit delivers end to end by the tables, every
    /// host's bindings agree with the circuits, and no label collides on a link.
    pub fn verify(&self, db: &HostDb) -> Result<Verified, Vec<Problem>> {
        let r = db
            .resolve()
            .map_err(|e| vec![problem(None, e.to_string())])?;
        let mut problems = Vec::new();
        let switch_ix: HashMap<&str, usize> = db
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
        let mut tables: Vec<Table> = vec![Table::new(); db.switches.len()];
        for t in &self.tables {
            let Some(&s) = switch_ix.get(t.switch.as_str()) else {
                problems.push(problem(
                    None,
                    format!(
                        "a table for switch {}, which is not in the database",
                        t.switch
                    ),
                ));
                continue;
            };
            for e in &t.entries {
                if let Err(err) = tables[s].insert(e) {
                    problems.push(problem(None, format!("switch {}: {err}", t.switch)));
                }
            }
        }
        // The label a host has bound to each peer.
        let mut bound: HashMap<(&str, &str), Vc> = HashMap::new();
        for h in &self.hosts {
            for p in &h.peers {
                bound.insert((h.host.as_str(), p.host.as_str()), Vc::new(p.vpi, p.vci));
            }
        }
        let mut used: Vec<HashSet<(u32, Vc)>> = vec![HashSet::new(); db.switches.len()];
        let mut on_link: HashMap<(String, Vc), String> = HashMap::new();
        let mut seen_vcs: HashSet<(&str, &str)> = HashSet::new();
        let mut out = Verified::default();
        for vc in &self.vcs {
            let name = format!("{}->{}", vc.from, vc.to);
            let c = Some(name.as_str());
            if !seen_vcs.insert((&vc.from, &vc.to)) {
                problems.push(problem(c, "listed twice"));
            }
            let (Some(a), Some(b)) = (db.host_index(&vc.from), db.host_index(&vc.to)) else {
                problems.push(problem(c, "names a host that is not in the database"));
                continue;
            };
            let start = Vc::new(vc.vpi, vc.vci);
            if let Some(&want) = bound.get(&(vc.from.as_str(), vc.to.as_str())) {
                if want != start {
                    problems.push(problem(
                        c,
                        format!(
                            "{} has bound {want} to {}, the circuit starts on {start}",
                            vc.from, vc.to
                        ),
                    ));
                }
            } else if !self.hosts.is_empty() {
                problems.push(problem(
                    c,
                    format!("{} has no binding for {}", vc.from, vc.to),
                ));
            }
            let mut s = r.host_switch[a];
            let mut port = db.hosts[a].port;
            let mut label = start;
            let mut link = (format!("{}->{}", vc.from, db.hosts[a].switch), start);
            let mut hops: Vec<Hop> = Vec::new();
            let arrived = loop {
                if let Some(other) = on_link.insert(link.clone(), name.clone()) {
                    problems.push(problem(
                        c,
                        format!("{} on {} is also {other}'s", link.1, link.0),
                    ));
                }
                if hops.len() > db.switches.len() {
                    problems.push(problem(c, "loops between switches"));
                    break None;
                }
                let sw = r.switch_name(s).to_string();
                let Some((out_port, out_label)) = tables[s].lookup(port, label) else {
                    problems.push(problem(
                        c,
                        format!("switch {sw} has no entry for port {port} VPI/VCI {label}"),
                    ));
                    break None;
                };
                used[s].insert((port, label));
                hops.push(Hop {
                    switch: sw.clone(),
                    in_port: port,
                    in_vpi: label.vpi,
                    in_vci: label.vci,
                    out_port,
                    out_vpi: out_label.vpi,
                    out_vci: out_label.vci,
                    vp: false,
                });
                match r.ports[s].get(&out_port) {
                    Some(&PortUse::Host(h)) => {
                        let hn = &db.hosts[h].name;
                        link = (format!("{sw}->{hn}"), out_label);
                        if let Some(other) = on_link.insert(link.clone(), name.clone()) {
                            problems.push(problem(
                                c,
                                format!("{} on {} is also {other}'s", link.1, link.0),
                            ));
                        }
                        break Some((h, out_label));
                    }
                    Some(&PortUse::Trunk(k, _)) => {
                        let (next, next_port) = r.across(k, s);
                        link = (format!("{sw}->{}", r.switch_name(next)), out_label);
                        s = next;
                        port = next_port;
                        label = out_label;
                    }
                    None => {
                        problems.push(problem(
                            c,
                            format!("switch {sw} sends it to port {out_port}, where nothing is plugged in"),
                        ));
                        break None;
                    }
                }
            };
            let Some((h, last)) = arrived else {
                continue;
            };
            if h != b {
                problems.push(problem(
                    c,
                    format!("is delivered to {}, not {}", db.hosts[h].name, vc.to),
                ));
                continue;
            }
            if let Some(&want) = bound.get(&(vc.to.as_str(), vc.from.as_str())) {
                if want != last {
                    problems.push(problem(
                        c,
                        format!(
                            "arrives at {} on {last}, which {} has bound to {} only if it names it ({want} does)",
                            vc.to, vc.to, vc.from
                        ),
                    ));
                }
            }
            // The plan's hop list must be what the tables do (path hops compare without `vp`).
            let listed: Vec<Hop> = vc
                .hops
                .iter()
                .cloned()
                .map(|mut h| {
                    h.vp = false;
                    h
                })
                .collect();
            if listed != hops {
                problems.push(problem(
                    c,
                    "its hops in the plan differ from the path the tables give it",
                ));
            }
            out.vcs += 1;
            out.hops += hops.len();
            out.longest = out.longest.max(hops.len());
        }
        out.unused_entries = self
            .tables
            .iter()
            .filter_map(|t| switch_ix.get(t.switch.as_str()).map(|&s| (s, t)))
            .map(|(s, t)| {
                t.entries
                    .iter()
                    .filter(|e| match e.in_vci {
                        Some(v) => !used[s].contains(&(e.in_port, Vc::new(e.in_vpi, v))),
                        None => !used[s]
                            .iter()
                            .any(|(p, l)| *p == e.in_port && l.vpi == e.in_vpi),
                    })
                    .count()
            })
            .sum();
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(problems)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Shape, plan};
    use super::*;

    const DB: &str = r#"
[[switch]]
name = "s1"
[[switch]]
name = "s2"
[[switch]]
name = "s3"
[[host]]
name = "a"
switch = "s1"
port = 1
[[host]]
name = "b"
switch = "s2"
port = 1
[[host]]
name = "c"
switch = "s3"
port = 1
vci = 138
[[trunk]]
ends = ["s1", "s2"]
ports = [9, 9]
[[trunk]]
ends = ["s2", "s3"]
ports = [10, 9]
"#;

    #[test]
    fn a_plan_verifies_and_a_broken_one_does_not() {
        let db = HostDb::parse(DB, "db.toml").unwrap();
        let p = plan(&db, &Shape::Mesh).unwrap();
        let v = p.verify(&db).unwrap();
        assert_eq!((v.vcs, v.longest, v.unused_entries), (6, 3, 0));
        // Every host reaches c on 138.
        assert!(p.vcs.iter().filter(|v| v.to == "c").all(|v| v.vci == 138));
        // A lost entry in the middle switch.
        let mut broken = p.clone();
        broken.tables[1].entries.remove(0);
        let e = broken.verify(&db).unwrap_err();
        assert!(e[0].message.contains("switch s2 has no entry"), "{e:?}");
        // A misrouted entry.
        let mut wrong = p.clone();
        let e0 = &mut wrong.tables[0].entries[0];
        e0.out_port = 1;
        assert!(wrong.verify(&db).is_err());
    }

    #[test]
    fn a_virtual_path_switches_by_vpi_alone() {
        let text = format!("{DB}\n[[vp]]\nends = [\"s1\", \"s3\"]\nvpi = 5\n");
        let db = HostDb::parse(&text, "db.toml").unwrap();
        let p = plan(&db, &Shape::Mesh).unwrap();
        p.verify(&db).unwrap();
        // s2 carries a<->c in one path entry per direction, and its own circuits.
        let s2 = &p.counts.per_switch[1];
        assert_eq!(s2.vp_entries, 2);
        assert_eq!(s2.vc_entries, 4);
        let ac = p.vcs.iter().find(|v| v.from == "a" && v.to == "c").unwrap();
        assert!(ac.hops[1].vp);
        assert_eq!(ac.hops[0].out_vpi, 5);
        assert_eq!(ac.hops[1].in_vci, ac.hops[1].out_vci);
    }
}
