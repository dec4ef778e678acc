//! Message-passing results (`weft mp`, the `mp` workload of scenarios): time per iteration and
//! rate against message size, one line per pattern (p50 with a p99 band, log-2 size axis), and
//! the NPB skeletons as bars of time per step.
//!
//! One sample per pattern and size: `pattern` (and `algorithm` for an all-reduce), `size`
//! (bytes), `p50_us`, `p99_us`, `mean_us` and `mbps`. Patterns named like `bt.S` are NPB
//! skeletons.

use std::collections::BTreeMap;

use super::{doc_num, doc_text, nothing, records, subtitle};
use crate::plot::PlotError;
use crate::plot::figure::{Axis, BarGroup, Bars, Body, Figure, Panel, Quantity, Scale, Series};
use crate::schema::ResultDoc;

/// One point of a pattern's line: size (bytes), p50 (ns), p99 (ns) and rate (bits/s).
type Point = (f64, f64, Option<f64>, Option<f64>);

/// Builds the figure.
pub fn figure(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let recs = records(doc);
    let mut lines: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    let mut npb: Vec<(String, Option<f64>, Option<f64>)> = Vec::new();
    for r in &recs {
        let Some(pattern) = r.text(&["pattern"]) else {
            continue;
        };
        let p50 = r.num(&["p50_us"]).map(|v| v * 1e3);
        let p99 = r.num(&["p99_us"]).map(|v| v * 1e3);
        if pattern.contains('.') {
            npb.push((pattern, p50.or(r.num(&["mean_us"]).map(|v| v * 1e3)), p99));
            continue;
        }
        let (Some(size), Some(p50)) = (r.num(&["size"]), p50) else {
            continue;
        };
        let label = match r.text(&["algorithm"]) {
            Some(a) if !pattern.ends_with(&a) => format!("{pattern} ({a})"),
            _ => pattern,
        };
        let bps = r.num(&["mbps"]).map(|m| m * 1e6).filter(|b| *b > 0.0);
        // Sizeless patterns (barrier) sit at 1 byte on the log axis.
        lines
            .entry(label)
            .or_default()
            .push((size.max(1.0), p50, p99, bps));
    }
    if lines.is_empty() && npb.is_empty() {
        return Err(nothing(
            doc,
            "no sample has a pattern with a size and a p50_us",
        ));
    }
    let mut panels = Vec::new();
    if !lines.is_empty() {
        let mut lat = Vec::new();
        let mut rate = Vec::new();
        for (name, mut rows) in lines {
            rows.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut s = Series::new(
                format!("{name} p50"),
                rows.iter().map(|r| (r.0, r.1)).collect(),
            );
            s.band = rows
                .iter()
                .filter_map(|r| r.2.map(|hi| (r.0, r.1, hi.max(r.1))))
                .collect();
            if !s.band.is_empty() {
                s.band_name = format!("{name} p50–p99");
            }
            lat.push(s);
            let pts: Vec<(f64, f64)> = rows.iter().filter_map(|r| r.3.map(|b| (r.0, b))).collect();
            if !pts.is_empty() {
                rate.push(Series::new(name, pts));
            }
        }
        panels.push(Panel {
            title: "Time per iteration (ping-pong: one way)".into(),
            x: Axis::log2("message size", Quantity::Bytes),
            y: Axis {
                label: "time per iteration".into(),
                quantity: Quantity::Nanoseconds,
                scale: Scale::Log10,
                from_zero: false,
            },
            body: Body::Lines(lat),
        });
        if !rate.is_empty() {
            panels.push(Panel {
                title: "Rate (ping-pong: osu_bw window; collectives: bytes a rank sends)".into(),
                x: Axis::log2("message size", Quantity::Bytes),
                y: Axis::linear("rate", Quantity::BitsPerSecond),
                body: Body::Lines(rate),
            });
        }
    }
    if !npb.is_empty() {
        let categories = npb.iter().map(|n| n.0.clone()).collect();
        let mut groups = vec![BarGroup {
            name: "p50".into(),
            values: npb.iter().map(|n| n.1).collect(),
        }];
        if npb.iter().any(|n| n.2.is_some()) {
            groups.push(BarGroup {
                name: "p99".into(),
                values: npb.iter().map(|n| n.2).collect(),
            });
        }
        panels.push(Panel {
            title: "NPB communication per time step".into(),
            x: Axis::linear("skeleton", Quantity::Plain),
            y: Axis::linear("time per step", Quantity::Nanoseconds),
            body: Body::Bars(Bars {
                categories,
                groups,
                references: Vec::new(),
            }),
        });
    }
    let mut parts = Vec::new();
    if let Some(n) = doc_num(&doc.params, &["ranks"]) {
        parts.push(format!("{n} ranks"));
    }
    if let Some(r) = doc_text(&doc.params, &["route"]) {
        parts.push(format!("{r} route"));
    }
    Ok(Figure {
        title: "Message passing: time and rate against message size".into(),
        subtitle: subtitle(doc, &parts),
        panels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Engine;
    use serde_json::json;

    #[test]
    fn draws_lines_per_pattern_and_bars_for_npb() {
        let mut doc = ResultDoc::new("mp", Engine::Real);
        doc.params = json!({"ranks": 4, "route": "direct"});
        doc.samples = vec![
            json!({"pattern": "pingpong", "size": 8, "p50_us": 10.0, "p99_us": 15.0, "mbps": 5.0}),
            json!({"pattern": "pingpong", "size": 1024, "p50_us": 12.0, "p99_us": 20.0, "mbps": 600.0}),
            json!({"pattern": "allreduce", "algorithm": "ring", "size": 1048576, "p50_us": 900.0, "p99_us": 950.0, "mbps": 8000.0}),
            json!({"pattern": "bt.S", "size": 40000, "p50_us": 300.0, "p99_us": 400.0, "mbps": 900.0}),
        ];
        let f = figure(&doc).unwrap();
        assert_eq!(f.panels.len(), 3);
        let Body::Lines(lat) = &f.panels[0].body else {
            panic!("lines expected");
        };
        assert_eq!(lat.len(), 2);
        assert!(lat.iter().any(|s| s.name == "allreduce (ring) p50"));
        assert_eq!(lat[1].points[0], (8.0, 10_000.0));
        let Body::Bars(b) = &f.panels[2].body else {
            panic!("bars expected");
        };
        assert_eq!(b.categories, ["bt.S"]);
        assert!(crate::plot::svg_for(&doc).unwrap().starts_with("<svg"));
        doc.samples = vec![json!({"pattern": "pingpong"})];
        assert!(figure(&doc).is_err());
    }
}
