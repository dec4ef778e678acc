//! Tests of raw UDP between hosts with costs ([`super::tput`] with `proto = "udp"`): a sender
//! as fast as its host lets it, and a receiver that falls behind it losing what its socket
//! buffer cannot hold (RIACS, study 004, Figures 2 and 3).

use serde_json::{Map, Value};
use weft_model::Scenario;
use weft_model::net::Topology;

use super::tput::{UDP_RECVSPACE, tput};

/// Raw UDP for 1 s from `from` to `to` (RIACS's presets) over TAXI through one switch, in
/// `size`-byte datagrams; the metrics.
fn blast(from: &str, to: &str, size: u64) -> Map<String, Value> {
    let text = format!(
        r#"
name = "udp"
[[host]]
name = "a"
costs = "{from}"
[[host]]
name = "b"
costs = "{to}"
[[switch]]
name = "sw"
[[link]]
ends = ["a", "sw"]
tech = "taxi100"
delay = "5us"
[[link]]
ends = ["sw", "b"]
tech = "taxi100"
delay = "5us"
[[workload]]
kind = "tput"
proto = "udp"
from = "a"
to = "b"
size = {size}
time = "1s"
"#
    );
    let s = Scenario::parse(&text, "udp.toml").expect("parses");
    let (topo, _) = Topology::from_scenario(&s, 1).expect("topology");
    let (mut m, mut notes) = (Map::new(), Vec::new());
    tput(&s, &topo, &s.workloads[0], 1, None, &mut m, &mut notes);
    assert!(notes.is_empty(), "{notes:?}");
    m
}

fn num(m: &Map<String, Value>, k: &str) -> f64 {
    m.get(k)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{k}: {m:?}"))
}

/// psyche sends 9000-byte datagrams at its send path's 22.6 Mbit/s (353.5 ns a byte), not at
/// TAXI's 90: each `sendto` blocks until its host is done with it. dufus receives at 30.4
/// (263.6 ns a byte), so nothing is lost. Without the blocking send the source would go at the
/// line rate (and the receiver lose three quarters).
#[test]
fn a_sender_goes_as_fast_as_its_host_and_a_faster_receiver_keeps_up() {
    let m = blast("riacs-psyche", "riacs-dufus", 9000);
    let sent = num(&m, "sent_mbps");
    assert!((sent - 8000.0 / 353.5).abs() < 0.01 * sent, "{m:?}");
    assert_eq!(num(&m, "socket_drops"), 0.0, "{m:?}");
    assert!(num(&m, "datagram_loss") < 0.01, "{m:?}");
    assert!(
        (num(&m, "goodput_mbps") - sent).abs() < 0.01 * sent,
        "{m:?}"
    );
}

/// dufus sends at 23.5 Mbit/s (340.5 ns a byte) into psyche, which reads at 22.6 (353.5):
/// psyche's socket buffer fills and drops what it cannot hold, 3.7% of the datagrams, and it
/// receives at its own rate. Without the bound the datagrams would queue unread (no drops).
#[test]
fn a_slower_receiver_drops_at_its_full_socket_buffer() {
    let m = blast("riacs-dufus", "riacs-psyche", 9000);
    let (sent, got) = (num(&m, "datagrams_sent"), num(&m, "datagrams_received"));
    let drops = num(&m, "socket_drops");
    // What is neither read nor dropped is in the buffer (or on its way) when the run ends.
    let held = (UDP_RECVSPACE / 9000) as f64 + 2.0;
    assert!(drops > 0.0 && sent - got - drops <= held, "{m:?}");
    let loss = num(&m, "datagram_loss");
    assert!((loss - (1.0 - 340.5 / 353.5)).abs() < 0.01, "{m:?}");
    let rx = num(&m, "goodput_mbps");
    assert!((rx - 8000.0 / 353.5).abs() < 0.02 * rx, "{m:?}");
}

/// A datagram longer than the MTU leaves in IP fragments and arrives whole: 20,000 bytes over
/// TAXI's 9180-byte MTU are three frames, and the receiver counts the datagrams, not the frames
/// (all but the last sent and the one being read when the run ends).
#[test]
fn a_datagram_beyond_the_mtu_arrives_in_fragments() {
    let m = blast("riacs-psyche", "riacs-dufus", 20_000);
    let (sent, got) = (num(&m, "datagrams_sent"), num(&m, "datagrams_received"));
    assert!(sent > 100.0 && sent - got <= 2.0, "{m:?}");
    assert!(
        (num(&m, "goodput_mbps") - 8000.0 / 353.5).abs() < 0.3,
        "{m:?}"
    );
}
