//! Rates in bits per second and sizes in bytes, parsed from and printed with units.
//!
//! Conventions (those of iperf3 and ttcp users): rates are decimal (`k` = 1000, `M` = 10^6);
//! sizes are binary with an explicit `i` (`KiB` = 1024) or with a bare prefix (`K`, `64K`, as in
//! `iperf3 -l 128K`), and decimal with a `B` after a decimal prefix (`kB`, `KB`, `MB` = 10^3, 10^6).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::time::Duration;

/// A value with a unit could not be parsed; says what was given and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {given:?}: expected {expected}")]
pub struct UnitError {
    /// The text that was given.
    pub given: String,
    /// What would have been accepted.
    pub expected: &'static str,
}

impl UnitError {
    pub(crate) fn new(given: &str, expected: &'static str) -> Self {
        UnitError {
            given: given.to_string(),
            expected,
        }
    }
}

/// A data rate in bits per second.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Rate(pub u64);

/// A size in bytes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Size(pub u64);

impl Rate {
    /// `n` bits per second.
    pub const fn bps(n: u64) -> Self {
        Rate(n)
    }
    /// `n` megabits (10^6 bits) per second.
    pub const fn mbps(n: u64) -> Self {
        Rate(n * 1_000_000)
    }
    /// Bits per second.
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    /// Megabits per second, as a float (for reporting).
    pub fn as_mbps_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// The rate at which `bytes` bytes pass in `elapsed` (zero if no time elapsed).
    pub fn from_bytes_over(bytes: u64, elapsed: Duration) -> Self {
        if elapsed.as_nanos() == 0 {
            return Rate(0);
        }
        Rate((bytes as u128 * 8 * 1_000_000_000 / elapsed.as_nanos() as u128) as u64)
    }
    /// Time to serialise `size` at this rate, rounded up to the next nanosecond.
    /// For long runs of equal units, compute the end of the n-th unit from `n * size` instead of
    /// adding rounded times, so that rounding never accumulates.
    pub fn time_to_send(self, size: Size) -> Duration {
        if self.0 == 0 {
            return Duration(u64::MAX);
        }
        let bits = size.0 as u128 * 8 * 1_000_000_000;
        Duration(bits.div_ceil(self.0 as u128).min(u64::MAX as u128) as u64)
    }
    /// Bytes that pass in `d` at this rate, rounded down.
    pub fn bytes_in(self, d: Duration) -> Size {
        Size((self.0 as u128 * d.as_nanos() as u128 / 8 / 1_000_000_000) as u64)
    }
}

impl Size {
    /// `n` bytes.
    pub const fn bytes(n: u64) -> Self {
        Size(n)
    }
    /// Bytes.
    pub const fn as_bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for Rate {
    type Err = UnitError;

    /// Parses `"26Mbps"`, `"155.52Mbit/s"`, `"1G"`, `"100kbps"`; a bare number is bits per second.
    fn from_str(s: &str) -> Result<Self, UnitError> {
        const EXPECTED: &str = "a rate such as \"26Mbps\", \"1Gbps\" or \"100kbit/s\"";
        let (value, unit) = parse_number_and_unit(s, EXPECTED)?;
        let (prefix, rest) = split_prefix(unit);
        if !matches!(rest, "" | "bps" | "bit/s" | "b/s" | "bit") {
            return Err(UnitError::new(s, EXPECTED));
        }
        let scale = match prefix {
            "" => 1.0,
            "k" | "K" => 1e3,
            "M" => 1e6,
            "G" => 1e9,
            "T" => 1e12,
            _ => return Err(UnitError::new(s, EXPECTED)),
        };
        let bps = value * scale;
        if !(0.0..=u64::MAX as f64).contains(&bps) {
            return Err(UnitError::new(
                s,
                "a rate between 0 and 2^64 bit/s (18.4 Ebit/s)",
            ));
        }
        Ok(Rate(bps.round() as u64))
    }
}

impl FromStr for Size {
    type Err = UnitError;

    /// Parses `"63KiB"`, `"64K"`, `"9180"`, `"1.5MB"`, `"8kB"`; a bare number is bytes.
    fn from_str(s: &str) -> Result<Self, UnitError> {
        const EXPECTED: &str = "a size such as \"9180\", \"64K\", \"63KiB\" or \"1MB\"";
        let (value, unit) = parse_number_and_unit(s, EXPECTED)?;
        let scale: f64 = match unit {
            "" | "B" => 1.0,
            "k" | "K" | "KiB" | "kiB" => 1024.0,
            "M" | "MiB" => 1024.0 * 1024.0,
            "G" | "GiB" => 1024.0 * 1024.0 * 1024.0,
            "T" | "TiB" => 1024f64.powi(4),
            "kB" | "KB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "TB" => 1e12,
            _ => return Err(UnitError::new(s, EXPECTED)),
        };
        let bytes = value * scale;
        if !(0.0..=u64::MAX as f64).contains(&bytes) {
            return Err(UnitError::new(
                s,
                "a size between 0 and 2^64 bytes (16 EiB)",
            ));
        }
        Ok(Size(bytes.round() as u64))
    }
}

impl fmt::Display for Rate {
    /// Prints with the decimal prefix that keeps the number at or above one: `26Mbps`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as f64;
        let (v, u) = if v >= 1e9 {
            (v / 1e9, "Gbps")
        } else if v >= 1e6 {
            (v / 1e6, "Mbps")
        } else if v >= 1e3 {
            (v / 1e3, "kbps")
        } else {
            (v, "bps")
        };
        write!(f, "{}{}", trim_float(v, 3), u)
    }
}

