//! `weft repro`: every item of the catalogue of the studies' results (`data/catalogue.toml`)
//! given a verdict. The items' scenarios run once per engine (model and sim always, emu when
//! root, `real` on loopback for the scenarios of method items), their comparisons and checks
//! are read per item, and the result is one document of kind `repro`
//! (`weft_report::repro_doc`), which `weft report` draws.
//!
//! [`plan`] picks the items and the runs; [`run`] runs them and builds the document;
//! [`text::human`] is what a person reads.

pub mod real;
pub mod run;
pub mod select;
pub mod text;
pub mod verdict;

use std::time::Instant;

use serde_json::json;
use weft_model::scenario::{FigureError, Figures, Scenario, ScenarioError};
use weft_report::repro_doc::{EngineTime, ItemSample, KIND, ReproSummary};
use weft_report::{Engine, ResultDoc};

use crate::bundled;
use crate::catalogue::{Catalogue, CatalogueError, Item};
pub use select::{ENGINES, EngineChoice, Job};
use verdict::ScenarioResults;

/// Why `weft repro` cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ReproError {
    /// An engine name that is none of model, sim, emu, real.
    #[error("unknown engine {name:?}: expected {known}")]
    UnknownEngine {
        /// The name given.
        name: String,
        /// The names there are.
        known: String,
    },
    /// An argument that names no study and no item.
    #[error(
        "{arg:?} names no study and no item of the catalogue: give a study ({studies}), an id \
         such as 003.t1.with_switch, or its leading parts such as 003.t9"
    )]
    NoMatch {
        /// The argument.
        arg: String,
        /// The studies' numbers.
        studies: String,
    },
    /// The built-in catalogue does not parse.
    #[error(transparent)]
    Catalogue(#[from] CatalogueError),
    /// A built-in scenario does not parse.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The built-in figures do not parse.
    #[error(transparent)]
    Figures(#[from] FigureError),
    /// An item names a scenario that is not built in.
    #[error("item {item:?} names scenario {scenario:?}, which is not in scenarios/")]
    NoScenario {
        /// The item.
        item: String,
        /// The scenario it names.
        scenario: String,
    },
}

/// What a repro will do: the items it reports, the scenarios they give and the runs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The items, in catalogue order.
    pub items: Vec<Item>,
    /// The scenarios of the items, parsed, by file stem.
    pub scenarios: Vec<(String, Scenario)>,
    /// Every (scenario, engine) run.
    pub jobs: Vec<Job>,
    /// The arguments and engines as given, for the document's params.
    pub asked: serde_json::Value,
}

/// Picks the items `args` name from `catalogue` and the runs their scenarios need on the
/// engines of `choice`.
pub fn plan(
    catalogue: &Catalogue,
    args: &[String],
    choice: &EngineChoice,
) -> Result<Plan, ReproError> {
    let items = select::items(catalogue, args)?;
    let jobs = select::jobs(&items, choice);
    let mut scenarios: Vec<(String, Scenario)> = Vec::new();
    for item in &items {
        let Some(stem) = item.scenario.as_deref() else {
            continue;
        };
        if scenarios.iter().any(|(s, _)| s == stem) {
            continue;
        }
        let parsed = bundled::scenario(stem).ok_or_else(|| ReproError::NoScenario {
            item: item.id.clone(),
            scenario: stem.to_string(),
        })??;
        scenarios.push((stem.to_string(), parsed));
    }
    let engines: Vec<&str> = match choice {
        EngineChoice::Available { emu } => ENGINES
            .iter()
            .copied()
            .filter(|e| *e != "emu" || *emu)
            .collect(),
        EngineChoice::Only(list) => list.clone(),
    };
    Ok(Plan {
        items: items.into_iter().cloned().collect(),
        scenarios,
        jobs,
        asked: json!({ "args": args, "engines": engines }),
    })
}

/// Runs the plan's jobs (calling `done` after each, from any thread) and gives every item its
/// sample and verdict: the `repro` document.
pub fn run(plan: &Plan, figures: &Figures, done: &(dyn Fn(&Job, f64) + Sync)) -> ResultDoc {
    let start = Instant::now();
    let load_before = load_average();
    let outcomes = run::execute(&plan.jobs, &plan.scenarios, done);
    let wall_s = start.elapsed().as_secs_f64();
    let mut times: Vec<EngineTime> = Vec::new();
    for o in &outcomes {
        match times.iter_mut().find(|t| t.engine == o.engine) {
            Some(t) => {
                t.scenarios += 1;
                t.busy_s += o.seconds;
            }
            None => times.push(EngineTime {
                engine: o.engine.to_string(),
                scenarios: 1,
                busy_s: o.seconds,
            }),
        }
    }
    times.sort_by_key(|t| ENGINES.iter().position(|e| *e == t.engine));
    let mut unavailable: Vec<String> = Vec::new();
    let results: Vec<ScenarioResults<'_>> = plan
        .scenarios
        .iter()
        .map(|(stem, s)| {
            let mut docs = Vec::new();
            let mut failed = Vec::new();
            for o in outcomes.iter().filter(|o| &o.scenario == stem) {
                match &o.doc {
                    Ok(d) => docs.push((o.engine, d.clone())),
                    Err(why) => {
                        let line = format!("{}: {why}", o.engine);
                        if !unavailable.contains(&line) {
                            unavailable.push(line);
                        }
                        failed.push((o.engine, why.clone()));
                    }
                }
            }
            // Results in engine order, whatever order the threads finished in.
            docs.sort_by_key(|(e, _)| ENGINES.iter().position(|x| x == e));
            ScenarioResults::new(stem, s, docs, failed, figures)
        })
        .collect();
    let samples: Vec<ItemSample> = plan
        .items
        .iter()
        .map(|item| {
            let r = item
                .scenario
                .as_deref()
                .and_then(|stem| results.iter().find(|r| r.stem == stem));
            verdict::item_sample(item, figures, r)
        })
        .collect();
    let summary = ReproSummary {
        studies: verdict::summaries(&samples),
        wall_s,
        engines: times,
        load_before,
        load_after: load_average(),
        unavailable,
    };
    let mut doc = ResultDoc::new(KIND, Engine::Mixed);
    doc.params = plan.asked.clone();
    // What each scenario is, for the report's rows.
    let about: serde_json::Map<String, serde_json::Value> = plan
        .scenarios
        .iter()
        .map(|(stem, s)| (stem.clone(), json!(s.description)))
        .collect();
    doc.params["scenarios"] = serde_json::Value::Object(about);
    doc.params["runs"] = json!(plan.jobs.len());
    doc.samples = samples
        .iter()
        .map(|s| serde_json::to_value(s).unwrap_or_default())
        .collect();
    doc.summary = serde_json::to_value(&summary).unwrap_or_default();
    doc
}

/// The one-minute load average (Linux's `/proc/loadavg`), if the system gives it.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests;
