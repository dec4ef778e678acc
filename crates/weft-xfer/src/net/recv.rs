//! The receiving driver: completes a sender's handshake, binds K UDP sockets per session to
//! stripe data over, runs the [`Receiver`] core, and writes buffers on a writer thread so the
//! network side keeps receiving while the disk works. The accept loop is in [`super::accept`].

use std::collections::HashMap;
use std::io::Read;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Instant as StdInstant, SystemTime, UNIX_EPOCH};

use weft_model::{Duration, Instant};

use super::ctl::CtlConn;
use super::recv_pipeline::{Job, JobDone, Pipeline};
use super::store::{self, Entry, Opened, Store};
use super::stripe::{self, StripeLog};
use super::{SessionParams, XferError, server_handshake, sys};
use crate::auth::Key;
use crate::proto::{BlockHasher, Receiver, ReceiverConfig, ReceiverEvent, ReceiverStats};
use crate::wire::data::MAX_DATAGRAM;
use crate::wire::{Control, Mode, RefuseCode};

/// Datagrams fetched per `recvmmsg`.
const BATCH: usize = 32;

/// Receiver limits and parameters.
#[derive(Debug, Clone)]
pub struct RecvOptions {
    /// UDP sockets per session to stripe data over (K).
    pub sockets: u16,
    /// Pre-shared key; `None` accepts any sender.
    pub key: Option<Key>,
    /// Largest file accepted, bytes.
    pub max_file: u64,
    /// Largest buffer accepted, bytes.
    pub max_buffer: u32,
    /// Most buffers in flight granted to a sender.
    pub max_window: u16,
    /// Memory for buffers per session, bytes (window times buffer size must fit).
    pub max_memory: u64,
    /// Wait after `End` for datagrams still in flight.
    pub settle: Duration,
    /// Give up on a sender silent for this long.
    pub timeout: Duration,
    /// Give up on a sender that makes no progress for this long while a buffer it started is
    /// in flight (`None`: max(10 round trips, 5 s); zero: never).
    pub stall: Option<Duration>,
    /// Stop after this many sessions (`None`: serve forever).
    pub max_sessions: Option<u64>,
    /// Sessions served at once; more are refused.
    pub max_concurrent: usize,
    /// Files a session may have open at once (each holds a part file and a journal open);
    /// further offers are refused until one ends (`--max-open-files`).
    pub max_open_files: usize,
    /// BLAKE3s of verified buffers kept per session for the whole-file digests (about 50 bytes
    /// each); past it the buffers are read back from disk at the end instead (with `--discard`,
    /// such a file fails), and [`SessionReport::hashes_not_kept`] counts them
    /// (`--max-known-hashes`).
    pub max_known_hashes: usize,
    /// Bounds on connections that have not completed their handshake (`--hello-timeout`,
    /// `--max-unidentified`, `--max-unidentified-per-source`).
    pub lobby: weft_gate::LobbyLimits,
    /// Check the whole-file digest by reading the whole file back from disk. Without it the
    /// digest is computed from the hashes of the buffers as verified in memory before they were
    /// written, and only buffers resumed from a journal are read back.
    pub read_back: bool,
    /// Verify and then drop what arrives instead of writing it (the ttcp `-s` sink, iperf3's
    /// default): measures the network and the protocol without the file system. Reliable mode
    /// still checks every buffer's BLAKE3 and the whole-file digest.
    pub discard: bool,
    /// Serve senders from any address without a key (`--open`). Without it and without a key
    /// the receiver is in protected mode: it serves senders on its own host (loopback) only.
    pub open: bool,
    /// The buffer memory of all sessions together (`--max-total-memory`): `max_memory` bounds
    /// one session, this bounds what `max_concurrent` sessions may pin at once.
    pub memory: MemoryBudget,
}

/// A session's reservation of buffer memory, given back when dropped.
struct Held<'a> {
    budget: &'a MemoryBudget,
    bytes: u64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.budget.release(&mut self.bytes);
    }
}

