//! `weft repro` over the real catalogue on the model (the closed forms: the whole catalogue in
//! well under a second): no fitted or input item counts as reproduced or held whatever its
//! values, every item that is not reproduced says why, and every sample carries the columns
//! issue 26 names.

use weft_model::scenario::Figures;
use weft_report::repro_doc::{self, Verdict};
use weft_run::repro::{self, EngineChoice};
use weft_run::{Catalogue, Kind, bundled};

#[test]
fn on_the_model_no_fitted_or_input_item_is_reproduced_and_every_miss_says_why() {
    if bundled::CATALOGUE.is_none() {
        println!("data/catalogue.toml is not in the repository: nothing to hold");
        return;
    }
    let catalogue = Catalogue::bundled().unwrap_or_else(|e| panic!("{e}"));
    let figures = Figures::bundled().unwrap_or_else(|e| panic!("{e}"));
    let plan = repro::plan(&catalogue, &[], &EngineChoice::Only(vec!["model"]))
        .unwrap_or_else(|e| panic!("{e}"));
    let doc = repro::run(&plan, &figures, &|_, _| {});
    let (items, summary) = repro_doc::read(&doc).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(items.len(), catalogue.items.len());

    for (item, sample) in catalogue.items.iter().zip(&items) {
        assert_eq!(item.id, sample.item);
        // Fitted and input items keep their kind as verdict.
        match item.kind {
            Kind::Fitted => assert_eq!(sample.verdict, Verdict::Fitted, "{}", item.id),
            Kind::Input => assert_eq!(sample.verdict, Verdict::Input, "{}", item.id),
            Kind::Missing => assert_eq!(sample.verdict, Verdict::Missing, "{}", item.id),
            Kind::Method => assert_eq!(sample.verdict, Verdict::Method, "{}", item.id),
            Kind::Predicted => assert!(
                matches!(
                    sample.verdict,
                    Verdict::Reproduced | Verdict::Missed | Verdict::NotRun
                ),
                "{}: {:?}",
                item.id,
                sample.verdict
            ),
            Kind::Qualitative => assert!(
                matches!(
                    sample.verdict,
                    Verdict::Held | Verdict::Failed | Verdict::NotRun
                ),
                "{}: {:?}",
                item.id,
                sample.verdict
            ),
        }
        // Whatever is not reproduced says why (a method's value is the user's: its verdict
        // is the reason).
        let needs_reason = !matches!(
            sample.verdict,
            Verdict::Reproduced | Verdict::Held | Verdict::Method
        );
        assert!(
            !needs_reason || !sample.reason.trim().is_empty(),
            "{} is {} and does not say why",
            item.id,
            sample.verdict.name()
        );
        // A missing item says what it waits for.
        if item.kind == Kind::Missing {
            assert!(!sample.waits_for.trim().is_empty(), "{}", item.id);
        }
    }

    // The columns of every sample, null where an engine did not run.
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
        assert!(s["sim"].is_null() && s["emu"].is_null(), "{s}");
    }

    // The summary counts every item once, and reproduced only predicted ones.
    let total: usize = summary.studies.iter().map(|s| s.total()).sum();
    assert_eq!(total, items.len());
    let predicted = catalogue
        .items
        .iter()
        .filter(|i| i.kind == Kind::Predicted)
        .count();
    let reproduced: usize = summary
        .studies
        .iter()
        .map(|s| s.count(Verdict::Reproduced))
        .sum();
    assert!(reproduced <= predicted, "{reproduced} > {predicted}");
}
