//! What a test's agent side gets from the server: its control connection, its data
//! connections, and the limits it must keep.

use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::{Limits, Shared};
use crate::control::Control;
use crate::error::ProbeError;
use crate::proto::{Cookie, Hello};

/// One accepted test, as handed to `tput::agent::serve` or `rr::agent::serve`.
///
/// The agent side sends `Accept` itself (it knows whether it needs UDP ports), collects its data
/// connections with [`TestContext::accept_tcp_streams`] or UDP peers with
/// [`TestContext::await_udp_hello`], and ends with `Bye`/`Finished` or an `Err` (which the
/// server sends to the client as an `Error` message).
pub struct TestContext {
    /// The agent's number for the test.
    pub test_id: u64,
    /// The secret data connections present.
    pub cookie: Cookie,
    /// The control connection (read time-out: the idle time-out).
    pub control: Control,
    /// The agent's limits.
    pub limits: Limits,
    data_rx: Receiver<(u16, TcpStream)>,
    shared: Arc<Shared>,
}

impl TestContext {
    pub(super) fn new(
        test_id: u64,
        cookie: Cookie,
        control: Control,
        data_rx: Receiver<(u16, TcpStream)>,
        shared: &Arc<Shared>,
    ) -> Self {
        TestContext {
            test_id,
            cookie,
            control,
            limits: shared.config.limits.clone(),
            data_rx,
            shared: shared.clone(),
        }
    }

    /// The cookie as the 32 hex digits sent in `Accept`.
    pub fn cookie_hex(&self) -> String {
        crate::proto::data::cookie_to_hex(&self.cookie)
    }

    /// Logs a line through the agent's logger.
    pub fn log(&self, line: &str) {
        self.shared.log(&format!("test {}: {line}", self.test_id));
    }

    /// The agent's pre-shared key, which it also proves to agents it relays tests toward.
    pub fn agent_key(&self) -> Option<&crate::auth::Key> {
        self.shared.config.key.as_ref()
    }

    /// Whether the agent runs with `--open` (no protected mode).
    pub fn open(&self) -> bool {
        self.shared.config.open
    }

    /// Whether the agent is shutting down.
    pub fn stopping(&self) -> bool {
        self.shared.stopping()
    }

    /// The agent's address on this test's control connection (the address the client used);
    /// UDP data sockets bind there, so that replies leave from the address the client expects
    /// even on a multi-homed host listening on 0.0.0.0.
    pub fn local_ip(&self) -> IpAddr {
        self.control
            .stream()
            .local_addr()
            .map_or(self.shared.local_addr.ip(), |a| a.ip())
    }

    /// Waits for `n` TCP data connections, streams `0..n` each exactly once, for at most the
    /// idle time-out. Returned in stream order.
    pub fn accept_tcp_streams(&self, n: usize) -> Result<Vec<TcpStream>, ProbeError> {
        let deadline = Instant::now() + self.limits.idle_timeout;
        let mut slots: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
        let mut got = 0;
        while got < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.data_rx.recv_timeout(left) {
                Ok((i, s)) => match slots.get_mut(usize::from(i)) {
                    Some(slot @ None) => {
                        *slot = Some(s);
                        got += 1;
                    }
                    _ => {
                        return Err(ProbeError::Protocol(format!(
                            "data stream {i} is out of range or attached twice"
                        )));
                    }
                },
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ProbeError::Timeout(format!(
                        "only {got} of {n} data connections arrived within {:?}",
                        self.limits.idle_timeout
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(ProbeError::Protocol("data channel closed".into()));
                }
            }
        }
        Ok(slots.into_iter().flatten().collect())
    }

    /// Binds a UDP socket on the agent's address with a free port.
    pub fn bind_udp(&self) -> Result<UdpSocket, ProbeError> {
        UdpSocket::bind(SocketAddr::new(self.local_ip(), 0))
            .map_err(|e| ProbeError::io("binding a UDP data socket", e))
    }

    /// The client's address: the peer of this test's control connection.
    pub fn peer_ip(&self) -> Option<IpAddr> {
        self.control.stream().peer_addr().ok().map(|a| a.ip())
    }

    /// Waits (at most the idle time-out) for the UDP hello of `stream` with this test's cookie on
    /// `sock`, then connects `sock` to its sender. Anything else arriving meanwhile is ignored.
    ///
    /// The hello must come from the control connection's peer: UDP sources are forged at no
    /// cost, and a socket connected to whatever sent the cookie would let a client aim a
    /// reverse test's unpaced streams at a third party (a reflection attack). The port is the
    /// client's to choose; the address is the one that completed a TCP handshake with us.
    pub fn await_udp_hello(&self, sock: &UdpSocket, stream: u16) -> Result<SocketAddr, ProbeError> {
        let deadline = Instant::now() + self.limits.idle_timeout;
        let client = self
            .peer_ip()
            .ok_or_else(|| ProbeError::Protocol("the control connection has no peer".into()))?
            .to_canonical();
        let mut forged = 0u64;
        let mut buf = [0u8; 64];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ProbeError::Timeout(format!(
                    "no UDP hello for stream {stream} within {:?}",
                    self.limits.idle_timeout
                )));
            }
            sock.set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .map_err(|e| ProbeError::io("setting UDP time-out", e))?;
            let (n, from) = match sock.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue;
                }
                Err(e) => return Err(ProbeError::io("receiving a UDP hello", e)),
            };
            match Hello::parse(buf.get(..n).unwrap_or(&[])) {
                Ok(h) if h.udp && from.ip().to_canonical() != client => {
                    // Logged once: a flood of forged hellos must not flood the log.
                    if forged == 0 {
                        self.log(&format!(
                            "ignored a UDP hello for stream {} from {from}, not the client {client}",
                            h.stream
                        ));
                    }
                    forged += 1;
                }
                Ok(h) if h.udp && h.cookie == self.cookie && h.stream == stream => {
                    sock.connect(from)
                        .map_err(|e| ProbeError::io("connecting the UDP data socket", e))?;
                    return Ok(from);
                }
                _ => continue,
            }
        }
    }

    /// When a test that started now must be over, whatever it asked for: the agent's maximum
    /// duration plus a grace period for draining.
    pub fn hard_deadline(&self) -> Instant {
        Instant::now() + self.limits.max_duration + Duration::from_secs(2)
    }
}
