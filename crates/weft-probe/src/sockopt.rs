//! Socket options the standard library does not expose: buffer sizes, MSS and congestion
//! control, set and read back.
//!
//! # What `--window` does on Linux
//!
//! `setsockopt(SO_RCVBUF, n)` stores `2 n` (capped at `net.core.rmem_max`, then doubled) because
//! the kernel counts its bookkeeping overhead (`struct sk_buff`, headers) against the buffer too;
//! `getsockopt` returns the doubled value, which is what weft reports as the effective buffer.
//! Of that buffer only a part is offered to the peer as window: with the default
//! `net.ipv4.tcp_adv_win_scale` (1 before Linux 6.x, where it is replaced by a per-socket
//! scaling ratio from observed overhead) the advertised window is about half of the buffer, i.e.
//! roughly the `n` that was requested. Setting `SO_RCVBUF` also turns off receive-buffer
//! auto-tuning, which otherwise grows the buffer between `tcp_rmem[1]` and `tcp_rmem[2]`
//! (`net.ipv4.tcp_rmem = min default max`). The window scale is fixed at the SYN from the buffer
//! at that moment, so weft sets the options before `connect` on the client; on the agent they are
//! set on the accepted socket, whose window scale the listener chose from `tcp_rmem[2]`, large
//! enough for any window up to that size. `SO_SNDBUF` is likewise doubled and caps the data in
//! flight plus unsent data on the sender (`net.core.wmem_max`, `tcp_wmem`).
//!
//! The options are set through `socket2` (`SockRef`); this module adds the errors that say which
//! option failed, and what the kernel offers when a congestion control is missing.

use std::os::fd::AsFd;

use socket2::SockRef;

use crate::error::ProbeError;

fn clamp_i32(v: u64) -> usize {
    // The kernel takes an int: larger requests saturate, as before.
    i32::try_from(v).unwrap_or(i32::MAX) as usize
}

fn setting(name: &str, v: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> ProbeError {
    let what = format!("setting {name} to {v}");
    move |e| ProbeError::io(what, e)
}

fn reading(name: &str) -> impl FnOnce(std::io::Error) -> ProbeError {
    let what = format!("reading {name}");
    move |e| ProbeError::io(what, e)
}

/// Requests send and receive buffers of `bytes` each (see the module docs for what Linux does).
pub fn set_window<S: AsFd>(s: &S, bytes: u64) -> Result<(), ProbeError> {
    let (sock, n) = (SockRef::from(s), clamp_i32(bytes));
    sock.set_send_buffer_size(n)
        .map_err(setting("SO_SNDBUF", n))?;
    sock.set_recv_buffer_size(n)
        .map_err(setting("SO_RCVBUF", n))
}

/// Requests the UDP send and receive buffers; a large receive buffer keeps bursts from dropping.
pub fn set_rcvbuf<S: AsFd>(s: &S, bytes: u64) -> Result<(), ProbeError> {
    let n = clamp_i32(bytes);
    SockRef::from(s)
        .set_recv_buffer_size(n)
        .map_err(setting("SO_RCVBUF", n))
}

/// The effective (kernel-reported, doubled) send buffer in bytes.
pub fn sndbuf<S: AsFd>(s: &S) -> Result<u64, ProbeError> {
    let n = SockRef::from(s)
        .send_buffer_size()
        .map_err(reading("SO_SNDBUF"))?;
    Ok(n as u64)
}

/// The effective (kernel-reported, doubled) receive buffer in bytes.
pub fn rcvbuf<S: AsFd>(s: &S) -> Result<u64, ProbeError> {
    let n = SockRef::from(s)
        .recv_buffer_size()
        .map_err(reading("SO_RCVBUF"))?;
    Ok(n as u64)
}

/// Sets TCP_MAXSEG; before `connect` it also lowers the MSS advertised in the SYN, so the peer
/// sends segments no larger either.
pub fn set_mss<S: AsFd>(s: &S, mss: u32) -> Result<(), ProbeError> {
    let m = mss.min(i32::MAX as u32);
    SockRef::from(s)
        .set_tcp_mss(m)
        .map_err(setting("TCP_MAXSEG", m))
}

/// Turns on TCP_NODELAY (no Nagle coalescing of small writes).
pub fn set_nodelay<S: AsFd>(s: &S) -> Result<(), ProbeError> {
    SockRef::from(s)
        .set_tcp_nodelay(true)
        .map_err(setting("TCP_NODELAY", 1))
}

/// The effective TCP_MAXSEG in bytes.
pub fn mss<S: AsFd>(s: &S) -> Result<u32, ProbeError> {
    SockRef::from(s).tcp_mss().map_err(reading("TCP_MAXSEG"))
}

/// Sets TCP_CONGESTION to `name`, with an error that lists what the kernel offers.
pub fn set_cc<S: AsFd>(s: &S, name: &str) -> Result<(), ProbeError> {
    if let Err(err) = SockRef::from(s).set_tcp_congestion(name.as_bytes()) {
        let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .unwrap_or_default();
        let allowed = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
            .unwrap_or_default();
        return Err(ProbeError::Unsupported(format!(
            "congestion control {name:?} is not available here ({err}); available: {}; allowed \
             without CAP_NET_ADMIN: {} (try `modprobe tcp_{name}`)",
            avail.trim(),
            allowed.trim()
        )));
    }
    Ok(())
}

/// The congestion control in use.
pub fn cc<S: AsFd>(s: &S) -> Result<String, ProbeError> {
    let b = SockRef::from(s)
        .tcp_congestion()
        .map_err(reading("TCP_CONGESTION"))?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Ok(String::from_utf8_lossy(&b[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_reported_doubled_and_cc_reads_back() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        set_window(&s, 100_000).unwrap();
        assert_eq!(rcvbuf(&s).unwrap(), 200_000);
        assert_eq!(sndbuf(&s).unwrap(), 200_000);
        set_cc(&s, "reno").unwrap();
        assert_eq!(cc(&s).unwrap(), "reno");
        let e = set_cc(&s, "no-such-cc").unwrap_err().to_string();
        assert!(e.contains("available"), "{e}");
        assert!(mss(&s).unwrap() > 0);
    }
}
