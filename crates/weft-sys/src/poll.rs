//! Waiting for descriptors with a nanosecond time-out (`ppoll`; `poll` has only milliseconds).

use std::io;
use std::os::fd::RawFd;

/// Waits until one of `fds` has an event it asks for or `timeout_ns` passes (`None`: forever).
/// Returns the number of descriptors with events (0 on time-out); EINTR counts as a time-out.
pub fn ppoll_readable(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> io::Result<usize> {
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a valid slice of pollfd; `tsp` is null or points at a live timespec.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

/// Waits until one of `fds` is readable (or hung up, or in error: a read will not block) or
/// `timeout_ns` passes (`None`: forever). Returns, per descriptor, whether it is.
pub fn readable(fds: &[RawFd], timeout_ns: Option<u64>) -> io::Result<Vec<bool>> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    ppoll_readable(&mut p, timeout_ns)?;
    Ok(p.iter()
        .map(|x| x.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::Instant;

    #[test]
    fn times_out_in_nanoseconds_and_sees_a_datagram() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let t = Instant::now();
        assert_eq!(
            readable(&[a.as_raw_fd()], Some(3_000_000)).unwrap(),
            [false]
        );
        assert!(t.elapsed().as_micros() >= 3_000);
        b.send_to(b"x", a.local_addr().unwrap()).unwrap();
        let ready = readable(&[b.as_raw_fd(), a.as_raw_fd()], Some(1_000_000_000)).unwrap();
        assert_eq!(ready, [false, true]);
    }
}
