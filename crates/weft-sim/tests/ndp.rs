//! NDP over a trimming fabric end to end on the simulator (issue 29): the shipped
//! `fabric-incast-ndp` scenario made small (k = 4, eight senders of 450 KB into h0).

use serde_json::Value;
use weft_model::scenario::Scenario;

fn incast(trim: bool) -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/fabric-incast-ndp.toml"
    );
    let text = std::fs::read_to_string(path).expect("the scenario is shipped");
    let mut text = text
        .replace("\nk = 8\n", "\nk = 4\n")
        .replace("senders = 16", "senders = 8");
    if !trim {
        text = text.replace(", trim = true", "");
    }
    let s = Scenario::parse(&text, path).expect("the scenario parses");
    assert_eq!(s.hosts.len(), 16);
    weft_sim::scenario::run(&s, 1).samples.remove(0)
}

fn num(x: &Value, k: &str) -> f64 {
    x[k].as_f64().unwrap_or_else(|| panic!("{k} in {x}"))
}

#[test]
fn trimming_and_pulls_finish_an_incast_at_the_receivers_line_rate() {
    let x = incast(true);
    assert_eq!(num(&x, "flows_completed"), 8.0, "{x}");
    // Nothing is lost whole and no timer fires: every trimmed packet is NACKed and sent again.
    assert_eq!(num(&x, "frames_dropped"), 0.0, "{x}");
    assert_eq!(num(&x, "timeouts"), 0.0, "{x}");
    assert!(num(&x, "frames_trimmed") > 0.0, "{x}");
    assert_eq!(num(&x, "nacks"), num(&x, "frames_trimmed"));
    // Only the first windows (8 x 23 packets at once) overflow the 8-packet queue; after them
    // the paced pulls keep it from trimming.
    assert!(num(&x, "frames_trimmed") < 8.0 * 23.0, "{x}");
    // The last flow ends within 5% of the time h0's 10 Gbit/s link needs for 8 x 450 KB.
    let need_us = 8.0 * 450_000.0 * 8.0 / 10e9 * 1e6;
    let last = num(&x, "fct_max_us");
    assert!(
        last >= need_us && last < 1.05 * need_us,
        "{last} us, {need_us} us"
    );
}

#[test]
fn without_trimming_the_lost_packets_wait_for_the_time_out() {
    let x = incast(false);
    assert_eq!(num(&x, "frames_trimmed"), 0.0, "{x}");
    assert!(num(&x, "frames_dropped") > 0.0, "{x}");
    assert!(num(&x, "timeouts") > 0.0, "{x}");
    assert!(num(&x, "flows_completed") < 8.0, "{x}");
}
