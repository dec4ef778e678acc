//! One receiving session's turn of steps: wait, datagrams, control, written buffers, timers,
//! progress, the core's events and its control messages, until the sender's `Bye` is answered.

use std::collections::HashMap;
use std::io::Read;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Instant as StdInstant, SystemTime, UNIX_EPOCH};

use weft_model::{Duration, Instant};

use super::ctl::CtlConn;
use super::recv::{FileSlot, RecvFile, RecvOptions, SessionReport};
use super::recv_budget::Held;
use super::recv_end::end_file;
use super::recv_pipeline::{Job, JobDone, Pipeline};
use super::store::{self, Store};
use super::stripe::StripeLog;
use super::{SessionParams, XferError, sys};
use crate::proto::{Receiver, ReceiverConfig, ReceiverEvent};
use crate::wire::data::MAX_DATAGRAM;
use crate::wire::{Control, Mode, RefuseCode};

/// Datagrams fetched per `recvmmsg`.
const BATCH: usize = 32;

/// The session's steps: the [`Receiver`] core and the [`Pipeline`] threads set up, then, each
/// turn until the sender's `Bye` is answered ([`Session::run`]): wait for something to do, the
/// datagrams, the sender's control messages, the buffers the pipeline has written, the core's
/// timers and a check that the sender still makes progress, the core's events (files offered,
/// buffers to write, files ended), and the core's control messages. The pipeline is stopped and
/// the core's counts kept in `rep` however the session ends.
#[allow(clippy::too_many_arguments)] // the session's parts, each used throughout the loop
pub(super) fn session_loop(
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
