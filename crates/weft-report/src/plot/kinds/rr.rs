//! Request/response results: latency and throughput against message size, log-2 size axis.
//!
//! One sample per message size (and per series when a document holds several, e.g. TCP and UDP):
//! a size (`size_bytes`), latency statistics in nanoseconds (`p50_ns`, `p99_ns`, `min_ns`,
//! `max_ns`, `mean_ns`, possibly nested under `latency`) and optionally a derived throughput
//! (`throughput_bps`).

use std::collections::BTreeMap;

use super::{doc_num, doc_text, nothing, records, subtitle};
use crate::plot::PlotError;
use crate::plot::fields::Record;
use crate::plot::figure::{Axis, Body, Figure, Panel, Quantity, Scale, Series};
use crate::schema::ResultDoc;

const SIZE: &[&str] = &[
    "size_bytes",
    "size",
    "msg_bytes",
    "message_bytes",
    "len_bytes",
];
const P50: &[&str] = &["p50_ns", "median_ns"];
const MEAN: &[&str] = &["mean_ns", "avg_ns"];
const P99: &[&str] = &["p99_ns"];
const MIN: &[&str] = &["min_ns"];
const MAX: &[&str] = &["max_ns"];
const TPUT: &[&str] = &[
    "throughput_bps",
    "tput_bps",
    "goodput_bps",
    "bits_per_second",
    "bps",
];
/// Fields that tell series apart when a document holds several.
const SERIES: &[&str] = &["series", "label", "proto", "protocol", "mode"];

/// One message size's statistics.
struct Row {
    size: f64,
    mid: Option<f64>,
    mean: Option<f64>,
    lo: Option<f64>,
    hi: Option<f64>,
    tput: Option<f64>,
}

/// Builds the latency/throughput-vs-size figure.
pub fn figure(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let recs = records(doc);
    let split = series_key(&recs);
    let mut groups: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    let (mut lo_name, mut hi_name) = ("", "");
    for r in &recs {
        let Some(size) = r.num(SIZE).filter(|s| *s > 0.0) else {
            continue;
        };
        let lo = r.num(MIN);
        let hi = r.num(P99).or_else(|| r.num(MAX));
        if lo.is_some() {
            lo_name = "min";
        }
        if hi.is_some() {
            hi_name = if r.num(P99).is_some() { "p99" } else { "max" };
        }
        let row = Row {
            size,
            mid: r.num(P50),
            mean: r.num(MEAN),
            lo,
            hi,
            tput: r.num(TPUT),
        };
        if row.mid.is_none() && row.mean.is_none() && row.tput.is_none() {
            continue;
        }
        let name = split.and_then(|k| r.text(&[k])).unwrap_or_default();
        groups.entry(name).or_default().push(row);
    }
    if groups.is_empty() {
        return Err(nothing(
            doc,
            "no sample has a message size (size_bytes) with a latency (p50_ns or mean_ns) or a \
             throughput (throughput_bps)",
        ));
    }
    for rows in groups.values_mut() {
        rows.sort_by(|a, b| a.size.total_cmp(&b.size));
    }
    let single = groups.len() == 1;
    let mut lat = Vec::new();
    let mut tput = Vec::new();
    for (name, rows) in &groups {
        let prefix = if name.is_empty() {
            String::new()
        } else {
            format!("{name} ")
        };
        let has_p50 = rows.iter().any(|r| r.mid.is_some());
        let centre = |r: &Row| if has_p50 { r.mid } else { r.mean };
        let points: Vec<_> = rows
            .iter()
            .filter_map(|r| centre(r).map(|c| (r.size, c)))
            .collect();
        if !points.is_empty() {
            let centre_name = if has_p50 { "p50" } else { "mean" };
            let mut s = Series::new(format!("{prefix}{centre_name}"), points);
            s.band = rows
                .iter()
                .filter_map(|r| {
                    let c = centre(r)?;
                    let (lo, hi) = (r.lo.unwrap_or(c), r.hi.unwrap_or(c));
                    (r.lo.is_some() || r.hi.is_some()).then_some((r.size, lo.min(c), hi.max(c)))
                })
                .collect();
            if !s.band.is_empty() {
                let centre_name = if has_p50 { "p50" } else { "mean" };
                let lo = if lo_name.is_empty() {
                    centre_name
                } else {
                    lo_name
                };
                let hi = if hi_name.is_empty() {
                    centre_name
                } else {
                    hi_name
                };
                s.band_name = format!("{prefix}{lo}–{hi}");
            }
            lat.push(s);
            if single && has_p50 {
                let means: Vec<_> = rows
                    .iter()
                    .filter_map(|r| r.mean.map(|m| (r.size, m)))
                    .collect();
                if !means.is_empty() {
                    let mut m = Series::new("mean", means);
                    m.dashed = true;
                    m.markers = false;
                    lat.push(m);
                }
            }
        }
        let tp: Vec<_> = rows
            .iter()
            .filter_map(|r| r.tput.map(|t| (r.size, t)))
            .collect();
        if !tp.is_empty() {
            let label = if name.is_empty() {
                "throughput".to_string()
            } else {
                name.clone()
            };
            tput.push(Series::new(label, tp));
        }
    }
    let size_axis = Axis::log2("message size", Quantity::Bytes);
    let mut panels = Vec::new();
    if !lat.is_empty() {
        let mut y = Axis::linear("latency", Quantity::Nanoseconds);
        if spans_decades(&lat) {
            y.scale = Scale::Log10;
        }
        panels.push(Panel {
            title: "Latency (round trip)".into(),
            x: size_axis.clone(),
            y,
            body: Body::Lines(lat),
        });
    }
    if !tput.is_empty() {
        panels.push(Panel {
            title: "Throughput".into(),
            x: size_axis,
            y: Axis::linear("throughput", Quantity::BitsPerSecond),
            body: Body::Lines(tput),
        });
    }
    let mut parts = Vec::new();
    if let Some(p) = doc_text(&doc.params, &["proto", "protocol"]) {
        parts.push(p.to_uppercase());
    }
    if let Some(h) = doc_text(&doc.params, &["addr", "host", "target", "server"]) {
        parts.push(format!("to {h}"));
    }
    if doc_text(&doc.params, &["cold"]).as_deref() == Some("true") {
        parts.push("cold (connect per transaction)".into());
    }
    if let Some(n) = doc_num(&doc.params, &["count", "iterations"]) {
        parts.push(format!("{n} transactions per size"));
    }
    Ok(Figure {
        title: "Request/response latency and throughput vs message size".into(),
        subtitle: subtitle(doc, &parts),
        panels,
    })
}

/// The field that splits samples into series: the first of [`SERIES`] with more than one value.
fn series_key(recs: &[Record]) -> Option<&'static str> {
    SERIES.iter().copied().find(|k| {
        let mut seen: Vec<String> = Vec::new();
        for r in recs {
            if let Some(t) = r.text(&[k]) {
                if !seen.contains(&t) {
                    seen.push(t);
                }
            }
        }
        seen.len() > 1
    })
}

/// Whether the band tops exceed fifty times the lowest centre value: then a log axis shows both.
fn spans_decades(series: &[Series]) -> bool {
    let lowest = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(f64::INFINITY, f64::min);
    let highest = series
        .iter()
        .flat_map(|s| {
            s.band
                .iter()
                .map(|b| b.2)
                .chain(s.points.iter().map(|p| p.1))
        })
        .fold(0.0, f64::max);
    lowest > 0.0 && highest / lowest > 50.0
}
