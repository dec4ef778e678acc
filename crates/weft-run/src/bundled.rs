//! The repository's own files compiled into weft (by `build.rs`): the scenarios of
//! `scenarios/` and the catalogue `data/catalogue.toml`. `weft repro` reads only these, so it
//! runs the same from any directory.

use weft_model::scenario::{Scenario, ScenarioError};

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// How the bundled catalogue is named in errors.
pub const CATALOGUE_NAME: &str = "catalogue.toml (built into weft)";

/// The text of the bundled scenario `stem` (a file stem of `scenarios/`), if there is one.
pub fn scenario_text(stem: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(s, _)| *s == stem).map(|(_, t)| *t)
}

/// The bundled scenario `stem`, parsed (`None`: no such file).
pub fn scenario(stem: &str) -> Option<Result<Scenario, ScenarioError>> {
    scenario_text(stem).map(|t| Scenario::parse(t, &format!("scenarios/{stem}.toml")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_of_the_repository_is_built_in_and_parses() {
        assert!(SCENARIOS.len() >= 10, "{}", SCENARIOS.len());
        for (stem, _) in SCENARIOS {
            let s = scenario(stem)
                .expect("listed")
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(!s.name.is_empty());
        }
        assert!(scenario("no-such-scenario").is_none());
        assert!(scenario_text("ebn-vp26").is_some_and(|t| t.contains("26Mbps")));
    }
}
