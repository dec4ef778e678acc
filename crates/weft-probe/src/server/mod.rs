//! The measurement agent (`weft serve`): accepts control connections, runs tests, and survives
//! whatever bytes a client sends.
//!
//! One listening TCP socket carries both control connections (starting with `WEFT`) and TCP data
//! connections (starting with a `WEFD` hello and the test's cookie), so an agent needs one open
//! TCP port; UDP data uses one ephemeral UDP port per stream, announced in `Accept`.
//!
//! Every accepted connection gets a thread. Until it has identified itself (a control
//! connection's first message, with the proof of the agent's key if it has one; a data
//! connection's hello) it waits in a bounded lobby ([`weft_gate::Door`]): it has
//! [`Limits::lobby`]`.hello_timeout` (2 s) to do so, and when too many wait, in total or from
//! one address, the oldest waiting one is closed to make room. Idle connections therefore
//! cannot keep real clients out, and never take the place of a running test. A connection that
//! sends anything but a valid message, or exceeds a limit, gets an `Error` message (control
//! connections) and is closed. Tests are bounded by [`Limits`].
//!
//! With [`ServerConfig::key`] the agent serves only clients that prove the key (see
//! [`crate::auth`]).
//!
//! A control connection may also ask the agent to run a test toward another agent as its client
//! (a `Relay` message; see [`crate::relay`]). Such a test takes a slot and is bounded like any
//! other; [`ServerConfig::relay`] = `false` (`--no-relay`) refuses these requests.
//!
//! ```no_run
//! use weft_probe::server::{Server, ServerConfig};
//! let server = Server::bind(ServerConfig::loopback()).unwrap();
//! let addr = server.local_addr();
//! let handle = server.spawn();
//! // ... run clients against `addr` ...
//! handle.shutdown();
//! handle.join().unwrap();
//! ```

mod conn;
mod context;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

pub use context::TestContext;

use weft_gate::{Arrival, Door, LobbyLimits};

use crate::auth::Key;
use crate::error::ProbeError;
use crate::proto::{Cookie, DEFAULT_MAX_MESSAGE};

/// The agent's default TCP port.
pub const DEFAULT_PORT: u16 = 5301;

/// A callback that receives the agent's log lines (one event per call, no newline).
pub type LogFn = Arc<dyn Fn(&str) + Send + Sync>;

/// Resource bounds of an agent.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Tests running at the same time; more are refused with `busy` (`--max-tests`).
    pub max_tests: usize,
    /// Longest test allowed; longer requests are refused and running tests are cut off at this
    /// plus a grace period (`--max-duration`).
    pub max_duration: Duration,
    /// Most data streams per direction in one test (`--max-streams`).
    pub max_streams: u16,
    /// Largest control-message body in bytes (`--max-message`).
    pub max_message: u32,
    /// How long a connection may stay silent between control messages outside a test, and on a
    /// data stream during a test (`--idle-timeout`); before its first message the (shorter)
    /// hello time-out of [`Limits::lobby`] applies.
    pub idle_timeout: Duration,
    /// Largest `--len` accepted, in bytes.
    pub max_len: u32,
    /// Bounds on connections that have not yet identified themselves (`--hello-timeout`,
    /// `--max-unidentified`, `--max-unidentified-per-source`).
    pub lobby: LobbyLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_tests: 8,
            max_duration: Duration::from_secs(60),
            max_streams: 16,
            max_message: DEFAULT_MAX_MESSAGE,
            idle_timeout: Duration::from_secs(10),
            max_len: 16 * 1024 * 1024,
            lobby: LobbyLimits::default(),
        }
    }
}

impl Limits {
    /// Connections open at most (control and data together): every test slot with all its
    /// streams in both directions, plus the lobby of connections still saying hello.
    pub fn max_connections(&self) -> usize {
        self.max_tests
            .saturating_mul(2 * self.max_streams as usize + 1)
            .saturating_add(self.lobby.max_waiting)
    }
}

