//! CPU time of the calling thread, for per-test CPU accounting on both ends.
//!
//! Each thread of a test (data streams and control) samples its own `getrusage(RUSAGE_THREAD)` at
//! start and end; the test sums the differences. Process-wide figures would mix in other tests an
//! agent runs at the same time, or the agent itself when client and agent share a process (demo).

/// User and system CPU time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadCpu {
    /// User time, ns.
    pub user_ns: u64,
    /// System time, ns.
    pub sys_ns: u64,
}

impl ThreadCpu {
    /// The CPU time the calling thread has used so far (zeros if the kernel refuses).
    pub fn now() -> Self {
        // SAFETY: an all-zero rusage is a valid value of this plain C struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes one rusage into the live local `ru`.
        let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        if r != 0 {
            return ThreadCpu::default();
        }
        let ns = |tv: libc::timeval| {
            tv.tv_sec.max(0) as u64 * 1_000_000_000 + tv.tv_usec.max(0) as u64 * 1_000
        };
        ThreadCpu {
            user_ns: ns(ru.ru_utime),
            sys_ns: ns(ru.ru_stime),
        }
    }

    /// The time used since `earlier`.
    pub fn since(self, earlier: ThreadCpu) -> ThreadCpu {
        ThreadCpu {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
        }
    }

    /// Adds another thread's time.
    pub fn plus(self, o: ThreadCpu) -> ThreadCpu {
        ThreadCpu {
            user_ns: self.user_ns + o.user_ns,
            sys_ns: self.sys_ns + o.sys_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_thread_accumulates_cpu() {
        // Spin until the thread's own clock says 10 ms (wall time depends on machine load).
        let a = ThreadCpu::now();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let mut d = ThreadCpu::default();
        while t.elapsed() < std::time::Duration::from_secs(10) {
            for _ in 0..100_000 {
                x = x.wrapping_mul(31).wrapping_add(1);
            }
            d = ThreadCpu::now().since(a);
            if d.user_ns + d.sys_ns >= 10_000_000 {
                break;
            }
        }
        std::hint::black_box(x);
        assert!(d.user_ns + d.sys_ns >= 10_000_000, "{d:?}");
        assert_eq!(d.plus(d).user_ns, 2 * d.user_ns);
    }
}
