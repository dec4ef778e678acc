//! The standard experiments, each returning a [`ResultDoc`] (engine `sim`): the finite-N
//! head-of-line table (`sim.hol`), the GIGAswitch contention table (`sim.contention`), delay
//! against load in an output-queued switch (`sim.oq`), VOQ + iSLIP against load (`sim.islip`),
//! drop policies under frame overload (`sim.epd`) and the event-driven many-to-one bottleneck
//! (`sim.many_to_one`).

use serde_json::{Value, json};
use weft_model::fabric::{Contention, InputFifo, Islip, OutputQueued, Rng};
use weft_model::queue::{Capacity, DropPolicy};
use weft_report::{Engine, ResultDoc};

use crate::cell::SimCell;
use crate::hol::{HolParams, run_saturated};
use crate::many_to_one::{ManyToOne, ManyToOneResult, Unit, run_many_to_one};
use crate::slotted::{SlottedConfig, SlottedResult, run_slotted};
use crate::source::{Dest, Pattern, Source};
use weft_model::calc::{hol, queue};
use weft_model::scenario::Figures;

/// Key of Karol, Hluchyj and Morgan's saturation table (IEEE Trans. Commun. COM-35(12), 1987,
/// Table I) in the published-figures file, one entry per N.
pub const KAROL_FIGURE: &str = "classic_models.karol_hol_saturation";

/// The GIGAswitch formula with the simulator's argument order (inputs, outputs).
fn formula(inputs: usize, outputs: usize) -> f64 {
    hol::gigaswitch_efficiency(outputs as u32, inputs as u32)
}

fn contention_name(c: Contention) -> &'static str {
    match c {
        Contention::Random => "random",
        Contention::RoundRobin => "round-robin",
    }
}

fn policy_name(p: DropPolicy) -> String {
    match p {
        DropPolicy::Tail => "tail".into(),
        DropPolicy::Ppd => "ppd".into(),
        DropPolicy::Epd { threshold } => format!("epd:{threshold}"),
    }
}

/// Saturated input-queued FIFO throughput for each size in `ports` (kind `sim.hol`), beside
/// Karol et al.'s published value for N (read from `figures`, when given and it has one).
pub fn hol(
    ports: &[usize],
    slots: u64,
    contention: Contention,
    seed: u64,
    figures: Option<&Figures>,
    mut progress: impl FnMut(u64),
) -> ResultDoc {
    let mut doc = ResultDoc::new("sim.hol", Engine::Sim);
    doc.params = json!({ "ports": ports, "slots": slots, "contention": contention_name(contention), "seed": seed });
    let mut done = 0;
    for &n in ports {
        let p = HolParams {
            contention,
            ..HolParams::square(n, slots, seed)
        };
        let r = run_saturated(&p, |s| progress(done + s));
        done += p.warmup + p.slots;
        let karol = figures.and_then(|f| f.number(&format!("{KAROL_FIGURE}.{n}")).ok());
        doc.samples.push(json!({
            "ports": n,
            "throughput": r.input_efficiency(),
            "karol": karol,
            "limit": hol::SATURATION_LIMIT,
            "gigaswitch_formula": formula(n, n),
        }));
    }
    doc.summary = doc.samples.last().cloned().unwrap_or(Value::Null);
    doc
}

/// The GIGAswitch contention experiment (kind `sim.contention`): 1..=`inputs` saturated inputs
/// sending uniformly to `outputs` outputs, simulated with head-of-line memory (FIFO) and without
/// (every head cell fresh each slot), beside the study's formula, scaled to `port_mbps`.
pub fn contention(
    inputs: usize,
    outputs: usize,
    slots: u64,
    port_mbps: f64,
    seed: u64,
    mut progress: impl FnMut(u64),
) -> ResultDoc {
    let mut doc = ResultDoc::new("sim.contention", Engine::Sim);
    doc.params = json!({ "inputs": inputs, "outputs": outputs, "slots": slots, "port_mbps": port_mbps, "seed": seed });
    let mut done = 0;
    for m in 1..=inputs {
        let base = HolParams {
            inputs: m,
            outputs,
            ..HolParams::square(m, slots, seed)
        };
        let fifo = run_saturated(&base, |s| progress(done + s));
        done += base.warmup + base.slots;
        let fresh = run_saturated(
            &HolParams {
                retain: false,
                ..base
            },
            |s| progress(done + s),
        );
        done += base.warmup + base.slots;
        let formula = formula(m, outputs);
        let e = fifo.input_efficiency();
        doc.samples.push(json!({
            "inputs": m,
            "outputs": outputs,
            "efficiency": e,
            "efficiency_no_memory": fresh.input_efficiency(),
            "formula": formula,
            "gap": formula - e,
            "sim_mbps": e * port_mbps,
            "formula_mbps": formula * port_mbps,
        }));
    }
    doc.summary = doc.samples.last().cloned().unwrap_or(Value::Null);
    doc
}

