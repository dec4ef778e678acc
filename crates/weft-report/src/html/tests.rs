//! The page from a small repro document and a measurement: self-contained (no script, nothing
//! fetched), every inline SVG well-formed, every item in a table, the figures there.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::repro_doc::{ItemSample, Measured, ReproSummary, StudySummary, Verdict};
use crate::schema::Engine;

fn item(id: &str, verdict: Verdict) -> ItemSample {
    ItemSample {
        study: "001".into(),
        item: id.into(),
        source: Some("nasa_lace.single_udp_us.atm".into()),
        index: None,
        kind: "predicted".into(),
        paper: Some(200.0),
        model: Some(210.0),
        sim: Some(205.0),
        emu: None,
        real: None,
        tolerance: Some(0.1),
        verdict,
        miss: BTreeMap::from([("model".into(), 0.05), ("sim".into(), 0.025)]),
        held: BTreeMap::new(),
        engines: vec!["model".into(), "sim".into()],
        ran: vec!["model".into(), "sim".into()],
        reason: "a <reason> & more".into(),
        waits_for: String::new(),
        location: "Figure 8".into(),
        what: "UDP round trip".into(),
        unit: "us".into(),
        conditions: String::new(),
        scenario: Some("nasa-fig8-taxi".into()),
        point: Some("w0 #0".into()),
        x: None,
        size_bytes: Some(1.0),
        series: Some("nasa-fig8-taxi udp lace1-lace2".into()),
        metric: Some("rtt_mean_us".into()),
        check: None,
        measured: Vec::new(),
    }
}

fn repro() -> ResultDoc {
    let mut a = item("001.fig8.udp_1b", Verdict::Reproduced);
    let mut b = item("001.fig8.udp_large", Verdict::Missed);
    b.size_bytes = Some(8192.0);
    b.paper = Some(900.0);
    b.sim = Some(1200.0);
    let mut c = item("001.t1.a", Verdict::Missing);
    c.source = Some("nasa_lace.table.rate".into());
    c.index = Some(0);
    c.unit = "Mbit/s".into();
    c.waits_for = "issue 27".into();
    c.scenario = None;
    c.size_bytes = None;
    c.series = None;
    let mut d = c.clone();
    d.item = "001.t1.b".into();
    d.index = Some(1);
    d.paper = Some(300.0);
    let mut e = item("001.method", Verdict::Method);
    e.measured = vec![Measured {
        label: "rtt_mean_us @ w0".into(),
        value: 25.0,
    }];
    a.x = None;
    let items = [a, b, c, d, e];
    let mut doc = ResultDoc::new("repro", Engine::Mixed);
    doc.params = json!({ "scenarios": { "nasa-fig8-taxi": "NASA figure 8 on TAXI" } });
    doc.samples = items
        .iter()
        .map(|i| serde_json::to_value(i).unwrap_or_default())
        .collect();
    let mut st = StudySummary {
        study: "001".into(),
        name: "NASA".into(),
        counts: BTreeMap::new(),
    };
    for i in &items {
        *st.counts.entry(i.verdict).or_insert(0) += 1;
    }
    doc.summary = serde_json::to_value(ReproSummary {
        studies: vec![st],
        wall_s: 12.5,
        ..ReproSummary::default()
    })
    .unwrap_or_default();
    doc
}

fn rr() -> ResultDoc {
    let mut doc = ResultDoc::new("rr", Engine::Real);
    doc.samples = vec![
        json!({ "size_bytes": 1, "p50_ns": 20_000, "p99_ns": 31_000 }),
        json!({ "size_bytes": 1024, "p50_ns": 24_000, "p99_ns": 40_000 }),
    ];
    doc
}

#[test]
fn the_page_holds_everything_and_asks_for_nothing() {
    let page = page(&[repro(), rr()]).unwrap_or_else(|e| panic!("{e}"));
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.contains("<script"), "no scripts");
    // Every reference is to the page itself or a data: URL; the only URL is the SVG namespace.
    for attr in ["href=\"", "src=\""] {
        for (at, _) in page.match_indices(attr) {
            let rest = &page[at + attr.len()..];
            assert!(
                rest.starts_with('#') || rest.starts_with("data:"),
                "{attr}{}",
                &rest[..rest.len().min(40)]
            );
        }
    }
    let urls = page.matches("http").count();
    assert_eq!(urls, page.matches("http://www.w3.org/2000/svg").count());
    assert!(!page.contains("@import") && !page.contains("url(http"));
    // Every item in a row, the reason escaped, the scenario listed with its command.
    for id in [
        "001.fig8.udp_1b",
        "001.fig8.udp_large",
        "001.t1.a",
        "001.t1.b",
        "001.method",
    ] {
        assert!(page.contains(&format!("id=\"item-{id}\"")), "{id}");
    }
    assert!(page.contains("a &lt;reason&gt; &amp; more"));
    assert!(page.contains("weft run scenarios/nasa-fig8-taxi.toml"));
    assert!(page.contains("on loopback: rtt_mean_us @ w0 = 25.000"));
    // Figures: round trip against size, the table as bars, and the rr measurement; each SVG
    // parses, and its clip paths are the page's own.
    assert!(page.contains("Round trip against message size"));
    assert!(page.contains("nasa_lace.table"));
    let svgs: Vec<&str> = page
        .match_indices("<svg")
        .map(|(at, _)| {
            let end = page[at..].find("</svg>").map_or(page.len(), |e| at + e + 6);
            &page[at..end]
        })
        .collect();
    assert_eq!(svgs.len(), 3, "{}", svgs.len());
    for svg in &svgs {
        roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(page.contains("id=\"f1clip0\"") && page.contains("id=\"f3clip0\""));
    assert!(!page.contains("id=\"clip0\""));
}

#[test]
fn nothing_to_report_is_an_error() {
    assert!(matches!(page(&[]), Err(HtmlError::Empty)));
    let mut bad = ResultDoc::new("repro", Engine::Mixed);
    bad.samples = vec![json!({ "study": 1 })];
    assert!(matches!(page(&[bad]), Err(HtmlError::Repro(_))));
}

#[test]
fn figures_the_page_does_not_draw_are_listed_with_their_items() {
    let mut u = item("000.fig2.mean_utilisation", Verdict::Missing);
    u.source = Some("sandia_atm_trial.traffic_mean_utilisation".into());
    // Even a value from an engine does not make the day's utilisation drawn.
    u.model = Some(0.1);
    let mut doc = repro();
    doc.samples
        .push(serde_json::to_value(&u).unwrap_or_default());
    let text = page(&[doc]).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        text.contains("utilisation over a working day")
            && text.contains("000.fig2.mean_utilisation (missing)"),
        "the undrawn figure is not listed"
    );
    assert!(
        !text.contains("PVC counts against hosts"),
        "no PVC item here"
    );
}
