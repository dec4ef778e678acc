//! The planner: from a [`HostDb`] and a [`Shape`], the circuits, their hops, every switch's
//! cross-connect table and every host's bindings, with the counts Sandia's O(n^2) is about.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::db::{HostDb, Resolved};
use super::table::Table;
use super::{Conflict, FIRST_USER_VCI, Vc, VcError};

/// The first VCI the planner gives a host that has none in the database (host `i` gets the
/// `i`-th free one from here).
pub const HOST_VCI_BASE: u16 = 100;

/// The first VCI the planner uses on a trunk (and inside a virtual path).
pub const TRUNK_VCI_BASE: u16 = FIRST_USER_VCI;

/// Which circuits to plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// Every host to every other (Sandia's O(n^2)).
    Mesh,
    /// Every host to every host at another site (EBN: each Adelaide host to each Canberra
    /// host and back).
    Sites,
    /// Every host to the hub (EBN's first configuration around the DECNIS router).
    Star(String),
    /// The pairs given; empty: the database's `pairs`.
    Pairs(Vec<[String; 2]>),
}

impl Shape {
    /// `mesh`, `sites`, `star` or `pairs`.
    pub fn name(&self) -> &'static str {
        match self {
            Shape::Mesh => "mesh",
            Shape::Sites => "sites",
            Shape::Star(_) => "star",
            Shape::Pairs(_) => "pairs",
        }
    }
}

/// A plan: what `weft vc plan --json` prints and `--check` reads back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// `mesh`, `sites`, `star` or `pairs`.
    pub shape: String,
    /// The hub of a star.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub: Option<String>,
    /// How many circuits and entries.
    pub counts: Counts,
    /// Every one-way circuit, both directions of each duplex pair, in pair order.
    pub vcs: Vec<PlannedVc>,
    /// Every switch's cross-connect table, in database order.
    pub tables: Vec<SwitchTable>,
    /// Every host's bindings, in database order.
    pub hosts: Vec<HostBindings>,
}

/// One one-way circuit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedVc {
    /// The sending host.
    pub from: String,
    /// The receiving host.
    pub to: String,
    /// The VPI on the sending host's link.
    pub vpi: u8,
    /// The VCI on the sending host's link: it names the destination (EBN).
    pub vci: u16,
    /// The switches it crosses, in order.
    pub hops: Vec<Hop>,
}

/// A circuit's crossing of one switch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    /// The switch.
    pub switch: String,
    /// The port its cells arrive on.
    pub in_port: u32,
    /// Their VPI there.
    pub in_vpi: u8,
    /// Their VCI there.
    pub in_vci: u16,
    /// The port they leave by.
    pub out_port: u32,
    /// Their VPI there.
    pub out_vpi: u8,
    /// Their VCI there.
    pub out_vci: u16,
    /// Switched by a path entry (VPI only; the VCI passes untouched).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vp: bool,
}

/// One cross-connect: a channel entry, or (both VCIs `None`) a path entry.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Entry {
    /// Input port.
    pub in_port: u32,
    /// Input VPI.
    pub in_vpi: u8,
    /// Input VCI; `None`: a path entry, any VCI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_vci: Option<u16>,
    /// Output port.
    pub out_port: u32,
    /// Output VPI.
    pub out_vpi: u8,
    /// Output VCI; `None`: a path entry, the VCI kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_vci: Option<u16>,
}

/// A switch's table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchTable {
    /// The switch.
    pub switch: String,
    /// Its entries, channels then paths, each by input.
    pub entries: Vec<Entry>,
}

/// A host's circuits: the peer each VPI/VCI on its link leads to (both directions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostBindings {
    /// The host.
    pub host: String,
    /// Its switch.
    pub switch: String,
    /// Its port there.
    pub port: u32,
    /// The VCI that names it on its peers' links.
    pub vci: u16,
    /// Its peers.
    pub peers: Vec<Binding>,
}

/// One binding: address -> VPI/VCI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The peer host.
    pub host: String,
    /// Its address (its name when the database gives none).
    pub addr: String,
    /// VPI on this host's link.
    pub vpi: u8,
    /// VCI on this host's link.
    pub vci: u16,
}

