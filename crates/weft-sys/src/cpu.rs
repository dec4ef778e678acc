//! CPU time used by the calling thread or the whole process (`getrusage`), for CPU accounting
//! per test (per thread: a process-wide figure would mix in other tests an agent runs at the same
//! time) and CPU cost per bit moved (per process).

/// User and system CPU time, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// User time, ns.
    pub user_ns: u64,
    /// System time, ns.
    pub sys_ns: u64,
}

impl CpuTime {
    /// The CPU time the calling thread has used so far (zeros if the kernel refuses).
    pub fn thread() -> Self {
        usage(libc::RUSAGE_THREAD)
    }

    /// The CPU time every thread of this process has used so far, ended threads included.
    pub fn process() -> Self {
        usage(libc::RUSAGE_SELF)
    }

    /// The time used since `earlier`.
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
        }
    }

    /// Adds another thread's time.
    pub fn plus(self, o: CpuTime) -> CpuTime {
        CpuTime {
            user_ns: self.user_ns + o.user_ns,
            sys_ns: self.sys_ns + o.sys_ns,
        }
    }

    /// User plus system time, ns.
    pub fn total_ns(self) -> u64 {
        self.user_ns + self.sys_ns
    }
}

fn usage(who: libc::c_int) -> CpuTime {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the live local `ru`.
    let r = unsafe { libc::getrusage(who, &mut ru) };
    if r != 0 {
        return CpuTime::default();
    }
    let ns = |tv: libc::timeval| {
        tv.tv_sec.max(0) as u64 * 1_000_000_000 + tv.tv_usec.max(0) as u64 * 1_000
    };
    CpuTime {
        user_ns: ns(ru.ru_utime),
        sys_ns: ns(ru.ru_stime),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spins until the thread's own clock says `ms` (wall time depends on machine load).
    fn spin(ms: u64) -> CpuTime {
        let a = CpuTime::thread();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let mut d = CpuTime::default();
        while t.elapsed() < std::time::Duration::from_secs(10) {
            for _ in 0..100_000 {
                x = x.wrapping_mul(31).wrapping_add(1);
            }
            d = CpuTime::thread().since(a);
            if d.total_ns() >= ms * 1_000_000 {
                break;
            }
        }
        std::hint::black_box(x);
        d
    }

    #[test]
    fn a_busy_thread_accumulates_cpu_and_the_process_counts_it_after_it_ends() {
        let p = CpuTime::process();
        let d = std::thread::spawn(|| spin(10)).join().unwrap();
        assert!(d.total_ns() >= 10_000_000, "{d:?}");
        assert_eq!(d.plus(d).user_ns, 2 * d.user_ns);
        let whole = CpuTime::process().since(p);
        assert!(whole.total_ns() >= d.total_ns(), "{whole:?} < {d:?}");
    }
}
