//! A line that sends at a rate: when does each unit's last bit leave. The one serialiser of weft:
//! links, ports and shapers all time their sends with it.

use crate::units::Rate;

/// Exact serialisation at a rate. Within a busy period the end of each unit is carried as an
/// exact fraction of a nanosecond (whole ns plus a remainder in bit-ns), so long runs of cells
/// never accumulate rounding; the instants it reports are rounded up to the next nanosecond (a
/// unit is never reported gone before its last bit is).
#[derive(Clone, Debug)]
pub struct Serialiser {
    /// Bits per second; 0 is an unlimited line.
    rate: u64,
    /// Whole nanoseconds of the exact end of the last unit.
    busy: u64,
    /// The fractional part of that end, in bit-nanoseconds (`< rate`).
    rem: u64,
}

impl Serialiser {
    /// A line at `rate` (`None` or zero: unlimited), idle.
    pub fn new(rate: Option<Rate>) -> Self {
        Serialiser {
            rate: rate.map_or(0, |r| r.as_bps()),
            busy: 0,
            rem: 0,
        }
    }

    /// The line's rate (`None`: unlimited).
    pub fn rate(&self) -> Option<Rate> {
        (self.rate > 0).then_some(Rate(self.rate))
    }

    /// Starts `bytes` at `max(now, line free)` and returns when its last bit leaves (ns, rounded
    /// up). An unlimited line sends in no time.
    #[inline]
    pub fn send(&mut self, now: u64, bytes: u64) -> u64 {
        if self.rate == 0 {
            self.busy = self.busy.max(now);
            return self.busy;
        }
        if now > self.busy || (now == self.busy && self.rem == 0) {
            // Idle (the exact end of the last unit is before `now`): a new busy period starts
            // exactly at `now`.
            self.busy = now;
            self.rem = 0;
        }
        // bytes * 8e9 fits in u64 for any frame below 2.3 GB; rem < rate.
        let num = bytes.saturating_mul(8_000_000_000).saturating_add(self.rem);
        self.busy = self.busy.saturating_add(num / self.rate);
        self.rem = num % self.rate;
        self.free_at()
    }

    /// Sends `bytes` right behind the previous unit, from its exact end (a queue drained back to
    /// back), and returns when its last bit leaves (ns, rounded up).
    pub fn send_next(&mut self, bytes: u64) -> u64 {
        self.send(self.busy, bytes)
    }

    /// When the line is next free (ns, rounded up).
    #[inline]
    pub fn free_at(&self) -> u64 {
        self.busy + u64::from(self.rem != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_the_remainder_over_a_busy_period() {
        let mut s = Serialiser::new(Some(Rate::bps(149_760_000)));
        let mut end = 0;
        for _ in 0..1000 {
            end = s.send(0, 53);
        }
        // 1000 cells of 424 bits at 149.76 Mbit/s = 2831196.58 ns, reported as 2831197.
        assert_eq!(end, 2_831_197);
        // Back to back from the exact end, not from the rounded one.
        assert_eq!(s.send_next(53), 2_831_197 + 2_831);
        // Idle, a new period starts where it is asked to.
        assert_eq!(s.send(10_000_000, 1), 10_000_000 + 54);
    }

    #[test]
    fn unlimited_lines_take_no_time() {
        let mut s = Serialiser::new(None);
        assert_eq!(s.send(5, 1_000_000), 5);
        assert_eq!(s.free_at(), 5);
        assert_eq!(s.rate(), None);
    }
}
