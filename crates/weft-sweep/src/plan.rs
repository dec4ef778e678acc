//! A sweep plan file: what each run executes (a scenario on one engine, or a `weft` command), the
//! grid of parameters and the seeds. Every error names the plan file, line, column and key, like a
//! scenario's.
//!
//! ```toml
//! scenario = "scenarios/ebn-vp26.toml"   # beside the plan, else from the working directory
//! engine = "model"                       # model (default), sim or emu, as in `weft run`
//! seeds = [1, 2, 3]
//! [grid]
//! "workload.0.window" = [35600, 65536, 131072]
//! ```
//! ```toml
//! command = ["sim", "hol"]               # grid keys are the command's flags
//! seeds = { from = 1, to = 5 }
//! seconds_per_run = 0.05                 # a hint for packing Slurm array tasks
//! [grid]
//! ports = { from = 2, to = 16, step = 2 }
//! slots = 200000
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;
use toml::de::{DeTable, DeValue};
use weft_model::scenario::Scenario;

use crate::overrides;
use crate::values::{self, Located};

/// Most runs one plan may expand to.
pub const MAX_RUNS: usize = 1_000_000;

/// The engines a scenario plan may name (those of `weft run`).
pub const ENGINES: &[&str] = &["model", "sim", "emu"];

/// Flags that a sweep sets on every run itself, and that a grid may therefore not set.
const RESERVED_FLAGS: &[&str] = &["seed", "json", "output", "o", "help", "version"];

/// A validated plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The plan file's name as given, for messages.
    pub file: String,
    /// Free text from the plan's `description`.
    pub description: String,
    /// What each run executes.
    pub target: Target,
    /// The seeds each grid point runs with; `None` when the plan gives none, and the runs are
    /// then given no `--seed` (deterministic commands such as `weft calc window`).
    pub seeds: Option<Vec<u64>>,
    /// The grid, in the order of the plan file; the first key varies slowest.
    pub grid: Vec<GridKey>,
    /// The plan's estimate of one run's wall time in seconds, used to pack Slurm array tasks.
    pub seconds_per_run: Option<f64>,
}

/// One key of the grid and its values.
#[derive(Clone, Debug, PartialEq)]
pub struct GridKey {
    /// The key as written: a dotted path into the scenario, or a flag name without dashes.
    pub key: String,
    /// Its values, in order.
    pub values: Vec<Value>,
}

/// What each run of a sweep executes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    /// `weft run FILE --engine ENGINE --seed S --json` on the scenario with the run's overrides.
    Scenario {
        /// Where the scenario was read from (for messages; runs use `text`).
        path: String,
        /// The engine: model, sim or emu.
        engine: String,
        /// The scenario file's text, so that a run needs no access to the original file.
        text: String,
    },
    /// `weft WORDS... --FLAG VALUE... --seed S --json`.
    Command {
        /// The command words after `weft`, e.g. `["sim", "hol"]`.
        words: Vec<String>,
    },
}

/// A flag of a `weft` command, as the command line defines it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flag {
    /// Its long name without dashes (`frame-cells`).
    pub long: String,
    /// Whether it takes a value (`--ports 4`) or is a switch (`--frames`).
    pub takes_value: bool,
}

/// What a plan's `command` is checked against: the `weft` command line.
pub trait Commands {
    /// The flags of `weft WORDS...`, or why `WORDS` is not a command; `None` when the flags
    /// cannot be known, and any flag is then accepted.
    fn flags(&self, words: &[String]) -> Result<Option<Vec<Flag>>, String>;
}

/// Accepts every command and treats every flag as taking a value: for tests and tools that do
/// not have the `weft` command line at hand.
pub struct AnyCommand;

impl Commands for AnyCommand {
    fn flags(&self, _words: &[String]) -> Result<Option<Vec<Flag>>, String> {
        Ok(None)
    }
}

