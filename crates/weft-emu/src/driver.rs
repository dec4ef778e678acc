//! The real-time driver: runs a [`SwitchCore`] against CLOCK_MONOTONIC, moving frames between
//! AF_PACKET sockets. Each turn it reads what arrived (stamped with `now`) and sends what is due.
//! While the switch holds frames, or saw one recently, it busy-polls: a virtual CPU that halts in
//! `ppoll` wakes up 0.1-1 ms late on a hypervisor now and then, which would show as jitter on the
//! emulated links. Only when idle does it sleep in `ppoll` until new input. It records how late
//! each frame left compared with its due time (lag) and warns on stderr when it cannot keep up.
//!
//! The thread stays under normal scheduling by default: a SCHED_FIFO thread that never sleeps is
//! throttled by the kernel for 50 ms of every second (`sched_rt_runtime_us`). Nice -20 was tried
//! and dropped: with unlimited link rates it starved the hosts' own processes (bench/emu.sh TCP
//! 2.0-2.2 Gbit/s against 2.4-3.0 at nice 0).

use std::fs::File;
use std::io::BufWriter;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use weft_model::Instant;

use crate::fabric_stage::FabricStats;
use crate::lag::{LagHistogram, LagSummary};
use crate::pcap::{Direction, PcapWriter};
use crate::switch::{PortStats, SwitchCore};
use crate::sys::{PacketSocket, monotonic_now, ppoll_readable};

/// Tuning of the driver loop.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    /// Keep polling without sleeping while frames are queued and for this long (ns) after the
    /// last frame came or went; 0 sleeps between frames.
    pub busy_poll_ns: u64,
    /// When sleeping towards a deadline, wake this long before it and spin the rest (ns).
    pub spin_ns: u64,
    /// Frames read from one socket per turn before serving the others.
    pub batch: usize,
    /// A frame later than this (ns) counts towards the falling-behind warning.
    pub warn_lag_ns: u64,
    /// Print warnings to stderr.
    pub warn: bool,
    /// Run the switch thread under SCHED_FIFO at this priority (`None`: normal scheduling).
    pub realtime: Option<i32>,
    /// Keep every CPU from halting while the switch runs ([`crate::keep_awake`]).
    pub keep_awake: bool,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            busy_poll_ns: 50_000_000,
            spin_ns: 100_000,
            batch: 64,
            warn_lag_ns: 1_000_000,
            warn: true,
            realtime: None,
            keep_awake: true,
        }
    }
}

/// What the driver saw over a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DriverReport {
    /// How late frames left the switch relative to their due time.
    pub lag: LagSummary,
    /// Frames more than `warn_lag_ns` late.
    pub late_frames: u64,
    /// Counters per port, in host order.
    pub ports: Vec<PortStats>,
    /// Counters of the input-queued fabric, if the switch has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricStats>,
    /// Frames the kernel refused to take (peer backlog full).
    pub send_errors: u64,
    /// Times the loop slept in `ppoll`.
    pub sleeps: u64,
    /// Wall-clock duration of the run (ns).
    pub elapsed_ns: u64,
    /// Whether the switch thread ran under SCHED_FIFO.
    pub realtime: bool,
}

/// A capture tap on one port.
pub type Tap = Option<PcapWriter<BufWriter<File>>>;

/// Runs the switch until `stop` is set. `sockets[i]` and `taps[i]` belong to port `i`.
pub fn run(
    core: SwitchCore,
    sockets: &[PacketSocket],
    taps: &mut [Tap],
    cfg: &DriverConfig,
    stop: &AtomicBool,
) -> std::io::Result<DriverReport> {
    if !cfg.keep_awake {
        return serve(core, sockets, taps, cfg, stop);
    }
    let awake = crate::keep_awake::KeepAwake::new();
    std::thread::scope(|scope| {
        awake.start(scope);
        let report = serve(core, sockets, taps, cfg, stop);
        awake.stop();
        report
    })
}

