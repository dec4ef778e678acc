//! Runs a scenario file's workloads in the simulator: [`run`] gives one [`ResultDoc`] whose
//! samples are one object per point of every workload (in the order of
//! [`Scenario::points`]), with `"workload"`, `"point"` and the metrics of
//! [`Metric`](weft_model::scenario::Metric), so that `weft run` can line them up with the model
//! and the published figures.
//!
//! Slotted kinds (saturated, bernoulli, onoff, hotspot) run the scenario's switch fabric one cell
//! time per step; `frames` runs the scenario's whole topology — every host, switch, link, fault
//! and VC contract, through the same switch code the emulator runs — on the event engine
//! ([`crate::net::workload`]); `tput` runs TCP or UDP bulk transfers on that same network
//! ([`crate::net::tput`]), and `rr` request/response pairs ([`crate::net::rr_workload`]);
//! `ring` runs a shared FDDI ring's timed-token protocol ([`crate::ring`]).

use serde_json::{Map, Value, json};
use weft_model::Rate;
use weft_model::fabric::{InputFifo, Islip, OutputQueued, Rng};
use weft_model::mp::Route;
use weft_model::queue::{Capacity, DropPolicy};
use weft_model::scenario::DropPolicy as ScenarioDrop;
use weft_model::scenario::run::{PointCtx, PointEngine, PointResult, run_points};
use weft_model::scenario::{
    Buffer, BufferUnit, Fabric, Metric, Scenario, Switch, Workload, WorkloadKind,
};
use weft_report::{Engine, ResultDoc};

use std::path::PathBuf;

use weft_model::net::Topology;

use crate::cell::SimCell;
use crate::hol::{HolParams, run_saturated};
use crate::slotted::{SlottedConfig, SlottedResult, run_slotted};
use crate::source::{Dest, Pattern, Source};

/// Slots simulated when a workload gives none.
pub const DEFAULT_SLOTS: u64 = 200_000;
pub use crate::net::workload::DEFAULT_TIME;

/// How to simulate a scenario.
#[derive(Clone, Debug, Default)]
pub struct SimOptions {
    /// Write one capture per link, per point, under this directory (`point<k>/<link>.pcap`).
    pub capture_dir: Option<PathBuf>,
}

/// Simulates every point of `scenario` with `seed`; kind `sim.scenario`, engine `sim`.
pub fn run(scenario: &Scenario, seed: u64) -> ResultDoc {
    run_with(scenario, seed, &SimOptions::default())
}

/// As [`run`], with options.
pub fn run_with(scenario: &Scenario, seed: u64, opts: &SimOptions) -> ResultDoc {
    let mut doc = ResultDoc::new("sim.scenario", Engine::Sim);
    doc.params =
        json!({ "scenario": scenario.name, "description": scenario.description, "seed": seed });
    match Topology::from_scenario(scenario, seed) {
        Ok((t, notes)) => {
            doc.params["topology"] = json!(t);
            doc.params["notes"] = json!(notes);
        }
        Err(e) => doc.params["notes"] = json!([e.to_string()]),
    }
    let Ok(samples) = run_points(scenario, seed, &mut SimEngine { opts });
    doc.samples = samples;
    doc
}

/// The simulator as an engine of the one loop over points ([`run_points`]): a point's failures
/// are its notes, never an error.
#[derive(Clone, Copy, Debug)]
pub struct SimEngine<'a> {
    /// Captures, if any.
    pub opts: &'a SimOptions,
}

impl PointEngine for SimEngine<'_> {
    type Error = std::convert::Infallible;

    fn run_point(&mut self, p: &PointCtx<'_>) -> Result<PointResult, Self::Error> {
        if let Some(why) = not_on_sim(&p.point.spec) {
            return Ok(PointResult::skipped(why));
        }
        let mut r = PointResult::default();
        let capture = self
            .opts
            .capture_dir
            .as_ref()
            .map(|d| d.join(format!("point{}", p.index)));
        if let Some(d) = &capture {
            if let Err(e) = std::fs::create_dir_all(d) {
                r.notes
                    .push(format!("capture: creating {}: {e}", d.display()));
            }
        }
        simulate(
            p.scenario,
            &p.point.spec,
            p.seed,
            capture.as_deref(),
            &mut r.metrics,
            &mut r.notes,
        );
        Ok(r)
    }
}

/// Why the simulator cannot run workload `w` at all, if it cannot.
fn not_on_sim(w: &Workload) -> Option<String> {
    if w.kind == WorkloadKind::Vc {
        return Some(
            "not on sim: a vc workload's circuits are planned by the model engine; the simulator \
             does not yet switch cells by VC tables (issue 28)"
                .into(),
        );
    }
    if w.mp.as_ref().is_some_and(|m| m.route == Route::Daemon) {
        return Some(
            "not on sim: the simulator runs the direct route only (no PVM daemons on its hosts)"
                .into(),
        );
    }
    None
}

