//! Message passing among ranks that outnumber their host's cores: the alpha-beta model with
//! LogP's split of a message's time (Culler et al., "LogP: towards a realistic model of
//! parallel computation", PPoPP 1993; the per-byte term is LogGP's, Alexandrov et al., SPAA
//! 1995) into what its sender and receiver spend on their CPUs and what it only travels.
//!
//! A message of `m` bytes takes `alpha + m beta` one way (the ping-pong fit, [`AlphaBeta`]).
//! Of that, its two ends spend `o + g m` of CPU time: the time in the calls that send and
//! receive it, copies included (LogP's `o_s + o_r`, LogGP's `G` for both copies), measured in the
//! same ping-pong. A collective takes at least the alpha-beta time of [`AlphaBeta::pattern`],
//! and at least its CPU work spread over the cores that run it: one per rank while there are
//! enough, the host's `c` when `p` ranks outnumber them.
//!
//! The reducing collectives (all-reduce) also add: a reduction of `n` bytes takes `r + n gamma`
//! (`gamma` is Thakur, Rabenseifner and Gropp's computation cost per byte, 2005, section 2;
//! `r` the call's fixed part, a few ns). Per rank, the ring's reduce-scatter reduces `p - 1`
//! chunks of `m / p` bytes, `(p - 1) / p m gamma`; recursive doubling reduces the whole `m` at
//! each of its `log2 p` steps, `log2 p m gamma` (and the folding step of MPICH's extra ranks
//! where `p` is not a power of two). The bytes are counted from the ranks' plans themselves
//! ([`Plan::bytes_reduced`]), so the form holds for what the ranks run. The reductions follow
//! a step's communication, so they add to the alpha-beta time on the critical path, and they
//! are CPU work:
//!
//! ```text
//! T = max(T_alpha_beta + R_rank, W / min(p, c))
//! W = sum over the ranks' sends of (o + g m) + sum over their reductions of (r + n gamma)
//! ```
//!
//! (`R_rank`: the longest of the ranks' reduction times per iteration.) On loopback a message
//! only ever travels on CPUs (`alpha + m beta` is almost all `o + g m`, and in a ping-pong the
//! sender's copy overlaps the receiver's, so `g` is up to twice `beta`), and the second term
//! decides. The message parameters come from ping-pong alone, and `r` and `gamma` from the ranks
//! timing their reduction kernel on its own (`weft_probe::mp::kernel`), never from the
//! collectives. Left out: the scheduler's switches from one rank to another on a core, which a
//! ping-pong between ranks with a core each never makes.

use super::alpha_beta::AlphaBeta;
use crate::mp::pattern::Pattern;
use crate::mp::plan::Plan;

/// One ping-pong measurement: a message size, its one-way time and the CPU time its two ends
/// spent on it, and the time of a reduction of that size on the same ranks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PingPongPoint {
    /// Message size, bytes.
    pub bytes: f64,
    /// One-way time (half the round trip), seconds.
    pub one_way_s: f64,
    /// Time in the calls that sent and received the message, both ends, seconds.
    pub cpu_s: f64,
    /// Time of one reduction of `bytes` bytes, timed on its own by the ranks, seconds (`None`
    /// where it was not measured).
    pub reduce_s: Option<f64>,
}

/// The alpha-beta model of a host whose ranks may outnumber its cores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SharedHost {
    /// One-way time of a message: latency and inverse bandwidth.
    pub one_way: AlphaBeta,
    /// CPU time of a message at its two ends: `alpha` seconds per message (`o`), `beta`
    /// seconds per byte (`g`).
    pub cpu: AlphaBeta,
    /// Time of one reduction: `alpha` seconds per call, `beta` seconds per byte reduced
    /// (Thakur et al.'s `gamma`).
    pub reduce: AlphaBeta,
    /// Cores the ranks share.
    pub cores: usize,
}

impl SharedHost {
    /// Fits the message halves and the reduction to ping-pong `points` ([`AlphaBeta::fit`]
    /// each) for a host of `cores` cores; `None` for fewer than two distinct sizes (of timed
    /// reductions too).
    pub fn fit(points: &[PingPongPoint], cores: usize) -> Option<SharedHost> {
        let xy = |f: fn(&PingPongPoint) -> Option<f64>| -> Vec<(f64, f64)> {
            points
                .iter()
                .filter_map(|p| Some((p.bytes, f(p)?)))
                .collect()
        };
        Some(SharedHost {
            one_way: AlphaBeta::fit(&xy(|p| Some(p.one_way_s)))?,
            cpu: AlphaBeta::fit(&xy(|p| Some(p.cpu_s)))?,
            reduce: AlphaBeta::fit(&xy(|p| p.reduce_s))?,
            cores: cores.max(1),
        })
    }

