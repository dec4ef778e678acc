//! The host and latency models against the studies' echo and ttcp tables, on `model` and `sim`:
//! Sandia's echo table (scenarios/sandia-echo.toml: the 64-byte rows, one fitted and one
//! predicted) and the GIGAswitch's Table 1 with and without the switch
//! (scenarios/gigaswitch-table1-*.toml), where the round trip through the switch carries its
//! latency. The 1500-byte echo rows against the paper, and the switch's cost in Table 1, are
//! known misses (see the scenarios): what the engines give there is held as it is, so that a
//! change that moves it shows.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use std::path::PathBuf;

use serde_json::Value;

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

/// The metric `key` of every sample of `workload`, in point order.
fn values(doc: &Value, workload: u64, key: &str) -> Vec<f64> {
    doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["workload"] == workload)
        .map(|s| {
            s[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{key} missing in {s}"))
        })
        .collect()
}

fn near(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want
}

#[test]
fn sandia_echo_small_packets_on_model_and_sim() {
    let docs = common::run_json(&scenario("sandia-echo.toml"), "model,sim", &[]);
    for d in &docs {
        let (eth, atm) = (values(d, 0, "rtt_ms"), values(d, 1, "rtt_ms"));
        assert_eq!((eth.len(), atm.len()), (2, 2), "{d}");
        // 64 bytes: ATM 1.75 ms (fitted), Ethernet 2.1 ms (predicted).
        assert!(
            near(atm[0], 1.75, 0.05),
            "{} ATM 64 B: {}",
            d["engine"],
            atm[0]
        );
        assert!(
            near(eth[0], 2.1, 0.05),
            "{} Ethernet 64 B: {}",
            d["engine"],
            eth[0]
        );
        // Large packets: serialisation makes Ethernet the slower, as the paper found.
        assert!(eth[1] > atm[1] && eth[1] > eth[0], "{d}");
    }
    // Without queueing or loss the simulator's round trips are the model's, within 1%: the two
    // compute the same exchange (rr_tcp.rs lists where they differ by construction: read calls
    // per batch of segments, the echo segment by segment), and measured they agree to 0.01% in
    // all four rows (the model sends cells on through the ATM switch as the simulator does;
    // before, it stored and forwarded whole frames there and missed the 1500-byte ATM row by 7%).
    for w in [0, 1] {
        let (m, s) = (values(&docs[0], w, "rtt_ms"), values(&docs[1], w, "rtt_ms"));
        for (a, b) in m.iter().zip(&s) {
            assert!(near(*b, *a, 0.01), "workload {w}: model {a} vs sim {b}");
        }
    }
}

#[test]
fn gigaswitch_table1_and_switch_latency_on_model_and_sim() {
    let direct = common::run_json(&scenario("gigaswitch-table1-direct.toml"), "model,sim", &[]);
    let switched = common::run_json(&scenario("gigaswitch-table1-switch.toml"), "model,sim", &[]);
    for (d, s) in direct.iter().zip(&switched) {
        let engine = &d["engine"];
        let (without, with) = (
            values(d, 0, "goodput_mbps")[0],
            values(s, 0, "goodput_mbps")[0],
        );
        // Directly connected: the preset's per-byte cost is fitted to the mean of the three runs
        // (91.37), which the model gives by construction and the simulator within 0.01%.
        assert!(
            near(without, 91.3749, 0.001),
            "{engine} without the switch: {without}"
        );
        // Through the switch the paper lost 1.8% (89.71). Known miss: neither engine charges
        // anything for the switch in a transfer the hosts bound, so both give the direct rate
        // (+1.9% against the paper). Held as it is: the day an engine gives the switch a cost,
        // this fails, and then it must hold the paper's drop instead (1.8%, within the 0.6% the
        // three runs of each case spread), which a model without the switch fails.
        let (drop, paper_drop) = (1.0 - with / without, 1.0 - 89.7087 / 91.3749);
        assert!(
            drop.abs() < 1e-4,
            "{engine}: the switch now costs {:.2}% (paper {:.2}%): hold the paper's drop here",
            100.0 * drop,
            100.0 * paper_drop
        );
        // The echo round trips, 64 to 1024 bytes: the switch adds its 16.5 us each way, a
        // second serialisation of the frame (store and forward) and the second link's 1 us of
        // propagation, exactly: both engines are
        // deterministic and nothing queues (the tolerance is the 1 ns rounding of each frame
        // time, four of them in a round trip, and the JSON's printed microseconds).
        let (rd, rs) = (values(d, 1, "rtt_mean_us"), values(s, 1, "rtt_mean_us"));
        assert_eq!((rd.len(), rs.len()), (5, 5));
        let fddi = weft_model::Tech::preset("fddi").unwrap();
        for ((a, b), size) in rd.iter().zip(&rs).zip([64u64, 128, 256, 512, 1024]) {
            let half = (b - a) / 2.0;
            let frame_us = fddi.wire_time(size + 28).0 as f64 / 1e3;
            assert!(
                (half - 16.5 - frame_us - 1.0).abs() < 0.005,
                "{engine} {size} B: half the difference {half} us, not 16.5 + {frame_us} + 1"
            );
        }
    }
}
