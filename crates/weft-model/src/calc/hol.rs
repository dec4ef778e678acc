//! Head-of-line blocking in closed form.
//!
//! - [`gigaswitch_efficiency`]: the GIGAswitch study's (003) one-slot model, M inputs each sending
//!   one packet to one of N outputs uniformly at random, E = (N/M)(1 - (1 - 1/N)^M): the fraction
//!   of attempts that get through when each output serves one of the packets aimed at it. It
//!   ignores that a blocked packet stays at the head of its queue, so it is an upper bound for a
//!   FIFO input-queued switch.
//! - [`saturation_throughput`]: the exact saturation throughput of an N x N input-queued FIFO
//!   switch under uniform traffic (Karol, Hluchyj & Morgan 1987), from the Markov chain of the
//!   head-of-line occupancy. The chain's state is how many head-of-line packets each output has,
//!   sorted (outputs are interchangeable), so there are p(N) states (22 for N = 8).
//! - [`SATURATION_LIMIT`]: 2 - sqrt(2), the N -> infinity limit.

use serde::Serialize;

/// Saturation throughput of an input-queued FIFO switch as N grows without bound: 2 - sqrt(2).
pub const SATURATION_LIMIT: f64 = 2.0 - std::f64::consts::SQRT_2;

/// Largest N for which [`saturation_throughput`] solves the chain (the work grows as C(2N-1, N)).
/// [`fifo_saturation`] takes M inputs and N outputs separately.
pub const EXACT_MAX_PORTS: u32 = 10;

/// The GIGAswitch model's efficiency for `m` inputs contending for `n` outputs, 0..=1.
/// Zero inputs or outputs give 0.
pub fn gigaswitch_efficiency(n: u32, m: u32) -> f64 {
    if n == 0 || m == 0 {
        return 0.0;
    }
    let (n, m) = (n as f64, m as f64);
    (n / m) * (1.0 - (1.0 - 1.0 / n).powf(m))
}

/// One row of the GIGAswitch table: efficiency and the rate it gives of a port's `peak` rate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HolRow {
    /// Outputs.
    pub outputs: u32,
    /// Contending inputs.
    pub inputs: u32,
    /// E = (N/M)(1-(1-1/N)^M).
    pub efficiency: f64,
    /// E times the peak rate, bits/s.
    pub rate_bps: f64,
    /// Exact FIFO saturation throughput per input (the Markov chain), if small enough to solve.
    pub fifo_exact: Option<f64>,
}

/// The GIGAswitch table for `n` outputs and each input count in `inputs`, at `peak_bps`.
pub fn gigaswitch_table(n: u32, inputs: &[u32], peak_bps: f64) -> Vec<HolRow> {
    inputs
        .iter()
        .map(|&m| {
            let e = gigaswitch_efficiency(n, m);
            HolRow {
                outputs: n,
                inputs: m,
                efficiency: e,
                rate_bps: e * peak_bps,
                fifo_exact: fifo_saturation(m, n),
            }
        })
        .collect()
}

/// Exact saturation throughput per port of an `n` x `n` input-queued FIFO switch with uniform
/// destinations and random contention, for 1 <= n <= [`EXACT_MAX_PORTS`]; `None` otherwise.
pub fn saturation_throughput(n: u32) -> Option<f64> {
    if n > EXACT_MAX_PORTS {
        return None;
    }
    fifo_saturation(n, n)
}

/// Exact saturation throughput per input of `m` saturated FIFO inputs sending uniformly to `n`
/// outputs (random contention, one packet per output per slot): the fraction of slots in which
/// an input sends. `None` if m or n is 0 or the chain is too large to solve here (more than
/// 200 000 arrival patterns per state, or five million state-pattern pairs).
pub fn fifo_saturation(m: u32, n: u32) -> Option<f64> {
    if m == 0 || n == 0 || m > 255 || compositions(m as u64, n as u64)? > 200_000 {
        return None;
    }
    let (m, n) = (m as usize, n as usize);
    let states = partitions(m, n);
    let size = states.len();
    // Bound the work: every state enumerates up to C(m + n - 1, m) arrival patterns.
    if (size as u64).saturating_mul(compositions(m as u64, n as u64)?) > 5_000_000 {
        return None;
    }
    let lookup: std::collections::HashMap<&[u8], usize> = states
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_slice(), i))
        .collect();
    let index = |occ: &[u8]| lookup.get(occ).copied();
    // Transition matrix, row = from.
    let mut p = vec![vec![0.0f64; size]; size];
    let fact: Vec<f64> = (0..=m)
        .scan(1.0, |acc, i| {
            if i > 0 {
                *acc *= i as f64;
            }
            Some(*acc)
        })
        .collect();
    for (from, state) in states.iter().enumerate() {
        let served = state.iter().filter(|&&c| c > 0).count();
        let after: Vec<u8> = state.iter().map(|&c| c.saturating_sub(1)).collect();
        let norm = (n as f64).powi(served as i32);
        let mut next = vec![0u8; n];
        for_each_composition(served, n, &mut vec![0u8; n], 0, &mut |arrivals| {
            let ways = fact[served] / arrivals.iter().map(|&a| fact[a as usize]).product::<f64>();
            for (slot, (&a, &b)) in next.iter_mut().zip(after.iter().zip(arrivals)) {
                *slot = a + b;
            }
            next.sort_unstable_by(|a, b| b.cmp(a));
            if let Some(to) = index(&next) {
                p[from][to] += ways / norm;
            }
        });
    }
    let pi = stationary(&p)?;
    let mean_served: f64 = states
        .iter()
        .zip(&pi)
        .map(|(s, w)| w * s.iter().filter(|&&c| c > 0).count() as f64)
        .sum();
    Some(mean_served / m as f64)
}

