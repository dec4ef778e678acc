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
//! waiting for a processor; one more is dropped) to no limit. A preset's name
//! ([`crate::net::forwarding_presets`]) stands for its table (`forwarding =
//! "cisco7000-autonomous"`), and `preset = "NAME"` in a table starts from it.

use toml::de::DeValue;

use super::reader::{Result, Tbl};
use crate::net::{ForwardingSpec, forwarding_presets};
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
    let unknown = |name: &str| {
        s.err(
            "forwarding",
            format!(
                "no router preset {name:?}: one of {}",
                forwarding_presets::NAMES.join(", ")
            ),
        )
    };
    let t = match v.get_ref() {
        DeValue::String(name) => {
            return forwarding_presets::by_name(name)
                .map(Some)
                .ok_or_else(|| unknown(name));
        }
        DeValue::Table(t) => t,
        _ => {
            return Err(s.err(
                "forwarding",
                "expected a preset name or a table such as { per_packet = \"20us\", per_byte = \"1ns\" }",
            ));
        }
    };
    let f = s.child("forwarding", t, v.span());
    f.check_keys(&["preset", "per_packet", "per_byte", "processors", "queue"])?;
    let base = match f.string("preset")? {
        Some(name) => forwarding_presets::by_name(&name).ok_or_else(|| unknown(&name))?,
        None => ForwardingSpec {
            per_packet: Duration::ZERO,
            per_byte_ps: 0,
            processors: 1,
            queue: None,
        },
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
    use crate::net::forwarding_presets;
    use crate::scenario::Scenario;
    use crate::time::Duration;

    /// The `forwarding` of the one switch of a two-host scenario whose switch has `value`.
    fn parsed(value: &str) -> Result<Option<crate::net::ForwardingSpec>, String> {
        let text = format!(
            "name = \"t\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[switch]]\nname = \"r\"\nforwarding = {value}\n[[link]]\nends = [\"a\", \"r\"]\ntech = \"oc3c\"\n[[link]]\nends = [\"r\", \"b\"]\ntech = \"oc3c\"\n"
        );
        Scenario::parse(&text, "t.toml")
            .map(|s| s.switches[0].forwarding)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_preset_names_a_router_and_a_table_overrides_it() {
        let cisco = forwarding_presets::cisco7000_autonomous();
        assert_eq!(parsed("\"cisco7000-autonomous\""), Ok(Some(cisco)));
        let q = parsed("{ preset = \"cisco7000-autonomous\", queue = 75, per_packet = \"12us\" }")
            .unwrap()
            .unwrap();
        assert_eq!(q.per_byte_ps, cisco.per_byte_ps);
        assert_eq!(
            (q.queue, q.per_packet),
            (Some(75), Duration::from_micros(12))
        );
        let own = parsed("{ per_packet = \"20us\", per_byte = \"1ns\" }")
            .unwrap()
            .unwrap();
        assert_eq!(
            (own.per_packet.0, own.per_byte_ps, own.processors),
            (20_000, 1000, 1)
        );
        let err = parsed("\"cisco9000\"").unwrap_err();
        assert!(err.contains("cisco7000-autonomous"), "{err}");
        assert!(parsed("{ per_packet = \"2s\" }").is_err());
        assert!(parsed("{ speed = 3 }").is_err());
    }

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
