//! The host database: switches, the hosts on them (switch and port), the trunks between them,
//! and optionally virtual paths and the pairs to connect. Parsed from TOML and validated.
//!
//! ```toml
//! [[switch]]
//! name = "asx1"
//!
//! [[host]]
//! name = "methuselah"
//! switch = "asx1"
//! port = 3
//! vci = 138            # optional: the VCI that names this host on every other host's link
//! addr = "10.0.0.7"    # optional: shown in the hosts' bindings
//! site = "adelaide"    # optional: for a mesh between sites only
//!
//! [[trunk]]
//! ends = ["asx1", "asx2"]
//! ports = [1, 1]
//!
//! [[vp]]               # optional: a virtual path switched through the switches between its ends
//! ends = ["asx1", "asx3"]
//! vpi = 5
//!
//! pairs = [["methuselah", "dhpc04"]]   # optional: the circuits of `--pairs`
//! ```

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::{FIRST_USER_VCI, VcError};

/// A switch of the database.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbSwitch {
    /// Its name.
    pub name: String,
}

/// A host: the switch and port its link ends on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbHost {
    /// Its name.
    pub name: String,
    /// The switch its link ends on.
    pub switch: String,
    /// The port of that switch.
    pub port: u32,
    /// The VCI that names this host on the links of the hosts that reach it (EBN: 138 for
    /// `methuselah`); `None`: the planner gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vci: Option<u16>,
    /// Its address, shown in the bindings (`None`: its name stands for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// The site it is at, for a mesh between sites (EBN: Adelaide and Canberra); `None`: a
    /// site of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
}

/// A link between two switches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbTrunk {
    /// The two switches.
    pub ends: [String; 2],
    /// The port of each.
    pub ports: [u32; 2],
}

/// A virtual path between two switches, along the shortest path of trunks between them: the
/// switches inside it switch its cells by VPI alone, leaving the VCIs of the circuits it carries
/// untouched (EBN's VP through Telstra's network).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbVp {
    /// The switches where it starts and ends.
    pub ends: [String; 2],
    /// Its VPI on every trunk it crosses (1-255; VPI 0 carries the circuits outside paths).
    pub vpi: u8,
}

/// The host database a plan is made from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostDb {
    /// The switches.
    #[serde(default, rename = "switch")]
    pub switches: Vec<DbSwitch>,
    /// The hosts.
    #[serde(default, rename = "host")]
    pub hosts: Vec<DbHost>,
    /// The trunks between switches.
    #[serde(default, rename = "trunk", skip_serializing_if = "Vec::is_empty")]
    pub trunks: Vec<DbTrunk>,
    /// Virtual paths.
    #[serde(default, rename = "vp", skip_serializing_if = "Vec::is_empty")]
    pub vps: Vec<DbVp>,
    /// The host pairs to connect when the plan's shape is "pairs".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<[String; 2]>,
}

/// What is plugged into a port of a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PortUse {
    /// Host (index).
    Host(usize),
    /// Trunk (index) end (0 or 1).
    Trunk(usize, usize),
}

/// A database with names resolved to indices, as the planner and the check use it.
#[derive(Debug)]
pub(super) struct Resolved<'a> {
    pub db: &'a HostDb,
    /// Each host's switch.
    pub host_switch: Vec<usize>,
    /// Each trunk's switches.
    pub trunk_ends: Vec<[usize; 2]>,
    /// Each virtual path's switches.
    pub vp_ends: Vec<[usize; 2]>,
    /// Per switch, what each port in use leads to.
    pub ports: Vec<HashMap<u32, PortUse>>,
}

