//! One run as a `weft` subprocess. Running the binary itself, rather than calling the engines in
//! process, makes a run the same thing on this machine and in a Slurm array task, keeps a crash
//! or a runaway run inside its own process, and lets a sweep run any command that has `--json`.

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use serde_json::Value;

use crate::overrides;
use crate::plan::Target;
use crate::runs::Run;
use crate::store::{Record, Status};

/// How much of a failed run's stderr its record keeps (the end of it), bytes.
pub const STDERR_KEPT: usize = 4000;

/// The arguments of one run, and the scenario file they name (deleted when this is dropped).
#[derive(Debug)]
pub struct Invocation {
    /// The arguments after `weft`.
    pub args: Vec<String>,
    _scenario: Option<tempfile::NamedTempFile>,
}

/// The command line of `run` of `target`, writing its scenario with the run's overrides to a
/// temporary file for a scenario plan.
pub fn invocation(target: &Target, run: &Run) -> Result<Invocation, String> {
    match target {
        Target::Command { words } => {
            let mut args = words.clone();
            for (k, v) in &run.params {
                let flag = format!("--{}", k.replace('_', "-"));
                match v {
                    Value::Bool(true) => args.push(flag),
                    Value::Bool(false) => {}
                    Value::String(s) => args.extend([flag, s.clone()]),
                    Value::Number(n) => args.extend([flag, n.to_string()]),
                    other => return Err(format!("--{k}: a flag cannot take {other}")),
                }
            }
            push_seed_json(&mut args, run.seed);
            Ok(Invocation {
                args,
                _scenario: None,
            })
        }
        Target::Scenario { engine, text, .. } => {
            let text = scenario_text(text, run)?;
            let mut file = tempfile::Builder::new()
                .prefix("weft-sweep-")
                .suffix(".toml")
                .tempfile()
                .map_err(|e| format!("cannot write a temporary scenario file: {e}"))?;
            std::io::Write::write_all(&mut file, text.as_bytes())
                .map_err(|e| format!("cannot write a temporary scenario file: {e}"))?;
            let mut args = vec![
                "run".to_string(),
                file.path().display().to_string(),
                "--engine".to_string(),
                engine.clone(),
            ];
            push_seed_json(&mut args, run.seed);
            Ok(Invocation {
                args,
                _scenario: Some(file),
            })
        }
    }
}

fn push_seed_json(args: &mut Vec<String>, seed: Option<u64>) {
    if let Some(s) = seed {
        args.extend(["--seed".to_string(), s.to_string()]);
    }
    args.push("--json".to_string());
}

/// The scenario text with the run's parameters applied.
pub fn scenario_text(base: &str, run: &Run) -> Result<String, String> {
    let mut doc: toml::Table =
        toml::from_str(base).map_err(|e| format!("cannot read the scenario: {e}"))?;
    for (k, v) in &run.params {
        overrides::apply(&mut doc, k, v).map_err(|e| e.to_string())?;
    }
    toml::to_string(&doc).map_err(|e| format!("cannot write the scenario: {e}"))
}

/// Runs `run` with the `weft` binary at `exe` and returns its record, or `None` when the run was
/// interrupted: it failed after `stopping()` became true (a Ctrl-C reaches the whole process
/// group, and a run either dies of it or, like the emulator, tidies up and exits 1), so it is left
/// to run again rather than recorded as failed.
pub fn execute(
    exe: &Path,
    target: &Target,
    run: &Run,
    stopping: &dyn Fn() -> bool,
) -> Option<Record> {
    let start = Instant::now();
    let outcome = execute_inner(exe, target, run);
    let elapsed_s = start.elapsed().as_secs_f64();
    let (status, result, error) = match outcome {
        Ok(doc) => (Status::Ok, Some(doc), None),
        Err(_) if stopping() => return None,
        Err(f) => (Status::Failed, None, Some(f.to_string())),
    };
    Some(Record {
        id: run.id.clone(),
        params: run.params.clone(),
        seed: run.seed,
        status,
        result,
        error,
        elapsed_s,
    })
}

