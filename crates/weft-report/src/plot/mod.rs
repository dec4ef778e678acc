//! Figures from result documents: `weft plot` draws the figure that fits any [`ResultDoc`].
//!
//! The pipeline is document -> [`Figure`] (by the kind -> builder table in [`kinds::FIGURES`]) ->
//! SVG text ([`render_svg`]) -> optionally PNG bytes (`render_png`, through `resvg`, with the
//! crate's `png` feature: the renderer and the font stack are pulled in only by those who draw).
//!
//! ```
//! use weft_report::{Engine, ResultDoc, plot};
//! let mut doc = ResultDoc::new("rr", Engine::Real);
//! doc.samples = vec![
//!     serde_json::json!({ "size_bytes": 64, "p50_ns": 20_000, "p99_ns": 31_000 }),
//!     serde_json::json!({ "size_bytes": 1024, "p50_ns": 24_000, "p99_ns": 40_000 }),
//! ];
//! let svg = plot::svg_for(&doc).unwrap();
//! assert!(svg.starts_with("<svg"));
//! ```

pub mod fields;
pub mod figure;
pub mod kinds;
#[cfg(feature = "png")]
pub mod png;
pub mod scale;
pub mod svg;
pub mod sweep;

pub use figure::{Axis, BarGroup, Bars, Body, Figure, Panel, Quantity, Scale, Series};
pub use kinds::{FIGURES, FigureKind, figure_for};
#[cfg(feature = "png")]
pub use png::render_png;
pub use svg::render as render_svg;

use crate::schema::ResultDoc;

/// Why a figure could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The text is not a weft result document.
    #[error("not a weft result document: {0}")]
    Parse(#[from] serde_json::Error),
    /// The document holds nothing that can be drawn.
    #[error("nothing to plot in this `{kind}` result: {reason}")]
    Nothing {
        /// The document's kind.
        kind: String,
        /// What was missing.
        reason: String,
    },
    /// The SVG could not be rasterised.
    #[error("cannot render PNG: {0}")]
    Png(String),
    /// No font is installed, so the PNG's text cannot be drawn.
    #[error(
        "cannot render PNG text: no fonts found; install a TrueType font \
         (Debian: apt-get install fonts-dejavu-core) or use the SVG"
    )]
    NoFonts,
}

/// Parses result JSON and builds its figure.
pub fn figure_from_json(text: &str) -> Result<Figure, PlotError> {
    let doc = ResultDoc::from_json(text)?;
    figure_for(&doc)
}

/// The SVG of the figure that fits `doc`.
pub fn svg_for(doc: &ResultDoc) -> Result<String, PlotError> {
    let fig = figure_for(doc)?;
    if fig.mark_count() == 0 {
        return Err(PlotError::Nothing {
            kind: doc.kind.clone(),
            reason: "the figure would be empty".into(),
        });
    }
    Ok(render_svg(&fig))
}

#[cfg(test)]
mod tests;
