//! The emulator's side of the one event engine ([`weft_model::engine::run`]): the network of
//! switches runs against CLOCK_MONOTONIC ([`WallClock`]) between the hosts' AF_PACKET sockets
//! ([`SocketHosts`]). Each turn it reads what arrived (stamped with the kernel's receive time),
//! sends what is due, and records how late each frame left against its due time (lag).
//!
//! While the network holds frames, or saw one recently, the clock busy-polls: a virtual CPU that
//! halts in `ppoll` wakes up 0.1-1 ms late on a hypervisor now and then, which would show as
//! jitter on the emulated links. Only when idle does it sleep in `ppoll` until new input.
//!
//! The thread stays under normal scheduling by default: a SCHED_FIFO thread that never sleeps is
//! throttled by the kernel for 50 ms of every second (`sched_rt_runtime_us`). Nice -20 was tried
//! and dropped: with unlimited link rates it starved the hosts' own processes (bench/emu.sh TCP
//! 2.0-2.2 Gbit/s against 2.4-3.0 at nice 0).
//!
//! Falling behind is reported once per episode (a run of seconds in each of which more than 1%
//! of frames left over `warn_lag_ns` late), with its length and counts, and the report carries
//! the fraction of late frames and a `degraded` flag.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use weft_model::Instant;
use weft_model::engine::{self, Clock, Hosts};
use weft_model::net::{FabricStats, Network, PortStats, TrunkStats};

use crate::lag::{LagHistogram, LagSummary};
use crate::port_io::{FrameRx, SwitchPort};
use crate::tx_batch::{FrameTx, TxBatches};
use crate::vc_agent::OpReceiver;
use weft_sys::ppoll_readable;

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
    /// A frame later than this (ns) counts as late.
    pub warn_lag_ns: u64,
    /// Print warnings to stderr.
    pub warn: bool,
    /// Run the switch thread under SCHED_FIFO at this priority (`None`: normal scheduling).
    pub realtime: Option<i32>,
    /// Keep every CPU from halting while the switch runs ([`crate::keep_awake`]).
    pub keep_awake: bool,
    /// How frames are read from the ports ([`FrameRx::from_env`] by default).
    pub rx: FrameRx,
    /// How frames are written to the ports ([`FrameTx::from_env`] by default).
    pub tx: FrameTx,
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
            rx: FrameRx::from_env(),
            tx: FrameTx::from_env(),
        }
    }
}

/// Fraction of late frames above which a run is marked degraded.
pub const DEGRADED_FRACTION: f64 = 0.01;

/// What the driver saw over a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DriverReport {
    /// How late frames left the switch relative to their due time.
    pub lag: LagSummary,
    /// Frames more than `warn_lag_ns` late.
    pub late_frames: u64,
    /// `late_frames` over all frames sent.
    pub late_fraction: f64,
    /// More than 1% of frames were late: the emulated timing did not hold.
    pub degraded: bool,
    /// Episodes of falling behind (runs of seconds with over 1% late frames).
    pub lag_episodes: u64,
    /// Counters per host port, in host order.
    pub ports: Vec<PortStats>,
    /// Counters per trunk between switches, in trunk order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trunks: Vec<TrunkStats>,
    /// Counters of the input-queued fabric, if a switch has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricStats>,
    /// Counters of the switches' circuits, when they forward by VPI/VCI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vc: Option<weft_model::net::VcStats>,
    /// Frames the kernel refused to take (peer backlog full).
    pub send_errors: u64,
    /// System calls that sent frames (`send`, or `sendmmsg` for a turn's frames to one port).
    pub send_calls: u64,
    /// Times the loop slept in `ppoll`.
    pub sleeps: u64,
    /// Wall-clock duration of the run (ns).
    pub elapsed_ns: u64,
    /// Whether the switch thread ran under SCHED_FIFO.
    pub realtime: bool,
    /// A capture file that could not be written completely.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_error: Option<String>,
}

/// CLOCK_MONOTONIC as the engine's clock: busy-polls while there is work or was recently,
/// otherwise sleeps in `ppoll` on the sockets until the deadline. Before it waits, the turn is
/// over: it hands the turn's held frames to the kernel ([`TxBatches::flush`]).
pub struct WallClock<'a> {
    sockets: &'a [SwitchPort],
    tx: &'a RefCell<TxBatches>,
    fds: Vec<libc::pollfd>,
    busy_poll_ns: u64,
    spin_ns: u64,
    last_activity: Instant,
    sleeps: u64,
    error: Option<std::io::Error>,
}

