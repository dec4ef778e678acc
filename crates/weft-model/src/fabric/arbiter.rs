//! Output contention among head-of-line cells: each output accepts one of the inputs whose head
//! cell is bound for it, chosen at random or round-robin.

use super::rng::Rng;

/// How an output chooses among inputs contending for it in one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contention {
    /// Uniformly at random (the assumption of Karol, Hluchyj and Morgan).
    #[default]
    Random,
    /// Round-robin: the first contender at or after a per-output pointer, which then moves past
    /// the winner.
    RoundRobin,
}

/// Marks an input with no head-of-line cell.
pub const NO_CELL: u32 = u32::MAX;

/// Resolves contention among head-of-line cells, one slot at a time, without allocating.
#[derive(Clone, Debug)]
pub struct HolArbiter {
    contention: Contention,
    rng: Rng,
    inputs: u32,
    count: Vec<u32>,
    best: Vec<u32>,
    pointer: Vec<u32>,
    touched: Vec<u32>,
    key: Vec<u64>,
    winners: Vec<(u32, u32)>,
}

impl HolArbiter {
    /// An arbiter for `inputs` inputs and `outputs` outputs, random choices from `rng`.
    pub fn new(inputs: usize, outputs: usize, contention: Contention, rng: Rng) -> Self {
        HolArbiter {
            contention,
            rng,
            inputs: inputs as u32,
            count: vec![0; outputs],
            best: vec![0; outputs],
            pointer: vec![0; outputs],
            touched: Vec::with_capacity(outputs),
            key: vec![0; outputs],
            winners: Vec::with_capacity(outputs.min(inputs)),
        }
    }

    /// `hol[i]` is the output wanted by input `i`'s head cell, or [`NO_CELL`] (any value not
    /// below the output count is ignored). Returns one `(input, output)` pair for every output
    /// that had contenders, with the input it chose.
    #[inline]
    pub fn resolve(&mut self, hol: &[u32]) -> &[(u32, u32)] {
        self.winners.clear();
        if self.contention == Contention::Random && self.key.len() <= 64 {
            self.resolve_random_small(hol);
            return &self.winners;
        }
        self.touched.clear();
        let count = &mut self.count[..];
        let best = &mut self.best[..];
        match self.contention {
            Contention::Random => {
                for (i, &o) in hol.iter().enumerate() {
                    let Some(c) = count.get_mut(o as usize) else {
                        continue;
                    };
                    *c += 1;
                    if *c == 1 {
                        self.touched.push(o);
                        best[o as usize] = i as u32;
                    } else if self.rng.below(u64::from(*c)) == 0 {
                        // Reservoir sampling: each of the c contenders ends up chosen with
                        // probability 1 / c.
                        best[o as usize] = i as u32;
                    }
                }
            }
            Contention::RoundRobin => {
                let n = self.inputs;
                for (i, &o) in hol.iter().enumerate() {
                    let Some(c) = count.get_mut(o as usize) else {
                        continue;
                    };
                    *c += 1;
                    let ptr = self.pointer[o as usize];
                    let dist = |x: u32| (x + n - ptr) % n;
                    if *c == 1 {
                        self.touched.push(o);
                        best[o as usize] = i as u32;
                    } else if dist(i as u32) < dist(best[o as usize]) {
                        best[o as usize] = i as u32;
                    }
                }
            }
        }
        for &o in &self.touched {
            let ou = o as usize;
            count[ou] = 0;
            let winner = best[ou];
            if self.contention == Contention::RoundRobin {
                self.pointer[ou] = (winner + 1) % self.inputs;
            }
            self.winners.push((winner, o));
        }
        &self.winners
    }

    /// Random contention for at most 64 outputs, without data-dependent branches: every
    /// contender draws a random 64-bit key and each output takes the largest (ties have
    /// probability 2^-63), which is a uniform choice among its contenders. Outputs asked for are
    /// kept in a bit set and reported in output order.
    #[inline]
    fn resolve_random_small(&mut self, hol: &[u32]) {
        let key = &mut self.key[..];
        let best = &mut self.best[..];
        let mut touched = 0u64;
        for (i, &o) in hol.iter().enumerate() {
            let o = o as usize;
            if o >= key.len() {
                continue;
            }
            let k = self.rng.next_u64() | 1;
            let b = key[o];
            let take = k > b;
            key[o] = if take { k } else { b };
            best[o] = if take { i as u32 } else { best[o] };
            touched |= 1 << o;
        }
        while touched != 0 {
            let o = touched.trailing_zeros() as usize;
            touched &= touched - 1;
            key[o] = 0;
            self.winners.push((best[o], o as u32));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_winner_per_contended_output_and_random_is_fair() {
        let mut a = HolArbiter::new(4, 2, Contention::Random, Rng::new(3));
        let mut wins = [0u32; 4];
        for _ in 0..40_000 {
            let mut per_out = [0; 2];
            for &(i, o) in a.resolve(&[0, 0, 0, NO_CELL]) {
                wins[i as usize] += 1;
                per_out[o as usize] += 1;
            }
            assert_eq!(per_out, [1, 0]);
        }
        for w in &wins[..3] {
            assert!((*w as f64 / 40_000.0 - 1.0 / 3.0).abs() < 0.01, "{wins:?}");
        }
        assert_eq!(wins[3], 0);
    }

    #[test]
    fn round_robin_rotates() {
        let mut a = HolArbiter::new(3, 1, Contention::RoundRobin, Rng::new(0));
        let mut order = Vec::new();
        for _ in 0..6 {
            order.extend(a.resolve(&[0, 0, 0]).iter().map(|w| w.0));
        }
        assert_eq!(order, [0, 1, 2, 0, 1, 2]);
    }
}