    /// Time of one iteration of `pattern` among `p` ranks at `m` bytes, seconds: the
    /// alpha-beta time with the ranks' reductions after it, or the CPU work over the cores that
    /// run it where that is longer (ping-pong: one way; NaN where the pattern does not run on
    /// `p` ranks).
    pub fn pattern(&self, pattern: &Pattern, p: usize, m: f64) -> f64 {
        let latency = self.one_way.pattern(pattern, p, m);
        if *pattern == Pattern::PingPong {
            return latency;
        }
        let Some(plans) = plans(pattern, p, m) else {
            return f64::NAN;
        };
        let reducing = plans
            .iter()
            .map(|pl| self.reduction(pl))
            .fold(0.0, f64::max);
        let spread = self.plans_work(&plans) / p.min(self.cores).max(1) as f64;
        (latency + reducing).max(spread)
    }

    /// CPU time of one iteration of `pattern` among `p` ranks at `m` bytes, all ranks
    /// together, seconds: every message each rank's plan sends, with its receive, and every
    /// reduction (NaN where the pattern does not run on `p` ranks).
    pub fn work(&self, pattern: &Pattern, p: usize, m: f64) -> f64 {
        plans(pattern, p, m).map_or(f64::NAN, |plans| self.plans_work(&plans))
    }

    /// Time of one iteration's reductions of the rank of `plan`, seconds.
    pub fn reduction(&self, plan: &Plan) -> f64 {
        plan.reductions() as f64 * self.reduce.alpha
            + plan.bytes_reduced() as f64 * self.reduce.beta
    }

    fn plans_work(&self, plans: &[Plan]) -> f64 {
        plans
            .iter()
            .map(|pl| {
                pl.messages_sent() as f64 * self.cpu.alpha
                    + pl.bytes_sent() as f64 * self.cpu.beta
                    + self.reduction(pl)
            })
            .sum()
    }
}

