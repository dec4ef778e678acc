//! The scenario's qualitative checks (`[[check]]`) evaluated on every engine that ran, beside
//! the comparisons with the published figures ([`crate::compare`]).

use serde_json::{Value, json};
use weft_model::scenario::{CheckResult, EngineSamples, Scenario};
use weft_report::ResultDoc;

/// One result per `[[check]]` of `scenario`, each with a cell per engine document.
pub fn checks(scenario: &Scenario, docs: &[(&str, ResultDoc)]) -> Vec<CheckResult> {
    let samples: Vec<EngineSamples<'_>> = docs
        .iter()
        .map(|(n, d)| EngineSamples {
            engine: n,
            samples: &d.samples,
        })
        .collect();
    scenario
        .checks
        .iter()
        .map(|c| CheckResult::new(c, scenario, &samples))
        .collect()
}

/// Writes each engine's side of every check into its document's `summary.check`: per check its
/// item, the claim, the values read, the measure (a ratio, a bounded value) and whether it held.
pub fn attach_checks(docs: &mut [(&str, ResultDoc)], results: &[CheckResult]) {
    if results.is_empty() {
        return;
    }
    for (name, doc) in docs {
        let mine: Vec<Value> = results
            .iter()
            .map(|r| {
                let cell = r.cells.iter().find(|c| c.engine == *name);
                let values: Vec<Value> = cell
                    .map(|c| {
                        c.values
                            .iter()
                            .map(|(l, v)| json!({ "value": l, "got": v }))
                            .collect()
                    })
                    .unwrap_or_default();
                json!({ "item": r.check.item, "check": r.check.test.to_string(),
                        "what": r.check.what, "values": values,
                        "measure": cell.and_then(|c| c.measure),
                        "held": cell.and_then(|c| c.held) })
            })
            .collect();
        doc.summary["check"] = Value::Array(mine);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{RunCtx, model};

    #[test]
    fn a_check_is_evaluated_on_the_model_and_written_into_its_document() {
        let text = "name = \"c\"\n[[switch]]\nname = \"sw\"\nfabric = \"input-fifo\"\nports = 5\n\
                    [[workload]]\nkind = \"saturated\"\ninputs = [1, 2, 3]\noutputs = 5\n\
                    rate = \"95Mbps\"\nslots = 1000\n\
                    [[check]]\nitem = \"003.t9.falls\"\ndecreasing = \"formula_mbps @ w0\"\n\
                    [[check]]\nitem = \"003.t9.rises\"\nincreasing = \"formula_mbps @ w0\"\n";
        let s = Scenario::parse(text, "c.toml").expect("parses");
        let ctx = RunCtx {
            scenario: &s,
            seed: 1,
            chatty: false,
            capture: None,
        };
        let mut docs = vec![("model", model(&ctx).expect("the model runs"))];
        let results = checks(&s, &docs);
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].cells[0].held, Some(true));
        assert_eq!(results[1].cells[0].held, Some(false));
        attach_checks(&mut docs, &results);
        let written = &docs[0].1.summary["check"];
        assert_eq!(written[0]["item"], "003.t9.falls");
        assert_eq!(written[0]["held"], true);
        assert_eq!(written[1]["held"], false);
        assert_eq!(written[0]["values"].as_array().map(Vec::len), Some(3));
    }
}
