//! Applying a test's socket options to data sockets and reading back what the kernel made of them.

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::error::ProbeError;
use crate::proto::{SockInfo, TputSpec};
use crate::sockopt;

/// Receive buffer requested for UDP receivers when no `--window` is given, in bytes: bursts at
/// high rates otherwise overflow the default buffer (the kernel caps it at `net.core.rmem_max`).
pub const UDP_DEFAULT_RCVBUF: u64 = 4 * 1024 * 1024;

/// Sets window, MSS, congestion control and TCP_NODELAY as the spec asks. On the client this runs
/// before `connect`, so the window scale and the SYN's MSS follow the request.
pub fn apply_tcp<S: std::os::fd::AsFd>(s: &S, spec: &TputSpec) -> Result<(), ProbeError> {
    if let Some(w) = spec.window {
        sockopt::set_window(s, w)?;
    }
    if let Some(m) = spec.mss {
        sockopt::set_mss(s, m)?;
    }
    if let Some(cc) = &spec.cc {
        sockopt::set_cc(s, cc)?;
    }
    if spec.nodelay {
        sockopt::set_nodelay(s)?;
    }
    Ok(())
}

/// Sets the buffers of a UDP socket: both to `--window` if given, else a large receive buffer.
pub fn apply_udp(s: &UdpSocket, spec: &TputSpec) -> Result<(), ProbeError> {
    match spec.window {
        Some(w) => sockopt::set_window(s, w),
        None => sockopt::set_rcvbuf(s, UDP_DEFAULT_RCVBUF),
    }
}

/// The effective options of a TCP data socket.
pub fn tcp_info(s: &TcpStream) -> SockInfo {
    SockInfo {
        sndbuf: sockopt::sndbuf(s).unwrap_or(0),
        rcvbuf: sockopt::rcvbuf(s).unwrap_or(0),
        mss: sockopt::mss(s).ok(),
        cc: sockopt::cc(s).ok(),
    }
}

/// The effective buffers of a UDP data socket.
pub fn udp_info(s: &UdpSocket) -> SockInfo {
    SockInfo {
        sndbuf: sockopt::sndbuf(s).unwrap_or(0),
        rcvbuf: sockopt::rcvbuf(s).unwrap_or(0),
        mss: None,
        cc: None,
    }
}

/// Opens a TCP connection to `addr` with the spec's options set before `connect`.
pub fn connect_tcp(
    addr: SocketAddr,
    spec: &TputSpec,
    timeout: Duration,
) -> Result<TcpStream, ProbeError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| ProbeError::io("creating a TCP socket", e))?;
    apply_tcp(&sock, spec)?;
    sock.connect_timeout(&SockAddr::from(addr), timeout)
        .map_err(|e| ProbeError::io(format!("connecting a data stream to {addr}"), e))?;
    Ok(sock.into())
}
