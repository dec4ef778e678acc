//! A rank's whole run, sans IO: for every pattern and size, a barrier, the warm-up iterations,
//! a barrier, the timed iterations (and for ping-pong OSU's windowed bandwidth loop the same
//! way), then a final barrier. One walker of this list, the core's rank
//! ([`crate::app::mp::Rank`]), runs it on every engine (the simulator's hosts, the socket driver
//! of `weft mp` and the emulator), so that they time the same things.
//!
//! Times follow OSU's benchmarks: ping-pong's latency loop times each round trip, its bandwidth
//! loop times `iterations / 10` windows of [`OSU_BW_WINDOW`] messages as a whole (`osu_bw`); a
//! collective's iteration is one call, timed at every rank; an NPB skeleton's is one time step.

use super::npb;
use super::pattern::{OSU_BW_WINDOW, Pattern, barrier, pingpong_bandwidth};
use super::plan::Plan;

/// How a block's time is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Not timed (warm-up, barriers).
    Untimed,
    /// Each repetition timed on its own (latency loops, collectives, NPB steps).
    Each,
    /// The repetitions timed together (`osu_bw`'s loop of windows).
    Whole,
}

/// A plan run a number of times in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Index into [`Program::plans`].
    pub plan: usize,
    /// Times in a row.
    pub repeat: u32,
    /// How it is timed.
    pub timing: Timing,
    /// The measurement (index into [`Program::measures`]) its time belongs to; the final
    /// barrier's is `measures.len()`.
    pub measure: usize,
}

/// What one pattern at one size measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    /// The pattern.
    pub pattern: Pattern,
    /// Message size, bytes (0 for barrier and NPB skeletons).
    pub size: usize,
    /// Timed iterations (NPB: time steps).
    pub iterations: u32,
    /// Ping-pong: windows of the bandwidth loop, and payload bytes of the whole loop.
    pub bandwidth: Option<(u32, u64)>,
    /// Payload bytes this rank sends per iteration.
    pub bytes_per_iter: u64,
    /// Messages this rank sends per iteration.
    pub messages_per_iter: u64,
}

/// Iteration counts of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Timed iterations for sizes up to `large_above` bytes.
    pub iterations: u32,
    /// Timed iterations above `large_above` bytes.
    pub iterations_large: u32,
    /// Sizes above this many bytes take `iterations_large` (OSU's 8 KiB).
    pub large_above: usize,
    /// Untimed iterations first (at most the timed count).
    pub warmup: u32,
    /// NPB time steps (`None`: the benchmark's own).
    pub npb_steps: Option<u32>,
}

impl Counts {
    /// Timed iterations of `pattern` at `size` bytes.
    pub fn iterations_for(&self, pattern: Pattern, size: usize) -> u32 {
        match pattern {
            Pattern::Npb(b, c) => self.npb_steps.unwrap_or(npb::problem(b, c).1),
            _ if size > self.large_above => self.iterations_large,
            _ => self.iterations,
        }
    }
}

/// One rank's run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// The plans the blocks run; plan 0 is the barrier.
    pub plans: Vec<Plan>,
    /// The blocks, in order.
    pub blocks: Vec<Block>,
    /// The measurements, in order.
    pub measures: Vec<Measure>,
}

impl Program {
    /// Rank `me` of `ranks`'s run of every pattern at every size (sized patterns) or once.
    pub fn new(
        me: usize,
        ranks: usize,
        patterns: &[Pattern],
        sizes: &[usize],
        counts: Counts,
    ) -> Result<Program, String> {
        let mut p = Program {
            plans: vec![barrier(me, ranks)],
            blocks: Vec::new(),
            measures: Vec::new(),
        };
        for &pattern in patterns {
            let list = if pattern.sized() { sizes } else { &[0][..] };
            for &size in list {
                p.add(me, ranks, pattern, size, counts)?;
            }
        }
        p.block(0, 1, Timing::Untimed, p.measures.len());
        Ok(p)
    }

