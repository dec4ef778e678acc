//! `weft rr --floor`: the machine's own wake-up latency, measured without a network, so that a
//! round trip can be read as "this much is the host".
//!
//! Three figures, each from `rounds` samples:
//! - **wake-up round trip**: two threads pass a token back and forth over two `eventfd`s, each
//!   blocking in `read` between turns. One round trip is two wake-ups of a sleeping thread, the
//!   cost a blocking request/response pays on top of its network path (on a virtual machine, of
//!   waking halted virtual CPUs).
//! - **spin round trip**: the same two threads spinning on a shared counter: the round trip with
//!   nobody asleep (moving a cache line between the two CPUs and back).
//! - **timer overshoot**: how late a 50 us `nanosleep` returns (the timer slack plus the wake-up).
//!
//! The threads are pinned where the test's two ends would be (`--affinity N,M`), or left to the
//! scheduler; where they actually ran is reported.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::place::{CpuTrace, pin_current_thread};
use super::stats::{LatencyStats, LatencySummary};

/// The sleep whose overshoot is measured.
pub const TIMER_SLEEP: Duration = Duration::from_micros(50);

/// The host's latency floor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    /// Round trip between two threads that block between turns (two wake-ups), ns.
    pub wakeup_rtt: LatencySummary,
    /// Round trip between two threads that spin between turns, ns.
    pub spin_rtt: LatencySummary,
    /// Lateness of a 50 us sleep beyond its 50 us, ns.
    pub timer_overshoot: LatencySummary,
    /// Where the first thread (the client's place) ran.
    pub client_cpus: CpuTrace,
    /// Where the second thread (the agent's place) ran.
    pub agent_cpus: CpuTrace,
}

impl Floor {
    /// Lines for a table, latencies in microseconds.
    pub fn table(&self) -> String {
        let us = |ns: u64| ns as f64 / 1e3;
        let line = |name: &str, s: &LatencySummary| {
            format!(
                "  {name:<26} p50 {:>8.1} us  p99 {:>8.1} us  max {:>8.1} us\n",
                us(s.p50_ns),
                us(s.p99_ns),
                us(s.max_ns)
            )
        };
        let mut out = format!(
            "host floor (threads on CPUs {} and {}):\n",
            self.client_cpus.label(),
            self.agent_cpus.label()
        );
        out += &line("wake-up round trip", &self.wakeup_rtt);
        out += &line("spin round trip", &self.spin_rtt);
        out += &line("50 us sleep, overshoot", &self.timer_overshoot);
        out
    }
}

/// Why the floor could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    /// A system call failed.
    #[error("{0}")]
    Sys(String),
}

fn eventfd() -> Result<OwnedFd, FloorError> {
    // SAFETY: eventfd has no pointer arguments; a non-negative result is a new descriptor.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(FloorError::Sys(format!(
            "eventfd: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn post(fd: &OwnedFd) -> bool {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64 to an eventfd.
    let r = unsafe { libc::write(fd.as_raw_fd(), std::ptr::from_ref(&one).cast(), 8) };
    r == 8
}

fn wait(fd: &OwnedFd) -> bool {
    let mut v: u64 = 0;
    // SAFETY: reads 8 bytes into a live u64 from an eventfd (blocks until it is non-zero).
    let r = unsafe { libc::read(fd.as_raw_fd(), std::ptr::from_mut(&mut v).cast(), 8) };
    r == 8
}