/// Why a plan was refused.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The plan file could not be read.
    #[error("cannot read plan {path}: {source}")]
    Read {
        /// The plan file.
        path: String,
        /// The error from the operating system.
        source: std::io::Error,
    },
    /// Something in the plan is wrong.
    #[error("{file}:{line}:{column}: {key}: {message}")]
    At {
        /// The plan file.
        file: String,
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// The key (`grid.ports`), or `(document)`.
        key: String,
        /// What was wrong and what was expected.
        message: String,
    },
}

impl Plan {
    /// Reads and validates the plan at `path`; a relative scenario path is looked up beside the
    /// plan first, then in the working directory.
    pub fn load(path: &Path, commands: &dyn Commands) -> Result<Plan, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|source| PlanError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Plan::parse(&text, &path.display().to_string(), base, commands)
    }

    /// Validates plan `text`; `file` names it in errors, `base` is where a relative scenario path
    /// is looked up first.
    pub fn parse(
        text: &str,
        file: &str,
        base: &Path,
        commands: &dyn Commands,
    ) -> Result<Plan, PlanError> {
        let cx = Cx { text, file };
        let doc = DeTable::parse(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            cx.err(
                span,
                "(document)",
                format!("not valid TOML: {}", e.message().trim()),
            )
        })?;
        let root = doc.get_ref();
        for (k, _) in root.iter() {
            if !matches!(
                k.get_ref().as_ref(),
                "scenario"
                    | "command"
                    | "engine"
                    | "seeds"
                    | "grid"
                    | "seconds_per_run"
                    | "description"
            ) {
                return Err(cx.err(
                    k.span(),
                    k.get_ref(),
                    "unknown key; expected scenario or command, engine, seeds, grid, \
                     seconds_per_run, description",
                ));
            }
        }
        let description = match root.get("description") {
            None => String::new(),
            Some(v) => v
                .get_ref()
                .as_str()
                .ok_or_else(|| cx.err(v.span(), "description", "expected a string"))?
                .to_string(),
        };
        let seeds = root
            .get("seeds")
            .map(values::seeds)
            .transpose()
            .map_err(|l| cx.at(l, "seeds"))?;
        let seconds_per_run = match root.get("seconds_per_run") {
            None => None,
            Some(v) => Some(
                values::number(v.get_ref())
                    .and_then(|n| n.as_f64())
                    .filter(|s| *s > 0.0)
                    .ok_or_else(|| cx.err(v.span(), "seconds_per_run", "expected seconds > 0"))?,
            ),
        };
        let target = target(&cx, root, base, commands, seeds.is_some())?;
        let grid = grid(&cx, root, &target, commands)?;
        let points = grid
            .iter()
            .try_fold(1usize, |n, g| n.checked_mul(g.values.len()));
        let runs = points.and_then(|p| p.checked_mul(seeds.as_ref().map_or(1, Vec::len)));
        if runs.is_none_or(|r| r > MAX_RUNS) {
            let span = root.get("grid").map_or(0..0, Spanned::span);
            return Err(cx.err(
                span,
                "grid",
                format!("the grid and seeds expand to more than {MAX_RUNS} runs"),
            ));
        }
        Ok(Plan {
            file: file.to_string(),
            description,
            target,
            seeds,
            grid,
            seconds_per_run,
        })
    }

    /// How many runs the plan expands to.
    pub fn run_count(&self) -> usize {
        let points: usize = self.grid.iter().map(|g| g.values.len()).product();
        points * self.seeds.as_ref().map_or(1, Vec::len)
    }

    /// The grid keys, in plan order.
    pub fn keys(&self) -> Vec<String> {
        self.grid.iter().map(|g| g.key.clone()).collect()
    }
}

/// The plan text and its name, for locating errors.
struct Cx<'a> {
    text: &'a str,
    file: &'a str,
}

impl Cx<'_> {
    fn err(&self, span: Range<usize>, key: &str, message: impl Into<String>) -> PlanError {
        let (line, column) = line_column(self.text, span.start);
        PlanError::At {
            file: self.file.to_string(),
            line,
            column,
            key: key.to_string(),
            message: message.into(),
        }
    }

    fn at(&self, (span, message): Located, key: &str) -> PlanError {
        self.err(span, key, message)
    }
}

