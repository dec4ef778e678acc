//! The socket driver of a message-passing rank: the core's [`Rank`] (which walks the program's
//! steps: what to send, which receives to post, how messages match them, when a step and an
//! iteration are complete and their times, when to reduce) on a rank's real connections.
//!
//! The split: the rank decides, the driver moves bytes. The driver carries out the rank's
//! [`Action`]s (a send becomes a frame queued on its connection; a message kept for a later
//! receive is copied into it; a reduction runs on the working buffer) and tells it what
//! happened on the wire (a message starts, with its length, and where its bytes went; a
//! message ends; every queued frame is written). Everything that is I/O stays here: the frames
//! and their sequence numbers, the staging buffers and reads straight into a receive, the bytes
//! of messages that arrived before their receives (bounded), `ppoll` and spinning, the
//! time-out naming the ranks waited for, and the hellos, goodbyes and aborts.
//!
//! Like an MPI progress engine, the driver writes and reads on every connection until the
//! rank's step is complete: a message that arrives before its receive is posted is kept and
//! handed over when the receive comes, so that no pair of ranks can block each other on full
//! socket buffers.
//!
//! A connection whose last read found its socket empty (or whose last write found the send
//! buffer full) is not read (written) again until one `ppoll` over all the connections says it
//! moved: with several peers that look costs less than a `recv` on each. Waiting looks without
//! blocking (yielding the CPU in between) for `spin`, then sleeps in `ppoll`; a rank that sees
//! nothing move for the time-out fails, naming the ranks it waits for. A connection that ends
//! without the peer's `bye` fails the run at once, and so does a peer's `abort`.
//!
//! The driver counts the time in the passes that wrote and read bytes
//! ([`EngineStats::send_ns`], [`EngineStats::recv_ns`]): a ping-pong then measures LogP's
//! overheads beside its latency (see `weft_model::calc::shared_host`), and the time in the
//! steps' reductions ([`EngineStats::reduce_ns`]).
//!
//! The connections are either one per peer (the direct route) or a single one to the rank's
//! daemon, which carries every peer's frames in chunks (the PVM daemon route, [`super::pvmd`]).

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use weft_model::app::mp::{Action, Rank};
use weft_model::mp::Region;
use weft_model::mp::program::Program;

use crate::Clock;

use super::conn::{Body, Conn, Fill, SPLIT_MAX};
use super::error::MpError;
use super::wire::{self, HEADER_LEN, Header, Kind};

/// Payload from which a message is read straight into its destination rather than through the
/// staging buffer, bytes: above it the copy out of the staging buffer costs more than the
/// `recv` that a separate read of the next frames may take.
const DIRECT_READ: usize = 16 * 1024;

/// Most bytes kept for messages that arrived before their receives.
const MAX_UNEXPECTED: usize = 256 << 20;

/// Most buffers of handed-over unexpected messages kept for reuse.
const MAX_SPARE: usize = 8;

/// Longest single `poll` sleep, so that the watch descriptor and time-out are looked at.
const POLL_SLICE: Duration = Duration::from_millis(100);

/// How long [`Engine::finish`] waits for the peers' goodbyes.
const BYE_WAIT: Duration = Duration::from_secs(5);

/// How the driver waits and gives up.
#[derive(Clone, Copy, Debug)]
pub struct Waiting {
    /// Fail when nothing moves for this long.
    pub timeout: Duration,
    /// Spin on non-blocking reads this long before sleeping in `poll`.
    pub spin: Duration,
}

/// What the driver moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Messages sent.
    pub messages_sent: u64,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Messages that arrived before their receive was posted.
    pub unexpected: u64,
    /// Time in the passes that wrote bytes (the `sendmsg` calls), ns: the sending side's CPU
    /// overhead of LogP, its copy included.
    pub send_ns: u64,
    /// Time in the passes that read bytes (the `recv` calls, parsing and the copies out of the
    /// staging buffer), ns: the receiving side's CPU overhead.
    pub recv_ns: u64,
    /// Time in the steps' local work (an all-reduce's reductions), ns.
    pub reduce_ns: u64,
}

#[derive(Clone, Copy, Debug)]
enum Rx {
    Header,
    Chunk { hdr: Header, got: usize },
    Control { hdr: Header },
}

/// Where the bytes of the message being read from a peer go.
#[derive(Clone, Copy, Debug)]
enum Dest {
    /// The region of its receive.
    Recv(Region),
    /// The back of the peer's queue of messages that arrived before their receives.
    Unexpected,
}

#[derive(Clone, Copy, Debug)]
struct Partial {
    seq: u32,
    total: usize,
    got: usize,
    dest: Dest,
}