fn capacity(b: Option<Buffer>) -> Capacity {
    match b {
        None => Capacity::Cells(u64::MAX),
        Some(Buffer {
            amount,
            unit: BufferUnit::Cells,
        }) => Capacity::Cells(amount),
        Some(Buffer {
            amount,
            unit: BufferUnit::Frames,
        }) => Capacity::Frames(amount),
        Some(Buffer {
            amount,
            unit: BufferUnit::Bytes,
        }) => Capacity::Bytes(amount),
    }
}

fn policy(d: ScenarioDrop) -> DropPolicy {
    match d {
        ScenarioDrop::Tail => DropPolicy::Tail,
        ScenarioDrop::Ppd => DropPolicy::Ppd,
        ScenarioDrop::Epd { threshold } => DropPolicy::Epd {
            threshold: threshold.amount,
        },
    }
}

/// The rate of the switch's first link, the rate one slot stands for.
fn port_rate(s: &Scenario, sw: Option<&Switch>) -> Option<Rate> {
    sw.and_then(|x| s.links_of(&x.name).next().map(|l| l.tech.rate))
}

fn simulate(
    s: &Scenario,
    w: &Workload,
    seed: u64,
    capture: Option<&std::path::Path>,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let sw = s.switch_for(w);
    // The workload's multipath in place of the fabric's.
    let from_scenario = |s: &Scenario, seed| {
        Topology::from_scenario(s, seed).map(|(t, notes)| (t.for_workload(w), notes))
    };
    match w.kind {
        WorkloadKind::Tput => match from_scenario(s, seed) {
            Ok((topo, _)) => crate::net::tput::tput(s, &topo, w, seed, capture, m, notes),
            Err(e) => notes.push(e.to_string()),
        },
        WorkloadKind::Rr => match from_scenario(s, seed) {
            Ok((topo, _)) => crate::net::rr_workload::rr(s, &topo, w, seed, m, notes),
            Err(e) => notes.push(e.to_string()),
        },
        WorkloadKind::Frames => match from_scenario(s, seed) {
            Ok((topo, _)) => crate::net::workload::frames(&topo, w, seed, capture, m, notes),
            Err(e) => notes.push(e.to_string()),
        },
        WorkloadKind::Mp => match from_scenario(s, seed) {
            Ok((topo, _)) => crate::net::mp_workload::mp(s, &topo, w, m, notes),
            Err(e) => notes.push(e.to_string()),
        },
        WorkloadKind::Xfer => match from_scenario(s, seed) {
            Ok((topo, _)) => crate::net::xfer::xfer_workload(s, &topo, w, seed, m, notes),
            Err(e) => notes.push(e.to_string()),
        },
        WorkloadKind::Ring => match &w.ring {
            Some(r) => crate::ring::ring(r, w.size, w.time, m, notes),
            None => notes.push("a ring workload without its ring".into()),
        },
        WorkloadKind::Nfs => match from_scenario(s, seed) {
            Ok((topo, _)) => crate::net::nfs_workload::nfs(s, &topo, w, m, notes),
            Err(e) => notes.push(e.to_string()),
        },
        WorkloadKind::X11 => match from_scenario(s, seed) {
            Ok((topo, _)) => {
                crate::net::x11_workload::x11(s, &topo, w, seed, capture, m, notes);
            }
            Err(e) => notes.push(e.to_string()),
        },
        // Not run: `not_on_sim` said so before.
        WorkloadKind::Vc => {}
        _ => {
            let Some(sw) = sw else {
                notes.push("no switch to drive: name one with `switch =`".into());
                return;
            };
            slotted(s, sw, w, seed, m, notes);
        }
    }
}

