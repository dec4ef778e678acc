//! Runs the plans of all ranks against each other in memory: the check that a set of plans is
//! consistent (every message has a receive of its length, in order) and free of deadlock, the
//! data an all-reduce leaves, and the time the plans take under an alpha-beta model.
//!
//! Sends are eager, as small and medium MPI messages are: a send completes when it is posted
//! (its data is buffered), so only receives can wait. A set of plans that replays here runs on
//! any transport that buffers at least one message per pair, which weft's executor does.
//!
//! Timing (`alpha` seconds per message, `beta` seconds per byte): each rank has one outgoing and
//! one incoming port (full duplex, single port, as Hockney's model and the closed forms of
//! [`crate::calc::alpha_beta`] assume). The sends of a step leave one after another from the
//! step's start or once the outgoing port has sent the earlier steps' messages, each occupying
//! it for `m beta`; a message is complete at the receiver `alpha` after its last byte left, or
//! when the incoming port has taken in the step's messages that arrived before it (in the order
//! they arrive, not the order the receives were posted in). A step ends when its receives are
//! complete: its sends are eager, so the next step may start while they are still leaving.

use std::collections::VecDeque;

use super::plan::{Op, Plan};

/// Why plans do not replay.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// A receive met a message of another length.
    #[error("rank {dst} expected {want} bytes from rank {src} but was sent {got}")]
    Length {
        /// Sender.
        src: usize,
        /// Receiver.
        dst: usize,
        /// Expected length.
        want: usize,
        /// Sent length.
        got: usize,
    },
    /// Some rank waits for a message that is never sent.
    #[error("deadlock: rank {rank} waits in step {step} for a message from rank {from}")]
    Deadlock {
        /// A waiting rank.
        rank: usize,
        /// Its step.
        step: usize,
        /// The rank it waits for.
        from: usize,
    },
    /// Messages were sent that nobody received.
    #[error("{0} messages were sent but never received")]
    Unreceived(usize),
    /// The plans are not one per rank, or a plan is invalid.
    #[error("invalid plans: {0}")]
    Invalid(String),
}

/// An alpha-beta machine: the cost of a message of `m` bytes is `alpha + m * beta`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// Seconds per message.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
}

/// What a replay found.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// When each rank finished its plan, seconds from a common start.
    pub finish: Vec<f64>,
    /// Messages delivered.
    pub messages: usize,
}

impl Replay {
    /// The latest finish, seconds: the time of one iteration.
    pub fn makespan(&self) -> f64 {
        self.finish.iter().copied().fold(0.0, f64::max)
    }
}

/// A message in flight between two ranks.
struct InFlight {
    data: Vec<u8>,
    /// When its last byte left the sender, seconds.
    left: f64,
}

