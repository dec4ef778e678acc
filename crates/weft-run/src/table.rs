//! The text `weft run` prints: the comparisons, then each engine's samples one line per point.

use serde_json::Value;
use weft_model::scenario::{CheckResult, Comparison, Param, Scenario};
use weft_report::ResultDoc;

/// The scenario's name, the engines that could not run and why, every comparison's table, every
/// check's verdicts, and each engine's samples (numeric metrics, then notes not already printed
/// for the point before; a point the engine skipped, `skipped: why`).
pub fn human(
    s: &Scenario,
    docs: &[(&str, ResultDoc)],
    unavailable: &[(&str, String)],
    comps: &[Comparison],
    checks: &[CheckResult],
) -> String {
    let mut out = format!("scenario {}", s.name);
    if !s.description.is_empty() {
        out.push_str(&format!(": {}", s.description));
    }
    out.push('\n');
    for (n, why) in unavailable {
        out.push_str(&format!("  {n}: {why}\n"));
    }
    for c in comps {
        out.push('\n');
        out.push_str(&c.table_of(&workload_name(s, c.expect.workload)));
    }
    for c in checks {
        out.push('\n');
        out.push_str(&c.table());
    }
    out.push('\n');
    for (name, doc) in docs {
        out.push_str(&format!("{name}:\n"));
        let labels = point_labels(s);
        let mut last_notes: Option<&Value> = None;
        for (i, sample) in doc.samples.iter().enumerate() {
            let label = labels.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
            if let Some(why) = sample.get("skipped").and_then(Value::as_str) {
                out.push_str(&format!("  {label:<18} skipped: {why}\n"));
                last_notes = None;
                continue;
            }
            let metrics: Vec<String> = sample
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| v.is_number() && !matches!(k.as_str(), "workload" | "point"))
                .map(|(k, v)| format!("{k}={}", short(v)))
                .collect();
            out.push_str(&format!("  {label:<18} {}\n", metrics.join(" ")));
            // Notes repeated from the previous point are not printed again.
            let notes = sample.get("notes");
            if notes != last_notes
                && let Some(list) = notes.and_then(Value::as_array)
            {
                for n in list.iter().filter_map(Value::as_str) {
                    out.push_str(&format!("  {:<18}   ({n})\n", ""));
                }
            }
            last_notes = notes;
        }
    }
    out
}

/// `w<k>` for each point, with the swept field and its value where the workload sweeps one.
fn point_labels(s: &Scenario) -> Vec<String> {
    s.points()
        .iter()
        .map(|p| {
            let field = s
                .workloads
                .get(p.workload)
                .and_then(|w| w.sweep.as_ref())
                .map(|x| x.field.clone());
            let w = workload_name(s, p.workload);
            match (field, p.value) {
                (Some(f), Some(v)) => format!("{w} {f}={}", param(v)),
                _ => w,
            }
        })
        .collect()
}

/// `w<k>`, and what it runs where the number alone says nothing: a message-passing workload's
/// pattern (`w0 (BT class S)` for an NPB skeleton, `w1 (allreduce)`).
pub fn workload_name(s: &Scenario, k: usize) -> String {
    use weft_model::mp::Pattern;
    match s.workloads.get(k).and_then(|w| w.mp.as_ref()) {
        Some(mp) => match mp.pattern {
            Pattern::Npb(b, c) => format!(
                "w{k} ({} class {})",
                b.name().to_ascii_uppercase(),
                c.letter()
            ),
            p => format!("w{k} ({p})"),
        },
        None => format!("w{k}"),
    }
}

fn param(p: Param) -> String {
    match p {
        Param::Count(n) => n.to_string(),
        Param::Number(x) => format!("{x}"),
        Param::Size(s) => s.0.to_string(),
        Param::Rate(r) => r.to_string(),
        Param::Duration(d) => d.to_string(),
    }
}

/// A number short enough for a table: integers whole, large values to 0.1, small to 4 places.
fn short(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e12 => format!("{x:.0}"),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.4}"),
        None => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_shortened_by_size() {
        assert_eq!(short(&serde_json::json!(2500.0)), "2500");
        assert_eq!(short(&serde_json::json!(2045.37)), "2045.4");
        assert_eq!(short(&serde_json::json!(0.123456)), "0.1235");
        assert_eq!(short(&serde_json::json!("x")), "\"x\"");
    }
}