/// What a plan holds, in numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Hosts in the database.
    pub hosts: usize,
    /// Switches in the database.
    pub switches: usize,
    /// Duplex circuits (the PVCs an operator enters once with a central manager).
    pub pvcs: usize,
    /// One-way circuits (twice `pvcs`).
    pub vcs: usize,
    /// Cross-connect entries over all switches (what an operator enters without one).
    pub entries: usize,
    /// Of which path entries.
    pub vp_entries: usize,
    /// Per switch, in database order.
    pub per_switch: Vec<SwitchCount>,
}

/// One switch's share.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchCount {
    /// The switch.
    pub switch: String,
    /// Channel entries.
    pub vc_entries: usize,
    /// Path entries.
    pub vp_entries: usize,
}

/// Labels per link of one duplex circuit, and the VP (if any) each trunk hop is inside.
struct Route {
    a: usize,
    b: usize,
    switches: Vec<usize>,
    trunks: Vec<usize>,
    /// One label per trunk hop.
    labels: Vec<Vc>,
    /// The virtual path each trunk hop is inside.
    in_vp: Vec<Option<usize>>,
}

/// Plans the circuits of `shape` over `db`.
pub fn plan(db: &HostDb, shape: &Shape) -> Result<Plan, VcError> {
    let r = db.resolve()?;
    let host_vci = host_vcis(db)?;
    let pairs = pairs_of(db, shape)?;
    let vp_paths = vp_paths(&r)?;
    check_vp_overlap(&r, &vp_paths)?;
    let mut trunk_used: Vec<BTreeSet<u16>> = vec![BTreeSet::new(); db.trunks.len()];
    let mut vp_used: Vec<BTreeSet<u16>> = vec![BTreeSet::new(); db.vps.len()];
    let mut routes = Vec::with_capacity(pairs.len());
    for &(a, b) in &pairs {
        let (sa, sb) = (r.host_switch[a], r.host_switch[b]);
        let (switches, trunks) = r.path(sa, sb).ok_or_else(|| VcError::Unreachable {
            from: db.hosts[a].name.clone(),
            to: db.hosts[b].name.clone(),
            from_switch: db.hosts[a].switch.clone(),
            to_switch: db.hosts[b].switch.clone(),
        })?;
        let in_vp = vp_segments(&switches, &vp_paths);
        let mut labels = Vec::with_capacity(trunks.len());
        let mut vp_label: HashMap<usize, u16> = HashMap::new();
        for (i, &k) in trunks.iter().enumerate() {
            let label = match in_vp[i] {
                Some(p) => {
                    let vci = match vp_label.get(&p) {
                        Some(&v) => v,
                        None => {
                            let v = lowest_free(&mut vp_used[p], || {
                                format!("vp {}-{}", db.vps[p].ends[0], db.vps[p].ends[1])
                            })?;
                            vp_label.insert(p, v);
                            v
                        }
                    };
                    Vc::new(db.vps[p].vpi, vci)
                }
                None => Vc::new(0, lowest_free(&mut trunk_used[k], || r.trunk_name(k))?),
            };
            labels.push(label);
        }
        routes.push(Route {
            a,
            b,
            switches,
            trunks,
            labels,
            in_vp,
        });
    }
    let mut vcs = Vec::with_capacity(2 * routes.len());
    for route in &routes {
        vcs.push(one_way(&r, &host_vci, route, false));
        vcs.push(one_way(&r, &host_vci, route, true));
    }
    check_conflicts(&r, &vcs)?;
    let tables = tables_of(&r, &vcs)?;
    let hosts = bindings(db, &host_vci, &routes);
    let counts = counts_of(db, &routes, &tables);
    Ok(Plan {
        shape: shape.name().to_string(),
        hub: match shape {
            Shape::Star(h) => Some(h.clone()),
            _ => None,
        },
        counts,
        vcs,
        tables,
        hosts,
    })
}

/// The VCI naming each host: its own, or the next free one from [`HOST_VCI_BASE`].
fn host_vcis(db: &HostDb) -> Result<Vec<u16>, VcError> {
    let given: HashSet<u16> = db.hosts.iter().filter_map(|h| h.vci).collect();
    let mut next = HOST_VCI_BASE;
    db.hosts
        .iter()
        .map(|h| match h.vci {
            Some(v) => Ok(v),
            None => {
                while given.contains(&next) {
                    next = next.checked_add(1).ok_or_else(|| VcError::Exhausted {
                        link: "the hosts' VCIs".into(),
                    })?;
                }
                let v = next;
                next = next.wrapping_add(1);
                if next == 0 {
                    return Err(VcError::Exhausted {
                        link: "the hosts' VCIs".into(),
                    });
                }
                Ok(v)
            }
        })
        .collect()
}