/// Replays `plans` (one per rank, in rank order) with the working buffers `bufs` (at least
/// each plan's `buffer` bytes; their contents are sent, received and reduced), timing messages
/// with `cost`.
pub fn replay(plans: &[Plan], bufs: &mut [Vec<u8>], cost: Cost) -> Result<Replay, ReplayError> {
    let n = plans.len();
    if bufs.len() != n {
        return Err(ReplayError::Invalid("one buffer per plan".into()));
    }
    for (r, (p, b)) in plans.iter().zip(bufs.iter()).enumerate() {
        if p.rank != r || p.ranks != n {
            return Err(ReplayError::Invalid(format!(
                "plan {r} is for another rank"
            )));
        }
        p.validate().map_err(ReplayError::Invalid)?;
        if b.len() < p.buffer {
            return Err(ReplayError::Invalid(format!("buffer {r} is too small")));
        }
    }
    // Queues of messages per (src, dst).
    let mut queues: Vec<VecDeque<InFlight>> = (0..n * n).map(|_| VecDeque::new()).collect();
    let mut pc = vec![0usize; n];
    // Whether the current step's sends were posted, and when the step started.
    let mut posted = vec![false; n];
    let mut start = vec![0.0f64; n];
    let mut in_port = vec![0.0f64; n];
    let mut out_port = vec![0.0f64; n];
    let mut messages = 0;
    loop {
        let mut progressed = false;
        for r in 0..n {
            let Some(step) = plans[r].steps.get(pc[r]) else {
                continue;
            };
            if !posted[r] {
                let mut t = start[r].max(out_port[r]);
                for op in &step.ops {
                    if let Op::Send { peer, at } = *op {
                        t += at.len as f64 * cost.beta;
                        let data = bufs[r][at.offset..at.end()].to_vec();
                        queues[r * n + peer].push_back(InFlight { data, left: t });
                    }
                }
                out_port[r] = t;
                posted[r] = true;
                progressed = true;
            }
            // The step completes when every receive has its message waiting.
            let mut need = vec![0usize; n];
            let ready = step.ops.iter().all(|op| match *op {
                Op::Recv { peer, .. } => {
                    need[peer] += 1;
                    queues[peer * n + r].len() >= need[peer]
                }
                Op::Send { .. } => true,
            });
            if !ready {
                continue;
            }
            // The step's messages, taken in by the incoming port in the order they arrive.
            let mut arrivals = Vec::new();
            for op in &step.ops {
                let Op::Recv { peer, at } = *op else {
                    continue;
                };
                let Some(m) = queues[peer * n + r].pop_front() else {
                    continue;
                };
                if m.data.len() != at.len {
                    return Err(ReplayError::Length {
                        src: peer,
                        dst: r,
                        want: at.len,
                        got: m.data.len(),
                    });
                }
                bufs[r][at.offset..at.end()].copy_from_slice(&m.data);
                arrivals.push((m.left + cost.alpha, at.len));
                messages += 1;
            }
            arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut end = start[r];
            for (arrive, len) in arrivals {
                let done = arrive
                    .max(in_port[r] + len as f64 * cost.beta)
                    .max(start[r]);
                in_port[r] = done;
                end = end.max(done);
            }
            plans[r].apply_locals(pc[r], &mut bufs[r]);
            pc[r] += 1;
            posted[r] = false;
            start[r] = end;
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    if let Some(r) = (0..n).find(|&r| pc[r] < plans[r].steps.len()) {
        let step = &plans[r].steps[pc[r]];
        let from = step
            .ops
            .iter()
            .find_map(|o| match o {
                Op::Recv { peer, .. } => Some(*peer),
                Op::Send { .. } => None,
            })
            .unwrap_or(r);
        return Err(ReplayError::Deadlock {
            rank: r,
            step: pc[r],
            from,
        });
    }
    let left: usize = queues.iter().map(VecDeque::len).sum();
    if left > 0 {
        return Err(ReplayError::Unreceived(left));
    }
    Ok(Replay {
        finish: start,
        messages,
    })
}

/// Replays `plans` with zeroed buffers, for consistency and timing only.
pub fn replay_timing(plans: &[Plan], cost: Cost) -> Result<Replay, ReplayError> {
    let mut bufs: Vec<Vec<u8>> = plans.iter().map(|p| vec![0u8; p.buffer]).collect();
    replay(plans, &mut bufs, cost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mp::npb::{Benchmark, Class, Programs, skeleton};
    use crate::mp::pattern::{Pattern, allreduce_rd, allreduce_ring, pingpong_bandwidth};

    const UNIT: Cost = Cost {
        alpha: 1.0,
        beta: 0.0,
    };

    fn doubles(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn allreduce_sums_at_every_rank() {
        for ranks in [2usize, 3, 4, 5, 8, 9] {
            for (name, build) in [
                ("ring", allreduce_ring as fn(usize, usize, usize) -> Plan),
                ("rd", allreduce_rd),
            ] {
                let lanes = 37;
                let size = lanes * 8 + 3;
                let plans: Vec<Plan> = (0..ranks).map(|r| build(r, ranks, size)).collect();
                let mut bufs: Vec<Vec<u8>> = (0..ranks)
                    .map(|r| {
                        let v: Vec<f64> = (0..lanes).map(|i| (r * 100 + i) as f64).collect();
                        let mut b = doubles(&v);
                        b.extend_from_slice(&[r as u8, 1, 200]);
                        b.resize(plans[r].buffer, 0);
                        b
                    })
                    .collect();
                replay(&plans, &mut bufs, UNIT).unwrap();
                for (r, b) in bufs.iter().enumerate() {
                    for i in 0..lanes {
                        let got = f64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
                        let want: f64 = (0..ranks).map(|q| (q * 100 + i) as f64).sum();
                        assert_eq!(got, want, "{name} p={ranks} rank {r} lane {i}");
                    }
                    let tail = &b[lanes * 8..lanes * 8 + 3];
                    let t0 = (0..ranks).fold(0u8, |a, q| a.wrapping_add(q as u8));
                    assert_eq!(
                        tail,
                        [t0, ranks as u8, (200 * ranks) as u8],
                        "{name} p={ranks}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_pattern_and_skeleton_replays() {
        for ranks in [2usize, 3, 4, 9] {
            for pat in Pattern::ALL {
                for size in [0usize, 1, 8, 1000, 65536] {
                    let plans: Vec<Plan> = (0..ranks)
                        .map(|r| pat.plan(r, ranks, size).unwrap())
                        .collect();
                    replay_timing(&plans, UNIT).unwrap_or_else(|e| panic!("{pat} {size}: {e}"));
                }
            }
            let bw: Vec<Plan> = (0..ranks)
                .map(|r| pingpong_bandwidth(r, ranks, 100, 64))
                .collect();
            assert_eq!(replay_timing(&bw, UNIT).unwrap().messages, 65);
        }
        for b in [Benchmark::Bt, Benchmark::Sp, Benchmark::Lu] {
            for c in [Class::S, Class::W, Class::A] {
                for ranks in [1usize, 4, 9, 16] {
                    let Ok(sk) = skeleton(b, c, ranks) else {
                        continue;
                    };
                    replay_timing(&sk.plans, UNIT)
                        .unwrap_or_else(|e| panic!("{b:?} {c:?} {ranks}: {e}"));
                }
            }
        }
    }

    #[test]
    fn mismatched_plans_are_refused() {
        let mut plans: Vec<Plan> = (0..2)
            .map(|r| Pattern::Exchange.plan(r, 2, 16).unwrap())
            .collect();
        plans[1] = Pattern::Exchange.plan(1, 2, 8).unwrap();
        assert!(matches!(
            replay_timing(&plans, UNIT),
            Err(ReplayError::Length { .. })
        ));
        // A lone receive never completes.
        let mut plans: Vec<Plan> = (0..2)
            .map(|r| Pattern::PingPong.plan(r, 2, 8).unwrap())
            .collect();
        plans[0].steps.remove(0);
        assert!(matches!(
            replay_timing(&plans, UNIT),
            Err(ReplayError::Deadlock { .. })
        ));
    }

    #[test]
    fn lu_wavefront_is_a_pipeline() {
        // With free bandwidth, the first plane of the lower sweep reaches the south-east
        // corner of a 3 x 3 grid after 4 hops; every later plane adds one more.
        let sk = skeleton(Benchmark::Lu, Class::S, 9).unwrap();
        let r = replay_timing(&sk.plans, UNIT).unwrap();
        assert!(r.makespan() > 4.0);
        assert!(r.finish.iter().all(|f| *f > 0.0));
    }

    /// A second per message and per byte.
    const ONES: Cost = Cost {
        alpha: 1.0,
        beta: 1.0,
    };

    #[test]
    fn a_step_ends_with_its_receives_while_its_eager_sends_still_leave() {
        // Rank 0 sends 100 bytes to rank 1 and receives a byte from rank 2, then receives
        // another byte from rank 2: its steps wait for rank 2's bytes, not for its own send.
        let mut p = Programs::new(3);
        p.step(0, vec![(1, 100, true), (2, 1, false)]);
        p.step(0, vec![(2, 1, false)]);
        p.step(1, vec![(0, 100, false)]);
        p.step(2, vec![(0, 1, true)]);
        p.step(2, vec![(0, 1, true)]);
        let plans = p.into_plans(3);
        let r = replay_timing(&plans, ONES).unwrap();
        // Rank 2's bytes leave at 1 and 2 (its port is busy for a byte each), arrive at 2, 3.
        assert_eq!(r.finish[0], 3.0, "{r:?}");
        assert_eq!(r.finish[1], 101.0, "{r:?}");
    }

    #[test]
    fn a_step_takes_its_messages_in_as_they_arrive() {
        // Rank 0 posts the receive of rank 1's 5 bytes first, but rank 1 sends them only once
        // rank 2's byte reached it (at 2, leaving at 7, arriving at 8); rank 2's byte to rank 0
        // arrives at 3 and is taken in then, not after the 5 bytes (which would end at 9).
        let mut p = Programs::new(3);
        p.step(0, vec![(1, 5, false), (2, 1, false)]);
        p.step(1, vec![(2, 1, false)]);
        p.step(1, vec![(0, 5, true)]);
        p.step(2, vec![(1, 1, true), (0, 1, true)]);
        let plans = p.into_plans(3);
        let r = replay_timing(&plans, ONES).unwrap();
        assert_eq!(r.finish[0], 8.0, "{r:?}");
    }
}