/// One rank's driver over its connections.
#[derive(Debug)]
pub struct Engine {
    me: usize,
    ranks: usize,
    /// The rank's step logic (an empty program until [`Engine::run_program`]).
    rank: Rank,
    /// The rank's time.
    clock: Clock,
    /// [`Engine::act`] queued frames since the progress loop last looked.
    queued: bool,
    /// [`Engine::act`] saw the rank end a step since the progress loop last looked.
    advanced: bool,
    conns: Vec<Conn>,
    /// The peer a connection carries (`None`: the daemon, which carries all).
    conn_peer: Vec<Option<usize>>,
    /// Connection index per peer.
    route: Vec<usize>,
    rx: Vec<Rx>,
    tx_seq: Vec<u32>,
    rx_seq: Vec<u32>,
    partial: Vec<Option<Partial>>,
    /// The bytes of messages that arrived before their receives, per peer, in order (the
    /// rank knows their lengths and asks for them, [`Action::Deliver`]).
    unexpected: Vec<VecDeque<Vec<u8>>>,
    unexpected_bytes: usize,
    /// Buffers of unexpected messages that were handed over, kept for the next ones.
    spare: Vec<Vec<u8>>,
    bye: Vec<bool>,
    hello: Vec<Option<(u16, u64)>>,
    waiting: Waiting,
    watch: Option<RawFd>,
    /// The `ppoll` set of [`Engine::wait_ready`], kept between calls.
    pollfds: Vec<libc::pollfd>,
    stats: EngineStats,
}

impl Engine {
    /// A driver over one connection per peer (`peers[r]` for every rank `r` but `me`).
    pub fn direct(
        me: usize,
        peers: Vec<Option<Conn>>,
        waiting: Waiting,
    ) -> Result<Engine, MpError> {
        let ranks = peers.len();
        let mut conns = Vec::new();
        let mut conn_peer = Vec::new();
        let mut route = vec![usize::MAX; ranks];
        for (r, c) in peers.into_iter().enumerate() {
            match c {
                Some(c) if r != me => {
                    route[r] = conns.len();
                    conns.push(c);
                    conn_peer.push(Some(r));
                }
                None if r == me => {}
                _ => {
                    return Err(MpError::Config(format!(
                        "rank {me}: connection to rank {r} missing or misplaced"
                    )));
                }
            }
        }
        Ok(Engine::with(me, ranks, conns, conn_peer, route, waiting))
    }

    /// A driver whose messages all go through one connection to its daemon.
    pub fn via_daemon(me: usize, ranks: usize, daemon: Conn, waiting: Waiting) -> Engine {
        let route = (0..ranks)
            .map(|r| if r == me { usize::MAX } else { 0 })
            .collect();
        Engine::with(me, ranks, vec![daemon], vec![None], route, waiting)
    }

    fn with(
        me: usize,
        ranks: usize,
        conns: Vec<Conn>,
        conn_peer: Vec<Option<usize>>,
        route: Vec<usize>,
        waiting: Waiting,
    ) -> Engine {
        let n = conns.len();
        let mut rank = Rank::carrying_data(me, ranks, Program::default());
        for q in 0..ranks {
            rank.opened(q);
        }
        Engine {
            me,
            ranks,
            rank,
            clock: Clock::start(),
            queued: false,
            advanced: false,
            conns,
            conn_peer,
            route,
            rx: vec![Rx::Header; n],
            tx_seq: vec![0; ranks],
            rx_seq: vec![0; ranks],
            partial: vec![None; ranks],
            unexpected: (0..ranks).map(|_| VecDeque::new()).collect(),
            unexpected_bytes: 0,
            spare: Vec::new(),
            bye: vec![false; ranks],
            hello: vec![None; ranks],
            waiting,
            watch: None,
            pollfds: Vec::with_capacity(n + 1),
            stats: EngineStats::default(),
        }
    }

    /// Fails the run with [`MpError::Interrupted`] as soon as `fd` becomes readable (the
    /// coordinator's control connection, which is silent during a run).
    pub fn set_watch(&mut self, fd: Option<RawFd>) {
        self.watch = fd;
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.me
    }

    /// Ranks in the run.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// What was moved so far.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// The rank's step logic: where it is in its program, what it measured.
    pub fn state(&self) -> &Rank {
        &self.rank
    }