/// The duplex pairs of `shape` as host indices, in plan order.
fn pairs_of(db: &HostDb, shape: &Shape) -> Result<Vec<(usize, usize)>, VcError> {
    let n = db.hosts.len();
    let ix = |what: &str, name: &str| {
        db.host_index(name).ok_or_else(|| VcError::NoHost {
            what: what.to_string(),
            name: name.to_string(),
        })
    };
    let pairs: Vec<(usize, usize)> = match shape {
        Shape::Mesh => (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .collect(),
        Shape::Sites => {
            let site = |h: usize| db.hosts[h].site.as_deref().unwrap_or(&db.hosts[h].name);
            (0..n)
                .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
                .filter(|&(a, b)| site(a) != site(b))
                .collect()
        }
        Shape::Star(hub) => {
            let h = ix("the star's hub", hub)?;
            (0..n).filter(|&x| x != h).map(|x| (h, x)).collect()
        }
        Shape::Pairs(given) => {
            let list = if given.is_empty() { &db.pairs } else { given };
            if list.is_empty() {
                return Err(VcError::Shape(
                    "no pairs: give them (a-b,c-d) or as `pairs = [[\"a\", \"b\"]]` in the database".into(),
                ));
            }
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for [x, y] in list {
                let (a, b) = (ix("pairs", x)?, ix("pairs", y)?);
                if a == b {
                    return Err(VcError::Shape(format!(
                        "pair {x}-{y}: a host needs no circuit to itself"
                    )));
                }
                if !seen.insert((a.min(b), a.max(b))) {
                    return Err(VcError::Shape(format!(
                        "pair {x}-{y} is listed twice (circuits are duplex: a-b is b-a)"
                    )));
                }
                out.push((a, b));
            }
            out
        }
    };
    if pairs.is_empty() {
        return Err(VcError::Shape(
            "the plan has no circuits: a database needs two hosts or more".into(),
        ));
    }
    Ok(pairs)
}

/// A path through the switches: the switches in order, and the trunk from each to the next.
type SwitchPath = (Vec<usize>, Vec<usize>);

/// Each virtual path's switches and trunks.
fn vp_paths(r: &Resolved<'_>) -> Result<Vec<SwitchPath>, VcError> {
    r.vp_ends
        .iter()
        .enumerate()
        .map(|(k, &[u, w])| {
            r.path(u, w).ok_or_else(|| {
                VcError::Shape(format!(
                    "vp {k} ({}-{}): no trunks join its ends",
                    r.switch_name(u),
                    r.switch_name(w)
                ))
            })
        })
        .collect()
}

/// Two virtual paths with one VPI on one trunk would be switched as one.
fn check_vp_overlap(r: &Resolved<'_>, paths: &[SwitchPath]) -> Result<(), VcError> {
    let mut at: HashMap<(usize, u8), usize> = HashMap::new();
    let mut conflicts = Vec::new();
    for (p, (_, trunks)) in paths.iter().enumerate() {
        let vpi = r.db.vps[p].vpi;
        for &k in trunks {
            if let Some(q) = at.insert((k, vpi), p) {
                conflicts.push(Conflict {
                    link: r.trunk_name(k),
                    direction: "both".into(),
                    vc: Vc::new(vpi, 0),
                    circuits: [vp_name(r, q), vp_name(r, p)],
                });
            }
        }
    }
    if conflicts.is_empty() {
        Ok(())
    } else {
        Err(VcError::Conflicts(conflicts))
    }
}

fn vp_name(r: &Resolved<'_>, p: usize) -> String {
    let vp = &r.db.vps[p];
    format!("vp {}-{} (VPI {})", vp.ends[0], vp.ends[1], vp.vpi)
}

/// For each trunk hop of a circuit over `switches`, the virtual path it goes inside: a path
/// whose switches are a contiguous run of the circuit's, either way round. The first path
/// found wins where two would overlap.
fn vp_segments(switches: &[usize], paths: &[SwitchPath]) -> Vec<Option<usize>> {
    let hops = switches.len().saturating_sub(1);
    let mut in_vp = vec![None; hops];
    for (p, (vs, _)) in paths.iter().enumerate() {
        let len = vs.len();
        for start in 0..switches.len().saturating_sub(len - 1) {
            let run = &switches[start..start + len];
            let fits = run == vs.as_slice() || run.iter().rev().eq(vs.iter());
            if fits && in_vp[start..start + len - 1].iter().all(Option::is_none) {
                in_vp[start..start + len - 1].fill(Some(p));
            }
        }
    }
    in_vp
}

/// The lowest VCI from [`TRUNK_VCI_BASE`] not in `used`, now taken.
fn lowest_free(used: &mut BTreeSet<u16>, link: impl Fn() -> String) -> Result<u16, VcError> {
    // Allocation is in order, so the first gap is usually the end.
    let mut v = TRUNK_VCI_BASE;
    for &u in used.range(TRUNK_VCI_BASE..) {
        if u != v {
            break;
        }
        v = v
            .checked_add(1)
            .ok_or_else(|| VcError::Exhausted { link: link() })?;
    }
    used.insert(v);
    Ok(v)
}

/// One direction of a duplex circuit: `a` to `b`, or (`back`) `b` to `a`.
fn one_way(r: &Resolved<'_>, host_vci: &[u16], route: &Route, back: bool) -> PlannedVc {
    let db = r.db;
    let (from, to) = if back {
        (route.b, route.a)
    } else {
        (route.a, route.b)
    };
    let mut switches = route.switches.clone();
    let mut trunks = route.trunks.clone();
    let mut labels = route.labels.clone();
    let mut in_vp = route.in_vp.clone();
    if back {
        switches.reverse();
        trunks.reverse();
        labels.reverse();
        in_vp.reverse();
    }
    let first = Vc::new(0, host_vci[to]);
    let last = Vc::new(0, host_vci[from]);
    let n = switches.len();
    let hops = (0..n)
        .map(|i| {
            let s = switches[i];
            let (in_port, i_label) = if i == 0 {
                (db.hosts[from].port, first)
            } else {
                (r.trunk_port(trunks[i - 1], s), labels[i - 1])
            };
            let (out_port, o_label) = if i + 1 == n {
                (db.hosts[to].port, last)
            } else {
                (r.trunk_port(trunks[i], s), labels[i])
            };
            let vp = i > 0 && i + 1 < n && in_vp[i - 1].is_some() && in_vp[i - 1] == in_vp[i];
            Hop {
                switch: r.switch_name(s).to_string(),
                in_port,
                in_vpi: i_label.vpi,
                in_vci: i_label.vci,
                out_port,
                out_vpi: o_label.vpi,
                out_vci: o_label.vci,
                vp,
            }
        })
        .collect();
    PlannedVc {
        from: db.hosts[from].name.clone(),
        to: db.hosts[to].name.clone(),
        vpi: first.vpi,
        vci: first.vci,
        hops,
    }
}

/// Where each circuit's cells cross each link: (link, direction) with the label.
pub(super) fn link_labels(r: &Resolved<'_>, vc: &PlannedVc) -> Vec<(String, String, Vc)> {
    let mut out = Vec::with_capacity(vc.hops.len() + 1);
    let Some(first) = vc.hops.first() else {
        return out;
    };
    out.push((
        format!("host {}", vc.from),
        format!("{}->{}", vc.from, first.switch),
        Vc::new(first.in_vpi, first.in_vci),
    ));
    for (h, next) in vc.hops.iter().zip(vc.hops.iter().skip(1)) {
        let s = r.db.switches.iter().position(|x| x.name == h.switch);
        let link = s
            .and_then(|s| match r.ports[s].get(&h.out_port) {
                Some(super::db::PortUse::Trunk(k, _)) => Some(r.trunk_name(*k)),
                _ => None,
            })
            .unwrap_or_else(|| format!("{} port {}", h.switch, h.out_port));
        out.push((
            link,
            format!("{}->{}", h.switch, next.switch),
            Vc::new(h.out_vpi, h.out_vci),
        ));
    }
    if let Some(last) = vc.hops.last() {
        out.push((
            format!("host {}", vc.to),
            format!("{}->{}", last.switch, vc.to),
            Vc::new(last.out_vpi, last.out_vci),
        ));
    }
    out
}

/// Every label used twice on one link in one direction.
fn check_conflicts(r: &Resolved<'_>, vcs: &[PlannedVc]) -> Result<(), VcError> {
    let mut used: HashMap<(String, String, Vc), String> = HashMap::new();
    let mut conflicts = Vec::new();
    for vc in vcs {
        let name = format!("{}->{}", vc.from, vc.to);
        for (link, dir, label) in link_labels(r, vc) {
            if let Some(other) = used.get(&(link.clone(), dir.clone(), label)) {
                conflicts.push(Conflict {
                    link,
                    direction: dir,
                    vc: label,
                    circuits: [other.clone(), name.clone()],
                });
            } else {
                used.insert((link, dir, label), name.clone());
            }
        }
    }
    if conflicts.is_empty() {
        Ok(())
    } else {
        Err(VcError::Conflicts(conflicts))
    }
}

/// Every switch's entries, from the circuits' hops (a path entry once per path and direction).
fn tables_of(r: &Resolved<'_>, vcs: &[PlannedVc]) -> Result<Vec<SwitchTable>, VcError> {
    let mut tables: Vec<Table> = vec![Table::new(); r.db.switches.len()];
    let mut paths: Vec<HashSet<(u32, u8)>> = vec![HashSet::new(); r.db.switches.len()];
    let ix: HashMap<&str, usize> =
        r.db.switches
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
    for vc in vcs {
        for h in &vc.hops {
            let s = ix[h.switch.as_str()];
            let entry = if h.vp {
                if !paths[s].insert((h.in_port, h.in_vpi)) {
                    continue;
                }
                Entry {
                    in_port: h.in_port,
                    in_vpi: h.in_vpi,
                    in_vci: None,
                    out_port: h.out_port,
                    out_vpi: h.out_vpi,
                    out_vci: None,
                }
            } else {
                Entry {
                    in_port: h.in_port,
                    in_vpi: h.in_vpi,
                    in_vci: Some(h.in_vci),
                    out_port: h.out_port,
                    out_vpi: h.out_vpi,
                    out_vci: Some(h.out_vci),
                }
            };
            tables[s]
                .insert(&entry)
                .map_err(|e| VcError::Shape(format!("switch {}: {e} (a planner bug)", h.switch)))?;
        }
    }
    Ok(tables
        .iter()
        .enumerate()
        .map(|(s, t)| SwitchTable {
            switch: r.switch_name(s).to_string(),
            entries: t.entries(),
        })
        .collect())
}

fn bindings(db: &HostDb, host_vci: &[u16], routes: &[Route]) -> Vec<HostBindings> {
    let mut peers: Vec<Vec<Binding>> = vec![Vec::new(); db.hosts.len()];
    let binding = |to: usize| Binding {
        host: db.hosts[to].name.clone(),
        addr: db.hosts[to]
            .addr
            .clone()
            .unwrap_or_else(|| db.hosts[to].name.clone()),
        vpi: 0,
        vci: host_vci[to],
    };
    for route in routes {
        peers[route.a].push(binding(route.b));
        peers[route.b].push(binding(route.a));
    }
    db.hosts
        .iter()
        .zip(peers)
        .enumerate()
        .map(|(i, (h, peers))| HostBindings {
            host: h.name.clone(),
            switch: h.switch.clone(),
            port: h.port,
            vci: host_vci[i],
            peers,
        })
        .collect()
}

fn counts_of(db: &HostDb, routes: &[Route], tables: &[SwitchTable]) -> Counts {
    let per_switch: Vec<SwitchCount> = tables
        .iter()
        .map(|t| {
            let vp = t.entries.iter().filter(|e| e.in_vci.is_none()).count();
            SwitchCount {
                switch: t.switch.clone(),
                vc_entries: t.entries.len() - vp,
                vp_entries: vp,
            }
        })
        .collect();
    Counts {
        hosts: db.hosts.len(),
        switches: db.switches.len(),
        pvcs: routes.len(),
        vcs: 2 * routes.len(),
        entries: per_switch.iter().map(|s| s.vc_entries + s.vp_entries).sum(),
        vp_entries: per_switch.iter().map(|s| s.vp_entries).sum(),
        per_switch,
    }
}

impl Plan {
    /// The table of switch `name` as the fabric looks it up.
    pub fn table(&self, name: &str) -> Option<Result<Table, super::TableError>> {
        self.tables
            .iter()
            .find(|t| t.switch == name)
            .map(|t| Table::from_entries(&t.entries))
    }

    /// Host `name`'s bindings.
    pub fn bindings(&self, name: &str) -> Option<&HostBindings> {
        self.hosts.iter().find(|h| h.host == name)
    }
}
