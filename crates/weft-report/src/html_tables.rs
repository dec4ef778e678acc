//! The report's tables: the summary per study (counts per verdict and a bar), a table per study
//! of every item (paper, engines, miss, tolerance, verdict, why, the scenario behind it), and
//! the scenarios with the command that runs each.

use std::fmt::Write as _;

use serde_json::Value;

use crate::html::esc;
use crate::repro_doc::{ENGINES, ItemSample, ReproSummary, StudySummary, Verdict};

/// What each verdict means, for the legend under the summary.
const MEANING: [(Verdict, &str); 9] = [
    (
        Verdict::Reproduced,
        "predicted from parameters not fitted to it, within tolerance on every engine it holds",
    ),
    (
        Verdict::Missed,
        "predicted, outside tolerance on an engine it holds",
    ),
    (
        Verdict::Fitted,
        "a parameter was fitted to this figure: shown, never counted",
    ),
    (Verdict::Input, "the figure is a parameter of the scenario"),
    (Verdict::Held, "a stated check that held"),
    (Verdict::Failed, "a stated check that failed"),
    (
        Verdict::Method,
        "a measuring method, re-run on loopback: the value is this machine's",
    ),
    (Verdict::Missing, "no engine reproduces it yet"),
    (Verdict::NotRun, "its engines did not run here"),
];

/// The summary section: one row per study with its counts and a bar, a total, the time taken.
pub fn summary(s: &ReproSummary, items: &[ItemSample]) -> String {
    let mut out = String::from("<section id=\"summary\"><h2>Summary per study</h2>\n");
    let engines: Vec<String> = s
        .engines
        .iter()
        .map(|e| {
            format!(
                "{} ({} scenarios, {:.1} s of work)",
                e.engine, e.scenarios, e.busy_s
            )
        })
        .collect();
    let load = match (s.load_before, s.load_after) {
        (Some(a), Some(b)) => format!(", load average {a:.2} before and {b:.2} after"),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "<p class=\"sub\">{} items; the runs took {:.1} s: {}{}.</p>",
        items.len(),
        s.wall_s,
        esc(&engines.join(", ")),
        esc(&load)
    );
    for u in &s.unavailable {
        let _ = writeln!(out, "<p class=\"sub\">Not run: {}</p>", esc(u));
    }
    out.push_str("<div class=\"scroll\"><table class=\"summary\">\n<tr><th>study</th><th></th>");
    for v in Verdict::ALL {
        let _ = write!(out, "<th>{}</th>", v.name());
    }
    out.push_str("<th>items</th><th>share</th></tr>\n");
    let mut total = StudySummary {
        study: String::new(),
        name: "all studies".into(),
        counts: Default::default(),
    };
    for st in &s.studies {
        out.push_str(&summary_row(st, true));
        for (v, n) in &st.counts {
            *total.counts.entry(*v).or_insert(0) += n;
        }
    }
    out.push_str(&summary_row(&total, false).replacen("<tr>", "<tr class=\"total\">", 1));
    out.push_str("</table></div>\n<p class=\"legend-row\">");
    for (v, what) in MEANING {
        let _ = write!(out, "{} {}. ", badge(v), esc(what));
    }
    out.push_str("</p>\n</section>\n");
    out
}

fn summary_row(st: &StudySummary, link: bool) -> String {
    let name = if link {
        format!(
            "<a href=\"#study-{}\">{}</a>",
            esc(&st.study),
            esc(&st.name)
        )
    } else {
        esc(&st.name)
    };
    let mut out = format!("<tr><td>{}</td><td>{name}</td>", esc(&st.study));
    for v in Verdict::ALL {
        let _ = write!(out, "<td class=\"num\">{}</td>", st.count(v));
    }
    let total = st.total().max(1);
    let _ = write!(
        out,
        "<td class=\"num\">{}</td><td><div class=\"share\">",
        st.total()
    );
    for v in Verdict::ALL {
        let n = st.count(v);
        if n > 0 {
            let _ = write!(
                out,
                "<span class=\"b-{}\" style=\"width:{:.2}%\" title=\"{}: {n}\"></span>",
                v.name(),
                100.0 * n as f64 / total as f64,
                v.name()
            );
        }
    }
    out.push_str("</div></td></tr>\n");
    out
}

/// A verdict as a coloured label.
pub fn badge(v: Verdict) -> String {
    format!("<span class=\"v v-{0}\">{0}</span>", v.name())
}

/// One study's section: its summary line and every item.
pub fn study(st: &StudySummary, items: &[ItemSample]) -> String {
    let mut out = format!(
        "<section id=\"study-{}\"><h2>{} {}</h2>\n<p class=\"sub\">{}</p>\n",
        esc(&st.study),
        esc(&st.study),
        esc(&st.name),
        esc(&st.line())
    );
    out.push_str("<div class=\"scroll\"><table class=\"items\">\n<tr><th>item</th><th>where, what</th><th>kind</th><th>unit</th><th>paper</th>");
    for e in ENGINES {
        let _ = write!(out, "<th>{e}</th>");
    }
    out.push_str("<th>miss</th><th>tolerance</th><th>verdict</th></tr>\n");
    for i in items.iter().filter(|i| i.study == st.study) {
        out.push_str(&item_row(i));
    }
    out.push_str("</table></div>\n</section>\n");
    out
}

