//! What one rank does in one iteration of a message-passing pattern: a [`Plan`] of [`Step`]s.
//!
//! A step is a set of communication operations that proceed together (as `MPI_Isend`s and
//! `MPI_Irecv`s followed by `MPI_Waitall`), then local operations on the received data (the
//! reduction of an all-reduce). A rank starts a step when its previous step is complete. Every
//! operation names a byte [`Region`] of the rank's working buffer of [`Plan::buffer`] bytes, so
//! that an executor needs no allocation per message and the plan stays plain data.
//!
//! Messages between two ranks are matched in the order they were posted (MPI's non-overtaking
//! rule); a receive names exactly the length it expects, and an executor refuses a message of
//! another length (the ranks then disagree on the plan).

use serde::Serialize;

/// A byte range `offset .. offset + len` of a rank's working buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Region {
    /// First byte.
    pub offset: usize,
    /// Length in bytes (0 for a message that carries no payload, such as a barrier's).
    pub len: usize,
}

impl Region {
    /// The region `offset .. offset + len`.
    pub const fn new(offset: usize, len: usize) -> Region {
        Region { offset, len }
    }

    /// One past the last byte.
    pub const fn end(self) -> usize {
        self.offset + self.len
    }
}

/// A communication operation of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Op {
    /// Send the bytes of `at` to rank `peer`.
    Send {
        /// The receiving rank.
        peer: usize,
        /// What is sent.
        at: Region,
    },
    /// Receive a message of exactly `at.len` bytes from rank `peer` into `at`.
    Recv {
        /// The sending rank.
        peer: usize,
        /// Where it lands.
        at: Region,
    },
}

impl Op {
    /// The other rank of the operation.
    pub const fn peer(&self) -> usize {
        match self {
            Op::Send { peer, .. } | Op::Recv { peer, .. } => *peer,
        }
    }

    /// The region the operation reads or writes.
    pub const fn region(&self) -> Region {
        match self {
            Op::Send { at, .. } | Op::Recv { at, .. } => *at,
        }
    }
}

/// A local operation, run once a step's communication is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Local {
    /// `into += from`, element by element (see [`reduce_sum`]); the regions have equal lengths.
    Reduce {
        /// The accumulator.
        into: Region,
        /// The addend.
        from: Region,
    },
}

/// Communication that proceeds together, then local work.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Sends and receives, progressed concurrently; the step's communication is complete when
    /// all of them are.
    pub ops: Vec<Op>,
    /// Run in order after the communication.
    pub then: Vec<Local>,
}

impl Step {
    /// A step of `ops` with no local work.
    pub fn comm(ops: Vec<Op>) -> Step {
        Step {
            ops,
            then: Vec::new(),
        }
    }
}

/// One rank's part of one iteration of a pattern.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// This rank, `0 .. ranks`.
    pub rank: usize,
    /// Ranks taking part.
    pub ranks: usize,
    /// Bytes of working buffer the regions of the steps lie in.
    pub buffer: usize,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

impl Plan {
    /// A plan with no steps (a rank that sits a pattern out, such as rank 2 of a ping-pong).
    pub fn idle(rank: usize, ranks: usize) -> Plan {
        Plan {
            rank,
            ranks,
            buffer: 0,
            steps: Vec::new(),
        }
    }

    /// Messages this rank sends per iteration.
    pub fn messages_sent(&self) -> usize {
        self.sends().count()
    }

    /// Payload bytes this rank sends per iteration.
    pub fn bytes_sent(&self) -> u64 {
        self.sends().map(|r| r.len as u64).sum()
    }

    /// Reductions this rank runs per iteration (its steps' [`Local::Reduce`]s).
    pub fn reductions(&self) -> usize {
        self.reduced().count()
    }

    /// Bytes this rank reduces per iteration: the lengths of its reductions' accumulators.
    pub fn bytes_reduced(&self) -> u64 {
        self.reduced().map(|r| r.len as u64).sum()
    }

