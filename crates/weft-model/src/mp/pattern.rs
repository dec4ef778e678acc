//! The plans of the message-passing patterns `weft mp` measures: OSU's ping-pong (latency and
//! bandwidth), a ring exchange, all-to-all, all-reduce (ring and recursive doubling) and a
//! barrier. Each function returns one rank's [`Plan`] for one iteration.
//!
//! The algorithms are the textbook ones that MPICH uses (Thakur, Rabenseifner and Gropp,
//! "Optimization of collective communication operations in MPICH", IJHPCA 19(1), 2005): pairwise
//! exchange for all-to-all, recursive doubling (with MPICH's fold-in of the ranks beyond the
//! largest power of two) and the ring (reduce-scatter then all-gather) for all-reduce, and the
//! dissemination barrier. Their closed-form costs are in [`crate::calc::alpha_beta`].

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::npb::{Benchmark, Class};
use super::plan::{Local, Op, Plan, Region, Step};

/// OSU's `osu_bw` window: messages sent back to back before the receiver acknowledges.
pub const OSU_BW_WINDOW: usize = 64;

/// Size of `osu_bw`'s acknowledgement, bytes.
pub const OSU_BW_ACK: usize = 4;

/// Below this size (bytes) `allreduce` picks recursive doubling, from it the ring: MPICH's
/// `MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE` default (2048), with the ring in the place of MPICH's
/// Rabenseifner algorithm for long messages (the same bytes per rank, 2(p-1)/p of the message).
pub const ALLREDUCE_SHORT: usize = 2048;

/// Above this size (bytes) a pairwise all-to-all step waits for its receiver to be ready
/// (MPI libraries switch from eager sends to a rendezvous around this size).
pub const RENDEZVOUS: usize = 64 * 1024;

/// How an all-reduce is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AllReduceAlgo {
    /// Reduce-scatter around a ring, then all-gather around it: 2(p-1) steps of m/p bytes.
    Ring,
    /// ceil(log2 p) exchanges of the whole message with partners at doubling distances.
    RecursiveDoubling,
}

impl AllReduceAlgo {
    /// The name used in results (`ring`, `rd`).
    pub const fn name(self) -> &'static str {
        match self {
            AllReduceAlgo::Ring => "ring",
            AllReduceAlgo::RecursiveDoubling => "rd",
        }
    }

    /// The algorithm `allreduce` picks for `size` bytes (see [`ALLREDUCE_SHORT`]).
    pub const fn auto(size: usize) -> AllReduceAlgo {
        if size < ALLREDUCE_SHORT {
            AllReduceAlgo::RecursiveDoubling
        } else {
            AllReduceAlgo::Ring
        }
    }
}

/// A pattern `weft mp` can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Ranks 0 and 1 bounce a message (OSU `osu_latency`), then stream a window of them
    /// (`osu_bw`); the other ranks wait.
    PingPong,
    /// Every rank sends to the next and receives from the previous at once (MPI_Sendrecv around
    /// a ring).
    Exchange,
    /// Every rank sends `size` bytes to every other (OSU `osu_alltoall`: size per pair), pairwise.
    AllToAll,
    /// Sum of `size` bytes over all ranks, left at every rank; `None` picks by size.
    AllReduce(Option<AllReduceAlgo>),
    /// Dissemination barrier (no payload; sizes are ignored).
    Barrier,
    /// The communication of one time step of a NAS Parallel Benchmark (sizes are ignored).
    Npb(Benchmark, Class),
}

impl Pattern {
    /// The collectives and point-to-point patterns, in the order `--pattern all` runs them.
    pub const ALL: [Pattern; 7] = [
        Pattern::PingPong,
        Pattern::Exchange,
        Pattern::AllToAll,
        Pattern::AllReduce(None),
        Pattern::AllReduce(Some(AllReduceAlgo::Ring)),
        Pattern::AllReduce(Some(AllReduceAlgo::RecursiveDoubling)),
        Pattern::Barrier,
    ];

    /// Whether the pattern takes message sizes (barrier and NPB skeletons do not).
    pub const fn sized(self) -> bool {
        !matches!(self, Pattern::Barrier | Pattern::Npb(..))
    }

    /// The fewest ranks the pattern needs.
    pub const fn min_ranks(self) -> usize {
        match self {
            Pattern::Npb(..) => 1,
            _ => 2,
        }
    }

