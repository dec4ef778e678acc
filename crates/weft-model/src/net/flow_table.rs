//! An output queue's counters per flow, kept only for the flows it has seen.
//!
//! A flow is numbered by its sending host, so a dense list indexed by flow number is as long as
//! the highest sender a queue has seen: on a k = 32 fat-tree (8192 hosts, 1280 switches of 32
//! ports) the queues' lists alone came to 49,152 x 8192 x 48 bytes, 19 GB, and the run was killed.
//! A queue sees few flows (a host's own, or those routed through one port), so [`FlowTable`]
//! keeps only those, in the order it first saw them, and finds one through a hash index of flow
//! numbers (`FxHashMap`, as the other per-flow tables of the core): one probe, mostly, where a
//! binary search over a sprayed fabric's hundreds of flows per queue took nine, each a cache miss
//! (the lookup was a fifth of a 432-host simulation's time). It still serialises as the dense list
//! (zeros for flows it never saw, up to the highest it saw), so every result document is the same
//! as before.

use rustc_hash::FxHashMap;
use serde::ser::{Serialize, SerializeSeq, Serializer};

use super::egress::FlowStats;

/// Per-flow counters of one output queue, by flow (sending host) number.
#[derive(Clone, Debug, Default)]
pub struct FlowTable {
    /// The flows seen, each once, in the order they were first seen.
    seen: Vec<(u32, FlowStats)>,
    /// Each flow's place in `seen`.
    index: FxHashMap<u32, u32>,
}

impl FlowTable {
    /// The counters of flow `f`, if the queue has seen it.
    pub fn get(&self, f: usize) -> Option<&FlowStats> {
        let f = u32::try_from(f).ok()?;
        self.index.get(&f).map(|&i| &self.seen[i as usize].1)
    }

    /// The counters of flow `f`, made zero the first time it is seen.
    #[inline]
    pub(super) fn entry(&mut self, f: u32) -> &mut FlowStats {
        let seen = &mut self.seen;
        let i = *self.index.entry(f).or_insert_with(|| {
            seen.push((f, FlowStats::default()));
            (seen.len() - 1) as u32
        });
        &mut self.seen[i as usize].1
    }

    /// One more than the highest flow number seen (the length of the dense list).
    pub fn dense_len(&self) -> usize {
        self.seen
            .iter()
            .map(|&(n, _)| n as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// The flows seen with their counters, by flow number.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &FlowStats)> {
        let mut v: Vec<(u32, &FlowStats)> = self.seen.iter().map(|(n, s)| (*n, s)).collect();
        v.sort_unstable_by_key(|&(n, _)| n);
        v.into_iter()
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

    #[test]
    fn finds_every_flow_of_many_seen_in_any_order() {
        let mut t = FlowTable::default();
        // Many flows, past the index's first growths, in a scrambled order.
        let flows: Vec<u32> = (0..500u32).map(|i| (i * 7919) % 1000).collect();
        for (k, &f) in flows.iter().enumerate() {
            t.entry(f).frames_in += u64::from(f) + 1;
            t.entry(f).frames_out += k as u64;
        }
        assert_eq!(t.seen.len(), 500);
        for (k, &f) in flows.iter().enumerate() {
            let s = t.get(f as usize).expect("seen");
            assert_eq!((s.frames_in, s.frames_out), (u64::from(f) + 1, k as u64));
        }
        assert_eq!(t.get(1), None, "flow 1 (i = 679) was never seen");
        let order: Vec<u32> = t.iter().map(|(n, _)| n).collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "iterated by flow number"
        );
        assert_eq!(t.dense_len(), *flows.iter().max().unwrap() as usize + 1);
    }
}