    /// Runs `program` on `buf` (at least [`Program::buffer`] bytes), calling `on_block` with
    /// this engine and each block's index as the block ends (its times are in
    /// [`Engine::state`]'s [`Rank::times`]; what the engine moved so far in
    /// [`Engine::stats`]). Messages that arrived before (a peer that started first) wait for
    /// their receives as any early message does.
    pub fn run_program(
        &mut self,
        program: Program,
        buf: &mut [u8],
        mut on_block: impl FnMut(&Engine, usize) -> Result<(), MpError>,
    ) -> Result<(), MpError> {
        for plan in &program.plans {
            for op in plan.steps.iter().flat_map(|s| &s.ops) {
                self.conn_of(op.peer())?;
            }
        }
        self.rank.load(program);
        self.progress_until(buf, |e, buf, at| e.act(buf, at, &mut on_block))
    }

    /// Carries out what the rank asks at `at` (the end of the pass that moved bytes) until it
    /// asks nothing more; returns whether it finished its program. Its sends are complete once
    /// every queued frame is written.
    fn act(
        &mut self,
        buf: &mut [u8],
        at: Instant,
        on_block: &mut impl FnMut(&Engine, usize) -> Result<(), MpError>,
    ) -> Result<bool, MpError> {
        let steps = self.rank.steps_ended();
        if !self.conns.iter().any(Conn::tx_pending) {
            self.rank.written_all();
        }
        let mut now = self.clock.of(at);
        while let Some(a) = self
            .rank
            .poll_action(now)
            .map_err(|e| MpError::Mismatch(e.to_string()))?
        {
            match a {
                Action::Send { peer, at } => {
                    let ci = self.conn_of(peer)?;
                    let seq = self.tx_seq[peer];
                    self.tx_seq[peer] = seq.wrapping_add(1);
                    let h = Header::data(self.me as u16, peer as u16, seq, at.len as u32);
                    self.conns[ci].queue(&h, Body::Region(at));
                    self.stats.messages_sent += 1;
                    self.stats.bytes_sent += at.len as u64;
                    self.queued = true;
                }
                Action::Deliver { peer, at } => self.deliver(peer, at, buf),
                Action::Reduce { plan, step } => {
                    let t = Instant::now();
                    if let Some(p) = self.rank.program().plans.get(plan) {
                        p.apply_locals(step, buf);
                    }
                    self.stats.reduce_ns += t.elapsed().as_nanos() as u64;
                    self.rank.reduced();
                    now = self.clock.now();
                }
                Action::BlockEnd { block } => {
                    on_block(self, block)?;
                    now = self.clock.now();
                }
            }
        }
        self.advanced |= self.rank.steps_ended() != steps;
        Ok(self.rank.finished().is_some())
    }

    /// Copies the oldest message kept from `peer` into `at` of `buf`, keeping its buffer for
    /// the next one.
    fn deliver(&mut self, peer: usize, at: Region, buf: &mut [u8]) {
        let Some(data) = self.unexpected.get_mut(peer).and_then(VecDeque::pop_front) else {
            return;
        };
        self.unexpected_bytes -= data.len();
        if let (Some(dst), Some(src)) = (buf.get_mut(at.offset..at.end()), data.get(..at.len)) {
            dst.copy_from_slice(src);
        }
        if self.spare.len() < MAX_SPARE {
            self.spare.push(data);
        }
    }

    /// Sends a hello to every peer and waits for theirs (the daemon route's handshake; direct
    /// connections exchange hellos as they are set up, in [`super::mesh`]).
    pub fn handshake(&mut self, digest: u64) -> Result<(), MpError> {
        let payload = wire::emit_hello(self.ranks as u16, digest);
        for peer in (0..self.ranks).filter(|&r| r != self.me) {
            let ci = self.conn_of(peer)?;
            let h = Header::control(
                Kind::Hello,
                self.me as u16,
                peer as u16,
                payload.len() as u32,
            );
            self.conns[ci].queue(&h, Body::Owned(payload.to_vec()));
        }
        let me = self.me;
        self.progress_until(&mut [], |e, _, _| {
            Ok((0..e.ranks).all(|r| r == me || e.hello[r].is_some())
                && !e.conns.iter().any(Conn::tx_pending))
        })?;
        for (r, h) in self.hello.iter().enumerate() {
            if let Some((ranks, d)) = h {
                check_hello(me, self.ranks, digest, r, *ranks, *d)?;
            }
        }
        Ok(())
    }

