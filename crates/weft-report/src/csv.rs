//! CSV export of result documents: one row per sample, nested values flattened into dotted column
//! names (`rtt.p50_ns`, `flows.0.bytes`), numbers without exponents, written through the `csv` crate (quoting, embedded
//! commas and newlines) and atomically (see [`crate::atomic`]).
//!
//! Every command's `--csv FILE` and the flow exporter of `weft trace flows` go through here, so
//! that a spreadsheet or pandas reads any result the same way.

use std::path::Path;

use serde_json::Value;

use crate::schema::ResultDoc;

/// Why a CSV file could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// The CSV writer failed (it writes to memory, so this means a bug or no memory).
    #[error("making CSV: {0}")]
    Csv(#[from] csv::Error),
    /// Writing the file failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
}

/// Flattens `v` into `(column, cell)` pairs: objects and arrays descend with dotted names
/// (`a.b`, `a.0`), strings are written as they are, numbers in their shortest form without an
/// exponent, booleans as `true`/`false`,
/// `null` as an empty cell. A scalar at the top is one column named `value`.
pub fn flatten(v: &Value) -> Vec<(String, String)> {
    flatten_values(v)
        .into_iter()
        .map(|(col, x)| {
            let cell = match x {
                Value::Null => String::new(),
                Value::String(s) => s.clone(),
                // Rust's shortest round-trip form without exponents (10, not 10.0 or 1e1), as
                // spreadsheets read it.
                Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                    (Some(u), _, _) => u.to_string(),
                    (_, Some(i), _) => i.to_string(),
                    (_, _, Some(f)) => f.to_string(),
                    _ => n.to_string(),
                },
                other => other.to_string(),
            };
            (col, cell)
        })
        .collect()
}

/// Flattens `v` into `(column, scalar)` pairs with the column names of [`flatten`], keeping
/// each scalar's JSON value (for a table that formats numbers its own way).
pub fn flatten_values(v: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    flatten_into(v, "", &mut out);
    out
}

fn flatten_into<'a>(v: &'a Value, prefix: &str, out: &mut Vec<(String, &'a Value)>) {
    let name = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                flatten_into(x, &name(k), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten_into(x, &name(&i.to_string()), out);
            }
        }
        scalar => {
            let col = if prefix.is_empty() {
                "value".into()
            } else {
                prefix.to_string()
            };
            out.push((col, scalar));
        }
    }
}

/// `rows` as CSV text with a header line. The columns are `leading` first, in that order, then
/// every other flattened column in order of first appearance; a row without a column has an
/// empty cell there.
pub fn rows_to_csv(rows: &[Value], leading: &[&str]) -> Result<Vec<u8>, CsvError> {
    let flat: Vec<Vec<(String, String)>> = rows.iter().map(flatten).collect();
    let mut columns: Vec<String> = leading.iter().map(|c| c.to_string()).collect();
    let mut seen: std::collections::HashSet<String> = columns.iter().cloned().collect();
    for row in &flat {
        for (c, _) in row {
            if seen.insert(c.clone()) {
                columns.push(c.clone());
            }
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&columns)?;
    for row in &flat {
        let cells: std::collections::HashMap<&str, &str> =
            row.iter().map(|(c, v)| (c.as_str(), v.as_str())).collect();
        w.write_record(
            columns
                .iter()
                .map(|c| cells.get(c.as_str()).copied().unwrap_or("")),
        )?;
    }
    w.into_inner()
        .map_err(|e| CsvError::Csv(e.into_error().into()))
}

/// The document's samples as CSV, one row each. A document without samples (a closed-form
/// answer) gives its summary as the one row, so that the file is never empty.
pub fn doc_to_csv(doc: &ResultDoc) -> Result<Vec<u8>, CsvError> {
    if doc.samples.is_empty() {
        rows_to_csv(std::slice::from_ref(&doc.summary), &[])
    } else {
        rows_to_csv(&doc.samples, &[])
    }
}

/// Writes [`doc_to_csv`] of `doc` to `path` atomically.
pub fn write_doc_csv(path: &Path, doc: &ResultDoc) -> Result<(), CsvError> {
    write_csv(path, &doc_to_csv(doc)?)
}

/// Writes CSV bytes to `path` atomically.
pub fn write_csv(path: &Path, bytes: &[u8]) -> Result<(), CsvError> {
    crate::write_atomic(path, bytes).map_err(|source| CsvError::Io {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engine;
    use serde_json::json;

    fn parse(bytes: &[u8]) -> Vec<Vec<String>> {
        let mut r = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(bytes);
        r.records()
            .map(|x| x.unwrap().iter().map(str::to_string).collect())
            .collect()
    }

    #[test]
    fn nested_samples_become_dotted_columns_and_missing_cells_stay_empty() {
        let mut doc = ResultDoc::new("rr", Engine::Real);
        doc.samples = vec![
            json!({"size": 64, "rtt": {"p50_ns": 1000, "p99_ns": 2000}, "note": "a, \"b\""}),
            json!({"size": 128, "rtt": {"p50_ns": 1500}, "lost": null, "cpus": [0, 1]}),
        ];
        let rows = parse(&doc_to_csv(&doc).unwrap());
        assert_eq!(
            rows[0],
            [
                "note",
                "rtt.p50_ns",
                "rtt.p99_ns",
                "size",
                "cpus.0",
                "cpus.1",
                "lost"
            ]
        );
        assert_eq!(rows[1], ["a, \"b\"", "1000", "2000", "64", "", "", ""]);
        assert_eq!(rows[2], ["", "1500", "", "128", "0", "1", ""]);
        assert_eq!(rows.len(), 3);
    }

    #[test]
    fn leading_columns_come_first_and_a_summary_stands_in_for_no_samples() {
        let rows = [json!({"b": 1, "a": 2, "c": 3})];
        let text = rows_to_csv(&rows, &["c", "a"]).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), "c,a,b\n3,2,1\n");
        let mut doc = ResultDoc::new("calc.mathis", Engine::Model);
        doc.summary = json!({"bound_bps": 1e6});
        assert_eq!(
            parse(&doc_to_csv(&doc).unwrap()),
            [vec!["bound_bps".to_string()], vec!["1000000".to_string()]]
        );
    }

    #[test]
    fn written_atomically_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        let mut doc = ResultDoc::new("x", Engine::Sim);
        doc.samples = vec![json!({"v": 1})];
        write_doc_csv(&p, &doc).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "v\n1\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
