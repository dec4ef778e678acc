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
use super::{Hello, XferError, client_handshake_with, sys};
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

fn run_session_inner(
    peer: &Peer,
    metas: Vec<FileMeta>,
    shared: &Shared<'_>,
    me: usize,
) -> Result<SendReport, XferError> {
    let &Shared {
        items,
        opts,
        alloc,
        progress,
        token,
        failed,
    } = shared;
    let addr = peer.addr;
    let serialise = opts.mode == Mode::Mbtp;
    let start = StdInstant::now();
    // A fresh transfer of the first file needs its first buffers whatever the receiver says:
    // reading and hashing them overlaps connecting and the handshake. (Resumed transfers wait
    // for the receiver's list of buffers it has; MBTP sessions share one allocator and read on
    // acceptance; with a key the checksum is keyed by the handshake, so hashing waits for it.)
    let mut reader: Option<FileReader> = None;
    if !opts.resume && opts.mode != Mode::Mbtp && !items.is_empty() && opts.key.is_none() {
        let hasher = BlockHasher::new(opts.checksum, None);
        let most = opts.window.max(LONG_PATH_WINDOW);
        reader = Some(file_reader(items, 0, alloc, opts, (most, hasher))?);
    }
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

    let mut welcome_pending = params.welcome_pending;
    let bind: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .map_err(|_| XferError::Local("bad bind address".into()))?;
    let udp = UdpSocket::bind(bind).map_err(|e| XferError::io("binding the UDP socket", e))?;
    sys::set_buffers(&udp, 8 << 20);
    let dests: Vec<SocketAddr> = params
        .ports
        .iter()
        .map(|p| SocketAddr::new(addr.ip(), *p))
        .collect();
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
        // A woken-late sender may catch up by this much at once: on a loaded host or a VM whose
        // idle CPUs wake late, wake-ups are often 1 ms or more behind, and a smaller allowance
        // loses that time for good (the rate achieved falls below the rate paced).
        burst: Duration::from_millis(PACING_BURST_MS),
        early_probe: params.version >= crate::wire::control::STRIPE_VERSION,
    };
    let mut sender = Sender::new(cfg, params.session, metas);
    let bound = crate::proto::stall_bound(opts.stall, conn.rtt());
    sender.set_stall_bound((bound > Duration::ZERO).then_some(bound));
    let mut files: Vec<Option<File>> = (0..items.len()).map(|_| None).collect();
    let mut outcomes: Vec<FileOutcome> = items
        .iter()
        .map(|i| FileOutcome {
            name: i.name.clone(),
            size: i.size,
            ok: false,
            msg: String::new(),
            resumed_buffers: 0,
        })
        .collect();
    let (mut sync, mut disk, mut transfer) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let reader_for = |file| file_reader(items, file, alloc, opts, (params.window, params.hasher));
    let now = || Instant(start.elapsed().as_nanos() as u64);
    // Datagram headers of a batch; payloads stay in their buffers (gathered by the kernel).
    let mut heads: Vec<[u8; HEADER_LEN]> = vec![[0; HEADER_LEN]; BATCH];
    let mut refs: Vec<TransmitRef> = Vec::with_capacity(BATCH);
    let mut hbuf: Vec<u8> = Vec::with_capacity(HEADER_LEN);
    let mut last_heard = StdInstant::now();
    let mut finished = false;
    // UDP GSO pays for datagrams well below 64 KiB; off once the kernel refuses it.
    let mut gso = packet_size as usize + HEADER_LEN <= 16 * 1024;
    loop {
        if failed.load(Ordering::Acquire) != 0 {
            return Err(XferError::Local("stopped: another session failed".into()));
        }
        conn.read_available()?;
        loop {
            match conn.next_msg() {
                Ok(Some(Control::Refuse { code, msg })) => {
                    return Err(XferError::refusal(code, msg));
                }
                Ok(Some(Control::Welcome { .. })) if welcome_pending => welcome_pending = false,
                Ok(Some(_)) if welcome_pending => {
                    return Err(ProtoError::Unexpected("message instead of Welcome").into());
                }
                Ok(Some(m)) => {
                    last_heard = StdInstant::now();
                    let progress_before = sender.stats().bytes_done;
                    // What the rate controller heard and did (`-vv`): the first thing to look
                    // at when a path is used badly.
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
                    let t = now();
                    sender.handle_control(t, m)?;
                    if let Some((buf, round, rx, arrival, missing)) = report {
                        tracing::debug!(
                            t_ns = t.as_nanos(),
                            session = me,
                            buf,
                            round = (round != u32::MAX).then_some(round),
                            missing,
                            rx_bps = rx,
                            arrival_bps = arrival,
                            rate_bps = sender.rate().map_or(0, Rate::as_bps),
                            "report"
                        );
                    }
                    let d = sender.stats().bytes_done - progress_before;
                    progress.bytes_done.fetch_add(d, Ordering::Relaxed);
                }
                Ok(None) => break,
                Err(XferError::PeerClosed) if finished => break,
                Err(e) => return Err(e),
            }
        }
        // Finished buffers go back to the reader to be filled again.
        while let Some(v) = sender.take_spent() {
            if let Some((_, _, recycle)) = &reader {
                let _ = recycle.send(v);
            }
        }
        while let Some(ev) = sender.poll_event() {
            match ev {
                SenderEvent::NeedBuffer { file } => {
                    // A fresh file's buffers are asked for before the receiver answers the offer.
                    if !matches!(&reader, Some((f, _, _)) if *f == file) {
                        reader = Some(reader_for(file)?);
                    }
                    // Waiting for the reader thread is time the sender spends on the disk.
                    let t = StdInstant::now();
                    let next = match &reader {
                        Some((_, rx, _)) => rx
                            .recv()
                            .map_err(|_| XferError::Local("the reader thread stopped".into()))??,
                        None => return Err(XferError::Local("no reader for this file".into())),
                    };
                    disk += Duration::from(t.elapsed());
                    sender.provide_hashed_buffer(file, next)?;
                }
                SenderEvent::FileAccepted { file, have } => {
                    if let Some(o) = outcomes.get_mut(file as usize) {
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
                            (items.get(file as usize), files.get_mut(file as usize))
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
                        sender.provide_known_hash(file, i, params.hasher.hash(&data));
                    }
                    disk += Duration::from(t.elapsed());
                    if matches!(&reader, Some((f, _, _)) if *f == file) {
                        // Started before the answer: a fresh file, whose accept the sender core
                        // has checked holds no buffers.
                        continue;
                    }
                    if let Ok(mut a) = alloc.lock()
                        && let Some(h) = a.have.get_mut(file as usize)
                    {
                        *h = have;
                    }
                    reader = Some(reader_for(file)?);
                }
                SenderEvent::FileRejected { file, code, msg } => {
                    if let Some(o) = outcomes.get_mut(file as usize) {
                        o.msg = format!("refused ({code:?}): {msg}");
                    }
                    files[file as usize] = None;
                }
                SenderEvent::FileDone { file, ok, msg } => {
                    if let Some(o) = outcomes.get_mut(file as usize) {
                        o.ok = ok;
                        o.msg = msg;
                    }
                    files[file as usize] = None;
                }
                SenderEvent::BufferDone { lost, .. } => {
                    progress
                        .packets_missing
                        .fetch_add(lost as u64, Ordering::Relaxed);
                }
                SenderEvent::Finished => finished = true,
            }
        }
        // Datagrams, in batches.
        let t = StdInstant::now();
        let mut sent_any = false;
        let may_send = !serialise
            || !sender.has_data_to_send()
            || token
                .compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            || token.load(Ordering::Acquire) == me;
        if may_send {
            loop {
                refs.clear();
                let tnow = now();
                while refs.len() < BATCH {
                    hbuf.clear();
                    match sender.poll_transmit_ref(tnow, &mut hbuf) {
                        Some(t) => {
                            if let (Some(h), Some(src)) =
                                (heads.get_mut(refs.len()), hbuf.get(..HEADER_LEN))
                            {
                                h.copy_from_slice(src);
                            }
                            refs.push(t);
                        }
                        None => break,
                    }
                }
                if refs.is_empty() {
                    break;
                }
                sent_any = true;
                let dgrams: Vec<(u32, Gather<'_>)> = refs
                    .iter()
                    .zip(&heads)
                    .map(|(t, h)| (t.stripe, [&h[..], sender.payload(t.buf, t.start, t.len)]))
                    .collect();
                transmit(&udp, &dests, &dgrams, &mut gso)?;
                progress
                    .packets_sent
                    .fetch_add(refs.len() as u64, Ordering::Relaxed);
            }
        }
        if sent_any {
            transfer += Duration::from(t.elapsed());
        }
        if serialise && !sender.has_data_to_send() {
            let _ = token.compare_exchange(me, 0, Ordering::AcqRel, Ordering::Acquire);
        }
        while let Some(c) = sender.poll_control() {
            conn.queue(&c);
        }
        // A receiver that failed says why before it closes: that, not the broken pipe.
        conn.flush()
            .map_err(|e| super::cause_of_close(&mut conn, e))?;
        if finished && !conn.has_pending_writes() {
            break;
        }
        if let Some(s) = sender.peer_stalled(now()) {
            let kept = if opts.mode.is_reliable() {
                "the receiver keeps what arrived for --resume"
            } else {
                "sbtp and mbtp keep no journal"
            };
            return Err(XferError::Local(format!(
                "the receiver made no progress mid-transfer: {s}; it is stopped, frozen or stuck; {kept}"
            )));
        }
        // Wait for the next pacing slot or control message.
        let t = StdInstant::now();
        let sending = sender.has_data_to_send();
        let wait_ns = match sender.poll_timeout() {
            Some(_) if !may_send => Some(50_000),
            Some(dl) => Some(dl.as_nanos().saturating_sub(now().as_nanos())),
            None => Some(if conn.has_pending_writes() {
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
                weft_sys::readable(&[conn.fd()], Some(w))
                    .map_err(|e| XferError::io("polling", e))?;
            }
        }
        let waited = Duration::from(t.elapsed());
        if sending && may_send {
            transfer += waited;
        } else if sending {
            sync += waited;
        } else {
            sync += waited;
            if last_heard.elapsed() > std::time::Duration::from(opts.timeout) {
                return Err(XferError::Timeout("waiting for the receiver"));
            }
        }
    }
    let _ = conn.flush_all(2000);
    Ok(SendReport {
        elapsed: Duration::from(start.elapsed()),
        hash: Duration::ZERO,
        sync,
        disk,
        transfer,
        stats: sender.stats().clone(),
        files: outcomes,
        final_rate: sender.rate().map_or(0, Rate::as_bps),
        packet_size,
        window: params.window,
        stripes: dests.len(),
        sessions: 1,
        checksum: opts.mode.is_reliable().then_some(params.hasher),
        // The process's CPU time is taken once, over all sessions, by `send`.
        cpu: Duration::ZERO,
        receivers: Vec::new(),
    })
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