/// Buffer memory shared by a receiver's sessions: each reserves its window of buffers before
/// it accepts a file, and gives the reservation back when it ends.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    limit: u64,
    used: std::sync::Arc<Mutex<u64>>,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        MemoryBudget {
            limit,
            used: std::sync::Arc::new(Mutex::new(0)),
        }
    }

    /// The limit, bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn used(&self) -> std::sync::MutexGuard<'_, u64> {
        self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Grows `held` (this session's reservation, bytes) to `want` if the budget has room;
    /// `Err` with the bytes in use by all sessions otherwise.
    fn grow(&self, held: &mut u64, want: u64) -> Result<(), u64> {
        if want <= *held {
            return Ok(());
        }
        let mut used = self.used();
        let more = want - *held;
        if used.saturating_add(more) > self.limit {
            return Err(*used);
        }
        *used += more;
        *held = want;
        Ok(())
    }

    /// Gives a session's reservation back.
    fn release(&self, held: &mut u64) {
        let mut used = self.used();
        *used = used.saturating_sub(*held);
        *held = 0;
    }
}

/// What happened to one received file.
#[derive(Debug, Clone)]
pub struct RecvFile {
    /// Name as sent.
    pub name: String,
    /// Size, bytes.
    pub size: u64,
    /// In place under its final name.
    pub ok: bool,
    /// Why not, or details.
    pub msg: String,
    /// Byte ranges `(offset, len)` lost and zero-filled (unreliable modes).
    pub gaps: Vec<(u64, u64)>,
}

/// The outcome of one session.
#[derive(Debug, Clone)]
pub struct SessionReport {
    /// The sender.
    pub peer: Option<SocketAddr>,
    /// Mode, once known.
    pub mode: Option<Mode>,
    /// Files offered.
    pub files: Vec<RecvFile>,
    /// Counters.
    pub stats: ReceiverStats,
    /// Duration of the session.
    pub elapsed: Duration,
    /// Why the session ended early, if it did.
    pub error: Option<String>,
    /// Verified buffers whose BLAKE3 was not kept (past `max_known_hashes`).
    pub hashes_not_kept: u64,
    /// Payload bytes of the buffers written (or verified and dropped with `--discard`).
    pub bytes_written: u64,
    /// The buffers' checksum (reliable mode), once the handshake settled it.
    pub checksum: Option<BlockHasher>,
    /// CPU time of the whole receiving process (user + system, all threads) over the session;
    /// sessions served at the same time are each charged all of it.
    pub cpu: Duration,
}

pub use super::accept::{ServeSummary, serve};

struct FileSlot {
    /// The file being written; `None` with `--discard`.
    opened: Option<Opened>,
    report: usize,
    /// Size, bytes.
    size: u64,
    /// Buffer size, bytes.
    buffer_size: u32,
    /// BLAKE3 of each buffer verified in memory before it was written, by buffer index.
    hashes: HashMap<u32, [u8; 32]>,
    /// This session's stripe of the file (MBTP over separate receivers): where each buffer
    /// went in it, for the manifest.
    stripe: Option<StripeLog>,
}

/// A sender that has completed its handshake: its control connection, the UDP sockets it
/// stripes data over, and what the handshake settled.
pub struct Admitted {
    /// The control connection (authenticated if the receiver has a key).
    pub conn: CtlConn,
    socks: Vec<UdpSocket>,
    mode: Mode,
    params: SessionParams,
    started: StdInstant,
}

