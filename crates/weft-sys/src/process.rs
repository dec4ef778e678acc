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

/// When process `pid` started, in clock ticks since boot (field 22 of `/proc/PID/stat`), or
/// `None` if it does not exist. A process id is reused once its process is gone; the pair of id
/// and start time names one process for as long as the machine runs.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or ')': the fields
    // after it start after the last ')'. Field 3 is then the first, field 22 the 20th.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Sends `sig` to process `pid` only if it is still the process that started at `start` (see
/// [`start_time`]). Through a pidfd: once it is open, the id cannot be given to another process
/// before the signal goes, so the check and the signal see the same process. `Ok(false)` if
/// the process is gone or another process now holds its id.
pub fn signal_if_same(pid: u32, start: u64, sig: i32) -> io::Result<bool> {
    // SAFETY: pidfd_open takes a pid and flags, and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ESRCH) => Ok(false),
            _ => Err(e),
        };
    }
    // SAFETY: the descriptor was just returned to us and is closed only here.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
    if start_time(pid) != Some(start) {
        return Ok(false);
    }
    use std::os::fd::AsRawFd;
    // SAFETY: pidfd_send_signal takes the pidfd, a signal, a null siginfo and flags 0.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r == 0 {
        Ok(true)
    } else {
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ESRCH) => Ok(false),
            _ => Err(e),
        }
    }
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
    fn only_the_process_that_started_then_is_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let start = start_time(child.id()).unwrap();
        assert!(start > 0);
        // Another start time: the id names another process now; it is not signalled.
        assert!(!signal_if_same(child.id(), start + 1, libc::SIGTERM).unwrap());
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(child.try_wait().unwrap().is_none());
        assert!(signal_if_same(child.id(), start, libc::SIGTERM).unwrap());
        assert!(!child.wait().unwrap().success());
        assert_eq!(start_time(child.id()), None);
        assert!(!signal_if_same(child.id(), start, libc::SIGTERM).unwrap());
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
