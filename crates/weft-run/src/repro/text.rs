//! The text `weft repro` prints: per study each item with paper / model / sim / emu / real, the
//! miss, the kind and the verdict (and why, for what is not reproduced), one summary line per
//! study, and how long the runs took.

use weft_report::repro_doc::{ENGINES, ItemSample, ReproSummary, Verdict};

/// The whole table for the items and summary of a repro document.
pub fn human(items: &[ItemSample], summary: &ReproSummary) -> String {
    let mut out = String::new();
    for study in &summary.studies {
        out.push_str(&format!("{} {}\n", study.study, study.name));
        out.push_str(&format!(
            "  {:<30} {:<11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}  {}\n",
            "item", "kind", "paper", "model", "sim", "emu", "real", "miss", "verdict"
        ));
        for i in items.iter().filter(|i| i.study == study.study) {
            out.push_str(&line(i));
        }
        out.push_str(&format!("  {}: {}\n\n", study.study, study.line()));
    }
    out.push_str(&timing(summary));
    out
}

/// One item's line, and its reason when it is not reproduced.
fn line(i: &ItemSample) -> String {
    let values: Vec<String> = ENGINES.iter().map(|e| num(i.value(e))).collect();
    let miss = match (i.worst_miss(), i.verdict) {
        (_, Verdict::Held | Verdict::Failed) => "-".into(),
        (Some(m), _) => format!("{:+.1}%", m * 100.0),
        (None, _) => "-".into(),
    };
    let mut out = format!(
        "  {:<30} {:<11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}  {}\n",
        clip(&i.item, 30),
        i.kind,
        num(i.paper),
        values[0],
        values[1],
        values[2],
        values[3],
        miss,
        i.verdict.name()
    );
    let why = match i.verdict {
        Verdict::Missing => format!("waits for {}", i.waits_for),
        Verdict::Missed | Verdict::NotRun | Verdict::Failed => i.reason.clone(),
        Verdict::Method if !i.measured.is_empty() => {
            let shown: Vec<String> = i
                .measured
                .iter()
                .take(4)
                .map(|m| format!("{} = {}", m.label, num(Some(m.value))))
                .collect();
            let more = i.measured.len().saturating_sub(4);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("on loopback: {}{tail}", shown.join(", "))
        }
        _ => String::new(),
    };
    if !why.trim().is_empty() {
        out.push_str(&format!("  {:<30} {}\n", "", clip(&why, 110)));
    }
    out
}

/// How long the runs took, per engine and in all, with the load average around them.
pub fn timing(s: &ReproSummary) -> String {
    let engines: Vec<String> = s
        .engines
        .iter()
        .map(|e| {
            format!(
                "{} {} scenario(s), {:.1} s of work",
                e.engine, e.scenarios, e.busy_s
            )
        })
        .collect();
    let load = match (s.load_before, s.load_after) {
        (Some(a), Some(b)) => format!("; load average {a:.2} before, {b:.2} after"),
        _ => String::new(),
    };
    let mut out = format!(
        "took {:.1} s ({}){load}\n",
        s.wall_s,
        if engines.is_empty() {
            "nothing to run".to_string()
        } else {
            engines.join("; ")
        }
    );
    for u in &s.unavailable {
        out.push_str(&format!("not run: {u}\n"));
    }
    out
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if !x.is_finite() => x.to_string(),
        Some(0.0) => "0".into(),
        Some(x) if x.abs() >= 1e5 => format!("{x:.3e}"),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.3}"),
        Some(x) if x.abs() >= 1e-3 => format!("{x:.5}"),
        Some(x) => format!("{x:.2e}"),
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(3)).collect();
        t.push_str("...");
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_or_so_digits() {
        assert_eq!(num(Some(89.71)), "89.710");
        assert_eq!(num(Some(3550.0)), "3550.0");
        assert_eq!(num(Some(0.0465)), "0.04650");
        assert_eq!(num(Some(2.5e6)), "2.500e6");
        assert_eq!(num(None), "-");
        assert_eq!(clip("abcdef", 5), "ab...");
    }
}
