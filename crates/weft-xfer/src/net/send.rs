//! The sending driver: walks the files, fingerprints them (reliable mode), and runs one session
//! per receiver ([`super::send_session`]: one, or MBTP's R), sharing the files' buffers among
//! them; it sums the sessions' accounts of the sender's time the way the RIACS study's Table 2
//! does: synchronising with the receiver, disk I/O, and data transfer.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant as StdInstant;

use weft_model::Duration;

use super::reader::Alloc;
use super::send_session::{Shared, run_session};
use super::source::fingerprint;
pub use super::source::{SendItem, collect_files, memory_item};
use super::{XferError, sys};
use crate::auth::Key;
use crate::proto::{BlockHasher, Checksum, FileMeta, RateMode, SenderStats, buffers_in};
use crate::wire::Mode;
use crate::wire::control::Stripe;
use crate::wire::data::{HEADER_LEN, MAX_PAYLOAD};

/// How to send.
#[derive(Debug, Clone)]
pub struct SendOptions {
    /// Transfer mode.
    pub mode: Mode,
    /// Payload bytes per datagram; `None`: fit the path MTU.
    pub packet_size: Option<u32>,
    /// Buffer size, bytes.
    pub buffer_size: u32,
    /// Buffers to keep in flight (reliable mode; the receiver may grant fewer); 0 chooses by
    /// the path ([`default_window`]).
    pub window: u16,
    /// Rate control.
    pub rate: RateMode,
    /// Pre-shared key.
    pub key: Option<Key>,
    /// Continue from the receiver's journal.
    pub resume: bool,
    /// MBTP: receiver sessions to serve in turn.
    pub receivers: u16,
    /// Give up after this long without hearing from the receiver.
    pub timeout: Duration,
    /// Give up on a receiver that makes no progress for this long while the sender waits on
    /// it (`None`: max(10 round trips, 5 s); zero: never). See [`crate::proto::Stalled`].
    pub stall: Option<Duration>,
    /// Checksum of each buffer (reliable mode).
    pub checksum: Checksum,
}

/// Live counters for a progress display.
#[derive(Debug, Default)]
pub struct Progress {
    /// Payload bytes acknowledged by the receiver.
    pub bytes_done: AtomicU64,
    /// Total payload bytes to send.
    pub bytes_total: AtomicU64,
    /// Datagrams sent.
    pub packets_sent: AtomicU64,
    /// Datagrams reported missing or lost.
    pub packets_missing: AtomicU64,
    /// Set when the transfer is over.
    pub done: AtomicBool,
}

/// The outcome of one file.
#[derive(Debug, Clone)]
pub struct FileOutcome {
    /// Name at the receiver.
    pub name: String,
    /// Size, bytes.
    pub size: u64,
    /// Whether it is in place at the receiver.
    pub ok: bool,
    /// The receiver's message.
    pub msg: String,
    /// Buffers skipped because the receiver already had them (resume).
    pub resumed_buffers: u64,
}

/// The outcome of a send, with the sender's time breakdown.
#[derive(Debug, Clone, Default)]
pub struct SendReport {
    /// Wall time from connecting to the last answer.
    pub elapsed: Duration,
    /// Time fingerprinting files before sending.
    pub hash: Duration,
    /// Time waiting for the receiver with nothing to send (the study's "sync").
    pub sync: Duration,
    /// Time reading the file (the study's "disk I/O").
    pub disk: Duration,
    /// Time sending or pacing datagrams (the study's "data transfer").
    pub transfer: Duration,
    /// Counters summed over sessions.
    pub stats: SenderStats,
    /// Per file (from the first session in MBTP).
    pub files: Vec<FileOutcome>,
    /// Rate at the end, bits/s (0: unlimited).
    pub final_rate: u64,
    /// Payload bytes per datagram used.
    pub packet_size: u32,
    /// Buffers in flight granted.
    pub window: u16,
    /// Receiver sockets striped over.
    pub stripes: usize,
    /// Sessions (MBTP receivers).
    pub sessions: usize,
    /// The buffers' checksum (reliable mode), and whether it was keyed.
    pub checksum: Option<BlockHasher>,
    /// CPU time of the whole sending process (user + system, all threads) over the send.
    pub cpu: Duration,
    /// Per session: where it went and what it carried.
    pub receivers: Vec<PeerOutcome>,
}

