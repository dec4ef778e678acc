//! A message-passing rank (`kind = "mp"`, `weft mp`): one rank walking its [`Program`] (the
//! blocks of plans every executor of [`crate::mp`] runs) over one stream per peer, stream `q`
//! to rank `q`. The step logic of every engine: the simulator drives it as an [`Application`]
//! on simulated hosts, and `weft mp`'s socket driver (`weft_sock::mp::engine`) drives it with
//! real bytes ([`Rank::carrying_data`]).
//!
//! Each message is weft's mp frame: a [`FRAME_HEADER`]-byte header and the payload, written
//! with one call on the stream to its receiver. A step's sends are asked for and its receives
//! posted together; the step is complete when every send's write has returned (its bytes are
//! in the socket) and every receive has its whole message, and (with real data) once its local
//! work (an all-reduce's reductions, [`Action::Reduce`]) is done. Messages from one peer are
//! matched to that peer's receives in order (MPI's non-overtaking rule): the `k`-th message
//! from a peer fills the `k`-th receive posted for it, and a message that arrives before its
//! receive is posted is kept until it is (an MPI unexpected queue). The rank starts once every
//! stream is open, and times each iteration (or each block as a whole) into [`RankTimes`].
//!
//! The two ways of driving it differ only in what the driver can tell:
//! - counting bytes (the [`Application`] interface, the simulator): a read of `len` bytes from
//!   a peer ([`Input::Read`]); a receive is complete once that peer's bytes not yet matched
//!   cover its whole frame, since the two ranks run the same plan;
//! - carrying data ([`Rank::carrying_data`], the socket driver): the driver parses frames and
//!   says where each message starts and ends ([`Rank::message_starts`],
//!   [`Rank::message_ends`]); the rank answers where its bytes go (the receive's [`Region`], or
//!   kept by the driver), refuses a message of another length than its receive, asks for a
//!   kept one to be handed over ([`Action::Deliver`]) and for the reductions on the data.
//!
//! What stays with a driver is I/O: frames, sockets, waiting, buffers for kept messages and
//! their bound, time-outs, and the goodbyes.

use std::collections::VecDeque;

use super::{Application, Input, Output};
use crate::mp::program::{Program, Timing};
use crate::mp::{FRAME_HEADER, Op, Region};
use crate::time::Instant;

/// The times one rank took, per measurement of its program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankTimes {
    /// Each timed iteration, ns, per measurement.
    pub each_ns: Vec<Vec<u64>>,
    /// The block timed as a whole (ping-pong's bandwidth loop), ns, per measurement.
    pub whole_ns: Vec<Option<u64>>,
}

/// What a rank asks of a driver that carries its messages' bytes ([`Rank::poll_action`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send the bytes of `at` (of the rank's working buffer) to `peer`, as one message.
    Send {
        /// The receiving rank.
        peer: usize,
        /// What is sent.
        at: Region,
    },
    /// Copy the oldest message kept from `peer` (it arrived before its receive; complete, and
    /// of `at.len` bytes) into `at`, and drop it.
    Deliver {
        /// The sending rank.
        peer: usize,
        /// Where it goes.
        at: Region,
    },
    /// Apply the local work of step `step` of plan `plan` to the working buffer
    /// ([`crate::mp::Plan::apply_locals`]), then call [`Rank::reduced`].
    Reduce {
        /// The plan, an index of [`Program::plans`].
        plan: usize,
        /// The step.
        step: usize,
    },
    /// Block `block` of the program is over (its times are in [`Rank::times`]); asked of
    /// counting drivers too, which may ignore it.
    BlockEnd {
        /// The block, an index of [`Program::blocks`].
        block: usize,
    },
}

/// A message of another length than the receive it is matched to: the ranks run different
/// plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "rank {peer} sent {got} bytes where rank {me} expected {want}: the ranks run different \
     sizes or patterns"
)]
pub struct LengthMismatch {
    /// The sender.
    pub peer: usize,
    /// The receiver.
    pub me: usize,
    /// Bytes the receive expects.
    pub want: usize,
    /// Bytes the message has.
    pub got: usize,
}

