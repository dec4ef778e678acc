//! The collected results: one row per run, its parameters and its metrics as columns, written as
//! CSV and summarised for the terminal as one line per grid point (the mean over seeds and the
//! half-width of its 95% confidence interval).
//!
//! A run's metrics are the numbers of its result document: the leaves of `summary` (nested keys
//! joined with dots), and the fields of its one sample, or `samples.I.FIELD` when it has several.
//! A metric named like a parameter is called `result.NAME`, so that columns stay unique.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::runs::RunList;
use crate::store::{self, Record, Status};

/// Column names the table itself uses.
const OWN_COLUMNS: &[&str] = &["id", "seed", "status", "elapsed_s", "error"];

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowStatus {
    /// Finished with a result.
    Ok,
    /// Finished with an error.
    Failed,
    /// Not run yet (or its record is not collected yet).
    Pending,
}

impl RowStatus {
    /// As written in the CSV.
    pub fn as_str(self) -> &'static str {
        match self {
            RowStatus::Ok => "ok",
            RowStatus::Failed => "failed",
            RowStatus::Pending => "pending",
        }
    }
}

/// One run.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The run's id.
    pub id: String,
    /// Its seed.
    pub seed: Option<u64>,
    /// Where it stands.
    pub status: RowStatus,
    /// Its grid point.
    pub params: Map<String, Value>,
    /// Its metrics by column name.
    pub metrics: HashMap<String, f64>,
    /// Its wall time, seconds.
    pub elapsed_s: Option<f64>,
    /// Its error, when failed.
    pub error: Option<String>,
}

/// The table of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Parameter columns, in plan order.
    pub keys: Vec<String>,
    /// Metric columns, in the order first met.
    pub metrics: Vec<String>,
    /// One row per run.
    pub rows: Vec<Row>,
    /// Records of runs that are not in the plan (an older plan in the same directory).
    pub stray: usize,
}

impl Table {
    /// One row per run of `list`, in plan order, from the records that stand for them.
    pub fn new(list: &RunList, records: &[Record]) -> Table {
        let best = store::by_id(records);
        let mut t = Table {
            keys: list.keys.clone(),
            metrics: Vec::new(),
            rows: Vec::new(),
            stray: 0,
        };
        for run in &list.runs {
            let record = best.get(run.id.as_str()).copied();
            let mut row = Row {
                id: run.id.clone(),
                seed: run.seed,
                status: RowStatus::Pending,
                params: run.params.clone(),
                metrics: HashMap::new(),
                elapsed_s: None,
                error: None,
            };
            if let Some(r) = record {
                t.fill(&mut row, r);
            }
            t.rows.push(row);
        }
        let ids: std::collections::HashSet<&str> =
            list.runs.iter().map(|r| r.id.as_str()).collect();
        t.stray = best.keys().filter(|id| !ids.contains(*id)).count();
        t
    }

    /// A table of whatever runs `records` hold (no plan at hand): parameter columns sorted.
    pub fn from_records(records: &[Record]) -> Table {
        let best = store::by_id(records);
        let mut keys: Vec<String> = Vec::new();
        let mut order: Vec<&Record> = Vec::new();
        for r in records {
            if best.get(r.id.as_str()).is_some_and(|b| std::ptr::eq(*b, r)) {
                order.push(r);
                for k in r.params.keys() {
                    if !keys.contains(k) {
                        keys.push(k.clone());
                    }
                }
            }
        }
        keys.sort();
        let mut t = Table {
            keys,
            metrics: Vec::new(),
            rows: Vec::new(),
            stray: 0,
        };
        for r in order {
            let mut row = Row {
                id: r.id.clone(),
                seed: r.seed,
                status: RowStatus::Pending,
                params: r.params.clone(),
                metrics: HashMap::new(),
                elapsed_s: None,
                error: None,
            };
            t.fill(&mut row, r);
            t.rows.push(row);
        }
        t
    }

    fn fill(&mut self, row: &mut Row, r: &Record) {
        row.elapsed_s = Some(r.elapsed_s);
        match r.status {
            Status::Failed => {
                row.status = RowStatus::Failed;
                row.error = r.error.clone();
            }
            Status::Ok => {
                row.status = RowStatus::Ok;
                for (name, v) in metrics_of(r.result.as_ref().unwrap_or(&Value::Null)) {
                    let name = if self.keys.contains(&name) || OWN_COLUMNS.contains(&name.as_str())
                    {
                        format!("result.{name}")
                    } else {
                        name
                    };
                    if !self.metrics.contains(&name) {
                        self.metrics.push(name.clone());
                    }
                    row.metrics.insert(name, v);
                }
            }
        }
    }

