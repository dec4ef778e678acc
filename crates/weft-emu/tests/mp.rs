//! Message passing among four emulated hosts: every pattern runs (both routes, the NPB
//! skeletons too), the collectives agree with the alpha-beta model fitted from ping-pong within
//! 20%, and the NASA LACE NPB scenario runs on the emu engine at or above the model's floor and
//! under ten times it.
//! Needs root (network namespaces); says `skipped` without it unless WEFT_TEST_STRICT=1.

mod common;

use weft_emu::{LinkSpec, workload};
use weft_model::calc::AlphaBeta;
use weft_model::{Duration, Rate, Scenario};
use weft_sock::mp::{DaemonParams, MP_VERSION, MpResult, MpSpec, Route};

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
        place: Default::default(),
    }
}

/// The least over trials of each (pattern, size)'s mean time, seconds. A trial's mean is OSU's
/// latency (the timed loop over its iterations, averaged over ranks); the other work on the
/// shared machine only ever slows a trial down (a rank or the switch kept off the CPU), so the
/// least disturbed trial is the estimate (ping-pong's and the collectives' alike).
fn fastest(trials: &[MpResult]) -> Vec<(String, u64, f64)> {
    let mut out: Vec<(String, u64, f64)> = Vec::new();
    for s in trials.iter().flat_map(|t| &t.samples) {
        if out.iter().any(|(p, z, _)| *p == s.pattern && *z == s.size) {
            continue;
        }
        let v: Vec<f64> = trials
            .iter()
            .filter_map(|t| t.sample(&s.pattern, s.size))
            .map(|x| x.mean_us / 1e6)
            .collect();
        out.push((
            s.pattern.clone(),
            s.size,
            v.iter().copied().fold(f64::INFINITY, f64::min),
        ));
    }
    out
}

fn find(m: &[(String, u64, f64)], pattern: &str, size: u64) -> f64 {
    m.iter()
        .find(|(p, s, _)| p == pattern && (*s == size || pattern == "barrier"))
        .unwrap_or_else(|| panic!("no {pattern} at {size}"))
        .2
}

