//! The alpha-beta (Hockney) model of message passing: a message of `m` bytes between two ranks
//! takes `alpha + m beta`, with `alpha` the latency and `1 / beta` the bandwidth; a rank sends
//! one message and receives one at a time (single port, full duplex). The closed-form costs of
//! the patterns `weft mp` runs (Thakur, Rabenseifner and Gropp, "Optimization of collective
//! communication operations in MPICH", IJHPCA 19(1), 2005, section 2), and the fit of `alpha`
//! and `beta` to ping-pong measurements.
//!
//! The reduction's computation (their `gamma`) is left out here: on the emulated fabrics and
//! networks weft compares this with, summing a megabyte takes well under a tenth of moving it.
//! On one host (loopback) it takes about as long as moving it, and
//! [`crate::calc::shared_host`] adds it.
//! [`crate::mp::replay`] evaluates the plans themselves under the same model; its tests hold the
//! two against each other.

use crate::mp::pattern::{AllReduceAlgo, Pattern, RENDEZVOUS};
use crate::mp::plan::Plan;
use crate::mp::replay::{Cost, replay_timing};

/// Latency and inverse bandwidth of a machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlphaBeta {
    /// Seconds per message.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
}

impl AlphaBeta {
    /// Time of one message of `m` bytes, seconds (the one-way ping-pong latency).
    pub fn message(&self, m: f64) -> f64 {
        self.alpha + m * self.beta
    }

    /// The bandwidth `1 / beta` in bits per second (0 when beta is 0).
    pub fn rate_bps(&self) -> f64 {
        if self.beta > 0.0 {
            8.0 / self.beta
        } else {
            0.0
        }
    }

    /// Ring exchange (every rank sends to the next and receives from the previous at once).
    pub fn exchange(&self, m: f64) -> f64 {
        self.message(m)
    }

    /// Pairwise all-to-all among `p` ranks, `m` bytes per pair: `(p - 1)(alpha + m beta)`.
    /// Above [`RENDEZVOUS`] bytes each step first waits for its receiver's empty "ready"
    /// message (see [`crate::mp::pattern::alltoall`]), one more `alpha` per step.
    pub fn alltoall(&self, p: usize, m: f64) -> f64 {
        let ready = if m > RENDEZVOUS as f64 {
            self.alpha
        } else {
            0.0
        };
        p.saturating_sub(1) as f64 * (ready + self.message(m))
    }

    /// Ring all-reduce of `m` bytes among `p` ranks:
    /// `2 (p - 1) alpha + 2 (p - 1) / p m beta`.
    pub fn allreduce_ring(&self, p: usize, m: f64) -> f64 {
        let p1 = p.saturating_sub(1) as f64;
        2.0 * p1 * self.alpha + 2.0 * p1 / p.max(1) as f64 * m * self.beta
    }

    /// Recursive-doubling all-reduce of `m` bytes among `p` ranks: `log2 p (alpha + m beta)`
    /// for a power of two; otherwise two more steps fold the extra ranks in and out (MPICH),
    /// counted in lockstep (an upper bound: the others start their first exchange meanwhile).
    pub fn allreduce_rd(&self, p: usize, m: f64) -> f64 {
        if p < 2 {
            return 0.0;
        }
        let pof2 = 1usize << (usize::BITS - 1 - p.leading_zeros());
        let steps = pof2.trailing_zeros() as usize + if pof2 == p { 0 } else { 2 };
        steps as f64 * self.message(m)
    }

    /// Dissemination barrier among `p` ranks: `ceil(log2 p) alpha`.
    pub fn barrier(&self, p: usize) -> f64 {
        let rounds = usize::BITS - p.saturating_sub(1).leading_zeros();
        rounds as f64 * self.alpha
    }

    /// Time of one iteration of `pattern` among `p` ranks at `m` bytes, seconds: ping-pong one
    /// way (OSU's latency), the closed forms above for the collectives (`allreduce` picks as
    /// `weft mp` does), and an NPB skeleton's time step replayed under this model (NaN if the
    /// benchmark does not run on `p` ranks).
    pub fn pattern(&self, pattern: &Pattern, p: usize, m: f64) -> f64 {
        match *pattern {
            Pattern::PingPong => self.message(m),
            Pattern::Exchange => self.exchange(m),
            Pattern::AllToAll => self.alltoall(p, m),
            Pattern::AllReduce(a) => match a.unwrap_or(AllReduceAlgo::auto(m as usize)) {
                AllReduceAlgo::Ring => self.allreduce_ring(p, m),
                AllReduceAlgo::RecursiveDoubling => self.allreduce_rd(p, m),
            },
            Pattern::Barrier => self.barrier(p),
            Pattern::Npb(..) => {
                let cost = Cost {
                    alpha: self.alpha,
                    beta: self.beta,
                };
                (0..p)
                    .map(|r| pattern.plan(r, p, 0))
                    .collect::<Result<Vec<Plan>, _>>()
                    .ok()
                    .and_then(|plans| replay_timing(&plans, cost).ok())
                    .map_or(f64::NAN, |r| r.makespan())
            }
        }
    }

