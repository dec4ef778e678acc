//! Scheduling: classes (real-time, idle, normal), CPU placement, timer slack.

use std::io;

/// Puts the calling thread in the SCHED_FIFO class at `priority` (1..99) so that compile jobs
/// and other busy processes do not delay its deadlines. Returns false if not permitted; the
/// kernel's RT throttling still leaves other tasks 5% of each CPU.
pub fn set_realtime(priority: i32) -> bool {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `p` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// Puts the calling thread in the SCHED_IDLE class: it runs only on a CPU with nothing else to
/// do and yields at once to any other task. For threads that busy-poll so that the virtual CPU
/// never halts (a halted one wakes up late on a hypervisor) without taking time from others.
pub fn set_idle_class() -> bool {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: `p` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) == 0 }
}

/// Moves thread `tid` of this process to normal scheduling (SCHED_OTHER); errors (the thread has
/// ended) are ignored.
pub fn set_normal_class(tid: i32) {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: `p` is a valid sched_param; the call affects only thread `tid`.
    unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &p) };
}

/// The calling thread's kernel thread id.
pub fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Asks for precise timer wake-ups on the calling thread, `ns` of slack (Linux's default is
/// 50 us).
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer; it cannot touch memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// The calling thread's nice value (Linux `getpriority` on a thread id), `None` on error.
pub fn thread_nice() -> Option<i32> {
    // SAFETY: plain syscalls on the calling thread's own id; errno is cleared first, as the
    // nice range (-20..=19) includes the error return, -1.
    unsafe {
        *libc::__errno_location() = 0;
        let n = libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t);
        (*libc::__errno_location() == 0).then_some(n)
    }
}

/// Sets the calling thread's nice value to `nice` (clamped to -20..=19; `setpriority` on a
/// thread id sets that thread alone). Returns whether the kernel took it.
pub fn set_thread_nice(nice: i32) -> bool {
    // SAFETY: a plain syscall on the calling thread's own id.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice.clamp(-20, 19)) == 0
    }
}

/// The CPU the calling thread runs on now, if the kernel says.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu takes no arguments and only reads the caller's scheduling state.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

/// CPUs online (at least 1).
pub fn online_cpus() -> u32 {
    // SAFETY: sysconf only reads a system constant.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

/// The CPUs the calling thread may run on, ascending.
pub fn allowed_cpus() -> Vec<usize> {
    match affinity() {
        // SAFETY: CPU_ISSET reads the set within its bounds (cpu < CPU_SETSIZE).
        Some(set) => (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect(),
        None => Vec::new(),
    }
}

fn affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 is the calling thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    (r == 0).then_some(set)
}

fn set_affinity(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: pid 0 is the calling thread; the set is a live, fully initialised cpu_set_t.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pins the calling thread (and the threads it starts later) to `cpu` (iperf3's `-A`).
pub fn pin_current_thread(cpu: u32) -> io::Result<()> {
    let n = online_cpus();
    let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
    if cpu >= n {
        return Err(invalid(format!(
            "CPU {cpu} does not exist: this machine has CPUs 0 to {}",
            n.saturating_sub(1)
        )));
    }
    let idx = cpu as usize;
    if idx >= libc::CPU_SETSIZE as usize {
        return Err(invalid(format!(
            "CPU {cpu} is beyond the {} a cpu_set_t holds",
            libc::CPU_SETSIZE
        )));
    }
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes inside the set for an index below CPU_SETSIZE, checked above.
    unsafe { libc::CPU_SET(idx, &mut set) };
    set_affinity(&set).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot pin to CPU {cpu}: {e} (is it outside this process's cpuset?)"),
        )
    })
}

/// The calling thread pinned to one CPU until dropped, when its former set of CPUs is restored.
#[derive(Debug)]
pub struct Pinned {
    before: Option<Box<libc::cpu_set_t>>,
}

impl Pinned {
    /// Pins the calling thread to `cpu` (see [`pin_current_thread`]).
    pub fn to(cpu: u32) -> io::Result<Pinned> {
        let before = affinity().map(Box::new);
        pin_current_thread(cpu)?;
        Ok(Pinned { before })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(set) = &self.before {
            let _ = set_affinity(set);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_moves_the_thread_and_dropping_restores_its_cpus() {
        std::thread::spawn(|| {
            let before = allowed_cpus();
            let cpu = *before.last().unwrap() as u32;
            {
                let _p = Pinned::to(cpu).unwrap();
                assert_eq!(allowed_cpus(), [cpu as usize]);
                assert_eq!(current_cpu(), Some(cpu));
            }
            assert_eq!(allowed_cpus(), before);
            let e = pin_current_thread(online_cpus()).unwrap_err();
            assert!(e.to_string().contains("does not exist"), "{e}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_idle_class_is_granted_and_normal_restores_it() {
        std::thread::spawn(|| {
            assert!(set_idle_class());
            // SAFETY: sched_getscheduler only reads the calling thread's policy.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_IDLE);
            set_normal_class(thread_id());
            // SAFETY: as above.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }
}