fn bernoulli_sources(n: usize, p: f64, seed: u64) -> Vec<Source> {
    (0..n)
        .map(|i| {
            Source::new(
                Pattern::Bernoulli {
                    p,
                    dest: Dest::Uniform(n as u16),
                },
                Rng::for_stream(seed, 1 + i as u64),
            )
        })
        .collect()
}

/// One output-queued run: `n` x `n`, speed-up `n`, unbounded output queues, Bernoulli load `p`.
pub fn oq_run(n: usize, p: f64, cfg: SlottedConfig, seed: u64) -> Option<SlottedResult> {
    let mut f = OutputQueued::new(
        n,
        n,
        n,
        Capacity::Cells(u64::MAX),
        Capacity::Cells(u64::MAX),
        DropPolicy::Tail,
        Contention::Random,
        Rng::for_stream(seed, 0),
    )
    .ok()?;
    let mut src = bernoulli_sources(n, p, seed);
    Some(run_slotted(&mut f, &mut src, n, cfg, |_| {}))
}

/// One VOQ + iSLIP run: `n` x `n`, `k` iterations, Bernoulli load `p`.
pub fn islip_run(
    n: usize,
    k: usize,
    p: f64,
    cfg: SlottedConfig,
    seed: u64,
) -> Option<SlottedResult> {
    let mut f: Islip<SimCell> = Islip::new(n, k, usize::MAX).ok()?;
    let mut src = bernoulli_sources(n, p, seed);
    Some(run_slotted(&mut f, &mut src, n, cfg, |_| {}))
}

/// One input-queued FIFO run with finite input buffers: `n` x `n`, Bernoulli load `p`.
pub fn fifo_run(
    n: usize,
    p: f64,
    buffer: u64,
    cfg: SlottedConfig,
    seed: u64,
) -> Option<SlottedResult> {
    let mut f = InputFifo::new(
        n,
        n,
        Capacity::Cells(buffer),
        DropPolicy::Tail,
        Contention::Random,
        Rng::for_stream(seed, 0),
    )
    .ok()?;
    let mut src = bernoulli_sources(n, p, seed);
    Some(run_slotted(&mut f, &mut src, n, cfg, |_| {}))
}

fn load_sample(p: f64, n: usize, r: &SlottedResult) -> Value {
    json!({
        "load": p,
        "throughput": r.throughput(n),
        "delivered_fraction": r.delivered_fraction(),
        "cell_loss": r.cell_loss(),
        "mean_delay_slots": r.delay.mean(),
        "p50_delay_slots": r.delay.quantile(0.5),
        "p99_delay_slots": r.delay.quantile(0.99),
        "max_delay_slots": r.delay.max(),
    })
}

/// Delay against load in an ideal output-queued switch (kind `sim.oq`), with the formula.
pub fn oq(
    n: usize,
    loads: &[f64],
    slots: u64,
    seed: u64,
    mut progress: impl FnMut(u64),
) -> ResultDoc {
    let mut doc = ResultDoc::new("sim.oq", Engine::Sim);
    doc.params = json!({ "ports": n, "loads": loads, "slots": slots, "seed": seed });
    for (k, &p) in loads.iter().enumerate() {
        if let Some(r) = oq_run(n, p, SlottedConfig::new(slots), seed) {
            let mut s = load_sample(p, n, &r);
            s["formula_mean_wait_slots"] = json!(queue::output_queued_wait(n as u32, p));
            doc.samples.push(s);
        }
        progress(k as u64 + 1);
    }
    doc.summary = doc.samples.last().cloned().unwrap_or(Value::Null);
    doc
}

/// Throughput and delay against load for VOQ + iSLIP (kind `sim.islip`).
pub fn islip(
    n: usize,
    iterations: usize,
    loads: &[f64],
    slots: u64,
    seed: u64,
    mut progress: impl FnMut(u64),
) -> ResultDoc {
    let mut doc = ResultDoc::new("sim.islip", Engine::Sim);
    doc.params = json!({ "ports": n, "iterations": iterations, "loads": loads, "slots": slots, "seed": seed });
    for (k, &p) in loads.iter().enumerate() {
        if let Some(r) = islip_run(n, iterations, p, SlottedConfig::new(slots), seed) {
            doc.samples.push(load_sample(p, n, &r));
        }
        progress(k as u64 + 1);
    }
    doc.summary = doc.samples.last().cloned().unwrap_or(Value::Null);
    doc
}

