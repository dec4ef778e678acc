//! Where a request/response test runs: the CPU a thread is on (`sched_getcpu`), pinning a
//! thread to one CPU (`sched_setaffinity`, iperf3's `-A`), and the set of CPUs a loop was seen
//! on.
//!
//! On a virtual machine a round trip includes waking the halted virtual CPUs of both ends; which
//! CPUs the ends ran on, and whether they moved, is part of the measurement (see
//! [`super::floor`]).

use serde::{Deserialize, Serialize};

pub use weft_sys::sched::{Pinned, current_cpu, online_cpus};

/// Pins the calling thread (and the threads it starts later) to `cpu`; the error says why not.
pub fn pin_current_thread(cpu: u32) -> Result<(), String> {
    weft_sys::sched::pin_current_thread(cpu).map_err(|e| e.to_string())
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
    fn affinity_forms() {
        assert_eq!(parse_affinity("0"), Ok((0, None)));
        assert_eq!(parse_affinity("0, 1"), Ok((0, Some(1))));
        assert!(parse_affinity("a").is_err());
        assert!(parse_affinity("0,1,2").is_err());
        assert!(parse_affinity("0,").is_err());
    }
}
