//! The executor: runs a rank's [`Plan`] over its connections, one step at a time.
//!
//! A step's sends are queued on their connections and its receives posted; the executor then
//! writes and reads on every connection until the step is complete, like an MPI progress engine:
//! a message that arrives before its receive is posted is kept (the unexpected queue, bounded)
//! and handed over when the receive comes, so that no pair of ranks can block each other on full
//! socket buffers. Messages from one rank are matched in order, and a message of another length
//! than its receive is refused (the ranks run different plans).
//!
//! Waiting polls the sockets without blocking (yielding the CPU between polls) for `spin`, then
//! sleeps in `poll`; a rank
//! that sees nothing move for the time-out fails, naming the ranks it waits for. A connection
//! that ends without the peer's `bye` fails the run at once, and so does a peer's `abort`.
//!
//! The connections are either one per peer (the direct route) or a single one to the rank's
//! daemon, which carries every peer's frames in chunks (the PVM daemon route, [`super::pvmd`]).

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use weft_model::mp::{Op, Plan, Region, Step};

use super::conn::{Body, Conn, Fill};
use super::error::MpError;
use super::wire::{self, HEADER_LEN, Header, Kind};

/// Remaining payload above which a chunk is read straight into its destination rather than
/// through the staging buffer, bytes.
const DIRECT_READ: usize = 64 * 1024;

/// Most bytes kept for messages that arrived before their receives.
const MAX_UNEXPECTED: usize = 256 << 20;

/// Longest single `poll` sleep, so that the watch descriptor and time-out are looked at.
const POLL_SLICE: Duration = Duration::from_millis(100);

/// How long [`Engine::finish`] waits for the peers' goodbyes.
const BYE_WAIT: Duration = Duration::from_secs(5);

/// How the executor waits and gives up.
#[derive(Clone, Copy, Debug)]
pub struct Waiting {
    /// Fail when nothing moves for this long.
    pub timeout: Duration,
    /// Spin on non-blocking reads this long before sleeping in `poll`.
    pub spin: Duration,
}

/// What the executor moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Messages sent.
    pub messages_sent: u64,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Messages that arrived before their receive was posted.
    pub unexpected: u64,
}

#[derive(Clone, Copy, Debug)]
enum Rx {
    Header,
    Chunk { hdr: Header, got: usize },
    Control { hdr: Header },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PostState {
    Pending,
    Filling,
    Done,
}

#[derive(Debug)]
struct Posted {
    src: usize,
    at: Region,
    state: PostState,
}

#[derive(Clone, Copy, Debug)]
enum Dest {
    Posted(usize),
    Unexpected,
}

#[derive(Clone, Copy, Debug)]
struct Partial {
    seq: u32,
    total: usize,
    got: usize,
    dest: Dest,
}

#[derive(Debug)]
struct Unexpected {
    data: Vec<u8>,
    complete: bool,
}

/// One rank's executor over its connections.
#[derive(Debug)]
pub struct Engine {
    me: usize,
    ranks: usize,
    conns: Vec<Conn>,
    /// The peer a connection carries (`None`: the daemon, which carries all).
    conn_peer: Vec<Option<usize>>,
    /// Connection index per peer.
    route: Vec<usize>,
    rx: Vec<Rx>,
    tx_seq: Vec<u32>,
    rx_seq: Vec<u32>,
    partial: Vec<Option<Partial>>,
    unexpected: Vec<VecDeque<Unexpected>>,
    unexpected_bytes: usize,
    posted: Vec<Posted>,
    bye: Vec<bool>,
    hello: Vec<Option<(u16, u64)>>,
    waiting: Waiting,
    watch: Option<RawFd>,
    stats: EngineStats,
}

impl Engine {
    /// An executor over one connection per peer (`peers[r]` for every rank `r` but `me`).
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

