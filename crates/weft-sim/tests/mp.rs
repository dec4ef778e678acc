//! Message passing on simulated hosts: every pattern and NPB skeleton runs over simulated TCP,
//! the collectives agree with the alpha-beta model fitted from the simulated ping-pong within
//! 3.5% at every size (the README's figure), and the NASA LACE NPB scenario runs on `sim` at the
//! README's communication time per time step, above the model's floor, which is held at the
//! README's figures too.

use weft_model::calc::{AlphaBeta, evaluate};
use weft_model::mp::program::Counts;
use weft_model::mp::{Pattern, Route};
use weft_model::net::{HostSpec, LinkSpec, Topology};
use weft_model::{Duration, Rate, Scenario};
use weft_sim::net::mp_workload::{MpRun, run_ranks};

fn star(n: usize, rate: Rate, delay: Duration) -> Topology {
    let hosts = (0..n)
        .map(|i| HostSpec {
            name: format!("r{i}"),
            addr: None,
            link: LinkSpec::ethernet(Some(rate), delay),
            switch: 0,
        })
        .collect();
    Topology::star(hosts, Default::default(), 1)
}

const COUNTS: Counts = Counts {
    iterations: 10,
    iterations_large: 4,
    large_above: 8192,
    warmup: 2,
    npb_steps: Some(3),
};

fn mean_s(r: &MpRun, pattern: &str, size: usize) -> f64 {
    let k = r.programs[0]
        .measures
        .iter()
        .position(|m| m.pattern.to_string() == pattern && m.size == size)
        .unwrap_or_else(|| panic!("no {pattern} at {size}"));
    r.summary(k).expect("a summary").mean_us / 1e6
}

fn patterns(names: &[&str]) -> Vec<Pattern> {
    names
        .iter()
        .map(|p| p.parse().expect("a pattern"))
        .collect()
}

#[test]
fn every_pattern_and_skeleton_runs_on_four_simulated_hosts() {
    let topo = star(4, Rate::mbps(100), Duration::from_micros(100));
    let all = patterns(&[
        "pingpong",
        "exchange",
        "alltoall",
        "allreduce",
        "allreduce-ring",
        "allreduce-rd",
        "barrier",
        "bt.S",
        "lu.S",
        "sp.S",
    ]);
    let r = run_ranks(&topo, &[0, 1, 2, 3], &all, &[1, 65536], COUNTS, 1500).expect("a run");
    let measures = &r.programs[0].measures;
    assert_eq!(measures.len(), 6 * 2 + 4);
    for (k, m) in measures.iter().enumerate() {
        let s = r
            .summary(k)
            .unwrap_or_else(|| panic!("{} {}", m.pattern, m.size));
        assert!(
            s.mean_us > 0.0 && s.p50_us <= s.p99_us,
            "{} {s:?}",
            m.pattern
        );
        let want = if m.pattern.sized() && m.size > 8192 {
            4
        } else if matches!(m.pattern, Pattern::Npb(..)) {
            3
        } else {
            10
        };
        assert_eq!(s.iterations, want, "{}", m.pattern);
    }
    // A 1-byte ping-pong crosses two links of 100 us each way: the half round trip is their
    // delay plus the two serialisations of one small frame (under 10 us at 100 Mbit/s each).
    let one_way = mean_s(&r, "pingpong", 1);
    assert!(one_way > 200e-6 && one_way < 220e-6, "{one_way}");
    // The simulation is deterministic.
    let again = run_ranks(&topo, &[0, 1, 2, 3], &all, &[1, 65536], COUNTS, 1500).expect("a run");
    assert_eq!(again.times, r.times);
    // Refused: one rank, two ranks on one host, a host outside the topology.
    assert!(run_ranks(&topo, &[0], &all, &[8], COUNTS, 1500).is_err());
    assert!(run_ranks(&topo, &[0, 0], &all, &[8], COUNTS, 1500).is_err());
    assert!(run_ranks(&topo, &[0, 9], &all, &[8], COUNTS, 1500).is_err());
}