impl HostDb {
    /// Parses and validates a database; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<HostDb, VcError> {
        let db: HostDb = toml::from_str(text).map_err(|e| VcError::Syntax {
            file: file.to_string(),
            message: e.to_string().trim_end().replace('\n', "\n  "),
        })?;
        db.resolve()?;
        Ok(db)
    }

    /// Checks names, ports, VCIs and VPIs (not connectivity: a plan needs only its own pairs
    /// connected).
    pub fn validate(&self) -> Result<(), VcError> {
        self.resolve().map(|_| ())
    }

    /// The index of the host called `name`.
    pub fn host_index(&self, name: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.name == name)
    }

    /// A database of `hosts` hosts spread round-robin over `switches` switches in a line
    /// (`s1`-`s2`-...), hosts on ports 1, 2, ... and trunks on the ports after them: the
    /// database of the growth table when no file is given.
    pub fn line(hosts: usize, switches: usize) -> HostDb {
        let switches = switches.max(1);
        let name = |s: usize| format!("s{}", s + 1);
        let mut per_switch = vec![0u32; switches];
        let mut db = HostDb {
            switches: (0..switches).map(|s| DbSwitch { name: name(s) }).collect(),
            ..HostDb::default()
        };
        for h in 0..hosts {
            let s = h % switches;
            per_switch[s] += 1;
            db.hosts.push(DbHost {
                name: format!("h{}", h + 1),
                switch: name(s),
                port: per_switch[s],
                vci: None,
                addr: None,
                site: None,
            });
        }
        // Trunk ports above every host port of the largest switch.
        let base = hosts.div_ceil(switches) as u32 + 1;
        for s in 1..switches {
            db.trunks.push(DbTrunk {
                ends: [name(s - 1), name(s)],
                ports: [base + 1, base],
            });
        }
        db
    }

    /// The database restricted to the hosts at `sites` and the host `keep` (pairs among them
    /// kept), in database order; empty `sites`: the database itself.
    pub fn at_sites(&self, sites: &[String], keep: Option<&str>) -> HostDb {
        if sites.is_empty() {
            return self.clone();
        }
        let mut db = self.clone();
        db.hosts.retain(|h| {
            Some(h.name.as_str()) == keep || h.site.as_ref().is_some_and(|s| sites.contains(s))
        });
        let kept = |h: &String| db.hosts.iter().any(|x| &x.name == h);
        let pairs = self
            .pairs
            .iter()
            .filter(|p| kept(&p[0]) && kept(&p[1]))
            .cloned()
            .collect();
        db.pairs = pairs;
        db
    }

    /// The database restricted to its first `n` hosts (pairs among them kept).
    pub fn first_hosts(&self, n: usize) -> HostDb {
        let mut db = self.clone();
        db.hosts.truncate(n);
        let kept = |h: &String| db.hosts.iter().any(|x| &x.name == h);
        let pairs = self
            .pairs
            .iter()
            .filter(|p| kept(&p[0]) && kept(&p[1]))
            .cloned()
            .collect();
        db.pairs = pairs;
        db
    }

    pub(super) fn resolve(&self) -> Result<Resolved<'_>, VcError> {
        let mut switch_ix: HashMap<&str, usize> = HashMap::new();
        for (i, s) in self.switches.iter().enumerate() {
            if switch_ix.insert(s.name.as_str(), i).is_some() {
                return Err(VcError::Duplicate {
                    kind: "switch",
                    name: s.name.clone(),
                });
            }
        }
        let known = || {
            self.switches
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let switch_of = |what: String, name: &str| {
            switch_ix
                .get(name)
                .copied()
                .ok_or_else(|| VcError::NoSwitch {
                    what,
                    name: name.to_string(),
                    known: known(),
                })
        };
        let mut ports: Vec<HashMap<u32, PortUse>> = vec![HashMap::new(); self.switches.len()];
        let describe = |u: PortUse| match u {
            PortUse::Host(h) => format!("host {}", self.hosts[h].name),
            PortUse::Trunk(t, _) => {
                format!(
                    "trunk {}-{}",
                    self.trunks[t].ends[0], self.trunks[t].ends[1]
                )
            }
        };
        let plug = |ports: &mut Vec<HashMap<u32, PortUse>>, s: usize, port: u32, u: PortUse| {
            if let Some(first) = ports[s].insert(port, u) {
                return Err(VcError::PortInUse {
                    switch: self.switches[s].name.clone(),
                    port,
                    first: describe(first),
                    second: describe(u),
                });
            }
            Ok(())
        };
        let mut names: HashMap<&str, usize> = HashMap::new();
        let mut host_switch = Vec::with_capacity(self.hosts.len());
        for (i, h) in self.hosts.iter().enumerate() {
            if names.insert(h.name.as_str(), i).is_some() {
                return Err(VcError::Duplicate {
                    kind: "host",
                    name: h.name.clone(),
                });
            }
            let s = switch_of(format!("host {}", h.name), &h.switch)?;
            plug(&mut ports, s, h.port, PortUse::Host(i))?;
            if let Some(v) = h.vci.filter(|&v| v < FIRST_USER_VCI) {
                return Err(VcError::Reserved {
                    what: format!("host {}", h.name),
                    message: format!(
                        "VCI {v} is reserved (0-31: OAM, signalling, ILMI); use {FIRST_USER_VCI} or above"
                    ),
                });
            }
            host_switch.push(s);
        }
        let mut trunk_ends = Vec::with_capacity(self.trunks.len());
        for (k, t) in self.trunks.iter().enumerate() {
            let what = format!("trunk {k} ({}-{})", t.ends[0], t.ends[1]);
            let a = switch_of(what.clone(), &t.ends[0])?;
            let b = switch_of(what, &t.ends[1])?;
            if a == b {
                return Err(VcError::TrunkLoop {
                    index: k,
                    switch: t.ends[0].clone(),
                });
            }
            plug(&mut ports, a, t.ports[0], PortUse::Trunk(k, 0))?;
            plug(&mut ports, b, t.ports[1], PortUse::Trunk(k, 1))?;
            trunk_ends.push([a, b]);
        }
        let mut vp_ends = Vec::with_capacity(self.vps.len());
        for (k, vp) in self.vps.iter().enumerate() {
            let what = format!("vp {k} ({}-{})", vp.ends[0], vp.ends[1]);
            let a = switch_of(what.clone(), &vp.ends[0])?;
            let b = switch_of(what.clone(), &vp.ends[1])?;
            if vp.vpi == 0 {
                return Err(VcError::Reserved {
                    what,
                    message: "VPI 0 carries the circuits outside virtual paths; give the path a VPI of 1-255".into(),
                });
            }
            if a == b {
                return Err(VcError::Shape(format!(
                    "{what}: a virtual path needs two different switches"
                )));
            }
            vp_ends.push([a, b]);
        }
        for (k, p) in self.pairs.iter().enumerate() {
            for h in p {
                if !names.contains_key(h.as_str()) {
                    return Err(VcError::NoHost {
                        what: format!("pairs[{k}]"),
                        name: h.clone(),
                    });
                }
            }
        }
        Ok(Resolved {
            db: self,
            host_switch,
            trunk_ends,
            vp_ends,
            ports,
        })
    }
}

