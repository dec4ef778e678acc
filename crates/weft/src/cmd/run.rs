//! `weft run FILE --engine model,sim`: one result document per engine, and paper / model / sim
//! side by side with the miss against the scenario's `[expect]`.
//!
//! Engines are a small table ([`ENGINES`]): a name and a function from a scenario to a result
//! document. An engine that is not built into this binary says so and the others still run.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use weft_model::calc;
use weft_model::scenario::{Comparison, EngineSamples, Expect, NO_SOURCE, Param, Scenario};
use weft_report::{Engine, ResultDoc};

use crate::cli::usage;

/// Arguments of `weft run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario file (TOML).
    pub file: PathBuf,
    /// Engines to run, comma-separated: model, sim (emu where built).
    #[arg(long, value_delimiter = ',', default_value = "model")]
    pub engine: Vec<String>,
    /// A figures file to compare with instead of the published figures built into weft.
    #[arg(long, value_name = "FILE")]
    pub figures: Option<PathBuf>,
    /// Seed for engines that draw random numbers (default: the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the result document(s) as JSON on stdout (an array if several engines).
    #[arg(long)]
    pub json: bool,
    /// Write the result document to this file (`name.ENGINE.json` beside it when several).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Also write each result's samples as CSV to FILE (`name.ENGINE.csv` beside it when
    /// several engines).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Exit with status 1 if any engine misses a published figure by more than its tolerance.
    #[arg(long)]
    pub strict: bool,
    /// Write one capture per link (pcap; SunATM on ATM links) under DIR/ENGINE/point<k>/, for
    /// the engines that carry frames (sim, emu).
    #[arg(long, value_name = "DIR")]
    pub capture: Option<PathBuf>,
}

/// What an engine function gets.
pub struct RunCtx<'a> {
    /// The parsed scenario.
    pub scenario: &'a Scenario,
    /// The seed to use.
    pub seed: u64,
    /// Whether stderr may carry progress (false in JSON mode).
    pub chatty: bool,
    /// Where captures go (`DIR/ENGINE/point<k>/`), if asked for.
    pub capture: Option<PathBuf>,
}

type EngineFn = fn(&RunCtx<'_>) -> anyhow::Result<ResultDoc>;

/// The engines `weft run` knows, by name.
pub const ENGINES: &[(&str, EngineFn)] = &[
    ("model", model_engine),
    ("sim", sim_engine),
    ("emu", emu_engine),
];

/// Runs `weft run`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| usage(format!("cannot read scenario {}: {e}", args.file.display())))?;
    let scenario = Scenario::parse(&text, &args.file.display().to_string())
        .map_err(|e| usage(e.to_string()))?;
    let mut engines = Vec::new();
    for name in &args.engine {
        let name = name.trim().to_ascii_lowercase();
        let Some((n, f)) = ENGINES.iter().find(|(n, _)| *n == name) else {
            let known: Vec<&str> = ENGINES.iter().map(|(n, _)| *n).collect();
            return Err(usage(format!(
                "unknown engine {name:?}: expected {}",
                known.join(", ")
            )));
        };
        engines.push((*n, *f));
    }
    let ctx = RunCtx {
        scenario: &scenario,
        seed: args.seed.unwrap_or(scenario.seed),
        chatty: !args.json,
        capture: args.capture.clone(),
    };
    let mut docs: Vec<(&str, ResultDoc)> = Vec::new();
    let mut unavailable: Vec<(&str, String)> = Vec::new();
    let progress = crate::progress::Progress::spinner("run");
    for (name, f) in engines {
        progress.message(format!("engine {name}"));
        tracing::info!(engine = name, scenario = %args.file.display(), "engine starts");
        match f(&ctx) {
            Ok(doc) => docs.push((name, doc)),
            Err(e) => unavailable.push((name, format!("{e:#}"))),
        }
    }
    progress.finish();
    let figures = if scenario.expect.is_empty() {
        None
    } else {
        match super::calc::read_figures(args.figures.as_deref()) {
            Ok(f) => Some(f),
            Err(e) => {
                unavailable.push(("figures", format!("{e:#}")));
                None
            }
        }
    };
    let samples: Vec<EngineSamples<'_>> = docs
        .iter()
        .map(|(n, d)| EngineSamples {
            engine: n,
            samples: &d.samples,
        })
        .collect();
    let comparisons: Vec<Comparison> = if scenario.expect.is_empty() {
        // Nothing published to hold against: set the engines side by side on each workload's
        // default metric.
        scenario
            .workloads
            .iter()
            .enumerate()
            .map(|(i, w)| Expect {
                source: NO_SOURCE.into(),
                select: None,
                metric: w.kind.default_metric().into(),
                tolerance: 0.0,
                workload: i,
            })
            .map(|e| Comparison::new(&e, None, &scenario, &samples))
            .collect()
    } else if let Some(f) = &figures {
        scenario
            .expect
            .iter()
            .map(|e| Comparison::new(e, Some(f), &scenario, &samples))
            .collect()
    } else {
        Vec::new()
    };
    drop(samples);
    // Each document carries its own engine's side of every comparison.
    for (name, doc) in &mut docs {
        let mine: Vec<Value> = comparisons
            .iter()
            .map(|c| {
                let rows: Vec<Value> = c
                    .rows
                    .iter()
                    .map(|r| {
                        let cell = r.cells.iter().find(|x| x.engine == *name);
                        json!({ "point": r.label, "paper": r.paper,
                                "value": cell.and_then(|x| x.value), "miss": cell.and_then(|x| x.miss),
                                "within": cell.and_then(|x| x.within) })
                    })
                    .collect();
                json!({ "source": c.expect.source, "metric": c.expect.metric,
                        "tolerance": c.expect.tolerance, "error": c.error, "rows": rows })
            })
            .collect();
        doc.summary["expect"] = Value::Array(mine);
    }
    write_outputs(&args, &docs)?;
    if args.json {
        let body = if docs.len() == 1 {
            docs.first()
                .map(|(_, d)| d.to_json_pretty())
                .unwrap_or_default()
        } else {
            serde_json::to_string_pretty(&docs.iter().map(|(_, d)| d).collect::<Vec<_>>())?
        };
        println!("{body}");
        for (n, why) in &unavailable {
            eprintln!("weft: {n}: {why}");
        }
    } else {
        print!("{}", human(&scenario, &docs, &unavailable, &comparisons));
    }
    if docs.is_empty() {
        return Err(anyhow::anyhow!(
            "no engine could run {}",
            args.file.display()
        ));
    }
    if args.strict && !comparisons.iter().all(Comparison::all_within) {
        return Err(anyhow::anyhow!(
            "some results miss the published figures by more than their tolerance"
        ));
    }
    Ok(())
}