#[test]
fn collectives_on_four_emulated_hosts_follow_the_alpha_beta_model() {
    require_root!();
    let _g = common::serial();
    // 50 Mbit/s and 1 ms per link: alpha near 2 ms with the hosts' stacks, 4 KiB in 0.7 ms;
    // both well above the sub-millisecond scheduling noise of the shared machine.
    let topo = common::star(
        &HOSTS,
        LinkSpec::ethernet(Some(Rate::mbps(50)), Duration::from_micros(1000)),
    );
    let hosts: Vec<String> = HOSTS.iter().map(|h| h.to_string()).collect();
    let collectives = [
        "exchange",
        "alltoall",
        "allreduce-ring",
        "allreduce-rd",
        "barrier",
    ];
    // Ping-pong (which fits the model) up to 64 KiB: its osu_bw loop moves 128 messages of
    // each size, 25 s of this fabric at 1 MiB. The collectives from 1 byte to 1 MiB.
    let pp_sizes = [1u64, 8, 4096, 16384, 65536];
    let sizes = [1u64, 8, 4096, 16384, 65536, 1 << 20];
    let up = weft_emu::UpOptions {
        driver: workload::mp_driver(),
        ..Default::default()
    };
    // The model holds only while the switch keeps real time: a run that misses it and whose
    // switch fell behind the clock (over 1% of frames more than 1 ms late: `degraded`) is run
    // again, up to three times, as the engines' agreement tests do; a miss in a run that kept
    // time fails; three degraded runs with misses skip (fail under WEFT_TEST_STRICT=1).
    let mut seen = Vec::new();
    let run = || {
        common::with_emulation_opts(&topo, &up, |emu| {
            let mut pp = spec(&["pingpong"], &pp_sizes, Route::Direct);
            (pp.iterations, pp.iterations_large, pp.warmup) = (20, 10, 3);
            let mut co = spec(&collectives, &sizes, Route::Direct);
            (co.iterations, co.iterations_large, co.warmup) = (20, 3, 1);
            let mut trials = Vec::new();
            for _ in 0..3 {
                trials.push(workload::mp(emu, &hosts, &pp)?);
                trials.push(workload::mp(emu, &hosts, &co)?);
            }
            let others = workload::mp(
                emu,
                &hosts,
                &spec(&["allreduce", "bt.S", "lu.S", "sp.S"], &[8], Route::Direct),
            )?;
            let daemon = workload::mp(
                emu,
                &hosts,
                &spec(
                    &["pingpong", "allreduce", "barrier", "bt.S"],
                    &[8],
                    Route::Daemon,
                ),
            )?;
            Ok((trials, others, daemon))
        })
    };
    let (ab, others, daemon, m) = loop {
        if seen.len() == 3 {
            weft_testutil::skip(&format!(
                "the switch fell behind the clock in every run (the machine is too busy to \
                 emulate in real time): {}",
                seen.join("; ")
            ));
            return;
        }
        let ((trials, others, daemon), report) = run();
        println!(
            "switch lag {:?}, {:.2}% of frames late",
            report.lag,
            report.late_fraction * 100.0
        );
        let (ab, m, misses) = compare(&trials, &collectives, &sizes);
        if misses.is_empty() {
            break (ab, others, daemon, m);
        }
        assert!(report.degraded, "beyond 20% of the model: {misses:?}");
        seen.push(format!(
            "{:.2}% of frames late, {misses:?}",
            report.late_fraction * 100.0
        ));
    };
    // The fit sees the emulated path: latency above its 2 x 1 ms of propagation, bandwidth
    // below the 50 Mbit/s line.
    assert!(ab.alpha > 2e-3, "{ab:?}");
    assert!(ab.rate_bps() < 50e6 && ab.rate_bps() > 25e6, "{ab:?}");
    // Every other pattern ran too, on both routes.
    for npb in ["bt.S", "lu.S", "sp.S"] {
        assert!(
            others.sample(npb, 0).is_some_and(|s| s.mean_us > 0.0),
            "{npb}"
        );
    }
    assert!(others.sample("allreduce", 8).is_some());
    for (pattern, size) in [
        ("pingpong", 8),
        ("allreduce", 8),
        ("barrier", 0),
        ("bt.S", 0),
    ] {
        assert!(
            daemon
                .sample(pattern, size)
                .is_some_and(|s| s.mean_us > 0.0),
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
    let via_daemon = daemon.sample("pingpong", 8).map_or(0.0, |s| s.p50_us);
    assert!(
        via_daemon / 1e6 > find(&m, "pingpong", 8),
        "{via_daemon} us"
    );
}

#[test]
fn nasa_lace_npb_scenario_runs_on_emu_above_the_model_floor() {
    require_root!();
    let _g = common::serial();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/nasa-lace-npb.toml"
    );
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
        // A floor (weft_model::mp::replay: eager sends, messages taken in as they arrive):
        // no emulated run can beat it, however lagged.
        assert!(
            emu_us >= floor,
            "emu {emu_us} us below the model's floor {floor} us"
        );
        // And not far above it: the README's run at load 3 took 2.9x, 4.1x and 5.3x the floor
        // (BT, LU, SP). Wall-clock time on a shared machine cannot be held tightly, but an
        // emulation ten times slower than the floor is broken, not loaded.
        assert!(
            emu_us < 10.0 * floor,
            "emu {emu_us} us, {:.1}x the model's floor {floor} us",
            emu_us / floor
        );
    }
}

/// The alpha-beta model fitted from the trials' ping-pong, the trials' fastest times, and the
/// collectives at `sizes` beyond 20% of the model.
fn compare(
    trials: &[MpResult],
    collectives: &[&str],
    sizes: &[u64],
) -> (AlphaBeta, Vec<(String, u64, f64)>, Vec<String>) {
    let m = fastest(trials);
    let points: Vec<(f64, f64)> = m
        .iter()
        .filter(|(p, _, _)| p == "pingpong")
        .map(|(_, size, t)| (*size as f64, *t))
        .collect();
    let ab = AlphaBeta::fit(&points).expect("alpha and beta from ping-pong");
    println!(
        "fitted from ping-pong: alpha {:.1} us, bandwidth {:.1} Mbit/s",
        ab.alpha * 1e6,
        ab.rate_bps() / 1e6
    );
    let p = HOSTS.len();
    let mut misses = Vec::new();
    for &pattern in collectives {
        for &size in sizes {
            if pattern == "barrier" && size != sizes[0] {
                continue;
            }
            let model = ab.pattern(&pattern.parse().expect("a pattern"), p, size as f64);
            let got = find(&m, pattern, size);
            let miss = (got - model) / model;
            println!(
                "{pattern:<15} {size:>7} B: measured {:>9.1} us, model {:>9.1} us, {:+.0}%",
                got * 1e6,
                model * 1e6,
                miss * 100.0
            );
            if miss.abs() > 0.20 {
                misses.push(format!("{pattern} at {size} B: {:+.0}%", miss * 100.0));
            }
        }
    }
    (ab, m, misses)
}
