//! The engines a scenario can run on, by name: a function from a scenario to a result document.
//! Each is an engine of the one loop over points ([`weft_model::scenario::run`]): it runs one
//! point with the point's seed, and the loop labels the samples alike on every engine.

use std::path::PathBuf;

use serde_json::json;
use weft_model::calc;
use weft_model::scenario::Scenario;
use weft_model::scenario::run::run_points;
use weft_report::{Engine, ResultDoc};

/// Why a scenario could not run on an engine.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No engine of that name.
    #[error("unknown engine {name:?}: expected {known}")]
    UnknownEngine {
        /// The name asked for.
        name: String,
        /// The names there are, comma-separated.
        known: String,
    },
    /// The emulator could not run (not root, no `ip`, ...).
    #[error(transparent)]
    Emu(#[from] weft_emu::EmuError),
}

/// What an engine function gets.
#[derive(Clone, Debug)]
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

/// An engine: a scenario in, one result document out.
pub type EngineFn = fn(&RunCtx<'_>) -> Result<ResultDoc, RunError>;

/// The engines there are, by name.
pub const ENGINES: &[(&str, EngineFn)] = &[("model", model), ("sim", sim), ("emu", emu)];

/// The engine called `name` (case and surrounding blanks ignored).
pub fn lookup(name: &str) -> Result<(&'static str, EngineFn), RunError> {
    let name = name.trim().to_ascii_lowercase();
    ENGINES
        .iter()
        .find(|(n, _)| *n == name)
        .copied()
        .ok_or_else(|| RunError::UnknownEngine {
            name,
            known: ENGINES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The closed-form model: each point of each workload from `weft_model::calc::evaluate_point`
/// through the one loop over points, one sample per point with its metrics and notes.
pub fn model(ctx: &RunCtx<'_>) -> Result<ResultDoc, RunError> {
    let s = ctx.scenario;
    let mut doc = ResultDoc::new("model.scenario", Engine::Model);
    doc.params = json!({ "scenario": s.name, "description": s.description, "seed": ctx.seed });
    let Ok(samples) = run_points(s, ctx.seed, &mut calc::ModelEngine);
    doc.samples = samples;
    Ok(doc)
}

/// The simulator, on virtual time.
pub fn sim(ctx: &RunCtx<'_>) -> Result<ResultDoc, RunError> {
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
pub fn emu(ctx: &RunCtx<'_>) -> Result<ResultDoc, RunError> {
    let opts = weft_emu::scenario::ScenarioOptions {
        seed: Some(ctx.seed),
        max_time: Some(std::time::Duration::from_secs(5)),
        capture_dir: ctx.capture.as_ref().map(|d| d.join("emu")),
    };
    Ok(weft_emu::scenario::run(ctx.scenario, &opts)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_are_found_by_name_and_an_unknown_one_lists_the_rest() {
        assert_eq!(lookup(" Sim ").unwrap().0, "sim");
        let e = lookup("ns3").unwrap_err().to_string();
        assert_eq!(e, "unknown engine \"ns3\": expected model, sim, emu");
    }

    #[test]
    fn the_model_engine_gives_one_sample_per_point() {
        let text = include_str!("../../../scenarios/ebn-vp26.toml");
        let s = Scenario::parse(text, "ebn-vp26.toml").unwrap();
        let ctx = RunCtx {
            scenario: &s,
            seed: 1,
            chatty: false,
            capture: None,
        };
        let doc = model(&ctx).unwrap();
        assert_eq!(doc.samples.len(), s.points().len());
        assert!(doc.samples.iter().all(|x| x["workload"].is_u64()));
    }
}