    /// Runs ok, failed and pending.
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |s| self.rows.iter().filter(|r| r.status == s).count();
        (
            n(RowStatus::Ok),
            n(RowStatus::Failed),
            n(RowStatus::Pending),
        )
    }

    /// The table as CSV: `id, seed, status`, the parameters, the metrics, `elapsed_s, error`.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let header: Vec<&str> = ["id", "seed", "status"]
            .into_iter()
            .chain(self.keys.iter().map(String::as_str))
            .chain(self.metrics.iter().map(String::as_str))
            .chain(["elapsed_s", "error"])
            .collect();
        out.push_str(
            &header
                .iter()
                .map(|h| csv_field(h))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push('\n');
        for r in &self.rows {
            let mut cells = vec![
                r.id.clone(),
                r.seed.map(|s| s.to_string()).unwrap_or_default(),
                r.status.as_str().to_string(),
            ];
            cells.extend(
                self.keys
                    .iter()
                    .map(|k| r.params.get(k).map(param_text).unwrap_or_default()),
            );
            cells.extend(
                self.metrics
                    .iter()
                    .map(|m| r.metrics.get(m).map(|v| v.to_string()).unwrap_or_default()),
            );
            cells.push(r.elapsed_s.map(|e| format!("{e:.3}")).unwrap_or_default());
            cells.push(r.error.clone().unwrap_or_default());
            out.push_str(
                &cells
                    .iter()
                    .map(|c| csv_field(c))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            out.push('\n');
        }
        out
    }

    /// The metrics worth showing, most telling first: those that differ between the seeds of a
    /// grid point (the outcomes of the runs), then those that differ only between points
    /// (functions of the parameters, such as a formula printed beside a simulation). Constants
    /// and echoes of a parameter (`result.ports` always equal to `ports`) are left out.
    pub fn telling_metrics(&self) -> Vec<&str> {
        let points = self.points();
        let mut by_seed = Vec::new();
        let mut by_point = Vec::new();
        for m in &self.metrics {
            let echo = m.strip_prefix("result.").is_some_and(|k| {
                self.rows.iter().all(|r| {
                    r.metrics
                        .get(m)
                        .is_none_or(|v| r.params.get(k).and_then(Value::as_f64) == Some(*v))
                })
            });
            if echo {
                continue;
            }
            let differ = |rows: &mut dyn Iterator<Item = &Row>| {
                let mut vals = rows.filter_map(|r| r.metrics.get(m));
                vals.next().is_some_and(|first| vals.any(|v| v != first))
            };
            if points
                .iter()
                .any(|(_, rows)| differ(&mut rows.iter().copied()))
            {
                by_seed.push(m.as_str());
            } else if differ(&mut self.rows.iter()) {
                by_point.push(m.as_str());
            }
        }
        by_seed.extend(by_point);
        by_seed
    }

    /// The grid points in plan order, each with its rows (one per seed).
    pub fn points(&self) -> Vec<(&Map<String, Value>, Vec<&Row>)> {
        let mut out: Vec<(&Map<String, Value>, Vec<&Row>)> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        for r in &self.rows {
            let key = Value::Object(r.params.clone()).to_string();
            match at.get(&key) {
                Some(&i) => {
                    if let Some(p) = out.get_mut(i) {
                        p.1.push(r);
                    }
                }
                None => {
                    at.insert(key, out.len());
                    out.push((&r.params, vec![r]));
                }
            }
        }
        out
    }

    /// A text table for the terminal: one line per grid point with the runs done and, for up to
    /// `max_metrics` metrics that vary, the mean over seeds ± the 95% confidence half-width.
    pub fn summary(&self, max_metrics: usize) -> String {
        let mut metrics = self.telling_metrics();
        if metrics.is_empty() {
            metrics = self.metrics.iter().map(String::as_str).collect();
        }
        let hidden = metrics.len().saturating_sub(max_metrics);
        metrics.truncate(max_metrics);
        let mut header: Vec<String> = self.keys.clone();
        header.push("runs".into());
        header.extend(metrics.iter().map(|m| m.to_string()));
        let mut lines: Vec<Vec<String>> = Vec::new();
        for (params, rows) in self.points() {
            let ok = rows.iter().filter(|r| r.status == RowStatus::Ok).count();
            let mut cells: Vec<String> = self
                .keys
                .iter()
                .map(|k| params.get(k).map(param_text).unwrap_or_default())
                .collect();
            cells.push(format!("{ok}/{}", rows.len()));
            for m in &metrics {
                let vals: Vec<f64> = rows
                    .iter()
                    .filter_map(|r| r.metrics.get(*m).copied())
                    .collect();
                cells.push(match mean_ci(&vals) {
                    None => "-".into(),
                    Some((mean, Some(h))) if h > 0.0 => format!("{} ±{}", short(mean), short(h)),
                    Some((mean, _)) => short(mean),
                });
            }
            lines.push(cells);
        }
        let mut out = String::new();
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                lines
                    .iter()
                    .filter_map(|l| l.get(i))
                    .chain(header.get(i))
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for l in std::iter::once(&header).chain(&lines) {
            let cells: Vec<String> = l
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        }
        if hidden > 0 {
            let _ = writeln!(out, "({hidden} more metrics in the CSV)");
        }
        out
    }
}

