//! Paper against engines: pairs each published figure named by an [`Expect`] with the samples each
//! engine reported for the same points, and computes the relative miss.

use serde::Serialize;
use serde_json::Value;

use super::{Expect, Figures, Param, Scenario};

/// The `source` of a comparison made without a published figure.
pub const NO_SOURCE: &str = "(none)";

/// How an `[[expect]]`'s `items` marks a row that is no catalogue item (`"-"`).
pub const NO_ITEM: &str = "-";

/// The samples one engine reported for a scenario (the `samples` of its result document).
#[derive(Clone, Copy, Debug)]
pub struct EngineSamples<'a> {
    /// Engine name (`model`, `sim`, `emu`).
    pub engine: &'a str,
    /// One object per point with `"workload"` and the metrics.
    pub samples: &'a [Value],
}

/// One engine's value at one point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// Engine name.
    pub engine: String,
    /// The metric it reported, if any.
    pub value: Option<f64>,
    /// (value - paper) / |paper|, if both exist.
    pub miss: Option<f64>,
    /// Whether |miss| <= tolerance.
    pub within: Option<bool>,
}

/// One point: its label, the published figure and every engine's value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// `inputs=3`, or `#2` for a point without a sweep value.
    pub label: String,
    /// The swept value of the point in its base unit (count, bytes, bit/s, ns), if it has one.
    pub x: Option<f64>,
    /// The catalogue item this row reproduces, if the scenario names one.
    pub item: Option<String>,
    /// The published figure for this point.
    pub paper: Option<f64>,
    /// One cell per engine, in the order given.
    pub cells: Vec<Cell>,
}

/// The comparison for one [`Expect`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// What was compared.
    pub expect: Expect,
    /// One row per point (or per published value if there are more of those).
    pub rows: Vec<Row>,
    /// Why the figure could not be read, if it could not.
    pub error: Option<String>,
}

