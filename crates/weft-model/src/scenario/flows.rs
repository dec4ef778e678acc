//! Who sends to whom in a `tput` workload of several flows (`from`, `to`, `traffic`), for every
//! engine that runs them: the simulator on host indices, the emulator on host names.

use super::Workload;
use crate::app::traffic::{Traffic, derangement};

impl Workload {
    /// The (sender, receiver) pairs of the workload's flows, given its `from` and `to` hosts in
    /// any form (names, indices): a permutation of `from` (a derangement drawn from `seed`, the
    /// scenario's), `pairs` from and to side by side, or every `from` to every `to` but itself.
    pub fn flow_pairs<T: Copy + PartialEq>(&self, from: &[T], to: &[T], seed: u64) -> Vec<(T, T)> {
        match self.traffic {
            Some(Traffic::Permutation) => {
                let p = derangement(from.len(), seed);
                from.iter().zip(&p).map(|(&f, &j)| (f, from[j])).collect()
            }
            Some(Traffic::Pairs) => from.iter().copied().zip(to.iter().copied()).collect(),
            _ => from
                .iter()
                .flat_map(|&f| to.iter().map(move |&t| (f, t)))
                .filter(|(f, t)| f != t)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// The shipped permutation's first workload, its pattern `traffic`.
    fn with(traffic: Option<Traffic>) -> Workload {
        let text = include_str!("../../../../scenarios/fabric-permutation.toml");
        let s =
            Scenario::parse(text, "fabric-permutation.toml").expect("a shipped scenario parses");
        let mut w = s.workloads[0].clone();
        w.traffic = traffic;
        w
    }

    #[test]
    fn flow_pairs_permute_pair_or_cross_the_hosts() {
        let hosts = ["a", "b", "c", "d"];
        let p = with(Some(Traffic::Permutation)).flow_pairs(&hosts, &[], 1);
        assert_eq!(p.len(), 4);
        assert!(p.iter().all(|(f, t)| f != t), "{p:?}");
        let mut to: Vec<&str> = p.iter().map(|x| x.1).collect();
        to.sort_unstable();
        assert_eq!(to, hosts, "each host receives once");
        // The same pairs for names and for indices.
        let idx = with(Some(Traffic::Permutation)).flow_pairs(&[0, 1, 2, 3], &[], 1);
        assert!(
            idx.iter()
                .zip(&p)
                .all(|(i, n)| hosts[i.0] == n.0 && hosts[i.1] == n.1)
        );
        let side = with(Some(Traffic::Pairs)).flow_pairs(&["a", "b"], &["c", "d"], 1);
        assert_eq!(side, [("a", "c"), ("b", "d")]);
        let incast = with(Some(Traffic::Incast)).flow_pairs(&hosts, &["a"], 1);
        assert_eq!(incast, [("b", "a"), ("c", "a"), ("d", "a")]);
    }
}
