//! `rr` workloads over TCP on the simulator: what Nagle, delayed ACKs and the stacks do to a
//! transaction, the time-out rule, and the closed-form model beside it.

use weft_model::calc::evaluate;
use weft_model::scenario::{Metric, Scenario};

/// Two hosts on a 10 Mbit/s Ethernet switch, one `rr` workload over TCP with `workload` keys.
fn scenario(workload: &str) -> Scenario {
    with_timeout("1s", workload)
}

/// As [`scenario`], each request waiting `timeout` for its answer.
fn with_timeout(timeout: &str, workload: &str) -> Scenario {
    let text = format!(
        r#"
name = "r"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "sw"
[[link]]
ends = ["a", "sw"]
tech = "ethernet10"
delay = "5us"
[[link]]
ends = ["sw", "b"]
tech = "ethernet10"
delay = "5us"
[[workload]]
kind = "rr"
proto = "tcp"
from = "a"
to = "b"
count = 20
timeout = "{timeout}"
{workload}
"#
    );
    Scenario::parse(&text, "r.toml").expect("valid scenario")
}

/// (model, sim result) per point.
fn run(s: &Scenario) -> Vec<(f64, serde_json::Value)> {
    let doc = weft_sim::scenario::run(s, 1);
    evaluate(s)
        .into_iter()
        .zip(doc.samples)
        .map(|(m, x)| (m.metrics[Metric::RTT_MEAN_US], x))
        .collect()
}

/// The simulated median round trip of each point against the model's, within 0.1%.
fn agree(s: &Scenario) -> Vec<f64> {
    run(s)
        .into_iter()
        .map(|(model, x)| {
            let sim = x["rtt_p50_us"].as_f64().expect("sim rtt");
            assert!(
                (sim / model - 1.0).abs() < 1e-3,
                "model {model} sim {sim}: {x}"
            );
            assert_eq!(x[Metric::RR_LOSS], 0.0, "{x}");
            sim
        })
        .collect()
}

#[test]
fn bsd_nagle_and_delayed_acks_stall_a_message_of_one_full_segment_and_a_tail() {
    // 1500 bytes on Ethernet: a 1460-byte segment and a 40-byte tail each way.
    let bsd = agree(&scenario("size = [64, 1500, 3000]"));
    let nodelay = agree(&scenario("size = [64, 1500, 3000]\nnodelay = true"));
    let linux = agree(&scenario("size = [64, 1500, 3000]\nstack = \"linux\""));
    // The 4.4BSD sender holds each tail until its lone full segment is acknowledged, which the
    // receiver delays 200 ms: twice per transaction.
    assert!(bsd[1] > 400_000.0, "{bsd:?}");
    assert!(nodelay[1] < 6_000.0, "{nodelay:?}");
    // Linux's Nagle (Minshall's) sends the tail behind its full segment (its segments carry
    // 12 bytes of timestamps more).
    assert!(
        (linux[1] / nodelay[1] - 1.0).abs() < 0.02,
        "{linux:?} {nodelay:?}"
    );
    // Two full segments are acknowledged at once: the tail waits one ACK's round, no timer.
    assert!(
        bsd[2] > nodelay[2] && bsd[2] < nodelay[2] + 1_000.0,
        "{bsd:?} {nodelay:?}"
    );
    assert_eq!(bsd[0], nodelay[0]);
}

#[test]
fn an_echo_service_answers_the_full_segment_and_releases_the_tail() {
    let echo = agree(&scenario("size = [64, 1500]\necho = true"));
    assert!(echo[1] < 6_000.0, "no timer in the echo: {echo:?}");
}

#[test]
fn the_server_acknowledges_a_request_on_its_answer() {
    let (_, x) = run(&scenario("size = 64")).remove(0);
    let tcp = &x["pairs"][0]["tcp"];
    // No pure ACK from the server after the handshake: each request's ACK rides on its answer.
    assert_eq!(tcp["server"]["pure_acks"], 0, "{tcp}");
    assert_eq!(tcp["server"]["delayed_acks"], 0, "{tcp}");
    // The client's ACK of each answer rides on the next request (the last one's is delayed).
    assert!(
        tcp["client"]["pure_acks"].as_u64().expect("count") <= 2,
        "{tcp}"
    );
}

#[test]
fn a_late_answer_counts_as_lost_and_the_connection_carries_on() {
    // Each transaction takes 405 ms (the stalls above); the time-out is 100 ms.
    let (_, x) = run(&with_timeout("100ms", "size = 1500")).remove(0);
    assert_eq!(x[Metric::RR_LOSS], 1.0, "{x}");
    // Every request was still asked, one after another's late answer, on the one connection.
    assert_eq!(x["requests"], 20, "{x}");
    assert_eq!(x["pairs"][0]["tcp"]["client"]["timeouts"], 0, "{x}");
}

#[test]
fn a_connection_that_fails_ends_the_pairs_requests_and_says_so() {
    // Every frame is lost: the SYN is retransmitted until TCP gives up.
    let text = r#"
name = "r"
[[host]]
name = "a"
[[host]]
name = "b"
[[link]]
ends = ["a", "b"]
tech = "ethernet10"
loss = 1.0
[[workload]]
kind = "rr"
proto = "tcp"
from = "a"
to = "b"
size = 64
count = 5
"#;
    let (_, x) = run(&Scenario::parse(text, "r.toml").expect("valid")).remove(0);
    assert_eq!(x["requests"], 0, "{x}");
    let notes = x["notes"].to_string();
    assert!(notes.contains("connection failed"), "{x}");
}