    fn block(&mut self, plan: usize, repeat: u32, timing: Timing, measure: usize) {
        if repeat > 0 {
            self.blocks.push(Block {
                plan,
                repeat,
                timing,
                measure,
            });
        }
    }

    fn add(
        &mut self,
        me: usize,
        ranks: usize,
        pattern: Pattern,
        size: usize,
        counts: Counts,
    ) -> Result<(), String> {
        let plan = pattern.plan(me, ranks, size)?;
        let iterations = counts.iterations_for(pattern, size);
        let warmup = counts.warmup.min(iterations);
        let k = self.measures.len();
        let mut m = Measure {
            pattern,
            size,
            iterations,
            bandwidth: None,
            bytes_per_iter: plan.bytes_sent(),
            messages_per_iter: plan.messages_sent() as u64,
        };
        self.plans.push(plan);
        let at = self.plans.len() - 1;
        self.block(0, 1, Timing::Untimed, k);
        self.block(at, warmup, Timing::Untimed, k);
        self.block(0, 1, Timing::Untimed, k);
        self.block(at, iterations, Timing::Each, k);
        if pattern == Pattern::PingPong {
            let loops = (iterations / 10).max(2);
            self.plans
                .push(pingpong_bandwidth(me, ranks, size, OSU_BW_WINDOW));
            let bw = self.plans.len() - 1;
            self.block(0, 1, Timing::Untimed, k);
            self.block(bw, (warmup / 10).max(1), Timing::Untimed, k);
            self.block(0, 1, Timing::Untimed, k);
            self.block(bw, loops, Timing::Whole, k);
            m.bandwidth = Some((loops, (size * OSU_BW_WINDOW) as u64 * u64::from(loops)));
        }
        self.measures.push(m);
        Ok(())
    }

    /// Whether block `i` is the last of its measurement (its sample is complete after it).
    pub fn ends_measure(&self, i: usize) -> bool {
        let k = self.blocks[i].measure;
        k < self.measures.len() && self.blocks.get(i + 1).is_none_or(|b| b.measure != k)
    }

    /// The largest working buffer any plan needs, bytes.
    pub fn buffer(&self) -> usize {
        self.plans.iter().map(|p| p.buffer).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mp::replay::{Cost, replay_timing};

    const COUNTS: Counts = Counts {
        iterations: 20,
        iterations_large: 5,
        large_above: 8192,
        warmup: 3,
        npb_steps: None,
    };

    #[test]
    fn blocks_follow_osu_and_every_rank_runs_the_same_shape() {
        let pats = [Pattern::PingPong, Pattern::Barrier, "bt.S".parse().unwrap()];
        let progs: Vec<Program> = (0..4)
            .map(|r| Program::new(r, 4, &pats, &[8, 65536], COUNTS).unwrap())
            .collect();
        let p = &progs[0];
        assert_eq!(p.measures.len(), 4);
        assert_eq!(p.measures[0].iterations, 20);
        assert_eq!(p.measures[1].iterations, 5);
        assert_eq!(p.measures[1].bandwidth, Some((2, 65536 * 64 * 2)));
        assert_eq!(p.measures[3].iterations, 60, "BT class S's own steps");
        let timed: Vec<(Timing, u32)> = p
            .blocks
            .iter()
            .filter(|b| b.timing != Timing::Untimed && b.measure == 0)
            .map(|b| (b.timing, b.repeat))
            .collect();
        assert_eq!(timed, [(Timing::Each, 20), (Timing::Whole, 2)]);
        // Every rank has the same blocks (its own plans): replayed block by block, the ranks'
        // plans fit each other.
        for (i, b) in p.blocks.iter().enumerate() {
            let plans: Vec<Plan> = progs
                .iter()
                .map(|q| {
                    assert_eq!(q.blocks[i].repeat, b.repeat);
                    q.plans[q.blocks[i].plan].clone()
                })
                .collect();
            replay_timing(
                &plans,
                Cost {
                    alpha: 1.0,
                    beta: 0.0,
                },
            )
            .unwrap();
        }
        assert_eq!(p.blocks.last().map(|b| b.plan), Some(0), "a final barrier");
    }
}
