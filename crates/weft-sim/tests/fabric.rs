//! Datacenter fabric mechanisms end to end on the simulator (issue 29): the shipped
//! `fabric-dctcp-cubic` scenario, eight long flows into one 1 Gbit/s port whose switch marks ECN
//! at K = 20 frames of a 200-frame buffer.

use serde_json::Value;
use weft_model::scenario::Scenario;

fn scenario() -> Scenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/fabric-dctcp-cubic.toml"
    );
    let text = std::fs::read_to_string(path).expect("the scenario is shipped");
    Scenario::parse(&text, path).expect("the scenario parses")
}

fn num(x: &Value, k: &str) -> f64 {
    x[k].as_f64().unwrap_or_else(|| panic!("{k} in {x}"))
}

#[test]
fn dctcp_holds_the_queue_at_the_marking_threshold_where_cubic_fills_and_drops() {
    let doc = weft_sim::scenario::run(&scenario(), 1);
    let (cubic, dctcp) = (&doc.samples[0], &doc.samples[1]);
    let port = |x: &Value| x["receiver_queues"][0].clone();
    // Cubic's frames are not ECN-capable: never marked, the buffer fills and drops.
    assert_eq!(num(&port(cubic), "frames_marked"), 0.0);
    assert!(num(&port(cubic), "frames_dropped") > 100.0, "{cubic}");
    assert_eq!(num(cubic, "max_queue"), 200.0);
    // DCTCP: marks, no drop, no retransmission, the queue well under the buffer.
    assert!(num(&port(dctcp), "frames_marked") > 1000.0, "{dctcp}");
    assert_eq!(num(&port(dctcp), "frames_dropped"), 0.0);
    assert_eq!(num(dctcp, "retransmits"), 0.0);
    assert!(num(dctcp, "max_queue") < 120.0, "{dctcp}");
    // Both keep the port full, and DCTCP shares it at least as fairly.
    for x in [cubic, dctcp] {
        assert!(num(x, "goodput_mbps") > 900.0, "{x}");
    }
    assert!(num(dctcp, "goodput_jain") >= num(cubic, "goodput_jain") - 0.01);
}
