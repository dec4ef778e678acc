//! Noticing a stalled peer: one that stays connected (its kernel still acknowledges the control
//! connection, so the TCP user time-out never fires) but makes no progress while this side waits
//! on it (a stopped process, a frozen VM, a process stuck in the kernel).
//!
//! Each side knows what it waits on its peer for; while it waits, every message (or, at the
//! receiver, every new datagram) from the peer is progress. Time spent on this side's own work
//! (reading, writing, verifying a file) does not count. Pure: time comes from the driver.

use weft_model::{Duration, Instant};

/// The default bound: max(10 round trips, 5 s).
pub const DEFAULT_STALL_FLOOR: Duration = Duration::from_secs(5);

/// Round trips in the default bound.
pub const STALL_RTTS: u64 = 10;

/// The stall bound for a path of round-trip time `rtt`: `set` if given (`--stall-timeout`),
/// else max(10 x `rtt`, 5 s).
pub fn stall_bound(set: Option<Duration>, rtt: Duration) -> Duration {
    set.unwrap_or_else(|| (rtt * STALL_RTTS).max(DEFAULT_STALL_FLOOR))
}

/// A peer that made no progress for longer than the bound while this side waited on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stalled {
    /// How long this side has waited without progress.
    pub waited: Duration,
    /// The bound it was held to.
    pub bound: Duration,
    /// What this side was waiting for.
    pub waiting_for: &'static str,
}

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no progress for {} ms while waiting for {} (the bound is {} ms: --stall-timeout, by \
             default max(10 round trips, 5 s))",
            self.waited.as_nanos() / 1_000_000,
            self.waiting_for,
            self.bound.as_nanos() / 1_000_000
        )
    }
}

/// The progress timer of one side.
#[derive(Debug, Clone)]
pub(crate) struct Watchdog {
    bound: Option<Duration>,
    /// Since when this side has waited on its peer without progress (`None`: not waiting).
    since: Option<Instant>,
}

impl Watchdog {
    /// A timer with bound `bound` (`None`: off).
    pub(crate) fn new(bound: Option<Duration>) -> Self {
        Watchdog { bound, since: None }
    }

    /// The peer made progress at `now`.
    pub(crate) fn progress(&mut self, now: Instant) {
        if self.since.is_some() {
            self.since = Some(now);
        }
    }

    /// At `now`, this side waits on its peer for `owed` (`None`: for nothing): whether the
    /// peer has been stalled for longer than the bound.
    pub(crate) fn check(&mut self, now: Instant, owed: Option<&'static str>) -> Option<Stalled> {
        let (Some(bound), Some(waiting_for)) = (self.bound, owed) else {
            self.since = None;
            return None;
        };
        let since = *self.since.get_or_insert(now);
        let waited = now.saturating_duration_since(since);
        (waited > bound).then_some(Stalled {
            waited,
            bound,
            waiting_for,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant(ms * 1_000_000)
    }

    #[test]
    fn the_bound_is_ten_round_trips_or_five_seconds() {
        let ms = Duration::from_millis;
        assert_eq!(stall_bound(None, ms(1)), ms(5000));
        assert_eq!(stall_bound(None, ms(800)), ms(8000));
        assert_eq!(stall_bound(Some(ms(300)), ms(800)), ms(300));
    }

    #[test]
    fn only_time_waiting_on_the_peer_without_progress_counts() {
        let mut w = Watchdog::new(Some(Duration::from_millis(100)));
        // Not waiting: however long, no stall.
        assert_eq!(w.check(at(0), None), None);
        assert_eq!(w.check(at(1000), None), None);
        // Waiting from 1000: within the bound, then progress restarts the clock.
        assert_eq!(w.check(at(1000), Some("x")), None);
        assert_eq!(w.check(at(1090), Some("x")), None);
        w.progress(at(1090));
        assert_eq!(w.check(at(1180), Some("x")), None);
        let s = w.check(at(1191), Some("x")).unwrap();
        assert_eq!(s.waited, Duration::from_millis(101));
        // This side's own work in between (not waiting) resets it.
        assert_eq!(w.check(at(1200), None), None);
        assert_eq!(w.check(at(5000), Some("x")), None);
        // Off: never.
        let mut off = Watchdog::new(None);
        assert_eq!(off.check(at(0), Some("x")), None);
        assert_eq!(off.check(at(1_000_000), Some("x")), None);
    }
}
