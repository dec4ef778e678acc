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

/// The degree of the polynomial through `counts` taken at consecutive n (Sandia's "O(n^2)" is
/// degree 2): the smallest d whose (d+1)-th differences are all zero. `None` when there are
/// too few values to tell (a degree d needs d + 2 of them).
pub fn degree(counts: &[usize]) -> Option<usize> {
    let mut row: Vec<i128> = counts.iter().map(|&c| c as i128).collect();
    for d in 0.. {
        if row.len() < 2 {
            return None;
        }
        let next: Vec<i128> = row.windows(2).map(|w| w[1] - w[0]).collect();
        if next.iter().all(|&x| x == 0) {
            return Some(d);
        }
        row = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degree_of_counts() {
        let mesh: Vec<usize> = (2..=12).map(|n| n * (n - 1) / 2).collect();
        assert_eq!(degree(&mesh), Some(2));
        assert_eq!(degree(&[1, 2, 3, 4]), Some(1));
        assert_eq!(degree(&[5, 5]), Some(0));
        // Three values cannot tell degree 2 from more.
        assert_eq!(degree(&[1, 3, 6]), None);
        assert_eq!(degree(&[]), None);
        let cubes: Vec<usize> = (0..8).map(|n| n * n * n).collect();
        assert_eq!(degree(&cubes), Some(3));
    }

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