fn slotted(
    s: &Scenario,
    sw: &Switch,
    w: &Workload,
    seed: u64,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let (Some(inputs), Some(outputs)) =
        (w.input_count().or(sw.ports), w.output_count().or(sw.ports))
    else {
        notes.push("inputs or outputs unknown: give `ports` on the switch or workload".into());
        return;
    };
    let (mi, no) = (inputs as usize, outputs as usize);
    if mi == 0 || no == 0 || mi > u16::MAX as usize || no > u16::MAX as usize {
        notes.push("port counts must be 1..65535".into());
        return;
    }
    let slots = w.slots.unwrap_or(DEFAULT_SLOTS).max(1);
    let warmup = w.warmup.unwrap_or((slots / 10).min(100_000));
    let rate = w.rate.or(port_rate(s, Some(sw)));
    m.insert("inputs".into(), json!(mi));
    m.insert("outputs".into(), json!(no));
    m.insert("slots".into(), json!(slots));

    // The saturated input-FIFO case with unbounded buffers is the allocation-free loop.
    if w.kind == WorkloadKind::Saturated && sw.fabric == Fabric::InputFifo && sw.buffer.is_none() {
        let r = run_saturated(
            &HolParams {
                inputs: mi,
                outputs: no,
                slots,
                warmup,
                contention: sw.contention.into(),
                retain: true,
                seed,
            },
            |_| {},
        );
        let e = r.input_efficiency();
        m.insert(Metric::EFFICIENCY.into(), json!(e));
        if let Some(rate) = rate {
            m.insert(
                Metric::THROUGHPUT_MBPS.into(),
                json!(e * rate.as_mbps_f64()),
            );
        }
        return;
    }

    let load = w.load.unwrap_or(1.0).clamp(0.0, 1.0);
    let dest = match (w.kind, w.hotspot) {
        (WorkloadKind::Hotspot, Some(h)) => Dest::Hotspot {
            port: 0,
            fraction: h,
            n: no as u16,
        },
        _ => Dest::Uniform(no as u16),
    };
    let pattern = match w.kind {
        WorkloadKind::Saturated => Pattern::Saturated(dest),
        WorkloadKind::Onoff => Pattern::OnOff {
            p: load,
            burst: w.burst.unwrap_or(10.0),
            dest,
        },
        _ => Pattern::Bernoulli { p: load, dest },
    };
    let mut sources: Vec<Source> = (0..mi)
        .map(|i| Source::new(pattern, Rng::for_stream(seed, 1 + i as u64)))
        .collect();
    let cfg = SlottedConfig {
        slots,
        warmup,
        sample_every: (slots / 200).max(1),
    };
    let cap = capacity(sw.buffer);
    let pol = policy(sw.drop);
    let rng = Rng::for_stream(seed, 0);
    let r: SlottedResult = match sw.fabric {
        Fabric::InputFifo => match InputFifo::new(mi, no, cap, pol, sw.contention.into(), rng) {
            Ok(mut f) => run_slotted(&mut f, &mut sources, no, cfg, |_| {}),
            Err(e) => return notes.push(e.to_string()),
        },
        Fabric::OutputQueued => {
            let speedup = sw.speedup.map_or(mi, |x| x as usize);
            match OutputQueued::new(
                mi,
                no,
                speedup,
                Capacity::Cells(u64::MAX),
                cap,
                pol,
                sw.contention.into(),
                rng,
            ) {
                Ok(mut f) => run_slotted(&mut f, &mut sources, no, cfg, |_| {}),
                Err(e) => return notes.push(e.to_string()),
            }
        }
        Fabric::VoqIslip => {
            if mi != no {
                return notes.push("iSLIP needs as many inputs as outputs".into());
            }
            let voq = match cap {
                Capacity::Cells(n) | Capacity::Frames(n) => n.min(usize::MAX as u64) as usize,
                Capacity::Bytes(b) => (b / 53) as usize,
            };
            match Islip::<SimCell>::new(mi, sw.iterations.max(1) as usize, voq) {
                Ok(mut f) => run_slotted(&mut f, &mut sources, no, cfg, |_| {}),
                Err(e) => return notes.push(e.to_string()),
            }
        }
    };
    let offered: u64 = r.per_input_offered.iter().sum();
    let delivered: u64 = r.per_output_delivered.iter().sum();
    let eff = delivered as f64 / (slots as f64 * mi as f64);
    m.insert(Metric::EFFICIENCY.into(), json!(eff));
    if let Some(rate) = rate {
        m.insert(
            Metric::THROUGHPUT_MBPS.into(),
            json!(eff * rate.as_mbps_f64()),
        );
    }
    m.insert(
        "offered_load".into(),
        json!(offered as f64 / (slots as f64 * mi as f64)),
    );
    m.insert("output_utilisation".into(), json!(r.throughput(no)));
    m.insert(Metric::MEAN_WAIT_SLOTS.into(), json!(r.delay.mean()));
    m.insert("p99_wait_slots".into(), json!(r.delay.quantile(0.99)));
    m.insert(Metric::CELL_LOSS.into(), json!(r.cell_loss()));
    let held_max = r.occupancy.iter().map(|o| o.1).max().unwrap_or(0);
    m.insert("max_held_cells".into(), json!(held_max));
    if w.kind == WorkloadKind::Onoff {
        m.insert(
            Metric::FRAME_GOODPUT.into(),
            json!(r.frames.good_frames as f64 / r.frames_sent.max(1) as f64),
        );
    }
}
