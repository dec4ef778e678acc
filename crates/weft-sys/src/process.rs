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

#[cfg(test)]
mod tests {
    use super::*;

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