/// Where a rank is in its program.
#[derive(Clone, Copy, Debug, Default)]
struct Pos {
    block: usize,
    repeat: u32,
    step: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecvState {
    /// No byte of its message yet.
    Pending,
    /// Its message is being read into it.
    Filling,
    Done,
}

/// A receive of the current step.
#[derive(Clone, Copy, Debug)]
struct Recv {
    peer: usize,
    at: Region,
    state: RecvState,
}

/// A message kept from a peer (carrying data): its length and whether it has all its bytes.
#[derive(Clone, Copy, Debug)]
struct Kept {
    len: usize,
    complete: bool,
}

/// Where the message being read from a peer goes (carrying data).
#[derive(Clone, Copy, Debug)]
enum Into {
    /// Receive `i` of the current step.
    Recv(usize),
    /// The back of the peer's kept messages.
    Kept,
}

/// The local work of the current step (carrying data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LocalWork {
    /// Not asked for yet.
    Idle,
    /// Asked for; the driver has not said it is done.
    Asked,
    Done,
}

/// One rank.
#[derive(Clone, Debug)]
pub struct Rank {
    me: usize,
    program: Program,
    pos: Pos,
    /// Streams open, by peer.
    open: Vec<bool>,
    /// The driver carries the messages' bytes and frames ([`Rank::carrying_data`]).
    carries_data: bool,
    /// The current step's sends were asked for and its receives posted.
    active: bool,
    /// Writes of the current step not yet returned.
    unwritten: usize,
    /// The current step's receives, in the plan's order.
    recvs: Vec<Recv>,
    /// Counting bytes: bytes read from each peer and not yet matched to a receive.
    arrived: Vec<u64>,
    /// Carrying data: messages from each peer that arrived before their receives, in order.
    kept: Vec<VecDeque<Kept>>,
    /// Carrying data: where the message being read from each peer goes.
    reading: Vec<Option<Into>>,
    /// Carrying data: the current step's local work.
    local: LocalWork,
    /// A message refused; the rank goes no further.
    error: Option<LengthMismatch>,
    /// What the rank asks of its driver, in order.
    out: VecDeque<Action>,
    iteration_start: Instant,
    block_start: Instant,
    times: RankTimes,
    /// Steps ended since the rank was made.
    steps_ended: u64,
    finished: Option<Instant>,
}

