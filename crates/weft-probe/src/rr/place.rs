//! Where a request/response test runs: the CPU a thread is on (`sched_getcpu`), pinning a
//! thread to one CPU (`sched_setaffinity`, iperf3's `-A`), and the set of CPUs a loop was seen
//! on.
//!
//! On a virtual machine a round trip includes waking the halted virtual CPUs of both ends; which
//! CPUs the ends ran on, and whether they moved, is part of the measurement (see
//! [`super::floor`]).

use serde::{Deserialize, Serialize};

/// The CPU the calling thread runs on now, if the kernel says.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu takes no arguments and only reads the caller's scheduling state.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

/// Pins the calling thread (and the threads it starts later) to `cpu`.
pub fn pin_current_thread(cpu: u32) -> Result<(), String> {
    let n = online_cpus();
    if cpu >= n {
        return Err(format!(
            "CPU {cpu} does not exist: this machine has CPUs 0 to {}",
            n.saturating_sub(1)
        ));
    }
    let idx = cpu as usize;
    if idx >= libc::CPU_SETSIZE as usize {
        return Err(format!(
            "CPU {cpu} is beyond the {} a cpu_set_t holds",
            libc::CPU_SETSIZE
        ));
    }
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes inside the set for an index below CPU_SETSIZE, checked above.
    unsafe { libc::CPU_SET(idx, &mut set) };
    // SAFETY: pid 0 is the calling thread; the set is a live, fully initialised cpu_set_t.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot pin to CPU {cpu}: {} (is it outside this process's cpuset?)",
            std::io::Error::last_os_error()
        ))
    }
}

/// The calling thread pinned to one CPU until dropped, when its former set of CPUs is restored.
#[derive(Debug)]
pub struct Pinned {
    before: Option<Box<libc::cpu_set_t>>,
}

impl Pinned {
    /// Pins the calling thread to `cpu` (see [`pin_current_thread`]).
    pub fn to(cpu: u32) -> Result<Pinned, String> {
        // SAFETY: an all-zero cpu_set_t is a valid (empty) set for the kernel to fill.
        let mut set: Box<libc::cpu_set_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: pid 0 is the calling thread; the set is live and of the size given.
        let r = unsafe {
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut *set)
        };
        pin_current_thread(cpu)?;
        Ok(Pinned {
            before: (r == 0).then_some(set),
        })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(set) = &self.before {
            // SAFETY: pid 0 is the calling thread; the set was filled by sched_getaffinity.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &**set) };
        }
    }
}

/// CPUs online (at least 1).
pub fn online_cpus() -> u32 {
    // SAFETY: sysconf only reads a system constant.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

/// The CPUs a loop ran on: the first and last seen, and every distinct one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTrace {
    /// CPU at the first sample.
    pub first: Option<u32>,
    /// CPU at the last sample.
    pub last: Option<u32>,
    /// Every CPU seen, ascending.
    pub seen: Vec<u32>,
    /// Samples taken.
    pub samples: u64,
}

impl CpuTrace {
    /// Samples the calling thread's CPU (a few nanoseconds: `sched_getcpu` reads it from the
    /// vDSO or rseq area).
    pub fn sample(&mut self) {
        if let Some(c) = current_cpu() {
            self.add(c);
        }
    }

    /// Adds one observation of `cpu`.
    pub fn add(&mut self, cpu: u32) {
        if self.first.is_none() {
            self.first = Some(cpu);
        }
        self.last = Some(cpu);
        self.samples += 1;
        if let Err(i) = self.seen.binary_search(&cpu) {
            self.seen.insert(i, cpu);
        }
    }

    /// Whether the thread moved between CPUs while sampled.
    pub fn migrated(&self) -> bool {
        self.seen.len() > 1
    }

    /// `3`, `0->1` or `0,1 (moved)`, for tables; `-` when never sampled.
    pub fn label(&self) -> String {
        match (self.first, self.last, self.seen.len()) {
            (None, _, _) => "-".into(),
            (Some(a), _, 1) => a.to_string(),
            (Some(a), Some(b), 2) if a != b => format!("{a}->{b}"),
            _ => {
                let all: Vec<String> = self.seen.iter().map(u32::to_string).collect();
                format!("{} (moved)", all.join(","))
            }
        }
    }
}

/// Parses `--affinity N[,M]`: the client's CPU and, optionally, the agent's.
pub fn parse_affinity(s: &str) -> Result<(u32, Option<u32>), String> {
    let bad = || format!("--affinity takes N or N,M (CPU numbers), not {s:?}");
    let mut parts = s.split(',').map(str::trim);
    let client = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let server = match parts.next() {
        None => None,
        Some(p) => Some(p.parse().map_err(|_| bad())?),
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok((client, server))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_keeps_first_last_and_the_distinct_cpus() {
        let mut t = CpuTrace::default();
        assert_eq!(t.label(), "-");
        t.add(1);
        t.add(1);
        assert_eq!(t.label(), "1");
        assert!(!t.migrated());
        t.add(0);
        assert_eq!(t.label(), "1->0");
        t.add(3);
        assert_eq!(t.seen, [0, 1, 3]);
        assert_eq!((t.first, t.last, t.samples), (Some(1), Some(3), 4));
        assert_eq!(t.label(), "0,1,3 (moved)");
    }

    #[test]
    fn pinning_moves_the_thread_and_a_missing_cpu_is_refused() {
        let last = online_cpus() - 1;
        std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            assert_eq!(current_cpu(), Some(last));
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(online_cpus() + 7).is_err());
    }

    #[test]
    fn affinity_forms() {
        assert_eq!(parse_affinity("0"), Ok((0, None)));
        assert_eq!(parse_affinity("0, 1"), Ok((0, Some(1))));
        assert!(parse_affinity("a").is_err());
        assert!(parse_affinity("0,1,2").is_err());
        assert!(parse_affinity("0,").is_err());
    }
}
