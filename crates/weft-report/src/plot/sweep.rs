//! Figures of parameter sweeps (`weft sweep`, drawn by `weft plot DIR`): a metric against one
//! parameter, one line per value of the others, each point the mean over seeds with a shaded
//! band for its 95% confidence interval.
//!
//! The sweep crate groups the runs and computes the statistics; this module only turns the
//! resulting [`SweepChart`] into a [`Figure`], so that it is drawn like every other figure.

use super::figure::{Axis, Body, Figure, Panel, Series};
use super::kinds::quantity_of;

/// A metric against a parameter, one line per value of the other parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepChart {
    /// Heading.
    pub title: String,
    /// Line under the heading (what the runs executed, what was pooled).
    pub subtitle: String,
    /// The parameter along the horizontal axis (its name's suffix picks the unit: `_bytes`, ...).
    pub x: String,
    /// The metric along the vertical axis.
    pub y: String,
    /// The lines.
    pub lines: Vec<SweepLine>,
}

/// One line: the runs that share the values of the parameters other than `x`.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepLine {
    /// Legend entry: those values, `ports=4, contention=rr`.
    pub name: String,
    /// Its points, in increasing `x`.
    pub points: Vec<SweepPoint>,
}

/// One point of a line: the runs at one `x` (one per seed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepPoint {
    /// The parameter's value.
    pub x: f64,
    /// The mean of the metric over the runs.
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean (`None` for a single run).
    pub half_width: Option<f64>,
    /// Runs averaged.
    pub n: usize,
}

/// The figure of `chart`. The horizontal axis is logarithmic (base 2) when every `x` is positive
/// and they span a factor of 16 or more (windows, buffers, message sizes); linear otherwise.
pub fn figure(chart: &SweepChart) -> Figure {
    let xs: Vec<f64> = chart
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.x))
        .collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut x_axis = Axis::linear(&chart.x, quantity_of(&chart.x));
    if lo > 0.0 && hi / lo >= 16.0 {
        x_axis = Axis::log2(&chart.x, quantity_of(&chart.x));
    } else if lo.is_finite() && lo != 0.0 {
        // A parameter need not start at zero (port counts from 2): show its range.
        x_axis.from_zero = false;
    }
    let series = chart
        .lines
        .iter()
        .map(|l| Series {
            band: l
                .points
                .iter()
                .filter_map(|p| p.half_width.map(|h| (p.x, p.mean - h, p.mean + h)))
                .collect(),
            // One legend entry per line; the subtitle says what the bands are.
            band_name: String::new(),
            ..Series::new(&l.name, l.points.iter().map(|p| (p.x, p.mean)).collect())
        })
        .collect();
    Figure {
        title: chart.title.clone(),
        subtitle: chart.subtitle.clone(),
        panels: vec![Panel {
            title: String::new(),
            x: x_axis,
            y: Axis::linear(&chart.y, quantity_of(&chart.y)),
            body: Body::Lines(series),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::figure::Scale;
    use crate::plot::render_svg;

    fn chart(xs: &[f64]) -> SweepChart {
        SweepChart {
            title: "t".into(),
            subtitle: "s".into(),
            x: "window_bytes".into(),
            y: "throughput".into(),
            lines: vec![
                SweepLine {
                    name: "contention=rr".into(),
                    points: xs
                        .iter()
                        .map(|&x| SweepPoint {
                            x,
                            mean: 0.6,
                            half_width: Some(0.01),
                            n: 5,
                        })
                        .collect(),
                },
                SweepLine {
                    name: "contention=random".into(),
                    points: xs
                        .iter()
                        .map(|&x| SweepPoint {
                            x,
                            mean: 0.5,
                            half_width: None,
                            n: 1,
                        })
                        .collect(),
                },
            ],
        }
    }

    #[test]
    fn lines_with_bands_and_one_legend_entry_each() {
        let f = figure(&chart(&[2.0, 4.0, 8.0]));
        assert_eq!(f.mark_count(), 3 + 3 + 3);
        let Body::Lines(s) = &f.panels[0].body else {
            panic!("lines")
        };
        assert_eq!(
            s[0].band,
            vec![(2.0, 0.59, 0.61), (4.0, 0.59, 0.61), (8.0, 0.59, 0.61)]
        );
        assert!(s[1].band.is_empty());
        let svg = render_svg(&f);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let entries = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("legend-entry"))
            .count();
        assert_eq!(entries, 2, "{svg}");
        assert_eq!(f.panels[0].x.scale, Scale::Linear);
    }

    #[test]
    fn wide_positive_ranges_get_a_log_axis() {
        let f = figure(&chart(&[1024.0, 65536.0]));
        assert_eq!(f.panels[0].x.scale, Scale::Log2);
    }
}