    fn reduced(&self) -> impl Iterator<Item = Region> + '_ {
        self.steps.iter().flat_map(|s| s.then.iter()).map(|l| {
            let Local::Reduce { into, .. } = *l;
            into
        })
    }

    /// The largest message this rank sends or receives, bytes.
    pub fn largest_message(&self) -> usize {
        self.steps
            .iter()
            .flat_map(|s| s.ops.iter())
            .map(|o| o.region().len)
            .max()
            .unwrap_or(0)
    }

    fn sends(&self) -> impl Iterator<Item = Region> + '_ {
        self.steps
            .iter()
            .flat_map(|s| s.ops.iter())
            .filter_map(|o| match o {
                Op::Send { at, .. } => Some(*at),
                Op::Recv { .. } => None,
            })
    }

    /// Checks that every region lies in the buffer, every peer is another rank, and every
    /// reduction pairs regions of equal length. Plans built by this module always pass; an
    /// executor calls this before trusting offsets.
    pub fn validate(&self) -> Result<(), String> {
        for (i, s) in self.steps.iter().enumerate() {
            for o in &s.ops {
                if o.peer() >= self.ranks || o.peer() == self.rank {
                    return Err(format!(
                        "step {i}: rank {} of {} cannot talk to rank {}",
                        self.rank,
                        self.ranks,
                        o.peer()
                    ));
                }
                if o.region().end() > self.buffer {
                    return Err(format!("step {i}: region beyond the buffer"));
                }
            }
            for l in &s.then {
                let Local::Reduce { into, from } = l;
                if into.len != from.len || into.end() > self.buffer || from.end() > self.buffer {
                    return Err(format!("step {i}: reduction of mismatched regions"));
                }
            }
        }
        Ok(())
    }

    /// Runs the local operations of step `i` on `buf` (which holds at least [`Plan::buffer`]
    /// bytes; steps out of range do nothing).
    pub fn apply_locals(&self, i: usize, buf: &mut [u8]) {
        let Some(step) = self.steps.get(i) else {
            return;
        };
        for l in &step.then {
            let Local::Reduce { into, from } = *l;
            reduce_sum(buf, into, from);
        }
    }
}

/// `buf[into] += buf[from]`: whole 8-byte groups as little-endian `f64` lanes (MPI_DOUBLE,
/// MPI_SUM), any remaining bytes as wrapping `u8` sums (so that sizes that are not a multiple of
/// 8 still reduce). The regions must not overlap; regions outside `buf` are left alone.
pub fn reduce_sum(buf: &mut [u8], into: Region, from: Region) {
    if into.len != from.len || into.end() > buf.len() || from.end() > buf.len() {
        return;
    }
    let (dst, src) = if into.offset < from.offset {
        if into.end() > from.offset {
            return;
        }
        let (a, b) = buf.split_at_mut(from.offset);
        (&mut a[into.offset..into.end()], &b[..from.len])
    } else {
        if from.end() > into.offset {
            return;
        }
        let (a, b) = buf.split_at_mut(into.offset);
        (&mut b[..into.len], &a[from.offset..from.end()])
    };
    let lanes = dst.len() / 8 * 8;
    let (dl, dt) = dst.split_at_mut(lanes);
    let (sl, st) = src.split_at(lanes);
    for (d, s) in dl.chunks_exact_mut(8).zip(sl.chunks_exact(8)) {
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        a.copy_from_slice(d);
        b.copy_from_slice(s);
        let sum = f64::from_le_bytes(a) + f64::from_le_bytes(b);
        d.copy_from_slice(&sum.to_le_bytes());
    }
    for (d, s) in dt.iter_mut().zip(st) {
        *d = d.wrapping_add(*s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_adds_doubles_and_wraps_tail_bytes() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&1.5f64.to_le_bytes());
        buf.push(250);
        buf.extend_from_slice(&2.25f64.to_le_bytes());
        buf.push(10);
        reduce_sum(&mut buf, Region::new(0, 9), Region::new(9, 9));
        assert_eq!(f64::from_le_bytes(buf[..8].try_into().unwrap()), 3.75);
        assert_eq!(buf[8], 4);
        // Overlapping or mismatched regions are left alone.
        let before = buf.clone();
        reduce_sum(&mut buf, Region::new(0, 9), Region::new(4, 9));
        reduce_sum(&mut buf, Region::new(0, 9), Region::new(9, 8));
        reduce_sum(&mut buf, Region::new(0, 9), Region::new(12, 9));
        assert_eq!(buf, before);
        // The other order of regions works too.
        reduce_sum(&mut buf, Region::new(9, 9), Region::new(0, 9));
        assert_eq!(f64::from_le_bytes(buf[9..17].try_into().unwrap()), 6.0);
    }

    #[test]
    fn validate_catches_bad_plans() {
        let mut p = Plan {
            rank: 0,
            ranks: 2,
            buffer: 8,
            steps: vec![Step::comm(vec![Op::Send {
                peer: 1,
                at: Region::new(0, 8),
            }])],
        };
        assert!(p.validate().is_ok());
        assert_eq!(p.bytes_sent(), 8);
        assert_eq!(p.messages_sent(), 1);
        p.steps[0].ops[0] = Op::Send {
            peer: 0,
            at: Region::new(0, 8),
        };
        assert!(p.validate().is_err());
        p.steps[0].ops[0] = Op::Recv {
            peer: 1,
            at: Region::new(4, 8),
        };
        assert!(p.validate().is_err());
    }
}