fn serve(
    mut core: SwitchCore,
    sockets: &[PacketSocket],
    taps: &mut [Tap],
    cfg: &DriverConfig,
    stop: &AtomicBool,
) -> std::io::Result<DriverReport> {
    let mut fds: Vec<libc::pollfd> = sockets
        .iter()
        .map(|s| libc::pollfd {
            fd: s.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut real_offset = realtime_offset();
    let mut driven = monotonic_now();
    let mut lag = LagHistogram::new();
    let mut report = DriverReport {
        realtime: cfg.realtime.is_some_and(crate::sys::set_realtime),
        ..Default::default()
    };
    let mut buf = vec![0u8; 1 << 17];
    let start = monotonic_now();
    let mut window = (start.as_nanos(), 0u64, 0u64, 0u64); // start, frames, late, max lag
    let mut last_activity = start;
    while !stop.load(Ordering::Relaxed) {
        let now = monotonic_now();
        let mut full = false;
        let mut moved = false;
        for (port, sock) in sockets.iter().enumerate() {
            let mut n = 0;
            while n < cfg.batch {
                let Some((len, stamp)) = sock.recv(&mut buf)? else {
                    break;
                };
                // A frame arrived when the kernel queued it, not when this thread woke up to
                // read it: backdate it to the kernel's stamp, but never before the last instant
                // the switch has already been driven to.
                let at = if stamp > real_offset {
                    Instant((stamp - real_offset).clamp(driven.as_nanos(), now.as_nanos()))
                } else {
                    now
                };
                let frame = buf[..len].to_vec();
                if let Some(Some(tap)) = taps.get_mut(port) {
                    let _ = tap.write(real_offset + at.as_nanos(), Direction::FromHost, &frame);
                }
                core.handle_frame(at, port, frame);
                n += 1;
            }
            full |= n == cfg.batch;
            moved |= n > 0;
        }
        let now = monotonic_now();
        driven = now;
        while let Some(tx) = core.poll_transmit(now) {
            moved = true;
            let late = now.as_nanos().saturating_sub(tx.due.as_nanos());
            lag.record(late);
            window.1 += 1;
            window.3 = window.3.max(late);
            if late > cfg.warn_lag_ns {
                report.late_frames += 1;
                window.2 += 1;
            }
            if let Some(Some(tap)) = taps.get_mut(tx.port) {
                let _ = tap.write(
                    real_offset + tx.due.as_nanos(),
                    Direction::ToHost,
                    &tx.frame,
                );
            }
            if let Some(s) = sockets.get(tx.port) {
                if s.send(&tx.frame).is_err() {
                    report.send_errors += 1;
                }
            }
        }
        if now.as_nanos() - window.0 >= 1_000_000_000 {
            if cfg.warn && window.2 * 100 > window.1 && window.1 > 0 {
                eprintln!(
                    "weft emu: the switch is falling behind the clock: {} of {} frames more than {} us late in the last second (worst {} us)",
                    window.2,
                    window.1,
                    cfg.warn_lag_ns / 1000,
                    window.3 / 1000
                );
            }
            window = (now.as_nanos(), 0, 0, 0);
            // Follow any adjustment of the real-time clock (kernel stamps are CLOCK_REALTIME).
            real_offset = realtime_offset();
        }
        if moved {
            last_activity = now;
        }
        if full {
            continue;
        }
        let after = monotonic_now();
        let next = core.poll_timeout();
        let recent = after.as_nanos() - last_activity.as_nanos() < cfg.busy_poll_ns;
        if cfg.busy_poll_ns > 0 && (next.is_some() || recent) {
            std::hint::spin_loop();
            continue;
        }
        let timeout = match next {
            Some(d) if d <= after => continue,
            Some(d) => {
                let left = d.as_nanos() - after.as_nanos();
                left.saturating_sub(cfg.spin_ns)
            }
            None => 50_000_000,
        };
        if timeout > 0 {
            report.sleeps += 1;
        }
        for f in fds.iter_mut() {
            f.revents = 0;
        }
        ppoll_readable(&mut fds, Some(timeout))?;
    }
    for t in taps.iter_mut().flatten() {
        let _ = t.flush();
    }
    report.lag = lag.summary();
    report.ports = core.stats();
    report.fabric = core.fabric_stats();
    report.elapsed_ns = monotonic_now().as_nanos() - start.as_nanos();
    Ok(report)
}

/// Nanoseconds to add to a CLOCK_MONOTONIC reading to get Unix time (for capture stamps).
fn realtime_offset() -> u64 {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    wall.saturating_sub(monotonic_now().as_nanos())
}

/// The current instant on the driver's clock (CLOCK_MONOTONIC).
pub fn now() -> Instant {
    monotonic_now()
}
