//! `rr` workloads on the simulator against the model's closed-form round trip.

use weft_model::calc::evaluate;
use weft_model::scenario::{Metric, Scenario};

/// Two hosts through a switch on 10 Mbit/s Ethernet, an `rr` workload of 50 requests (or the
/// `count` that `workload` gives) with a 10 ms time-out.
fn scenario(extra_host: &str, link: &str, workload: &str) -> Scenario {
    let count = if workload.contains("count") {
        ""
    } else {
        "count = 50"
    };
    let text = format!(
        r#"
name = "r"
[[host]]
name = "a"
{extra_host}
[[host]]
name = "b"
{extra_host}
[[switch]]
name = "sw"
latency = "16.5us"
[[link]]
ends = ["a", "sw"]
tech = "ethernet10"
delay = "5us"
{link}
[[link]]
ends = ["sw", "b"]
tech = "ethernet10"
delay = "5us"
[[workload]]
kind = "rr"
from = "a"
to = "b"
{count}
timeout = "10ms"
{workload}
"#
    );
    Scenario::parse(&text, "r.toml").expect("valid scenario")
}

fn rtts(s: &Scenario) -> Vec<(f64, f64, serde_json::Value)> {
    let doc = weft_sim::scenario::run(s, 1);
    evaluate(s)
        .into_iter()
        .zip(doc.samples)
        .map(|(m, x)| {
            let sim = x[Metric::RTT_MEAN_US].as_f64().expect("sim rtt");
            (m.metrics[Metric::RTT_MEAN_US], sim, x)
        })
        .collect()
}

#[test]
fn the_simulated_round_trip_is_the_closed_form_one() {
    // 64 bytes in one datagram, 1500 in two (store and forward pipelines them).
    let s = scenario("", "", "size = [64, 1500]");
    for (model, sim, x) in rtts(&s) {
        assert!(
            (sim / model - 1.0).abs() < 0.01,
            "model {model} sim {sim}: {x}"
        );
        assert_eq!(x[Metric::RR_LOSS], 0.0, "{x}");
    }
}

#[test]
fn host_costs_add_to_the_round_trip_as_the_model_says() {
    let s = scenario("costs = \"sparc20-m50-solaris2.3\"", "", "size = 64");
    let (model, sim, x) = rtts(&s).remove(0);
    let free = rtts(&scenario("", "", "size = 64")).remove(0).1;
    assert!(
        sim > free * 3.0,
        "the hosts' costs dominate: {free} vs {sim}"
    );
    assert!(
        (sim / model - 1.0).abs() < 0.01,
        "model {model} sim {sim}: {x}"
    );
}

#[test]
fn unanswered_requests_are_counted_as_lost() {
    // Each request crosses the lossy link twice (the request out, the answer back), each frame
    // dropped with probability 0.2: 1 - 0.8^2 = 0.36 of the requests go unanswered.
    let s = scenario("", "loss = 0.2", "size = 64");
    let (_, _, x) = rtts(&s).remove(0);
    let loss = x[Metric::RR_LOSS].as_f64().expect("loss");
    println!("50 requests: loss {loss}");
    assert_eq!(x["requests"], 50, "{x}");
    // The engine is deterministic: seed 1 loses 19 of the 50 (0.38), exactly; a change in the
    // random stream or in where the loss is drawn shows here.
    assert_eq!(loss, LOST_OF_50 as f64 / 50.0, "{x}");
    // Over many requests the fraction is the configured 0.36: 4000 requests at seed 1 are one
    // draw of Binomial(4000, 0.36) / 4000, whose standard deviation is 0.0076 (seed 1 gives
    // 0.371); within four of them (0.030) holds a correct engine at any seed but one in
    // 15,000, and fails a loss drawn once per request (0.2) or on one direction only.
    let s = scenario("", "loss = 0.2", "size = 64\ncount = 4000");
    let (_, _, x) = rtts(&s).remove(0);
    let loss = x[Metric::RR_LOSS].as_f64().expect("loss");
    println!("4000 requests: loss {loss}");
    assert_eq!(x["requests"], 4000, "{x}");
    assert!(
        (loss - 0.36).abs() < 4.0 * (0.36f64 * 0.64 / 4000.0).sqrt(),
        "{x}"
    );
}

/// Requests of the 50 that seed 1 loses on the lossy link.
const LOST_OF_50: u32 = 19;

#[test]
fn answers_of_another_size_cross_back_as_the_model_says() {
    // 64-byte requests answered with 64 and with 3000 bytes (three datagrams back).
    let s = scenario("", "", "size = 64\nresponse_size = [64, 3000]");
    let r = rtts(&s);
    for (model, sim, x) in &r {
        assert!(
            (sim / model - 1.0).abs() < 0.01,
            "model {model} sim {sim}: {x}"
        );
    }
    // The long answer's two extra datagrams and its bytes, twice serialised (two hops).
    assert!(
        r[1].1 > r[0].1 + 2.0 * 2000.0 * 8.0 / 10.0,
        "{:?} {:?}",
        r[0].1,
        r[1].1
    );
}

#[test]
fn a_cut_through_switch_saves_a_serialisation_each_way_on_both_engines() {
    let mut s = scenario("", "", "size = [64, 1500]");
    let stored = rtts(&s);
    s.switches[0].cut_through = true;
    let cut = rtts(&s);
    for ((model, sim, x), (_, whole, _)) in cut.iter().zip(&stored) {
        assert!(
            (sim / model - 1.0).abs() < 0.01,
            "model {model} sim {sim}: {x}"
        );
        // Each way the first frame crosses the second 10 Mbit/s hop as it crosses the first:
        // at least 88 us (110 bytes of a 64-byte datagram) saved each way.
        assert!(
            whole - sim > 150.0,
            "store and forward {whole}, cut through {sim}"
        );
    }
}
