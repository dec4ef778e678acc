//! Socket options the standard library does not expose: buffer sizes, MSS and congestion
//! control, set with `setsockopt` and read back with `getsockopt`.
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

use std::os::fd::AsRawFd;

use crate::error::ProbeError;

fn set_int<S: AsRawFd>(s: &S, level: i32, opt: i32, v: i32, name: &str) -> Result<(), ProbeError> {
    // SAFETY: setsockopt reads exactly `size_of::<c_int>()` bytes from a live local; the fd is
    // owned by `s` and open for the duration of the call.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            opt,
            (&v as *const i32).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(ProbeError::io(
            format!("setting {name} to {v}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

fn get_int<S: AsRawFd>(s: &S, level: i32, opt: i32, name: &str) -> Result<i32, ProbeError> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into the live local `v`.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            level,
            opt,
            (&mut v as *mut i32).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(ProbeError::io(
            format!("reading {name}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(v)
}

fn clamp_i32(v: u64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// Requests send and receive buffers of `bytes` each (see the module docs for what Linux does).
pub fn set_window<S: AsRawFd>(s: &S, bytes: u64) -> Result<(), ProbeError> {
    set_int(
        s,
        libc::SOL_SOCKET,
        libc::SO_SNDBUF,
        clamp_i32(bytes),
        "SO_SNDBUF",
    )?;
    set_int(
        s,
        libc::SOL_SOCKET,
        libc::SO_RCVBUF,
        clamp_i32(bytes),
        "SO_RCVBUF",
    )
}

/// Requests the UDP send and receive buffers; a large receive buffer keeps bursts from dropping.
pub fn set_rcvbuf<S: AsRawFd>(s: &S, bytes: u64) -> Result<(), ProbeError> {
    set_int(
        s,
        libc::SOL_SOCKET,
        libc::SO_RCVBUF,
        clamp_i32(bytes),
        "SO_RCVBUF",
    )
}

/// The effective (kernel-reported, doubled) send buffer in bytes.
pub fn sndbuf<S: AsRawFd>(s: &S) -> Result<u64, ProbeError> {
    Ok(get_int(s, libc::SOL_SOCKET, libc::SO_SNDBUF, "SO_SNDBUF")?.max(0) as u64)
}

/// The effective (kernel-reported, doubled) receive buffer in bytes.
pub fn rcvbuf<S: AsRawFd>(s: &S) -> Result<u64, ProbeError> {
    Ok(get_int(s, libc::SOL_SOCKET, libc::SO_RCVBUF, "SO_RCVBUF")?.max(0) as u64)
}

/// Sets TCP_MAXSEG; before `connect` it also lowers the MSS advertised in the SYN, so the peer
/// sends segments no larger either.
pub fn set_mss<S: AsRawFd>(s: &S, mss: u32) -> Result<(), ProbeError> {
    set_int(
        s,
        libc::IPPROTO_TCP,
        libc::TCP_MAXSEG,
        clamp_i32(u64::from(mss)),
        "TCP_MAXSEG",
    )
}

/// Turns on TCP_NODELAY (no Nagle coalescing of small writes).
pub fn set_nodelay<S: AsRawFd>(s: &S) -> Result<(), ProbeError> {
    set_int(s, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1, "TCP_NODELAY")
}

/// The effective TCP_MAXSEG in bytes.
pub fn mss<S: AsRawFd>(s: &S) -> Result<u32, ProbeError> {
    Ok(get_int(s, libc::IPPROTO_TCP, libc::TCP_MAXSEG, "TCP_MAXSEG")?.max(0) as u32)
}

/// Sets TCP_CONGESTION to `name`, with an error that lists what the kernel offers.
pub fn set_cc<S: AsRawFd>(s: &S, name: &str) -> Result<(), ProbeError> {
    // SAFETY: setsockopt reads `name.len()` bytes from the string's live buffer.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if r != 0 {
        let err = std::io::Error::last_os_error();
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
pub fn cc<S: AsRawFd>(s: &S) -> Result<String, ProbeError> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` (32) bytes into the live local buffer.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(ProbeError::io(
            "reading TCP_CONGESTION",
            std::io::Error::last_os_error(),
        ));
    }
    let s = buf.get(..len as usize).unwrap_or(&buf);
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    Ok(String::from_utf8_lossy(&s[..end]).into_owned())
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
