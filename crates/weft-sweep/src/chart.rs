//! The chart of a sweep: a metric (`y`) against a parameter (`x`), one line per combination of
//! the `by` parameters, each point the mean over seeds with its 95% confidence interval. Without
//! choices: `x` is the first numeric parameter that varies, `y` the first metric that varies, and
//! `by` the other parameters that vary. A varying parameter left out of `x` and `by` is pooled
//! into the points, and the subtitle says so.

use std::collections::HashSet;

use serde_json::Value;
use weft_report::plot::sweep::{SweepChart, SweepLine, SweepPoint};

use crate::SweepError;
use crate::table::{RowStatus, Table, mean_ci, param_text};

/// The values of the metric at one `x` of a line, before averaging.
type Gathered = (f64, Vec<f64>);

/// What to draw; `None` picks as described in the module documentation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChartSpec {
    /// The parameter along the horizontal axis.
    pub x: Option<String>,
    /// The metric along the vertical axis.
    pub y: Option<String>,
    /// The parameters whose combinations make the lines.
    pub by: Option<Vec<String>>,
}

/// Builds the chart of `table`; `about` goes into the subtitle (what the runs executed).
pub fn chart(table: &Table, spec: &ChartSpec, about: &str) -> Result<SweepChart, SweepError> {
    let rows: Vec<_> = table
        .rows
        .iter()
        .filter(|r| r.status == RowStatus::Ok)
        .collect();
    if rows.is_empty() {
        return Err(SweepError::Nothing(
            "no run has finished with a result yet: nothing to plot".into(),
        ));
    }
    let distinct = |k: &str| -> usize {
        rows.iter()
            .map(|r| r.params.get(k).map(Value::to_string).unwrap_or_default())
            .collect::<HashSet<_>>()
            .len()
    };
    let numeric = |k: &str| {
        rows.iter()
            .all(|r| r.params.get(k).and_then(Value::as_f64).is_some())
    };
    let varying: Vec<&str> = table
        .keys
        .iter()
        .map(String::as_str)
        .filter(|k| distinct(k) > 1)
        .collect();
    let x = match &spec.x {
        Some(x) if !table.keys.contains(x) => {
            return Err(SweepError::Nothing(format!(
                "--x {x}: not a parameter of this sweep; its parameters are {}",
                table.keys.join(", ")
            )));
        }
        Some(x) if !numeric(x) => {
            return Err(SweepError::Nothing(format!(
                "--x {x}: its values are not all numbers"
            )));
        }
        Some(x) => x.clone(),
        None => varying
            .iter()
            .find(|k| numeric(k))
            .map(|k| k.to_string())
            .ok_or_else(|| {
                SweepError::Nothing(
                    "no numeric parameter varies in this sweep; give one with --x".into(),
                )
            })?,
    };
    let y = match &spec.y {
        Some(y) if !table.metrics.contains(y) => {
            return Err(SweepError::Nothing(format!(
                "--y {y}: not a metric of these results; they have {}",
                table.metrics.join(", ")
            )));
        }
        Some(y) => y.clone(),
        None => table
            .telling_metrics()
            .first()
            .or(table.metrics.first().map(String::as_str).as_ref())
            .map(|m| m.to_string())
            .ok_or_else(|| SweepError::Nothing("the results hold no numeric metric".into()))?,
    };
    let by: Vec<String> = match &spec.by {
        Some(by) => {
            if let Some(bad) = by.iter().find(|b| !table.keys.contains(b) || **b == x) {
                return Err(SweepError::Nothing(format!(
                    "--by {bad}: not a parameter of this sweep other than --x ({})",
                    table.keys.join(", ")
                )));
            }
            by.clone()
        }
        None => varying
            .iter()
            .filter(|k| **k != x)
            .map(|k| k.to_string())
            .collect(),
    };
    let pooled: Vec<&str> = varying
        .iter()
        .copied()
        .filter(|k| *k != x && !by.iter().any(|b| b == k))
        .collect();

    // Lines in the order their first run appears in the plan; points sorted by x.
    let mut lines: Vec<(String, Vec<Gathered>)> = Vec::new();
    for r in &rows {
        let (Some(xv), Some(yv)) = (r.params.get(&x).and_then(Value::as_f64), r.metrics.get(&y))
        else {
            continue;
        };
        let name = if by.is_empty() {
            "all runs".to_string()
        } else {
            by.iter()
                .map(|b| {
                    format!(
                        "{b}={}",
                        r.params.get(b).map(param_text).unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let at = match lines.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                lines.push((name, Vec::new()));
                lines.len() - 1
            }
        };
        let Some((_, points)) = lines.get_mut(at) else {
            continue;
        };
        match points.iter_mut().find(|(px, _)| *px == xv) {
            Some((_, ys)) => ys.push(*yv),
            None => points.push((xv, vec![*yv])),
        }
    }
    let lines: Vec<SweepLine> = lines
        .into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            SweepLine {
                name,
                points: points
                    .into_iter()
                    .filter_map(|(x, ys)| {
                        let (mean, half_width) = mean_ci(&ys)?;
                        // Sums of huge values overflow; such a point cannot be drawn.
                        let finite = x.is_finite()
                            && mean.is_finite()
                            && half_width.is_none_or(f64::is_finite);
                        finite.then_some(SweepPoint {
                            x,
                            mean,
                            half_width,
                            n: ys.len(),
                        })
                    })
                    .collect(),
            }
        })
        .collect();
    if lines.iter().all(|l| l.points.is_empty()) {
        return Err(SweepError::Nothing(format!(
            "no finished run has both {x} and {y}"
        )));
    }
    let seeds: HashSet<Option<u64>> = rows.iter().map(|r| r.seed).collect();
    let mut parts = vec![about.to_string(), format!("{} runs", rows.len())];
    if seeds.len() > 1 {
        parts.push(format!(
            "mean over {} seeds, shaded: 95% confidence interval",
            seeds.len()
        ));
    }
    if !pooled.is_empty() {
        parts.push(format!("pooled over {}", pooled.join(", ")));
    }
    Ok(SweepChart {
        title: format!("{y} against {x}"),
        subtitle: parts.join(" · "),
        x,
        y,
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{AnyCommand, Plan};
    use crate::store::{Record, Status};
    use serde_json::json;
    use std::path::Path;

    fn table() -> Table {
        let list = Plan::parse(
            "command = [\"sim\", \"hol\"]\nseeds = [1, 2, 3]\n[grid]\ncontention = [\"random\", \"rr\"]\nports = [2, 4, 8]\nslots = 1000\n",
            "p.toml",
            Path::new("."),
            &AnyCommand,
        )
        .unwrap()
        .expand();
        let recs: Vec<Record> = list
            .runs
            .iter()
            .map(|r| Record {
                id: r.id.clone(),
                params: r.params.clone(),
                seed: r.seed,
                status: Status::Ok,
                result: Some(json!({ "kind": "sim.hol", "summary": {
                    "throughput": 1.0 / r.params["ports"].as_f64().unwrap() + r.seed.unwrap() as f64 / 1000.0,
                    "limit": 0.58 } })),
                error: None,
                elapsed_s: 0.1,
            })
            .collect();
        Table::new(&list, &recs)
    }

    #[test]
    fn picks_x_y_and_lines_by_default() {
        let c = chart(&table(), &ChartSpec::default(), "weft sim hol").unwrap();
        assert_eq!((c.x.as_str(), c.y.as_str()), ("ports", "throughput"));
        let names: Vec<&str> = c.lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["contention=random", "contention=rr"]);
        let p = c.lines[0].points[0];
        assert_eq!((p.x, p.n), (2.0, 3));
        assert!((p.mean - 0.502).abs() < 1e-12);
        assert!(p.half_width.unwrap() > 0.0);
        assert!(c.subtitle.contains("3 seeds"), "{}", c.subtitle);
    }

    #[test]
    fn pooling_is_said_and_bad_choices_are_refused() {
        let t = table();
        let spec = ChartSpec {
            by: Some(vec![]),
            ..ChartSpec::default()
        };
        let c = chart(&t, &spec, "").unwrap();
        assert_eq!(c.lines.len(), 1);
        assert_eq!(c.lines[0].points[0].n, 6);
        assert!(
            c.subtitle.contains("pooled over contention"),
            "{}",
            c.subtitle
        );
        for (spec, want) in [
            (
                ChartSpec {
                    x: Some("contention".into()),
                    ..ChartSpec::default()
                },
                "not all numbers",
            ),
            (
                ChartSpec {
                    x: Some("nope".into()),
                    ..ChartSpec::default()
                },
                "not a parameter",
            ),
            (
                ChartSpec {
                    y: Some("nope".into()),
                    ..ChartSpec::default()
                },
                "not a metric",
            ),
            (
                ChartSpec {
                    by: Some(vec!["ports".into()]),
                    ..ChartSpec::default()
                },
                "other than --x",
            ),
        ] {
            let e = chart(&t, &spec, "").unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