impl Rank {
    /// Rank `me` of `ranks`, running `program`, on a driver that counts bytes (the
    /// [`Application`] interface).
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
            carries_data: false,
            active: false,
            unwritten: 0,
            recvs: Vec::new(),
            arrived: vec![0; ranks],
            kept: vec![VecDeque::new(); ranks],
            reading: vec![None; ranks],
            local: LocalWork::Idle,
            error: None,
            out: VecDeque::new(),
            iteration_start: Instant::ZERO,
            block_start: Instant::ZERO,
            steps_ended: 0,
            finished: None,
        }
    }

    /// Rank `me` of `ranks`, running `program`, on a driver that carries the messages' bytes:
    /// it says where messages start and end ([`Rank::message_starts`], [`Rank::message_ends`])
    /// and carries out [`Rank::poll_action`]'s actions, the reductions included.
    pub fn carrying_data(me: usize, ranks: usize, program: Program) -> Self {
        Rank {
            carries_data: true,
            ..Rank::new(me, ranks, program)
        }
    }

    /// Gives the rank `program` in place of the one it has not started (a driver that exists
    /// before its program is known): messages that arrived already wait as any early message
    /// does, and every stream stays as it is.
    pub fn load(&mut self, program: Program) {
        let fresh = Rank::new(self.me, self.open.len(), program);
        self.times = fresh.times;
        self.program = fresh.program;
        self.pos = Pos::default();
        self.active = false;
        self.unwritten = 0;
        self.recvs.clear();
        self.local = LocalWork::Idle;
        self.out.clear();
        self.finished = None;
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.me
    }

    /// The program the rank runs.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The block of the program the rank is in (`program().blocks.len()` once finished).
    pub fn block(&self) -> usize {
        self.pos.block
    }

    /// What the rank measured.
    pub fn times(&self) -> &RankTimes {
        &self.times
    }

    /// When the rank finished its program.
    pub fn finished(&self) -> Option<Instant> {
        self.finished
    }

    /// Steps ended since the rank was made: a driver tells by it whether the rank moved on.
    pub fn steps_ended(&self) -> u64 {
        self.steps_ended
    }

    /// The peers whose messages the current step still waits for, in the plan's order (a
    /// peer once per run of its receives).
    pub fn waiting_for(&self) -> Vec<usize> {
        let mut from: Vec<usize> = self
            .recvs
            .iter()
            .filter(|r| r.state != RecvState::Done)
            .map(|r| r.peer)
            .collect();
        from.dedup();
        from
    }

    /// Stream `peer` is open.
    pub fn opened(&mut self, peer: usize) {
        if let Some(o) = self.open.get_mut(peer) {
            *o = true;
        }
    }

    /// Every write asked for so far has returned (carrying data: the driver's sockets took
    /// every queued frame).
    pub fn written_all(&mut self) {
        self.unwritten = 0;
    }

    /// Carrying data: the region the next message from `peer` will be read into, if its
    /// receive is posted and nothing from `peer` is read or kept ahead of it (a driver may
    /// read its bytes straight there).
    pub fn next_receive(&self, peer: usize) -> Option<Region> {
        if self.reading.get(peer)?.is_some() || !self.kept.get(peer)?.is_empty() {
            return None;
        }
        self.pending(peer).map(|i| self.recvs[i].at)
    }

    /// Carrying data: a message of `len` bytes from `peer` starts. Returns the region of its
    /// receive to read it into, or `None`: the driver keeps its bytes (in order, per peer)
    /// until [`Action::Deliver`] asks for them. Refuses a message of another length than its
    /// receive.
    pub fn message_starts(
        &mut self,
        peer: usize,
        len: usize,
    ) -> Result<Option<Region>, LengthMismatch> {
        if peer >= self.kept.len() {
            return Ok(None);
        }
        let into = match self.pending(peer) {
            Some(i) if self.kept[peer].is_empty() => {
                let want = self.recvs[i].at.len;
                if want != len {
                    return Err(self.mismatch(peer, want, len));
                }
                self.recvs[i].state = RecvState::Filling;
                Into::Recv(i)
            }
            _ => {
                self.kept[peer].push_back(Kept {
                    len,
                    complete: false,
                });
                Into::Kept
            }
        };
        self.reading[peer] = Some(into);
        Ok(match into {
            Into::Recv(i) => Some(self.recvs[i].at),
            Into::Kept => None,
        })
    }

    /// Carrying data: the message from `peer` that started last has all its bytes.
    pub fn message_ends(&mut self, peer: usize) {
        match self.reading.get_mut(peer).and_then(Option::take) {
            Some(Into::Recv(i)) => self.recvs[i].state = RecvState::Done,
            Some(Into::Kept) => {
                if let Some(k) = self.kept[peer].back_mut() {
                    k.complete = true;
                }
                self.deliver_kept(peer);
            }
            None => {}
        }
    }

    /// Carrying data: the local work asked for ([`Action::Reduce`]) is done.
    pub fn reduced(&mut self) {
        if self.local == LocalWork::Asked {
            self.local = LocalWork::Done;
        }
    }

    /// Carrying data: the next thing the rank asks of its driver at `now`, or the message it
    /// refused.
    pub fn poll_action(&mut self, now: Instant) -> Result<Option<Action>, LengthMismatch> {
        self.advance(now);
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(self.out.pop_front())
    }

    /// The first receive of the current step from `peer` that has no byte yet.
    fn pending(&self, peer: usize) -> Option<usize> {
        self.recvs
            .iter()
            .position(|r| r.peer == peer && r.state == RecvState::Pending)
    }

    fn mismatch(&self, peer: usize, want: usize, got: usize) -> LengthMismatch {
        LengthMismatch {
            peer,
            me: self.me,
            want,
            got,
        }
    }

    /// Carrying data: hands the complete kept messages from `peer` to its pending receives,
    /// in order.
    fn deliver_kept(&mut self, peer: usize) {
        while self.kept[peer].front().is_some_and(|k| k.complete) {
            let Some(i) = self.pending(peer) else {
                break;
            };
            let Some(k) = self.kept[peer].pop_front() else {
                break;
            };
            let at = self.recvs[i].at;
            if at.len != k.len {
                self.error = Some(self.mismatch(peer, at.len, k.len));
                return;
            }
            self.out.push_back(Action::Deliver { peer, at });
            self.recvs[i].state = RecvState::Done;
        }
    }

    /// Runs the program's steps while they complete at `now`.
    fn advance(&mut self, now: Instant) {
        if self.finished.is_some() || self.error.is_some() || !self.open.iter().all(|&o| o) {
            return;
        }
        loop {
            if !self.active && !self.start_step(now) {
                self.finished = Some(now);
                return;
            }
            if !self.carries_data {
                self.match_arrived();
            }
            if self.error.is_some()
                || self.unwritten > 0
                || self.recvs.iter().any(|r| r.state != RecvState::Done)
            {
                return;
            }
            if self.carries_data && !self.local_work_done() {
                return;
            }
            self.end_step(now);
        }
    }

    /// Carrying data: whether the current step's local work is done, asking for it first.
    fn local_work_done(&mut self) -> bool {
        let plan = self.program.blocks[self.pos.block].plan;
        if self.program.plans[plan].steps[self.pos.step]
            .then
            .is_empty()
        {
            return true;
        }
        match self.local {
            LocalWork::Idle => {
                self.local = LocalWork::Asked;
                self.out.push_back(Action::Reduce {
                    plan,
                    step: self.pos.step,
                });
                false
            }
            LocalWork::Asked => false,
            LocalWork::Done => true,
        }
    }

    /// Asks for the sends and posts the receives of the next step (`false`: the program is
    /// done).
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
        self.recvs.clear();
        self.local = LocalWork::Idle;
        let step = &self.program.plans[b.plan].steps[self.pos.step];
        for op in &step.ops {
            match *op {
                Op::Send { peer, at } => {
                    self.unwritten += 1;
                    self.out.push_back(Action::Send { peer, at });
                }
                Op::Recv { peer, at } => self.recvs.push(Recv {
                    peer,
                    at,
                    state: RecvState::Pending,
                }),
            }
        }
        self.active = true;
        if self.carries_data {
            for peer in 0..self.kept.len() {
                self.deliver_kept(peer);
            }
        }
        true
    }

    /// Counting bytes: completes the posted receives whose frames have arrived, in order.
    fn match_arrived(&mut self) {
        for r in &mut self.recvs {
            if r.state == RecvState::Done {
                continue;
            }
            let frame = (FRAME_HEADER + r.at.len) as u64;
            if let Some(a) = self.arrived.get_mut(r.peer).filter(|a| **a >= frame) {
                *a -= frame;
                r.state = RecvState::Done;
            }
        }
    }

    fn end_step(&mut self, now: Instant) {
        self.active = false;
        self.steps_ended += 1;
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
        self.out.push_back(Action::BlockEnd {
            block: self.pos.block,
        });
        self.pos = Pos {
            block: self.pos.block + 1,
            ..Pos::default()
        };
    }
}

