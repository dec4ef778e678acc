//! EBN's finding (study 002, section 5.3) on the simulator: TCP windows above 64 KB hurt RPC
//! through the GIGAswitch's small cell buffer at the E3 interface
//! (scenarios/ebn-rpc-beside-bulk.toml). A 64 KB window leaves a standing queue that fits the
//! buffer; a 128 KB window overflows it, so the bulk flow loses segments and the requests beside
//! it wait behind a fuller queue.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use std::path::PathBuf;

use serde_json::Value;

fn sample(doc: &Value, workload: u64) -> &Value {
    doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["workload"] == workload)
        .unwrap_or_else(|| panic!("no sample of workload {workload} in {doc}"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn windows_above_64_kb_hurt_rpc_beside_bulk() {
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ebn-rpc-beside-bulk.toml");
    let docs = common::run_json(&file, "sim", &[]);
    let d = &docs[0];
    let (bulk64, bulk128) = (sample(d, 0), sample(d, 1));
    let (rpc64, rpc128, alone) = (sample(d, 2), sample(d, 3), sample(d, 4));
    // The 64 KB window fits the path and the buffer: no loss, the link full.
    assert_eq!(num(bulk64, "retransmits"), 0.0, "{bulk64}");
    assert!(num(bulk64, "effective_throughput") > 0.95, "{bulk64}");
    // The 128 KB window overflows the E3 interface's buffer.
    assert!(num(bulk128, "retransmits") > 0.0, "{bulk128}");
    // Every request of each run was answered or counted, and the bulk flow slowed them down.
    for r in [rpc64, rpc128] {
        assert!(num(r, "requests") >= 100.0, "{r}");
        assert!(
            num(r, "rtt_mean_us") > num(alone, "rtt_mean_us"),
            "{r} vs {alone}"
        );
    }
    // Beside the 128 KB flow the slow requests are much slower.
    let (p64, p128) = (num(rpc64, "rtt_p99_us"), num(rpc128, "rtt_p99_us"));
    assert!(
        p128 > 1.2 * p64,
        "p99 round trip beside 128 KB {p128} us should exceed beside 64 KB {p64} us by 20%"
    );
}