impl fmt::Display for Size {
    /// Prints exact byte counts below 1 KiB and binary prefixes above: `9180B` → `8.965KiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as f64;
        let k = 1024.0;
        if v < k {
            write!(f, "{}B", self.0)
        } else if v < k * k {
            write!(f, "{}KiB", trim_float(v / k, 3))
        } else if v < k * k * k {
            write!(f, "{}MiB", trim_float(v / (k * k), 3))
        } else {
            write!(f, "{}GiB", trim_float(v / (k * k * k), 3))
        }
    }
}

/// Splits `"  26.5 Mbps "` into `(26.5, "Mbps")`; also accepts exponents such as `"1e6"`.
pub(crate) fn parse_number_and_unit<'a>(
    s: &'a str,
    expected: &'static str,
) -> Result<(f64, &'a str), UnitError> {
    let t = s.trim();
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == 'e' || c == 'E')
                    && i > 0
                    && t[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '-')))
                && !((c == '-' || c == '+') && (i == 0 || t[..i].ends_with(['e', 'E'])))
        })
        .map_or(t.len(), |(i, _)| i);
    let value: f64 = t[..end].parse().map_err(|_| UnitError::new(s, expected))?;
    if !value.is_finite() || value < 0.0 {
        return Err(UnitError::new(s, expected));
    }
    Ok((value, t[end..].trim()))
}

fn split_prefix(unit: &str) -> (&str, &str) {
    match unit.chars().next() {
        Some(c @ ('k' | 'K' | 'M' | 'G' | 'T')) if unit.len() > 1 || unit == "k" => {
            unit.split_at(c.len_utf8())
        }
        Some('k' | 'K' | 'M' | 'G' | 'T') => (unit, ""),
        _ => ("", unit),
    }
}

/// Formats `v` with at most `places` decimals and no trailing zeros: `2.830` → `2.83`.
pub fn trim_float(v: f64, places: usize) -> String {
    let s = format!("{v:.places$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rates() {
        assert_eq!("26Mbps".parse::<Rate>().unwrap(), Rate(26_000_000));
        assert_eq!("155.52Mbps".parse::<Rate>().unwrap(), Rate(155_520_000));
        assert_eq!("1G".parse::<Rate>().unwrap(), Rate(1_000_000_000));
        assert_eq!("100kbit/s".parse::<Rate>().unwrap(), Rate(100_000));
        assert_eq!("1e6".parse::<Rate>().unwrap(), Rate(1_000_000));
        assert_eq!(" 10 Mbps ".parse::<Rate>().unwrap(), Rate(10_000_000));
        assert!("26MBps".parse::<Rate>().is_err());
        assert!("fast".parse::<Rate>().is_err());
        assert!("-5Mbps".parse::<Rate>().is_err());
        let e = "1e30Tbps".parse::<Rate>().unwrap_err();
        assert!(e.to_string().contains("2^64 bit/s"), "{e}");
    }

    #[test]
    fn parses_sizes() {
        assert_eq!("63KiB".parse::<Size>().unwrap(), Size(63 * 1024));
        assert_eq!("64K".parse::<Size>().unwrap(), Size(65536));
        assert_eq!("9180".parse::<Size>().unwrap(), Size(9180));
        assert_eq!("1.5MB".parse::<Size>().unwrap(), Size(1_500_000));
        assert_eq!("8kB".parse::<Size>().unwrap(), Size(8000));
        assert!("12 furlongs".parse::<Size>().is_err());
        assert!("".parse::<Size>().is_err());
        let e = "1e30".parse::<Size>().unwrap_err();
        assert!(e.to_string().contains("2^64 bytes"), "{e}");
    }

    #[test]
    fn prints_with_units() {
        assert_eq!(Rate(26_000_000).to_string(), "26Mbps");
        assert_eq!(Rate(135_631_698).to_string(), "135.632Mbps");
        assert_eq!(Size(512).to_string(), "512B");
        assert_eq!(Size(63 * 1024).to_string(), "63KiB");
    }

    #[test]
    fn serialisation_time_is_exact_and_rounds_up() {
        // One 53-byte cell at the OC-3c cell-stream rate of 149.76 Mbit/s: 2831.196... ns.
        let oc3 = Rate(149_760_000);
        assert_eq!(oc3.time_to_send(Size(53)), Duration(2832));
        assert_eq!(Rate::mbps(8).time_to_send(Size(1)), Duration(1000));
        assert_eq!(
            Rate::from_bytes_over(1_000_000, Duration::from_secs(1)),
            Rate(8_000_000)
        );
        assert_eq!(Rate::mbps(8).bytes_in(Duration::from_millis(1)), Size(1000));
    }
}