/// Columns of an item's first row; its second row spans them all.
const COLUMNS: usize = 8 + ENGINES.len();

fn item_row(i: &ItemSample) -> String {
    let mut out = format!(
        "<tr class=\"item\" id=\"item-{id}\"><td class=\"id\"><code>{id}</code></td><td class=\"what\"><b>{}</b>: {}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>",
        esc(&i.location),
        esc(&i.what),
        esc(&i.kind),
        esc(&i.unit),
        num(i.paper),
        id = esc(&i.item)
    );
    for e in ENGINES {
        let mark = match i.held.get(e) {
            Some(true) => " ✓",
            Some(false) => " ✗",
            None => "",
        };
        let _ = write!(out, "<td class=\"num\">{}{mark}</td>", num(i.value(e)));
    }
    let miss = i
        .worst_miss()
        .map(|m| format!("{:+.1}%", m * 100.0))
        .unwrap_or_else(|| "-".into());
    let tol = i
        .tolerance
        .filter(|_| matches!(i.kind.as_str(), "predicted" | "fitted" | "input"))
        .map(|t| format!("{:.1}%", t * 100.0))
        .unwrap_or_else(|| "-".into());
    let _ = writeln!(
        out,
        "<td class=\"num\">{miss}</td><td class=\"num\">{tol}</td><td>{}</td></tr>",
        badge(i.verdict)
    );
    let mut detail = why(i);
    let scenario = scenario_cell(i);
    if !scenario.is_empty() {
        if !detail.is_empty() {
            detail.push_str("<br>");
        }
        detail.push_str(&format!("scenario: {scenario}"));
    }
    let _ = writeln!(
        out,
        "<tr class=\"detail\"><td></td><td colspan=\"{}\">{detail}</td></tr>",
        COLUMNS - 1
    );
    out
}

/// The reason column: the catalogue's why, what a missing item waits for, a check as written,
/// what a method measured.
fn why(i: &ItemSample) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(c) = &i.check {
        parts.push(format!("check: <code>{}</code>", esc(c)));
    }
    if !i.reason.trim().is_empty() {
        parts.push(esc(&i.reason));
    }
    if !i.waits_for.trim().is_empty() {
        parts.push(format!("<b>waits for</b> {}", esc(&i.waits_for)));
    }
    if !i.measured.is_empty() {
        let shown: Vec<String> = i
            .measured
            .iter()
            .map(|m| format!("{} = {}", esc(&m.label), num(Some(m.value))))
            .collect();
        parts.push(format!("on loopback: {}", shown.join("; ")));
    }
    if !i.conditions.trim().is_empty() {
        parts.push(format!(
            "<span class=\"sub\">conditions: {}</span>",
            esc(&i.conditions)
        ));
    }
    parts.join("<br>")
}

fn scenario_cell(i: &ItemSample) -> String {
    let Some(s) = &i.scenario else {
        return String::new();
    };
    let mut out = format!("<a href=\"#scenario-{0}\"><code>{0}</code></a>", esc(s));
    if let Some(p) = &i.point {
        out.push_str(&format!(" at <code>{}</code>", esc(p)));
    }
    if let Some(m) = &i.metric {
        out.push_str(&format!(", <code>{}</code>", esc(m)));
    }
    out
}

/// The scenarios behind the items: what each is, how many items it holds and how to run it.
pub fn scenarios(items: &[ItemSample], about: &Value) -> String {
    let mut stems: Vec<&str> = items.iter().filter_map(|i| i.scenario.as_deref()).collect();
    stems.sort_unstable();
    stems.dedup();
    let mut out = String::from(
        "<section id=\"scenarios\"><h2>Scenarios</h2>\n<p class=\"sub\">The scenario behind \
         each row: the files are in <code>scenarios/</code>, and each runs on its own with the \
         command beside it.</p>\n<div class=\"scroll\"><table>\n<tr><th>scenario</th><th>what it \
         is</th><th>items</th><th>run it</th></tr>\n",
    );
    for s in stems {
        let n = items
            .iter()
            .filter(|i| i.scenario.as_deref() == Some(s))
            .count();
        let what = about.get(s).and_then(Value::as_str).unwrap_or("");
        let _ = writeln!(
            out,
            "<tr id=\"scenario-{0}\"><td><code>{0}</code></td><td>{1}</td><td class=\"num\">{n}</td><td><code>weft run scenarios/{0}.toml --engine model,sim</code></td></tr>",
            esc(s),
            esc(what)
        );
    }
    out.push_str("</table></div>\n</section>\n");
    out
}

/// A value for a table cell: about four significant digits, `-` for none.
pub fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if !x.is_finite() => esc(&x.to_string()),
        Some(0.0) => "0".into(),
        Some(x) if x.abs() >= 1e5 || x.abs() < 1e-3 => format!("{x:.3e}"),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.3}"),
        Some(x) => format!("{x:.4}"),
    }
}