/// Line and column (both from 1, the column in characters) of byte offset `at` in `text`.
pub fn line_column(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = text.get(..at).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

fn target(
    cx: &Cx<'_>,
    root: &DeTable<'_>,
    base: &Path,
    commands: &dyn Commands,
    seeded: bool,
) -> Result<Target, PlanError> {
    match (root.get("scenario"), root.get("command")) {
        (Some(_), Some(c)) => Err(cx.err(
            c.span(),
            "command",
            "a plan runs a scenario or a command, not both",
        )),
        (None, None) => Err(cx.err(
            0..0,
            "(document)",
            "missing `scenario = \"FILE\"` or `command = [\"sim\", \"hol\"]`",
        )),
        (Some(s), None) => {
            let given = s
                .get_ref()
                .as_str()
                .ok_or_else(|| cx.err(s.span(), "scenario", "expected a file name (a string)"))?;
            let (path, text) =
                read_scenario(given, base).map_err(|m| cx.err(s.span(), "scenario", m))?;
            let display = path.display().to_string();
            Scenario::parse(&text, &display).map_err(|e| {
                cx.err(
                    s.span(),
                    "scenario",
                    format!("the scenario is invalid: {e}"),
                )
            })?;
            let engine = match root.get("engine") {
                None => "model".to_string(),
                Some(e) => match e.get_ref().as_str() {
                    Some(name) if ENGINES.contains(&name) => name.to_string(),
                    _ => {
                        return Err(cx.err(
                            e.span(),
                            "engine",
                            format!("expected one of {}", ENGINES.join(", ")),
                        ));
                    }
                },
            };
            Ok(Target::Scenario {
                path: display,
                engine,
                text,
            })
        }
        (None, Some(c)) => {
            if let Some(e) = root.get("engine") {
                return Err(cx.err(
                    e.span(),
                    "engine",
                    "`engine` belongs to scenario plans; a command plan sets --engine in its grid",
                ));
            }
            let words: Option<Vec<String>> = c.get_ref().as_array().and_then(|a| {
                a.iter()
                    .map(|w| w.get_ref().as_str().map(str::to_string))
                    .collect()
            });
            let words = words.filter(|w| !w.is_empty()).ok_or_else(|| {
                cx.err(
                    c.span(),
                    "command",
                    "expected a list of words such as [\"sim\", \"hol\"]",
                )
            })?;
            if words.first().is_some_and(|w| w == "sweep") {
                return Err(cx.err(c.span(), "command", "a sweep cannot run sweeps"));
            }
            match commands.flags(&words) {
                Ok(None) => {}
                Ok(Some(flags)) => {
                    let has = |f: &str| flags.iter().any(|x| x.long == f);
                    if !has("json") {
                        return Err(cx.err(
                            c.span(),
                            "command",
                            format!(
                                "`weft {}` writes no result document (it has no --json)",
                                words.join(" ")
                            ),
                        ));
                    }
                    if seeded && !has("seed") {
                        return Err(cx.err(
                            c.span(),
                            "command",
                            format!(
                                "`weft {}` takes no --seed (it draws no random numbers); leave out `seeds`",
                                words.join(" ")
                            ),
                        ));
                    }
                }
                Err(why) => return Err(cx.err(c.span(), "command", why)),
            }
            Ok(Target::Command { words })
        }
    }
}

/// Finds a scenario file: as given if absolute, else beside the plan, else from the working
/// directory.
fn read_scenario(given: &str, base: &Path) -> Result<(PathBuf, String), String> {
    let given_path = Path::new(given);
    let candidates: Vec<PathBuf> = if given_path.is_absolute() {
        vec![given_path.to_path_buf()]
    } else {
        vec![base.join(given_path), given_path.to_path_buf()]
    };
    for c in &candidates {
        if c.is_file() {
            return std::fs::read_to_string(c)
                .map(|t| (c.clone(), t))
                .map_err(|e| format!("cannot read {}: {e}", c.display()));
        }
    }
    let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    Err(format!("no scenario file at {}", tried.join(" or ")))
}

fn grid(
    cx: &Cx<'_>,
    root: &DeTable<'_>,
    target: &Target,
    commands: &dyn Commands,
) -> Result<Vec<GridKey>, PlanError> {
    let Some(g) = root.get("grid") else {
        return Ok(Vec::new());
    };
    let DeValue::Table(table) = g.get_ref() else {
        return Err(cx.err(
            g.span(),
            "grid",
            "expected a table: [grid] with one key per parameter",
        ));
    };
    // Keys in file order (the map is sorted by name).
    let mut entries: Vec<(&Spanned<_>, &Spanned<DeValue<'_>>)> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    let flags = match target {
        Target::Command { words } => commands.flags(words).ok().flatten(),
        Target::Scenario { .. } => None,
    };
    let base_doc = match target {
        Target::Scenario { text, .. } => Some(
            toml::from_str::<toml::Table>(text)
                .map_err(|e| cx.err(0..0, "scenario", format!("cannot read the scenario: {e}")))?,
        ),
        Target::Command { .. } => None,
    };
    let mut out = Vec::new();
    for (k, v) in entries {
        let key = k.get_ref().to_string();
        let name = format!("grid.{}", quoted(&key));
        let values = values::grid_values(v, base_doc.is_some()).map_err(|l| cx.at(l, &name))?;
        if values.len() > values::MAX_VALUES {
            return Err(cx.err(
                v.span(),
                &name,
                format!("more than {} values", values::MAX_VALUES),
            ));
        }
        if let Target::Scenario { path, .. } = target {
            let Some(doc) = &base_doc else { continue };
            for value in &values {
                check_override(doc, path, &key, value).map_err(|m| cx.err(v.span(), &name, m))?;
            }
        } else {
            check_flag(&key, &values, flags.as_deref()).map_err(|m| cx.err(k.span(), &name, m))?;
        }
        out.push(GridKey { key, values });
    }
    Ok(out)
}

/// The key as it reads back in TOML: bare, or quoted when it has dots or other characters.
fn quoted(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

/// Applies one value to the scenario alone and parses the result, so that a key or value the
/// scenario would refuse is reported against the plan, before anything runs.
fn check_override(doc: &toml::Table, path: &str, key: &str, value: &Value) -> Result<(), String> {
    let mut doc = doc.clone();
    overrides::apply(&mut doc, key, value).map_err(|e| e.to_string())?;
    let text = toml::to_string(&doc).map_err(|e| format!("cannot write the scenario: {e}"))?;
    Scenario::parse(&text, path)
        .map(|_| ())
        .map_err(|e| format!("the scenario refuses {value}: {}: {}", e.key, e.message))
}

fn check_flag(key: &str, values: &[Value], flags: Option<&[Flag]>) -> Result<(), String> {
    let long = key.replace('_', "-");
    if RESERVED_FLAGS.contains(&long.as_str()) {
        return Err(format!(
            "--{long} is set by the sweep itself (seeds come from `seeds`)"
        ));
    }
    let Some(flags) = flags else {
        return Ok(());
    };
    let Some(flag) = flags.iter().find(|f| f.long == long) else {
        let known: Vec<&str> = flags
            .iter()
            .map(|f| f.long.as_str())
            .filter(|f| !RESERVED_FLAGS.contains(f) && *f != "quiet")
            .collect();
        return Err(format!(
            "the command has no flag --{long}; it has --{}",
            known.join(", --")
        ));
    };
    for v in values {
        match (v, flag.takes_value) {
            (Value::Bool(_), true) => {
                return Err(format!("--{long} takes a value, not true or false"));
            }
            (Value::Bool(_), false) => {}
            (_, false) => {
                return Err(format!("--{long} is a switch: give true or false"));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
