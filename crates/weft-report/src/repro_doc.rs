//! The layout of `weft repro`'s result document: kind [`KIND`], engine `mixed`, one
//! [`ItemSample`] per catalogue item in `samples` (paper, model, sim, emu and real side by side,
//! null where not run), and a [`ReproSummary`] in `summary`. `weft-run` writes it; the HTML
//! report (`weft report`) reads it back from any file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::schema::ResultDoc;

/// The document kind of a `weft repro` result.
pub const KIND: &str = "repro";

/// The engines of a sample's columns, in column order.
pub const ENGINES: [&str; 4] = ["model", "sim", "emu", "real"];

/// What became of an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Predicted, and within tolerance on every engine the item holds that ran.
    Reproduced,
    /// Predicted, and outside tolerance on an engine it holds.
    Missed,
    /// A parameter was fitted to this figure: shown, never counted as reproduced.
    Fitted,
    /// The figure is a parameter of the scenario.
    Input,
    /// Qualitative: the check held on every engine the item holds that answered.
    Held,
    /// Qualitative: the check failed on an engine the item holds.
    Failed,
    /// A measuring method, re-run by `real` on loopback: the value is the user's.
    Method,
    /// No engine reproduces it yet.
    Missing,
    /// None of the engines the item holds ran (emu without root, an engine not asked for,
    /// an engine that failed), or its scenario does not give it a value.
    NotRun,
}

impl Verdict {
    /// The name printed in tables and used in the document.
    pub const fn name(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Missed => "missed",
            Verdict::Fitted => "fitted",
            Verdict::Input => "input",
            Verdict::Held => "held",
            Verdict::Failed => "failed",
            Verdict::Method => "method",
            Verdict::Missing => "missing",
            Verdict::NotRun => "not-run",
        }
    }

    /// Every verdict, in the order summaries list them.
    pub const ALL: [Verdict; 9] = [
        Verdict::Reproduced,
        Verdict::Missed,
        Verdict::Fitted,
        Verdict::Input,
        Verdict::Held,
        Verdict::Failed,
        Verdict::Method,
        Verdict::Missing,
        Verdict::NotRun,
    ];
}

/// One value a method's re-run measured (`real` on loopback).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Which workload point and metric (`rtt_mean_us @ w1 size=64`).
    pub label: String,
    /// The value, in the metric's unit (its name's suffix).
    pub value: f64,
}

/// One catalogue item with what every engine gave for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ItemSample {
    /// The study's number, `000` to `004`.
    pub study: String,
    /// The catalogue id.
    pub item: String,
    /// The figures key of the published value.
    pub source: Option<String>,
    /// The element of a list-valued figure, if it is one.
    #[serde(default)]
    pub index: Option<usize>,
    /// The catalogue kind: predicted, fitted, input, qualitative, method or missing.
    pub kind: String,
    /// The published value, in `unit`.
    pub paper: Option<f64>,
    /// The closed-form model's value (for a qualitative item: the ratio or bounded value).
    pub model: Option<f64>,
    /// The simulator's value.
    pub sim: Option<f64>,
    /// The emulator's value.
    pub emu: Option<f64>,
    /// The value measured on loopback.
    pub real: Option<f64>,
    /// The largest relative miss counted as reproduced.
    pub tolerance: Option<f64>,
    /// What became of the item.
    pub verdict: Verdict,
    /// Relative miss per engine, (value - paper) / |paper|.
    #[serde(default)]
    pub miss: BTreeMap<String, f64>,
    /// Qualitative: whether the check held, per engine that answered.
    #[serde(default)]
    pub held: BTreeMap<String, bool>,
    /// The engines the item is held to.
    #[serde(default)]
    pub engines: Vec<String>,
    /// The engines that ran its scenario.
    #[serde(default)]
    pub ran: Vec<String>,
    /// Why: the miss's cause, what was fitted, which parameter, what is missing, or why it did
    /// not run.
    #[serde(default)]
    pub reason: String,
    /// Missing only: the capability it waits for.
    #[serde(default)]
    pub waits_for: String,
    /// Where in the text (section, table, figure).
    #[serde(default, rename = "where")]
    pub location: String,
    /// What was measured.
    #[serde(default)]
    pub what: String,
    /// The unit of `paper` and the engines' values.
    #[serde(default)]
    pub unit: String,
    /// The conditions of the measurement.
    #[serde(default)]
    pub conditions: String,
    /// The scenario behind the row (a file stem of `scenarios/`).
    #[serde(default)]
    pub scenario: Option<String>,
    /// The workload point of the row (`w0 inputs=3`).
    #[serde(default)]
    pub point: Option<String>,
    /// The swept value of the point, in its base unit, if the workload sweeps one.
    #[serde(default)]
    pub x: Option<f64>,
    /// The message size of the point, bytes, if its workload has one.
    #[serde(default)]
    pub size_bytes: Option<f64>,
    /// The line the point belongs to in a figure against message size: the scenario, the
    /// transport and the hosts (`nasa-fig8-taxi udp lace1-lace2`); rows of one line differ only
    /// in size.
    #[serde(default)]
    pub series: Option<String>,
    /// The sample key compared.
    #[serde(default)]
    pub metric: Option<String>,
    /// Qualitative: the check as written.
    #[serde(default)]
    pub check: Option<String>,
    /// Method: what the re-run measured.
    #[serde(default)]
    pub measured: Vec<Measured>,
}