    /// Fits `alpha` and `beta` to one-way times `(bytes, seconds)` by least squares on the
    /// relative error (weights `1 / t²`, so that microsecond latencies count as much as
    /// millisecond transfers). `None` for fewer than two distinct sizes. A negative intercept
    /// (noise at tiny latencies) is clamped to zero with `beta` refitted through the origin.
    pub fn fit(points: &[(f64, f64)]) -> Option<AlphaBeta> {
        let pts: Vec<(f64, f64)> = points
            .iter()
            .copied()
            .filter(|(m, t)| m.is_finite() && *m >= 0.0 && t.is_finite() && *t > 0.0)
            .collect();
        let distinct = pts.iter().any(|(m, _)| (*m - pts[0].0).abs() > 0.0);
        if pts.len() < 2 || !distinct {
            return None;
        }
        let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(x, y) in &pts {
            let w = 1.0 / (y * y);
            sw += w;
            sx += w * x;
            sy += w * y;
            sxx += w * x * x;
            sxy += w * x * y;
        }
        let det = sw * sxx - sx * sx;
        if det <= 0.0 {
            return None;
        }
        let beta = (sw * sxy - sx * sy) / det;
        let alpha = (sy - beta * sx) / sw;
        if alpha >= 0.0 && beta >= 0.0 {
            return Some(AlphaBeta { alpha, beta });
        }
        if alpha < 0.0 && sxx > 0.0 {
            return Some(AlphaBeta {
                alpha: 0.0,
                beta: (sxy / sxx).max(0.0),
            });
        }
        Some(AlphaBeta {
            alpha: sy / sw,
            beta: 0.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AB: AlphaBeta = AlphaBeta {
        alpha: 50e-6,
        beta: 8.0 / 100e6,
    };

    fn replayed(p: Pattern, ranks: usize, m: usize) -> f64 {
        let plans: Vec<Plan> = (0..ranks).map(|r| p.plan(r, ranks, m).unwrap()).collect();
        let cost = Cost {
            alpha: AB.alpha,
            beta: AB.beta,
        };
        replay_timing(&plans, cost).unwrap().makespan()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
    }

    #[test]
    fn closed_forms_agree_with_the_replayed_plans() {
        let ring = Pattern::AllReduce(Some(AllReduceAlgo::Ring));
        let rd = Pattern::AllReduce(Some(AllReduceAlgo::RecursiveDoubling));
        for p in [2usize, 3, 4, 8, 9] {
            let m = 8 * 1024 * p;
            let mf = m as f64;
            assert!(close(replayed(Pattern::Exchange, p, m), AB.exchange(mf)));
            assert!(close(replayed(Pattern::AllToAll, p, m), AB.alltoall(p, mf)));
            assert!(close(replayed(ring, p, m), AB.allreduce_ring(p, mf)), "{p}");
            if p.is_power_of_two() {
                assert!(close(replayed(rd, p, m), AB.allreduce_rd(p, mf)), "{p}");
            } else {
                // The folded-in ranks overlap the others' first exchange: the lockstep
                // closed form is an upper bound.
                assert!(
                    replayed(rd, p, m) <= AB.allreduce_rd(p, mf) * (1.0 + 1e-9),
                    "{p}"
                );
            }
            assert!(close(replayed(Pattern::Barrier, p, 0), AB.barrier(p)));
            // Ping-pong: one iteration is a round trip.
            assert!(close(
                replayed(Pattern::PingPong, p, m),
                2.0 * AB.message(mf)
            ));
        }
        assert_eq!(AB.barrier(4), 2.0 * AB.alpha);
        assert_eq!(AB.barrier(5), 3.0 * AB.alpha);
        assert_eq!(AB.allreduce_rd(9, 0.0), 5.0 * AB.alpha);
    }

    #[test]
    fn fit_recovers_alpha_and_beta() {
        let pts: Vec<(f64, f64)> = [8.0, 1024.0, 65536.0, 1048576.0]
            .iter()
            .map(|&m| (m, AB.message(m)))
            .collect();
        let f = AlphaBeta::fit(&pts).unwrap();
        assert!((f.alpha - AB.alpha).abs() < 1e-12, "{f:?}");
        assert!((f.rate_bps() - 100e6).abs() < 1.0, "{f:?}");
        assert!(AlphaBeta::fit(&pts[..1]).is_none());
        assert!(AlphaBeta::fit(&[(8.0, 1.0), (8.0, 2.0)]).is_none());
        // Noise that would make alpha negative is clamped.
        let f = AlphaBeta::fit(&[(1000.0, 1e-6), (2000.0, 3e-6)]).unwrap();
        assert_eq!(f.alpha, 0.0);
        assert!(f.beta > 0.0);
    }
}
