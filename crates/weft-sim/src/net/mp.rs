//! Message passing on simulated hosts: each rank walks its [`Program`] (the same blocks of
//! plans `weft mp`'s real ranks run) over one simulated TCP connection per peer, the sans-IO
//! [`Connection`] of `weft_model::tcp` with `TCP_NODELAY` and Linux's defaults, as the real
//! ranks' sockets are.
//!
//! Each message is the real executor's frame: a [`FRAME_HEADER`]-byte header and the payload,
//! written into the connection to its receiver. A step is complete, as in the real executor,
//! when every send has been taken by its socket buffer and every receive has its whole frame
//! read; bytes read before their receive is posted wait (the real executor's unexpected queue).
//! Messages from one peer arrive in order on its connection, so a receive needs only the count
//! of bytes that arrived from that peer.
//!
//! Hosts here cost nothing (no CPU model): the times are what the fabric and TCP make of the
//! schedule. Time comes only from the engine.

use std::any::Any;
use std::collections::VecDeque;

use weft_model::Instant;
use weft_model::mp::program::{Program, Timing};
use weft_model::mp::{FRAME_HEADER, Op};
use weft_model::tcp::{Config, Connection, SeqNum, State};

use weft_model::net::LinkSpec;

use super::frame::SimFrame;
use super::hosts::App;
use super::nic::Nic;

/// Rank `r`'s end of its connection to rank `q` has local port `PORT_BASE + q` and remote
/// port `PORT_BASE + r`.
pub const PORT_BASE: u16 = 6000;

/// Most ranks a simulated run takes (ports stay below 65536, and the real runs' bound).
pub const MAX_RANKS: usize = 64;

/// The connections' configuration over a path of MTU `mtu` bytes: Linux's defaults with
/// `TCP_NODELAY` (the real ranks set it) and 4 MiB buffers both ways (what they ask for).
/// Linux's timestamps matter here: a time-out that a queue caused (a message held behind
/// another rank's burst, its ACK behind a third's) is found spurious and undone, as the real
/// ranks' stacks undo it, instead of leaving that pair's connection with a threshold of two
/// segments for its next large message.
pub fn rank_config(mtu: u32) -> Config {
    let mut cfg = Config::linux();
    cfg.nagle = false;
    cfg.mss = mtu.saturating_sub(40).clamp(536, u32::from(u16::MAX)) as u16;
    cfg.send_buffer = 4 << 20;
    cfg.recv_buffer = 4 << 20;
    cfg
}

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

/// One rank on a simulated host.
pub struct MpRank {
    me: usize,
    host: usize,
    /// The host of every rank.
    hosts: Vec<usize>,
    conns: Vec<Option<Connection>>,
    program: Program,
    pos: Pos,
    /// The current step's sends were queued and its receives posted.
    active: bool,
    /// Frame bytes of the current step not yet taken by each peer's socket buffer.
    send_left: Vec<u64>,
    /// The current step's receives still waiting: (peer, frame bytes).
    posted: Vec<(usize, u64)>,
    /// Bytes read from each peer and not yet matched to a receive.
    arrived: Vec<u64>,
    iteration_start: Instant,
    block_start: Instant,
    /// Something arrived or a timer is due: look again at this instant.
    due: Option<Instant>,
    outbox: VecDeque<SimFrame>,
    /// The host's transmit path, when the rank paces its connections onto its link.
    nic: Option<Nic>,
    /// What the rank measured.
    pub times: RankTimes,
    /// When the rank finished its program.
    pub finished: Option<Instant>,
}

impl MpRank {
    /// Rank `me`, on host `hosts[me]`, of a run among ranks on `hosts`, running `program`
    /// over connections configured with `cfg`. Each rank dials the lower ranks (their SYNs
    /// leave at time zero) and listens for the higher ones.
    pub fn new(me: usize, hosts: Vec<usize>, program: Program, cfg: &Config) -> Self {
        let n = hosts.len();
        let conns = (0..n)
            .map(|q| {
                let local = PORT_BASE + q as u16;
                let iss = SeqNum(((me * 131 + q * 7919) as u32).wrapping_mul(2_654_435_761));
                match q.cmp(&me) {
                    std::cmp::Ordering::Less => Some(Connection::connect(
                        cfg.clone(),
                        local,
                        PORT_BASE + me as u16,
                        iss,
                        Instant::ZERO,
                    )),
                    std::cmp::Ordering::Greater => {
                        Some(Connection::listen(cfg.clone(), local, iss))
                    }
                    std::cmp::Ordering::Equal => None,
                }
            })
            .collect();
        MpRank {
            me,
            host: hosts[me],
            hosts,
            conns,
            times: RankTimes {
                each_ns: vec![Vec::new(); program.measures.len()],
                whole_ns: vec![None; program.measures.len()],
            },
            program,
            pos: Pos::default(),
            active: false,
            send_left: vec![0; n],
            posted: Vec::new(),
            arrived: vec![0; n],
            iteration_start: Instant::ZERO,
            block_start: Instant::ZERO,
            due: Some(Instant::ZERO),
            outbox: VecDeque::new(),
            nic: None,
            finished: None,
        }
    }

