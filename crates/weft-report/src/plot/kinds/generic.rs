//! The fallback figure: any numeric sample field against another, one panel per field.
//!
//! The x field is the first of a list of usual names (`t_s`, `time_s`, `size_bytes`, ...) that the
//! samples carry, else the first numeric field in key order; every other numeric field that at
//! least two samples carry becomes a panel (at most [`MAX_PANELS`]).

use super::{nothing, quantity_of, records, subtitle};
use crate::plot::PlotError;
use crate::plot::figure::{Axis, Body, Figure, Panel, Quantity, Scale, Series};
use crate::schema::ResultDoc;

/// At most this many fields are drawn.
pub const MAX_PANELS: usize = 4;

const X_NAMES: &[&str] = &[
    "x",
    "t_s",
    "time_s",
    "t",
    "time",
    "start_s",
    "end_s",
    "size_bytes",
    "size",
    "n",
    "index",
    "i",
    "step",
];

/// Builds the generic line figure.
pub fn figure(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let recs = records(doc);
    if recs.is_empty() {
        return Err(nothing(doc, "the result has no samples to plot"));
    }
    // Numeric keys with how many samples carry each, in first-seen order.
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in &recs {
        for k in r.numeric_keys() {
            match keys.iter_mut().find(|e| e.0 == k) {
                Some(e) => e.1 += 1,
                None => keys.push((k.to_string(), 1)),
            }
        }
    }
    keys.retain(|k| k.1 >= 2);
    let x_key = X_NAMES
        .iter()
        .find_map(|n| keys.iter().find(|k| k.0 == *n))
        .or_else(|| keys.first())
        .map(|k| k.0.clone());
    let Some(x_key) = x_key else {
        return Err(nothing(
            doc,
            "no numeric field is shared by two or more samples, so there is no line to draw",
        ));
    };
    let mut panels = Vec::new();
    for (y_key, _) in keys.iter().filter(|k| k.0 != x_key).take(MAX_PANELS) {
        let mut pts: Vec<(f64, f64)> = recs
            .iter()
            .filter_map(|r| Some((r.num(&[&x_key])?, r.num(&[y_key])?)))
            .collect();
        if pts.len() < 2 {
            continue;
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let xq = quantity_of(&x_key);
        let (xmin, xmax) = pts
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.0), b.max(p.0))
            });
        let mut x = Axis::linear(x_key.clone(), xq);
        x.from_zero = false;
        if xq == Quantity::Bytes && xmin > 0.0 && xmax / xmin >= 16.0 {
            x.scale = Scale::Log2;
        }
        let mut s = Series::new(y_key.clone(), pts);
        s.markers = s.points.len() <= 80;
        panels.push(Panel {
            title: String::new(),
            x,
            y: Axis::linear(y_key.clone(), quantity_of(y_key)),
            body: Body::Lines(vec![s]),
        });
    }
    if panels.is_empty() {
        return Err(nothing(
            doc,
            format!("the samples have `{x_key}` but no second numeric field shared by two samples"),
        ));
    }
    Ok(Figure {
        title: format!("{} result", doc.kind),
        subtitle: subtitle(doc, &[]),
        panels,
    })
}