impl Application for Rank {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        match input {
            Input::Connected { stream } => self.opened(stream),
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
        while let Some(a) = self.out.pop_front() {
            if let Action::Send { peer, at } = a {
                return Some(Output::Write {
                    stream: peer,
                    len: (FRAME_HEADER + at.len) as u64,
                    tag: None,
                });
            }
        }
        None
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
    use crate::mp::program::{Block, Counts};
    use crate::mp::{Pattern, Plan};
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

    /// `plan` run `repeat` times, untimed, as a program of one block.
    fn program_of(plan: Plan, repeat: u32) -> Program {
        Program {
            plans: vec![plan],
            blocks: vec![Block {
                plan: 0,
                repeat,
                timing: Timing::Each,
                measure: 0,
            }],
            measures: vec![crate::mp::program::Measure {
                pattern: Pattern::Barrier,
                size: 0,
                iterations: repeat,
                bandwidth: None,
                bytes_per_iter: 0,
                messages_per_iter: 0,
            }],
        }
    }

    /// The smallest driver carrying data: ranks in memory, each sent message handed whole to
    /// its receiver at once, read into the region its receiver names or kept until asked for.
    /// Returns each rank's buffer, and how many messages were kept.
    fn run_in_memory(mut ranks: Vec<Rank>, mut bufs: Vec<Vec<u8>>) -> (Vec<Vec<u8>>, usize) {
        let n = ranks.len();
        let mut kept: Vec<Vec<VecDeque<Vec<u8>>>> = vec![vec![VecDeque::new(); n]; n];
        let mut kept_count = 0;
        for r in &mut ranks {
            for q in 0..n {
                r.opened(q);
            }
        }
        let mut now = Instant::ZERO;
        for _ in 0..10_000 {
            let mut moved = false;
            for me in 0..n {
                while let Some(a) = ranks[me].poll_action(now).unwrap() {
                    moved = true;
                    match a {
                        Action::Send { peer, at } => {
                            let data = bufs[me][at.offset..at.end()].to_vec();
                            match ranks[peer].message_starts(me, data.len()).unwrap() {
                                Some(to) => bufs[peer][to.offset..to.end()].copy_from_slice(&data),
                                None => {
                                    kept_count += 1;
                                    kept[peer][me].push_back(data);
                                }
                            }
                            ranks[peer].message_ends(me);
                            ranks[me].written_all();
                        }
                        Action::Deliver { peer, at } => {
                            let data = kept[me][peer].pop_front().unwrap();
                            bufs[me][at.offset..at.end()].copy_from_slice(&data);
                        }
                        Action::Reduce { plan, step } => {
                            ranks[me].program().plans[plan].apply_locals(step, &mut bufs[me]);
                            ranks[me].reduced();
                        }
                        Action::BlockEnd { .. } => {}
                    }
                }
            }
            now = Instant(now.0 + 1_000);
            if !moved && ranks.iter().all(Rank::is_done) {
                return (bufs, kept_count);
            }
        }
        panic!("the ranks did not finish");
    }

