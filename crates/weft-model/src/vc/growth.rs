//! How a full mesh grows with the hosts it joins: for n = 2..N, the circuits and cross-connect
//! entries of the mesh of a database's first n hosts (Sandia: "the number of PVCs required to
//! fully interconnect n hosts is O(n^2)").

use serde::Serialize;

use super::{HostDb, Shape, VcError, plan};

/// One row of the growth table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GrowthRow {
    /// Hosts in the mesh.
    pub n: usize,
    /// Duplex circuits: n(n-1)/2.
    pub pvcs: usize,
    /// One-way circuits: n(n-1).
    pub vcs: usize,
    /// Cross-connect entries over all switches.
    pub entries: usize,
    /// Entries of the busiest switch.
    pub max_switch_entries: usize,
    /// Entries per switch, in database order.
    pub per_switch: Vec<usize>,
}

/// The growth table of `db`'s mesh for n = 2 up to its host count (or `max`, if smaller).
pub fn growth(db: &HostDb, max: Option<usize>) -> Result<Vec<GrowthRow>, VcError> {
    let top = max.map_or(db.hosts.len(), |m| m.min(db.hosts.len()));
    (2..=top)
        .map(|n| {
            let p = plan(&db.first_hosts(n), &Shape::Mesh)?;
            let per_switch: Vec<usize> = p
                .counts
                .per_switch
                .iter()
                .map(|s| s.vc_entries + s.vp_entries)
                .collect();
            Ok(GrowthRow {
                n,
                pvcs: p.counts.pvcs,
                vcs: p.counts.vcs,
                entries: p.counts.entries,
                max_switch_entries: per_switch.iter().copied().max().unwrap_or(0),
                per_switch,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mesh_grows_as_n_squared() {
        let rows = growth(&HostDb::line(12, 3), None).unwrap();
        assert_eq!(rows.len(), 11);
        for r in &rows {
            assert_eq!(r.vcs, r.n * (r.n - 1));
            assert_eq!(r.pvcs, r.n * (r.n - 1) / 2);
            assert!(r.entries >= r.vcs);
        }
        // Twelve hosts on three switches: 66 PVCs, 132 one-way circuits; a circuit between
        // hosts on s1 and s3 crosses three switches.
        let last = rows.last().unwrap();
        assert_eq!((last.n, last.pvcs, last.vcs), (12, 66, 132));
        // Hosts 4 per switch: 12 on-switch circuits each, 32 s1-s2, 32 s2-s3, 32 s1-s3 (x3).
        assert_eq!(last.entries, 3 * 12 + 32 * 2 + 32 * 2 + 32 * 3);
    }
}