/// Every rank's plan of `pattern` among `p` ranks at `m` bytes; `None` where it does not run.
fn plans(pattern: &Pattern, p: usize, m: f64) -> Option<Vec<Plan>> {
    (0..p)
        .map(|r| pattern.plan(r, p, m.max(0.0) as usize))
        .collect::<Result<Vec<Plan>, String>>()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mp::pattern::AllReduceAlgo;

    const HOST: SharedHost = SharedHost {
        one_way: AlphaBeta {
            alpha: 4e-6,
            beta: 8.0 / 50e9,
        },
        cpu: AlphaBeta {
            alpha: 3e-6,
            beta: 8.0 / 30e9,
        },
        reduce: AlphaBeta {
            alpha: 0.0,
            beta: 0.0,
        },
        cores: 2,
    };

    /// [`HOST`] with a reduction of 20 ns per call and 8 GB/s.
    const REDUCING: SharedHost = SharedHost {
        reduce: AlphaBeta {
            alpha: 20e-9,
            beta: 1.0 / 8e9,
        },
        ..HOST
    };

    #[test]
    fn the_cores_bound_when_ranks_outnumber_them_and_not_before() {
        let ring = Pattern::AllReduce(Some(AllReduceAlgo::Ring));
        let m = 1048576.0;
        // 4 ranks on 2 cores: 2 (p - 1) sends of m / p per rank.
        let work = 4.0 * 6.0 * (HOST.cpu.alpha + m / 4.0 * HOST.cpu.beta);
        assert!((HOST.work(&ring, 4, m) - work).abs() < 1e-12);
        assert!((HOST.pattern(&ring, 4, m) - work / 2.0).abs() < 1e-12);
        // With a core per rank, each rank's own work: here more than the alpha-beta time,
        // whose one-way rate (50 Gbit/s) is above the CPU's (30), as when a ping-pong overlaps
        // the sender's copy with the receiver's.
        let roomy = SharedHost { cores: 8, ..HOST };
        assert!((roomy.pattern(&ring, 4, m) - work / 4.0).abs() < 1e-12);
        let fast_cpu = SharedHost {
            cpu: AlphaBeta {
                alpha: 1e-6,
                beta: 8.0 / 100e9,
            },
            ..roomy
        };
        assert_eq!(
            fast_cpu.pattern(&ring, 4, m),
            HOST.one_way.pattern(&ring, 4, m),
            "the alpha-beta time stands"
        );
        // Barrier: ceil(log2 p) empty messages per rank.
        assert!((HOST.work(&Pattern::Barrier, 4, 0.0) - 8.0 * 3e-6).abs() < 1e-15);
        // All-to-all above the rendezvous size: a ready message per pair as well.
        let big = 128.0 * 1024.0;
        let a2a = 4.0 * 3.0 * (2.0 * HOST.cpu.alpha + big * HOST.cpu.beta);
        assert!((HOST.work(&Pattern::AllToAll, 4, big) - a2a).abs() < 1e-12);
        assert_eq!(
            HOST.pattern(&Pattern::PingPong, 4, 8.0),
            HOST.one_way.message(8.0)
        );
        assert!(HOST.pattern(&Pattern::Exchange, 1, 8.0).is_nan());
    }

    #[test]
    fn reductions_add_the_bytes_each_algorithm_reduces() {
        let ring = Pattern::AllReduce(Some(AllReduceAlgo::Ring));
        let rd = Pattern::AllReduce(Some(AllReduceAlgo::RecursiveDoubling));
        let m = 1048576.0;
        let r = REDUCING.reduce;
        // Thakur et al.: the ring reduces (p - 1) chunks of m / p per rank, recursive doubling
        // the whole m at each of its log2 p steps.
        let ring_rank = 3.0 * (r.alpha + m / 4.0 * r.beta);
        let rd_rank = 2.0 * (r.alpha + m * r.beta);
        for (pattern, rank) in [(ring, ring_rank), (rd, rd_rank)] {
            let plan = pattern.plan(1, 4, m as usize).unwrap();
            assert!(
                (REDUCING.reduction(&plan) - rank).abs() < 1e-15,
                "{pattern:?}"
            );
            let work = REDUCING.work(&pattern, 4, m) - HOST.work(&pattern, 4, m);
            assert!((work - 4.0 * rank).abs() < 1e-12, "{pattern:?}: {work}");
            // With a core per rank and a fast CPU, the reductions follow the alpha-beta time.
            let roomy = SharedHost {
                cores: 8,
                cpu: AlphaBeta {
                    alpha: 0.0,
                    beta: 0.0,
                },
                ..REDUCING
            };
            let t = roomy.pattern(&pattern, 4, m);
            assert!((t - (HOST.one_way.pattern(&pattern, 4, m) + rank)).abs() < 1e-12);
            // 4 ranks on 2 cores: the reductions are shared CPU work.
            let t = REDUCING.pattern(&pattern, 4, m);
            assert!((t - REDUCING.work(&pattern, 4, m) / 2.0).abs() < 1e-12);
        }
        // Patterns that reduce nothing are left as they were.
        for pattern in [Pattern::AllToAll, Pattern::Exchange, Pattern::Barrier] {
            assert_eq!(
                REDUCING.pattern(&pattern, 4, m),
                HOST.pattern(&pattern, 4, m)
            );
        }
    }

    #[test]
    fn fit_takes_the_messages_from_ping_pong_and_the_reduction_from_its_kernel() {
        let mut points: Vec<PingPongPoint> = [8.0, 4096.0, 65536.0, 1048576.0]
            .iter()
            .map(|&m| PingPongPoint {
                bytes: m,
                one_way_s: HOST.one_way.message(m),
                cpu_s: HOST.cpu.message(m),
                reduce_s: Some(REDUCING.reduce.message(m)),
            })
            .collect();
        let f = SharedHost::fit(&points, 2).unwrap();
        assert!((f.one_way.alpha - 4e-6).abs() < 1e-12, "{f:?}");
        assert!((f.cpu.alpha - 3e-6).abs() < 1e-12, "{f:?}");
        assert!((f.cpu.rate_bps() - 30e9).abs() < 1e3, "{f:?}");
        assert!((f.reduce.alpha - 20e-9).abs() < 1e-15, "{f:?}");
        assert!((f.reduce.beta * 8e9 - 1.0).abs() < 1e-9, "{f:?}");
        assert!(SharedHost::fit(&points[..1], 2).is_none());
        // Without timed reductions there is no gamma, and no model.
        for p in &mut points[1..] {
            p.reduce_s = None;
        }
        assert!(SharedHost::fit(&points, 2).is_none());
    }
}
