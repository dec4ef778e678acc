//! The emulator's switches under a connection manager (issue 28): with
//! [`crate::UpOptions::vc_manager`], every switch that forwards by circuits starts with an empty
//! table and no contract, and one thread per switch (its agent) connects to the manager's socket
//! over the authenticated channel ([`crate::vc_control`]), says hello with the entries and
//! contracts it holds, installs the table and contracts the manager pushes (through the switch
//! thread, which applies [`TableOp`]s between turns) and acknowledges them. A switch that loses
//! its manager keeps both and says hello again, holding them, once the manager is back.
//!
//! [`fail`] (`weft emu fail SWITCH --for D`) restarts a switch in a running emulation: its
//! table and contracts are cleared (Sandia's failure: every PVC through it gone), its agent
//! drops the manager and stays away for `D`, then comes back empty; the manager pushes both
//! again without any manual step, and the time from the switch's hello to its table installed (the restore
//! time) comes back to the caller. Requests reach the emulation on a Unix socket next to its run
//! record (`<run id>.vc.sock`), one JSON line each way.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use weft_gate::auth::Key;
use weft_model::net::Network;
use weft_model::vc::wire::Msg;
use weft_model::vc::{Entry, Held, PortContract};

use crate::error::EmuError;
use crate::vc_control::{Channel, ControlError};

/// Where the manager listens and the key both sides hold.
#[derive(Clone, Debug)]
pub struct ManagerLink {
    /// The manager's Unix socket.
    pub socket: PathBuf,
    /// The pre-shared key.
    pub key: Key,
}

/// A change to a switch's table, applied by the switch thread between turns.
#[derive(Debug)]
pub enum TableOp {
    /// Install `entries` as switch `switch`'s table and enforce `contracts`; what it then holds
    /// goes to `done`.
    Install {
        /// The switch (topology order).
        switch: usize,
        /// Its whole table, in the database's port numbers.
        entries: Vec<Entry>,
        /// Its contracts, in the database's port numbers.
        contracts: Vec<PortContract>,
        /// Told what the switch holds after.
        done: Sender<Held>,
    },
    /// Clear switch `switch`'s table and contracts.
    Clear {
        /// The switch.
        switch: usize,
    },
}

/// Where the agents send [`TableOp`]s: each also wakes the switch thread, which may be asleep
/// in `ppoll` for up to 50 ms when no frame moves.
#[derive(Clone, Debug)]
pub struct OpSender {
    tx: Sender<TableOp>,
    wake: Arc<UnixStream>,
}

impl OpSender {
    /// Sends `op` and wakes the switch thread.
    pub fn send(&self, op: TableOp) {
        let _ = self.tx.send(op);
        let _ = (&*self.wake).write(&[1]);
    }
}

/// The switch thread's end of the [`TableOp`]s: a descriptor for its poll set, and the ops.
#[derive(Debug)]
pub struct OpReceiver {
    rx: Receiver<TableOp>,
    wake: UnixStream,
}

impl OpReceiver {
    /// The descriptor that becomes readable when an op arrives.
    pub fn wake_fd(&self) -> i32 {
        self.wake.as_raw_fd()
    }

    /// The ops that arrived (and the wake-ups, consumed).
    pub fn drain(&self) -> std::sync::mpsc::TryIter<'_, TableOp> {
        let mut b = [0u8; 64];
        while (&self.wake).read(&mut b).is_ok_and(|n| n > 0) {}
        self.rx.try_iter()
    }
}

/// A channel of table changes to a switch thread.
pub fn table_ops() -> std::io::Result<(OpSender, OpReceiver)> {
    let (a, b) = UnixStream::pair()?;
    a.set_nonblocking(true)?;
    b.set_nonblocking(true)?;
    let (tx, rx) = channel();
    Ok((
        OpSender {
            tx,
            wake: Arc::new(a),
        },
        OpReceiver { rx, wake: b },
    ))
}

