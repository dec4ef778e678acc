//! A scenario's `[vc] fail` on the emulator (issue 28): `weft run FILE --engine emu` runs the
//! failure the simulator runs ([`weft_model::net::VcManaged`]) through the path `weft emu fail`
//! takes. The scenario is brought up under a connection manager of the run's own (a thread
//! serving [`crate::vc_manager::serve`] on a private Unix socket with a random key), so every
//! switch starts empty and gets its table and contracts from it; once all hold them the workload
//! starts, and `at` after the first frame any host sends (the simulator's time 0 is the
//! workload's start, where its ranks send their first segments) the switch is failed with
//! [`crate::vc_agent::fail`]: its agent clears it (every cell on a circuit through it is counted
//! and dropped, the `vc` counters' `cells_unknown`), stays away from the manager for `for`, comes
//! back empty, and the manager restores it without any manual step. The sample then carries the
//! restore time the simulator reports, `vc_restore_us`: the manager's, from the switch's hello to
//! its acknowledgement, as [`weft_model::vc::Restore::restore_time`] gives it on both engines.
//! The control channel is the real socket (its delay is the machine's, not the scenario's
//! `control_delay`), and the switch stays away `for` plus its reconnection (the note says how
//! long its circuits were gone).

use std::io::Read;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use weft_gate::auth::Key;
use weft_model::Scenario;
use weft_model::net::{Topology, VcFailure};
use weft_model::scenario::run::PointResult;
use weft_model::vc::{Held, Manager, Restore, plan, resolve_all};

use crate::emulation::Emulation;
use crate::error::EmuError;
use crate::vc_agent::{FailReport, ManagerLink, fail};

/// How long the switches may take to get their tables at the start (a loaded machine is slow).
const INSTALL_WITHIN: Duration = Duration::from_secs(30);

/// How often the first frame is looked for: the error of the failure's start, at most.
const FIRST_FRAME_POLL: Duration = Duration::from_micros(100);

/// A scenario's failure being run: its manager, and the thread that fails the switch.
pub struct FailRun {
    failure: VcFailure,
    socket: PathBuf,
    key: Key,
    stop: Arc<AtomicBool>,
    manager: Option<JoinHandle<()>>,
    restores: Receiver<Restore>,
    /// The switches that must hold a table or a contract before the workload starts.
    tables: Vec<String>,
    failing: Option<JoinHandle<Result<Fired, EmuError>>>,
}

impl std::fmt::Debug for FailRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailRun")
            .field("failure", &self.failure)
            .field("socket", &self.socket)
            .finish()
    }
}

/// What the failing thread saw.
#[derive(Clone, Debug)]
struct Fired {
    /// The first frame's time, ns of CLOCK_MONOTONIC.
    first_frame_ns: u64,
    /// What `weft emu fail` reports.
    report: FailReport,
}

/// The failure as run: what the sample reports.
#[derive(Clone, Debug)]
pub struct FailOutcome {
    /// The manager's restore of the failed switch (hello to acknowledgement).
    pub restore: Restore,
    /// What the switch's agent reported (`weft emu fail`'s report).
    pub report: FailReport,
    /// From the workload's first frame to the switch's table cleared, ns.
    pub cleared_after_ns: u64,
}

impl FailOutcome {
    /// The restore time, us: the simulator's `vc_restore_us`.
    pub fn restore_us(&self) -> f64 {
        self.restore.restore_time().as_nanos() as f64 / 1e3
    }

    /// One line saying what happened.
    pub fn note(&self, f: &VcFailure) -> String {
        let ms = |ns: u64| ns as f64 / 1e6;
        format!(
            "[vc] fail on the emulator, by `weft emu fail`'s path: {} cleared {:.2} ms after the \
             workload's first frame (asked: {:.2} ms), away from its manager {:.2} ms, its \
             circuits gone {:.2} ms; the manager restored its {} entries and {} contracts {:.0} us \
             after its hello over a Unix socket (the scenario's control_delay, {:.0} us one way, \
             is the simulator's)",
            self.report.switch,
            ms(self.cleared_after_ns),
            ms(f.at.as_nanos()),
            ms(self.report.down_ns),
            ms(self.report.outage_ns),
            self.report.entries,
            self.report.contracts,
            self.restore_us(),
            f.control_delay.as_nanos() as f64 / 1e3,
        )
    }
}

/// A socket path of this process's own.
fn socket_path() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "weft-vc-manager-{}-{}.sock",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

