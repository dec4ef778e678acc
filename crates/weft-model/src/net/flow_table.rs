//! An output queue's counters per flow, kept only for the flows it has seen.
//!
//! A flow is numbered by its sending host, so a dense list indexed by flow number is as long as
//! the highest sender a queue has seen: on a k = 32 fat-tree (8192 hosts, 1280 switches of 32
//! ports) the queues' lists alone came to 49,152 x 8192 x 48 bytes, 19 GB, and the run was killed.
//! A queue sees few flows (a host's own, or those routed through one port), so [`FlowTable`]
//! keeps them sorted by flow number in a short vector and finds one by binary search. It still
//! serialises as the dense list (zeros for flows it never saw, up to the highest it saw), so every
//! result document is the same as before.

use serde::ser::{Serialize, SerializeSeq, Serializer};

use super::egress::FlowStats;

/// Per-flow counters of one output queue, by flow (sending host) number.
#[derive(Clone, Debug, Default)]
pub struct FlowTable {
    /// The flows seen, sorted by flow number, each once.
    seen: Vec<(u32, FlowStats)>,
}

impl FlowTable {
    /// The counters of flow `f`, if the queue has seen it.
    pub fn get(&self, f: usize) -> Option<&FlowStats> {
        let f = u32::try_from(f).ok()?;
        self.seen
            .binary_search_by_key(&f, |&(n, _)| n)
            .ok()
            .map(|i| &self.seen[i].1)
    }

    /// The counters of flow `f`, zeroed when first seen.
    #[inline]
    pub(super) fn entry(&mut self, f: u32) -> &mut FlowStats {
        let i = match self.seen.binary_search_by_key(&f, |&(n, _)| n) {
            Ok(i) => i,
            Err(i) => {
                self.seen.insert(i, (f, FlowStats::default()));
                i
            }
        };
        &mut self.seen[i].1
    }

    /// One past the highest flow number seen (the length of the dense list), 0 when none.
    pub fn dense_len(&self) -> usize {
        self.seen.last().map_or(0, |&(n, _)| n as usize + 1)
    }

    /// The flows seen, with their numbers, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &FlowStats)> {
        self.seen.iter().map(|(n, s)| (*n, s))
    }
}

impl Serialize for FlowTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let zero = FlowStats::default();
        let mut seq = s.serialize_seq(Some(self.dense_len()))?;
        let mut next = 0u32;
        for (n, st) in self.iter() {
            for _ in next..n {
                seq.serialize_element(&zero)?;
            }
            seq.serialize_element(st)?;
            next = n + 1;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_flows_seen_and_serialises_the_dense_list() {
        let mut t = FlowTable::default();
        t.entry(3).frames_in += 2;
        t.entry(0).frames_out += 1;
        t.entry(3).frames_in += 1;
        assert_eq!(t.seen.len(), 2, "a flow never seen takes no room");
        assert_eq!(t.get(3).map(|f| f.frames_in), Some(3));
        assert_eq!(t.get(1), None);
        assert_eq!(t.dense_len(), 4);
        let dense = vec![
            FlowStats {
                frames_out: 1,
                ..FlowStats::default()
            },
            FlowStats::default(),
            FlowStats::default(),
            FlowStats {
                frames_in: 3,
                ..FlowStats::default()
            },
        ];
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            serde_json::to_string(&dense).unwrap()
        );
    }

    #[test]
    fn a_flow_far_up_costs_one_entry() {
        let mut t = FlowTable::default();
        t.entry(8191).frames_in += 1;
        assert_eq!(t.seen.len(), 1);
        assert_eq!(t.dense_len(), 8192);
    }
}
