//! Message passing among four emulated hosts: every pattern runs (both routes, the NPB
//! skeletons too), the collectives agree with the alpha-beta model fitted from ping-pong within
//! 20%, and the NASA LACE NPB scenario runs on the emu engine at or above the model's floor.
//! Needs root (network namespaces); says `skipped` without it unless WEFT_TEST_STRICT=1.

mod common;

use weft_emu::{LinkSpec, workload};
use weft_model::calc::AlphaBeta;
use weft_model::{Duration, Rate, Scenario};
use weft_probe::mp::{DaemonParams, MP_VERSION, MpResult, MpSpec, Route};

/// Returns from the test when emulation is impossible here, or fails it under WEFT_TEST_STRICT.
macro_rules! require_root_strict {
    () => {
        if let Some(reason) = common::skip_reason() {
            if std::env::var("WEFT_TEST_STRICT").as_deref() == Ok("1") {
                panic!("WEFT_TEST_STRICT=1 but emulation is impossible: {reason}");
            }
            println!("skipped: {reason}");
            return;
        }
    };
}

const HOSTS: [&str; 4] = ["r0", "r1", "r2", "r3"];

fn spec(patterns: &[&str], sizes: &[u64], route: Route) -> MpSpec {
    MpSpec {
        version: MP_VERSION,
        rank: 0,
        ranks: 4,
        route,
        patterns: patterns.iter().map(|p| p.to_string()).collect(),
        sizes: sizes.to_vec(),
        iterations: 60,
        iterations_large: 20,
        warmup: 5,
        npb_steps: Some(3),
        timeout_ms: 10_000,
        spin_us: 50,
        daemon: DaemonParams {
            fragment: 4080,
            window: 8,
        },
    }
}

fn p50_s(r: &MpResult, pattern: &str, size: u64) -> f64 {
    r.sample(pattern, size)
        .unwrap_or_else(|| panic!("no {pattern} at {size}"))
        .p50_us
        / 1e6
}

#[test]
fn collectives_on_four_emulated_hosts_follow_the_alpha_beta_model() {
    require_root_strict!();
    let _g = common::serial();
    // 200 Mbit/s, 100 us per link: alpha near 0.2 ms plus the hosts' stacks.
    let topo = common::star(
        &HOSTS,
        LinkSpec::ethernet(Some(Rate::mbps(200)), Duration::from_micros(100)),
    );
    let hosts: Vec<String> = HOSTS.iter().map(|h| h.to_string()).collect();
    let collectives = [
        "exchange",
        "alltoall",
        "allreduce-ring",
        "allreduce-rd",
        "barrier",
    ];
    let sizes = [8u64, 65536];
    let ((direct, fit, daemon), report) = common::with_emulation(&topo, |emu| {
        let fit = workload::mp(emu, &hosts, &spec(&["pingpong"], &[8, 4096, 16384, 65536], Route::Direct))?;
        let mut all = vec!["allreduce"];
        all.extend(collectives);
        all.extend(["bt.S", "lu.S", "sp.S"]);
        let direct = workload::mp(emu, &hosts, &spec(&all, &sizes, Route::Direct))?;
        let daemon = workload::mp(
            emu,
            &hosts,
            &spec(&["pingpong", "allreduce", "barrier", "bt.S"], &[8], Route::Daemon),
        )?;
        Ok((direct, fit, daemon))
    });
    println!("switch lag {:?}", report.lag);
    let points: Vec<(f64, f64)> = fit
        .samples
        .iter()
        .map(|s| (s.size as f64, s.p50_us / 1e6))
        .collect();
    let ab = AlphaBeta::fit(&points).expect("alpha and beta from ping-pong");
    println!(
        "fitted alpha {:.1} us, bandwidth {:.1} Mbit/s",
        ab.alpha * 1e6,
        ab.rate_bps() / 1e6
    );
    // The fit sees the emulated link: bandwidth below the 200 Mbit/s line, latency above the
    // 2 x 100 us of propagation.
    assert!(ab.alpha > 200e-6, "{ab:?}");
    assert!(ab.rate_bps() < 200e6 && ab.rate_bps() > 100e6, "{ab:?}");
    let p = HOSTS.len();
    let mut misses = Vec::new();
    for pattern in collectives {
        for &size in &sizes {
            if pattern == "barrier" && size != sizes[0] {
                continue;
            }
            let m = size as f64;
            let model = match pattern {
                "exchange" => ab.exchange(m),
                "alltoall" => ab.alltoall(p, m),
                "allreduce-ring" => ab.allreduce_ring(p, m),
                "allreduce-rd" => ab.allreduce_rd(p, m),
                _ => ab.barrier(p),
            };
            let got = p50_s(&direct, pattern, size);
            let miss = (got - model) / model;
            println!(
                "{pattern:<15} {size:>6} B: measured {:>9.1} us, model {:>9.1} us, {:+.0}%",
                got * 1e6,
                model * 1e6,
                miss * 100.0
            );
            if miss.abs() > 0.20 {
                misses.push(format!("{pattern} at {size} B: {:+.0}%", miss * 100.0));
            }
        }
    }
    assert!(misses.is_empty(), "beyond 20% of the model: {misses:?}");
    // Every other pattern ran too, on both routes.
    for npb in ["bt.S", "lu.S", "sp.S"] {
        assert!(direct.sample(npb, 0).is_some_and(|s| s.mean_us > 0.0), "{npb}");
    }
    assert!(direct.sample("allreduce", 8).is_some());
    for (pattern, size) in [("pingpong", 8), ("allreduce", 8), ("barrier", 0), ("bt.S", 0)] {
        assert!(
            daemon.sample(pattern, size).is_some_and(|s| s.mean_us > 0.0),
            "daemon {pattern}"
        );
    }
    let packets: u64 = daemon
        .ranks
        .iter()
        .filter_map(|r| r.daemon)
        .map(|d| d.packets_sent)
        .sum();
    assert!(packets > 0);
    // The daemon route's extra hops cost latency through the fabric too.
    assert!(p50_s(&daemon, "pingpong", 8) > p50_s(&fit, "pingpong", 8));
}

#[test]
fn nasa_lace_npb_scenario_runs_on_emu_above_the_model_floor() {
    require_root_strict!();
    let _g = common::serial();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/nasa-lace-npb.toml");
    let text = std::fs::read_to_string(path).expect("the scenario file");
    let mut s = Scenario::parse(&text, path).expect("the scenario parses");
    // A few time steps per benchmark keep the test short.
    for w in &mut s.workloads {
        if let Some(m) = w.mp.as_mut() {
            m.iterations = Some(5);
        }
    }
    let doc = weft_emu::scenario::run(&s, &Default::default()).expect("emu run");
    let model = weft_model::calc::evaluate(&s);
    assert_eq!(doc.samples.len(), 3);
    for (sample, m) in doc.samples.iter().zip(&model) {
        let emu_us = sample["mean_us"].as_f64().unwrap_or(0.0);
        let floor = m.metrics["mean_us"];
        println!(
            "workload {}: emu {emu_us:.0} us per step, model floor {floor:.0} us, {} steps",
            sample["workload"], sample["iterations"]
        );
        assert_eq!(sample["iterations"], 5, "{sample}");
        assert!(sample["total_ms"].as_f64().unwrap_or(0.0) > 0.0, "{sample}");
        assert!(emu_us >= 0.9 * floor, "emu {emu_us} us below the model's floor {floor} us");
    }
}