/// Reads a sender's hello, binds the session's UDP sockets and completes the handshake (the
/// caller bounds how long that may take: see [`super::accept`]).
pub fn handshake(stream: TcpStream, opts: &RecvOptions) -> Result<Admitted, XferError> {
    let started = StdInstant::now();
    let mut conn =
        CtlConn::new(stream).map_err(|e| XferError::io("setting up the control connection", e))?;
    let peer = conn.peer().map_err(|e| XferError::io("peer address", e))?;
    if opts.key.is_none() && !opts.open && !peer.ip().to_canonical().is_loopback() {
        // Protected mode: a keyless receiver left running writes files for its own host only.
        let msg = format!(
            "this receiver has no key and serves only senders on its own host (protected mode); \
             run it with --key-file (and weft send with the same) or with --open to serve {}",
            peer.ip()
        );
        conn.queue(&Control::Refuse {
            code: RefuseCode::Auth,
            msg: msg.clone(),
        });
        let _ = conn.flush_all(1000);
        return Err(XferError::Auth(msg));
    }
    let local_ip = conn
        .local()
        .map_err(|e| XferError::io("local address", e))?
        .ip();
    let mut socks = Vec::new();
    let bind = || {
        for _ in 0..opts
            .sockets
            .clamp(1, crate::wire::control::MAX_PORTS as u16)
        {
            let u = UdpSocket::bind(SocketAddr::new(local_ip, 0))
                .map_err(|e| XferError::io("binding a UDP socket", e))?;
            sys::set_buffers(&u, 32 << 20);
            // The reports time rounds by when they reached this host (see `proto::rate`).
            sys::enable_rx_timestamps(&u);
            u.set_nonblocking(true)
                .map_err(|e| XferError::io("UDP socket", e))?;
            socks.push(u);
        }
        Ok(socks
            .iter()
            .filter_map(|s| s.local_addr().ok().map(|a| a.port()))
            .collect())
    };
    let (mode, params) = server_handshake(&mut conn, opts.key.as_ref(), bind, opts.max_window)?;
    conn.watch_peer();
    Ok(Admitted {
        conn,
        socks,
        mode,
        params,
        started,
    })
}

/// Runs an admitted sender's session to its end. If it fails at this end, the sender is told
/// why (a `Refuse` of code `Failed`) before the connection closes.
pub fn run_session(a: Admitted, store: &Store, opts: &RecvOptions) -> SessionReport {
    let Admitted {
        mut conn,
        socks,
        mode,
        params,
        started,
    } = a;
    let cpu0 = sys::process_cpu();
    let mut rep = SessionReport {
        peer: conn.peer().ok(),
        mode: Some(mode),
        files: Vec::new(),
        stats: ReceiverStats::default(),
        elapsed: Duration::ZERO,
        error: None,
        hashes_not_kept: 0,
        bytes_written: 0,
        checksum: mode.is_reliable().then_some(params.hasher),
        cpu: Duration::ZERO,
    };
    let mut open: HashMap<u32, FileSlot> = HashMap::new();
    let r = session_loop(
        &mut conn, socks, mode, &params, store, opts, &mut rep, &mut open,
    );
    // Whatever is still open stays as part file + journal for --resume.
    for (_, f) in open.drain() {
        let msg = match &f.opened {
            Some(o) => {
                store.close(&o.entry, false);
                "interrupted; the part file and journal are kept for --resume"
            }
            None => "interrupted (--discard: nothing was kept)",
        };
        if let Some(r) = rep.files.get_mut(f.report) {
            r.msg = msg.into();
        }
    }
    if let Err(e) = r {
        if !matches!(e, XferError::PeerClosed) {
            tell_sender(&mut conn, &e);
        }
        rep.error = Some(e.to_string());
    }
    rep.elapsed = Duration::from(started.elapsed());
    rep.cpu = Duration::from(sys::process_cpu().saturating_sub(cpu0));
    rep
}

/// Sends the cause of a failed session to the sender, if it still listens.
fn tell_sender(conn: &mut CtlConn, e: &XferError) {
    conn.queue(&Control::Refuse {
        code: RefuseCode::Failed,
        msg: e.to_string(),
    });
    let _ = conn.flush_all(1000);
}

