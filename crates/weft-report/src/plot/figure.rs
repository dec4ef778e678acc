//! The figure model: what is drawn, independent of how (SVG now, PNG through SVG).
//!
//! Builders in [`super::kinds`] turn a result document into a [`Figure`]; [`super::svg`] draws it.
//! Values are kept in the document's base units (nanoseconds, bits per second, bytes, seconds);
//! the renderer picks a readable display unit per axis.

/// A figure: a title and one or more panels stacked top to bottom.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Heading over the whole figure.
    pub title: String,
    /// A line under the title (engine, parameters, headline figures); empty for none.
    pub subtitle: String,
    /// The panels, drawn top to bottom.
    pub panels: Vec<Panel>,
}

/// One plot area with its own axes.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    /// Heading over the panel; empty for none.
    pub title: String,
    /// The horizontal axis (ignored for bar charts except for its label).
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// What is drawn inside.
    pub body: Body,
}

/// How values map onto an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values.
    Linear,
    /// Powers of two evenly spaced (message sizes); values must be positive.
    Log2,
    /// Powers of ten evenly spaced (latencies spanning decades); values must be positive.
    Log10,
}

/// What an axis measures, which decides how its ticks are labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// A bare number.
    Plain,
    /// Bytes (binary prefixes on ticks: 1K = 1024).
    Bytes,
    /// Nanoseconds (shown as ns, µs, ms or s).
    Nanoseconds,
    /// Seconds.
    Seconds,
    /// Bits per second (shown as bit/s, kbit/s, Mbit/s or Gbit/s; decimal prefixes).
    BitsPerSecond,
    /// A fraction, shown as a percentage (0.5 is drawn as 50).
    Fraction,
}

/// An axis: its label, what it measures and its scale.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Label without unit; the renderer appends the display unit.
    pub label: String,
    /// What the axis measures.
    pub quantity: Quantity,
    /// Linear or logarithmic.
    pub scale: Scale,
    /// Whether a linear axis starts at zero whatever the data (honest rate and latency plots).
    pub from_zero: bool,
}

impl Axis {
    /// A linear axis starting at zero.
    pub fn linear(label: impl Into<String>, quantity: Quantity) -> Self {
        Axis {
            label: label.into(),
            quantity,
            scale: Scale::Linear,
            from_zero: true,
        }
    }

    /// A base-2 logarithmic axis.
    pub fn log2(label: impl Into<String>, quantity: Quantity) -> Self {
        Axis {
            label: label.into(),
            quantity,
            scale: Scale::Log2,
            from_zero: false,
        }
    }
}

/// The contents of a panel.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// Lines through points, each with an optional band.
    Lines(Vec<Series>),
    /// Groups of bars over named categories.
    Bars(Bars),
}

/// A line through points, drawn in the order given, with an optional shaded band.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Points (x, y) in axis base units.
    pub points: Vec<(f64, f64)>,
    /// Band (x, low, high) in axis base units; empty for none.
    pub band: Vec<(f64, f64, f64)>,
    /// Legend entry of the band; empty when there is no band.
    pub band_name: String,
    /// Whether to mark each point with a dot.
    pub markers: bool,
    /// Whether to draw the line dashed (secondary series such as a mean).
    pub dashed: bool,
}

impl Series {
    /// A solid line with markers and no band.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            band: Vec::new(),
            band_name: String::new(),
            markers: true,
            dashed: false,
        }
    }
}

/// Bars: one group per data set, one bar per category in each group.
#[derive(Clone, Debug, PartialEq)]
pub struct Bars {
    /// Category labels along the horizontal axis (sessions, hosts, ...).
    pub categories: Vec<String>,
    /// Data sets drawn side by side within each category.
    pub groups: Vec<BarGroup>,
    /// Horizontal reference lines (label, value), e.g. the line rate.
    pub references: Vec<(String, f64)>,
}

/// One data set of a bar chart.
#[derive(Clone, Debug, PartialEq)]
pub struct BarGroup {
    /// Legend entry.
    pub name: String,
    /// One value per category; `None` where the category has no value.
    pub values: Vec<Option<f64>>,
}

impl Figure {
    /// Number of points, band points and bars drawn: zero means there is nothing to see.
    pub fn mark_count(&self) -> usize {
        self.panels
            .iter()
            .map(|p| match &p.body {
                Body::Lines(s) => s.iter().map(|s| s.points.len() + s.band.len()).sum(),
                Body::Bars(b) => b.groups.iter().flat_map(|g| &g.values).flatten().count(),
            })
            .sum()
    }
}
