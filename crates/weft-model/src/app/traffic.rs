//! Datacenter traffic patterns over bulk flows ([`super::bulk`]): who sends to whom in a
//! permutation (every host sends to one other and receives from one, a seeded derangement) and
//! in an incast (n senders to one receiver, all starting together), and the results engineers
//! read from them: flow completion time percentiles, slowdown against the ideal, goodput per
//! flow (mean, min, Jain's fairness index).

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::quantile::nearest_rank;
use crate::fabric::Rng;

/// The pattern of a `tput` workload's flows (`traffic = ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Traffic {
    /// Every `from` host to the host a seeded derangement gives it (`to` is ignored).
    Permutation,
    /// Every `from` host to the one `to` host, all starting at once.
    Incast,
    /// Each `from` host to the `to` host in the same place of its list (ttcp sessions run
    /// side by side between given pairs), all starting at once.
    Pairs,
}

/// A permutation of `0..n` with no fixed point (every host sends to another), drawn from
/// `seed`: a uniform shuffle, then each fixed point swapped with its neighbour. `n` < 2 gives
/// no pairs.
pub fn derangement(n: usize, seed: u64) -> Vec<usize> {
    if n < 2 {
        return Vec::new();
    }
    let mut rng = Rng::for_stream(seed, 0x9e7);
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        p.swap(i, j);
    }
    for i in 0..n {
        if p[i] == i {
            let j = (i + 1) % n;
            p.swap(i, j);
        }
    }
    p
}

/// Jain's fairness index of `x`: (Σx)² / (n Σx²), 1 when all are equal, 1/n when one has all.
pub fn jain(x: &[f64]) -> f64 {
    let (sum, sq) = x.iter().fold((0.0, 0.0), |(s, q), v| (s + v, q + v * v));
    if sq > 0.0 {
        sum * sum / (x.len() as f64 * sq)
    } else {
        1.0
    }
}

/// The metrics of completed flows, each `(bytes, fct_ns)`, beside `ideal_ns`, the completion
/// time of one flow alone on the fabric (0: not known, and no ideal or slowdown is reported): `fct_p50_us`, `fct_p99_us`, `fct_max_us` (the last
/// flow), `slowdown_p50`, `slowdown_p99` (FCT over the ideal), `ideal_fct_us`,
/// `goodput_mean_mbps`, `goodput_min_mbps` and `goodput_jain` (each flow's bytes over its FCT)
/// and `flows_completed`.
pub fn fct_metrics(flows: &[(u64, u64)], ideal_ns: f64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("flows_completed".into(), json!(flows.len()));
    if ideal_ns > 0.0 {
        m.insert("ideal_fct_us".into(), json!(ideal_ns / 1e3));
    }
    if flows.is_empty() {
        return m;
    }
    let mut fct: Vec<f64> = flows.iter().map(|&(_, t)| t as f64).collect();
    fct.sort_by(f64::total_cmp);
    let us = |q: f64| nearest_rank(&fct, q).map(|x| x / 1e3);
    m.insert("fct_p50_us".into(), json!(us(0.5)));
    m.insert("fct_p99_us".into(), json!(us(0.99)));
    m.insert("fct_max_us".into(), json!(us(1.0)));
    if ideal_ns > 0.0 {
        m.insert(
            "slowdown_p50".into(),
            json!(us(0.5).map(|x| x * 1e3 / ideal_ns)),
        );
        m.insert(
            "slowdown_p99".into(),
            json!(us(0.99).map(|x| x * 1e3 / ideal_ns)),
        );
    }
    let goodput: Vec<f64> = flows
        .iter()
        .map(|&(b, t)| b as f64 * 8.0 / (t.max(1) as f64 / 1e9) / 1e6)
        .collect();
    let mean = goodput.iter().sum::<f64>() / goodput.len() as f64;
    let min = goodput.iter().copied().fold(f64::INFINITY, f64::min);
    m.insert("goodput_mean_mbps".into(), json!(mean));
    m.insert("goodput_min_mbps".into(), json!(min));
    m.insert("goodput_jain".into(), json!(jain(&goodput)));
    m
}

/// The metrics of sized flows all started together at 0, each `(bytes, fct_ns)` of those that
/// completed, beside `ideal_ns` ([`fct_metrics`]), and the aggregate payload rate over the last
/// completion ([`crate::app::bulk::goodput_metrics`]; absent if none completed). Both engines
/// report a run of sized TCP flows so.
pub fn sized_flow_metrics(flows: &[(u64, u64)], ideal_ns: f64) -> Map<String, Value> {
    let mut m = Map::new();
    let last = flows.iter().map(|f| f.1).max().unwrap_or(0);
    if last > 0 {
        let bits = flows.iter().map(|f| f.0).sum::<u64>() as f64 * 8.0;
        m.extend(crate::app::bulk::goodput_metrics(
            bits / (last as f64 / 1e9),
        ));
    }
    m.extend(fct_metrics(flows, ideal_ns));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derangement_is_a_permutation_without_fixed_points() {
        for n in [2, 3, 16, 432] {
            for seed in 0..5 {
                let p = derangement(n, seed);
                let mut seen = vec![false; n];
                for (i, &j) in p.iter().enumerate() {
                    assert_ne!(i, j, "n {n} seed {seed}");
                    assert!(!seen[j]);
                    seen[j] = true;
                }
            }
        }
        assert_ne!(derangement(16, 1), derangement(16, 2));
        assert!(derangement(1, 1).is_empty());
    }

    #[test]
    fn fct_metrics_give_percentiles_slowdown_and_fairness() {
        // Four 1 MB flows: 1, 2, 3 and 4 ms against an ideal of 1 ms.
        let flows: Vec<(u64, u64)> = (1..=4).map(|k| (1_000_000, k * 1_000_000)).collect();
        let m = fct_metrics(&flows, 1e6);
        assert_eq!(m["fct_p50_us"], json!(2000.0));
        assert_eq!(m["fct_max_us"], json!(4000.0));
        assert_eq!(m["slowdown_p99"], json!(4.0));
        assert_eq!(m["goodput_min_mbps"], json!(2000.0));
        // Goodputs 8000, 4000, 2667, 2000 Mbit/s.
        let j = m["goodput_jain"].as_f64().unwrap();
        assert!((j - 0.7622).abs() < 1e-3, "{j}");
        assert_eq!(jain(&[5.0, 5.0]), 1.0);
        // Started together: 4 MB over the last flow's 4 ms, 8000 Mbit/s in all.
        let all = sized_flow_metrics(&flows, 1e6);
        assert_eq!(all[crate::app::bulk::keys::GOODPUT_MBPS], json!(8000.0));
        assert_eq!(all["fct_max_us"], m["fct_max_us"]);
        assert!(
            sized_flow_metrics(&[], 1e6)
                .get(crate::app::bulk::keys::GOODPUT_MBPS)
                .is_none()
        );
        assert_eq!(jain(&[1.0, 0.0]), 0.5);
    }
}