enum Failure {
    Start(String),
    Signal(i32),
    Exit(ExitStatus, String),
    Output(String, String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Start(e) => write!(f, "{e}"),
            Failure::Signal(s) => write!(f, "killed by signal {s}"),
            Failure::Exit(st, err) => write!(f, "{st}: {err}"),
            Failure::Output(why, err) if err.is_empty() => write!(f, "{why}"),
            Failure::Output(why, err) => write!(f, "{why}; stderr: {err}"),
        }
    }
}

fn execute_inner(exe: &Path, target: &Target, run: &Run) -> Result<Value, Failure> {
    let inv = invocation(target, run).map_err(Failure::Start)?;
    let out = Command::new(exe)
        .args(&inv.args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Failure::Start(format!("cannot start {}: {e}", exe.display())))?;
    let stderr = tail(&out.stderr);
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&out.status) {
        return Err(Failure::Signal(sig));
    }
    if !out.status.success() {
        return Err(Failure::Exit(out.status, stderr));
    }
    match serde_json::from_slice::<Value>(&out.stdout) {
        Ok(doc) if doc.get("kind").is_some() => Ok(doc),
        Ok(_) => Err(Failure::Output(
            "printed JSON that is not a result document".into(),
            stderr,
        )),
        Err(e) => Err(Failure::Output(
            format!("printed no result document ({e})"),
            stderr,
        )),
    }
}

/// The end of a run's stderr, as text.
fn tail(bytes: &[u8]) -> String {
    let from = bytes.len().saturating_sub(STDERR_KEPT);
    let text = String::from_utf8_lossy(bytes.get(from..).unwrap_or_default());
    text.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    fn run(params: Value, seed: Option<u64>) -> Run {
        let params: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
        Run {
            id: "x".into(),
            params,
            seed,
        }
    }

    #[test]
    fn command_runs_get_flags_seed_and_json() {
        let t = Target::Command {
            words: vec!["sim".into(), "many-to-one".into()],
        };
        let inv = invocation(&t, &run(json!({ "frames": true, "out_rate": "1Gbps", "hosts": 3, "load": 0.5, "quiet": false }), Some(7))).unwrap();
        assert_eq!(
            inv.args,
            [
                "sim",
                "many-to-one",
                "--frames",
                "--hosts",
                "3",
                "--load",
                "0.5",
                "--out-rate",
                "1Gbps",
                "--seed",
                "7",
                "--json"
            ]
        );
        let inv = invocation(&t, &run(json!({}), None)).unwrap();
        assert_eq!(inv.args, ["sim", "many-to-one", "--json"]);
    }

    #[test]
    fn scenario_runs_write_the_overridden_scenario() {
        let t = Target::Scenario {
            path: "s.toml".into(),
            engine: "sim".into(),
            text: "name = \"s\"\n[[workload]]\nkind = \"saturated\"\nports = [1, 2]\n".into(),
        };
        let inv = invocation(&t, &run(json!({ "workload.0.ports": 4 }), Some(3))).unwrap();
        assert_eq!(inv.args[0], "run");
        assert_eq!(&inv.args[2..], ["--engine", "sim", "--seed", "3", "--json"]);
        let written = std::fs::read_to_string(&inv.args[1]).unwrap();
        let doc: toml::Table = toml::from_str(&written).unwrap();
        assert_eq!(doc["workload"][0]["ports"].as_integer(), Some(4));
        let path = inv.args[1].clone();
        drop(inv);
        assert!(!Path::new(&path).exists());
    }

    #[test]
    fn a_missing_binary_is_a_failed_run() {
        let t = Target::Command {
            words: vec!["sim".into()],
        };
        let r = execute(
            Path::new("/nonexistent/weft"),
            &t,
            &run(json!({}), None),
            &|| false,
        )
        .unwrap();
        assert_eq!(r.status, Status::Failed);
        assert!(r.error.unwrap().contains("cannot start"));
    }
}
