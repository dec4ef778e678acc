//! One session of a send: connect, handshake, then the [`Sender`] core over TCP and UDP, with
//! the files read ahead by the reader threads, the datagrams handed to the kernel in batches,
//! and the sender's time accounted as the RIACS study's Table 2 does.

use std::fs::File;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant as StdInstant;

use weft_model::{Duration, Instant, Rate};

use super::ctl::CtlConn;
use super::reader::{Alloc, FileReader, file_reader};
use super::send::{
    FileOutcome, LONG_PATH_WINDOW, Peer, Progress, SendItem, SendOptions, SendReport,
    auto_packet_size, default_window,
};
use super::source::read_block;
use super::sys::Gather;
use super::{Hello, SessionParams, XferError, client_handshake_with, sys};
use crate::proto::{
    BlockHasher, FileMeta, ProtoError, Sender, SenderConfig, SenderEvent, TransmitRef, buffer_len,
};
use crate::wire::data::{HEADER_LEN, MAX_PAYLOAD};
use crate::wire::{Control, Mode};

/// Datagrams handed to the kernel per `sendmmsg`.
const BATCH: usize = 32;

/// Pacing credit a late wake-up may spend at once, milliseconds.
const PACING_BURST_MS: u64 = 4;

/// What the sessions of one send share.
pub(crate) struct Shared<'a> {
    pub(crate) items: &'a [SendItem],
    pub(crate) opts: &'a SendOptions,
    pub(crate) alloc: &'a Arc<Mutex<Alloc>>,
    pub(crate) progress: &'a Progress,
    /// The MBTP session allowed on the network now (0: none).
    pub(crate) token: &'a AtomicUsize,
    /// The first session that failed (0: none): the others stop.
    pub(crate) failed: &'a AtomicUsize,
}

/// Session `me` ([`run_session_inner`]), with a receiver that went away named as such, and,
/// when the send has several receivers, which one.
pub(crate) fn run_session(
    peer: &Peer,
    metas: Vec<FileMeta>,
    shared: &Shared<'_>,
    me: usize,
) -> Result<SendReport, XferError> {
    let opts = shared.opts;
    let kept = if opts.mode.is_reliable() {
        "the receiver keeps what arrived for --resume"
    } else {
        "sbtp and mbtp keep no journal"
    };
    let e = match run_session_inner(peer, metas, shared, me) {
        Ok(r) => return Ok(r),
        Err(XferError::PeerClosed) => XferError::Local(format!(
            "the receiver closed the control connection mid-transfer (it exited or was killed); {kept}"
        )),
        Err(XferError::PeerSilent(ms)) => XferError::Local(format!(
            "the receiver stopped answering mid-transfer: nothing acknowledged on the control \
             connection for {ms} ms (the bound is max(3 x RTO, 2 s)); it died, or the path to it \
             is down; {kept}"
        )),
        Err(e) => e,
    };
    Err(match peer.stripe {
        Some(s) => XferError::Local(format!(
            "receiver {} of {} ({}): {e}",
            s.part, s.parts, peer.addr
        )),
        None => e,
    })
}

/// The session's steps: [`Session::open`] (connect, handshake, the UDP socket and the
/// [`Sender`] core), then, each turn until the core has finished and the control connection is
/// flushed: stop if another session failed, the receiver's control messages, the spent buffers
/// back to the reader, the core's events, the datagrams, the core's control messages, a check
/// that the receiver still makes progress, and the wait for the next pacing slot or message.
fn run_session_inner(
    peer: &Peer,
    metas: Vec<FileMeta>,
    shared: &Shared<'_>,
    me: usize,
) -> Result<SendReport, XferError> {
    let mut s = Session::open(peer, metas, shared, me)?;
    loop {
        s.stop_if_another_failed()?;
        s.read_control()?;
        s.recycle_buffers();
        s.handle_events()?;
        let may_send = s.may_send();
        if may_send {
            s.send_datagrams()?;
        }
        s.release_token();
        s.send_control()?;
        if s.finished && !s.conn.has_pending_writes() {
            break;
        }
        s.check_progress()?;
        s.wait(may_send)?;
    }
    let _ = s.conn.flush_all(2000);
    Ok(s.report())
}

