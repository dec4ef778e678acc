//! Runs a scenario file's workloads in the simulator: [`run`] gives one [`ResultDoc`] whose
//! samples are one object per point of every workload (in the order of
//! [`Scenario::points`]), with `"workload"`, `"point"` and the metrics of
//! [`Metric`](weft_model::scenario::Metric), so that `weft run` can line them up with the model
//! and the published figures.
//!
//! Slotted kinds (saturated, bernoulli, onoff, hotspot) run the scenario's switch fabric one cell
//! time per step; `frames` runs the event-driven many-to-one engine over the scenario's links
//! (their rates may differ). `tput` needs a transport model the simulator does not have; such
//! points carry a note instead of metrics.

use serde_json::{Map, Value, json};
use weft_model::fabric::{InputFifo, Islip, OutputQueued, Rng};
use weft_model::queue::{Capacity, DropPolicy};
use weft_model::scenario::DropPolicy as ScenarioDrop;
use weft_model::scenario::{
    Buffer, BufferUnit, Fabric, Metric, Param, Scenario, Switch, Workload, WorkloadKind,
};
use weft_model::{Duration, Rate};
use weft_report::{Engine, ResultDoc};

use crate::cell::SimCell;
use crate::event::{Host, ManyToOne, Unit, run_many_to_one};
use crate::hol::{HolParams, run_saturated};
use crate::slotted::{SlottedConfig, SlottedResult, run_slotted};
use crate::source::{Dest, Pattern, Source};

/// Slots simulated when a workload gives none.
pub const DEFAULT_SLOTS: u64 = 200_000;
/// Simulated time of a frames workload that gives none.
pub const DEFAULT_TIME: Duration = Duration::from_millis(200);

/// Simulates every point of `scenario` with `seed`; kind `sim.scenario`, engine `sim`.
pub fn run(scenario: &Scenario, seed: u64) -> ResultDoc {
    let mut doc = ResultDoc::new("sim.scenario", Engine::Sim);
    doc.params =
        json!({ "scenario": scenario.name, "description": scenario.description, "seed": seed });
    for (k, point) in scenario.points().iter().enumerate() {
        // Each point has its own streams, so adding a point does not change the others.
        let point_seed = Rng::for_stream(seed, 0x5ce0 + k as u64).next_u64();
        let mut metrics = Map::new();
        let mut notes: Vec<String> = Vec::new();
        simulate(scenario, &point.spec, point_seed, &mut metrics, &mut notes);
        if scenario.links.iter().any(|l| l.contract.is_some()) {
            notes.push(
                "VC contracts (pcr/scr) are enforced by the emulator only; ignored here".into(),
            );
        }
        let mut sample = json!({
            "workload": point.workload,
            "point": point.value.map(param_json),
            "notes": notes,
        });
        for (key, v) in metrics {
            sample[key] = v;
        }
        doc.samples.push(sample);
    }
    doc
}

fn param_json(p: Param) -> Value {
    match p {
        Param::Count(n) => json!(n),
        Param::Number(x) => json!(x),
        Param::Size(s) => json!(s.as_bytes()),
        Param::Rate(r) => json!(r.as_bps()),
        Param::Duration(d) => json!(d.as_nanos()),
    }
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
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let sw = s.switch_for(w);
    match w.kind {
        WorkloadKind::Tput => {
            notes.push(
                "the simulator has no transport (TCP/UDP) model; use the model or emu engine"
                    .into(),
            );
        }
        WorkloadKind::Frames => frames(s, w, seed, m, notes),
        WorkloadKind::Mp => notes.push(
            "skipped: the simulator's hosts and transport are not there yet, so it cannot run \
             message passing; use the model or emu engine"
                .into(),
        ),
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

fn frames(
    s: &Scenario,
    w: &Workload,
    seed: u64,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let Some(size) = w.size else {
        return notes.push("a frames workload needs `size`".into());
    };
    let Some(to) = w.to.first() else {
        return notes.push("a frames workload needs `to`".into());
    };
    if w.to.len() > 1 {
        notes.push("only the first `to` host is simulated (many-to-one)".into());
    }
    let Some(out_link) = s.links_of(to).next() else {
        return notes.push(format!("host {to:?} has no link"));
    };
    let cells = out_link.tech.cells(size.as_bytes());
    let mut hosts = Vec::new();
    for h in &w.from {
        let Some(l) = s.links_of(h).next() else {
            return notes.push(format!("host {h:?} has no link"));
        };
        let load = match (w.rate, w.load) {
            (Some(r), _) => r.as_bps() as f64 / l.tech.rate.as_bps().max(1) as f64,
            (None, Some(p)) => p,
            (None, None) => 1.0,
        };
        hosts.push(Host {
            rate: l.tech.rate,
            load: load.clamp(1e-9, 1.0),
        });
    }
    if hosts.is_empty() {
        return notes.push("a frames workload needs `from` hosts".into());
    }
    let sw = s.switch_for(w);
    let p = ManyToOne {
        hosts,
        out_rate: out_link.tech.rate,
        frame_bytes: size.as_bytes() as usize,
        unit: if cells.is_some() {
            Unit::Cells
        } else {
            Unit::Frames
        },
        frame_cells: cells,
        capacity: capacity(sw.and_then(|x| x.buffer)),
        policy: sw.map_or(DropPolicy::Tail, |x| policy(x.drop)),
        duration: w.time.unwrap_or(DEFAULT_TIME),
        sample_every: Duration::ZERO,
        seed,
    };
    let r = run_many_to_one(&p, |_| {});
    m.insert(
        Metric::FRAME_GOODPUT.into(),
        json!(r.frames.good_frames as f64 / r.frames_sent.max(1) as f64),
    );
    m.insert(Metric::CELL_LOSS.into(), json!(r.loss()));
    m.insert(
        Metric::GOODPUT_MBPS.into(),
        json!(r.goodput().as_mbps_f64()),
    );
    m.insert("frames_sent".into(), json!(r.frames_sent));
    m.insert("frames_good".into(), json!(r.frames.good_frames));
    m.insert("max_queue".into(), json!(r.counters.max_items));
    m.insert("mean_delay_us".into(), json!(r.delay.mean() / 1e3));
}
