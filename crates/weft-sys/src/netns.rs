//! Entering a network namespace.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Moves the calling thread into the network namespace mounted at `/run/netns/NAME` (as
/// `ip netns add NAME` creates). Only this thread changes namespace; sockets it opens afterwards
/// belong to that namespace.
pub fn enter_netns(name: &str) -> io::Result<()> {
    let f = File::open(format!("/run/netns/{name}"))?;
    // SAFETY: setns with a valid fd and a namespace type; affects only the calling thread.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Moves the calling thread into a new network namespace of its own (`unshare(CLONE_NEWNET)`):
/// it holds only a loopback interface, down. Needs CAP_SYS_ADMIN. Only this thread changes
/// namespace.
pub fn unshare_netns() -> io::Result<()> {
    // SAFETY: unshare with a namespace flag; affects only the calling thread.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_namespace_is_an_error_not_a_panic() {
        let e = enter_netns("weft-no-such-namespace").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