impl<'a> WallClock<'a> {
    /// A clock that watches `sockets` while it sleeps and sends the frames held in `tx` to
    /// them at the end of each turn.
    pub fn new(sockets: &'a [SwitchPort], cfg: &DriverConfig, tx: &'a RefCell<TxBatches>) -> Self {
        WallClock {
            sockets,
            tx,
            fds: sockets
                .iter()
                .map(|s| libc::pollfd {
                    fd: s.raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect(),
            busy_poll_ns: cfg.busy_poll_ns,
            spin_ns: cfg.spin_ns,
            last_activity: monotonic_now(),
            sleeps: 0,
            error: None,
        }
    }
}

impl WallClock<'_> {
    /// Also wakes from `ppoll` when `fd` becomes readable (the caller drains it).
    pub fn watch(&mut self, fd: i32) {
        self.fds.push(libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
    }
}

impl Clock for WallClock<'_> {
    fn now(&self) -> Instant {
        monotonic_now()
    }

    fn wait_until(&mut self, deadline: Option<Instant>, active: bool) -> Instant {
        self.tx.borrow_mut().flush(self.sockets);
        let now = monotonic_now();
        if active {
            self.last_activity = now;
        }
        let recent = now.0.saturating_sub(self.last_activity.0) < self.busy_poll_ns;
        if self.busy_poll_ns > 0 && (deadline.is_some() || recent) {
            std::hint::spin_loop();
            return monotonic_now();
        }
        let timeout = match deadline {
            Some(d) if d <= now => return now,
            Some(d) => (d.0 - now.0).saturating_sub(self.spin_ns),
            None => 50_000_000,
        };
        if timeout > 0 {
            self.sleeps += 1;
        }
        for f in self.fds.iter_mut() {
            f.revents = 0;
        }
        if let Err(e) = ppoll_readable(&mut self.fds, Some(timeout)) {
            self.error.get_or_insert(e);
        }
        monotonic_now()
    }
}

/// The namespaced hosts as the engine sees them: frames read from and written to the switch
/// ends of their veth pairs.
pub struct SocketHosts<'a> {
    sockets: &'a [SwitchPort],
    buf: Vec<u8>,
    batch: usize,
    /// Frames read from each socket in the current turn.
    read: Vec<usize>,
    next_socket: usize,
    turn: Instant,
    driven: Instant,
    more: bool,
    real_offset: u64,
    lag: LagHistogram,
    warn_lag_ns: u64,
    sent: u64,
    late: u64,
    tx: &'a RefCell<TxBatches>,
    error: Option<std::io::Error>,
}

impl<'a> SocketHosts<'a> {
    /// The hosts behind `sockets` (one per host port, in host order); frames to them go
    /// through `tx`.
    pub fn new(sockets: &'a [SwitchPort], cfg: &DriverConfig, tx: &'a RefCell<TxBatches>) -> Self {
        let now = monotonic_now();
        SocketHosts {
            sockets,
            buf: vec![0u8; 1 << 17],
            batch: cfg.batch.max(1),
            read: vec![0; sockets.len()],
            next_socket: 0,
            turn: now,
            driven: now,
            more: false,
            real_offset: realtime_offset(),
            lag: LagHistogram::new(),
            warn_lag_ns: cfg.warn_lag_ns,
            sent: 0,
            late: 0,
            tx,
            error: None,
        }
    }

    /// Frames sent to hosts so far, and how many of them were late.
    pub fn counts(&self) -> (u64, u64) {
        (self.sent, self.late)
    }

    /// Re-reads the offset from CLOCK_MONOTONIC to CLOCK_REALTIME (kernel receive stamps are
    /// CLOCK_REALTIME); call now and then to follow clock adjustments.
    pub fn refresh_clock(&mut self) {
        self.real_offset = realtime_offset();
    }
}

impl Hosts<Vec<u8>> for SocketHosts<'_> {
    fn poll_send(&mut self, now: Instant) -> Option<(usize, Instant, Vec<u8>)> {
        if now != self.turn {
            self.driven = self.turn;
            self.turn = now;
            self.read.iter_mut().for_each(|r| *r = 0);
            self.more = false;
        }
        let n = self.sockets.len();
        for k in 0..n {
            let port = (self.next_socket + k) % n;
            if self.read[port] >= self.batch {
                self.more = true;
                continue;
            }
            match self.sockets[port].recv(&mut self.buf) {
                Ok(Some(weft_sys::Received {
                    stored: len,
                    stamp_ns: stamp,
                    ..
                })) => {
                    self.read[port] += 1;
                    self.next_socket = (port + 1) % n;
                    // A frame arrived when the kernel queued it, not when this thread woke up
                    // to read it: backdate it to the kernel's stamp, but never before the last
                    // instant the network has already been driven to.
                    let at = if stamp > self.real_offset {
                        Instant((stamp - self.real_offset).clamp(self.driven.0, now.0))
                    } else {
                        now
                    };
                    return Some((port, at, self.buf[..len].to_vec()));
                }
                Ok(None) => {}
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
        }
        None
    }

    fn deliver(&mut self, now: Instant, port: usize, due: Instant, frame: Vec<u8>) {
        let late = now.0.saturating_sub(due.0);
        self.lag.record(late);
        self.sent += 1;
        if late > self.warn_lag_ns {
            self.late += 1;
        }
        self.tx.borrow_mut().push(self.sockets, port, frame);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // A socket that filled its batch has more to read at once.
        self.more.then_some(self.turn)
    }
}