    /// An executor whose messages all go through one connection to its daemon.
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
        Engine {
            me,
            ranks,
            conns,
            conn_peer,
            route,
            rx: vec![Rx::Header; n],
            tx_seq: vec![0; ranks],
            rx_seq: vec![0; ranks],
            partial: vec![None; ranks],
            unexpected: (0..ranks).map(|_| VecDeque::new()).collect(),
            unexpected_bytes: 0,
            posted: Vec::new(),
            bye: vec![false; ranks],
            hello: vec![None; ranks],
            waiting,
            watch: None,
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

    /// Runs every step of `plan` on `buf` (at least `plan.buffer` bytes).
    pub fn run_plan(&mut self, plan: &Plan, buf: &mut [u8]) -> Result<(), MpError> {
        for (i, step) in plan.steps.iter().enumerate() {
            self.run_step(step, buf)?;
            plan.apply_locals(i, buf);
        }
        Ok(())
    }

    /// Runs one step's communication.
    pub fn run_step(&mut self, step: &Step, buf: &mut [u8]) -> Result<(), MpError> {
        self.posted.clear();
        for op in &step.ops {
            match *op {
                Op::Send { peer, at } => {
                    let ci = self.conn_of(peer)?;
                    let seq = self.tx_seq[peer];
                    self.tx_seq[peer] = seq.wrapping_add(1);
                    let h = Header::data(self.me as u16, peer as u16, seq, at.len as u32);
                    self.conns[ci].queue(&h, Body::Region(at));
                    self.stats.messages_sent += 1;
                    self.stats.bytes_sent += at.len as u64;
                }
                Op::Recv { peer, at } => {
                    self.conn_of(peer)?;
                    self.posted.push(Posted {
                        src: peer,
                        at,
                        state: PostState::Pending,
                    });
                }
            }
        }
        for src in 0..self.ranks {
            self.match_unexpected(src, buf)?;
        }
        self.progress_until(buf, |e| {
            e.posted.iter().all(|p| p.state == PostState::Done)
                && !e.conns.iter().any(Conn::tx_pending)
        })
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
        self.progress_until(&mut [], |e| {
            (0..e.ranks).all(|r| r == me || e.hello[r].is_some())
                && !e.conns.iter().any(Conn::tx_pending)
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
        let r = self.progress_until(&mut [], |e| {
            (0..e.ranks).all(|r| r == me || e.bye[r]) && !e.conns.iter().any(Conn::tx_pending)
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

    /// Reads and writes until `done` holds, spinning then polling, within the time-out.
    fn progress_until(
        &mut self,
        buf: &mut [u8],
        done: impl Fn(&Engine) -> bool,
    ) -> Result<(), MpError> {
        let mut last = Instant::now();
        let mut spin_until: Option<Instant> = None;
        loop {
            let mut moved = false;
            for ci in 0..self.conns.len() {
                if self.conns[ci].tx_pending() {
                    let n = self.conns[ci]
                        .flush(buf)
                        .map_err(|e| self.conn_error(ci, e))?;
                    moved |= n > 0;
                }
            }
            // A step of sends is complete once they are written: no read on the way out
            // (each `recv` that finds nothing is a system call on the message's path).
            if moved && done(self) {
                return Ok(());
            }
            for ci in 0..self.conns.len() {
                moved |= self.pump(ci, buf)?;
            }
            if done(self) {
                return Ok(());
            }
            let now = Instant::now();
            if moved {
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
            self.sleep(left.min(POLL_SLICE))?;
        }
    }

    /// Sleeps in `poll` until a connection is readable (or writable, where frames wait) or the
    /// watch descriptor stirs.
    fn sleep(&mut self, t: Duration) -> Result<(), MpError> {
        let mut fds: Vec<libc::pollfd> = self
            .conns
            .iter()
            .map(|c| libc::pollfd {
                fd: c.fd(),
                events: libc::POLLIN | if c.tx_pending() { libc::POLLOUT } else { 0 },
                revents: 0,
            })
            .collect();
        if let Some(w) = self.watch {
            fds.push(libc::pollfd {
                fd: w,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let ns = t.as_nanos().clamp(1_000_000, u64::MAX as u128) as u64;
        weft_sys::ppoll_readable(&mut fds, Some(ns))
            .map_err(|e| MpError::io("waiting for messages", e))?;
        if self.watch.is_some() && fds.last().is_some_and(|f| f.revents != 0) {
            return Err(MpError::Interrupted(
                "the coordinator closed its control connection during the run".into(),
            ));
        }
        Ok(())
    }

    fn waiting_for(&self) -> String {
        let mut from: Vec<usize> = self
            .posted
            .iter()
            .filter(|p| p.state != PostState::Done)
            .map(|p| p.src)
            .collect();
        from.dedup();
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

    /// Parses and delivers whatever connection `ci` has; returns whether anything moved.
    fn pump(&mut self, ci: usize, buf: &mut [u8]) -> Result<bool, MpError> {
        let mut moved = false;
        loop {
            match self.rx[ci] {
                Rx::Header => {
                    if self.conns[ci].staged().len() < HEADER_LEN {
                        if moved {
                            // A frame was just taken: let the caller see whether the step is
                            // complete before reading again (that read would find nothing).
                            return Ok(moved);
                        }
                        match self.fill(ci)? {
                            Fill::Data(_) => {
                                moved = true;
                                continue;
                            }
                            Fill::WouldBlock => return Ok(moved),
                            Fill::Eof => return self.on_eof(ci).map(|()| moved),
                        }
                    }
                    let hdr =
                        Header::parse(self.conns[ci].staged()).map_err(|source| MpError::Wire {
                            rank: self.conn_peer[ci].unwrap_or(self.me),
                            source,
                        })?;
                    self.check_addressing(ci, &hdr)?;
                    self.conns[ci].consume(HEADER_LEN);
                    moved = true;
                    if hdr.kind == Kind::Data {
                        self.start_chunk(&hdr)?;
                        self.rx[ci] = Rx::Chunk { hdr, got: 0 };
                    } else {
                        self.rx[ci] = Rx::Control { hdr };
                    }
                }
                Rx::Chunk { hdr, got } => {
                    let len = hdr.len as usize;
                    if got == len {
                        self.end_chunk(&hdr, buf)?;
                        self.rx[ci] = Rx::Header;
                        continue;
                    }
                    let staged = self.conns[ci].staged().len();
                    if staged > 0 {
                        let n = staged.min(len - got);
                        let src = hdr.src as usize;
                        let at = hdr.offset as usize + got;
                        let data = &self.conns[ci].staged()[..n];
                        match self.partial[src].map(|p| p.dest) {
                            Some(Dest::Posted(i)) => {
                                let o = self.posted[i].at.offset + at;
                                buf[o..o + n].copy_from_slice(data);
                            }
                            _ => {
                                if let Some(u) = self.unexpected[src].back_mut() {
                                    u.data[at..at + n].copy_from_slice(data);
                                }
                            }
                        }
                        self.conns[ci].consume(n);
                        self.rx[ci] = Rx::Chunk { hdr, got: got + n };
                        moved = true;
                        continue;
                    }
                    let remaining = len - got;
                    let r = if remaining >= DIRECT_READ {
                        let src = hdr.src as usize;
                        let at = hdr.offset as usize + got;
                        let dst: &mut [u8] = match self.partial[src].map(|p| p.dest) {
                            Some(Dest::Posted(i)) => {
                                let o = self.posted[i].at.offset + at;
                                &mut buf[o..o + remaining]
                            }
                            _ => match self.unexpected[src].back_mut() {
                                Some(u) => &mut u.data[at..at + remaining],
                                None => &mut [],
                            },
                        };
                        let r = self.conns[ci].read_direct(dst);
                        if let Ok(Fill::Data(n)) = r {
                            self.rx[ci] = Rx::Chunk { hdr, got: got + n };
                        }
                        r
                    } else {
                        self.conns[ci].fill()
                    };
                    match r.map_err(|e| self.conn_error(ci, e))? {
                        Fill::Data(_) => moved = true,
                        Fill::WouldBlock => return Ok(moved),
                        Fill::Eof => return Err(self.closed_error(ci)),
                    }
                }
                Rx::Control { hdr } => {
                    let len = hdr.len as usize;
                    if self.conns[ci].staged().len() < len {
                        match self.fill(ci)? {
                            Fill::Data(_) => {
                                moved = true;
                                continue;
                            }
                            Fill::WouldBlock => return Ok(moved),
                            Fill::Eof => return Err(self.closed_error(ci)),
                        }
                    }
                    let payload = self.conns[ci].staged()[..len].to_vec();
                    self.conns[ci].consume(len);
                    self.rx[ci] = Rx::Header;
                    moved = true;
                    self.on_control(&hdr, &payload)?;
                }
            }
        }
    }

    fn fill(&mut self, ci: usize) -> Result<Fill, MpError> {
        self.conns[ci].fill().map_err(|e| self.conn_error(ci, e))
    }

    /// A connection ended between frames: fine once its peers said goodbye.
    fn on_eof(&mut self, ci: usize) -> Result<(), MpError> {
        let done = match self.conn_peer[ci] {
            Some(r) => self.bye[r],
            None => (0..self.ranks).all(|r| r == self.me || self.bye[r]),
        };
        if done {
            Ok(())
        } else {
            Err(self.closed_error(ci))
        }
    }

    fn check_addressing(&self, ci: usize, hdr: &Header) -> Result<(), MpError> {
        let src = hdr.src as usize;
        let ok_src = match self.conn_peer[ci] {
            Some(p) => src == p,
            None => src < self.ranks && src != self.me,
        };
        if !ok_src || hdr.dst as usize != self.me {
            return Err(MpError::Mismatch(format!(
                "rank {} received a frame from rank {} for rank {} on the connection of {}",
                self.me,
                hdr.src,
                hdr.dst,
                self.conn_peer[ci].map_or("its daemon".to_string(), |p| format!("rank {p}"))
            )));
        }
        Ok(())
    }

    fn on_control(&mut self, hdr: &Header, payload: &[u8]) -> Result<(), MpError> {
        let src = hdr.src as usize;
        match hdr.kind {
            Kind::Abort => Err(MpError::PeerAborted {
                rank: src,
                reason: String::from_utf8_lossy(payload).into_owned(),
            }),
            Kind::Bye => {
                self.bye[src] = true;
                Ok(())
            }
            Kind::Hello => {
                let h = wire::parse_hello(payload).ok_or_else(|| {
                    MpError::Mismatch(format!("rank {src} sent a malformed hello"))
                })?;
                self.hello[src] = Some(h);
                Ok(())
            }
            Kind::Data => Ok(()),
        }
    }

    /// The first chunk of a message decides where it goes: the first pending receive from its
    /// sender if nothing from that sender is queued, else the unexpected queue.
    fn start_chunk(&mut self, hdr: &Header) -> Result<(), MpError> {
        let src = hdr.src as usize;
        if hdr.offset != 0 {
            return match self.partial[src] {
                Some(p)
                    if p.seq == hdr.seq
                        && p.got == hdr.offset as usize
                        && p.total == hdr.total as usize =>
                {
                    Ok(())
                }
                _ => Err(MpError::Mismatch(format!(
                    "rank {src} sent a chunk at offset {} of message {} that does not continue \
                     the message in progress",
                    hdr.offset, hdr.seq
                ))),
            };
        }
        if self.partial[src].is_some() {
            return Err(MpError::Mismatch(format!(
                "rank {src} started message {} before finishing the previous one",
                hdr.seq
            )));
        }
        if hdr.seq != self.rx_seq[src] {
            return Err(MpError::Mismatch(format!(
                "rank {src} sent message {} where {} was next: messages lost or reordered",
                hdr.seq, self.rx_seq[src]
            )));
        }
        self.rx_seq[src] = hdr.seq.wrapping_add(1);
        let total = hdr.total as usize;
        let pending = self
            .posted
            .iter()
            .position(|p| p.src == src && p.state == PostState::Pending);
        let dest = match pending {
            Some(i) if self.unexpected[src].is_empty() => {
                let want = self.posted[i].at.len;
                if want != total {
                    return Err(length_mismatch(src, self.me, want, total));
                }
                self.posted[i].state = PostState::Filling;
                Dest::Posted(i)
            }
            _ => {
                if self.unexpected_bytes + total > MAX_UNEXPECTED {
                    return Err(MpError::Mismatch(format!(
                        "more than {} MiB of messages arrived before their receives: the ranks \
                         do not run the same plan",
                        MAX_UNEXPECTED >> 20
                    )));
                }
                self.unexpected_bytes += total;
                self.stats.unexpected += 1;
                self.unexpected[src].push_back(Unexpected {
                    data: vec![0u8; total],
                    complete: false,
                });
                Dest::Unexpected
            }
        };
        self.partial[src] = Some(Partial {
            seq: hdr.seq,
            total,
            got: 0,
            dest,
        });
        Ok(())
    }

    fn end_chunk(&mut self, hdr: &Header, buf: &mut [u8]) -> Result<(), MpError> {
        let src = hdr.src as usize;
        let Some(mut p) = self.partial[src] else {
            return Ok(());
        };
        p.got += hdr.len as usize;
        if p.got < p.total {
            self.partial[src] = Some(p);
            return Ok(());
        }
        self.partial[src] = None;
        match p.dest {
            Dest::Posted(i) => self.posted[i].state = PostState::Done,
            Dest::Unexpected => {
                if let Some(u) = self.unexpected[src].back_mut() {
                    u.complete = true;
                }
                self.match_unexpected(src, buf)?;
            }
        }
        Ok(())
    }

    /// Hands complete queued messages from `src` to pending receives, in order.
    fn match_unexpected(&mut self, src: usize, buf: &mut [u8]) -> Result<(), MpError> {
        while self.unexpected[src].front().is_some_and(|u| u.complete) {
            let Some(i) = self
                .posted
                .iter()
                .position(|p| p.src == src && p.state == PostState::Pending)
            else {
                break;
            };
            let Some(u) = self.unexpected[src].pop_front() else {
                break;
            };
            self.unexpected_bytes -= u.data.len();
            let at = self.posted[i].at;
            if at.len != u.data.len() {
                return Err(length_mismatch(src, self.me, at.len, u.data.len()));
            }
            buf[at.offset..at.end()].copy_from_slice(&u.data);
            self.posted[i].state = PostState::Done;
        }
        Ok(())
    }
}

fn length_mismatch(src: usize, me: usize, want: usize, got: usize) -> MpError {
    MpError::Mismatch(format!(
        "rank {src} sent {got} bytes where rank {me} expected {want}: the ranks run different \
         sizes or patterns"
    ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    use weft_model::mp::{Pattern, Plan};

    const WAIT: Waiting = Waiting {
        timeout: Duration::from_secs(5),
        spin: Duration::from_micros(20),
    };

    /// A full mesh of `n` loopback connections, one `Vec` of peers per rank.
    #[allow(clippy::needless_range_loop)] // each pair fills peers[i][j] and peers[j][i]
    fn mesh(n: usize) -> Vec<Vec<Option<Conn>>> {
        let mut peers: Vec<Vec<Option<Conn>>> =
            (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
        for i in 0..n {
            for j in i + 1..n {
                let l = TcpListener::bind("127.0.0.1:0").unwrap();
                let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
                let (b, _) = l.accept().unwrap();
                peers[i][j] = Some(Conn::new(a).unwrap());
                peers[j][i] = Some(Conn::new(b).unwrap());
            }
        }
        peers
    }

    fn run_all(
        n: usize,
        plans: impl Fn(usize) -> Plan,
        init: impl Fn(usize, &mut [u8]) + Sync,
    ) -> Vec<Vec<u8>> {
        let plans: Vec<Plan> = (0..n).map(plans).collect();
        let handles: Vec<_> = mesh(n)
            .into_iter()
            .enumerate()
            .map(|(r, peers)| {
                let plan = plans[r].clone();
                let mut buf = vec![0u8; plan.buffer];
                init(r, &mut buf);
                std::thread::spawn(move || {
                    let mut e = Engine::direct(r, peers, WAIT).unwrap();
                    for _ in 0..3 {
                        e.run_plan(&plan, &mut buf).unwrap();
                    }
                    e.finish().unwrap();
                    buf
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn allreduce_over_sockets_sums() {
        for pat in ["allreduce-ring", "allreduce-rd"] {
            let p: Pattern = pat.parse().unwrap();
            let n = 5;
            let size = 300_000 * 8;
            let bufs = run_all(
                n,
                |r| p.plan(r, n, size).unwrap(),
                |r, b| {
                    for (i, c) in b[..size].chunks_exact_mut(8).enumerate() {
                        c.copy_from_slice(&((r + i % 7) as f64).to_le_bytes());
                    }
                },
            );
            // Three iterations: after the first every rank holds the sum S, then n S, n² S.
            for b in &bufs {
                for (i, c) in b[..size].chunks_exact(8).enumerate().step_by(9973) {
                    let s: f64 = (0..n).map(|r| (r + i % 7) as f64).sum();
                    let got = f64::from_le_bytes(c.try_into().unwrap());
                    assert_eq!(got, s * (n * n) as f64, "{pat} lane {i}");
                }
            }
        }
    }

    #[test]
    fn every_pattern_and_a_skeleton_run_over_sockets() {
        let n = 4;
        for p in Pattern::ALL {
            run_all(n, |r| p.plan(r, n, 70_000).unwrap(), |_, _| {});
        }
        let bt: Pattern = "bt.S".parse().unwrap();
        run_all(n, |r| bt.plan(r, n, 0).unwrap(), |_, _| {});
        let lu: Pattern = "lu.S".parse().unwrap();
        run_all(n, |r| lu.plan(r, n, 0).unwrap(), |_, _| {});
    }

    #[test]
    fn a_closed_peer_fails_the_run_at_once() {
        let mut m = mesh(2);
        let p1 = m.pop().unwrap();
        let p0 = m.pop().unwrap();
        drop(p1);
        let mut e = Engine::direct(0, p0, WAIT).unwrap();
        let plan = Pattern::PingPong.plan(0, 2, 8).unwrap();
        let t = Instant::now();
        let err = e.run_plan(&plan, &mut [0u8; 8]).unwrap_err();
        assert!(matches!(err, MpError::PeerClosed { rank: 1 }), "{err}");
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_length_mismatch_is_refused() {
        let m = mesh(2);
        let hs: Vec<_> = m
            .into_iter()
            .enumerate()
            .map(|(r, peers)| {
                std::thread::spawn(move || {
                    let size = if r == 0 { 8 } else { 16 };
                    let plan = Pattern::Exchange.plan(r, 2, size).unwrap();
                    let mut e = Engine::direct(r, peers, WAIT).unwrap();
                    let mut buf = vec![0u8; plan.buffer];
                    e.run_plan(&plan, &mut buf)
                })
            })
            .collect();
        let errs: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(
            errs.iter()
                .any(|e| matches!(e, Err(MpError::Mismatch(m)) if m.contains("expected"))),
            "{errs:?}"
        );
    }
}