/// One session's state between its steps.
struct Session<'a> {
    shared: &'a Shared<'a>,
    me: usize,
    /// MBTP: the session sends only while it holds [`Shared::token`].
    serialise: bool,
    start: StdInstant,
    conn: CtlConn,
    params: SessionParams,
    welcome_pending: bool,
    udp: UdpSocket,
    /// The receiver's UDP sockets, one per stripe.
    dests: Vec<SocketAddr>,
    packet_size: u32,
    sender: Sender,
    /// The reader thread of the file being sent, reading ahead.
    reader: Option<FileReader>,
    /// Files opened to hash the blocks a resumed transfer does not send again.
    files: Vec<Option<File>>,
    outcomes: Vec<FileOutcome>,
    /// The sender's time, as the RIACS study's Table 2 splits it.
    sync: Duration,
    disk: Duration,
    transfer: Duration,
    /// Datagram headers of a batch; payloads stay in their buffers (gathered by the kernel).
    heads: Vec<[u8; HEADER_LEN]>,
    refs: Vec<TransmitRef>,
    hbuf: Vec<u8>,
    last_heard: StdInstant,
    finished: bool,
    /// UDP GSO pays for datagrams well below 64 KiB; off once the kernel refuses it.
    gso: bool,
}

impl<'a> Session<'a> {
    /// Connects to `peer`, shakes hands and builds the sender core for `metas`.
    fn open(
        peer: &Peer,
        metas: Vec<FileMeta>,
        shared: &'a Shared<'a>,
        me: usize,
    ) -> Result<Self, XferError> {
        let &Shared {
            items, opts, alloc, ..
        } = shared;
        let addr = peer.addr;
        let start = StdInstant::now();
        // A fresh transfer of the first file needs its first buffers whatever the receiver
        // says: reading and hashing them overlaps connecting and the handshake. (Resumed
        // transfers wait for the receiver's list of buffers it has; MBTP sessions share one
        // allocator and read on acceptance; with a key the checksum is keyed by the handshake,
        // so hashing waits for it.)
        let mut reader: Option<FileReader> = None;
        if !opts.resume && opts.mode != Mode::Mbtp && !items.is_empty() && opts.key.is_none() {
            let hasher = BlockHasher::new(opts.checksum, None);
            let most = opts.window.max(LONG_PATH_WINDOW);
            reader = Some(file_reader(items, 0, alloc, opts, (most, hasher))?);
        }
        let (conn, params) = handshake(peer, opts)?;
        let (udp, dests) = data_socket(addr, &params)?;
        let packet_size = opts
            .packet_size
            .unwrap_or_else(|| auto_packet_size(dests[0]))
            .clamp(1, MAX_PAYLOAD as u32)
            .min(opts.buffer_size);
        let cfg = SenderConfig {
            mode: opts.mode,
            packet_size,
            buffer_size: opts.buffer_size,
            window: params.window as u32,
            rate: opts.rate,
            stripes: dests.len() as u32,
            // A woken-late sender may catch up by this much at once: on a loaded host or a VM
            // whose idle CPUs wake late, wake-ups are often 1 ms or more behind, and a smaller
            // allowance loses that time for good (the rate achieved falls below the rate
            // paced).
            burst: Duration::from_millis(PACING_BURST_MS),
            early_probe: params.version >= crate::wire::control::STRIPE_VERSION,
        };
        let mut sender = Sender::new(cfg, params.session, metas);
        let bound = crate::proto::stall_bound(opts.stall, conn.rtt());
        sender.set_stall_bound((bound > Duration::ZERO).then_some(bound));
        let outcomes = items
            .iter()
            .map(|i| FileOutcome {
                name: i.name.clone(),
                size: i.size,
                ok: false,
                msg: String::new(),
                resumed_buffers: 0,
            })
            .collect();
        Ok(Session {
            shared,
            me,
            serialise: opts.mode == Mode::Mbtp,
            start,
            welcome_pending: params.welcome_pending,
            conn,
            udp,
            dests,
            packet_size,
            sender,
            reader,
            files: (0..items.len()).map(|_| None).collect(),
            outcomes,
            sync: Duration::ZERO,
            disk: Duration::ZERO,
            transfer: Duration::ZERO,
            heads: vec![[0; HEADER_LEN]; BATCH],
            refs: Vec::with_capacity(BATCH),
            hbuf: Vec::with_capacity(HEADER_LEN),
            last_heard: StdInstant::now(),
            finished: false,
            gso: packet_size as usize + HEADER_LEN <= 16 * 1024,
            params,
        })
    }