    /// Sends through a [`Nic`] onto `link` (the host's link): each connection keeps at most a
    /// couple of segments below it, and the connections take turns at the line, as on a Linux
    /// host, instead of every segment their windows allow joining the link's one queue at once.
    pub fn with_link(mut self, link: LinkSpec) -> Self {
        self.nic = Some(Nic::new(link, self.hosts.len()));
        self
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.me
    }

    /// The program the rank ran.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Connection to rank `q`, for its statistics.
    pub fn connection(&self, q: usize) -> Option<&Connection> {
        self.conns.get(q)?.as_ref()
    }

    fn connected(&self) -> bool {
        self.conns
            .iter()
            .flatten()
            .all(|c| c.state() == State::Established)
    }

    /// Everything due at `now`: timers, reads, the program as far as it goes, segments out.
    fn step(&mut self, now: Instant) {
        self.due = None;
        for c in self.conns.iter_mut().flatten() {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
        if self.finished.is_none() && self.connected() {
            self.advance(now);
        }
        for (q, c) in self.conns.iter_mut().enumerate() {
            let Some(c) = c else { continue };
            while self.nic.as_ref().is_none_or(|n| n.has_room(q)) {
                let Some(seg) = c.poll_transmit(now) else {
                    break;
                };
                let f = SimFrame::tcp(self.host, self.hosts[q], seg, now.0);
                match &mut self.nic {
                    Some(nic) => nic.push(q, f),
                    None => self.outbox.push_back(f),
                }
            }
        }
    }

    /// Runs the program's steps while they complete at `now`.
    fn advance(&mut self, now: Instant) {
        loop {
            if !self.active && !self.start_step(now) {
                self.finished = Some(now);
                return;
            }
            self.pump();
            if !self.posted.is_empty() || self.send_left.iter().any(|&b| b > 0) {
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
                Op::Send { peer, .. } => self.send_left[peer] += frame,
                Op::Recv { peer, .. } => self.posted.push((peer, frame)),
            }
        }
        self.active = true;
        true
    }

    /// Hands waiting sends to the sockets, reads what arrived, completes receives in order.
    fn pump(&mut self) {
        for (q, c) in self.conns.iter_mut().enumerate() {
            let Some(c) = c else { continue };
            if self.send_left[q] > 0 {
                let n = c.send(self.send_left[q].min(usize::MAX as u64) as usize);
                self.send_left[q] -= n as u64;
            }
            let r = c.readable();
            if r > 0 {
                self.arrived[q] += c.recv(r as usize) as u64;
            }
        }
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

    /// The rank `q` a frame's segment comes from, if it is for this rank.
    fn peer_of(&self, f: &SimFrame) -> Option<usize> {
        let seg = f.tcp.as_ref()?;
        let q = usize::from(seg.dst_port.checked_sub(PORT_BASE)?);
        let from = usize::from(seg.src_port.checked_sub(PORT_BASE)?);
        (f.dst as usize == self.host
            && from == self.me
            && q != self.me
            && self.hosts.get(q) == Some(&(f.src as usize)))
        .then_some(q)
    }
}

impl App for MpRank {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        self.step(now);
        let f = match &mut self.nic {
            Some(nic) => nic.pop(now),
            None => self.outbox.pop_front(),
        };
        f.map(|f| (now, f))
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        if f.corrupted {
            return;
        }
        let Some(q) = self.peer_of(&f) else { return };
        if let (Some(c), Some(seg)) = (self.conns[q].as_mut(), f.tcp.as_ref()) {
            c.handle_segment(now, seg);
            self.due = Some(now);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let timers = self
            .conns
            .iter()
            .flatten()
            .filter_map(Connection::poll_timeout);
        let nic = self.nic.as_ref().and_then(Nic::poll_timeout);
        self.due.into_iter().chain(nic).chain(timers).min()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
