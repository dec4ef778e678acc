//! Sweep plans are untrusted text: parsing any bytes must give a plan or an error naming a line
//! and column, never panic; a plan must expand into runs and their command lines without panicking.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use weft_sweep::invoke;
use weft_sweep::plan::{AnyCommand, Plan, PlanError, Target};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Plan::parse(text, "fuzz.toml", Path::new("/nonexistent"), &AnyCommand) {
        Ok(plan) => {
            // Keep expansions small enough to stay quick.
            if plan.run_count() <= 4096 {
                let list = plan.expand();
                assert_eq!(list.runs.len(), plan.run_count());
                for run in list.runs.iter().take(16) {
                    match &list.target {
                        Target::Command { .. } => {
                            let _ = invoke::invocation(&list.target, run);
                        }
                        Target::Scenario { text, .. } => {
                            let _ = invoke::scenario_text(text, run);
                        }
                    }
                }
            }
        }
        Err(PlanError::At { line, column, .. }) => assert!(line >= 1 && column >= 1),
        Err(PlanError::Read { .. }) => {}
    }
});