/// The mean of `vals` and, from two values on, the half-width of its 95% confidence interval
/// (Student's t with n - 1 degrees of freedom).
pub fn mean_ci(vals: &[f64]) -> Option<(f64, Option<f64>)> {
    if vals.is_empty() {
        return None;
    }
    let n = vals.len() as f64;
    let mean = vals.iter().sum::<f64>() / n;
    if vals.len() < 2 {
        return Some((mean, None));
    }
    let var = vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let t = weft_probe::rr::stats::quantile_975(vals.len() as u64 - 1);
    Some((mean, Some(t * var.sqrt() / n.sqrt())))
}

/// The numbers of a result document, named as described in the module documentation.
pub fn metrics_of(doc: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    if let Some(s) = doc.get("summary") {
        leaves("", s, &mut out);
    }
    let samples = doc
        .get("samples")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    match samples {
        [] => {}
        [one] => {
            let mut fields = Vec::new();
            leaves("", one, &mut fields);
            for (k, v) in fields {
                if !out.iter().any(|(n, _)| *n == k) {
                    out.push((k, v));
                }
            }
        }
        many => {
            for (i, s) in many.iter().enumerate() {
                leaves(&format!("samples.{i}"), s, &mut out);
            }
        }
    }
    out
}

fn leaves(prefix: &str, v: &Value, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.push((prefix.to_string(), x));
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let name = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(&name, x, out);
            }
        }
        _ => {}
    }
}

/// A parameter value as a table cell: strings bare, the rest as JSON.
pub fn param_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A number with four significant digits, for the terminal.
pub fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    if v.fract() == 0.0 && v.abs() < 1e12 {
        return format!("{v:.0}");
    }
    let digits = 3 - v.abs().log10().floor() as i32;
    if (-1..=12).contains(&digits) {
        format!("{v:.*}", digits.max(0) as usize)
    } else {
        format!("{v:.3e}")
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180). Written here
/// rather than with the `csv` crate: this is the only CSV the sweep writes and it never reads one.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{AnyCommand, Plan};
    use serde_json::json;
    use std::path::Path;

    fn list() -> RunList {
        Plan::parse(
            "command = [\"sim\", \"hol\"]\nseeds = [1, 2, 3]\n[grid]\nports = [2, 4]\ncontention = \"rr\"\n",
            "p.toml",
            Path::new("."),
            &AnyCommand,
        )
        .unwrap()
        .expand()
    }

    fn ok(run: &crate::runs::Run, tput: f64) -> Record {
        Record {
            id: run.id.clone(),
            params: run.params.clone(),
            seed: run.seed,
            status: Status::Ok,
            result: Some(
                json!({ "kind": "sim.hol", "summary": { "ports": 2, "throughput": tput, "limit": 0.58 },
                                  "samples": [{ "ports": 2, "throughput": tput, "x": { "y": 1 } }] }),
            ),
            error: None,
            elapsed_s: 0.1,
        }
    }

    #[test]
    fn rows_follow_the_plan_and_metrics_the_documents() {
        let list = list();
        let mut recs: Vec<Record> = list
            .runs
            .iter()
            .take(4)
            .enumerate()
            .map(|(i, r)| ok(r, 0.7 + i as f64 / 100.0))
            .collect();
        recs[3].status = Status::Failed;
        recs[3].result = None;
        recs[3].error = Some("exit status: 2: bad, \"very\"".into());
        let t = Table::new(&list, &recs);
        assert_eq!(t.rows.len(), 6);
        assert_eq!(t.counts(), (3, 1, 2));
        assert_eq!(
            t.metrics,
            vec!["limit", "result.ports", "throughput", "x.y"]
        );
        assert_eq!(t.telling_metrics(), vec!["throughput"]);
        let csv = t.to_csv();
        let mut lines = csv.lines();
        assert_eq!(
            lines.next().unwrap(),
            "id,seed,status,ports,contention,limit,result.ports,throughput,x.y,elapsed_s,error"
        );
        assert!(csv.contains(",failed,4,rr,"), "{csv}");
        assert!(
            csv.contains("\"exit status: 2: bad, \"\"very\"\"\""),
            "{csv}"
        );
        assert_eq!(csv.lines().count(), 7);
        let s = t.summary(4);
        assert!(s.contains("3/3"), "{s}");
        assert!(s.contains("0.7100 ±0.02484"), "{s}");
    }

    #[test]
    fn confidence_interval_uses_students_t() {
        let (m, h) = mean_ci(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(m, 2.0);
        assert!((h.unwrap() - 4.302_652_73 / 3f64.sqrt()).abs() < 1e-6);
        assert_eq!(mean_ci(&[5.0]), Some((5.0, None)));
        assert_eq!(mean_ci(&[]), None);
    }

    #[test]
    fn several_samples_are_numbered() {
        let m =
            metrics_of(&json!({ "summary": {}, "samples": [{ "a": 1 }, { "a": 2, "s": "x" }] }));
        assert_eq!(
            m,
            vec![
                ("samples.0.a".to_string(), 1.0),
                ("samples.1.a".to_string(), 2.0)
            ]
        );
    }
}
