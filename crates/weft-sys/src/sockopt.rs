//! Integer socket options and the TCP ones `socket2` lacks: `TCP_CONGESTION`,
//! `TCP_WINDOW_CLAMP`, the unacknowledged send queue (`SIOCOUTQ`), forced buffer sizes.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Sets integer option `name` at `level` on socket `fd`.
pub fn set_int(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: the option value is a live c_int of the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reads integer option `name` at `level` of socket `fd`.
pub fn get_int(fd: RawFd, level: i32, name: i32) -> io::Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are live and sized for a c_int.
    let r = unsafe { libc::getsockopt(fd, level, name, (&mut v as *mut i32).cast(), &mut len) };
    if r == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the congestion-control algorithm of TCP socket `fd` (`TCP_CONGESTION`: "reno",
/// "cubic", ...; the module must be available in the kernel).
pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: the option value is a live byte string of the given length.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr() as *const libc::c_void,
            name.len() as libc::socklen_t,
        )
    };
    if r != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Whether this kernel gives TCP sockets the congestion control `name` ("dctcp", "cubic"):
/// sets it on a fresh, unconnected socket (so a module the kernel can load is loaded, as a
/// connection's `setsockopt` would). False if it is not there or the socket cannot be made.
pub fn has_congestion(name: &str) -> bool {
    // SAFETY: plain socket(2) call.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return false;
    }
    // SAFETY: fresh descriptor we own (closed when dropped).
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    set_congestion(fd.as_raw_fd(), name).is_ok()
}

/// Sets `TCP_WINDOW_CLAMP` (bytes) on a connected socket and returns the value the kernel keeps.
pub fn clamp_window(fd: RawFd, clamp: u32) -> io::Result<u32> {
    let v = clamp.min(i32::MAX as u32) as i32;
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, v)?;
    Ok(get_int(fd, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP)?.max(0) as u32)
}

/// Bytes in a TCP socket's send queue not yet acknowledged by the peer (`SIOCOUTQ`).
pub fn tcp_outq(fd: RawFd) -> io::Result<u32> {
    let mut v: libc::c_int = 0;
    // SAFETY: TIOCOUTQ writes one c_int to the pointer given.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut v as *mut libc::c_int) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v.max(0) as u32)
}

/// Sets a socket's receive buffer to `bytes`, above the system limit if need be (root).
pub fn set_rcvbuf(fd: RawFd, bytes: u32) -> io::Result<()> {
    let v = bytes.min(i32::MAX as u32) as i32;
    set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v)
}

/// A TCP listener on 0.0.0.0 port 0 of the calling thread's namespace, with the receive buffer
/// (bytes, forced) and window clamp (`TCP_WINDOW_CLAMP`, bytes) set before `listen` so that
/// accepted connections inherit them and never advertise more than `clamp`.
pub fn tcp_listener(rcvbuf: Option<u32>, clamp: Option<u32>) -> io::Result<std::net::TcpListener> {
    // SAFETY: plain socket(2) call.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let raw = fd.as_raw_fd();
    set_int(raw, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if let Some(b) = rcvbuf {
        set_rcvbuf(raw, b)?;
    }
    if let Some(c) = clamp {
        let c = c.min(i32::MAX as u32) as i32;
        set_int(raw, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, c)?;
    }
    // SAFETY: zeroed sockaddr_in is valid (0.0.0.0:0).
    let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sin.sin_family = libc::AF_INET as libc::sa_family_t;
    // SAFETY: `sin` is a valid sockaddr_in of the size passed.
    let r = unsafe {
        libc::bind(
            raw,
            &sin as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: listen on a bound socket.
    if unsafe { libc::listen(raw, 16) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(std::net::TcpListener::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpStream;

    #[test]
    fn a_clamped_listener_hands_its_clamp_to_the_connection() {
        let l = tcp_listener(Some(1 << 20), Some(20_000)).unwrap();
        let port = l.local_addr().unwrap().port();
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (s, _) = l.accept().unwrap();
        let got = get_int(s.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP).unwrap();
        assert_eq!(got, 20_000);
        assert_eq!(clamp_window(c.as_raw_fd(), 30_000).unwrap(), 30_000);
        set_congestion(c.as_raw_fd(), "reno").unwrap();
        assert!(set_congestion(c.as_raw_fd(), "no-such-cc").is_err());
        assert!(has_congestion("reno") && !has_congestion("no-such-cc"));
        c.write_all(&[7; 1000]).unwrap();
        assert!(tcp_outq(c.as_raw_fd()).unwrap() <= 1000);
    }
}