/// How to run an agent.
#[derive(Clone)]
pub struct ServerConfig {
    /// Address to listen on (`--bind`); port 0 picks a free port.
    pub bind: SocketAddr,
    /// Resource bounds.
    pub limits: Limits,
    /// Stop after the first test has finished (`--once`).
    pub once: bool,
    /// Run tests toward other agents when a client asks (`weft pattern --pairs A:B`); `false`
    /// refuses such requests (`--no-relay`). Relayed tests count toward the limits.
    pub relay: bool,
    /// Where log lines go; `None` = silent.
    pub log: Option<LogFn>,
    /// The pre-shared key clients must prove (`--key-file`); `None` serves anyone `open`
    /// lets in.
    pub key: Option<Key>,
    /// Serve clients from any address without a key, and relay tests toward any address
    /// (`--open`). Without it the agent is in **protected mode** (as Redis's): with no key it
    /// serves control connections from loopback addresses only, and, key or not, it refuses to
    /// relay tests toward loopback, link-local or its own addresses, so that a stranger cannot
    /// use it to reach what only this host can reach.
    pub open: bool,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field("limits", &self.limits)
            .field("once", &self.once)
            .field("relay", &self.relay)
            .field("key", &self.key.is_some())
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

impl ServerConfig {
    /// An agent on 127.0.0.1 with a free port, default limits and relaying allowed, in
    /// protected mode (for tests and the demo).
    pub fn loopback() -> Self {
        ServerConfig {
            bind: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            limits: Limits::default(),
            once: false,
            relay: true,
            log: None,
            key: None,
            open: false,
        }
    }

    /// What protected mode means for this configuration, to say at start; `None` with `open`.
    pub fn protected_notice(&self) -> Option<String> {
        if self.open {
            return None;
        }
        let clients = if self.key.is_none() {
            "with no key it serves only clients on this host (loopback addresses); give it \
             --key-file to serve others that prove the key, or --open to serve anyone who \
             reaches it; "
        } else {
            ""
        };
        Some(format!(
            "protected mode: {clients}it relays no test toward loopback, link-local or its own \
             addresses (--open allows them)"
        ))
    }
}

/// What an agent did by the time it stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeSummary {
    /// Tests that ran to completion.
    pub tests_ok: u64,
    /// Tests that failed or were refused after a valid request.
    pub tests_failed: u64,
    /// Connections dropped for garbage, time-outs or limits before a test started (including
    /// those counted in `unidentified_closed`).
    pub connections_dropped: u64,
    /// Connections closed because they did not identify themselves within the hello time-out, or
    /// were the oldest waiting when a newer one needed room.
    pub unidentified_closed: u64,
    /// Clients refused for a missing or wrong key.
    pub auth_failures: u64,
}

/// A registered test waiting for its data connections.
pub(crate) struct Pending {
    pub(crate) data_tx: Sender<(u16, TcpStream)>,
}

/// State shared by the accept loop, the connection threads and the shutdown handle.
pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    pub(crate) local_addr: SocketAddr,
    pub(crate) registry: Mutex<HashMap<Cookie, Pending>>,
    pub(crate) active_tests: AtomicUsize,
    pub(crate) door: Arc<Door>,
    pub(crate) next_test_id: AtomicU64,
    pub(crate) shutdown: AtomicBool,
    pub(crate) tests_ok: AtomicU64,
    pub(crate) tests_failed: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) auth_failures: AtomicU64,
}

impl Shared {
    pub(crate) fn log(&self, line: &str) {
        // The same lines as `tracing` events, for `-vv` and for library users without a LogFn.
        tracing::debug!(target: "weft_probe::server", "{line}");
        if let Some(log) = &self.config.log {
            log(line);
        }
    }

    /// Stops the accept loop: sets the flag, then wakes `accept` with a connection of our own.
    pub(crate) fn request_shutdown(&self) {
        if self.shutdown.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut wake = self.local_addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
    }

    pub(crate) fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    fn summary(&self) -> ServeSummary {
        let lobby = self.door.stats();
        let unidentified_closed = lobby.timed_out + lobby.evicted;
        ServeSummary {
            tests_ok: self.tests_ok.load(Ordering::SeqCst),
            tests_failed: self.tests_failed.load(Ordering::SeqCst),
            connections_dropped: self.dropped.load(Ordering::SeqCst) + unidentified_closed,
            unidentified_closed,
            auth_failures: self.auth_failures.load(Ordering::SeqCst),
        }
    }
}

/// Binds a listening socket with a backlog of 1024 (a burst of connections waits for `accept`
/// instead of being refused by the kernel).
fn listen(addr: SocketAddr) -> Result<TcpListener, ProbeError> {
    use socket2::{Domain, Socket, Type};
    let err = |e| ProbeError::io(format!("binding {addr}"), e);
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None).map_err(err)?;
    // As std's TcpListener::bind does.
    s.set_reuse_address(true).map_err(err)?;
    s.bind(&addr.into()).map_err(err)?;
    s.listen(1024).map_err(err)?;
    Ok(s.into())
}

/// A bound agent, not yet serving.
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

/// Stops a running agent from another thread.
#[derive(Clone)]
pub struct ShutdownHandle {
    shared: Arc<Shared>,
}