/// Measures the floor with `rounds` samples of each figure (plus a tenth as warm-up), the two
/// threads on `cpus` (client, agent) if given.
pub fn measure(rounds: u64, cpus: (Option<u32>, Option<u32>)) -> Result<Floor, FloorError> {
    let rounds = rounds.max(1);
    let warm = rounds / 10 + 1;
    let (ping, pong) = (eventfd()?, eventfd()?);
    let turn = AtomicU64::new(0);
    let stop_spin = u64::MAX;
    let mut wakeup = LatencyStats::new();
    let mut spin = LatencyStats::new();
    let mut overshoot = LatencyStats::new();
    let mut client_cpus = CpuTrace::default();
    let agent_cpus = std::thread::scope(|s| -> Result<CpuTrace, FloorError> {
        let echo = s.spawn(|| -> Result<CpuTrace, String> {
            if let Some(c) = cpus.1 {
                pin_current_thread(c)?;
            }
            let mut trace = CpuTrace::default();
            // Blocking half: answer every ping.
            for _ in 0..rounds + warm {
                if !wait(&ping) {
                    return Err("eventfd ping-pong failed".into());
                }
                if turn.load(Ordering::Acquire) == stop_spin {
                    // The client gave up and released this thread.
                    return Ok(trace);
                }
                if !post(&pong) {
                    return Err("eventfd ping-pong failed".into());
                }
                trace.sample();
            }
            // Spinning half: answer every odd turn with the next even one.
            loop {
                let t = turn.load(Ordering::Acquire);
                if t == stop_spin {
                    break;
                }
                if t % 2 == 1 {
                    turn.store(t + 1, Ordering::Release);
                } else {
                    std::hint::spin_loop();
                }
            }
            trace.sample();
            Ok(trace)
        });
        let client = (|| -> Result<(), FloorError> {
            if let Some(c) = cpus.0 {
                pin_current_thread(c).map_err(FloorError::Sys)?;
            }
            for i in 0..rounds + warm {
                let t0 = Instant::now();
                if !post(&ping) || !wait(&pong) {
                    return Err(FloorError::Sys("eventfd ping-pong failed".into()));
                }
                if i >= warm {
                    wakeup.record(ns(t0.elapsed()));
                }
                client_cpus.sample();
            }
            let mut t = 0u64;
            for i in 0..rounds + warm {
                let t0 = Instant::now();
                turn.store(t + 1, Ordering::Release);
                let deadline = t0 + Duration::from_secs(1);
                while turn.load(Ordering::Acquire) != t + 2 {
                    if Instant::now() > deadline {
                        return Err(FloorError::Sys(
                            "the spinning thread did not answer within 1 s".into(),
                        ));
                    }
                    std::hint::spin_loop();
                }
                t += 2;
                if i >= warm {
                    spin.record(ns(t0.elapsed()));
                }
            }
            Ok(())
        })();
        // Whatever happened, release the echo thread.
        turn.store(stop_spin, Ordering::Release);
        let _ = post(&ping);
        let agent = echo
            .join()
            .map_err(|_| FloorError::Sys("the echo thread panicked".into()))?;
        client?;
        agent.map_err(FloorError::Sys)
    })?;
    for i in 0..rounds + warm {
        let t0 = Instant::now();
        std::thread::sleep(TIMER_SLEEP);
        if i >= warm {
            overshoot.record(ns(t0.elapsed().saturating_sub(TIMER_SLEEP)));
        }
    }
    Ok(Floor {
        wakeup_rtt: wakeup.summary(),
        spin_rtt: spin.summary(),
        timer_overshoot: overshoot.summary(),
        client_cpus,
        agent_cpus,
    })
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_has_every_figure_and_spinning_is_not_slower_than_sleeping() {
        // Each end on a CPU of its own where there are two: two spinning threads sharing one
        // CPU wait for the scheduler's tick, and the comparison below would not hold.
        let two = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        let cpus = if two {
            (Some(0), Some(1))
        } else {
            (None, None)
        };
        let f = measure(200, cpus).unwrap();
        for s in [&f.wakeup_rtt, &f.spin_rtt, &f.timer_overshoot] {
            assert_eq!(s.count, 200);
            assert!(s.min_ns <= s.p50_ns && s.p50_ns <= s.max_ns, "{s:?}");
        }
        assert!(f.wakeup_rtt.min_ns > 0 && f.spin_rtt.min_ns > 0);
        // A blocking round trip makes two system calls and two wake-ups per side; the spinning
        // one makes none. Its best case cannot be beaten by the blocking best case.
        if two {
            assert!(f.spin_rtt.min_ns <= f.wakeup_rtt.min_ns, "{f:?}");
        }
        assert!(f.client_cpus.samples > 0 && f.agent_cpus.samples > 0);
        assert!(f.table().contains("wake-up round trip"));
    }
}
