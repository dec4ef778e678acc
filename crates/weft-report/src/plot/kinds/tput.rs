//! Throughput results: bits per second per interval over time, per stream and in total.
//!
//! Two sample layouts are understood: one sample per interval and stream (`stream` names the
//! stream; a sample without one, or with `stream` = `total`/`sum`, is the total), or one sample per
//! interval with a `streams` array of per-stream records beside the total. Intervals carry
//! `start_s` and `end_s` (or a single `t_s`) and are drawn at their end; rates are `bits_per_second` (or `bps`, ...).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{doc_num, doc_text, nothing, pretty, records, subtitle};
use crate::plot::PlotError;
use crate::plot::fields::Record;
use crate::plot::figure::{Axis, Body, Figure, Panel, Quantity, Series};
use crate::schema::ResultDoc;

const START: &[&str] = &["start_s", "start", "t0_s", "from_s"];
const END: &[&str] = &["end_s", "end", "t1_s", "to_s"];
const AT: &[&str] = &["t_s", "time_s", "at_s"];
const RATE: &[&str] = &[
    "bits_per_second",
    "bps",
    "throughput_bps",
    "goodput_bps",
    "rate_bps",
    "receiver_bps",
];
const STREAM: &[&str] = &["stream", "stream_id", "id"];
const DIRECTION: &[&str] = &["direction", "dir"];
const TOTAL_NAMES: &[&str] = &["total", "sum", "all", "aggregate"];

/// Key of a series: direction (empty for one-way) and stream (`None` for the total).
type Key = (String, Option<String>);

/// Builds the throughput-over-time figure.
pub fn figure(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let mut series: BTreeMap<Key, Vec<(f64, f64)>> = BTreeMap::new();
    for r in records(doc) {
        let Some(t) = when(&r) else { continue };
        let dir = r.text(DIRECTION).unwrap_or_default();
        let nested = r
            .value(&["streams"])
            .and_then(Value::as_array)
            .map(|a| a.iter().map(Record::new).collect::<Vec<_>>())
            .unwrap_or_default();
        for (i, s) in nested.iter().enumerate() {
            if let Some(v) = s.num(RATE) {
                let id = s.text(STREAM).unwrap_or_else(|| i.to_string());
                series
                    .entry((dir.clone(), Some(id)))
                    .or_default()
                    .push((t, v));
            }
        }
        let Some(v) = r.num(RATE) else { continue };
        let stream = r
            .text(STREAM)
            .filter(|s| !TOTAL_NAMES.contains(&s.as_str()));
        series.entry((dir, stream)).or_default().push((t, v));
    }
    if series.is_empty() {
        return Err(nothing(
            doc,
            "no interval samples with a time (start_s/end_s) and a rate (bits_per_second); \
             run with --interval to record them",
        ));
    }
    add_missing_totals(&mut series);
    let dirs: Vec<String> = {
        let mut d: Vec<String> = series.keys().map(|k| k.0.clone()).collect();
        d.dedup();
        d
    };
    let mut lines = Vec::new();
    for dir in &dirs {
        let streams: Vec<&Key> = series
            .keys()
            .filter(|k| &k.0 == dir && k.1.is_some())
            .collect();
        let has_total = series.contains_key(&(dir.clone(), None));
        for (key, pts) in &series {
            if &key.0 != dir || (key.1.is_some() && streams.len() == 1 && has_total) {
                continue;
            }
            let mut pts = pts.clone();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let what = match &key.1 {
                None => "total".to_string(),
                Some(id) => format!("stream {id}"),
            };
            let name = if dirs.len() == 1 {
                what
            } else {
                format!("{dir} {what}")
            };
            let mut s = Series::new(name, pts);
            s.markers = s.points.len() <= 60;
            s.dashed = key.1.is_some() && has_total;
            lines.push(s);
        }
    }
    let mut parts = Vec::new();
    if let Some(p) = doc_text(&doc.params, &["proto", "protocol", "transport"]) {
        parts.push(p.to_uppercase());
    }
    if let Some(n) = doc_num(&doc.params, &["parallel", "streams"]).filter(|n| *n > 1.0) {
        parts.push(format!("{n} streams"));
    }
    if let Some(g) = doc_num(
        &doc.summary,
        &["goodput_bps", "receiver_bps", "throughput_bps", "bps"],
    ) {
        parts.push(format!("goodput {}", pretty(Quantity::BitsPerSecond, g)));
    }
    Ok(Figure {
        title: "Throughput over time".into(),
        subtitle: subtitle(doc, &parts),
        panels: vec![Panel {
            title: String::new(),
            x: Axis::linear("time", Quantity::Seconds),
            y: Axis::linear("throughput", Quantity::BitsPerSecond),
            body: Body::Lines(lines),
        }],
    })
}

/// The time a sample is drawn at: the end of its interval (as iperf3 and ttcp report it), else
/// its single time stamp, else the start of its interval.
fn when(r: &Record) -> Option<f64> {
    r.num(END).or_else(|| r.num(AT)).or_else(|| r.num(START))
}

/// Where a direction has several streams but no total, the sum over streams per interval.
fn add_missing_totals(series: &mut BTreeMap<Key, Vec<(f64, f64)>>) {
    let mut totals: BTreeMap<String, BTreeMap<u64, f64>> = BTreeMap::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for ((dir, stream), pts) in series.iter() {
        if stream.is_some() {
            *counts.entry(dir.clone()).or_default() += 1;
            let t = totals.entry(dir.clone()).or_default();
            for &(x, v) in pts {
                *t.entry(x.to_bits()).or_default() += v;
            }
        }
    }
    for (dir, sums) in totals {
        let key = (dir.clone(), None);
        if counts.get(&dir).copied().unwrap_or(0) > 1 && !series.contains_key(&key) {
            series.insert(
                key,
                sums.into_iter()
                    .map(|(x, v)| (f64::from_bits(x), v))
                    .collect(),
            );
        }
    }
}
