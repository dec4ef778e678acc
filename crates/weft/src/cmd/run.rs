//! `weft run FILE --engine model,sim`: one result document per engine, and paper / model / sim
//! side by side with the miss against the scenario's `[expect]`.
//!
//! The engines, the model adapter and the comparison live in `weft-run`; this is the wiring:
//! arguments, progress, output files. An engine that cannot run says why and the others still run;
//! a workload an engine cannot run is its own row saying why (`skipped` in the JSON), the file's
//! other workloads run, and the exit status is 3 (the table's rows, and stderr, say which).

use std::path::{Path, PathBuf};

use weft_model::scenario::{CheckResult, Comparison, Scenario};
use weft_report::ResultDoc;
use weft_run::RunCtx;

use crate::cli::{PartialRun, usage};

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
    /// Exit with status 1 if any engine misses a published figure by more than its tolerance,
    /// or a `[[check]]` fails on any engine.
    #[arg(long)]
    pub strict: bool,
    /// Run every engine on the file as the emulator runs it (its `[emu]` table: links at
    /// `link_rate`, each workload's time stretched as much, cubic with ECN for dctcp where this
    /// kernel lacks it), to hold the simulator against the emulator at the same rate.
    #[arg(long)]
    pub as_emu: bool,
    /// Write one capture per link (pcap; SunATM on ATM links) under DIR/ENGINE/point<k>/, for
    /// the engines that carry frames (sim, emu).
    #[arg(long, value_name = "DIR")]
    pub capture: Option<PathBuf>,
}

/// Runs `weft run`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| usage(format!("cannot read scenario {}: {e}", args.file.display())))?;
    let mut scenario = Scenario::parse(&text, &args.file.display().to_string())
        .map_err(|e| usage(e.to_string()))?;
    if args.as_emu {
        if scenario.emu.is_none() {
            return Err(usage(format!(
                "--as-emu: {} has no [emu] table",
                args.file.display()
            )));
        }
        let (emulated, notes) = scenario.as_emulated(weft_sys::sockopt::has_congestion("dctcp"));
        for n in notes {
            eprintln!("weft run --as-emu: {n}");
        }
        scenario = emulated;
    }
    let engines = args
        .engine
        .iter()
        .map(|n| weft_run::lookup(n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| usage(e.to_string()))?;
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
            Err(e) => unavailable.push((name, e.to_string())),
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
    let comparisons = weft_run::compare(&scenario, &docs, figures.as_ref());
    weft_run::attach(&mut docs, &comparisons);
    let checks = weft_run::checks(&scenario, &docs);
    weft_run::attach_checks(&mut docs, &checks);
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
        let text = weft_run::table::human(&scenario, &docs, &unavailable, &comparisons, &checks);
        print!("{text}");
    }
    if docs.is_empty() {
        return Err(anyhow::anyhow!(
            "no engine could run {}",
            args.file.display()
        ));
    }
    let missed = comparisons.iter().filter(|c| !c.all_within()).count();
    let failed = checks.iter().filter(|c| !c.all_held()).count();
    if !args.strict && missed + failed > 0 {
        eprintln!(
            "weft run: {missed} comparison(s) missed a published figure past its tolerance \
             (marked !) and {failed} check(s) failed; exit status 0 all the same: --strict \
             exits 1 on a miss"
        );
    }
    if let Some(dir) = &args.capture {
        eprintln!("weft run: {}", capture_summary(dir));
    }
    if args.strict && !comparisons.iter().all(Comparison::all_within) {
        return Err(anyhow::anyhow!(
            "some results miss the published figures by more than their tolerance"
        ));
    }
    if args.strict && !checks.iter().all(CheckResult::all_held) {
        return Err(anyhow::anyhow!(
            "some of the scenario's checks failed on an engine"
        ));
    }
    match skipped_summary(&scenario, &docs) {
        Some(text) => Err(PartialRun(text).into()),
        None => Ok(()),
    }
}

/// The workloads the engines skipped, for stderr (`None`: every engine ran every point):
/// `2 workload point(s) not run: emu w0 (not on emu: ...), ...`.
fn skipped_summary(s: &Scenario, docs: &[(&str, ResultDoc)]) -> Option<String> {
    let list: Vec<String> = docs
        .iter()
        .flat_map(|(engine, d)| {
            weft_model::scenario::run::skipped(&d.samples)
                .into_iter()
                .map(move |(w, why)| {
                    format!("{engine} {} ({why})", weft_run::table::workload_name(s, w))
                })
        })
        .collect();
    (!list.is_empty()).then(|| {
        format!(
            "{} workload point(s) not run (exit status 3): {}",
            list.len(),
            list.join("; ")
        )
    })
}

/// What `--capture DIR` left: how many captures and how many bytes, and where.
fn capture_summary(dir: &Path) -> String {
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => dirs.push(e.path()),
                Ok(m) => {
                    files += 1;
                    bytes += m.len();
                }
                Err(_) => {}
            }
        }
    }
    format!(
        "wrote {files} capture(s), {}, under {} (remove it when done)",
        weft_model::Size(bytes),
        dir.display()
    )
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
