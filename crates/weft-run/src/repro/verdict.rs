//! From the engines' results to one [`ItemSample`] per catalogue item: the row or check of its
//! scenario that names it, the paper's value and each engine's, the misses, and the verdict by
//! the item's kind (`data/README.md`).

use std::collections::BTreeMap;

use weft_model::scenario::{CheckResult, Comparison, Figures, Row, Scenario};
use weft_report::ResultDoc;
use weft_report::repro_doc::{ItemSample, Measured, StudySummary, Verdict};

use crate::catalogue::{Item, Kind, STUDIES};

/// One scenario's results: its documents per engine that ran, the engines that could not and
/// why, and the comparisons and checks over those documents.
pub struct ScenarioResults<'a> {
    /// The scenario's file stem.
    pub stem: &'a str,
    /// The parsed scenario.
    pub scenario: &'a Scenario,
    /// (engine, document) of every engine that ran it.
    pub docs: Vec<(&'static str, ResultDoc)>,
    /// (engine, why) of every engine that was asked and could not run it.
    pub failed: Vec<(&'static str, String)>,
    /// The comparisons with the figures.
    pub comparisons: Vec<Comparison>,
    /// The checks.
    pub checks: Vec<CheckResult>,
}

impl<'a> ScenarioResults<'a> {
    /// Compares and checks the documents of `scenario`.
    pub fn new(
        stem: &'a str,
        scenario: &'a Scenario,
        docs: Vec<(&'static str, ResultDoc)>,
        failed: Vec<(&'static str, String)>,
        figures: &Figures,
    ) -> ScenarioResults<'a> {
        let comparisons = if scenario.expect.is_empty() {
            Vec::new()
        } else {
            crate::compare(scenario, &docs, Some(figures))
        };
        let checks = crate::checks(scenario, &docs);
        ScenarioResults {
            stem,
            scenario,
            docs,
            failed,
            comparisons,
            checks,
        }
    }

    /// The row that names `id`, with its comparison and index.
    fn row(&self, id: &str) -> Option<(&Comparison, usize, &Row)> {
        self.comparisons.iter().find_map(|c| {
            c.rows
                .iter()
                .enumerate()
                .find(|(_, r)| r.item.as_deref() == Some(id))
                .map(|(i, r)| (c, i, r))
        })
    }

    fn ran(&self) -> Vec<String> {
        self.docs.iter().map(|(e, _)| e.to_string()).collect()
    }
}

/// The sample of one item, given the results of its scenario (none for `missing` items and
/// for items whose scenario was not run).
pub fn item_sample(
    item: &Item,
    figures: &Figures,
    results: Option<&ScenarioResults<'_>>,
) -> ItemSample {
    let paper = item.source.as_deref().and_then(|src| {
        let all = figures.numbers(src).ok()?;
        match item.index {
            Some(k) => all.get(k).copied(),
            None if all.len() == 1 => all.first().copied(),
            None => None,
        }
    });
    let mut out = ItemSample {
        study: item.study.clone(),
        item: item.id.clone(),
        source: item.source.clone(),
        index: item.index,
        kind: item.kind.name().to_string(),
        paper,
        model: None,
        sim: None,
        emu: None,
        real: None,
        tolerance: item.tolerance,
        verdict: Verdict::NotRun,
        miss: BTreeMap::new(),
        held: BTreeMap::new(),
        engines: item.engines.clone(),
        ran: results.map(ScenarioResults::ran).unwrap_or_default(),
        reason: item.why.clone(),
        waits_for: item.waits_for.clone(),
        location: item.location.clone(),
        what: item.what.clone(),
        unit: item.unit.clone(),
        conditions: item.conditions.clone(),
        scenario: item.scenario.clone(),
        point: None,
        x: None,
        size_bytes: None,
        series: None,
        metric: None,
        check: None,
        measured: Vec::new(),
    };
    if item.kind == Kind::Missing {
        out.verdict = Verdict::Missing;
        return out;
    }
    let Some(r) = results else {
        out.reason = "its scenario was not run".into();
        out.verdict = by_kind(item.kind, Verdict::NotRun);
        return out;
    };
    if let Some((comparison, index, row)) = r.row(&item.id) {
        from_row(&mut out, item, r, comparison, index, row);
    } else if let Some(check) = r.checks.iter().find(|c| c.check.item == item.id) {
        from_check(&mut out, item, r, check);
    } else if item.kind == Kind::Method {
        from_method(&mut out, r);
    } else {
        out.reason = format!("no row or check of {} names it", r.stem);
    }
    out.verdict = by_kind(item.kind, out.verdict);
    out
}

/// The verdict an item of `kind` may have, given the one its values earned: a fitted or an
/// input item is shown with its kind as verdict whatever its engines gave (a value fitted to a
/// figure, or the figure itself as a parameter, reproduces nothing), a method stays a method.
pub fn by_kind(kind: Kind, earned: Verdict) -> Verdict {
    match kind {
        Kind::Fitted => Verdict::Fitted,
        Kind::Input => Verdict::Input,
        Kind::Method => Verdict::Method,
        Kind::Missing => Verdict::Missing,
        Kind::Predicted | Kind::Qualitative => earned,
    }
}

fn set_value(out: &mut ItemSample, engine: &str, v: Option<f64>) {
    match engine {
        "model" => out.model = v,
        "sim" => out.sim = v,
        "emu" => out.emu = v,
        "real" => out.real = v,
        _ => {}
    }
}

/// A row of an `[[expect]]`: values and misses per engine, the verdict by kind.
fn from_row(
    out: &mut ItemSample,
    item: &Item,
    r: &ScenarioResults<'_>,
    comparison: &Comparison,
    index: usize,
    row: &Row,
) {
    let e = &comparison.expect;
    let tolerance = item.tolerance.unwrap_or(e.tolerance);
    out.tolerance = Some(tolerance);
    out.paper = row.paper.or(out.paper);
    out.metric = Some(e.metric.clone());
    out.point = Some(format!("w{} {}", e.workload, row.label));
    out.x = row.x;
    let point = r
        .scenario
        .points()
        .into_iter()
        .filter(|p| p.workload == e.workload)
        .nth(index);
    if let Some(p) = point {
        out.size_bytes = p.spec.size.map(|s| s.0 as f64);
        let proto = match p.spec.proto {
            Some(weft_model::tech::Transport::Udp) => "udp",
            Some(_) => "tcp",
            None => p.spec.kind.name(),
        };
        out.series = Some(format!(
            "{} {proto} {}-{}",
            r.stem,
            p.spec.from.join("+"),
            p.spec.to.join("+")
        ));
    }
    for c in &row.cells {
        set_value(out, &c.engine, c.value);
        if let Some(m) = c.miss {
            out.miss.insert(c.engine.clone(), m);
        }
    }
    out.verdict = match item.kind {
        Kind::Fitted => Verdict::Fitted,
        Kind::Input => Verdict::Input,
        Kind::Method => Verdict::Method,
        _ => {
            let judged: Vec<(&String, f64)> = item
                .engines
                .iter()
                .filter_map(|e| out.miss.get(e).map(|m| (e, *m)))
                .collect();
            if judged.is_empty() {
                out.reason = not_run(item, r);
                Verdict::NotRun
            } else if judged.iter().all(|(_, m)| m.abs() <= tolerance) {
                Verdict::Reproduced
            } else {
                if out.reason.is_empty() {
                    let worst: Vec<String> = judged
                        .iter()
                        .filter(|(_, m)| m.abs() > tolerance)
                        .map(|(e, m)| format!("{e} {:+.1}%", m * 100.0))
                        .collect();
                    out.reason = format!(
                        "outside {:.1}%: {} (the catalogue gives no reason)",
                        tolerance * 100.0,
                        worst.join(", ")
                    );
                }
                Verdict::Missed
            }
        }
    };
}

/// A `[[check]]`: the measure (ratio or bounded value) per engine, whether it held.
fn from_check(out: &mut ItemSample, item: &Item, r: &ScenarioResults<'_>, check: &CheckResult) {
    out.check = Some(check.check.test.to_string());
    if out.what.is_empty() {
        out.what = check.check.what.clone();
    }
    for c in &check.cells {
        set_value(out, &c.engine, c.measure);
        if let Some(h) = c.held {
            out.held.insert(c.engine.clone(), h);
        }
    }
    let judged: Vec<bool> = item
        .engines
        .iter()
        .filter_map(|e| out.held.get(e).copied())
        .collect();
    out.verdict = if judged.is_empty() {
        out.reason = not_run(item, r);
        Verdict::NotRun
    } else if judged.iter().all(|h| *h) {
        Verdict::Held
    } else {
        if out.reason.is_empty() {
            out.reason = failed_check(item, check);
        }
        Verdict::Failed
    };
}

/// Why a check failed, when the catalogue says nothing: the engines it failed on and the
/// values it read there.
fn failed_check(item: &Item, check: &CheckResult) -> String {
    let on: Vec<String> = check
        .cells
        .iter()
        .filter(|c| c.held == Some(false) && item.engines.contains(&c.engine))
        .map(|c| {
            let values: Vec<String> = c
                .values
                .iter()
                .map(|(label, v)| match v {
                    Some(v) => format!("{label} = {v:.4}"),
                    None => format!("{label} = none"),
                })
                .collect();
            format!("{} ({})", c.engine, values.join(", "))
        })
        .collect();
    format!(
        "{} does not hold on {} (the catalogue gives no reason)",
        check.check.test,
        on.join("; ")
    )
}

/// A method no row names: what the loopback run measured, every numeric metric of every
/// point.
fn from_method(out: &mut ItemSample, r: &ScenarioResults<'_>) {
    out.verdict = Verdict::Method;
    let Some((_, doc)) = r.docs.iter().find(|(e, _)| *e == "real") else {
        out.reason = not_run_real(r);
        return;
    };
    let labels: Vec<String> = r
        .scenario
        .points()
        .iter()
        .map(|p| {
            let swept = r
                .scenario
                .workloads
                .get(p.workload)
                .and_then(|w| w.sweep.as_ref())
                .zip(p.value)
                .map(|(s, v)| format!(" {}={}", s.field, v.as_f64()))
                .unwrap_or_default();
            format!("w{}{swept}", p.workload)
        })
        .collect();
    for (i, s) in doc.samples.iter().enumerate() {
        for key in ["rtt_mean_us", "goodput_mbps"] {
            if let Some(v) = s.get(key).and_then(serde_json::Value::as_f64) {
                let at = labels.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
                out.measured.push(Measured {
                    label: format!("{key} @ {at}"),
                    value: v,
                });
            }
        }
    }
    if let [one] = out.measured.as_slice() {
        out.real = Some(one.value);
    }
}

fn not_run(item: &Item, r: &ScenarioResults<'_>) -> String {
    let mut why: Vec<String> = Vec::new();
    for e in &item.engines {
        if let Some((_, reason)) = r.failed.iter().find(|(f, _)| f == e) {
            why.push(format!("{e}: {reason}"));
        } else if r.docs.iter().any(|(d, _)| d == e) {
            why.push(format!("{e} gave no value"));
        } else {
            why.push(format!("{e} was not run"));
        }
    }
    why.join("; ")
}

fn not_run_real(r: &ScenarioResults<'_>) -> String {
    match r.failed.iter().find(|(f, _)| *f == "real") {
        Some((_, why)) => format!("real: {why}"),
        None => "real was not run (--engine)".into(),
    }
}

/// Per study, in study order, the count of each verdict among `samples`.
pub fn summaries(samples: &[ItemSample]) -> Vec<StudySummary> {
    STUDIES
        .iter()
        .filter(|(n, _)| samples.iter().any(|s| s.study == *n))
        .map(|(n, name)| {
            let mut s = StudySummary {
                study: n.to_string(),
                name: name.to_string(),
                counts: BTreeMap::new(),
            };
            for i in samples.iter().filter(|i| i.study == *n) {
                *s.counts.entry(i.verdict).or_insert(0) += 1;
            }
            s
        })
        .collect()
}
