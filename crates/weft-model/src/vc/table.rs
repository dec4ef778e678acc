//! A switch's cross-connect table as the fabric looks it up: (in port, VPI/VCI) -> (out port,
//! VPI/VCI) for switched channels, (in port, VPI) -> (out port, VPI) for switched paths.

use std::collections::HashMap;

use super::Vc;
use super::plan::Entry;

/// An entry that cannot go into a table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// A second entry for an input already in the table.
    #[error("two entries for port {port} VPI/VCI {vc}")]
    Duplicate {
        /// The input port.
        port: u32,
        /// Its label (VCI 0 stands for a whole path).
        vc: Vc,
    },
    /// An entry that is half a path and half a channel.
    #[error("port {port} VPI {vpi}: an entry gives both VCIs or neither")]
    Mixed {
        /// The input port.
        port: u32,
        /// The VPI.
        vpi: u8,
    },
    /// A contract on a port the switch does not have.
    #[error("a contract on port {port}, which is not one of the switch's")]
    Port {
        /// The port.
        port: u32,
    },
}

/// One switch's cross-connects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    vc: HashMap<(u32, Vc), (u32, Vc)>,
    vp: HashMap<(u32, u8), (u32, u8)>,
}

impl Table {
    /// An empty table (every cell is on an unknown circuit).
    pub fn new() -> Self {
        Table::default()
    }

    /// The table of `entries`.
    pub fn from_entries(entries: &[Entry]) -> Result<Self, TableError> {
        let mut t = Table::new();
        for e in entries {
            t.insert(e)?;
        }
        Ok(t)
    }

    /// Adds one entry.
    pub fn insert(&mut self, e: &Entry) -> Result<(), TableError> {
        match (e.in_vci, e.out_vci) {
            (Some(i), Some(o)) => {
                let key = (e.in_port, Vc::new(e.in_vpi, i));
                if self.vc.contains_key(&key) {
                    return Err(TableError::Duplicate {
                        port: key.0,
                        vc: key.1,
                    });
                }
                self.vc.insert(key, (e.out_port, Vc::new(e.out_vpi, o)));
            }
            (None, None) => {
                let key = (e.in_port, e.in_vpi);
                if self.vp.contains_key(&key) {
                    return Err(TableError::Duplicate {
                        port: key.0,
                        vc: Vc::new(key.1, 0),
                    });
                }
                self.vp.insert(key, (e.out_port, e.out_vpi));
            }
            _ => {
                return Err(TableError::Mixed {
                    port: e.in_port,
                    vpi: e.in_vpi,
                });
            }
        }
        Ok(())
    }

    /// Removes every entry (a switch that lost its manager).
    pub fn clear(&mut self) {
        self.vc.clear();
        self.vp.clear();
    }

    /// Entries, channels and paths together.
    pub fn len(&self) -> usize {
        self.vc.len() + self.vp.len()
    }

    /// True with no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where a cell arriving on `port` with label `vc` goes: a channel entry first, else the
    /// path entry of its VPI (its VCI untouched); `None` for an unknown circuit.
    #[inline]
    pub fn lookup(&self, port: u32, vc: Vc) -> Option<(u32, Vc)> {
        if let Some(&out) = self.vc.get(&(port, vc)) {
            return Some(out);
        }
        self.vp
            .get(&(port, vc.vpi))
            .map(|&(o, vpi)| (o, Vc::new(vpi, vc.vci)))
    }

    /// The entries, channels then paths, each sorted by input.
    pub fn entries(&self) -> Vec<Entry> {
        let mut vcs: Vec<Entry> = self
            .vc
            .iter()
            .map(|(&(p, i), &(q, o))| Entry {
                in_port: p,
                in_vpi: i.vpi,
                in_vci: Some(i.vci),
                out_port: q,
                out_vpi: o.vpi,
                out_vci: Some(o.vci),
            })
            .collect();
        let mut vps: Vec<Entry> = self
            .vp
            .iter()
            .map(|(&(p, i), &(q, o))| Entry {
                in_port: p,
                in_vpi: i,
                in_vci: None,
                out_port: q,
                out_vpi: o,
                out_vci: None,
            })
            .collect();
        vcs.sort();
        vps.sort();
        vcs.extend(vps);
        vcs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(p: u32, i: (u8, Option<u16>), q: u32, o: (u8, Option<u16>)) -> Entry {
        Entry {
            in_port: p,
            in_vpi: i.0,
            in_vci: i.1,
            out_port: q,
            out_vpi: o.0,
            out_vci: o.1,
        }
    }

    #[test]
    fn channels_before_paths() {
        let t = Table::from_entries(&[
            e(1, (0, Some(100)), 2, (0, Some(200))),
            e(1, (5, None), 3, (7, None)),
        ])
        .unwrap();
        assert_eq!(t.lookup(1, Vc::new(0, 100)), Some((2, Vc::new(0, 200))));
        assert_eq!(t.lookup(1, Vc::new(5, 42)), Some((3, Vc::new(7, 42))));
        assert_eq!(t.lookup(1, Vc::new(0, 101)), None);
        assert_eq!(t.lookup(2, Vc::new(5, 42)), None);
        assert_eq!(t.entries().len(), 2);
        let mut dup = t.clone();
        assert!(dup.insert(&e(1, (0, Some(100)), 4, (0, Some(1)))).is_err());
        assert!(dup.insert(&e(1, (0, Some(100)), 4, (0, None))).is_err());
    }
}