    /// One rank's plan for one iteration at `size` bytes (ignored where not [`Pattern::sized`]).
    /// For ping-pong this is the latency loop; see [`pingpong_bandwidth`] for the other.
    pub fn plan(self, rank: usize, ranks: usize, size: usize) -> Result<Plan, String> {
        if ranks < self.min_ranks() || rank >= ranks {
            return Err(format!(
                "{self} needs at least {} ranks (rank {rank} of {ranks} given)",
                self.min_ranks()
            ));
        }
        Ok(match self {
            Pattern::PingPong => pingpong_latency(rank, ranks, size),
            Pattern::Exchange => exchange(rank, ranks, size),
            Pattern::AllToAll => alltoall(rank, ranks, size),
            Pattern::AllReduce(a) => match a.unwrap_or(AllReduceAlgo::auto(size)) {
                AllReduceAlgo::Ring => allreduce_ring(rank, ranks, size),
                AllReduceAlgo::RecursiveDoubling => allreduce_rd(rank, ranks, size),
            },
            Pattern::Barrier => barrier(rank, ranks),
            Pattern::Npb(b, c) => {
                let sk = super::npb::skeleton(b, c, ranks)?;
                sk.plans
                    .into_iter()
                    .nth(rank)
                    .unwrap_or(Plan::idle(rank, ranks))
            }
        })
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::PingPong => f.write_str("pingpong"),
            Pattern::Exchange => f.write_str("exchange"),
            Pattern::AllToAll => f.write_str("alltoall"),
            Pattern::AllReduce(None) => f.write_str("allreduce"),
            Pattern::AllReduce(Some(a)) => write!(f, "allreduce-{}", a.name()),
            Pattern::Barrier => f.write_str("barrier"),
            Pattern::Npb(b, c) => write!(f, "{}.{}", b.name(), c.letter()),
        }
    }
}

impl FromStr for Pattern {
    type Err = String;

    /// `pingpong`, `exchange`, `alltoall`, `allreduce`, `allreduce-ring`, `allreduce-rd`,
    /// `barrier`, or an NPB skeleton `bt.S`, `lu.A`, `sp.W` (benchmark, dot, class).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        Ok(match t.as_str() {
            "pingpong" | "ping-pong" | "latency" => Pattern::PingPong,
            "exchange" | "sendrecv" => Pattern::Exchange,
            "alltoall" | "all-to-all" => Pattern::AllToAll,
            "allreduce" => Pattern::AllReduce(None),
            "allreduce-ring" => Pattern::AllReduce(Some(AllReduceAlgo::Ring)),
            "allreduce-rd" | "allreduce-recursive-doubling" => {
                Pattern::AllReduce(Some(AllReduceAlgo::RecursiveDoubling))
            }
            "barrier" => Pattern::Barrier,
            other => {
                let Some((b, c)) = other.split_once('.') else {
                    return Err(format!(
                        "unknown pattern {s:?}: expected pingpong, exchange, alltoall, \
                         allreduce, allreduce-ring, allreduce-rd, barrier, or an NPB skeleton \
                         such as bt.S, lu.A, sp.S"
                    ));
                };
                Pattern::Npb(b.parse()?, c.parse()?)
            }
        })
    }
}

/// OSU `osu_latency`: rank 0 sends `size` bytes to rank 1, which sends them back. The half round
/// trip is the latency.
pub fn pingpong_latency(rank: usize, ranks: usize, size: usize) -> Plan {
    let at = Region::new(0, size);
    let steps = match rank {
        0 => vec![
            Step::comm(vec![Op::Send { peer: 1, at }]),
            Step::comm(vec![Op::Recv { peer: 1, at }]),
        ],
        1 => vec![
            Step::comm(vec![Op::Recv { peer: 0, at }]),
            Step::comm(vec![Op::Send { peer: 0, at }]),
        ],
        _ => return Plan::idle(rank, ranks),
    };
    Plan {
        rank,
        ranks,
        buffer: size,
        steps,
    }
}

/// OSU `osu_bw`: rank 0 sends `window` messages of `size` bytes back to back, rank 1 receives
/// them all and answers with a 4-byte acknowledgement. Bandwidth is `size * window` per
/// iteration over the iteration's time.
pub fn pingpong_bandwidth(rank: usize, ranks: usize, size: usize, window: usize) -> Plan {
    let at = Region::new(0, size);
    let ack = Region::new(0, OSU_BW_ACK);
    let steps = match rank {
        0 => vec![
            Step::comm(vec![Op::Send { peer: 1, at }; window]),
            Step::comm(vec![Op::Recv { peer: 1, at: ack }]),
        ],
        1 => vec![
            Step::comm(vec![Op::Recv { peer: 0, at }; window]),
            Step::comm(vec![Op::Send { peer: 0, at: ack }]),
        ],
        _ => return Plan::idle(rank, ranks),
    };
    Plan {
        rank,
        ranks,
        buffer: size.max(OSU_BW_ACK),
        steps,
    }
}

