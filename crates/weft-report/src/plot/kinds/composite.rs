//! Composite results (`weft demo`): samples that are whole result documents, drawn as the
//! panels of their own figures stacked in one.

use super::{figure_for, nothing, subtitle};
use crate::plot::PlotError;
use crate::plot::figure::Figure;
use crate::schema::ResultDoc;

/// Builds one figure from the figures of the documents in `doc.samples`.
pub fn figure(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let mut panels = Vec::new();
    let mut kinds = Vec::new();
    for sample in &doc.samples {
        let Ok(sub) = serde_json::from_value::<ResultDoc>(sample.clone()) else {
            continue;
        };
        // A composite inside a composite is not followed (no unbounded recursion).
        if sub.kind == doc.kind || super::lookup(&sub.kind).is_some_and(|k| k.kind == "demo") {
            continue;
        }
        if let Ok(fig) = figure_for(&sub) {
            for mut p in fig.panels {
                if p.title.is_empty() {
                    p.title = fig.title.clone();
                }
                panels.push(p);
            }
            kinds.push(sub.kind.clone());
        }
    }
    if panels.is_empty() {
        return Err(nothing(
            doc,
            "no sample is a result document with something to plot",
        ));
    }
    Ok(Figure {
        title: format!("weft {}", doc.kind),
        subtitle: subtitle(doc, &[kinds.join(" + ")]),
        panels,
    })
}
