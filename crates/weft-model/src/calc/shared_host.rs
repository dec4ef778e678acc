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
//! enough, the host's `c` when `p` ranks outnumber them:
//!
//! ```text
//! T = max(T_alpha_beta, W / min(p, c)),   W = sum over the ranks' sends of (o + g m)
//! ```
//!
//! On loopback a message only ever travels on CPUs (`alpha + m beta` is almost all `o + g m`,
//! and in a ping-pong the sender's copy overlaps the receiver's, so `g` is up to twice `beta`),
//! and the second term decides. Both parameters come from ping-pong alone, never from the
//! collectives. Left out: the reduction's arithmetic (as in [`crate::calc::alpha_beta`]) and the
//! scheduler's switches from one rank to another on a core, which a ping-pong between ranks
//! with a core each never makes.

use super::alpha_beta::AlphaBeta;
use crate::mp::pattern::Pattern;
use crate::mp::plan::Plan;

/// One ping-pong measurement: a message size, its one-way time and the CPU time its two ends
/// spent on it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PingPongPoint {
    /// Message size, bytes.
    pub bytes: f64,
    /// One-way time (half the round trip), seconds.
    pub one_way_s: f64,
    /// Time in the calls that sent and received the message, both ends, seconds.
    pub cpu_s: f64,
}

/// The alpha-beta model of a host whose ranks may outnumber its cores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SharedHost {
    /// One-way time of a message: latency and inverse bandwidth.
    pub one_way: AlphaBeta,
    /// CPU time of a message at its two ends: `alpha` seconds per message (`o`), `beta`
    /// seconds per byte (`g`).
    pub cpu: AlphaBeta,
    /// Cores the ranks share.
    pub cores: usize,
}

impl SharedHost {
    /// Fits both halves to ping-pong `points` ([`AlphaBeta::fit`] each) for a host of `cores`
    /// cores; `None` for fewer than two distinct sizes.
    pub fn fit(points: &[PingPongPoint], cores: usize) -> Option<SharedHost> {
        let xy = |f: fn(&PingPongPoint) -> f64| -> Vec<(f64, f64)> {
            points.iter().map(|p| (p.bytes, f(p))).collect()
        };
        Some(SharedHost {
            one_way: AlphaBeta::fit(&xy(|p| p.one_way_s))?,
            cpu: AlphaBeta::fit(&xy(|p| p.cpu_s))?,
            cores: cores.max(1),
        })
    }

    /// Time of one iteration of `pattern` among `p` ranks at `m` bytes, seconds: the
    /// alpha-beta time, or the CPU work over the cores that run it where that is longer
    /// (ping-pong: one way; NaN where the pattern does not run on `p` ranks).
    pub fn pattern(&self, pattern: &Pattern, p: usize, m: f64) -> f64 {
        let latency = self.one_way.pattern(pattern, p, m);
        if *pattern == Pattern::PingPong {
            return latency;
        }
        let spread = self.work(pattern, p, m) / p.min(self.cores).max(1) as f64;
        if spread.is_nan() {
            return f64::NAN;
        }
        latency.max(spread)
    }

    /// CPU time of one iteration of `pattern` among `p` ranks at `m` bytes, all ranks
    /// together, seconds: every message each rank's plan sends, with its receive (NaN where
    /// the pattern does not run on `p` ranks).
    pub fn work(&self, pattern: &Pattern, p: usize, m: f64) -> f64 {
        let plans: Result<Vec<Plan>, String> = (0..p)
            .map(|r| pattern.plan(r, p, m.max(0.0) as usize))
            .collect();
        match plans {
            Ok(plans) => plans
                .iter()
                .map(|pl| {
                    pl.messages_sent() as f64 * self.cpu.alpha
                        + pl.bytes_sent() as f64 * self.cpu.beta
                })
                .sum(),
            Err(_) => f64::NAN,
        }
    }
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
        cores: 2,
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
    fn fit_takes_both_halves_from_ping_pong() {
        let points: Vec<PingPongPoint> = [8.0, 4096.0, 65536.0, 1048576.0]
            .iter()
            .map(|&m| PingPongPoint {
                bytes: m,
                one_way_s: HOST.one_way.message(m),
                cpu_s: HOST.cpu.message(m),
            })
            .collect();
        let f = SharedHost::fit(&points, 2).unwrap();
        assert!((f.one_way.alpha - 4e-6).abs() < 1e-12, "{f:?}");
        assert!((f.cpu.alpha - 3e-6).abs() < 1e-12, "{f:?}");
        assert!((f.cpu.rate_bps() - 30e9).abs() < 1e3, "{f:?}");
        assert!(SharedHost::fit(&points[..1], 2).is_none());
    }
}
