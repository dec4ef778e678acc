//! Virtual-circuit plans (`weft vc growth`): circuits and cross-connect entries of a full mesh
//! against the hosts it joins, with n(n-1) drawn beside them (`vc.growth`).

use super::{nothing, records, subtitle};
use crate::plot::PlotError;
use crate::plot::figure::{Axis, Body, Figure, Panel, Quantity, Series};
use crate::schema::ResultDoc;

/// `vc.growth`: one-way circuits, duplex PVCs, entries over all switches and on the busiest
/// switch, against n; n(n-1) dashed.
pub fn growth(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let recs = records(doc);
    let xy = |y: &str| -> Vec<(f64, f64)> {
        recs.iter()
            .filter_map(|r| Some((r.num(&["n"])?, r.num(&[y])?)))
            .collect()
    };
    let vcs = xy("vcs");
    if vcs.is_empty() {
        return Err(nothing(doc, "no samples with `n` and `vcs`"));
    }
    let square: Vec<(f64, f64)> = vcs.iter().map(|&(n, _)| (n, n * (n - 1.0))).collect();
    let mut series = vec![
        Series::new("all entries", xy("entries")),
        Series::new("busiest switch", xy("max_switch_entries")),
        Series::new("one-way VCs", vcs),
        Series::new("duplex PVCs", xy("pvcs")),
        Series {
            dashed: true,
            markers: false,
            ..Series::new("n(n-1)", square)
        },
    ];
    series.retain(|s| !s.points.is_empty());
    let db = doc
        .params
        .get("database")
        .and_then(|d| d.as_str())
        .unwrap_or("")
        .to_string();
    Ok(Figure {
        title: "Full mesh of PVCs: circuits and switch entries against hosts".into(),
        subtitle: subtitle(doc, &[db]),
        panels: vec![Panel {
            title: String::new(),
            x: Axis::linear("hosts n", Quantity::Plain),
            y: Axis::linear("count", Quantity::Plain),
            body: Body::Lines(series),
        }],
    })
}
