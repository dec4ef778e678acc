//! Nanosecond time: an [`Instant`] on some caller-chosen epoch and a [`Duration`] between instants.
//!
//! Both are a `u64` of nanoseconds (about 584 years of range), fine enough for one cell time on a
//! 10 Gbit/s link and exact in integer arithmetic.

use std::fmt;
use std::ops::{Add, AddAssign, Mul, Sub};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::units::{UnitError, parse_number_and_unit};

/// A point in time, in nanoseconds since an epoch chosen by whoever drives the model
/// (zero for a simulation, the driver's start for an emulation).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Duration(pub u64);

impl Instant {
    /// The epoch itself.
    pub const ZERO: Instant = Instant(0);

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);

    /// A duration of `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    /// A duration of `us` microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    /// A duration of `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    /// A duration of `s` seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// Length in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// `self - d`, or zero if `d` is longer.
    pub const fn saturating_sub(self, d: Duration) -> Duration {
        Duration(self.0.saturating_sub(d.0))
    }
    /// Length in seconds, as a float (for reporting, not for arithmetic).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// The duration closest to `s` seconds (negative and NaN give zero).
    pub fn from_secs_f64(s: f64) -> Self {
        Duration((s * 1e9).round().max(0.0) as u64)
    }
}

impl From<std::time::Duration> for Duration {
    fn from(d: std::time::Duration) -> Self {
        Duration(d.as_nanos().min(u64::MAX as u128) as u64)
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        std::time::Duration::from_nanos(d.0)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0 + d.0)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.0;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Panics in debug builds if `rhs` is later; use [`Instant::saturating_duration_since`] when
    /// the order is not known.
    fn sub(self, rhs: Instant) -> Duration {
        Duration(self.0 - rhs.0)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0 + d.0)
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.0;
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0 - d.0)
    }
}

impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, n: u64) -> Duration {
        Duration(self.0 * n)
    }
}

impl FromStr for Duration {
    type Err = UnitError;

    /// Parses `"17ms"`, `"2.83us"`, `"10s"`, `"5m"`, `"1h"`, `"250ns"`; a bare number is seconds.
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let (value, unit) = parse_number_and_unit(s, "a duration such as \"17ms\"")?;
        let scale = match unit {
            "" | "s" | "sec" => 1e9,
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "m" | "min" => 60e9,
            "h" => 3600e9,
            "d" => 86400e9,
            _ => {
                return Err(UnitError::new(
                    s,
                    "a duration unit: ns, us, ms, s, m, h or d",
                ));
            }
        };
        let ns = value * scale;
        if !(0.0..=u64::MAX as f64).contains(&ns) {
            return Err(UnitError::new(s, "a duration between 0 and 584 years"));
        }
        Ok(Duration(ns.round() as u64))
    }
}

impl fmt::Display for Duration {
    /// Prints with the largest unit that keeps the number at or above one: `17ms`, `2.83us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0 as f64;
        let (v, u) = if self.0 >= 1_000_000_000 {
            (ns / 1e9, "s")
        } else if self.0 >= 1_000_000 {
            (ns / 1e6, "ms")
        } else if self.0 >= 1_000 {
            (ns / 1e3, "us")
        } else {
            (ns, "ns")
        };
        write!(f, "{}{}", crate::units::trim_float(v, 3), u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_durations() {
        assert_eq!(
            "17ms".parse::<Duration>().unwrap(),
            Duration::from_millis(17)
        );
        assert_eq!("2.83us".parse::<Duration>().unwrap(), Duration(2830));
        assert_eq!("5m".parse::<Duration>().unwrap(), Duration::from_secs(300));
        assert_eq!("1.5".parse::<Duration>().unwrap(), Duration(1_500_000_000));
        assert_eq!(Duration(2830).to_string(), "2.83us");
        assert_eq!(Duration::from_millis(17).to_string(), "17ms");
        assert!("17 parsecs".parse::<Duration>().is_err());
        assert!("-1s".parse::<Duration>().is_err());
        let e = "1e30s".parse::<Duration>().unwrap_err();
        assert!(e.to_string().contains("584 years"), "{e}");
    }

    #[test]
    fn instant_arithmetic() {
        let t = Instant(100) + Duration(50);
        assert_eq!(t, Instant(150));
        assert_eq!(t - Instant(100), Duration(50));
        assert_eq!(Instant(1).saturating_duration_since(t), Duration::ZERO);
    }
}