/// C(m + n - 1, m): the ways m arrivals fall on n outputs, an upper bound on the patterns per state.
fn compositions(m: u64, n: u64) -> Option<u64> {
    let mut c: u64 = 1;
    for i in 1..=m {
        c = c.checked_mul(n - 1 + i)? / i;
    }
    Some(c)
}

/// All partitions of `m` into at most `n` parts, as occupancy vectors of length `n` sorted
/// descending.
fn partitions(m: usize, n: usize) -> Vec<Vec<u8>> {
    fn go(left: usize, max: usize, cur: &mut Vec<u8>, n: usize, out: &mut Vec<Vec<u8>>) {
        if left == 0 {
            let mut v = cur.clone();
            v.resize(n, 0);
            out.push(v);
            return;
        }
        if cur.len() == n {
            return;
        }
        for part in (1..=left.min(max)).rev() {
            cur.push(part as u8);
            go(left - part, part, cur, n, out);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    go(m, m, &mut Vec::new(), n, &mut out);
    out
}

/// Calls `f` with every way of putting `k` indistinct arrivals into `bins` ordered bins.
fn for_each_composition(
    k: usize,
    bins: usize,
    cur: &mut Vec<u8>,
    at: usize,
    f: &mut dyn FnMut(&[u8]),
) {
    if at + 1 == bins {
        cur[at] = k as u8;
        f(cur);
        return;
    }
    for here in 0..=k {
        cur[at] = here as u8;
        for_each_composition(k - here, bins, cur, at + 1, f);
    }
}

/// Stationary distribution of a row-stochastic matrix by Gaussian elimination on
/// pi (P - I) = 0 with sum(pi) = 1.
fn stationary(p: &[Vec<f64>]) -> Option<Vec<f64>> {
    let n = p.len();
    // Build A x = b with A = (P - I)^T, last equation replaced by sum = 1.
    let mut a: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..=n)
                .map(|j| {
                    if j == n {
                        if i == n - 1 { 1.0 } else { 0.0 }
                    } else if i == n - 1 {
                        1.0
                    } else {
                        p[j][i] - if i == j { 1.0 } else { 0.0 }
                    }
                })
                .collect()
        })
        .collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, pivot);
        let lead = a[col][col];
        for v in a[col].iter_mut() {
            *v /= lead;
        }
        let row = a[col].clone();
        for (r, line) in a.iter_mut().enumerate() {
            if r != col && line[col] != 0.0 {
                let factor = line[col];
                for (v, &x) in line.iter_mut().zip(&row) {
                    *v -= factor * x;
                }
            }
        }
    }
    Some(a.iter().map(|row| row[n]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_counted() {
        assert_eq!(partitions(1, 1).len(), 1);
        assert_eq!(partitions(4, 4).len(), 5);
        assert_eq!(partitions(8, 8).len(), 22);
        // 5 into at most 2 parts: 5, 4+1, 3+2.
        assert_eq!(partitions(5, 2).len(), 3);
    }

    #[test]
    fn two_port_switch_is_three_quarters() {
        assert!((saturation_throughput(2).unwrap() - 0.75).abs() < 1e-12);
        assert_eq!(saturation_throughput(1), Some(1.0));
        assert_eq!(saturation_throughput(0), None);
        assert_eq!(saturation_throughput(EXACT_MAX_PORTS + 1), None);
    }

    #[test]
    fn one_input_never_blocks_and_many_outputs_block_less() {
        assert_eq!(fifo_saturation(1, 5), Some(1.0));
        let four = fifo_saturation(4, 5).unwrap();
        assert!(four < gigaswitch_efficiency(5, 4));
        assert!(four > saturation_throughput(5).unwrap());
        assert_eq!(fifo_saturation(0, 5), None);
        assert_eq!(fifo_saturation(64, 64), None);
    }

    #[test]
    fn gigaswitch_formula_small_cases() {
        assert!((gigaswitch_efficiency(5, 1) - 1.0).abs() < 1e-12);
        assert!((gigaswitch_efficiency(5, 2) - 0.9).abs() < 1e-12);
        assert_eq!(gigaswitch_efficiency(0, 3), 0.0);
        // With M = N the one-slot model is 1 - (1 - 1/N)^N, above the FIFO value for N > 2.
        for n in 3..=8 {
            assert!(gigaswitch_efficiency(n, n) > saturation_throughput(n).unwrap());
        }
    }
}