#[test]
fn collectives_in_step_follow_the_alpha_beta_model_on_the_simulator() {
    // 1 ms per link, as the emulator's test has it: a frame's store-and-forward at the switch
    // (120 us at 100 Mbit/s, which a linear model cannot place) stays small beside alpha.
    let topo = star(4, Rate::mbps(100), Duration::from_millis(1));
    let pp = run_ranks(
        &topo,
        &[0, 1, 2, 3],
        &patterns(&["pingpong"]),
        &[1, 8, 4096, 65536, 1 << 20],
        COUNTS,
        1500,
    )
    .expect("ping-pong");
    let points: Vec<(f64, f64)> = [1usize, 8, 4096, 65536, 1 << 20]
        .iter()
        .map(|&z| (z as f64, mean_s(&pp, "pingpong", z)))
        .collect();
    let ab = AlphaBeta::fit(&points).expect("a fit");
    // The fit sees the path: two 1 ms links, 100 Mbit/s less the headers.
    assert!(ab.alpha > 2.0e-3 && ab.alpha < 2.2e-3, "{ab:?}");
    assert!(ab.rate_bps() > 90e6 && ab.rate_bps() < 100e6, "{ab:?}");
    let names = [
        "exchange",
        "alltoall",
        "allreduce-ring",
        "allreduce-rd",
        "barrier",
    ];
    let sizes = [1usize, 8, 4096, 65536, 1 << 20];
    let r = run_ranks(
        &topo,
        &[0, 1, 2, 3],
        &patterns(&names),
        &sizes,
        COUNTS,
        1500,
    )
    .expect("collectives");
    for name in names {
        for &size in &sizes {
            let pattern: Pattern = name.parse().expect("a pattern");
            if !pattern.sized() && size != 1 {
                continue;
            }
            let size = if pattern.sized() { size } else { 0 };
            let model = ab.pattern(&pattern, 4, size as f64);
            let got = mean_s(&r, name, size);
            let miss = (got - model) / model;
            println!(
                "{name:<15} {size:>8} B: sim {:>9.1} us, model {:>9.1} us, {:+.1}%",
                got * 1e6,
                model * 1e6,
                miss * 100.0
            );
            // Every pattern at every size. This held once the simulated TCP had timestamps
            // and undid spurious time-outs (a message behind another rank's burst, its ACK
            // behind a third's, outlasted the 200 ms timer and that pair's window fell to two
            // segments), and once each rank's connections took turns at its link by bursts
            // (`weft_sim::net::nic`) instead of a megabyte of one going into the link's FIFO
            // ahead of a barrier message on another.
            //
            // 3.5%: what the README claims. The simulator is deterministic, so the misses are
            // fixed numbers: -1.4% to +0.9% at 1 B, 8 B, 64 KiB and 1 MiB but the ring
            // all-reduce's +2.7% at 64 KiB, and +2.3% to +3.3% at 4 KiB (three segments: the
            // switch's store and forward of the last frame, 120 us at 100 Mbit/s, is a larger
            // share of the time than the straight line through the fitted points gives it). A
            // change that moves any past 3.5% fails here.
            assert!(
                miss.abs() <= 0.035,
                "{name} at {size} B: {:+.1}%",
                miss * 100.0
            );
        }
    }
}

#[test]
fn nasa_lace_npb_scenario_runs_on_sim_above_the_model_floor() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/nasa-lace-npb.toml"
    );
    let text = std::fs::read_to_string(path).expect("the scenario file");
    let mut s = Scenario::parse(&text, path).expect("the scenario parses");
    for w in &mut s.workloads {
        if let Some(m) = w.mp.as_mut() {
            m.iterations = Some(5);
            assert_eq!(m.route, Route::Direct);
        }
    }
    let doc = weft_sim::scenario::run(&s, 1);
    let model = evaluate(&s);
    assert_eq!(doc.samples.len(), 3);
    // The README's figures (BT, LU, SP): the model's floor and sim per time step in us, and
    // their ratio. Both engines are deterministic; the README prints whole microseconds and two
    // decimals, which is the tolerance here: an engine too slow fails as one too fast does.
    let readme = [
        (5275.0, 5789.0, 1.10),
        (2880.0, 3893.0, 1.35),
        (3319.0, 4103.0, 1.24),
    ];
    for ((sample, m), (want_floor, want_us, want_ratio)) in
        doc.samples.iter().zip(&model).zip(readme)
    {
        let sim_us = sample["mean_us"].as_f64().unwrap_or(0.0);
        let floor = m.metrics["mean_us"];
        println!(
            "workload {}: sim {sim_us:.0} us per step, model floor {floor:.0} us ({:.2}x), {} ms \
             for the benchmark's steps",
            sample["workload"],
            sim_us / floor,
            sample["total_ms"]
        );
        assert_eq!(sample["iterations"], 5, "{sample}");
        assert!(sample["total_ms"].as_f64().unwrap_or(0.0) > 0.0, "{sample}");
        // The model's replay lets a rank's next step start while its eager sends still leave
        // and takes a step's messages in as they arrive (weft_model::mp::replay), so a later
        // step's message no longer overtakes the floor: the simulator is at or above it.
        assert!(
            sim_us >= floor,
            "sim {sim_us} us below the model's floor {floor} us"
        );
        assert!(
            (floor - want_floor).abs() <= 0.5,
            "model floor {floor:.1} us per step where the README says {want_floor}"
        );
        assert!(
            (sim_us - want_us).abs() <= 0.5,
            "sim {sim_us:.1} us per step where the README says {want_us}"
        );
        assert!(
            (sim_us / floor - want_ratio).abs() <= 0.005,
            "sim {:.3}x the floor where the README says {want_ratio}x",
            sim_us / floor
        );
    }
}
