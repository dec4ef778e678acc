//! Running the jobs of a repro: model and sim on every core (rayon), then emu and real one at a
//! time (both measure wall-clock time, which other work beside them would distort). Each
//! scenario runs once per engine however many items it holds.

use std::time::Instant;

use rayon::prelude::*;
use weft_model::scenario::Scenario;
use weft_report::ResultDoc;

use super::real::{self, LocalAgent};
use super::select::Job;
use crate::engines::{RunCtx, lookup};

/// What one job gave.
#[derive(Debug)]
pub struct Outcome {
    /// The scenario's file stem.
    pub scenario: String,
    /// The engine.
    pub engine: &'static str,
    /// Its result document, or why it could not run.
    pub doc: Result<ResultDoc, String>,
    /// Seconds it took.
    pub seconds: f64,
}

/// Runs every job on the scenarios given (file stem, parsed), calling `done` after each with the
/// job and its seconds (from several threads at once for model and sim).
pub fn execute(
    jobs: &[Job],
    scenarios: &[(String, Scenario)],
    done: &(dyn Fn(&Job, f64) + Sync),
) -> Vec<Outcome> {
    let find = |stem: &str| scenarios.iter().find(|(s, _)| s == stem).map(|(_, s)| s);
    let one = |job: &Job, agent: Option<&LocalAgent>| -> Outcome {
        let start = Instant::now();
        let doc = match find(&job.scenario) {
            None => Err(format!("no scenario {:?} is built in", job.scenario)),
            Some(s) => guarded(|| run_one(s, job.engine, agent)),
        };
        let seconds = start.elapsed().as_secs_f64();
        done(job, seconds);
        Outcome {
            scenario: job.scenario.clone(),
            engine: job.engine,
            doc,
            seconds,
        }
    };
    let (parallel, serial): (Vec<&Job>, Vec<&Job>) = jobs
        .iter()
        .partition(|j| matches!(j.engine, "model" | "sim"));
    // The simulator's runs are the long ones: start them first so that the last to finish is
    // not a long one started late.
    let mut parallel = parallel;
    parallel.sort_by_key(|j| j.engine != "sim");
    let mut out: Vec<Outcome> = parallel.par_iter().map(|j| one(j, None)).collect();
    let needs_agent = serial.iter().any(|j| j.engine == "real");
    let agent = needs_agent.then(LocalAgent::start);
    for j in serial {
        let outcome = match (&agent, j.engine) {
            (Some(Err(e)), "real") => {
                done(j, 0.0);
                Outcome {
                    scenario: j.scenario.clone(),
                    engine: j.engine,
                    doc: Err(e.clone()),
                    seconds: 0.0,
                }
            }
            (Some(Ok(a)), _) => one(j, Some(a)),
            _ => one(j, None),
        };
        out.push(outcome);
    }
    out
}

fn run_one(s: &Scenario, engine: &str, agent: Option<&LocalAgent>) -> Result<ResultDoc, String> {
    if engine == "real" {
        return match agent {
            Some(a) => Ok(real::run(s, a.addr())),
            None => Err("no local agent".into()),
        };
    }
    let (_, f) = lookup(engine).map_err(|e| e.to_string())?;
    let ctx = RunCtx {
        scenario: s,
        seed: s.seed,
        chatty: false,
        capture: None,
    };
    f(&ctx).map_err(|e| e.to_string())
}

/// Runs `f`, turning a panic into an error: one engine's bug must not take the other
/// scenarios' results down with it.
fn guarded(f: impl FnOnce() -> Result<ResultDoc, String>) -> Result<ResultDoc, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        Err(format!("the engine panicked: {why}"))
    })
}
