//! A repro over a fixture: one scenario on the model, items of every kind, and the document
//! that comes out.

use serde_json::Value;
use weft_model::scenario::{Figures, Scenario};
use weft_report::repro_doc::{self, Verdict};

use super::*;

const SCENARIO: &str = r#"
name = "fixture"
[[switch]]
name = "sw"
fabric = "input-fifo"
ports = 5
[[workload]]
kind = "saturated"
inputs = [1, 2, 3]
outputs = 5
rate = "95Mbps"
slots = 1000
[[expect]]
source = "g.model"
metric = "formula_mbps"
tolerance = 0.01
items = ["003.f.1", "003.f.2", "003.f.3"]
[[check]]
item = "003.f.falls"
decreasing = "formula_mbps @ w0"
"#;

const FIGURES: &str = "[g]\nmodel = [95.0, 85.5, 60.0]\nother = 7.0\n";

fn catalogue() -> Catalogue {
    let item = |id: &str, kind: &str, extra: &str| {
        format!(
            "[[item]]\nid = \"{id}\"\nstudy = \"003\"\nwhere = \"Table 9\"\nwhat = \"w\"\n\
             kind = \"{kind}\"\n{extra}\n"
        )
    };
    let predicted = "scenario = \"fixture\"\nsource = \"g.model\"\nengines = [\"model\"]\n\
                     tolerance = 0.01\ntolerance_why = \"printed to 0.1\"";
    let text = [
        item("003.f.1", "predicted", &format!("{predicted}\nindex = 0")),
        item(
            "003.f.2",
            "fitted",
            "scenario = \"fixture\"\nsource = \"g.model\"\nindex = 1\nwhy = \"the rate\"",
        ),
        item(
            "003.f.3",
            "predicted",
            &format!("{predicted}\nindex = 2\nwhy = \"the model is the formula\""),
        ),
        item(
            "003.f.falls",
            "qualitative",
            "scenario = \"fixture\"\nengines = [\"model\"]",
        ),
        item("003.f.tool", "method", "scenario = \"fixture\""),
        item(
            "003.f.gone",
            "missing",
            "source = \"g.other\"\nwhy = \"no disk\"\nwaits_for = \"issue 27\"",
        ),
    ]
    .concat();
    Catalogue::parse(&text, "c.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn fixture_plan(c: &Catalogue) -> Plan {
    let s = Scenario::parse(SCENARIO, "fixture.toml").unwrap_or_else(|e| panic!("{e}"));
    Plan {
        items: c.items.clone(),
        scenarios: vec![("fixture".into(), s)],
        jobs: vec![Job {
            scenario: "fixture".into(),
            engine: "model",
        }],
        asked: serde_json::json!({}),
    }
}

#[test]
fn every_kind_gets_its_verdict_and_every_sample_its_columns() {
    let c = catalogue();
    let figures = Figures::parse(FIGURES, "f.toml").unwrap_or_else(|e| panic!("{e}"));
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let doc = run(&fixture_plan(&c), &figures, &|_, _| {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(calls.into_inner(), 1, "one scenario on one engine");
    assert_eq!(doc.kind, "repro");
    let (items, summary) = repro_doc::read(&doc).unwrap_or_else(|e| panic!("{e}"));
    let verdict = |id: &str| items.iter().find(|i| i.item == id).map(|i| i.verdict);
    assert_eq!(verdict("003.f.1"), Some(Verdict::Reproduced));
    assert_eq!(verdict("003.f.2"), Some(Verdict::Fitted));
    assert_eq!(verdict("003.f.3"), Some(Verdict::Missed));
    assert_eq!(verdict("003.f.falls"), Some(Verdict::Held));
    assert_eq!(verdict("003.f.tool"), Some(Verdict::Method));
    assert_eq!(verdict("003.f.gone"), Some(Verdict::Missing));
    let missed = items.iter().find(|i| i.item == "003.f.3").expect("listed");
    assert_eq!(missed.reason, "the model is the formula");
    assert_eq!(missed.point.as_deref(), Some("w0 inputs=3"));
    assert_eq!(missed.x, Some(3.0));
    assert!(missed.worst_miss().is_some_and(|m| m > 0.2), "{missed:?}");
    let method = items
        .iter()
        .find(|i| i.item == "003.f.tool")
        .expect("listed");
    assert!(method.reason.contains("real was not run"), "{method:?}");
    let gone = items
        .iter()
        .find(|i| i.item == "003.f.gone")
        .expect("listed");
    assert_eq!(
        (gone.paper, gone.waits_for.as_str()),
        (Some(7.0), "issue 27")
    );
    // The columns the issue names, null where an engine did not run.
    for s in &doc.samples {
        for key in [
            "study",
            "item",
            "source",
            "kind",
            "paper",
            "model",
            "sim",
            "emu",
            "real",
            "tolerance",
            "verdict",
        ] {
            assert!(s.get(key).is_some(), "{key} missing from {s}");
        }
        assert_eq!(s["sim"], Value::Null);
    }
    assert_eq!(summary.studies.len(), 1);
    assert_eq!(
        summary.studies[0].line(),
        "1 reproduced, 1 missed, 1 fitted, 0 input, 1 qualitative (1 held, 0 failed), 1 method, 1 missing"
    );
    let text = text::human(&items, &summary);
    assert!(text.contains("003 Sandia: DEC GIGAswitch"), "{text}");
    assert!(text.contains("waits for issue 27"), "{text}");
    assert!(text.contains("took "), "{text}");
}

#[test]
fn the_plan_runs_each_scenario_once_per_engine_and_refuses_unknown_arguments() {
    let text = "[[item]]\nid = \"002.x\"\nstudy = \"002\"\nwhere = \"T\"\nwhat = \"w\"\n\
                kind = \"method\"\nscenario = \"ebn-vp26\"\n\
                [[item]]\nid = \"002.y\"\nstudy = \"002\"\nwhere = \"T\"\nwhat = \"w\"\n\
                kind = \"method\"\nscenario = \"ebn-vp26\"\n";
    let c = Catalogue::parse(text, "c.toml").unwrap_or_else(|e| panic!("{e}"));
    let p =
        plan(&c, &[], &EngineChoice::Available { emu: false }).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.scenarios.len(), 1);
    let engines: Vec<&str> = p.jobs.iter().map(|j| j.engine).collect();
    assert_eq!(engines, ["model", "sim", "real"]);
    assert!(plan(&c, &["001".into()], &EngineChoice::Available { emu: false }).is_err());
    let bad = Catalogue::parse(&text.replace("ebn-vp26", "no-such"), "c.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    let e = plan(&bad, &[], &EngineChoice::Available { emu: false }).err();
    assert!(e.is_some_and(|e| e.to_string().contains("no-such")));
}

#[test]
fn fitted_and_input_items_are_never_reproduced_nor_held_whatever_their_values() {
    // The fixture's row 0 is within tolerance and its check holds: as fitted and input items
    // they still count as what they are.
    let c = catalogue();
    let mut swapped = c.clone();
    for i in &mut swapped.items {
        match i.id.as_str() {
            "003.f.1" => {
                i.kind = crate::catalogue::Kind::Input;
                i.why = "the rate is the paper's".into();
            }
            "003.f.falls" => {
                i.kind = crate::catalogue::Kind::Fitted;
                i.why = "fitted to the fall".into();
            }
            _ => {}
        }
    }
    let figures = Figures::parse(FIGURES, "f.toml").unwrap_or_else(|e| panic!("{e}"));
    let doc = run(&fixture_plan(&swapped), &figures, &|_, _| {});
    let (items, summary) = repro_doc::read(&doc).unwrap_or_else(|e| panic!("{e}"));
    let verdict = |id: &str| items.iter().find(|i| i.item == id).map(|i| i.verdict);
    assert_eq!(verdict("003.f.1"), Some(Verdict::Input));
    assert_eq!(verdict("003.f.falls"), Some(Verdict::Fitted));
    let s = &summary.studies[0];
    assert_eq!(
        (s.count(Verdict::Reproduced), s.count(Verdict::Held)),
        (0, 0),
        "{}",
        s.line()
    );
    // Their values are still shown.
    let input = items.iter().find(|i| i.item == "003.f.1").expect("listed");
    assert!(
        input.model.is_some() && input.worst_miss().is_some(),
        "{input:?}"
    );

    // Whatever an item's values earned, only predicted and qualitative items keep it.
    use crate::catalogue::Kind;
    for kind in [Kind::Fitted, Kind::Input, Kind::Method, Kind::Missing] {
        for earned in Verdict::ALL {
            let v = verdict::by_kind(kind, earned);
            assert!(
                !matches!(v, Verdict::Reproduced | Verdict::Held | Verdict::Missed),
                "{kind:?} earned {earned:?} and became {v:?}"
            );
        }
    }
}
