//! `weft repro [STUDY|ITEM...]`: the catalogued results of the five studies, each run on the
//! engines available and given a verdict; per study a table and a summary line, or one JSON
//! document (`--json`), and with `-o DIR` the document and the HTML report written there.
//!
//! Everything is in `weft_run::repro`; this is the wiring: arguments, the progress bar, output.

use std::path::PathBuf;

use anyhow::Context;
use weft_report::repro_doc;
use weft_report::{ResultDoc, write_atomic};
use weft_run::Catalogue;
use weft_run::repro::{self, EngineChoice};

use crate::cli::usage;

/// Arguments of `weft repro`.
///
/// Runs the scenarios behind the catalogue's items (data/catalogue.toml, built into weft) once
/// per engine: model and sim always, emu when root, real (loopback, against an agent started
/// inside weft) for the scenarios of `method` items. Prints per study each item with the
/// paper's value beside every engine's, the miss, the kind and the verdict, and a line per
/// study: reproduced (predicted and within tolerance on every engine the item holds), missed,
/// fitted, input, qualitative (held or failed), method, missing.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Studies (000 to 004), item ids (003.t1.with_switch) or their leading parts (003.t9);
    /// all items when none is given.
    #[arg(value_name = "STUDY|ITEM")]
    pub targets: Vec<String>,
    /// Engines to run, comma-separated: model, sim, emu, real (default: model, sim, emu when
    /// root, real for method items).
    #[arg(long, value_delimiter = ',')]
    pub engine: Vec<String>,
    /// Print the result document as JSON on stdout instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Write repro.json and report.html (the HTML report) into DIR (created if missing).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Runs `weft repro`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let catalogue = Catalogue::bundled().context("the built-in catalogue")?;
    if catalogue.items.is_empty() {
        anyhow::bail!("this weft was built without a catalogue (data/catalogue.toml)");
    }
    let choice = EngineChoice::from_names(&args.engine, weft_sys::process::is_root())
        .map_err(|e| usage(e.to_string()))?;
    let plan = repro::plan(&catalogue, &args.targets, &choice).map_err(|e| match e {
        repro::ReproError::NoMatch { .. } | repro::ReproError::UnknownEngine { .. } => {
            usage(e.to_string())
        }
        other => anyhow::Error::new(other),
    })?;
    if !args.json {
        eprintln!(
            "repro: {} item(s), {} scenario(s), {} run(s)",
            plan.items.len(),
            plan.scenarios.len(),
            plan.jobs.len()
        );
    }
    let doc = run_plan(&plan)?;
    let (items, summary) = repro_doc::read(&doc)?;
    if args.json {
        super::write_stdout((doc.to_json_pretty() + "\n").as_bytes())?;
    } else {
        super::write_stdout(repro::text::human(&items, &summary).as_bytes())?;
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let json_path = dir.join("repro.json");
        write_atomic(&json_path, (doc.to_json_pretty() + "\n").as_bytes())
            .with_context(|| format!("cannot write {}", json_path.display()))?;
        let html_path = dir.join("report.html");
        let html = super::report::page(&[doc])?;
        write_atomic(&html_path, html.as_bytes())
            .with_context(|| format!("cannot write {}", html_path.display()))?;
        eprintln!("wrote {} and {}", json_path.display(), html_path.display());
    }
    Ok(())
}

/// Runs a plan with a progress bar over its runs.
fn run_plan(plan: &repro::Plan) -> anyhow::Result<ResultDoc> {
    let figures = weft_model::scenario::Figures::bundled()?;
    let bar = crate::progress::Progress::bar("repro", plan.jobs.len() as u64, "runs");
    let doc = repro::run(plan, &figures, &|job, seconds| {
        bar.message(format!(
            "{} on {} ({seconds:.1} s)",
            job.scenario, job.engine
        ));
        bar.inc(1);
    });
    bar.finish();
    Ok(doc)
}

/// Every catalogued item on model and sim (what `weft demo` reports beside its measurement):
/// under a minute on a two-core machine. `None` when this weft has no catalogue.
pub(crate) fn model_and_sim() -> anyhow::Result<Option<ResultDoc>> {
    let catalogue = Catalogue::bundled().context("the built-in catalogue")?;
    if catalogue.items.is_empty() {
        return Ok(None);
    }
    let choice = EngineChoice::Only(vec!["model", "sim"]);
    let plan = repro::plan(&catalogue, &[], &choice)?;
    run_plan(&plan).map(Some)
}