/// Every rank sends `size` bytes to the next rank and receives as many from the previous one, in
/// one step (MPI_Sendrecv around a ring).
pub fn exchange(rank: usize, ranks: usize, size: usize) -> Plan {
    let next = (rank + 1) % ranks;
    let prev = (rank + ranks - 1) % ranks;
    Plan {
        rank,
        ranks,
        buffer: 2 * size,
        steps: vec![Step::comm(vec![
            Op::Send {
                peer: next,
                at: Region::new(0, size),
            },
            Op::Recv {
                peer: prev,
                at: Region::new(size, size),
            },
        ])],
    }
}

/// Pairwise all-to-all: in step k (1..p) rank r sends `size` bytes to r+k and receives as many
/// from r-k. The data of every block comes from (and lands in) one region of `size` bytes each,
/// since only the communication is measured.
///
/// Above [`RENDEZVOUS`] bytes a step starts with an empty "ready" message from each receiver to
/// its sender, and the data follows it, as MPI's rendezvous protocol does for long messages:
/// without it sends are eager, a rank that finished step k early pushes step k+1's message
/// while its step-k message is still leaving, and the messages of several steps pile up in the
/// queues of the fabric, where the acknowledgements of the other connections wait behind them.
/// Measured: 4 hosts, 1 MiB, all-to-all took 1.5 to 2 times the alpha-beta time on the
/// emulator (50 Mbit/s) and twice on the simulator (100 Mbit/s), within 10% with the ready
/// messages.
pub fn alltoall(rank: usize, ranks: usize, size: usize) -> Plan {
    let mut steps = Vec::new();
    for k in 1..ranks {
        let to = (rank + k) % ranks;
        let from = (rank + ranks - k) % ranks;
        if size > RENDEZVOUS {
            steps.push(Step::comm(vec![
                Op::Send {
                    peer: from,
                    at: Region::new(0, 0),
                },
                Op::Recv {
                    peer: to,
                    at: Region::new(0, 0),
                },
            ]));
        }
        steps.push(Step::comm(vec![
            Op::Send {
                peer: to,
                at: Region::new(0, size),
            },
            Op::Recv {
                peer: from,
                at: Region::new(size, size),
            },
        ]));
    }
    Plan {
        rank,
        ranks,
        buffer: 2 * size,
        steps,
    }
}

/// The boundaries of `p` chunks of `size` bytes: multiples of 8 bytes (whole doubles), the tail
/// bytes in the last chunk. Chunk `i` is `b[i] .. b[i + 1]`.
pub fn chunk_bounds(size: usize, p: usize) -> Vec<usize> {
    let lanes = size / 8;
    let mut b: Vec<usize> = (0..p).map(|i| (lanes * i / p) * 8).collect();
    b.push(size);
    b
}

/// Ring all-reduce over a buffer `[data: size | scratch: largest chunk]`: p-1 reduce-scatter
/// steps (send chunk r-k to r+1, receive chunk r-k-1 from r-1 into the scratch and add it in),
/// then p-1 all-gather steps (send chunk r+1-k, receive chunk r-k in place). The sum is left in
/// the data region of every rank.
pub fn allreduce_ring(rank: usize, ranks: usize, size: usize) -> Plan {
    let p = ranks;
    let b = chunk_bounds(size, p);
    let chunk = |i: usize| Region::new(b[i % p], b[i % p + 1] - b[i % p]);
    let scratch_len = (0..p).map(|i| chunk(i).len).max().unwrap_or(0);
    let next = (rank + 1) % p;
    let prev = (rank + p - 1) % p;
    let mut steps = Vec::with_capacity(2 * (p - 1));
    for k in 0..p - 1 {
        let send = chunk(rank + p - k);
        let recv = chunk(rank + 2 * p - k - 1);
        let scratch = Region::new(size, recv.len);
        steps.push(Step {
            ops: vec![
                Op::Send {
                    peer: next,
                    at: send,
                },
                Op::Recv {
                    peer: prev,
                    at: scratch,
                },
            ],
            then: vec![Local::Reduce {
                into: recv,
                from: scratch,
            }],
        });
    }
    for k in 0..p - 1 {
        steps.push(Step::comm(vec![
            Op::Send {
                peer: next,
                at: chunk(rank + 1 + p - k),
            },
            Op::Recv {
                peer: prev,
                at: chunk(rank + p - k),
            },
        ]));
    }
    Plan {
        rank,
        ranks,
        buffer: size + scratch_len,
        steps,
    }
}

