//! A message-passing rank (`kind = "mp"`, `weft mp`): one rank walking its [`Program`] (the
//! blocks of plans every executor of [`crate::mp`] runs) over one stream per peer, stream `q`
//! to rank `q`.
//!
//! Each message is weft's mp frame: a [`FRAME_HEADER`]-byte header and the payload, written
//! with one call on the stream to its receiver. A step is complete, as in the real executor,
//! when every send's write has returned (its bytes are in the socket, [`Input::Written`]) and
//! every receive has its whole frame read; bytes read before their receive is posted wait (the
//! real executor's unexpected queue). Messages from one peer arrive in order on its stream, so
//! a receive needs only the count of bytes that arrived from that peer. The rank starts once
//! every stream is open, and times each iteration (or each block as a whole) into
//! [`RankTimes`].

use std::collections::VecDeque;

use super::{Application, Input, Output};
use crate::mp::program::{Program, Timing};
use crate::mp::{FRAME_HEADER, Op};
use crate::time::Instant;

/// The times one rank took, per measurement of its program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankTimes {
    /// Each timed iteration, ns, per measurement.
    pub each_ns: Vec<Vec<u64>>,
    /// The block timed as a whole (ping-pong's bandwidth loop), ns, per measurement.
    pub whole_ns: Vec<Option<u64>>,
}

/// Where a rank is in its program.
#[derive(Clone, Copy, Debug, Default)]
struct Pos {
    block: usize,
    repeat: u32,
    step: usize,
}

/// One rank.
#[derive(Clone, Debug)]
pub struct Rank {
    me: usize,
    program: Program,
    pos: Pos,
    /// Streams open, by peer.
    open: Vec<bool>,
    /// The current step's sends were queued and its receives posted.
    active: bool,
    /// Writes of the current step not yet returned.
    unwritten: usize,
    /// The current step's receives still waiting: (peer, frame bytes).
    posted: Vec<(usize, u64)>,
    /// Bytes read from each peer and not yet matched to a receive.
    arrived: Vec<u64>,
    /// The current step's writes, not yet asked of the driver.
    out: VecDeque<Output>,
    iteration_start: Instant,
    block_start: Instant,
    times: RankTimes,
    finished: Option<Instant>,
}

