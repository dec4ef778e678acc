//! A host's `lane_driver` key: its ATM adapter runs a LAN Emulation client whose driver costs
//! this much on each of its paths ([`crate::host::lane`]).
//!
//! ```toml
//! [[host]]
//! name = "lane1"
//! costs = "sparc20-m50-solaris2.3"
//! lane_driver = { packet = "20us", byte = "0ns" }
//! ```
//!
//! Either key may be left out (zero). The host's link must carry LANE encapsulation
//! ([`check_links`]).

use super::reader::{Result, Tbl};
use super::{Host, Link};
use crate::host::lane::LaneDriver;
use crate::tech::Encap;
use crate::time::Duration;

/// At most a second a packet and a microsecond a byte: far beyond any host's driver.
const PACKET_MAX: Duration = Duration(1_000_000_000);
const BYTE_MAX: Duration = Duration(1_000);

/// The host `h`'s `lane_driver` table, if it has one.
pub(super) fn lane_driver(h: &Tbl<'_, '_>) -> Result<Option<LaneDriver>> {
    let Some(d) = h.table(
        "lane_driver",
        "expected a table such as { packet = \"20us\", byte = \"1ns\" }",
    )?
    else {
        return Ok(None);
    };
    d.check_keys(&["packet", "byte"])?;
    Ok(Some(LaneDriver {
        packet: d
            .duration("packet", Duration::ZERO, PACKET_MAX)?
            .unwrap_or(Duration::ZERO),
        byte: d
            .duration("byte", Duration::ZERO, BYTE_MAX)?
            .unwrap_or(Duration::ZERO),
    }))
}

/// The name of a host with a LANE driver none of whose links carries LANE encapsulation.
pub(super) fn check_links<'a>(hosts: &'a [Host], links: &[Link]) -> Option<&'a str> {
    hosts
        .iter()
        .filter(|h| h.lane_driver.is_some())
        .find(|h| {
            !links
                .iter()
                .any(|l| l.ends.contains(&h.name) && l.tech.encap == Encap::Lane)
        })
        .map(|h| h.name.as_str())
}

#[cfg(test)]
mod tests {
    use crate::host::Direction;
    use crate::scenario::Scenario;

    fn scenario(host: &str, encap: &str) -> Result<Scenario, crate::scenario::ScenarioError> {
        let text = format!(
            "name = \"t\"\n[[host]]\nname = \"a\"\n{host}\n[[host]]\nname = \"b\"\n\
             [[link]]\nends = [\"a\", \"b\"]\ntech = {{ preset = \"oc3c\", encap = \"{encap}\" }}\n"
        );
        Scenario::parse(&text, "t.toml")
    }

    #[test]
    fn a_lane_driver_is_charged_on_top_of_the_hosts_preset() {
        let preset = "costs = \"sparc20-m50-solaris2.3\"";
        let plain = scenario(preset, "lane").unwrap();
        let lane = scenario(
            &format!("{preset}\nlane_driver = {{ packet = \"270us\", byte = \"2ns\" }}"),
            "lane",
        )
        .unwrap();
        let (p, l) = (
            plain.hosts[0].cost_preset().unwrap(),
            lane.hosts[0].cost_preset().unwrap(),
        );
        for dir in [Direction::Send, Direction::Receive] {
            assert_eq!(l.per_packet_ns(dir) - p.per_packet_ns(dir), 270_000.0);
            assert_eq!(l.per_byte_ns(dir) - p.per_byte_ns(dir), 2.0);
        }
        // A driver on a host that names no preset costs the driver alone.
        let bare = scenario("lane_driver = { packet = \"10us\" }", "lane").unwrap();
        let h = bare.hosts[0].cost_preset().unwrap();
        assert_eq!(h.per_packet_ns(Direction::Receive), 10_000.0);
        assert_eq!(h.per_byte_ns(Direction::Send), 0.0);
        assert_eq!(bare.hosts[1].cost_preset(), None);
    }

    #[test]
    fn a_lane_driver_needs_a_lane_link_and_its_own_keys() {
        let e = scenario("lane_driver = { packet = \"10us\" }", "llc-snap").unwrap_err();
        assert!(
            e.to_string().contains("no link with `encap = \"lane\"`"),
            "{e}"
        );
        for bad in [
            "lane_driver = 3",
            "lane_driver = { packet = \"10us\", copies = 1 }",
            "lane_driver = { packet = \"-1us\" }",
            "lane_driver = { packet = 10 }",
            "lane_driver = { byte = \"2s\" }",
        ] {
            assert!(scenario(bad, "lane").is_err(), "{bad}");
        }
    }
}
