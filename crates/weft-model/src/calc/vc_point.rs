//! One point of a scenario's `vc` workload: the plan of its hosts, checked, and its counts, as
//! the model engine reports them ([`crate::scenario::Metric::PVCS`] and the rest).

use serde::Serialize;

use crate::scenario::VcWorkload;
use crate::vc::{HostDb, Shape, VcError, degree, plan};

/// What a `vc` workload's point plans.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VcPoint {
    /// Hosts planned among.
    pub hosts: usize,
    /// Duplex circuits (PVCs).
    pub pvcs: usize,
    /// One-way circuits.
    pub vcs: usize,
    /// Cross-connect entries over all switches.
    pub entries: usize,
    /// Entries of the busiest switch.
    pub max_switch_entries: usize,
    /// Whether every circuit delivers end to end by the tables with no label collision
    /// ([`crate::vc::Plan::verify`]).
    pub verified: bool,
    /// Whether every host is reached on one VCI from every host that reaches it (EBN's
    /// VCI 138 for `methuselah`).
    pub vci_per_destination: bool,
    /// The degree of the polynomial the PVCs follow over the first 2, 3, ... `hosts` hosts with
    /// the same shape (`None`: too few hosts to tell, or a hub outside the first ones).
    pub growth_degree: Option<usize>,
}

/// The database a point plans from: `w`'s sites (and hub), then its first `hosts`.
fn hosts_of(db: &HostDb, w: &VcWorkload, n: Option<usize>) -> HostDb {
    let hub = match &w.shape {
        Shape::Star(h) => Some(h.as_str()),
        _ => None,
    };
    let at = db.at_sites(&w.sites, hub);
    match n {
        Some(n) => at.first_hosts(n),
        None => at,
    }
}

/// Plans the point `w` of a scenario whose `[vc]` database is `db`.
pub fn plan_point(db: &HostDb, w: &VcWorkload) -> Result<VcPoint, VcError> {
    let mine = hosts_of(db, w, w.hosts.map(|n| n as usize));
    let p = plan(&mine, &w.shape)?;
    let verified = p.verify(&mine).is_ok();
    let mut vci_at: std::collections::HashMap<&str, std::collections::BTreeSet<u16>> =
        Default::default();
    for vc in &p.vcs {
        vci_at.entry(vc.to.as_str()).or_default().insert(vc.vci);
    }
    let mut sizes = Vec::new();
    for k in 2..=mine.hosts.len() {
        match plan(&hosts_of(db, w, Some(k)), &w.shape) {
            Ok(q) => sizes.push(q.counts.pvcs),
            // A star whose hub is not yet among the first k: start from the first that has it.
            Err(_) if sizes.is_empty() => {}
            Err(e) => return Err(e),
        }
    }
    let max_switch_entries = p
        .counts
        .per_switch
        .iter()
        .map(|s| s.vc_entries + s.vp_entries)
        .max()
        .unwrap_or(0);
    Ok(VcPoint {
        hosts: mine.hosts.len(),
        pvcs: p.counts.pvcs,
        vcs: p.counts.vcs,
        entries: p.counts.entries,
        max_switch_entries,
        verified,
        vci_per_destination: vci_at.values().all(|v| v.len() == 1),
        growth_degree: degree(&sizes),
    })
}