impl Comparison {
    /// Compares the figure named by `expect` with the engines' samples of `scenario`; without
    /// `figures` the engines are set side by side with no paper column.
    pub fn new(
        expect: &Expect,
        figures: Option<&Figures>,
        scenario: &Scenario,
        engines: &[EngineSamples<'_>],
    ) -> Comparison {
        let labels = point_labels(scenario, expect.workload);
        let xs: Vec<Option<f64>> = scenario
            .points()
            .iter()
            .filter(|p| p.workload == expect.workload)
            .map(|p| p.value.map(|v| v.as_f64()))
            .collect();
        let (paper, error) = match figures.map(|f| paper_values(expect, f)) {
            None => (Vec::new(), None),
            Some(Ok(v)) => (v, None),
            Some(Err(e)) => (Vec::new(), Some(e)),
        };
        let per_engine: Vec<Vec<Option<f64>>> = engines
            .iter()
            .map(|e| {
                e.samples
                    .iter()
                    .filter(|s| {
                        s.get("workload").and_then(Value::as_u64).unwrap_or(0)
                            == expect.workload as u64
                    })
                    .map(|s| s.get(&expect.metric).and_then(Value::as_f64))
                    .collect()
            })
            .collect();
        let rows_n = if paper.len() > 1 {
            paper.len().max(labels.len())
        } else {
            labels.len().max(paper.len())
        };
        let rows = (0..rows_n)
            .map(|i| {
                let p = if paper.len() == 1 {
                    paper.first().copied()
                } else {
                    paper.get(i).copied()
                };
                let cells = engines
                    .iter()
                    .zip(&per_engine)
                    .map(|(e, vals)| {
                        let value = vals.get(i).copied().flatten();
                        let miss = match (value, p) {
                            (Some(v), Some(p)) if p != 0.0 => Some((v - p) / p.abs()),
                            _ => None,
                        };
                        Cell {
                            engine: e.engine.to_string(),
                            value,
                            miss,
                            within: miss.map(|m| m.abs() <= expect.tolerance),
                        }
                    })
                    .collect();
                Row {
                    label: labels.get(i).cloned().unwrap_or_else(|| format!("#{i}")),
                    x: xs.get(i).copied().flatten(),
                    item: expect.item(i).map(str::to_string),
                    paper: p,
                    cells,
                }
            })
            .collect::<Vec<Row>>();
        // A file that names items names one per row; fewer or more is the file's mistake, which
        // only the figures' length reveals.
        let error = error.or_else(|| {
            (figures.is_some() && !expect.items.is_empty() && expect.items.len() != rows.len())
                .then(|| {
                    format!(
                        "`items` names {} item(s) for {} row(s)",
                        expect.items.len(),
                        rows.len()
                    )
                })
        });
        Comparison {
            expect: expect.clone(),
            rows,
            error,
        }
    }

    /// Whether every engine value that has a paper figure is within tolerance.
    pub fn all_within(&self) -> bool {
        self.error.is_none()
            && self
                .rows
                .iter()
                .flat_map(|r| &r.cells)
                .all(|c| c.within != Some(false))
    }

    /// The comparison as a text table: point, paper, then value and miss per engine.
    pub fn table(&self) -> String {
        self.table_of(&format!("workload {}", self.expect.workload))
    }

    /// [`Comparison::table`] with the workload called `workload` (`"w2 (SP class S)"`) where
    /// nothing published names the row.
    pub fn table_of(&self, workload: &str) -> String {
        let mut out = if self.expect.source == NO_SOURCE {
            format!(
                "{} of {workload}, engines side by side\n",
                self.expect.metric
            )
        } else {
            format!(
                "{} vs {} (tolerance {:.1}%)\n",
                self.expect.metric,
                self.expect.source,
                self.expect.tolerance * 100.0
            )
        };
        if let Some(e) = &self.error {
            out.push_str(&format!("  cannot read the figure: {e}\n"));
        }
        let mut head = format!("  {:<16} {:>10}", "point", "paper");
        if let Some(first) = self.rows.first() {
            for c in &first.cells {
                head.push_str(&format!(" {:>10} {:>8}", c.engine, "miss"));
            }
        }
        out.push_str(&head);
        out.push('\n');
        for r in &self.rows {
            let mut line = format!("  {:<16} {:>10}", r.label, num(r.paper));
            for c in &r.cells {
                let miss = match (c.miss, c.within) {
                    (Some(m), Some(true)) => format!("{:+.1}%", m * 100.0),
                    (Some(m), _) => format!("{:+.1}%!", m * 100.0),
                    _ => "-".into(),
                };
                line.push_str(&format!(" {:>10} {:>8}", num(c.value), miss));
            }
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

/// A label per point of workload `workload`: `inputs=3` for a swept value, `#2` otherwise.
pub(super) fn point_labels(scenario: &Scenario, workload: usize) -> Vec<String> {
    scenario
        .points()
        .iter()
        .filter(|p| p.workload == workload)
        .enumerate()
        .map(
            |(i, p)| match (&p.value, &p.spec.sweep, scenario.workloads.get(p.workload)) {
                (Some(v), _, Some(w)) => format!(
                    "{}={}",
                    w.sweep.as_ref().map_or("point", |s| s.field.as_str()),
                    param_text(v)
                ),
                _ => format!("#{i}"),
            },
        )
        .collect()
}

fn paper_values(expect: &Expect, figures: &Figures) -> Result<Vec<f64>, String> {
    let all = figures.numbers(&expect.source).map_err(|e| e.to_string())?;
    match &expect.select {
        None => Ok(all),
        Some(idx) => idx
            .iter()
            .map(|&i| {
                all.get(i).copied().ok_or_else(|| {
                    format!(
                        "select index {i} is past the {} values at {:?}",
                        all.len(),
                        expect.source
                    )
                })
            })
            .collect(),
    }
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.is_infinite() => "inf".into(),
        Some(x) if x.abs() >= 1000.0 => format!("{x:.1}"),
        Some(x) if x.abs() >= 10.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.4}"),
    }
}

fn param_text(p: &Param) -> String {
    match p {
        Param::Count(n) => n.to_string(),
        Param::Number(x) => format!("{x}"),
        Param::Size(s) => s.0.to_string(),
        Param::Rate(r) => r.to_string(),
        Param::Duration(d) => d.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pairs_points_with_figures_and_flags_misses() {
        let s = Scenario::parse(
            "name = \"x\"\n[[workload]]\nkind = \"saturated\"\ninputs = [1, 2]\noutputs = 5\n\
             [expect]\nsource = \"g.v\"\ntolerance = 0.02\n",
            "x.toml",
        )
        .unwrap();
        let f = Figures::parse("[g]\nv = [10.0, 20.0]\n", "f.toml").unwrap();
        let model = [
            json!({"workload": 0, "throughput_mbps": 10.1}),
            json!({"workload": 0, "throughput_mbps": 25.0}),
        ];
        let c = Comparison::new(
            &s.expect[0],
            Some(&f),
            &s,
            &[EngineSamples {
                engine: "model",
                samples: &model,
            }],
        );
        assert_eq!(c.rows.len(), 2);
        assert_eq!(c.rows[0].label, "inputs=1");
        assert_eq!(c.rows[0].cells[0].within, Some(true));
        assert_eq!(c.rows[1].cells[0].within, Some(false));
        assert!(!c.all_within());
        assert!(c.table().contains("+25.0%!"), "{}", c.table());
    }
}