impl FailRun {
    /// Starts the manager of `s`'s circuits when `topo` (built from `s`) names a failure;
    /// `None` when it names none.
    pub fn start(s: &Scenario, topo: &Topology) -> Result<Option<FailRun>, EmuError> {
        let Some(failure) = topo.circuits.as_ref().and_then(|c| c.failure.clone()) else {
            return Ok(None);
        };
        let bad = |e: String| EmuError::Switch(format!("[vc]: {e}"));
        let (Some(db), Some(shape)) = (&s.vc, &s.vc_forward) else {
            return Err(bad("`fail` needs a database and `forward`".into()));
        };
        let plan = plan(db, shape).map_err(|e| bad(e.to_string()))?;
        let contracts = resolve_all(&s.vc_contracts, &plan).map_err(|e| bad(e.to_string()))?;
        let whole = Manager::new(&plan, &contracts);
        let tables = plan
            .tables
            .iter()
            .enumerate()
            .filter(|(i, _)| whole.whole(*i).is_some_and(|w| w != Held::default()))
            .map(|(_, t)| t.switch.clone())
            .collect();
        let mut secret = [0u8; 32];
        weft_gate::auth::random_bytes(&mut secret)
            .map_err(EmuError::io("making the manager's key"))?;
        let key = Key::from_derived(secret);
        let socket = socket_path();
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket)
            .map_err(EmuError::io(format!("listening on {}", socket.display())))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, restores) = channel();
        let manager = {
            let (stop, key) = (stop.clone(), key.clone());
            std::thread::Builder::new()
                .name("weft-vc-manager".into())
                .spawn(move || {
                    let on = move |r: &Restore, _: Held| {
                        let _ = tx.send(r.clone());
                    };
                    if let Err(e) =
                        crate::vc_manager::serve(&listener, &plan, &contracts, &key, &stop, &on)
                    {
                        eprintln!("weft emu: the connection manager stopped: {e}");
                    }
                })
                .map_err(EmuError::io("starting the connection manager"))?
        };
        Ok(Some(FailRun {
            failure,
            socket,
            key,
            stop,
            manager: Some(manager),
            restores,
            tables,
            failing: None,
        }))
    }

    /// The manager the emulation's switches connect to (`UpOptions::vc_manager`).
    pub fn link(&self) -> ManagerLink {
        ManagerLink {
            socket: self.socket.clone(),
            key: self.key.clone(),
        }
    }

    /// Waits until every switch of `emu` holds its table, then starts the thread that fails
    /// the switch `at` after the first frame a host sends. Call it just before the workload.
    pub fn arm(&mut self, emu: &Emulation) -> Result<(), EmuError> {
        let mut waiting = self.tables.clone();
        let deadline = std::time::Instant::now() + INSTALL_WITHIN;
        while !waiting.is_empty() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let r = self.restores.recv_timeout(left).map_err(|_| {
                EmuError::Switch(format!(
                    "switches {} did not get their tables from the manager within {} s",
                    waiting.join(", "),
                    INSTALL_WITHIN.as_secs()
                ))
            })?;
            waiting.retain(|n| *n != r.switch);
        }
        let (run, ns, f) = (
            emu.run_id().to_owned(),
            emu.switch_ns().to_owned(),
            self.failure.clone(),
        );
        let stop = self.stop.clone();
        let ports = emu.hosts().len();
        let (ready, counting) = channel();
        let failing = std::thread::Builder::new()
            .name("weft-vc-fail-at".into())
            .spawn(move || fail_at(&run, &ns, ports, &f, &stop, ready))
            .map_err(EmuError::io("starting the failure's thread"))?;
        // Only once it counts frames may the workload send its first.
        let counted = counting.recv_timeout(INSTALL_WITHIN).is_ok();
        self.failing = Some(failing);
        if counted {
            Ok(())
        } else {
            self.stop.store(true, Ordering::Relaxed);
            match self.failing.take().map(JoinHandle::join) {
                Some(Ok(Err(e))) => Err(e),
                _ => Err(EmuError::Switch(
                    "[vc] fail: the failure's thread did not start".into(),
                )),
            }
        }
    }

    /// What the failure did: call it after the workload and the emulation's `down` (which ends
    /// a failure still waiting). The manager's restore of the switch may trail its agent's
    /// report by a moment; it is waited for up to 5 s.
    pub fn finish(mut self) -> Result<FailOutcome, EmuError> {
        let fired = self
            .failing
            .take()
            .ok_or_else(|| EmuError::Switch("[vc] fail was never armed".into()))?
            .join()
            .map_err(|_| EmuError::Switch("the failure's thread panicked".into()))??;
        let name = &fired.report.switch;
        let restore = loop {
            match self.restores.recv_timeout(Duration::from_secs(5)) {
                Ok(r) if r.switch == *name && r.lost_at.is_some() => break r,
                Ok(_) => continue,
                Err(_) => {
                    return Err(EmuError::Switch(format!(
                        "the manager never saw {name} restored"
                    )));
                }
            }
        };
        Ok(FailOutcome {
            restore,
            cleared_after_ns: fired
                .report
                .cleared_at_ns
                .saturating_sub(fired.first_frame_ns),
            report: fired.report,
        })
    }

    /// The failure this run carries out.
    pub fn failure(&self) -> &VcFailure {
        &self.failure
    }
}