impl ShutdownHandle {
    /// Asks the agent to stop accepting; running tests finish on their own threads.
    pub fn shutdown(&self) {
        self.shared.request_shutdown();
    }
}

/// An agent running on a background thread.
pub struct ServerHandle {
    addr: SocketAddr,
    stop: ShutdownHandle,
    thread: JoinHandle<Result<ServeSummary, ProbeError>>,
}

impl ServerHandle {
    /// The address the agent listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
    /// Asks the agent to stop.
    pub fn shutdown(&self) {
        self.stop.shutdown();
    }
    /// A handle that can stop the agent from elsewhere.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.stop.clone()
    }
    /// Waits for the agent to stop (after [`ServerHandle::shutdown`] or, with `once`, after its
    /// test) and returns what it did.
    pub fn join(self) -> Result<ServeSummary, ProbeError> {
        self.thread
            .join()
            .unwrap_or_else(|_| Err(ProbeError::Protocol("agent thread panicked".into())))
    }
}

impl Server {
    /// Binds the listening socket, and raises the process's open-files limit to its hard limit
    /// (the agent's descriptors are its capacity for connections).
    pub fn bind(config: ServerConfig) -> Result<Server, ProbeError> {
        let listener = listen(config.bind)?;
        if let Err(e) = weft_gate::raise_open_files_limit()
            && let Some(log) = &config.log
        {
            log(&format!("cannot raise the open-files limit: {e}"));
        }
        let local_addr = listener
            .local_addr()
            .map_err(|e| ProbeError::io("reading the bound address", e))?;
        let door = Door::new(config.limits.lobby);
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                config,
                local_addr,
                registry: Mutex::new(HashMap::new()),
                active_tests: AtomicUsize::new(0),
                door,
                next_test_id: AtomicU64::new(1),
                shutdown: AtomicBool::new(false),
                tests_ok: AtomicU64::new(0),
                tests_failed: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                auth_failures: AtomicU64::new(0),
            }),
        })
    }

    /// The address the agent listens on (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local_addr
    }

    /// A handle that stops [`Server::run`] from another thread.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: self.shared.clone(),
        }
    }

    /// Serves until shut down (or, with `once`, until the first test has finished). Waits for
    /// running tests to finish before returning. Nothing a client does stops the accept loop:
    /// failed accepts are logged and the loop goes on.
    pub fn run(self) -> Result<ServeSummary, ProbeError> {
        let shared = self.shared;
        shared.log(&format!("listening on {}", shared.local_addr));
        if let Some(n) = shared.config.protected_notice() {
            shared.log(&n);
        }
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        let mut closed_logged = 0u64;
        let mut last_log = std::time::Instant::now();
        loop {
            let arrival = shared
                .door
                .accept(&self.listener, Duration::from_millis(500));
            if shared.stopping() {
                break;
            }
            threads.retain(|t| !t.is_finished());
            // Idle connections are closed in bulk under attack: one line a second says how many.
            let closed = shared.door.stats();
            let closed = closed.timed_out + closed.evicted;
            if closed > closed_logged && last_log.elapsed() >= Duration::from_secs(1) {
                shared.log(&format!(
                    "closed {} connection(s) that did not say hello within {} or made room for \
                     newer ones ({} waiting now)",
                    closed - closed_logged,
                    shared.config.limits.lobby.hello_timeout,
                    shared.door.stats().waiting
                ));
                closed_logged = closed;
                last_log = std::time::Instant::now();
            }
            let (stream, peer, pass) = match arrival {
                Arrival::Connection(s, p, pass) => (s, p, pass),
                Arrival::Nothing => continue,
                Arrival::Failed(e) => {
                    shared.log(&format!("accept failed: {e}"));
                    continue;
                }
            };
            let sh = shared.clone();
            let spawned = std::thread::Builder::new()
                .name("weft-conn".into())
                .spawn(move || conn::handle(&sh, stream, peer, pass));
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => shared.log(&format!("cannot start a thread: {e}")),
            }
        }
        // Running tests finish on their own threads, bounded by the duration limit; waiting for
        // them keeps `--once` from exiting before its test has reported. Connections that never
        // started a test are left to their hello time-outs.
        while shared.active_tests.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(threads);
        shared.log("stopped");
        Ok(shared.summary())
    }

    /// Runs the agent on a background thread.
    pub fn spawn(self) -> ServerHandle {
        let addr = self.local_addr();
        let stop = self.shutdown_handle();
        let thread = std::thread::spawn(move || self.run());
        ServerHandle { addr, stop, thread }
    }
}