    #[test]
    fn ranks_carrying_data_all_reduce_their_buffers_to_the_sum() {
        // Recursive doubling among 4 and the ring among 3, twice each: after the first call
        // every rank holds the sum S of the ranks' values, after the second n * S. Messages
        // of one rank reach the next before it posts their receives, so some are kept and
        // handed over; without the hand-over or the reductions the sums are wrong.
        for (pat, n) in [("allreduce-rd", 4), ("allreduce-ring", 3)] {
            let p: Pattern = pat.parse().unwrap();
            let size = 24 * 8;
            let plans: Vec<Plan> = (0..n).map(|r| p.plan(r, n, size).unwrap()).collect();
            let bufs = plans
                .iter()
                .enumerate()
                .map(|(r, plan)| {
                    let mut b = vec![0u8; plan.buffer];
                    for (i, c) in b[..size].chunks_exact_mut(8).enumerate() {
                        c.copy_from_slice(&((r * 10 + i) as f64).to_le_bytes());
                    }
                    b
                })
                .collect();
            let ranks = plans
                .into_iter()
                .enumerate()
                .map(|(r, plan)| Rank::carrying_data(r, n, program_of(plan, 2)))
                .collect();
            let (bufs, kept) = run_in_memory(ranks, bufs);
            assert!(kept > 0, "{pat}: no message arrived early");
            for (r, b) in bufs.iter().enumerate() {
                for (i, c) in b[..size].chunks_exact(8).enumerate() {
                    let s: f64 = (0..n).map(|q| (q * 10 + i) as f64).sum();
                    let got = f64::from_le_bytes(c.try_into().unwrap());
                    assert_eq!(got, s * n as f64, "{pat} rank {r} lane {i}");
                }
            }
        }
    }

    #[test]
    fn a_message_of_another_length_than_its_receive_is_refused_posted_or_kept() {
        let plan = |r, size| Pattern::Exchange.plan(r, 2, size).unwrap();
        // Posted: rank 0 waits for 8 bytes, 16 start.
        let mut r0 = Rank::carrying_data(0, 2, program_of(plan(0, 8), 1));
        r0.opened(1);
        while let Some(Action::Send { .. }) = r0.poll_action(Instant::ZERO).unwrap() {}
        let e = r0.message_starts(1, 16).unwrap_err();
        assert_eq!((e.want, e.got), (8, 16));
        assert!(e.to_string().contains("expected 8"), "{e}");
        // Kept: 16 bytes arrive before rank 0 has posted its receive of 8.
        let mut r0 = Rank::carrying_data(0, 2, program_of(plan(0, 8), 1));
        assert_eq!(r0.message_starts(1, 16), Ok(None));
        r0.message_ends(1);
        r0.opened(1);
        let mut got = Ok(None);
        for _ in 0..4 {
            got = r0.poll_action(Instant::ZERO);
            if got.is_err() {
                break;
            }
        }
        assert_eq!(got.unwrap_err().got, 16);
    }

    #[test]
    fn an_iteration_carrying_data_ends_when_its_reduction_does() {
        // Two ranks all-reduce by recursive doubling: one step, exchange then reduce. The
        // iteration's time runs to the call that says the reduction is done.
        let p: Pattern = "allreduce-rd".parse().unwrap();
        let mut r = Rank::carrying_data(0, 2, program_of(p.plan(0, 2, 64).unwrap(), 1));
        r.opened(1);
        let Some(Action::Send { .. }) = r.poll_action(Instant(0)).unwrap() else {
            panic!("no send");
        };
        r.written_all();
        let at = r.message_starts(1, 64).unwrap().expect("posted");
        assert_eq!(at.len, 64);
        r.message_ends(1);
        assert!(matches!(
            r.poll_action(Instant(5)).unwrap(),
            Some(Action::Reduce { plan: 0, step: 0 })
        ));
        assert_eq!(
            r.poll_action(Instant(7)).unwrap(),
            None,
            "waits for the reduction"
        );
        assert!(!r.is_done());
        r.reduced();
        assert_eq!(
            r.poll_action(Instant(9)).unwrap(),
            Some(Action::BlockEnd { block: 0 })
        );
        assert!(r.is_done());
        assert_eq!(r.times().each_ns[0], vec![9]);
    }
}