fn write_outputs(args: &Args, docs: &[(&str, ResultDoc)]) -> anyhow::Result<()> {
    // One engine: the file as named; several: `stem.ENGINE.ext` beside it.
    let path_for = |out: &Path, name: &str, ext: &str| {
        if docs.len() == 1 || out.as_os_str() == "-" {
            out.to_path_buf()
        } else {
            let stem = out
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.with_file_name(format!("{stem}.{name}.{ext}"))
        }
    };
    for (name, doc) in docs {
        if let Some(out) = &args.output {
            let path = path_for(out, name, "json");
            weft_report::write_atomic(&path, doc.to_json_pretty().as_bytes())
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        }
        if let Some(out) = &args.csv {
            crate::output::write_csv(Some(&path_for(out, name, "csv")), doc)?;
        }
    }
    Ok(())
}

fn model_engine(ctx: &RunCtx<'_>) -> anyhow::Result<ResultDoc> {
    let s = ctx.scenario;
    let mut doc = ResultDoc::new("model.scenario", Engine::Model);
    doc.params = json!({ "scenario": s.name, "description": s.description, "seed": ctx.seed });
    for p in calc::evaluate(s) {
        let mut sample = json!({ "workload": p.workload, "point": p.point, "notes": p.notes });
        for (k, v) in &p.metrics {
            sample[k] = json!(v);
        }
        doc.samples.push(sample);
    }
    Ok(doc)
}

fn sim_engine(ctx: &RunCtx<'_>) -> anyhow::Result<ResultDoc> {
    if ctx.chatty {
        eprintln!(
            "sim: simulating {} point(s) of {} ...",
            ctx.scenario.points().len(),
            ctx.scenario.name
        );
    }
    let opts = weft_sim::scenario::SimOptions {
        capture_dir: ctx.capture.as_ref().map(|d| d.join("sim")),
    };
    Ok(weft_sim::scenario::run_with(ctx.scenario, ctx.seed, &opts))
}

/// The emulator (needs root): each workload capped at 5 s of real time, noted in its samples.
fn emu_engine(ctx: &RunCtx<'_>) -> anyhow::Result<ResultDoc> {
    let opts = weft_emu::scenario::ScenarioOptions {
        seed: Some(ctx.seed),
        max_time: Some(std::time::Duration::from_secs(5)),
        capture_dir: ctx.capture.as_ref().map(|d| d.join("emu")),
    };
    Ok(weft_emu::scenario::run(ctx.scenario, &opts)?)
}

fn human(
    s: &Scenario,
    docs: &[(&str, ResultDoc)],
    unavailable: &[(&str, String)],
    comps: &[Comparison],
) -> String {
    let mut out = format!("scenario {}", s.name);
    if !s.description.is_empty() {
        out.push_str(&format!(": {}", s.description));
    }
    out.push('\n');
    for (n, why) in unavailable {
        out.push_str(&format!("  {n}: {why}\n"));
    }
    for c in comps {
        out.push('\n');
        out.push_str(&c.table());
    }
    out.push('\n');
    for (name, doc) in docs {
        out.push_str(&format!("{name}:\n"));
        let labels = point_labels(s);
        let mut last_notes: Option<&Value> = None;
        for (i, sample) in doc.samples.iter().enumerate() {
            let label = labels.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
            let metrics: Vec<String> = sample
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| v.is_number() && !matches!(k.as_str(), "workload" | "point"))
                .map(|(k, v)| format!("{k}={}", short(v)))
                .collect();
            out.push_str(&format!("  {label:<18} {}\n", metrics.join(" ")));
            // Notes repeated from the previous point are not printed again.
            let notes = sample.get("notes");
            if notes != last_notes
                && let Some(list) = notes.and_then(Value::as_array)
            {
                for n in list.iter().filter_map(Value::as_str) {
                    out.push_str(&format!("  {:<18}   ({n})\n", ""));
                }
            }
            last_notes = notes;
        }
    }
    out
}

fn point_labels(s: &Scenario) -> Vec<String> {
    s.points()
        .iter()
        .map(|p| {
            let field = s
                .workloads
                .get(p.workload)
                .and_then(|w| w.sweep.as_ref())
                .map(|x| x.field.clone());
            match (field, p.value) {
                (Some(f), Some(v)) => format!("w{} {f}={}", p.workload, param(v)),
                _ => format!("w{}", p.workload),
            }
        })
        .collect()
}

fn param(p: Param) -> String {
    match p {
        Param::Count(n) => n.to_string(),
        Param::Number(x) => format!("{x}"),
        Param::Size(s) => s.0.to_string(),
        Param::Rate(r) => r.to_string(),
        Param::Duration(d) => d.to_string(),
    }
}

fn short(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e12 => format!("{x:.0}"),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.4}"),
        None => v.to_string(),
    }
}