/// Applies `op` to `net` (a table or contract the switch cannot install leaves what it had).
pub fn apply(net: &mut Network<Vec<u8>>, op: TableOp) {
    match op {
        TableOp::Install {
            switch,
            entries,
            contracts,
            done,
        } => {
            let held = net
                .switch_mut(switch)
                .and_then(|s| s.circuits_mut())
                .map_or(Held::default(), |v| {
                    let _ = v.install(&entries, &contracts);
                    v.held()
                });
            let _ = done.send(held);
        }
        TableOp::Clear { switch } => {
            if let Some(v) = net.switch_mut(switch).and_then(|s| s.circuits_mut()) {
                v.clear();
            }
        }
    }
}

/// What `weft emu fail` reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailReport {
    /// The switch.
    pub switch: String,
    /// How long it was away from its manager, ns.
    pub down_ns: u64,
    /// From its hello on coming back (empty) to its whole table installed, ns.
    pub restore_ns: u64,
    /// Entries it holds again.
    pub entries: usize,
    /// Contracts it enforces again.
    #[serde(default)]
    pub contracts: usize,
    /// When its table was cleared, ns of CLOCK_MONOTONIC (the same clock in every process).
    #[serde(default)]
    pub cleared_at_ns: u64,
    /// From its table cleared to its whole table installed again, ns: how long its circuits
    /// were gone (`down_ns`, then its reconnection, hello, push and install).
    #[serde(default)]
    pub outage_ns: u64,
}

/// A request on the emulation's socket.
#[derive(Debug, Serialize, Deserialize)]
struct FailRequest {
    switch: String,
    for_ns: u64,
}

/// The answer to a [`FailRequest`].
#[derive(Debug, Serialize, Deserialize)]
enum FailReply {
    Restored(FailReport),
    Error(String),
}

type Fail = (u64, Sender<FailReport>);

/// Where [`serve_fails`] hands one switch's agent a failure: the request, and a byte on `wake`
/// so that the agent, waiting on its manager's channel, takes it at once.
struct FailTo {
    name: String,
    tx: Sender<Fail>,
    wake: UnixStream,
}

/// The running agents of an emulation's switches and its socket for failure requests.
pub struct Agents {
    handles: Vec<JoinHandle<()>>,
    socket: PathBuf,
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents")
            .field("switches", &self.handles.len().saturating_sub(1))
            .field("socket", &self.socket)
            .finish()
    }
}

/// The socket of run `run_id` that takes failure requests.
pub fn fail_socket(run_id: &str) -> PathBuf {
    crate::state::state_dir().join(format!("{run_id}.vc.sock"))
}

fn sleep_unless(stop: &AtomicBool, ns: u64) {
    let end = weft_sys::clock::monotonic_ns().saturating_add(ns);
    while !stop.load(Ordering::Relaxed) {
        let now = weft_sys::clock::monotonic_ns();
        if now >= end {
            return;
        }
        std::thread::sleep(Duration::from_nanos((end - now).min(20_000_000)));
    }
}

/// Whether `fd` has something to read within `ns`.
fn readable(fd: i32, ns: u64) -> bool {
    weft_sys::readable(&[fd], Some(ns)).is_ok_and(|r| r[0])
}