/// The session's steps: the [`Receiver`] core and the [`Pipeline`] threads set up, then, each
/// turn until the sender's `Bye` is answered ([`Session::run`]): wait for something to do, the
/// datagrams, the sender's control messages, the buffers the pipeline has written, the core's
/// timers and a check that the sender still makes progress, the core's events (files offered,
/// buffers to write, files ended), and the core's control messages. The pipeline is stopped and
/// the core's counts kept in `rep` however the session ends.
#[allow(clippy::too_many_arguments)] // the session's parts, each used throughout the loop
fn session_loop(
    conn: &mut CtlConn,
    socks: Vec<UdpSocket>,
    mode: Mode,
    params: &SessionParams,
    store: &Store,
    opts: &RecvOptions,
    rep: &mut SessionReport,
    open: &mut HashMap<u32, FileSlot>,
) -> Result<(), XferError> {
    // This session's share of --max-total-memory, given back however the session ends.
    let reserved = Held {
        budget: &opts.memory,
        bytes: 0,
    };
    let rx = receiver_core(conn, mode, params, opts);
    let pipeline = Pipeline::start()?;
    let mut fds = vec![conn.fd(), pipeline.wake.as_raw_fd()];
    fds.extend(socks.iter().map(|s| s.as_raw_fd()));
    let mut s = Session {
        conn,
        socks,
        mode,
        params,
        store,
        opts,
        rep,
        open,
        reserved,
        rx,
        pipeline,
        epoch: StdInstant::now(),
        bufs: (0..BATCH).map(|_| vec![0u8; MAX_DATAGRAM]).collect(),
        lens: vec![0usize; BATCH],
        stamps: vec![None; BATCH],
        fds,
        last_heard: StdInstant::now(),
        finished: false,
        known_hashes: 0,
    };
    let result = s.run();
    let Session {
        pipeline, rx, rep, ..
    } = s;
    pipeline.stop();
    rep.stats = rx.stats().clone();
    result
}

/// The receiver core of a session, its buffers bounded by the receiver's memory limits and its
/// stall bound set from the control connection's round trip.
fn receiver_core(
    conn: &CtlConn,
    mode: Mode,
    params: &SessionParams,
    opts: &RecvOptions,
) -> Receiver {
    let mut rx = Receiver::new(ReceiverConfig {
        mode,
        session: params.session,
        window: params.window as u32,
        max_buffer: opts
            .max_buffer
            .min((opts.max_memory / params.window.max(1) as u64).min(u32::MAX as u64) as u32),
        max_packet: crate::wire::data::MAX_PAYLOAD as u32,
        max_file: opts.max_file,
        settle: opts.settle,
        arrival_reports: params.version >= crate::wire::control::ARRIVAL_VERSION,
    });
    let bound = crate::proto::stall_bound(opts.stall, conn.rtt());
    rx.set_stall_bound((bound > Duration::ZERO).then_some(bound));
    rx
}

/// One session's state between its steps.
struct Session<'a> {
    conn: &'a mut CtlConn,
    socks: Vec<UdpSocket>,
    mode: Mode,
    params: &'a SessionParams,
    store: &'a Store,
    opts: &'a RecvOptions,
    rep: &'a mut SessionReport,
    open: &'a mut HashMap<u32, FileSlot>,
    reserved: Held<'a>,
    rx: Receiver,
    pipeline: Pipeline,
    /// The core's clock starts here.
    epoch: StdInstant,
    /// Datagrams of a batch, their lengths and the kernel's arrival stamps.
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    stamps: Vec<Option<std::time::Duration>>,
    /// The control connection, the pipeline's wake-up and the data sockets.
    fds: Vec<std::os::fd::RawFd>,
    last_heard: StdInstant,
    finished: bool,
    /// Buffer hashes kept over all the session's open files (bounded by max_known_hashes).
    known_hashes: usize,
}