    /// Nanoseconds since the session started, the sender core's clock.
    fn now(&self) -> Instant {
        Instant(self.start.elapsed().as_nanos() as u64)
    }

    fn stop_if_another_failed(&self) -> Result<(), XferError> {
        if self.shared.failed.load(Ordering::Acquire) != 0 {
            return Err(XferError::Local("stopped: another session failed".into()));
        }
        Ok(())
    }

    /// Hands every control message the receiver has sent to the core.
    fn read_control(&mut self) -> Result<(), XferError> {
        self.conn.read_available()?;
        loop {
            match self.conn.next_msg() {
                Ok(Some(Control::Refuse { code, msg })) => {
                    return Err(XferError::refusal(code, msg));
                }
                Ok(Some(Control::Welcome { .. })) if self.welcome_pending => {
                    self.welcome_pending = false
                }
                Ok(Some(_)) if self.welcome_pending => {
                    return Err(ProtoError::Unexpected("message instead of Welcome").into());
                }
                Ok(Some(m)) => self.handle_control(m)?,
                Ok(None) => break,
                Err(XferError::PeerClosed) if self.finished => break,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One control message from the receiver, logged (`-vv`) when it reports on a buffer, and
    /// the progress it made counted.
    fn handle_control(&mut self, m: Control) -> Result<(), XferError> {
        self.last_heard = StdInstant::now();
        let progress_before = self.sender.stats().bytes_done;
        // What the rate controller heard and did (`-vv`): the first thing to look at when a
        // path is used badly.
        let report = match &m {
            Control::Nack {
                buf,
                round,
                rx_rate,
                missing,
                arrival_rate,
                ..
            } => Some((
                *buf,
                *round,
                *rx_rate,
                *arrival_rate,
                missing.iter().map(|(a, e)| e - a).sum::<u32>(),
            )),
            Control::Done {
                buf,
                rx_rate,
                arrival_rate,
                ..
            } => Some((*buf, u32::MAX, *rx_rate, *arrival_rate, 0)),
            _ => None,
        };
        let t = self.now();
        self.sender.handle_control(t, m)?;
        if let Some((buf, round, rx, arrival, missing)) = report {
            tracing::debug!(
                t_ns = t.as_nanos(),
                session = self.me,
                buf,
                round = (round != u32::MAX).then_some(round),
                missing,
                rx_bps = rx,
                arrival_bps = arrival,
                rate_bps = self.sender.rate().map_or(0, Rate::as_bps),
                "report"
            );
        }
        let d = self.sender.stats().bytes_done - progress_before;
        self.shared
            .progress
            .bytes_done
            .fetch_add(d, Ordering::Relaxed);
        Ok(())
    }

    /// Finished buffers go back to the reader to be filled again.
    fn recycle_buffers(&mut self) {
        while let Some(v) = self.sender.take_spent() {
            if let Some((_, _, recycle)) = &self.reader {
                let _ = recycle.send(v);
            }
        }
    }

    /// The core's events: buffers it needs, files accepted, refused and done.
    fn handle_events(&mut self) -> Result<(), XferError> {
        while let Some(ev) = self.sender.poll_event() {
            match ev {
                SenderEvent::NeedBuffer { file } => self.provide_buffer(file)?,
                SenderEvent::FileAccepted { file, have } => self.file_accepted(file, have)?,
                SenderEvent::FileRejected { file, code, msg } => {
                    if let Some(o) = self.outcomes.get_mut(file as usize) {
                        o.msg = format!("refused ({code:?}): {msg}");
                    }
                    self.files[file as usize] = None;
                }
                SenderEvent::FileDone { file, ok, msg } => {
                    if let Some(o) = self.outcomes.get_mut(file as usize) {
                        o.ok = ok;
                        o.msg = msg;
                    }
                    self.files[file as usize] = None;
                }
                SenderEvent::BufferDone { lost, .. } => {
                    self.shared
                        .progress
                        .packets_missing
                        .fetch_add(lost as u64, Ordering::Relaxed);
                }
                SenderEvent::Finished => self.finished = true,
            }
        }
        Ok(())
    }

    /// The reader thread of `file` (with the session's window and checksum).
    fn reader_for(&self, file: u32) -> Result<FileReader, XferError> {
        let sh = self.shared;
        let hasher = (self.params.window, self.params.hasher);
        file_reader(sh.items, file, sh.alloc, sh.opts, hasher)
    }

    /// The next buffer of `file`, from its reader thread (started if it is not this file's).
    fn provide_buffer(&mut self, file: u32) -> Result<(), XferError> {
        // A fresh file's buffers are asked for before the receiver answers the offer.
        if !matches!(&self.reader, Some((f, _, _)) if *f == file) {
            self.reader = Some(self.reader_for(file)?);
        }
        // Waiting for the reader thread is time the sender spends on the disk.
        let t = StdInstant::now();
        let next = match &self.reader {
            Some((_, rx, _)) => rx
                .recv()
                .map_err(|_| XferError::Local("the reader thread stopped".into()))??,
            None => return Err(XferError::Local("no reader for this file".into())),
        };
        self.disk += Duration::from(t.elapsed());
        self.sender.provide_hashed_buffer(file, next)?;
        Ok(())
    }

    /// The receiver accepted `file`, already holding the buffers `have` (a resumed transfer):
    /// those count as done, their hashes are read for the whole-file digest, and the reader
    /// starts on the others.
    fn file_accepted(&mut self, file: u32, have: Vec<(u32, u32)>) -> Result<(), XferError> {
        let &Shared {
            items,
            opts,
            alloc,
            progress,
            ..
        } = self.shared;
        if let Some(o) = self.outcomes.get_mut(file as usize) {
            o.resumed_buffers = have.iter().map(|(a, b)| (b - a) as u64).sum();
            let skipped: u64 = have
                .iter()
                .flat_map(|(a, b)| *a..*b)
                .map(|i| buffer_len(o.size, opts.buffer_size, i) as u64)
                .sum();
            progress.bytes_done.fetch_add(skipped, Ordering::Relaxed);
        }
        // The whole-file digest needs the hashes of the blocks not sent again.
        let t = StdInstant::now();
        for i in have
            .iter()
            .flat_map(|(a, b)| *a..*b)
            .filter(|_| opts.mode.is_reliable())
        {
            let (Some(item), Some(open)) =
                (items.get(file as usize), self.files.get_mut(file as usize))
            else {
                return Err(XferError::Local("file number out of range".into()));
            };
            let data = read_block(
                &item.source,
                open,
                item.size,
                opts.buffer_size,
                i,
                Vec::new(),
            )?;
            self.sender
                .provide_known_hash(file, i, self.params.hasher.hash(&data));
        }
        self.disk += Duration::from(t.elapsed());
        if matches!(&self.reader, Some((f, _, _)) if *f == file) {
            // Started before the answer: a fresh file, whose accept the sender core has
            // checked holds no buffers.
            return Ok(());
        }
        if let Ok(mut a) = alloc.lock()
            && let Some(h) = a.have.get_mut(file as usize)
        {
            *h = have;
        }
        self.reader = Some(self.reader_for(file)?);
        Ok(())
    }

    /// Whether the session may send datagrams now: always, but in MBTP only while it holds the
    /// token (taken here if it is free).
    fn may_send(&self) -> bool {
        let token = self.shared.token;
        !self.serialise
            || !self.sender.has_data_to_send()
            || token
                .compare_exchange(0, self.me, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            || token.load(Ordering::Acquire) == self.me
    }

    /// Every datagram the core has ready, in batches; the time it takes counts as transfer.
    fn send_datagrams(&mut self) -> Result<(), XferError> {
        let t = StdInstant::now();
        let mut sent_any = false;
        loop {
            self.refs.clear();
            let tnow = self.now();
            while self.refs.len() < BATCH {
                self.hbuf.clear();
                match self.sender.poll_transmit_ref(tnow, &mut self.hbuf) {
                    Some(t) => {
                        if let (Some(h), Some(src)) = (
                            self.heads.get_mut(self.refs.len()),
                            self.hbuf.get(..HEADER_LEN),
                        ) {
                            h.copy_from_slice(src);
                        }
                        self.refs.push(t);
                    }
                    None => break,
                }
            }
            if self.refs.is_empty() {
                break;
            }
            sent_any = true;
            let dgrams: Vec<(u32, Gather<'_>)> = self
                .refs
                .iter()
                .zip(&self.heads)
                .map(|(t, h)| {
                    let payload = self.sender.payload(t.buf, t.start, t.len);
                    (t.stripe, [&h[..], payload])
                })
                .collect();
            transmit(&self.udp, &self.dests, &dgrams, &mut self.gso)?;
            self.shared
                .progress
                .packets_sent
                .fetch_add(self.refs.len() as u64, Ordering::Relaxed);
        }
        if sent_any {
            self.transfer += Duration::from(t.elapsed());
        }
        Ok(())
    }

    /// MBTP: gives the token back once the session has nothing left to send.
    fn release_token(&self) {
        if self.serialise && !self.sender.has_data_to_send() {
            let me = self.me;
            let _ = self
                .shared
                .token
                .compare_exchange(me, 0, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// The core's control messages, written out.
    fn send_control(&mut self) -> Result<(), XferError> {
        while let Some(c) = self.sender.poll_control() {
            self.conn.queue(&c);
        }
        // A receiver that failed says why before it closes: that, not the broken pipe.
        self.conn
            .flush()
            .map_err(|e| super::cause_of_close(&mut self.conn, e))
    }

    /// Fails if the receiver made no progress for the core's stall bound.
    fn check_progress(&mut self) -> Result<(), XferError> {
        if let Some(s) = self.sender.peer_stalled(self.now()) {
            let kept = if self.shared.opts.mode.is_reliable() {
                "the receiver keeps what arrived for --resume"
            } else {
                "sbtp and mbtp keep no journal"
            };
            return Err(XferError::Local(format!(
                "the receiver made no progress mid-transfer: {s}; it is stopped, frozen or stuck; {kept}"
            )));
        }
        Ok(())
    }

    /// Waits for the next pacing slot or control message, and counts the time waited as
    /// transfer (sending) or synchronisation (held back, or waiting on the receiver, which
    /// fails after the time-out without word from it).
    fn wait(&mut self, may_send: bool) -> Result<(), XferError> {
        let t = StdInstant::now();
        let sending = self.sender.has_data_to_send();
        let wait_ns = match self.sender.poll_timeout() {
            Some(_) if !may_send => Some(50_000),
            Some(dl) => Some(dl.as_nanos().saturating_sub(self.now().as_nanos())),
            None => Some(if self.conn.has_pending_writes() {
                200_000
            } else {
                50_000_000
            }),
        };
        if let Some(w) = wait_ns
            && w > 0
        {
            if w < 20_000 {
                std::hint::spin_loop();
            } else {
                weft_sys::readable(&[self.conn.fd()], Some(w))
                    .map_err(|e| XferError::io("polling", e))?;
            }
        }
        let waited = Duration::from(t.elapsed());
        if sending && may_send {
            self.transfer += waited;
        } else if sending {
            self.sync += waited;
        } else {
            self.sync += waited;
            if self.last_heard.elapsed() > std::time::Duration::from(self.shared.opts.timeout) {
                return Err(XferError::Timeout("waiting for the receiver"));
            }
        }
        Ok(())
    }

    /// What the session did.
    fn report(self) -> SendReport {
        let opts = self.shared.opts;
        SendReport {
            elapsed: Duration::from(self.start.elapsed()),
            hash: Duration::ZERO,
            sync: self.sync,
            disk: self.disk,
            transfer: self.transfer,
            stats: self.sender.stats().clone(),
            files: self.outcomes,
            final_rate: self.sender.rate().map_or(0, Rate::as_bps),
            packet_size: self.packet_size,
            window: self.params.window,
            stripes: self.dests.len(),
            sessions: 1,
            checksum: opts.mode.is_reliable().then_some(self.params.hasher),
            // The process's CPU time is taken once, over all sessions, by `send`.
            cpu: Duration::ZERO,
            receivers: Vec::new(),
        }
    }
}

/// Connects the control connection to `peer` and shakes hands: the session's parameters.
fn handshake(peer: &Peer, opts: &SendOptions) -> Result<(CtlConn, SessionParams), XferError> {
    let addr = peer.addr;
    let stream = TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(10))
        .map_err(|e| XferError::io(format!("connecting to {addr}"), e))?;
    let window = match opts.window {
        0 => default_window(sys::tcp_rtt_us(&stream)),
        w => w,
    };
    let mut conn =
        CtlConn::new(stream).map_err(|e| XferError::io("setting up the control connection", e))?;
    let hello = Hello {
        mode: opts.mode,
        window,
        checksum: opts.checksum,
        stripe: peer.stripe,
    };
    let params = client_handshake_with(&mut conn, &hello, opts.key.as_ref())?;
    conn.watch_peer();
    Ok((conn, params))
}

/// The UDP socket the datagrams leave from, and the receiver's sockets they go to (its
/// address, the ports of `params`).
fn data_socket(
    addr: SocketAddr,
    params: &SessionParams,
) -> Result<(UdpSocket, Vec<SocketAddr>), XferError> {
    let bind: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .map_err(|_| XferError::Local("bad bind address".into()))?;
    let udp = UdpSocket::bind(bind).map_err(|e| XferError::io("binding the UDP socket", e))?;
    sys::set_buffers(&udp, 8 << 20);
    let dests = params
        .ports
        .iter()
        .map(|p| SocketAddr::new(addr.ip(), *p))
        .collect();
    Ok((udp, dests))
}

/// Hands a batch of datagrams `(stripe, pieces)` to the kernel: per receiving socket, runs of
/// equal-sized datagrams as UDP GSO super-datagrams when `gso` (cleared if the kernel refuses),
/// the rest with `sendmmsg`; payloads are gathered from their buffers, not copied. Blocks until
/// all are taken.
fn transmit(
    udp: &UdpSocket,
    dests: &[SocketAddr],
    batch: &[(u32, Gather<'_>)],
    gso: &mut bool,
) -> Result<(), XferError> {
    let mut rest: Vec<(SocketAddr, Gather<'_>)> = Vec::new();
    if *gso {
        for (k, dest) in dests.iter().enumerate() {
            let mine: Vec<Gather<'_>> = batch
                .iter()
                .filter(|(s, _)| *s as usize % dests.len() == k)
                .map(|(_, g)| *g)
                .collect();
            let mut i = 0;
            while i < mine.len() {
                let seg = sys::gather_len(&mine[i]);
                let mut j = i + 1;
                while j < mine.len()
                    && j - i < 64
                    && (j - i + 1) * seg <= 65_000
                    && sys::gather_len(&mine[j - 1]) == seg
                    && sys::gather_len(&mine[j]) <= seg
                {
                    j += 1;
                }
                if j - i >= 2 && *gso {
                    match sys::send_gso_gather(udp, *dest, &mine[i..j]) {
                        Ok(true) => {
                            i = j;
                            continue;
                        }
                        Ok(false) => *gso = false,
                        // Segments longer than the path MTU (learnt mid-transfer, e.g. after
                        // a route change): GSO cannot fragment them, plain datagrams can.
                        Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => *gso = false,
                        // A run unfit for GSO goes out datagram by datagram below.
                        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {}
                        Err(e) => return Err(XferError::io("sending datagrams (GSO)", e)),
                    }
                }
                rest.extend(mine[i..j].iter().map(|b| (*dest, *b)));
                i = j;
            }
        }
    } else {
        rest = batch
            .iter()
            .map(|(s, g)| (dests[*s as usize % dests.len()], *g))
            .collect();
    }
    let mut off = 0;
    while off < rest.len() {
        let k = sys::send_batch_gather(udp, &rest[off..])
            .map_err(|e| XferError::io("sending datagrams", e))?;
        if k == 0 {
            std::thread::yield_now();
        }
        off += k;
    }
    Ok(())
}
