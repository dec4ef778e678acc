//! The receiving driver: completes a sender's handshake, binds K UDP sockets per session to
//! stripe data over, runs the [`crate::proto::Receiver`] core, and writes buffers on a writer thread so the
//! network side keeps receiving while the disk works. The accept loop is in [`super::accept`].
//!
//! The driver in files of one idea each: this one admits a sender ([`handshake`]) and runs its
//! session to a report ([`run_session`]); `recv_session` is the session's turn of
//! steps; `recv_end` puts a finished file, stripe or discarded file in place;
//! `recv_budget` is the buffer memory the sessions share.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Instant as StdInstant;

use weft_model::Duration;

use super::ctl::CtlConn;
use super::recv_session::session_loop;
use super::store::{Opened, Store};
use super::stripe::StripeLog;
use super::{SessionParams, XferError, server_handshake, sys};
use crate::auth::Key;
use crate::proto::{BlockHasher, ReceiverStats};
use crate::wire::{Control, Mode, RefuseCode};

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

pub use super::recv_budget::MemoryBudget;

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

pub(super) struct FileSlot {
    /// The file being written; `None` with `--discard`.
    pub(super) opened: Option<Opened>,
    pub(super) report: usize,
    /// Size, bytes.
    pub(super) size: u64,
    /// Buffer size, bytes.
    pub(super) buffer_size: u32,
    /// BLAKE3 of each buffer verified in memory before it was written, by buffer index.
    pub(super) hashes: HashMap<u32, [u8; 32]>,
    /// This session's stripe of the file (MBTP over separate receivers): where each buffer
    /// went in it, for the manifest.
    pub(super) stripe: Option<StripeLog>,
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
