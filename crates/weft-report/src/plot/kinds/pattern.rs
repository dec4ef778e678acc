//! Pattern results: one bar per concurrent session, with the aggregate and the line rate.
//!
//! One sample per session: a label (`label`, or `from` and `to`, or `session`), a throughput
//! (`throughput_bps`) and/or latency statistics (`p50_ns`, `p99_ns`). The summary may hold
//! `aggregate_bps`, `line_rate_bps` and `line_efficiency` (a fraction).

use super::{doc_num, doc_text, nothing, pretty, records, subtitle};
use crate::plot::PlotError;
use crate::plot::fields::Record;
use crate::plot::figure::{Axis, BarGroup, Bars, Body, Figure, Panel, Quantity};
use crate::schema::ResultDoc;

const TPUT: &[&str] = &["throughput_bps", "goodput_bps", "bits_per_second", "bps"];

/// Builds the per-session bar figure.
pub fn figure(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let recs = records(doc);
    if recs.is_empty() {
        return Err(nothing(doc, "no session samples"));
    }
    let categories: Vec<String> = recs.iter().enumerate().map(|(i, r)| label(r, i)).collect();
    let tput: Vec<Option<f64>> = recs.iter().map(|r| r.num(TPUT)).collect();
    let p50: Vec<Option<f64>> = recs
        .iter()
        .map(|r| r.num(&["p50_ns", "median_ns"]))
        .collect();
    let p99: Vec<Option<f64>> = recs.iter().map(|r| r.num(&["p99_ns"])).collect();
    let mut panels = Vec::new();
    let line_rate = doc_num(&doc.summary, &["line_rate_bps"])
        .or_else(|| doc_num(&doc.params, &["line_rate_bps"]));
    if tput.iter().any(Option::is_some) {
        let references = line_rate
            .map(|r| ("line rate".to_string(), r))
            .into_iter()
            .collect();
        let groups = vec![("throughput", tput)];
        panels.push(Panel {
            title: "Throughput per session".into(),
            x: Axis::linear("session", Quantity::Plain),
            y: Axis::linear("throughput", Quantity::BitsPerSecond),
            body: Body::Bars(bars(&categories, groups, references)),
        });
    }
    if p50.iter().any(Option::is_some) {
        let mut groups = vec![("p50", p50)];
        if p99.iter().any(Option::is_some) {
            groups.push(("p99", p99));
        }
        panels.push(Panel {
            title: "Request/response latency per session".into(),
            x: Axis::linear("session", Quantity::Plain),
            y: Axis::linear("latency", Quantity::Nanoseconds),
            body: Body::Bars(bars(&categories, groups, Vec::new())),
        });
    }
    if panels.is_empty() {
        return Err(nothing(
            doc,
            "no session has a throughput (throughput_bps) or a latency (p50_ns)",
        ));
    }
    let mut parts = Vec::new();
    if let Some(p) = doc_text(&doc.params, &["pattern"]) {
        parts.push(p);
    }
    parts.push(format!("{} sessions", recs.len()));
    if let Some(a) = doc_num(&doc.summary, &["aggregate_bps"]) {
        parts.push(format!("aggregate {}", pretty(Quantity::BitsPerSecond, a)));
    }
    if let Some(e) = doc_num(&doc.summary, &["line_efficiency"]) {
        parts.push(format!("line efficiency {}", pretty(Quantity::Fraction, e)));
    }
    Ok(Figure {
        title: "Concurrent sessions".into(),
        subtitle: subtitle(doc, &parts),
        panels,
    })
}

/// Bars over the categories that have a value in at least one group (a bulk session has no
/// latency bar, a latency probe no throughput bar).
fn bars(
    categories: &[String],
    groups: Vec<(&str, Vec<Option<f64>>)>,
    references: Vec<(String, f64)>,
) -> Bars {
    let keep: Vec<usize> = (0..categories.len())
        .filter(|&i| {
            groups
                .iter()
                .any(|g| g.1.get(i).copied().flatten().is_some())
        })
        .collect();
    Bars {
        categories: keep
            .iter()
            .filter_map(|&i| categories.get(i).cloned())
            .collect(),
        groups: groups
            .into_iter()
            .map(|(name, values)| BarGroup {
                name: name.into(),
                values: keep
                    .iter()
                    .map(|&i| values.get(i).copied().flatten())
                    .collect(),
            })
            .collect(),
        references,
    }
}

fn label(r: &Record, i: usize) -> String {
    let base = if let Some(l) = r.text(&["label", "name"]) {
        l
    } else if let (Some(a), Some(b)) = (r.text(&["from", "client"]), r.text(&["to", "server"])) {
        format!("{a}→{b}")
    } else if let Some(s) = r.text(&["session"]) {
        format!("session {s}")
    } else {
        format!("session {}", i + 1)
    };
    match r.text(&["role"]).filter(|s| !s.is_empty()) {
        Some(role) => format!("{base} ({role})"),
        None => base,
    }
}
