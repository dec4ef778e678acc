//! Live sampling of an interface: byte and packet counters from
//! `/sys/class/net/IFACE/statistics` every bin, and optionally a count of the packets themselves
//! from an `AF_PACKET` socket. Each bin is written as one JSON line and flushed at once, so an
//! interrupted run keeps everything up to its last whole bin.

use std::collections::VecDeque;
use std::fs;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use weft_model::{Duration, Rate};
use weft_sys::{PacketOptions, PacketSocket};

use crate::tech::Framing;
use crate::util::{UtilAnalyzer, UtilConfig, UtilReport};

/// Interface counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
}

/// Which directions count towards utilisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Received only.
    Rx,
    /// Sent only.
    Tx,
    /// Both (a shared medium, as the Sniffer saw it; on `lo` every packet counts twice).
    Both,
}

impl Counters {
    /// Reads the counters of `iface`.
    pub fn read(iface: &str) -> io::Result<Self> {
        let base = format!("/sys/class/net/{iface}/statistics");
        let rd = |name: &str| -> io::Result<u64> {
            let t = fs::read_to_string(format!("{base}/{name}"))?;
            t.trim().parse().map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidData, format!("{base}/{name}: {e}"))
            })
        };
        Ok(Counters {
            rx_bytes: rd("rx_bytes")?,
            tx_bytes: rd("tx_bytes")?,
            rx_packets: rd("rx_packets")?,
            tx_packets: rd("tx_packets")?,
        })
    }

    fn bytes(&self, d: Direction) -> u64 {
        match d {
            Direction::Rx => self.rx_bytes,
            Direction::Tx => self.tx_bytes,
            Direction::Both => self.rx_bytes.wrapping_add(self.tx_bytes),
        }
    }

    fn packets(&self, d: Direction) -> u64 {
        match d {
            Direction::Rx => self.rx_packets,
            Direction::Tx => self.tx_packets,
            Direction::Both => self.rx_packets.wrapping_add(self.tx_packets),
        }
    }
}

/// The interface's speed from `/sys/class/net/IFACE/speed`, if it reports one.
pub fn link_speed(iface: &str) -> Option<Rate> {
    let t = fs::read_to_string(format!("/sys/class/net/{iface}/speed")).ok()?;
    let mbps: i64 = t.trim().parse().ok()?;
    (mbps > 0).then(|| Rate(mbps as u64 * 1_000_000))
}

/// One bin of a live run (one JSON line).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LiveBin {
    /// Always `"bin"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Bin number from 0.
    pub bin: u64,
    /// End of the bin, ns since the epoch (wall clock).
    pub t_ns: u64,
    /// Length of the bin as measured, ns.
    pub len_ns: u64,
    /// Bytes counted by the interface in the bin (per the direction setting).
    pub bytes: u64,
    /// Packets counted by the interface.
    pub packets: u64,
    /// Utilisation, fraction of the link rate.
    pub util: f64,
    /// Trailing moving average over the smoothing window.
    pub util_smooth: f64,
    /// Bytes of the packets captured with `AF_PACKET` in the bin (with `--capture`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_bytes: Option<u64>,
    /// Packets captured in the bin (with `--capture`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_packets: Option<u64>,
}

/// Settings of a live run.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// Interface name.
    pub iface: String,
    /// Link rate.
    pub link_rate: Rate,
    /// Bin length.
    pub bin: Duration,
    /// Smoothing window.
    pub smooth: Duration,
    /// Stop after this long (None: until stopped).
    pub duration: Option<Duration>,
    /// Directions counted.
    pub direction: Direction,
    /// Also count packets from an `AF_PACKET` socket.
    pub capture: bool,
    /// Thresholds for the closing summary, percent.
    pub above: Vec<f64>,
}

static SIGINT: std::sync::LazyLock<Arc<AtomicBool>> =
    std::sync::LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// Makes SIGINT (and SIGTERM) set a flag that [`run`] polls instead of killing the process
/// (signal-hook's handler; once per process, later calls are harmless).
pub fn install_sigint_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Fails only for a forbidden signal (SIGKILL, SIGSTOP), which these are not.
            let _ = signal_hook::flag::register(sig, Arc::clone(&SIGINT));
        }
    });
}

