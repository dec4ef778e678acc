//! Which items `weft repro` reports and which (scenario, engine) runs that takes: the items the
//! arguments name (a study, an id, or an id's leading parts), the scenarios they give, and the
//! engines each scenario runs on.

use crate::catalogue::{Catalogue, Item, Kind, STUDIES};

use super::ReproError;

/// The engines `weft repro` knows, in the order it runs and prints them.
pub const ENGINES: [&str; 4] = ["model", "sim", "emu", "real"];

/// Which engines to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineChoice {
    /// model and sim always, emu when root, real for the scenarios of method items.
    Available {
        /// Whether the emulator may run (the process is root).
        emu: bool,
    },
    /// Exactly these (`--engine`), each a name of [`ENGINES`]; real still only on the
    /// scenarios of method items.
    Only(Vec<&'static str>),
}

impl EngineChoice {
    /// The choice for `--engine` names (case and blanks ignored), or the default when none.
    pub fn from_names(names: &[String], root: bool) -> Result<EngineChoice, ReproError> {
        if names.is_empty() {
            return Ok(EngineChoice::Available { emu: root });
        }
        let mut out: Vec<&'static str> = Vec::new();
        for n in names {
            let n = n.trim().to_ascii_lowercase();
            let Some(e) = ENGINES.iter().find(|e| **e == n) else {
                return Err(ReproError::UnknownEngine {
                    name: n,
                    known: ENGINES.join(", "),
                });
            };
            if !out.contains(e) {
                out.push(e);
            }
        }
        out.sort_by_key(|e| ENGINES.iter().position(|x| x == e));
        Ok(EngineChoice::Only(out))
    }

    /// The engines a scenario runs on; `method` says whether it gives a method item.
    pub fn for_scenario(&self, method: bool) -> Vec<&'static str> {
        let wanted = |e: &str| match self {
            EngineChoice::Available { emu } => match e {
                "emu" => *emu,
                "real" => method,
                _ => true,
            },
            EngineChoice::Only(list) => list.contains(&e) && (e != "real" || method),
        };
        ENGINES.iter().copied().filter(|e| wanted(e)).collect()
    }
}

/// The items the arguments name, in catalogue order: all of them without arguments; else each
/// argument is a study number (`003`), an id, or an id's leading dotted parts (`003.t9`).
pub fn items<'a>(catalogue: &'a Catalogue, args: &[String]) -> Result<Vec<&'a Item>, ReproError> {
    if args.is_empty() {
        return Ok(catalogue.items.iter().collect());
    }
    for a in args {
        if !catalogue.items.iter().any(|i| matches(i, a)) {
            return Err(ReproError::NoMatch {
                arg: a.clone(),
                studies: STUDIES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    Ok(catalogue
        .items
        .iter()
        .filter(|i| args.iter().any(|a| matches(i, a)))
        .collect())
}

fn matches(item: &Item, arg: &str) -> bool {
    let arg = arg.trim();
    item.study == arg || item.id == arg || item.id.starts_with(&format!("{arg}."))
}

/// One run: a scenario on an engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The scenario's file stem.
    pub scenario: String,
    /// The engine.
    pub engine: &'static str,
}

/// Every scenario the items give, once, in the order first named, each on the engines chosen.
pub fn jobs(items: &[&Item], choice: &EngineChoice) -> Vec<Job> {
    let mut scenarios: Vec<(&str, bool)> = Vec::new();
    for i in items {
        let Some(s) = i.scenario.as_deref() else {
            continue;
        };
        let method = i.kind == Kind::Method;
        match scenarios.iter_mut().find(|(x, _)| *x == s) {
            Some((_, m)) => *m |= method,
            None => scenarios.push((s, method)),
        }
    }
    scenarios
        .into_iter()
        .flat_map(|(s, method)| {
            choice
                .for_scenario(method)
                .into_iter()
                .map(move |engine| Job {
                    scenario: s.to_string(),
                    engine,
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue() -> Catalogue {
        let item = |id: &str, kind: &str, scenario: &str| {
            let study = &id[..3];
            let extra = match kind {
                "missing" => "why = \"w\"\nwaits_for = \"x\"".to_string(),
                "method" => format!("scenario = \"{scenario}\""),
                _ => format!(
                    "scenario = \"{scenario}\"\nsource = \"a.b\"\nengines = [\"sim\"]\n\
                     tolerance = 0.1\ntolerance_why = \"t\""
                ),
            };
            format!(
                "[[item]]\nid = \"{id}\"\nstudy = \"{study}\"\nwhere = \"T\"\nwhat = \"w\"\n\
                 kind = \"{kind}\"\n{extra}\n"
            )
        };
        let text = [
            item("003.t9.a", "predicted", "contention"),
            item("003.t9.b", "predicted", "contention"),
            item("003.echo", "method", "direct"),
            item("003.t1.x", "predicted", "direct"),
            item("002.run0", "predicted", "ebn"),
            item("004.sbtp", "missing", ""),
        ]
        .concat();
        Catalogue::parse(&text, "c.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn arguments_pick_studies_ids_and_prefixes() {
        let c = catalogue();
        let ids = |args: &[&str]| -> Vec<String> {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            items(&c, &args)
                .unwrap_or_else(|e| panic!("{e}"))
                .iter()
                .map(|i| i.id.clone())
                .collect()
        };
        assert_eq!(ids(&[]).len(), 6);
        assert_eq!(
            ids(&["003"]),
            ["003.t9.a", "003.t9.b", "003.echo", "003.t1.x"]
        );
        assert_eq!(ids(&["003.t9"]), ["003.t9.a", "003.t9.b"]);
        assert_eq!(ids(&["002.run0", "004"]), ["002.run0", "004.sbtp"]);
        // "003.t" is not a whole part of any id.
        let e = items(&c, &["003.t".to_string()])
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("003.t") && e.contains("000, 001")));
    }

    #[test]
    fn each_scenario_runs_once_per_engine_and_real_only_for_methods() {
        let c = catalogue();
        let all = items(&c, &[]).unwrap_or_default();
        let jobs = |choice: &EngineChoice| -> Vec<String> {
            jobs(&all, choice)
                .iter()
                .map(|j| format!("{}/{}", j.scenario, j.engine))
                .collect()
        };
        assert_eq!(
            jobs(&EngineChoice::Available { emu: false }),
            [
                "contention/model",
                "contention/sim",
                "direct/model",
                "direct/sim",
                "direct/real",
                "ebn/model",
                "ebn/sim"
            ]
        );
        let root = jobs(&EngineChoice::Available { emu: true });
        assert!(root.contains(&"ebn/emu".to_string()));
        let only = EngineChoice::from_names(&["Real".into(), " sim".into()], false)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(only, EngineChoice::Only(vec!["sim", "real"]));
        assert_eq!(
            jobs(&only),
            ["contention/sim", "direct/sim", "direct/real", "ebn/sim"]
        );
        let e = EngineChoice::from_names(&["ns3".into()], false).err();
        assert!(e.is_some_and(|e| e.to_string().contains("model, sim, emu, real")));
    }
}
