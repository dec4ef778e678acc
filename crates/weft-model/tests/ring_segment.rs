//! `[[ring]]`: hosts sharing an FDDI ring in front of a switch port, from the scenario file to
//! the topology both engines build and the model's bound on TCP through the ring.

use weft_model::calc::ring::{RingFrames, estimate, tcp_bound};
use weft_model::net::Topology;
use weft_model::scenario::Scenario;

const FILE: &str = r#"
name = "rings"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[host]]
name = "d"
[[switch]]
name = "sw"
[[link]]
ends = ["a", "sw"]
tech = "fddi"
delay = "5us"
[[link]]
ends = ["b", "sw"]
tech = "fddi"
[[link]]
ends = ["c", "sw"]
tech = "fddi"
[[link]]
ends = ["d", "sw"]
tech = "fddi"
[[ring]]
switch = "sw"
hosts = ["a", "b"]
macs = 1
fibre_km = 0.1
[[workload]]
kind = "tput"
from = ["a", "b"]
to = ["c", "d"]
traffic = "pairs"
proto = "tcp"
window = 64512
"#;

#[test]
fn a_ring_takes_the_place_of_its_hosts_lines() {
    let s = Scenario::parse(FILE, "rings.toml").unwrap();
    assert_eq!(s.rings.len(), 1);
    // a, b, the repeating MAC and the port.
    assert_eq!(s.rings[0].spec().stations, 4);
    let (topo, _) = Topology::from_scenario(&s, 1).unwrap();
    assert_eq!(topo.rings.len(), 1);
    assert_eq!(topo.rings[0].hosts, vec![0, 1]);
    assert_eq!(
        topo.hosts[0].link.rate, None,
        "the ring serialises a's frames"
    );
    assert_eq!(topo.hosts[0].link.delay.as_nanos(), 0);
    assert!(topo.hosts[2].link.rate.is_some(), "c keeps its line");
}

#[test]
fn bad_rings_are_refused_with_their_reason() {
    let err = |from: &str, to: &str| {
        Scenario::parse(&FILE.replace(from, to), "rings.toml")
            .unwrap_err()
            .to_string()
    };
    assert!(err("switch = \"sw\"\nhosts", "switch = \"sx\"\nhosts").contains("no switch"));
    assert!(err("hosts = [\"a\", \"b\"]", "hosts = [\"a\", \"a\"]").contains("already on a ring"));
    assert!(err("hosts = [\"a\", \"b\"]", "hosts = []").contains("needs `hosts`"));
    assert!(
        err(
            "fibre_km = 0.1",
            "fibre_km = 0.1\nttrt = \"100us\"\nstation_delay = \"40us\""
        )
        .contains("latency")
    );
    let unlinked = FILE.replace("[[link]]\nends = [\"b\", \"sw\"]\ntech = \"fddi\"\n", "");
    let e = Scenario::parse(&unlinked, "rings.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs its one [[link]]"), "{e}");
}

#[test]
fn pairs_are_one_to_one() {
    let e = Scenario::parse(
        &FILE.replace("to = [\"c\", \"d\"]", "to = [\"c\"]"),
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("pairs take"), "{e}");
    let s = Scenario::parse(FILE, "rings.toml").unwrap();
    assert_eq!(s.workloads[0].from, vec!["a", "b"]);
    assert_eq!(s.workloads[0].to, vec!["c", "d"]);
}

#[test]
fn tcp_through_a_ring_is_bounded_by_its_share_of_the_token() {
    let s = Scenario::parse(FILE, "rings.toml").unwrap();
    let w = &s.workloads[0];
    // a and b send on the ring, the port answers with ACKs: Jain's efficiency of 3 stations,
    // two 4388-byte frames and an ACK for 8624 bytes of payload.
    let want = estimate(&s.rings[0].spec(), 2, true, RingFrames::fddi(4352)).goodput_mbps;
    assert_eq!(tcp_bound(&s, w, 4352), Some(want));
    assert!(want > 97.0 && want < 97.5, "{want}");
    // Flows that cross no ring are not bounded by one.
    let mut other = w.clone();
    other.from = vec!["c".into()];
    other.to = vec!["d".into()];
    assert_eq!(tcp_bound(&s, &other, 4352), None);
}