/// Tells when the switch falls behind: once per episode, with its length and counts.
struct LagWatch {
    warn: bool,
    warn_lag_ns: u64,
    second_start: Instant,
    base: (u64, u64),
    episode: Option<(Instant, u64, u64)>,
    episodes: u64,
}

impl LagWatch {
    fn tick(&mut self, now: Instant, (sent, late): (u64, u64)) {
        if now.0 - self.second_start.0 < 1_000_000_000 {
            return;
        }
        let (frames, lates) = (sent - self.base.0, late - self.base.1);
        let behind = frames > 0 && lates as f64 > DEGRADED_FRACTION * frames as f64;
        match (&mut self.episode, behind) {
            (None, true) => {
                self.episodes += 1;
                self.episode = Some((self.second_start, frames, lates));
                if self.warn {
                    eprintln!(
                        "weft emu: the switch is falling behind the clock: {lates} of {frames} frames more than {} us late in the last second (reported again when it catches up)",
                        self.warn_lag_ns / 1000
                    );
                }
            }
            (Some((_, f, l)), true) => {
                *f += frames;
                *l += lates;
            }
            (Some(_), false) => self.end(now),
            (None, false) => {}
        }
        self.second_start = now;
        self.base = (sent, late);
    }

    fn end(&mut self, now: Instant) {
        if let Some((start, f, l)) = self.episode.take() {
            if self.warn {
                eprintln!(
                    "weft emu: the switch caught up after {:.0} s behind the clock: {l} of {f} frames were more than {} us late",
                    (now.0 - start.0) as f64 / 1e9,
                    self.warn_lag_ns / 1000
                );
            }
        }
    }
}

/// Runs `net` between the hosts behind `sockets` until `stop` is set; `sockets[i]` is host
/// `i`'s port. Changes to the switches' circuit tables that arrive on `table_ops` (from their
/// connection manager's agents) are applied between turns.
pub fn run(
    mut net: Network<Vec<u8>>,
    sockets: &[SwitchPort],
    cfg: &DriverConfig,
    stop: &AtomicBool,
    table_ops: Option<&OpReceiver>,
) -> std::io::Result<DriverReport> {
    if !cfg.keep_awake {
        return serve(&mut net, sockets, cfg, stop, table_ops);
    }
    crate::keep_awake::around(|| serve(&mut net, sockets, cfg, stop, table_ops))
}

fn serve(
    net: &mut Network<Vec<u8>>,
    sockets: &[SwitchPort],
    cfg: &DriverConfig,
    stop: &AtomicBool,
    table_ops: Option<&OpReceiver>,
) -> std::io::Result<DriverReport> {
    let realtime = cfg.realtime.is_some_and(weft_sys::sched::set_realtime);
    let tx = RefCell::new(TxBatches::new(sockets.len(), cfg.tx));
    let mut clock = WallClock::new(sockets, cfg, &tx);
    if let Some(ops) = table_ops {
        clock.watch(ops.wake_fd());
    }
    let mut hosts = SocketHosts::new(sockets, cfg, &tx);
    let start = monotonic_now();
    let mut watch = LagWatch {
        warn: cfg.warn,
        warn_lag_ns: cfg.warn_lag_ns,
        second_start: start,
        base: (0, 0),
        episode: None,
        episodes: 0,
    };
    engine::run(
        net,
        &mut hosts,
        &mut clock,
        |now, net: &mut Network<Vec<u8>>, hosts: &mut SocketHosts<'_>| {
            for op in table_ops.into_iter().flat_map(OpReceiver::drain) {
                crate::vc_agent::apply(net, op);
            }
            if now.0 - watch.second_start.0 >= 1_000_000_000 {
                watch.tick(now, hosts.counts());
                hosts.refresh_clock();
            }
            !stop.load(Ordering::Relaxed) && hosts.error.is_none()
        },
    );
    tx.borrow_mut().flush(sockets);
    let end = monotonic_now();
    watch.end(end);
    if let Some(e) = hosts.error.take().or(clock.error.take()) {
        return Err(e);
    }
    let (sent, late) = hosts.counts();
    let late_fraction = if sent > 0 {
        late as f64 / sent as f64
    } else {
        0.0
    };
    let capture_error = net.take_tap().and_then(|mut t| t.finish().err());
    Ok(DriverReport {
        lag: hosts.lag.summary(),
        late_frames: late,
        late_fraction,
        degraded: late_fraction > DEGRADED_FRACTION,
        lag_episodes: watch.episodes,
        ports: net.all_host_stats(),
        trunks: net.trunk_stats(),
        fabric: net.fabric_stats(),
        vc: net.vc_stats(),
        send_errors: tx.borrow().refused(),
        send_calls: tx.borrow().calls(),
        sleeps: clock.sleeps,
        elapsed_ns: end.0 - start.0,
        realtime,
        capture_error,
    })
}

/// Nanoseconds to add to a CLOCK_MONOTONIC reading to get Unix time (capture stamps, kernel
/// receive stamps).
pub fn realtime_offset() -> u64 {
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

/// CLOCK_MONOTONIC as a model instant (epoch: boot).
fn monotonic_now() -> Instant {
    Instant(weft_sys::clock::monotonic_ns())
}