impl Drop for FailRun {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.failing.take() {
            let _ = h.join();
        }
        if let Some(h) = self.manager.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Adds what failure `f` did to point result `r` after its run: `vc_restore_us` (the
/// simulator's key) and a note, or a note saying why there is none.
pub fn report(f: FailRun, r: &mut PointResult) {
    let failure = f.failure().clone();
    match f.finish() {
        Ok(o) => {
            r.metrics
                .insert("vc_restore_us".into(), serde_json::json!(o.restore_us()));
            r.notes.push(o.note(&failure));
        }
        Err(e) => r.notes.push(format!("[vc] fail did not run: {e}")),
    }
}

/// In the switch's namespace, says on `ready` that it counts frames, waits for the first frame
/// into any of its `ports`, then fails the switch `f.at` after it for `f.down` (giving up if
/// `stop` is set first).
fn fail_at(
    run: &str,
    switch_ns: &str,
    ports: usize,
    f: &VcFailure,
    stop: &AtomicBool,
    ready: std::sync::mpsc::Sender<()>,
) -> Result<Fired, EmuError> {
    weft_sys::netns::enter_netns(switch_ns)
        .map_err(EmuError::io(format!("entering namespace {switch_ns}")))?;
    let names: Vec<String> = (0..ports).map(|i| format!("p{i}")).collect();
    let before = frames_in(&names)?;
    let _ = ready.send(());
    let first_frame_ns = loop {
        if stop.load(Ordering::Relaxed) {
            return Err(EmuError::Switch(
                "[vc] fail: no host sent a frame before the run ended".into(),
            ));
        }
        if frames_in(&names)? > before {
            break weft_sys::clock::monotonic_ns();
        }
        std::thread::sleep(FIRST_FRAME_POLL);
    };
    let at = first_frame_ns.saturating_add(f.at.as_nanos());
    loop {
        let now = weft_sys::clock::monotonic_ns();
        if now >= at {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            return Err(EmuError::Switch(
                "[vc] fail: the run ended before the failure was due".into(),
            ));
        }
        std::thread::sleep(Duration::from_nanos((at - now).min(20_000_000)));
    }
    let report = fail(run, &f.switch, f.down.as_nanos())?;
    Ok(Fired {
        first_frame_ns,
        report,
    })
}

/// Frames received on the interfaces `names` of this thread's namespace so far
/// (`/proc/thread-self/net/dev`).
fn frames_in(names: &[String]) -> Result<u64, EmuError> {
    let mut text = String::new();
    std::fs::File::open("/proc/thread-self/net/dev")
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(EmuError::io("reading /proc/thread-self/net/dev"))?;
    Ok(rx_packets(&text, names))
}

/// The sum of the received packets of the interfaces `names` in `/proc/net/dev`'s `text`
/// (lines `name: rx_bytes rx_packets ...`; anything else is skipped).
fn rx_packets(text: &str, names: &[String]) -> u64 {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(n, _)| names.iter().any(|x| x == n.trim()))
        .filter_map(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_received_packets_of_the_named_interfaces_are_summed() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets\n    \
             lo:       0       0    0    0    0     0          0         0        0       0\n    \
             p0:    9000      12    0    0    0     0          0         0      100       1\n    \
             p1:     300       3    0    0    0     0          0         0        0       0\n   \
             p10:     999     100    0    0    0     0          0         0        0       0\n";
        let names = ["p0".to_string(), "p1".to_string()];
        assert_eq!(rx_packets(text, &names), 15);
        assert_eq!(rx_packets("p0: garbage", &names), 0);
        assert_eq!(rx_packets("", &names), 0);
    }
}