impl Session<'_> {
    /// The turns of the session until the sender has finished and been answered.
    fn run(&mut self) -> Result<(), XferError> {
        let mut first_pass = true;
        loop {
            // The handshake may have read the first messages already (a sender without a key
            // does not wait for Welcome): the first pass takes them without waiting.
            self.wait(std::mem::take(&mut first_pass))?;
            self.receive_datagrams()?;
            if self.read_control()? {
                return Ok(());
            }
            self.take_written()?;
            let now = self.now();
            self.rx.handle_timeout(now);
            self.check_progress()?;
            self.handle_events()?;
            while let Some(c) = self.rx.poll_control() {
                self.conn.queue(&c);
            }
            self.conn.flush()?;
            if self.finished && !self.conn.has_pending_writes() {
                return Ok(());
            }
            if self.last_heard.elapsed() > std::time::Duration::from(self.opts.timeout) {
                return Err(XferError::Timeout("waiting for the sender"));
            }
        }
    }

    /// Nanoseconds since the session started, the receiver core's clock.
    fn now(&self) -> Instant {
        Instant(self.epoch.elapsed().as_nanos() as u64)
    }

    /// Waits until a socket has something or the core's next deadline (at once if `at_once`).
    fn wait(&mut self, at_once: bool) -> Result<(), XferError> {
        let wait = match self.rx.poll_timeout() {
            _ if at_once => 0,
            Some(t) => t.as_nanos().saturating_sub(self.now().as_nanos()),
            None => 100_000_000,
        };
        weft_sys::readable(&self.fds, Some(wait)).map_err(|e| XferError::io("polling", e))?;
        Ok(())
    }

    /// Hands every datagram the data sockets hold to the core, each at the instant the kernel
    /// stamped its arrival. Data first: a round's `End` must not overtake its datagrams
    /// already queued.
    fn receive_datagrams(&mut self) -> Result<(), XferError> {
        for s in &self.socks {
            loop {
                let n = sys::recv_batch(s, &mut self.bufs, &mut self.lens, &mut self.stamps)
                    .map_err(|e| XferError::io("receiving datagrams", e))?;
                if n == 0 {
                    break;
                }
                self.last_heard = StdInstant::now();
                let t = Instant(self.epoch.elapsed().as_nanos() as u64);
                // The kernel stamps arrivals on the wall clock: how long before this read each
                // datagram arrived puts it on the session's clock.
                let wall = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                for i in 0..n {
                    let arrived = self.stamps[i].map(|at| {
                        let late = wall.saturating_sub(at).as_nanos() as u64;
                        Instant(t.as_nanos().saturating_sub(late))
                    });
                    self.rx
                        .handle_datagram_at(t, arrived, &self.bufs[i][..self.lens[i]]);
                }
            }
        }
        // Kernel drops at the data sockets, reported apart from network loss.
        self.rx
            .set_socket_drops(self.socks.iter().map(sys::socket_drops).sum());
        Ok(())
    }

    /// Hands the sender's control messages to the core; `Ok(true)` when the sender closed the
    /// connection after its `Bye`: the session is over.
    fn read_control(&mut self) -> Result<bool, XferError> {
        self.conn.read_available()?;
        loop {
            match self.conn.next_msg() {
                Ok(Some(m)) => {
                    self.last_heard = StdInstant::now();
                    self.finished |= m == Control::Bye;
                    let now = self.now();
                    self.rx.handle_control(now, m)?;
                }
                Ok(None) => return Ok(false),
                Err(XferError::PeerClosed) if self.finished => return Ok(true),
                Err(XferError::PeerClosed) => {
                    return Err(XferError::Local("the sender went away mid-transfer (it closed the control connection: exited or was killed); part files and journals are kept for --resume".into()));
                }
                Err(XferError::PeerSilent(ms)) => {
                    return Err(XferError::Local(format!(
                        "the sender stopped answering mid-transfer: nothing acknowledged on the control connection for {ms} ms (the bound is max(3 x RTO, 2 s)); part files and journals are kept for --resume"
                    )));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The buffers the pipeline has checked and written (or found corrupt) go back to the
    /// core; a write that failed ends the session.
    fn take_written(&mut self) -> Result<(), XferError> {
        let mut drain = [0u8; 256];
        while matches!(self.pipeline.wake.read(&mut drain), Ok(n) if n > 0) {}
        while let Ok((seq, file, index, outcome, data)) = self.pipeline.done.try_recv() {
            match outcome {
                JobDone::Failed(e) => {
                    let name = self
                        .open
                        .get(&file)
                        .and_then(|f| self.rep.files.get(f.report))
                        .map_or("a file".to_string(), |r| format!("{:?}", r.name));
                    return Err(XferError::Local(format!(
                        "{e} writing {name}; the part file and journal are kept for --resume"
                    )));
                }
                JobDone::Corrupt => {
                    self.rx.buffer_corrupt(seq, data);
                    continue;
                }
                JobDone::Written(hash) => {
                    if let Some(h) = hash {
                        self.keep_hash(file, index, h);
                    }
                }
            }
            self.rep.bytes_written += data.len() as u64;
            self.rx.recycle(data);
            self.rx.buffer_written(seq);
            if !self.mode.is_reliable() {
                self.finish_whole_files()?;
            }
        }
        Ok(())
    }

    /// Keeps the verified hash `h` of buffer `index` of `file`: in its stripe's manifest, or
    /// for the whole-file digest while the session keeps fewer than max_known_hashes.
    fn keep_hash(&mut self, file: u32, index: u32, h: [u8; 32]) {
        let Some(f) = self.open.get_mut(&file) else {
            return;
        };
        if let Some(log) = f.stripe.as_mut() {
            log.written(index, &h);
        } else if self.known_hashes < self.opts.max_known_hashes {
            self.known_hashes += usize::from(f.hashes.insert(index, h).is_none());
        } else {
            self.rep.hashes_not_kept += 1;
        }
    }

    /// Unreliable modes: a file is whole when every byte is accounted for.
    fn finish_whole_files(&self) -> Result<(), XferError> {
        for o in self.open.values().filter_map(|f| f.opened.as_ref()) {
            let whole = o
                .entry
                .lock()
                .map(|g| g.all_written() && !g.complete)
                .unwrap_or(false);
            if whole && let Err(e) = store::finish(&o.entry, None) {
                return Err(XferError::Local(e));
            }
        }
        Ok(())
    }

    /// Fails if the sender made no progress for the core's stall bound.
    fn check_progress(&mut self) -> Result<(), XferError> {
        let now = self.now();
        if let Some(s) = self.rx.peer_stalled(now) {
            return Err(XferError::Local(format!(
                "the sender made no progress mid-transfer: {s}; it is stopped, frozen or stuck; part files and journals are kept for --resume"
            )));
        }
        Ok(())
    }

    /// The core's events: files offered, buffers to write, files ended.
    fn handle_events(&mut self) -> Result<(), XferError> {
        while let Some(ev) = self.rx.poll_event() {
            match ev {
                ReceiverEvent::Offer {
                    file,
                    name,
                    size,
                    buffer_size,
                    resume,
                    hash,
                } => self.offer(file, name, size, buffer_size, resume, hash)?,
                ReceiverEvent::Write {
                    seq,
                    file,
                    index,
                    offset,
                    data,
                    gaps,
                    verify,
                } => {
                    let f = self
                        .open
                        .get_mut(&file)
                        .ok_or(XferError::Local("write for a file not open".into()))?;
                    if let Some(r) = self.rep.files.get_mut(f.report) {
                        r.gaps.extend(
                            gaps.iter()
                                .map(|(a, b)| (offset + *a as u64, (*b - *a) as u64)),
                        );
                    }
                    // A stripe's buffers go one after another, in the order they came.
                    let (offset, record) = match f.stripe.as_mut() {
                        Some(log) => (log.place(index, data.len() as u32, gaps), true),
                        None => (offset, false),
                    };
                    let job = Job {
                        seq,
                        file,
                        entry: f.opened.as_ref().map(|o| o.entry.clone()),
                        offset,
                        index,
                        data,
                        verify,
                        hasher: self.params.hasher,
                        record,
                    };
                    self.pipeline
                        .jobs
                        .send(job)
                        .map_err(|_| XferError::Local("writer thread stopped".into()))?;
                }
                ReceiverEvent::FileEnd { file, digest } => {
                    let f = self
                        .open
                        .remove(&file)
                        .ok_or(XferError::Local("end of a file not open".into()))?;
                    self.known_hashes -= f.hashes.len().min(self.known_hashes);
                    let how = (self.mode, &self.params.hasher);
                    let (ok, msg) = end_file(self.store, self.opts, how, &f, &digest);
                    if let Some(r) = self.rep.files.get_mut(f.report) {
                        r.ok = ok;
                        r.msg = msg.clone();
                    }
                    self.rx.file_result(file, ok, msg);
                }
                ReceiverEvent::Finished => self.finished = true,
            }
        }
        Ok(())
    }

    /// File `file` offered: refused if it would pass a limit ([`Session::over_limit`]), else
    /// opened (with `--discard`, its name only checked) and accepted.
    fn offer(
        &mut self,
        file: u32,
        name: String,
        size: u64,
        buffer_size: u32,
        resume: bool,
        hash: [u8; 32],
    ) -> Result<(), XferError> {
        self.rep.files.push(RecvFile {
            name: name.clone(),
            size,
            ok: false,
            msg: String::new(),
            gaps: Vec::new(),
        });
        let report = self.rep.files.len() - 1;
        let refuse = |s: &mut Self, code, msg: String| {
            s.rep.files[report].msg = msg.clone();
            s.rx.reject_file(file, code, msg);
        };
        if let Some(msg) = self.over_limit(buffer_size) {
            refuse(self, RefuseCode::TooLarge, msg);
            return Ok(());
        }
        if self.opts.discard {
            if let Err(msg) = store::validate_name(&name) {
                refuse(self, RefuseCode::Path, msg);
                return Ok(());
            }
            let now = self.now();
            self.rx.accept_file(now, file, Vec::new())?;
            let slot = FileSlot {
                opened: None,
                report,
                size,
                buffer_size,
                hashes: HashMap::new(),
                stripe: None,
            };
            self.open.insert(file, slot);
            return Ok(());
        }
        let req = store::OpenRequest {
            name: &name,
            size,
            buffer_size,
            fingerprint: &hash,
            resume,
            reliable: self.mode.is_reliable(),
            shared: self.mode == Mode::Mbtp && self.params.stripe.is_none(),
            stripe: self.params.stripe,
        };
        match self.store.open_held(&req, Some(self.conn.as_fd())) {
            Ok(opened) => {
                let now = self.now();
                self.rx.accept_file(now, file, opened.have.clone())?;
                let slot = FileSlot {
                    opened: Some(opened),
                    report,
                    size,
                    buffer_size,
                    hashes: HashMap::new(),
                    stripe: self
                        .params
                        .stripe
                        .map(|s| StripeLog::new(&s, &name, size, buffer_size)),
                };
                self.open.insert(file, slot);
            }
            Err((code, msg)) => refuse(self, code, msg),
        }
        Ok(())
    }

    /// Why a file of `buffer_size`-byte buffers cannot be taken now: too many files open, its
    /// window of buffers over the session's memory, or over what all sessions have left (else
    /// that memory is reserved for the session).
    fn over_limit(&mut self, buffer_size: u32) -> Option<String> {
        let (opts, window) = (self.opts, self.params.window);
        if self.open.len() >= opts.max_open_files.max(1) {
            return Some(format!(
                "this receiver takes at most {} files open at once in a session \
                 (its --max-open-files); offer it when another has ended",
                opts.max_open_files.max(1)
            ));
        }
        if buffer_size as u64 * window as u64 > opts.max_memory {
            return Some(format!(
                "{} buffers of {buffer_size} bytes exceed this receiver's memory limit of {} bytes",
                window, opts.max_memory
            ));
        }
        let want = buffer_size as u64 * window as u64;
        if let Err(used) = opts.memory.grow(&mut self.reserved.bytes, want) {
            return Some(format!(
                "{} buffers of {buffer_size} bytes do not fit in this receiver's \
                 memory for all sessions ({used} of its --max-total-memory of {} \
                 bytes in use): try again later, or with smaller buffers",
                window,
                opts.memory.limit()
            ));
        }
        None
    }
}

/// Puts a file whose sender has finished in place (reliable mode: once its whole-file digest
/// matches `digest`) and closes it; says whether it worked and how.
fn end_file(
    store: &Store,
    opts: &RecvOptions,
    (mode, hasher): (Mode, &BlockHasher),
    f: &FileSlot,
    digest: &[u8; 32],
) -> (bool, String) {
    let Some(opened) = &f.opened else {
        return end_discarded(mode, f, digest);
    };
    let entry = &opened.entry;
    if let Some(log) = &f.stripe {
        return end_stripe(store, entry, log);
    }
    let result = if mode.is_reliable() {
        let no_hashes = HashMap::new();
        let known = if opts.read_back {
            &no_hashes
        } else {
            &f.hashes
        };
        store::finish_known(entry, Some(digest), known, hasher)
    } else if entry.lock().map(|g| g.all_written()).unwrap_or(false) {
        store::finish(entry, None)
    } else {
        Ok(())
    };
    let (ok, msg) = match result {
        Ok(()) if entry.lock().map(|g| g.complete).unwrap_or(false) => (true, "in place".into()),
        Ok(()) => (true, "part written; other receivers still writing".into()),
        Err(e) => (false, e),
    };
    store.close(entry, !ok);
    (ok, msg)
}

/// Puts a stripe whose sender has finished in place: its data under `NAME.mbtp-K-of-R`, then its
/// manifest beside it (written last: a stripe without a manifest is incomplete).
fn end_stripe(store: &Store, entry: &Arc<Mutex<Entry>>, log: &StripeLog) -> (bool, String) {
    let m = &log.manifest;
    let result = store::finish(entry, None).and_then(|()| {
        let path = entry
            .lock()
            .map(|g| g.final_path.clone())
            .map_err(|_| "entry lock poisoned".to_string())?;
        let manifest = stripe::manifest_path(&path);
        weft_report::write_atomic(&manifest, m.to_json().as_bytes())
            .map_err(|e| format!("writing {}: {e}", manifest.display()))
    });
    let (ok, msg) = match result {
        Ok(()) => {
            let gaps: usize = m.buffers.iter().map(|b| b.gaps.len()).sum();
            (
                true,
                format!(
                    "stripe {} of {} in place ({} buffers, {gaps} gaps); `weft join` puts the {} stripes together",
                    m.part,
                    m.parts,
                    log.buffers(),
                    m.parts
                ),
            )
        }
        Err(e) => (false, e),
    };
    store.close(entry, !ok);
    (ok, msg)
}

/// `--discard`: in reliable mode the whole-file digest is checked from the BLAKE3s of the
/// buffers verified on arrival; nothing was written.
fn end_discarded(mode: Mode, f: &FileSlot, digest: &[u8; 32]) -> (bool, String) {
    if !mode.is_reliable() {
        return (true, "received and discarded (--discard)".into());
    }
    let n = crate::proto::buffers_in(f.size, f.buffer_size);
    let hashes: Option<Vec<&[u8; 32]>> = (0..n).map(|i| f.hashes.get(&(i as u32))).collect();
    match hashes {
        Some(h) if crate::proto::file_digest(h.iter().copied()) == *digest => {
            (true, "verified and discarded (--discard)".into())
        }
        Some(_) => (
            false,
            "digest of the received data differs from the sender's".into(),
        ),
        None => (
            false,
            "hashes of buffers missing at the end of the file (--discard checks only the buffers \
             whose hashes it kept: raise --max-known-hashes)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn discarded_slot(hashes: &[[u8; 32]]) -> FileSlot {
        FileSlot {
            opened: None,
            report: 0,
            size: 2500,
            buffer_size: 1000,
            hashes: hashes
                .iter()
                .copied()
                .enumerate()
                .map(|(i, h)| (i as u32, h))
                .collect(),
            stripe: None,
        }
    }

    #[test]
    fn a_discarded_file_is_judged_by_its_verified_buffer_hashes() {
        let h: Vec<[u8; 32]> = (0..3u8).map(|i| *blake3::hash(&[i]).as_bytes()).collect();
        let digest = crate::proto::file_digest(&h);
        let (ok, msg) = end_discarded(Mode::Reliable, &discarded_slot(&h), &digest);
        assert!(ok, "{msg}");
        let (ok, msg) = end_discarded(Mode::Reliable, &discarded_slot(&h), &[0; 32]);
        assert!(!ok && msg.contains("differs"), "{msg}");
        let (ok, msg) = end_discarded(Mode::Reliable, &discarded_slot(&h[..2]), &digest);
        assert!(!ok && msg.contains("missing"), "{msg}");
        // Unreliable modes have no digest to check.
        assert!(end_discarded(Mode::Sbtp, &discarded_slot(&[]), &[0; 32]).0);
    }
}
