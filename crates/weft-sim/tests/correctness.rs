//! The correctness list of the fabric-simulation issue: published head-of-line figures, the
//! GIGAswitch formula as an upper bound, output-queued waiting, iSLIP throughput, EPD goodput,
//! determinism, and conservation of cells.

use weft_model::calc::{hol, queue};
use weft_model::fabric::{Contention, InputFifo, Islip, OutputQueued, Rng, Slotted};
use weft_model::queue::{Capacity, DropPolicy};
use weft_model::scenario::Figures;
use weft_sim::experiments::{FrameOverload, KAROL_FIGURE, frame_overload_run, islip_run, oq_run};
use weft_sim::slotted::{SlottedConfig, run_slotted};
use weft_sim::source::{Dest, Pattern, Source};
use weft_sim::{HolParams, run_saturated};

/// The published figures, as built into weft (data/figures.toml).
fn figures() -> Figures {
    Figures::bundled().expect("the bundled figures parse")
}

#[test]
fn saturated_fifo_matches_karol_table_for_n_1_to_8() {
    let f = figures();
    for n in 1..=8usize {
        let published = f
            .number(&format!("{KAROL_FIGURE}.{n}"))
            .expect("Karol's table");
        let r = run_saturated(&HolParams::square(n, 300_000, 11), |_| {});
        let got = r.input_efficiency();
        assert!(
            (got - published).abs() <= 0.005,
            "N = {n}: simulated {got:.4}, Karol et al. {published:.4}"
        );
    }
}

#[test]
fn saturated_fifo_n64_approaches_two_minus_root_two() {
    let r = run_saturated(&HolParams::square(64, 60_000, 5), |_| {});
    let got = r.input_efficiency();
    assert!(
        (got - hol::SATURATION_LIMIT).abs() <= 0.01,
        "N = 64: {got:.4}"
    );
}

#[test]
fn round_robin_contention_also_blocks() {
    let p = HolParams {
        contention: Contention::RoundRobin,
        ..HolParams::square(8, 100_000, 3)
    };
    let got = run_saturated(&p, |_| {}).input_efficiency();
    assert!(got < 0.70 && got > 0.55, "{got}");
}

/// The GIGAswitch formula ignores that a blocked head cell stays at the head, so it is an upper
/// bound on the FIFO simulation; with that memory removed the simulation meets it.
#[test]
fn contention_simulation_is_at_most_the_gigaswitch_formula() {
    for m in 1..=5 {
        let base = HolParams {
            inputs: m,
            outputs: 5,
            ..HolParams::square(m, 200_000, 21)
        };
        let fifo = run_saturated(&base, |_| {}).input_efficiency();
        let fresh = run_saturated(
            &HolParams {
                retain: false,
                ..base
            },
            |_| {},
        )
        .input_efficiency();
        let formula = hol::gigaswitch_efficiency(5, m as u32);
        assert!(
            fifo <= formula + 0.002,
            "M = {m}: sim {fifo:.4} > formula {formula:.4}"
        );
        assert!(
            (fresh - formula).abs() < 0.004,
            "M = {m}: memoryless {fresh:.4} vs {formula:.4}"
        );
        if m > 2 {
            // The documented gap: head-of-line memory costs a few percent more once three or
            // more inputs contend. (With two inputs memory changes nothing: the loser keeps its
            // output and the winner draws a fresh one, colliding with probability 1/N either way.)
            assert!(formula - fifo > 0.005, "M = {m}: gap {:.4}", formula - fifo);
        }
    }
}

#[test]
fn output_queued_mean_wait_matches_formula() {
    for p in [0.5, 0.8, 0.9] {
        let cfg = SlottedConfig {
            slots: 400_000,
            warmup: 20_000,
            sample_every: 0,
        };
        let r = oq_run(8, p, cfg, 7).expect("valid fabric");
        let want = queue::output_queued_wait(8, p).expect("a load below 1");
        let got = r.delay.mean();
        assert!(
            (got - want).abs() / want <= 0.03,
            "p = {p}: simulated {got:.4} slots, formula {want:.4}"
        );
    }
}

#[test]
fn islip_sustains_uniform_load_of_0_95() {
    let r = islip_run(16, 4, 0.95, SlottedConfig::new(60_000), 3).expect("valid fabric");
    let t = r.throughput(16);
    assert!(
        r.delivered_fraction() >= 0.99,
        "delivered {}",
        r.delivered_fraction()
    );
    assert!(t >= 0.99 * 0.95, "throughput {t}");
}