/// What one session of a send carried.
#[derive(Debug, Clone)]
pub struct PeerOutcome {
    /// The receiver's address.
    pub addr: SocketAddr,
    /// Its stripe, when the transfer is spread over separate receivers.
    pub stripe: Option<Stripe>,
    /// Buffers it took.
    pub buffers: u64,
    /// Payload bytes of those buffers.
    pub bytes: u64,
    /// What it said of the last file.
    pub msg: String,
}

/// Where one session goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer {
    /// The receiver's address.
    pub(crate) addr: SocketAddr,
    /// Its stripe, when the transfer is spread over separate receivers.
    pub(crate) stripe: Option<Stripe>,
}

/// Sends `items` to the receiver at `addr` (in MBTP, `opts.receivers` sessions to it).
pub fn send(
    addr: SocketAddr,
    items: &[SendItem],
    opts: &SendOptions,
    progress: Arc<Progress>,
) -> Result<SendReport, XferError> {
    let sessions = if opts.mode == Mode::Mbtp {
        opts.receivers.max(1) as usize
    } else {
        1
    };
    let peers = vec![Peer { addr, stripe: None }; sessions];
    send_sessions(&peers, items, opts, progress)
}

/// Sends `items` with MBTP over the separate receivers at `addrs`, one session each: receiver K
/// of R keeps its stripe of every file (see [`super::stripe`]).
pub fn send_striped(
    addrs: &[SocketAddr],
    items: &[SendItem],
    opts: &SendOptions,
    progress: Arc<Progress>,
) -> Result<SendReport, XferError> {
    if opts.mode != Mode::Mbtp {
        return Err(XferError::Local(
            "separate receivers are MBTP's: use --mode mbtp".into(),
        ));
    }
    let parts = u16::try_from(addrs.len())
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| XferError::Local(format!("{} receivers: give 1 to 65535", addrs.len())))?;
    let transfer = loop {
        let t = super::random_u64()?;
        if t != 0 {
            break t;
        }
    };
    let peers: Vec<Peer> = (1..=parts)
        .zip(addrs)
        .map(|(part, &addr)| Peer {
            addr,
            stripe: Some(Stripe {
                transfer,
                part,
                parts,
            }),
        })
        .collect();
    send_sessions(&peers, items, opts, progress)
}

