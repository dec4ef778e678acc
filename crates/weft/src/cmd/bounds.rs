//! Value parsers for flags of sizes, rates and durations that refuse a value out of the flag's
//! range, naming the range: `--window 1e18` is an error that says "between 1B and 1GiB", not a
//! number that overflows later. clap puts the flag's name in front of the message.
//!
//! The bounds are written with units (`size("1", "1GiB")`) so that they read as the help does.

use std::str::FromStr;

use weft_model::{Duration, Rate, Size};

/// A parser of `T` between `min` and `max` (inclusive, both written with units).
fn bounded<T>(
    min: &'static str,
    max: &'static str,
    what: &'static str,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: FromStr<Err = weft_model::units::UnitError> + PartialOrd + std::fmt::Display,
{
    move |s: &str| {
        let (Ok(lo), Ok(hi)) = (min.parse::<T>(), max.parse::<T>()) else {
            return Err(format!("bad bounds {min}..{max} in this build"));
        };
        if s.trim_start().starts_with('-') {
            return Err(format!(
                "{s} is out of range: expected {what} between {lo} and {hi}"
            ));
        }
        let v: T = s.parse().map_err(|e: weft_model::units::UnitError| {
            format!("{e} (this flag takes {what} between {lo} and {hi})")
        })?;
        if v < lo || v > hi {
            return Err(format!(
                "{s} is out of range: expected {what} between {lo} and {hi}"
            ));
        }
        Ok(v)
    }
}

/// A size (bytes) between `min` and `max`.
pub fn size(
    min: &'static str,
    max: &'static str,
) -> impl Fn(&str) -> Result<Size, String> + Clone + Send + Sync + 'static {
    bounded(min, max, "a size")
}

/// A rate (bits per second) between `min` and `max`.
pub fn rate(
    min: &'static str,
    max: &'static str,
) -> impl Fn(&str) -> Result<Rate, String> + Clone + Send + Sync + 'static {
    bounded(min, max, "a rate")
}

/// A duration between `min` and `max`, with its unit: a bare number other than 0 is refused
/// (`--rtt 17` could mean 17 ms or 17 s; [`Duration`]'s own parser, used by scenario files,
/// reads it as seconds).
pub fn duration(
    min: &'static str,
    max: &'static str,
) -> impl Fn(&str) -> Result<Duration, String> + Clone + Send + Sync + 'static {
    let parse = bounded(min, max, "a duration");
    move |s: &str| {
        let t = s.trim();
        if t.starts_with('-') {
            return parse(s);
        }
        let bare = !t.is_empty() && t.parse::<f64>().is_ok();
        if bare && t.parse::<f64>() != Ok(0.0) {
            return Err(format!(
                "{s} has no unit: write {t}ms, {t}s, {t}us (units: ns, us, ms, s, m, h, d)"
            ));
        }
        parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_out_of_range_name_the_range() {
        let p = size("1", "1GiB");
        assert_eq!(p("64KiB").unwrap(), Size(65536));
        let e = p("1e18").unwrap_err();
        assert!(e.contains("out of range") && e.contains("1GiB"), "{e}");
        assert!(p("0").unwrap_err().contains("between 1B"));
        let d = duration("1ms", "1d");
        let e = d("1e30s").unwrap_err();
        assert!(
            e.contains("584 years") && e.contains("between 1ms and 86400s"),
            "{e}"
        );
        assert!(d("2d").unwrap_err().contains("between 1ms and 86400s"));
        assert!(rate("1", "1Tbps")("2Tbps").is_err());
        assert!(d("soon").unwrap_err().contains("expected a duration"));
    }

    #[test]
    fn a_duration_without_a_unit_is_refused() {
        let d = duration("0", "1h");
        let e = d("17").unwrap_err();
        assert!(e.contains("17 has no unit") && e.contains("17ms"), "{e}");
        assert!(d("2.5").unwrap_err().contains("no unit"));
        assert_eq!(d("17ms").unwrap(), Duration(17_000_000));
        assert_eq!(d("0").unwrap(), Duration(0));
    }

    #[test]
    fn a_negative_value_gets_the_range() {
        let e = duration("1ms", "7d")("-5").unwrap_err();
        assert!(
            e.contains("-5 is out of range") && e.contains("between 1ms and 604800s"),
            "{e}"
        );
        let e = duration("1ms", "7d")("-5s").unwrap_err();
        assert!(e.contains("between 1ms and 604800s"), "{e}");
        let e = size("1", "1GiB")("-5").unwrap_err();
        assert!(e.contains("between 1B and 1GiB"), "{e}");
    }
}
