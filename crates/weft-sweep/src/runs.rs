//! A plan expanded into runs: the cartesian product of the grid (first key slowest) times the
//! seeds (fastest), each run with a stable id.
//!
//! The id is the first 64 bits of a BLAKE3 hash, in hex, of the canonical JSON of what the run
//! executes (the command words, or the scenario's text and the engine), its parameters (keys
//! sorted) and its seed. It does not depend on the plan file's name, on the order of the grid or
//! on the run's place in it: growing a grid keeps the ids, and so the results, of the runs it had.
//! Editing the scenario file changes every id, since the old results no longer answer it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::plan::{Plan, Target};
use crate::store::{self, Record, Status};

/// One run: a grid point and a seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Stable id: 16 hex digits (see the module documentation).
    pub id: String,
    /// The grid point: key -> value.
    pub params: Map<String, Value>,
    /// The seed, or `None` when the plan gives no seeds.
    pub seed: Option<u64>,
}

/// Every run of a plan with what they execute: what a sweep directory's `plan.json` and a Slurm
/// submission's `job.json` hold, so that a run can be executed from it alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunList {
    /// The plan file it came from, for messages.
    pub plan: String,
    /// What each run executes.
    pub target: Target,
    /// The grid keys in plan order (the table's parameter columns).
    pub keys: Vec<String>,
    /// The runs, in plan order.
    pub runs: Vec<Run>,
}

impl Plan {
    /// Every run of the plan, in order.
    pub fn expand(&self) -> RunList {
        let mut points: Vec<Map<String, Value>> = vec![Map::new()];
        for g in &self.grid {
            points = points
                .into_iter()
                .flat_map(|p| {
                    g.values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.insert(g.key.clone(), v.clone());
                        q
                    })
                })
                .collect();
        }
        let seeds: Vec<Option<u64>> = match &self.seeds {
            Some(s) => s.iter().copied().map(Some).collect(),
            None => vec![None],
        };
        let identity = self.target.identity();
        let runs = points
            .iter()
            .flat_map(|p| {
                seeds.iter().map(|&seed| Run {
                    id: run_id(&identity, p, seed),
                    params: p.clone(),
                    seed,
                })
            })
            .collect();
        RunList {
            plan: self.file.clone(),
            target: self.target.clone(),
            keys: self.keys(),
            runs,
        }
    }
}

impl RunList {
    /// The runs that no record settles: those without an ok record, and without a failed one
    /// unless `retry_failed`.
    pub fn pending(&self, records: &[Record], retry_failed: bool) -> Vec<Run> {
        let best = store::by_id(records);
        self.runs
            .iter()
            .filter(|r| match best.get(r.id.as_str()) {
                None => true,
                Some(rec) => rec.status == Status::Failed && retry_failed,
            })
            .cloned()
            .collect()
    }
}

impl Plan {
    /// The grid's shape for messages: `40 points x 5 seeds`.
    pub fn shape(&self) -> String {
        let points: usize = self.grid.iter().map(|g| g.values.len()).product();
        match &self.seeds {
            Some(s) => format!("{points} points x {} seeds", s.len()),
            None => format!("{points} points"),
        }
    }
}

impl Target {
    /// What the runs execute, as it enters their ids: the command words, or the scenario text's
    /// BLAKE3 hash and the engine (not the file's path, so that moving it keeps the ids).
    pub fn identity(&self) -> Value {
        match self {
            Target::Command { words } => json!({ "command": words }),
            Target::Scenario { engine, text, .. } => json!({
                "scenario_blake3": blake3::hash(text.as_bytes()).to_hex().to_string(),
                "engine": engine,
            }),
        }
    }

    /// A short description for messages: `weft sim hol` or `scenario ebn-vp26.toml on model`.
    pub fn describe(&self) -> String {
        match self {
            Target::Command { words } => format!("weft {}", words.join(" ")),
            Target::Scenario { path, engine, .. } => format!("{path} on {engine}"),
        }
    }
}

/// The id of a run of `identity` with `params` and `seed`.
pub fn run_id(identity: &Value, params: &Map<String, Value>, seed: Option<u64>) -> String {
    // serde_json's map is sorted by key, so this text is canonical.
    let canonical =
        json!({ "v": 1, "target": identity, "params": params, "seed": seed }).to_string();
    let hash = blake3::hash(canonical.as_bytes());
    hash.to_hex().chars().take(16).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{AnyCommand, Plan};
    use std::path::Path;

    fn plan(text: &str) -> Plan {
        Plan::parse(text, "p.toml", Path::new("."), &AnyCommand).unwrap()
    }

    #[test]
    fn expands_grid_times_seeds_with_stable_ids() {
        let p = plan(
            "command = [\"sim\", \"hol\"]\nseeds = [1, 2]\n[grid]\nports = [2, 4, 8]\nslots = 1000\n",
        );
        let list = p.expand();
        assert_eq!(list.runs.len(), 6);
        assert_eq!(list.keys, vec!["ports", "slots"]);
        assert_eq!(list.runs[0].params["ports"], json!(2));
        assert_eq!(list.runs[1].seed, Some(2));
        assert_eq!(list.runs[2].params["ports"], json!(4));
        let mut ids: Vec<&str> = list.runs.iter().map(|r| r.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 6);
        assert!(list.runs.iter().all(|r| r.id.len() == 16));
        // The same run in a grown and reordered grid keeps its id.
        let q = plan(
            "command = [\"sim\", \"hol\"]\nseeds = [2, 1, 3]\n[grid]\nslots = 1000\nports = [8, 4, 2, 16]\n",
        );
        let grown = q.expand();
        for r in &list.runs {
            assert!(
                grown
                    .runs
                    .iter()
                    .any(|g| g.id == r.id && g.params == r.params)
            );
        }
        // Another command gives other ids.
        let c = plan(
            "command = [\"sim\", \"oq\"]\nseeds = [1, 2]\n[grid]\nports = [2, 4, 8]\nslots = 1000\n",
        );
        assert!(
            c.expand()
                .runs
                .iter()
                .all(|r| !ids.contains(&r.id.as_str()))
        );
    }

    #[test]
    fn pending_leaves_out_settled_runs() {
        let list = plan("command = [\"sim\", \"hol\"]\nseeds = [1, 2, 3]\n").expand();
        let rec = |r: &Run, status| Record {
            id: r.id.clone(),
            params: r.params.clone(),
            seed: r.seed,
            status,
            result: None,
            error: None,
            elapsed_s: 0.0,
        };
        let records = vec![
            rec(&list.runs[0], Status::Ok),
            rec(&list.runs[1], Status::Failed),
        ];
        let ids = |v: Vec<Run>| v.into_iter().map(|r| r.seed).collect::<Vec<_>>();
        assert_eq!(ids(list.pending(&records, false)), [Some(3)]);
        assert_eq!(ids(list.pending(&records, true)), [Some(2), Some(3)]);
        assert_eq!(
            plan("command = [\"sim\", \"hol\"]\nseeds = [1, 2, 3]\n[grid]\nports = [2, 4]\n")
                .shape(),
            "2 points x 3 seeds"
        );
    }

    #[test]
    fn no_grid_and_no_seeds_is_one_run() {
        let list = plan("command = [\"calc\", \"techs\"]\n").expand();
        assert_eq!(list.runs.len(), 1);
        assert_eq!(list.runs[0].seed, None);
    }
}