/// Runs one session per peer (sharing the files' buffers), and stops them all when one fails.
fn send_sessions(
    peers: &[Peer],
    items: &[SendItem],
    opts: &SendOptions,
    progress: Arc<Progress>,
) -> Result<SendReport, XferError> {
    let t0 = StdInstant::now();
    let cpu0 = sys::process_cpu();
    let mut metas = Vec::with_capacity(items.len());
    for it in items {
        let hash = if opts.mode.is_reliable() {
            fingerprint(it)?
        } else {
            [0; 32]
        };
        metas.push(FileMeta {
            name: it.name.clone(),
            size: it.size,
            hash,
            resume: opts.resume,
        });
    }
    let hash_time = Duration::from(t0.elapsed());
    progress
        .bytes_total
        .store(items.iter().map(|i| i.size).sum(), Ordering::Relaxed);
    let alloc = Arc::new(Mutex::new(Alloc {
        next: vec![0; items.len()],
        nbuf: items
            .iter()
            .map(|i| buffers_in(i.size, opts.buffer_size))
            .collect(),
        have: vec![Vec::new(); items.len()],
    }));
    let sessions = peers.len();
    // MBTP: one sender, so one buffer on the network at a time; the token names the session
    // blasting now (0: none) while the others' receivers write to disk.
    let token = AtomicUsize::new(0);
    // The first session to fail stops the others (they end with `Stopped`): a transfer over
    // several receivers fails as fast as over one, and says which receiver failed.
    let failed = AtomicUsize::new(0);
    let failed = &failed;
    let results: Vec<Result<SendReport, XferError>> = std::thread::scope(|s| {
        let handles: Vec<_> = peers
            .iter()
            .enumerate()
            .map(|(id, peer)| {
                let shared = Shared {
                    items,
                    opts,
                    alloc: &alloc,
                    progress: &progress,
                    token: &token,
                    failed,
                };
                let metas = metas.clone();
                s.spawn(move || {
                    let r = run_session(peer, metas, &shared, id + 1);
                    if r.is_err() {
                        let _ =
                            failed.compare_exchange(0, id + 1, Ordering::AcqRel, Ordering::Acquire);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(XferError::Local("a session thread panicked".into())))
            })
            .collect()
    });
    progress.done.store(true, Ordering::Relaxed);
    let first = failed.load(Ordering::Acquire);
    let mut results: Vec<SendReport> = match first {
        0 => results.into_iter().collect::<Result<_, _>>()?,
        id => {
            let e = results
                .into_iter()
                .nth(id - 1)
                .and_then(Result::err)
                .unwrap_or_else(|| XferError::Local("a session failed".into()));
            return Err(e);
        }
    };
    let mut total = SendReport {
        sessions,
        hash: hash_time,
        ..Default::default()
    };
    for (i, r) in results.iter_mut().enumerate() {
        total.receivers.push(PeerOutcome {
            addr: peers[i].addr,
            stripe: peers[i].stripe,
            buffers: r.stats.buffers_done,
            bytes: r.stats.bytes_done,
            msg: r.files.last().map(|f| f.msg.clone()).unwrap_or_default(),
        });
        let r = &*r;
        if i == 0 {
            total.files = r.files.clone();
            total.final_rate = r.final_rate;
            total.packet_size = r.packet_size;
            total.window = r.window;
            total.stripes = r.stripes;
            total.checksum = r.checksum;
        } else {
            for (f, o) in total.files.iter_mut().zip(&r.files) {
                f.ok &= o.ok;
            }
        }
        if sessions == 1 {
            total.sync = r.sync;
            total.disk = r.disk;
            total.transfer = r.transfer;
        } else {
            // MBTP sessions take turns on the network: their transfer times add up. Their
            // reader threads work side by side, so the disk wait is the longest one's, and the
            // rest of the elapsed time is time the network idled waiting for receivers.
            total.transfer += r.transfer;
            total.disk = total.disk.max(r.disk);
        }
        add_stats(&mut total.stats, &r.stats);
    }
    if let Some(n) = peers.first().and_then(|p| p.stripe).map(|s| s.parts) {
        for f in total.files.iter_mut().filter(|f| f.ok) {
            f.msg = format!(
                "in {n} stripes, one per receiver ({}.mbtp-K-of-{n} and its manifest): `weft join` \
                 puts them together",
                f.name
            );
        }
    }
    total.elapsed = Duration::from(t0.elapsed());
    total.cpu = Duration::from(sys::process_cpu().saturating_sub(cpu0));
    if sessions > 1 {
        let busy = total.transfer + total.disk + total.hash;
        total.sync = Duration(total.elapsed.as_nanos().saturating_sub(busy.as_nanos()));
    }
    Ok(total)
}

fn add_stats(a: &mut SenderStats, b: &SenderStats) {
    a.packets_sent += b.packets_sent;
    a.packets_retransmitted += b.packets_retransmitted;
    a.payload_bytes_sent += b.payload_bytes_sent;
    a.packets_lost += b.packets_lost;
    a.packets_nacked += b.packets_nacked;
    a.packets_dup += b.packets_dup;
    a.buffers_done += b.buffers_done;
    a.bytes_done += b.bytes_done;
    a.files_ok = a.files_ok.max(b.files_ok);
    a.files_failed = a.files_failed.max(b.files_failed);
}

/// The window a long path gets by default: eight buffers of 8 MiB keep an OC-3c path of 300 ms
/// busy while buffers at 5% loss wait out their recovery rounds (82% with four, 89% with eight,
/// in simulation).
pub const LONG_PATH_WINDOW: u16 = 8;

/// The window (buffers in flight) asked for when none is given: [`LONG_PATH_WINDOW`] when the
/// control connection's round trip is 10 ms or more (or unknown), else 4. On loopback, where
/// a round trip is tens of microseconds, eight buffers of 8 MiB only leave more memory cold:
/// 5.5 against 6.5 Gbit/s with four, memory to memory.
pub fn default_window(rtt_us: Option<u32>) -> u16 {
    match rtt_us {
        Some(us) if us < 10_000 => 4,
        _ => LONG_PATH_WINDOW,
    }
}

/// Payload bytes per datagram that fit the path MTU to `dest` without IP fragmentation.
pub fn auto_packet_size(dest: SocketAddr) -> u32 {
    let ip_udp = if dest.is_ipv4() { 28 } else { 48 };
    let mtu = sys::path_mtu(dest).unwrap_or(1500);
    (mtu.saturating_sub(ip_udp + HEADER_LEN)).clamp(512, MAX_PAYLOAD) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_window_follows_the_round_trip() {
        // Loopback (tens of microseconds) and a LAN: four; 17 ms and more, or unknown: eight.
        assert_eq!(default_window(Some(40)), 4);
        assert_eq!(default_window(Some(2_000)), 4);
        assert_eq!(default_window(Some(17_000)), 8);
        assert_eq!(default_window(Some(300_000)), 8);
        assert_eq!(default_window(None), 8);
    }
}