    /// Says goodbye to every peer and waits (a few seconds at most) for theirs, so that a
    /// connection closing afterwards is not taken for a crash. Call after a final barrier.
    pub fn finish(&mut self) -> Result<(), MpError> {
        for peer in (0..self.ranks).filter(|&r| r != self.me) {
            let ci = self.conn_of(peer)?;
            let h = Header::control(Kind::Bye, self.me as u16, peer as u16, 0);
            self.conns[ci].queue(&h, Body::Owned(Vec::new()));
        }
        let me = self.me;
        let saved = self.waiting;
        self.waiting.timeout = self.waiting.timeout.min(BYE_WAIT);
        let r = self.progress_until(&mut [], |e, _, _| {
            Ok((0..e.ranks).all(|r| r == me || e.bye[r]) && !e.conns.iter().any(Conn::tx_pending))
        });
        self.waiting = saved;
        r
    }

    /// Tells every peer this rank gives up, best effort (at most 100 ms).
    pub fn abort(&mut self, reason: &str) {
        let text: Vec<u8> = reason.bytes().take(wire::MAX_CONTROL as usize).collect();
        for peer in (0..self.ranks).filter(|&r| r != self.me) {
            let Some(&ci) = self.route.get(peer) else {
                continue;
            };
            if let Some(c) = self.conns.get_mut(ci) {
                let h =
                    Header::control(Kind::Abort, self.me as u16, peer as u16, text.len() as u32);
                c.queue(&h, Body::Owned(text.clone()));
            }
        }
        let until = Instant::now() + Duration::from_millis(100);
        while Instant::now() < until && self.conns.iter().any(Conn::tx_pending) {
            for c in &mut self.conns {
                if c.flush(&[]).is_err() {
                    continue;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The descriptors of the connections (for callers that watch them).
    pub fn fds(&self) -> Vec<RawFd> {
        self.conns.iter().map(Conn::fd).collect()
    }

    fn conn_of(&self, peer: usize) -> Result<usize, MpError> {
        match self.route.get(peer) {
            Some(&ci) if ci != usize::MAX => Ok(ci),
            _ => Err(MpError::Config(format!(
                "rank {} has no connection to rank {peer}",
                self.me
            ))),
        }
    }

    /// Reads and writes until `done` says so: asked first, then after each pass that wrote
    /// and after each pass that read (only those can change what it looks at), with the
    /// instant the pass ended. It may queue frames, which are written before anything is read.
    /// Spins then polls, within the time-out.
    fn progress_until(
        &mut self,
        buf: &mut [u8],
        mut done: impl FnMut(&mut Engine, &mut [u8], Instant) -> Result<bool, MpError>,
    ) -> Result<(), MpError> {
        let mut last = Instant::now();
        let mut spin_until: Option<Instant> = None;
        let single = self.conns.len() == 1;
        self.queued = false;
        if done(self, buf, last)? {
            return Ok(());
        }
        loop {
            if single {
                // One connection: the read and the write are the readiness check.
                self.conns[0].mark_ready(true, true);
            }
            let start = Instant::now();
            let mut wrote = false;
            for ci in 0..self.conns.len() {
                if self.conns[ci].may_write() {
                    let n = self.conns[ci]
                        .flush(buf)
                        .map_err(|e| self.conn_error(ci, e))?;
                    wrote |= n > 0;
                }
            }
            let written = Instant::now();
            if wrote {
                self.stats.send_ns += written.duration_since(start).as_nanos() as u64;
                // A step of sends is complete once they are written: no read on the way out
                // (each `recv` that finds nothing is a system call on the message's path), and
                // the next step's sends go first.
                self.queued = false;
                self.advanced = false;
                if done(self, buf, written)? {
                    return Ok(());
                }
                if std::mem::take(&mut self.queued) {
                    last = written;
                    spin_until = None;
                    continue;
                }
                if std::mem::take(&mut self.advanced) {
                    // The write ended a step (a ping's send) and the next only receives: its
                    // wait starts here, so a read that finds nothing now leads to waiting, not
                    // to a second read at once.
                    wrote = false;
                    last = written;
                    spin_until = None;
                }
            }
            let mut read = false;
            for ci in 0..self.conns.len() {
                if self.conns[ci].may_read() {
                    read |= self.pump(ci, buf)?;
                }
            }
            let now = Instant::now();
            if read {
                self.stats.recv_ns += now.duration_since(written).as_nanos() as u64;
            }
            self.queued = false;
            if read && done(self, buf, now)? {
                return Ok(());
            }
            if wrote || read || std::mem::take(&mut self.queued) {
                last = now;
                spin_until = None;
                continue;
            }
            if now.duration_since(last) >= self.waiting.timeout {
                return Err(MpError::Timeout {
                    secs: self.waiting.timeout.as_secs_f64(),
                    waiting: self.waiting_for(),
                });
            }
            if self.wait_ready(Some(0))? {
                continue;
            }
            let until = *spin_until.get_or_insert(now + self.waiting.spin);
            if now < until {
                // Yield between polls rather than spin hard: when another rank (or its daemon,
                // or the kernel's work for the socket) waits for this CPU, it gets it; when
                // nothing does, sched_yield returns at once and this is a busy poll. Measured
                // with 2 local ranks on 2 CPUs: polling hard for the first 30 us made the 8-byte
                // ping-pong p50 10 us when the ranks sat on different CPUs but 41-44 us in the
                // rounds where the scheduler put them on one; yielding gives 10-11 us in all.
                std::thread::yield_now();
                continue;
            }
            let left = self
                .waiting
                .timeout
                .saturating_sub(now.duration_since(last));
            let ns = left.min(POLL_SLICE).as_nanos().max(1_000_000) as u64;
            self.wait_ready(Some(ns))?;
        }
    }

    /// Looks at which connections moved since their last read or write found nothing to do,
    /// waiting up to `timeout_ns` (0: look and return) for a connection to become readable (or
    /// writable, where frames wait and the send buffer was full) or the watch descriptor to
    /// stir. Returns whether a connection became ready.
    ///
    /// With one connection there is nothing to choose between: the next read and write are
    /// the check (looking first would cost one call more on the message's path), so a zero
    /// time-out returns at once.
    fn wait_ready(&mut self, timeout_ns: Option<u64>) -> Result<bool, MpError> {
        if timeout_ns == Some(0) && self.conns.len() == 1 {
            return Ok(false);
        }
        self.pollfds.clear();
        for c in &self.conns {
            let events = if c.eof {
                0
            } else {
                libc::POLLIN | if c.tx_pending() { libc::POLLOUT } else { 0 }
            };
            self.pollfds.push(libc::pollfd {
                fd: if c.eof { -1 } else { c.fd() },
                events,
                revents: 0,
            });
        }
        if let Some(w) = self.watch {
            self.pollfds.push(libc::pollfd {
                fd: w,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        weft_sys::ppoll_readable(&mut self.pollfds, timeout_ns)
            .map_err(|e| MpError::io("waiting for messages", e))?;
        if self.watch.is_some() && self.pollfds.last().is_some_and(|f| f.revents != 0) {
            return Err(MpError::Interrupted(
                "the coordinator closed its control connection during the run".into(),
            ));
        }
        let mut ready = false;
        for (c, p) in self.conns.iter_mut().zip(&self.pollfds) {
            let gone = p.revents & (libc::POLLHUP | libc::POLLERR) != 0;
            let readable = gone || p.revents & libc::POLLIN != 0;
            let writable = gone || p.revents & libc::POLLOUT != 0;
            ready |= (readable && !c.may_read()) || (writable && c.tx_pending() && !c.may_write());
            c.mark_ready(readable, writable);
        }
        Ok(ready)
    }

    fn waiting_for(&self) -> String {
        let from = self.rank.waiting_for();
        let to: Vec<usize> = self
            .conns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.tx_pending())
            .filter_map(|(i, _)| self.conn_peer[i])
            .collect();
        let list = |v: &[usize]| {
            v.iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (from.is_empty(), to.is_empty()) {
            (false, _) => format!(" while waiting for rank {}", list(&from)),
            (true, false) => format!(" while sending to rank {}", list(&to)),
            _ => String::new(),
        }
    }

    fn conn_error(&self, ci: usize, e: io::Error) -> MpError {
        match (self.conn_peer[ci], e.kind()) {
            (
                Some(rank),
                io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted,
            ) => MpError::PeerClosed { rank },
            (Some(rank), _) => MpError::io(format!("connection to rank {rank}"), e),
            (None, _) => MpError::io("connection to the local daemon", e),
        }
    }

    fn closed_error(&self, ci: usize) -> MpError {
        match self.conn_peer[ci] {
            Some(rank) => MpError::PeerClosed { rank },
            None => MpError::Interrupted("the local daemon closed its connection".into()),
        }
    }
}

/// Checks a peer's hello against this rank's view of the run.
pub fn check_hello(
    me: usize,
    ranks: usize,
    digest: u64,
    peer: usize,
    peer_ranks: u16,
    peer_digest: u64,
) -> Result<(), MpError> {
    if usize::from(peer_ranks) != ranks {
        return Err(MpError::Mismatch(format!(
            "rank {peer} runs with {peer_ranks} ranks, rank {me} with {ranks}"
        )));
    }
    if peer_digest != digest {
        return Err(MpError::Mismatch(format!(
            "rank {peer} runs another plan than rank {me} (patterns, sizes, iterations, route \
             or weft version differ): refused at start"
        )));
    }
    Ok(())
}

mod recv;
#[cfg(test)]
mod tests;