impl Resolved<'_> {
    /// A shortest path of switches from `from` to `to`: the switches in order and the trunk
    /// taken from each to the next (`None` if they are not joined). Breadth-first in trunk
    /// order, so the same database always gives the same path.
    pub fn path(&self, from: usize, to: usize) -> Option<(Vec<usize>, Vec<usize>)> {
        let n = self.db.switches.len();
        let mut via: Vec<Option<usize>> = vec![None; n];
        let mut seen = vec![false; n];
        seen[from] = true;
        let mut queue = VecDeque::from([from]);
        while let Some(s) = queue.pop_front() {
            if s == to {
                break;
            }
            for (k, &[a, b]) in self.trunk_ends.iter().enumerate() {
                let other = if a == s {
                    b
                } else if b == s {
                    a
                } else {
                    continue;
                };
                if !seen[other] {
                    seen[other] = true;
                    via[other] = Some(k);
                    queue.push_back(other);
                }
            }
        }
        if !seen[to] {
            return None;
        }
        let mut switches = vec![to];
        let mut trunks = Vec::new();
        let mut at = to;
        while at != from {
            let k = via[at]?;
            trunks.push(k);
            let [a, b] = self.trunk_ends[k];
            at = if a == at { b } else { a };
            switches.push(at);
        }
        switches.reverse();
        trunks.reverse();
        Some((switches, trunks))
    }

    /// The port of switch `s` on trunk `k`.
    pub fn trunk_port(&self, k: usize, s: usize) -> u32 {
        let t = &self.db.trunks[k];
        if self.trunk_ends[k][0] == s {
            t.ports[0]
        } else {
            t.ports[1]
        }
    }

    /// The switch at the far end of trunk `k` from `s`, and its port there.
    pub fn across(&self, k: usize, s: usize) -> (usize, u32) {
        let [a, b] = self.trunk_ends[k];
        let other = if a == s { b } else { a };
        (other, self.trunk_port(k, other))
    }

    /// A name for trunk `k`.
    pub fn trunk_name(&self, k: usize) -> String {
        let t = &self.db.trunks[k];
        format!("trunk {}-{}", t.ends[0], t.ends[1])
    }

    /// The name of switch `s`.
    pub fn switch_name(&self, s: usize) -> &str {
        &self.db.switches[s].name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DB: &str = r#"
[[switch]]
name = "asx1"
[[switch]]
name = "asx2"
[[host]]
name = "a"
switch = "asx1"
port = 3
[[host]]
name = "b"
switch = "asx2"
port = 3
vci = 138
[[trunk]]
ends = ["asx1", "asx2"]
ports = [1, 1]
"#;

    #[test]
    fn parses_and_finds_paths() {
        let db = HostDb::parse(DB, "db.toml").unwrap();
        let r = db.resolve().unwrap();
        assert_eq!(r.path(0, 1), Some((vec![0, 1], vec![0])));
        assert_eq!(r.path(1, 1), Some((vec![1], vec![])));
        assert_eq!(r.across(0, 0), (1, 1));
    }

    #[test]
    fn errors_say_what_to_change() {
        let e = HostDb::parse(&DB.replace("port = 3\nvci", "port = 1\nvci"), "db.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("port 1 of switch asx2"), "{e}");
        let e = HostDb::parse(&DB.replace("vci = 138", "vci = 5"), "db.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("reserved"), "{e}");
        let e = HostDb::parse(
            &DB.replace("switch = \"asx2\"", "switch = \"asx9\""),
            "db.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("asx9") && e.contains("switches: asx1, asx2"),
            "{e}"
        );
        let e = HostDb::parse(&format!("{DB}\ncolour = 1\n"), "db.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("db.toml: ") && e.contains("colour"), "{e}");
    }

    #[test]
    fn a_line_of_switches_is_valid() {
        let db = HostDb::line(12, 3);
        db.validate().unwrap();
        assert_eq!(db.trunks.len(), 2);
        assert_eq!(db.hosts[3].switch, "s1");
    }
}