#[test]
fn epd_frame_goodput_beats_tail_drop_under_overload() {
    let f = FrameOverload {
        inputs: 4,
        frame_cells: 20,
        load_each: 0.4,
        buffer: 100,
        slots: 100_000,
        seed: 1,
    };
    let (_, tail) = frame_overload_run(&f, DropPolicy::Tail).expect("valid");
    let (_, ppd) = frame_overload_run(&f, DropPolicy::Ppd).expect("valid");
    let (r, epd) = frame_overload_run(&f, DropPolicy::Epd { threshold: 60 }).expect("valid");
    assert!(epd > tail + 0.1, "EPD goodput {epd:.3} vs tail {tail:.3}");
    assert!(ppd >= tail, "PPD {ppd:.3} vs tail {tail:.3}");
    assert!(
        epd > 0.85,
        "EPD should keep the output busy with whole frames: {epd:.3}"
    );
    assert!(r.cell_loss() > 0.3);
}

#[test]
fn identical_seeds_give_identical_results() {
    let a = run_saturated(&HolParams::square(8, 20_000, 99), |_| {});
    let b = run_saturated(&HolParams::square(8, 20_000, 99), |_| {});
    let c = run_saturated(&HolParams::square(8, 20_000, 100), |_| {});
    assert_eq!(a, b);
    assert_ne!(a.per_input, c.per_input);
    let x = islip_run(8, 2, 0.8, SlottedConfig::new(5_000), 4).expect("valid");
    let y = islip_run(8, 2, 0.8, SlottedConfig::new(5_000), 4).expect("valid");
    assert_eq!(x.per_output_delivered, y.per_output_delivered);
    assert_eq!(x.delay.quantile(0.99), y.delay.quantile(0.99));
    assert_eq!(x.occupancy, y.occupancy);
}

mod conservation {
    use proptest::prelude::{ProptestConfig, any, proptest};

    use super::*;

    fn sources(n: usize, p: f64, burst: f64, seed: u64) -> Vec<Source> {
        (0..n)
            .map(|i| {
                let dest = Dest::Uniform(n as u16);
                let pat = if burst > 1.0 {
                    Pattern::OnOff { p, burst, dest }
                } else {
                    Pattern::Bernoulli { p, dest }
                };
                Source::new(pat, Rng::for_stream(seed, i as u64))
            })
            .collect()
    }

    fn check<F: Slotted<weft_sim::SimCell>>(
        mut f: F,
        n: usize,
        p: f64,
        burst: f64,
        seed: u64,
        max_held: u64,
    ) {
        let mut src = sources(n, p, burst, seed);
        let cfg = SlottedConfig {
            slots: 3_000,
            warmup: 0,
            sample_every: 1,
        };
        let r = run_slotted(&mut f, &mut src, n, cfg, |_| {});
        let c = r.counters;
        assert_eq!(c.offered, r.offered_total);
        assert_eq!(c.offered, c.delivered + c.dropped + c.held, "{c:?}");
        let delivered: u64 = r.per_output_delivered.iter().sum();
        assert_eq!(delivered, c.delivered);
        assert!(
            r.occupancy.iter().all(|&(_, h)| h <= max_held),
            "over buffer"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Every cell is delivered, dropped, or still queued at the end, and no fabric ever
        /// holds more than its buffers.
        #[test]
        fn cells_are_conserved(n in 1usize..9, p in 0.0f64..1.0, burst in 0.0f64..20.0,
                               buf in 0u64..12, seed in any::<u64>(), k in 1usize..4) {
            let nn = n as u64;
            let fifo = InputFifo::new(n, n, Capacity::Cells(buf), DropPolicy::Tail,
                                      Contention::Random, Rng::new(seed)).unwrap();
            check(fifo, n, p, burst, seed, nn * buf);
            let oq = OutputQueued::new(n, n, k, Capacity::Cells(buf), Capacity::Cells(buf),
                                       DropPolicy::Epd { threshold: buf / 2 }, Contention::RoundRobin,
                                       Rng::new(seed)).unwrap();
            check(oq, n, p, burst, seed, 2 * nn * buf);
            let islip: Islip<weft_sim::SimCell> = Islip::new(n, k, buf as usize).unwrap();
            check(islip, n, p, burst, seed, nn * nn * buf);
        }
    }
}