impl Rank {
    /// Rank `me` of `ranks`, running `program`.
    pub fn new(me: usize, ranks: usize, program: Program) -> Self {
        let mut open = vec![false; ranks];
        if let Some(o) = open.get_mut(me) {
            *o = true;
        }
        Rank {
            me,
            times: RankTimes {
                each_ns: vec![Vec::new(); program.measures.len()],
                whole_ns: vec![None; program.measures.len()],
            },
            program,
            pos: Pos::default(),
            open,
            active: false,
            unwritten: 0,
            posted: Vec::new(),
            arrived: vec![0; ranks],
            out: VecDeque::new(),
            iteration_start: Instant::ZERO,
            block_start: Instant::ZERO,
            finished: None,
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.me
    }

    /// The program the rank runs.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// What the rank measured.
    pub fn times(&self) -> &RankTimes {
        &self.times
    }

    /// When the rank finished its program.
    pub fn finished(&self) -> Option<Instant> {
        self.finished
    }

    /// Runs the program's steps while they complete at `now`.
    fn advance(&mut self, now: Instant) {
        if self.finished.is_some() || !self.open.iter().all(|&o| o) {
            return;
        }
        loop {
            if !self.active && !self.start_step(now) {
                self.finished = Some(now);
                return;
            }
            self.match_receives();
            if !self.posted.is_empty() || self.unwritten > 0 {
                return;
            }
            self.end_step(now);
        }
    }

    /// Queues the sends and posts the receives of the next step (`false`: the program is done).
    fn start_step(&mut self, now: Instant) -> bool {
        // Skip empty plans (a rank that sits a pattern out) and finished blocks.
        loop {
            let Some(b) = self.program.blocks.get(self.pos.block) else {
                return false;
            };
            let plan = &self.program.plans[b.plan];
            if self.pos.repeat == 0 && self.pos.step == 0 {
                self.block_start = now;
            }
            if self.pos.repeat < b.repeat && !plan.steps.is_empty() {
                break;
            }
            if self.pos.repeat < b.repeat && b.timing == Timing::Each {
                // An empty plan's iteration takes no time.
                self.times.each_ns[b.measure].push(0);
                self.pos.repeat += 1;
                continue;
            }
            self.end_block(now);
        }
        let b = self.program.blocks[self.pos.block];
        if self.pos.step == 0 {
            self.iteration_start = now;
        }
        let step = &self.program.plans[b.plan].steps[self.pos.step];
        for op in &step.ops {
            let frame = (FRAME_HEADER + op.region().len) as u64;
            match *op {
                Op::Send { peer, .. } => {
                    self.unwritten += 1;
                    self.out.push_back(Output::Write {
                        stream: peer,
                        len: frame,
                        tag: None,
                    });
                }
                Op::Recv { peer, .. } => self.posted.push((peer, frame)),
            }
        }
        self.active = true;
        true
    }

    /// Completes the posted receives whose frames have arrived, in order.
    fn match_receives(&mut self) {
        let arrived = &mut self.arrived;
        self.posted.retain(|&(q, len)| {
            if arrived[q] >= len {
                arrived[q] -= len;
                false
            } else {
                true
            }
        });
    }

    fn end_step(&mut self, now: Instant) {
        self.active = false;
        let b = self.program.blocks[self.pos.block];
        self.pos.step += 1;
        if self.pos.step < self.program.plans[b.plan].steps.len() {
            return;
        }
        self.pos.step = 0;
        self.pos.repeat += 1;
        if b.timing == Timing::Each {
            self.times.each_ns[b.measure].push(now.0 - self.iteration_start.0);
        }
        if self.pos.repeat == b.repeat {
            self.end_block(now);
        }
    }

    fn end_block(&mut self, now: Instant) {
        let b = self.program.blocks[self.pos.block];
        if b.timing == Timing::Whole {
            self.times.whole_ns[b.measure] = Some(now.0 - self.block_start.0);
        }
        self.pos = Pos {
            block: self.pos.block + 1,
            ..Pos::default()
        };
    }
}

impl Application for Rank {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        match input {
            Input::Connected { stream } => {
                if let Some(o) = self.open.get_mut(stream) {
                    *o = true;
                }
            }
            Input::Read { stream, len, .. } => {
                if let Some(a) = self.arrived.get_mut(stream) {
                    *a += len;
                }
            }
            Input::Written { .. } => self.unwritten = self.unwritten.saturating_sub(1),
            _ => return,
        }
        self.advance(now);
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self, now: Instant) -> Option<Output> {
        self.advance(now);
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn is_done(&self) -> bool {
        self.finished.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{Link, Pair};
    use crate::mp::Pattern;
    use crate::mp::program::Counts;
    use crate::time::Duration;

    #[test]
    fn two_ranks_ping_pong_over_a_stream_and_time_each_round_trip() {
        let counts = Counts {
            iterations: 5,
            iterations_large: 5,
            large_above: 1 << 20,
            warmup: 1,
            npb_steps: None,
        };
        let program = |me| Program::new(me, 2, &[Pattern::PingPong], &[8], counts).unwrap();
        let link = Link {
            delay: Duration::from_micros(10),
            lose_every: 0,
        };
        let ranks = (Rank::new(0, 2, program(0)), Rank::new(1, 2, program(1)));
        let mut p = Pair::stream(ranks.0, ranks.1, link).with_stream_ids(1, 0);
        p.run(Instant(Duration::from_secs(1).0));
        assert!(p.client.is_done() && p.server.is_done());
        let each = &p.client.times().each_ns[0];
        assert_eq!(each.len(), 5);
        // A round trip is two crossings of the link.
        assert!(each.iter().all(|&t| t == 20_000), "{each:?}");
    }
}
