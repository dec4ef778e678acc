//! A store-and-forward router (`forwarding` on a `[[switch]]`) on the simulator, against the
//! model's closed form: the packet rate its processor bounds a transfer to, and the round trip
//! it lengthens for a window-bound one.

use weft_model::calc::evaluate;
use weft_model::scenario::{Metric, Scenario};

/// Hosts `a` and `b` on OC-3c links around `r` (a router with `forwarding`, or a plain switch
/// with none), then an E3 path at 33 Mbit/s to a second switch with `delay` each way; one TCP
/// transfer from `a` to `b` with `window` and 4490-byte datagrams.
fn scenario(forwarding: &str, delay: &str, window: &str) -> Scenario {
    let text = format!(
        r#"
name = "t"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "r"
{forwarding}
[[switch]]
name = "far"
[[link]]
ends = ["a", "r"]
tech = "oc3c"
delay = "10us"
[[link]]
ends = ["r", "far"]
tech = {{ preset = "e3", rate = "33Mbps" }}
delay = "{delay}"
[[link]]
ends = ["far", "b"]
tech = "oc3c"
delay = "10us"
[[workload]]
kind = "tput"
from = "a"
to = "b"
proto = "tcp"
window = {window}
mtu = 4490
time = "6s"
"#
    );
    Scenario::parse(&text, "t.toml").expect("valid scenario")
}

/// Goodput (Mbit/s) on the simulator and the model.
fn goodput(s: &Scenario) -> (f64, f64) {
    let doc = weft_sim::scenario::run(s, 1);
    let sim = doc.samples[0][Metric::GOODPUT_MBPS]
        .as_f64()
        .expect("goodput");
    (sim, evaluate(s)[0].metrics[Metric::GOODPUT_MBPS])
}

#[test]
fn a_slow_router_bounds_the_transfer_to_its_packet_rate() {
    // 1 ms a packet and 10 ns a byte: a segment (4490 B) 1044.9 us, an ACK 1000.4 us, one for
    // every second segment: 4450 B each 1545.1 us is 23.04 Mbit/s, under the E3's 30.
    let router = "forwarding = { per_packet = \"1ms\", per_byte = \"10ns\" }";
    let s = scenario(router, "1ms", "1048576");
    let (sim, model) = goodput(&s);
    let bound = 4450.0 * 8.0 / 1545.1e-6 / 1e6;
    assert!(
        (model - bound).abs() < 1e-3,
        "model {model} against {bound}"
    );
    assert!(
        (sim / model - 1.0).abs() < 0.02,
        "sim {sim} against model {model}"
    );
    // The same path without the router's cost: the E3's cells bound it, well above.
    let (free_sim, free_model) = goodput(&scenario("", "1ms", "1048576"));
    assert!(
        free_sim > 1.2 * sim && free_model > 1.2 * model,
        "{free_sim} {free_model}"
    );
    let doc = weft_sim::scenario::run(&s, 1);
    let r = &doc.samples[0]["routers"][0];
    assert_eq!(r["switch"], "r");
    assert!(r["packets"].as_u64().unwrap() > 1000);
    assert_eq!(doc.samples[0]["router_dropped"], 0);
}

#[test]
fn a_router_lengthens_a_window_bound_round() {
    // 64 KiB over 17 ms: the window bounds it. A router that stores each segment off the
    // OC-3c's cells (0.27 ms) and spends 100 us on it and on its ACK lengthens the round, and
    // the transfer slows by as much on both engines.
    let router = "forwarding = { per_packet = \"100us\" }";
    let (sim, model) = goodput(&scenario(router, "8.48ms", "65536"));
    let (free_sim, free_model) = goodput(&scenario("", "8.48ms", "65536"));
    assert!(
        (sim / model - 1.0).abs() < 0.01,
        "sim {sim} against model {model}"
    );
    assert!(sim < 0.99 * free_sim && model < 0.99 * free_model);
    assert!(((sim / free_sim) / (model / free_model) - 1.0).abs() < 0.01);
}