/// Recursive-doubling all-reduce over `[data: size | scratch: size]`, as MPICH does it for any
/// number of ranks: with p' the largest power of two not above p and r = p - p', the first 2r
/// ranks pair up (even sends its data to odd, which adds it in), the p' remaining ranks exchange
/// and add with partners at distances 1, 2, 4, ..., and the odd ranks finally send the sum back
/// to their even partners.
pub fn allreduce_rd(rank: usize, ranks: usize, size: usize) -> Plan {
    let data = Region::new(0, size);
    let scratch = Region::new(size, size);
    let pof2 = 1usize << (usize::BITS - 1 - ranks.leading_zeros());
    let rem = ranks - pof2;
    let mut steps = Vec::new();
    let newrank = if rank < 2 * rem {
        if rank % 2 == 0 {
            steps.push(Step::comm(vec![Op::Send {
                peer: rank + 1,
                at: data,
            }]));
            None
        } else {
            steps.push(Step {
                ops: vec![Op::Recv {
                    peer: rank - 1,
                    at: scratch,
                }],
                then: vec![Local::Reduce {
                    into: data,
                    from: scratch,
                }],
            });
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    };
    if let Some(nr) = newrank {
        let real = |n: usize| if n < rem { 2 * n + 1 } else { n + rem };
        let mut mask = 1;
        while mask < pof2 {
            let partner = real(nr ^ mask);
            steps.push(Step {
                ops: vec![
                    Op::Send {
                        peer: partner,
                        at: data,
                    },
                    Op::Recv {
                        peer: partner,
                        at: scratch,
                    },
                ],
                then: vec![Local::Reduce {
                    into: data,
                    from: scratch,
                }],
            });
            mask <<= 1;
        }
    }
    if rank < 2 * rem {
        steps.push(Step::comm(vec![if rank % 2 == 1 {
            Op::Send {
                peer: rank - 1,
                at: data,
            }
        } else {
            Op::Recv {
                peer: rank + 1,
                at: data,
            }
        }]));
    }
    Plan {
        rank,
        ranks,
        buffer: 2 * size,
        steps,
    }
}

/// Dissemination barrier: in round k rank r sends an empty message to r + 2^k and receives one
/// from r - 2^k, for ceil(log2 p) rounds.
pub fn barrier(rank: usize, ranks: usize) -> Plan {
    let mut steps = Vec::new();
    let mut d = 1;
    while d < ranks {
        steps.push(Step::comm(vec![
            Op::Send {
                peer: (rank + d) % ranks,
                at: Region::new(0, 0),
            },
            Op::Recv {
                peer: (rank + ranks - d) % ranks,
                at: Region::new(0, 0),
            },
        ]));
        d *= 2;
    }
    Plan {
        rank,
        ranks,
        buffer: 0,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Pattern::ALL {
            assert_eq!(p.to_string().parse::<Pattern>(), Ok(p));
        }
        let bt: Pattern = "BT.s".parse().unwrap();
        assert_eq!(bt, Pattern::Npb(Benchmark::Bt, Class::S));
        assert_eq!(bt.to_string(), "bt.S");
        assert!("nope".parse::<Pattern>().is_err());
        assert!("bt.Q".parse::<Pattern>().is_err());
    }

    #[test]
    fn chunks_are_whole_doubles_and_cover_the_buffer() {
        assert_eq!(chunk_bounds(1024, 4), [0, 256, 512, 768, 1024]);
        assert_eq!(chunk_bounds(13, 4), [0, 0, 0, 0, 13]);
        let b = chunk_bounds(1_000_003, 3);
        assert!(b[..3].iter().all(|x| x % 8 == 0));
        assert_eq!(*b.last().unwrap(), 1_000_003);
    }

    #[test]
    fn step_counts_follow_the_algorithms() {
        assert_eq!(allreduce_ring(0, 4, 1024).steps.len(), 6);
        assert_eq!(allreduce_rd(0, 4, 1024).steps.len(), 2);
        // 9 ranks: ranks 0..2 fold in, 8 = pof2 exchange three times.
        assert_eq!(allreduce_rd(0, 9, 64).steps.len(), 2);
        assert_eq!(allreduce_rd(1, 9, 64).steps.len(), 5);
        assert_eq!(allreduce_rd(5, 9, 64).steps.len(), 3);
        assert_eq!(barrier(3, 9).steps.len(), 4);
        assert_eq!(alltoall(2, 4, 8).steps.len(), 3);
        assert!(pingpong_latency(3, 4, 8).steps.is_empty());
        for p in [2, 3, 4, 5, 8, 9] {
            for r in 0..p {
                for pat in Pattern::ALL {
                    let plan = pat.plan(r, p, 1000).unwrap();
                    assert_eq!(plan.validate(), Ok(()), "{pat} rank {r} of {p}");
                }
            }
        }
    }
}
