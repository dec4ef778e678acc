//! Romanow and Floyd (IEEE JSAC 1995) on the simulator: ten TCP flows through one UBR output with
//! a 1000-cell buffer (scenarios/romanow-floyd-ubr.toml). Plain cell drop lets the surviving cells
//! of corrupted packets waste the congested link; Partial Packet Discard recovers some of that;
//! Early Packet Discard keeps every packet whole and reaches the link's payload capacity.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use std::path::PathBuf;

use serde_json::Value;

fn effective(doc: &Value, workload: u64) -> f64 {
    let s = doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["workload"] == workload)
        .unwrap_or_else(|| panic!("no sample of workload {workload} in {doc}"));
    s["effective_throughput"]
        .as_f64()
        .unwrap_or_else(|| panic!("no effective_throughput in {s}"))
}

#[test]
fn epd_beats_ppd_beats_plain_cell_drop() {
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/romanow-floyd-ubr.toml");
    let docs = common::run_json(&file, "sim", &[]);
    let (tail, ppd, epd) = (
        effective(&docs[0], 0),
        effective(&docs[0], 1),
        effective(&docs[0], 2),
    );
    let seen = format!("plain drop {tail:.4}, PPD {ppd:.4}, EPD {epd:.4}");
    assert!(
        epd > ppd && ppd > tail,
        "expected EPD > PPD > plain drop: {seen}"
    );
    // The abstract's "maximal levels": the link carries nothing but useful payload.
    assert!(
        epd > 0.98,
        "EPD should fill the link with whole packets: {seen}"
    );
    // Plain drop wastes a visible share of the link, not a rounding error.
    assert!(
        tail < 0.95 * epd,
        "plain drop should lose to EPD clearly: {seen}"
    );
}
