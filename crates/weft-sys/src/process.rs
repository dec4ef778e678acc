//! The effective user and signals by process id.

use std::io;

/// True when the process runs with an effective user id of 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// True when a process with this id exists (signal 0 probe; a process we may not signal exists).
pub fn pid_alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends `sig` to process `pid`; errors (already gone) are ignored.
pub fn kill(pid: u32, sig: i32) {
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// Asks process `pid` to stop (SIGTERM); errors (already gone) are ignored.
pub fn terminate(pid: u32) {
    kill(pid, libc::SIGTERM);
}

/// Raises this process's soft limit on open files to its hard limit (a server's descriptors are
/// its capacity for connections); returns the limit now in force.
pub fn raise_open_files_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `lim`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } != 0 {
            return Err(io::Error::last_os_error());
        }
        lim.rlim_cur = lim.rlim_max;
    }
    Ok(lim.rlim_cur)
}

/// File descriptors this process has open now (the entries of /proc/self/fd), for logs and
/// tests.
pub fn open_files() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_files_limit_is_the_hard_limit() {
        let n = raise_open_files_limit().unwrap();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert_eq!(n, lim.rlim_max);
        assert!(open_files().unwrap() > 2);
    }

    #[test]
    fn a_child_is_alive_until_terminated_and_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(pid_alive(child.id()));
        terminate(child.id());
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(!pid_alive(child.id()));
    }
}