/// True once SIGINT or SIGTERM arrived (after [`install_sigint_handler`]).
pub fn interrupted() -> bool {
    SIGINT.load(Ordering::SeqCst)
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Samples until the duration elapses or `stop()` turns true, writing one flushed JSON line per
/// bin to `out`; returns the summary over all whole bins.
pub fn run(
    cfg: &LiveConfig,
    out: &mut dyn Write,
    stop: &dyn Fn() -> bool,
) -> io::Result<UtilReport> {
    let capture = if cfg.capture {
        Some(PacketCounter::start(&cfg.iface)?)
    } else {
        None
    };
    let bin = std::time::Duration::from(cfg.bin);
    let k = (cfg.smooth.as_nanos() / cfg.bin.as_nanos().max(1)).max(1) as usize;
    let mut analyzer = UtilAnalyzer::new(UtilConfig {
        link_rate: cfg.link_rate,
        framing: Framing::Captured,
        bin: cfg.bin,
        smooth: cfg.smooth,
        above: cfg.above.clone(),
        top: 10,
        max_bins: u64::MAX,
        max_hosts: 0,
        max_fragments: 1,
    });
    let start = std::time::Instant::now();
    let mut prev = Counters::read(&cfg.iface)?;
    let mut prev_cap = capture.as_ref().map(|c| c.totals());
    let mut prev_t = start;
    let mut window: VecDeque<f64> = VecDeque::new();
    let mut i = 0u64;
    loop {
        let deadline = start + bin * (i as u32 + 1);
        let mut stopped = false;
        loop {
            let now = std::time::Instant::now();
            if now >= deadline {
                break;
            }
            if stop() {
                stopped = true;
                break;
            }
            thread::sleep((deadline - now).min(std::time::Duration::from_millis(50)));
        }
        if stopped {
            break;
        }
        let now = std::time::Instant::now();
        let c = Counters::read(&cfg.iface)?;
        let len_ns = (now - prev_t).as_nanos() as u64;
        let bytes = c
            .bytes(cfg.direction)
            .wrapping_sub(prev.bytes(cfg.direction));
        let packets = c
            .packets(cfg.direction)
            .wrapping_sub(prev.packets(cfg.direction));
        let util = bytes as f64 * 8.0 / (cfg.link_rate.0 as f64 * len_ns.max(1) as f64 / 1e9);
        window.push_back(util);
        if window.len() > k {
            window.pop_front();
        }
        let util_smooth = window.iter().sum::<f64>() / window.len() as f64;
        let (capture_bytes, capture_packets) = match (&capture, prev_cap) {
            (Some(cap), Some((pb, pp))) => {
                let (b, p) = cap.totals();
                prev_cap = Some((b, p));
                (Some(b - pb), Some(p - pp))
            }
            _ => (None, None),
        };
        let t_ns = wall_ns();
        let line = LiveBin {
            kind: "bin",
            bin: i,
            t_ns,
            len_ns,
            bytes,
            packets,
            util,
            util_smooth,
            capture_bytes,
            capture_packets,
        };
        // Bins are numbered on the nominal grid, so the analyser's series lines up with `bin`.
        analyzer.add_bytes(i * cfg.bin.as_nanos(), bytes, packets);
        let text = serde_json::to_string(&line).map_err(io::Error::other)?;
        writeln!(out, "{text}")?;
        out.flush()?;
        prev = c;
        prev_t = now;
        i += 1;
        if cfg
            .duration
            .is_some_and(|d| cfg.bin.as_nanos() * i >= d.as_nanos())
        {
            break;
        }
    }
    if let Some(c) = capture {
        c.stop();
    }
    Ok(analyzer.finish())
}

/// Counts packets and bytes seen on an interface through an `AF_PACKET` socket, in a thread.
pub struct PacketCounter {
    bytes: Arc<AtomicU64>,
    packets: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl PacketCounter {
    /// Opens the socket on `iface` (needs CAP_NET_RAW) and starts counting.
    pub fn start(iface: &str) -> io::Result<Self> {
        let sock = PacketSocket::open(iface, PacketOptions::counter())?;
        // On loopback every packet passes twice (outgoing and incoming): count it once.
        let loopback = fs::read_to_string(format!("/sys/class/net/{iface}/type"))
            .is_ok_and(|t| t.trim() == "772");
        let bytes = Arc::new(AtomicU64::new(0));
        let packets = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (b, p, s) = (bytes.clone(), packets.clone(), stop.clone());
        let thread = thread::spawn(move || {
            // Only the lengths are counted: a short buffer, the wire length from MSG_TRUNC.
            let mut buf = vec![0u8; 128];
            while !s.load(Ordering::Relaxed) {
                // Wake at least every 100 ms to see `stop`.
                if weft_sys::readable(&[sock.raw_fd()], Some(100_000_000)).is_err() {
                    break;
                }
                while let Ok(Some(r)) = sock.recv(&mut buf) {
                    if !(loopback && r.outgoing) {
                        b.fetch_add(r.len as u64, Ordering::Relaxed);
                        p.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        Ok(PacketCounter {
            bytes,
            packets,
            stop,
            thread: Some(thread),
        })
    }

    /// Bytes and packets counted so far.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.bytes.load(Ordering::Relaxed),
            self.packets.load(Ordering::Relaxed),
        )
    }

    /// Stops the thread and closes the socket.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
