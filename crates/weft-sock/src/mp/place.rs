//! A rank's CPU and scheduling class for the length of a run ([`Placement`]), undone when the
//! guard drops: the agent's thread that ran the rank goes back to serving other tests.
//!
//! Why (traced with `perf sched` and syscall tracepoints on the shared 2-CPU VM, four local
//! ranks): left to the scheduler, the four ranks often sat on one CPU while compiles ran on the
//! other, so a collective had one core where the host has two; and a rank that slept waiting for
//! a message was woken on time but ran only at the next tick (4 ms) when a niced compile held
//! its CPU. Pinning the ranks round-robin fixes the first; the real-time class, the second.

use weft_sys::sched::{Pinned, allowed_cpus, set_normal_class, set_realtime, thread_id};

use super::error::MpError;
use super::spec::Placement;

/// The calling thread placed as asked, until dropped.
#[derive(Debug)]
pub struct Placed {
    _pinned: Option<Pinned>,
    realtime: Option<i32>,
}

impl Placed {
    /// Pins the calling thread to the CPU of `place.slot` among those this process may use,
    /// and moves it to SCHED_FIFO if `place.realtime`; rank `me` names itself in errors.
    pub fn enter(me: usize, place: Placement) -> Result<Placed, MpError> {
        let pinned = match place.slot {
            Some(slot) => {
                let cpus = allowed_cpus();
                let cpu = cpus
                    .get(slot as usize % cpus.len().max(1))
                    .copied()
                    .ok_or_else(|| MpError::Config(format!("rank {me}: no CPU to run on")))?;
                Some(Pinned::to(cpu as u32).map_err(|e| {
                    MpError::Config(format!("rank {me}: pinning to CPU {cpu}: {e}"))
                })?)
            }
            None => None,
        };
        let realtime = if place.realtime {
            if !set_realtime(1) {
                return Err(MpError::Config(format!(
                    "rank {me}: the real-time class needs root (or CAP_SYS_NICE) on its host"
                )));
            }
            Some(thread_id())
        } else {
            None
        };
        Ok(Placed {
            _pinned: pinned,
            realtime,
        })
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        if let Some(tid) = self.realtime {
            set_normal_class(tid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_pins_round_robin_and_dropping_restores_the_cpus() {
        std::thread::spawn(|| {
            let before = allowed_cpus();
            let slot = before.len() as u32 + 1; // past the end: wraps round
            {
                let _p = Placed::enter(
                    0,
                    Placement {
                        slot: Some(slot),
                        realtime: false,
                    },
                )
                .unwrap();
                assert_eq!(allowed_cpus(), [before[slot as usize % before.len()]]);
            }
            assert_eq!(allowed_cpus(), before);
            let _none = Placed::enter(0, Placement::default()).unwrap();
            assert_eq!(allowed_cpus(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_real_time_class_lasts_as_long_as_the_guard() {
        if let Some(why) = weft_testutil::missing_root("the real-time class") {
            return weft_testutil::skip(&why);
        }
        std::thread::spawn(|| {
            // SAFETY: sched_getscheduler only reads the calling thread's policy.
            let policy = || unsafe { libc::sched_getscheduler(0) };
            {
                let _p = Placed::enter(
                    0,
                    Placement {
                        slot: None,
                        realtime: true,
                    },
                )
                .unwrap();
                assert_eq!(policy(), libc::SCHED_FIFO);
            }
            assert_eq!(policy(), libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }
}