impl Agents {
    /// Starts an agent for each of `switches` (topology index, name) and the failure socket of
    /// run `run_id`; they run until `stop` is set, sending table changes on `ops`.
    pub fn start(
        run_id: &str,
        switches: Vec<(usize, String)>,
        link: &ManagerLink,
        ops: OpSender,
        stop: Arc<AtomicBool>,
    ) -> Result<Agents, EmuError> {
        let socket = fail_socket(run_id);
        // The run's record, written once it is up, creates the directory too late for this.
        let dir = crate::state::state_dir();
        std::fs::create_dir_all(&dir)
            .map_err(EmuError::io(format!("creating {}", dir.display())))?;
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket)
            .map_err(EmuError::io(format!("listening on {}", socket.display())))?;
        let mut handles = Vec::new();
        let mut fails = Vec::new();
        for (s, name) in switches {
            let (tx, rx) = channel::<Fail>();
            let (wake, woken) =
                UnixStream::pair().map_err(EmuError::io("making a switch agent's wake-up"))?;
            let _ = wake.set_nonblocking(true);
            let _ = woken.set_nonblocking(true);
            fails.push(FailTo {
                name: name.clone(),
                tx,
                wake,
            });
            let (link, ops, stop) = (link.clone(), ops.clone(), stop.clone());
            handles.push(
                std::thread::Builder::new()
                    .name(format!("weft-vc-{name}"))
                    .spawn(move || agent(s, &name, &link, &ops, (&rx, &woken), &stop))
                    .map_err(EmuError::io("starting a switch agent"))?,
            );
        }
        handles.push(
            std::thread::Builder::new()
                .name("weft-vc-fail".into())
                .spawn(move || serve_fails(&listener, &fails, &stop))
                .map_err(EmuError::io("starting the failure socket"))?,
        );
        Ok(Agents { handles, socket })
    }

    /// Waits for every agent (after the emulation's stop flag is set) and removes the socket.
    pub fn join(self) {
        for h in self.handles {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// One switch's agent: connects, says hello, installs pushes, acknowledges; on a failure
/// request (`fails`, with a byte on its wake-up socket) clears its table and stays away for the
/// time asked.
fn agent(
    s: usize,
    name: &str,
    link: &ManagerLink,
    ops: &OpSender,
    (fails, woken): (&Receiver<Fail>, &UnixStream),
    stop: &AtomicBool,
) {
    let mut held = Held::default();
    // A failure being restored: its reply, how long the switch was away, and when it was cleared.
    let mut pending: Option<(Sender<FailReport>, u64, u64)> = None;
    while !stop.load(Ordering::Relaxed) {
        let connected = UnixStream::connect(&link.socket)
            .and_then(|st| {
                st.set_read_timeout(Some(Duration::from_secs(2)))?;
                st.set_write_timeout(Some(Duration::from_secs(2)))?;
                Ok(st)
            })
            .map_err(ControlError::from)
            .and_then(|st| Channel::connect(st, &link.key));
        let mut ch = match connected {
            Ok(c) => c,
            Err(_) => {
                sleep_unless(stop, 50_000_000);
                continue;
            }
        };
        let hello_at = weft_sys::clock::monotonic_ns();
        let hello = Msg::Hello {
            switch: name.to_owned(),
            held: held.entries as u32,
            contracts: held.contracts as u32,
        };
        if ch.send(&hello).is_err() {
            continue;
        }
        let fd = ch.stream().as_raw_fd();
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            if let Ok((for_ns, reply)) = fails.try_recv() {
                ops.send(TableOp::Clear { switch: s });
                let cleared = weft_sys::clock::monotonic_ns();
                held = Held::default();
                drop(ch);
                sleep_unless(stop, for_ns);
                pending = Some((reply, for_ns, cleared));
                break;
            }
            // The manager's channel or a failure request, whichever comes first.
            let ready = weft_sys::readable(&[fd, woken.as_raw_fd()], Some(20_000_000));
            let Ok(ready) = ready else { continue };
            if ready[1] {
                let mut b = [0u8; 64];
                while (&*woken).read(&mut b).is_ok_and(|n| n > 0) {}
            }
            if !ready[0] {
                continue;
            }
            match ch.recv() {
                Ok(Msg::Push { entries, contracts }) => {
                    let (tx, rx) = channel();
                    ops.send(TableOp::Install {
                        switch: s,
                        entries,
                        contracts,
                        done: tx,
                    });
                    held = rx.recv_timeout(Duration::from_secs(5)).unwrap_or(held);
                    let installed = weft_sys::clock::monotonic_ns();
                    let ack = Msg::Ack {
                        held: held.entries as u32,
                        contracts: held.contracts as u32,
                    };
                    if ch.send(&ack).is_err() {
                        break;
                    }
                    if let Some((reply, down_ns, cleared)) = pending.take() {
                        let _ = reply.send(FailReport {
                            switch: name.to_owned(),
                            down_ns,
                            restore_ns: installed.saturating_sub(hello_at),
                            entries: held.entries,
                            contracts: held.contracts,
                            cleared_at_ns: cleared,
                            outage_ns: installed.saturating_sub(cleared),
                        });
                    }
                }
                // Anything else from the manager, or a closed or failed channel: connect again.
                _ => break,
            }
        }
    }
}

/// Serves failure requests until `stop`: one JSON line in, one out.
fn serve_fails(listener: &UnixListener, fails: &[FailTo], stop: &AtomicBool) {
    let _ = listener.set_nonblocking(true);
    while !stop.load(Ordering::Relaxed) {
        // Taken as soon as it comes: a scenario's `[vc] fail` times the failure by it.
        let Ok((conn, _)) = listener.accept() else {
            let _ = readable(listener.as_raw_fd(), 20_000_000);
            continue;
        };
        let _ = conn.set_nonblocking(false);
        let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
        let mut line = String::new();
        let read = BufReader::new(Read::take(&conn, 4096)).read_line(&mut line);
        let reply = match read
            .ok()
            .and_then(|_| serde_json::from_str::<FailRequest>(&line).ok())
        {
            None => FailReply::Error("not a failure request".into()),
            Some(r) => match fails.iter().find(|f| f.name == r.switch) {
                None => FailReply::Error(format!(
                    "no switch {:?} under the manager (switches: {})",
                    r.switch,
                    fails
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                Some(f) => {
                    let (rtx, rrx) = channel();
                    let _ = f.tx.send((r.for_ns, rtx));
                    let _ = (&f.wake).write(&[1]);
                    let wait = Duration::from_nanos(r.for_ns) + Duration::from_secs(30);
                    match rrx.recv_timeout(wait) {
                        Ok(rep) => FailReply::Restored(rep),
                        Err(_) => FailReply::Error(format!(
                            "switch {} did not get its table back within {} s of coming back \
                             (is the manager running?)",
                            r.switch,
                            wait.as_secs() - r.for_ns / 1_000_000_000
                        )),
                    }
                }
            },
        };
        let mut text = serde_json::to_string(&reply).unwrap_or_default();
        text.push('\n');
        let _ = (&conn).write_all(text.as_bytes());
    }
}

/// Fails switch `switch` of run `run_id` for `for_ns` and waits until the manager has restored
/// its table: what `weft emu fail` does.
pub fn fail(run_id: &str, switch: &str, for_ns: u64) -> Result<FailReport, EmuError> {
    let socket = fail_socket(run_id);
    let conn = UnixStream::connect(&socket).map_err(EmuError::io(format!(
        "connecting to {} (does run {run_id} have a manager: `weft emu up --vc-manager`?)",
        socket.display()
    )))?;
    let req = serde_json::to_string(&FailRequest {
        switch: switch.into(),
        for_ns,
    })
    .unwrap_or_default();
    (&conn)
        .write_all(format!("{req}\n").as_bytes())
        .map_err(EmuError::io("sending the failure request"))?;
    let mut line = String::new();
    BufReader::new(Read::take(&conn, 1 << 16))
        .read_line(&mut line)
        .map_err(EmuError::io("reading the failure's outcome"))?;
    match serde_json::from_str::<FailReply>(&line) {
        Ok(FailReply::Restored(r)) => Ok(r),
        Ok(FailReply::Error(e)) => Err(EmuError::Switch(e)),
        Err(_) => Err(EmuError::Switch(format!(
            "the emulation answered {:?}",
            line.trim()
        ))),
    }
}
