//! A switch's `forwarding` key: it is a store-and-forward router whose forwarding processors
//! every packet it routes waits for ([`crate::net::Forwarder`]).
//!
//! ```toml
//! [[switch]]
//! name = "router"
//! forwarding = { per_packet = "20us", per_byte = "1ns", processors = 1, queue = 75 }
//! ```
//!
//! `per_packet` (a duration) and `per_byte` (a duration per byte of the IP packet, to the
//! picosecond: `"0.5ns"`, `"15ps"`) default to nothing, `processors` to 1, `queue` (packets
//! waiting for a processor; one more is dropped) to no limit.

use toml::de::DeValue;

use super::reader::{Result, Tbl};
use crate::net::ForwardingSpec;
use crate::time::Duration;

/// The longest `per_packet` a scenario may give.
const PER_PACKET_MAX: Duration = Duration::from_secs(1);
/// The longest `per_byte` a scenario may give, in picoseconds (1 ms a byte).
const PER_BYTE_MAX_PS: u64 = 1_000_000_000;

/// The switch `s`'s `forwarding` table, if it has one.
pub(super) fn forwarding(s: &Tbl<'_, '_>) -> Result<Option<ForwardingSpec>> {
    let Some(v) = s.get("forwarding") else {
        return Ok(None);
    };
    let DeValue::Table(t) = v.get_ref() else {
        return Err(s.err(
            "forwarding",
            "expected a table such as { per_packet = \"20us\", per_byte = \"1ns\" }",
        ));
    };
    let f = s.child("forwarding", t, v.span());
    f.check_keys(&["per_packet", "per_byte", "processors", "queue"])?;
    let base = ForwardingSpec {
        per_packet: Duration::ZERO,
        per_byte_ps: 0,
        processors: 1,
        queue: None,
    };
    let per_byte_ps = f.parse_with(
        "per_byte",
        "a duration per byte between 0 and 1ms, such as \"1ns\" or \"15ps\"",
        per_byte_ps,
    )?;
    Ok(Some(ForwardingSpec {
        per_packet: f
            .duration("per_packet", Duration::ZERO, PER_PACKET_MAX)?
            .unwrap_or(base.per_packet),
        per_byte_ps: per_byte_ps.unwrap_or(base.per_byte_ps),
        processors: f.count32("processors", 1, 256)?.unwrap_or(base.processors),
        queue: f.count32("queue", 1, 1 << 20)?.or(base.queue),
    }))
}

/// A duration per byte in picoseconds: `"1ns"`, `"0.5ns"`, `"15ps"`, `"1.2us"`.
fn per_byte_ps(text: &str) -> Option<u64> {
    let (v, unit) = crate::units::parse_number_and_unit(text, "").ok()?;
    let scale = match unit {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        _ => return None,
    };
    let ps = (v * scale).round();
    (ps <= PER_BYTE_MAX_PS as f64).then_some(ps as u64)
}

#[cfg(test)]
mod tests {
    use super::per_byte_ps;

    #[test]
    fn per_byte_takes_fractions_of_a_nanosecond() {
        assert_eq!(per_byte_ps("1ns"), Some(1000));
        assert_eq!(per_byte_ps("0.5ns"), Some(500));
        assert_eq!(per_byte_ps("15ps"), Some(15));
        assert_eq!(per_byte_ps("15"), None);
        assert_eq!(per_byte_ps("2ms"), None);
        assert_eq!(per_byte_ps("-1ns"), None);
    }
}