/// Frame overload through one output: `inputs` fixed-rate frame sources of `frame_cells` cells,
/// each at `load_each` cells per slot, all to output 0 of an output-queued switch whose output
/// buffer holds `buffer` cells; one run per drop policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameOverload {
    /// Sending inputs.
    pub inputs: usize,
    /// Cells per frame.
    pub frame_cells: u32,
    /// Cells per slot each input offers.
    pub load_each: f64,
    /// Output buffer in cells.
    pub buffer: u64,
    /// Slots to run.
    pub slots: u64,
    /// Seed.
    pub seed: u64,
}

/// One frame-overload run under `policy`: (result, good cells per slot at the output).
pub fn frame_overload_run(f: &FrameOverload, policy: DropPolicy) -> Option<(SlottedResult, f64)> {
    let mut fabric = OutputQueued::new(
        f.inputs,
        1,
        f.inputs,
        Capacity::Cells(u64::MAX),
        Capacity::Cells(f.buffer),
        policy,
        Contention::Random,
        Rng::for_stream(f.seed, 0),
    )
    .ok()?;
    let mut src: Vec<Source> = (0..f.inputs)
        .map(|i| {
            // A random phase per source so frames do not arrive in lock step.
            let mut rng = Rng::for_stream(f.seed, 1 + i as u64);
            let skip = rng.below(u64::from(f.frame_cells.max(1)) * 4);
            let mut s = Source::new(
                Pattern::Frames {
                    p: f.load_each,
                    cells: f.frame_cells,
                    dest: Dest::Fixed(0),
                },
                rng,
            );
            for _ in 0..skip {
                let _ = s.poll();
            }
            s
        })
        .collect();
    let cfg = SlottedConfig {
        slots: f.slots,
        warmup: 0,
        sample_every: (f.slots / 200).max(1),
    };
    let r = run_slotted(&mut fabric, &mut src, 1, cfg, |_| {});
    let goodput = r.frames.good_cells as f64 / f.slots as f64;
    Some((r, goodput))
}

/// Drop policies compared under frame overload (kind `sim.epd`).
pub fn frame_overload(f: &FrameOverload, policies: &[DropPolicy]) -> ResultDoc {
    let mut doc = ResultDoc::new("sim.epd", Engine::Sim);
    doc.params = json!({
        "inputs": f.inputs, "frame_cells": f.frame_cells, "load_each": f.load_each,
        "buffer_cells": f.buffer, "slots": f.slots, "seed": f.seed,
    });
    for &pol in policies {
        if let Some((r, goodput)) = frame_overload_run(f, pol) {
            doc.samples.push(json!({
                "policy": policy_name(pol),
                "throughput": r.throughput(1),
                "goodput": goodput,
                "cell_loss": r.cell_loss(),
                "frames_sent": r.frames_sent,
                "frames_good": r.frames.good_frames,
                "frame_goodput_fraction": r.frames.good_frames as f64 / r.frames_sent.max(1) as f64,
            }));
        }
    }
    doc.summary = json!({ "offered_load": f.load_each * f.inputs as f64 });
    doc
}

/// The event-driven many-to-one run as a document (kind `sim.many_to_one`).
pub fn many_to_one(
    p: &ManyToOne,
    progress: impl FnMut(weft_model::Instant),
) -> Result<(ResultDoc, ManyToOneResult), weft_model::net::NetworkError> {
    let r = run_many_to_one(p, progress)?;
    let mut doc = ResultDoc::new("sim.many_to_one", Engine::Sim);
    doc.params = json!({
        "hosts": p.hosts.iter().map(|h| json!({ "rate_bps": h.rate.as_bps(), "load": h.load })).collect::<Vec<_>>(),
        "out_rate_bps": p.out_rate.as_bps(),
        "frame_bytes": p.frame_bytes,
        "unit": match p.unit { Unit::Cells => "cells", Unit::Frames => "frames" },
        "buffer": format!("{:?}", p.capacity),
        "policy": policy_name(p.policy),
        "duration_ns": p.duration.as_nanos(),
        "seed": p.seed,
    });
    doc.samples = r
        .occupancy
        .iter()
        .map(|(t, q)| json!({ "time_ns": t, "queue": q }))
        .collect();
    doc.summary = json!({
        "events": r.events,
        "sent": r.per_host_sent.iter().sum::<u64>(),
        "delivered": r.delivered,
        "dropped": if r.output.cells_in > 0 { r.output.cells_dropped } else { r.output.frames_dropped },
        "loss": r.loss(),
        "frames_sent": r.frames_sent,
        "frames_good": r.frames_good,
        "goodput_bps": r.goodput().as_bps(),
        "delay": r.delay.summary("ns"),
        "max_queue": r.output.max_occupancy,
        "per_sender": r.output.flows,
    });
    Ok((doc, r))
}