impl ItemSample {
    /// The value of engine `name` (one of [`ENGINES`]).
    pub fn value(&self, name: &str) -> Option<f64> {
        match name {
            "model" => self.model,
            "sim" => self.sim,
            "emu" => self.emu,
            "real" => self.real,
            _ => None,
        }
    }

    /// The miss of largest magnitude among the engines the item is held to (all engines if
    /// it names none), signed.
    pub fn worst_miss(&self) -> Option<f64> {
        self.miss
            .iter()
            .filter(|(e, _)| self.engines.is_empty() || self.engines.contains(e))
            .map(|(_, m)| *m)
            .max_by(|a, b| a.abs().total_cmp(&b.abs()))
    }
}

/// One study's count of items per verdict.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StudySummary {
    /// The study's number.
    pub study: String,
    /// Its short name.
    pub name: String,
    /// Items per verdict (verdict names as keys; absent means none).
    pub counts: BTreeMap<Verdict, usize>,
}

impl StudySummary {
    /// Items with this verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.counts.get(&v).copied().unwrap_or(0)
    }

    /// Items in the study.
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }

    /// The one-line summary: `12 reproduced, 3 missed, 1 fitted, 2 input, 4 qualitative (3
    /// held, 1 failed), 1 method, 30 missing` (and `, 2 not run` when some did not run).
    pub fn line(&self) -> String {
        let c = |v| self.count(v);
        let mut out = format!(
            "{} reproduced, {} missed, {} fitted, {} input, {} qualitative ({} held, {} failed), {} method, {} missing",
            c(Verdict::Reproduced),
            c(Verdict::Missed),
            c(Verdict::Fitted),
            c(Verdict::Input),
            c(Verdict::Held) + c(Verdict::Failed),
            c(Verdict::Held),
            c(Verdict::Failed),
            c(Verdict::Method),
            c(Verdict::Missing),
        );
        if c(Verdict::NotRun) > 0 {
            out.push_str(&format!(", {} not run", c(Verdict::NotRun)));
        }
        out
    }
}

/// How long an engine took over all its scenarios.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineTime {
    /// Engine name.
    pub engine: String,
    /// Scenarios it ran.
    pub scenarios: usize,
    /// Seconds of work summed over its scenarios (runs overlap on several cores).
    pub busy_s: f64,
}

/// The `summary` of a repro document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReproSummary {
    /// Per study, in study order.
    pub studies: Vec<StudySummary>,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
    /// Per engine that ran.
    #[serde(default)]
    pub engines: Vec<EngineTime>,
    /// The one-minute load average before and after the run (Linux's `/proc/loadavg`).
    #[serde(default)]
    pub load_before: Option<f64>,
    /// The one-minute load average after the run.
    #[serde(default)]
    pub load_after: Option<f64>,
    /// Engines that could not run, with the reason (`emu: needs root`).
    #[serde(default)]
    pub unavailable: Vec<String>,
}

/// The repro document's items and summary, read back from a [`ResultDoc`].
pub fn read(doc: &ResultDoc) -> Result<(Vec<ItemSample>, ReproSummary), serde_json::Error> {
    let items = doc
        .samples
        .iter()
        .map(|s| serde_json::from_value(s.clone()))
        .collect::<Result<Vec<ItemSample>, _>>()?;
    let summary = serde_json::from_value(doc.summary.clone())?;
    Ok((items, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_line_counts_qualitative_items_once() {
        let mut s = StudySummary::default();
        s.counts.insert(Verdict::Reproduced, 3);
        s.counts.insert(Verdict::Held, 2);
        s.counts.insert(Verdict::Failed, 1);
        s.counts.insert(Verdict::Missing, 7);
        assert_eq!(
            s.line(),
            "3 reproduced, 0 missed, 0 fitted, 0 input, 3 qualitative (2 held, 1 failed), 0 method, 7 missing"
        );
        assert_eq!(s.total(), 13);
        s.counts.insert(Verdict::NotRun, 2);
        assert!(s.line().ends_with(", 2 not run"));
        let text = serde_json::to_string(&s).unwrap_or_default();
        assert!(text.contains("\"not-run\":2"), "{text}");
        let back: StudySummary = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, s);
    }
}
