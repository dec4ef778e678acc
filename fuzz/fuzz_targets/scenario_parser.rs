//! Scenario files are untrusted text: parsing any bytes must return a scenario or an error naming
//! a line and key, never panic; a parsed scenario must expand and evaluate without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_model::calc;
use weft_model::scenario::{Figures, Scenario};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Scenario::parse(text, "fuzz.toml") {
        Ok(s) => {
            // Keep sweeps small enough that evaluating every point stays quick.
            if s.points().len() <= 64 {
                let _ = calc::evaluate(&s);
            }
        }
        Err(e) => {
            assert!(e.line >= 1 && e.column >= 1);
            assert!(!e.key.is_empty());
        }
    }
    let _ = Figures::parse(text, "fuzz.toml").map(|f| f.numbers("a.b"));
});
