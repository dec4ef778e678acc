//! The catalogue held against the figures and the scenarios (`data/README.md`): every source is
//! a key of the figures, every scenario an item names exists, every item that is not `missing`
//! or `method` is named by exactly one row or check of its scenario (a row for the kinds with a
//! paper value, a check for `qualitative`), a row's paper value is its item's figure, and every
//! id a scenario names is in the catalogue.

use weft_model::scenario::{Comparison, Figures, Scenario};

use crate::catalogue::{Catalogue, Kind};

/// Where a scenario names an item.
#[derive(Clone, Debug, PartialEq)]
enum Naming {
    /// Row `row` of `[[expect]]` number `expect`, whose paper value is `paper`.
    Row {
        expect: usize,
        row: usize,
        paper: Option<f64>,
    },
    /// `[[check]]` number `check`.
    Check { check: usize },
}

impl Naming {
    fn describe(&self, scenario: &str) -> String {
        match self {
            Naming::Row { expect, row, .. } => format!("{scenario} expect[{expect}] row {row}"),
            Naming::Check { check } => format!("{scenario} check[{check}]"),
        }
    }
}

/// Every disagreement between the catalogue, the figures and the scenarios, one sentence each
/// (empty when they agree). `scenarios` are (file stem, parsed scenario).
pub fn problems(
    catalogue: &Catalogue,
    figures: &Figures,
    scenarios: &[(&str, Scenario)],
) -> Vec<String> {
    let mut out = Vec::new();
    for (i, item) in catalogue.items.iter().enumerate() {
        if catalogue.items[..i].iter().any(|o| o.id == item.id) {
            out.push(format!("{}: the id is used twice", item.id));
        }
    }
    // Every naming of every id, by scenario.
    let mut named: Vec<(&str, String, Naming)> = Vec::new();
    for (stem, s) in scenarios {
        for (e, expect) in s.expect.iter().enumerate() {
            let rows = Comparison::new(expect, Some(figures), s, &[]);
            if let Some(err) = &rows.error {
                out.push(format!("{stem} expect[{e}] ({}): {err}", expect.source));
            }
            for (r, row) in rows.rows.iter().enumerate() {
                if let Some(id) = &row.item {
                    let naming = Naming::Row {
                        expect: e,
                        row: r,
                        paper: row.paper,
                    };
                    named.push((stem, id.clone(), naming));
                }
            }
        }
        for (c, check) in s.checks.iter().enumerate() {
            if check.item != weft_model::scenario::NO_ITEM {
                named.push((stem, check.item.clone(), Naming::Check { check: c }));
            }
        }
    }
    for (stem, id, naming) in &named {
        if catalogue.get(id).is_none() {
            out.push(format!(
                "{}: names {id:?}, which is not in the catalogue",
                naming.describe(stem)
            ));
        }
    }
    for item in &catalogue.items {
        let id = item.id.as_str();
        let value = item.source.as_deref().map(|src| (src, figures.get(src)));
        if let Some((src, None)) = value {
            out.push(format!("{id}: source {src:?} is not a key of the figures"));
        }
        let paper = item.source.as_deref().and_then(|src| {
            let all = figures.numbers(src).ok()?;
            match item.index {
                Some(k) => all.get(k).copied(),
                None if all.len() == 1 => all.first().copied(),
                None => None,
            }
        });
        if item.kind.has_paper_value() && paper.is_none() && !matches!(value, Some((_, None))) {
            out.push(format!(
                "{id}: source {:?}{} is not one number (give `index` for a list)",
                item.source.as_deref().unwrap_or(""),
                item.index
                    .map(|k| format!(" index {k}"))
                    .unwrap_or_default()
            ));
        }
        let mine: Vec<&(&str, String, Naming)> = named.iter().filter(|n| n.1 == id).collect();
        let Some(stem) = item.scenario.as_deref() else {
            for (s, _, n) in &mine {
                out.push(format!(
                    "{id}: a missing item, but {} names it",
                    n.describe(s)
                ));
            }
            continue;
        };
        if !scenarios.iter().any(|(s, _)| *s == stem) {
            out.push(format!("{id}: scenario {stem:?} is not in scenarios/"));
            continue;
        }
        for (s, _, n) in mine.iter().filter(|n| n.0 != stem) {
            out.push(format!(
                "{id}: {} names it, but its scenario is {stem:?}",
                n.describe(s)
            ));
        }
        let here: Vec<&Naming> = mine.iter().filter(|n| n.0 == stem).map(|n| &n.2).collect();
        if item.kind == Kind::Method {
            // A method may be named by a row (the paper's value beside the user's); it need not.
            if here.len() > 1 {
                out.push(format!("{id}: named {} times in {stem}", here.len()));
            }
        } else if here.len() != 1 {
            out.push(format!(
                "{id}: a {} item named by {} row(s) or check(s) of {stem}, not exactly one",
                item.kind.name(),
                here.len()
            ));
        }
        for n in here {
            match (item.kind, n) {
                (Kind::Qualitative, Naming::Row { .. }) => out.push(format!(
                    "{id}: a qualitative item is held by a [[check]], but {} names it",
                    n.describe(stem)
                )),
                // A fitted ratio or ordering is shown by a check; its verdict stays `fitted`.
                (k, Naming::Check { .. }) if !matches!(k, Kind::Qualitative | Kind::Fitted) => out
                    .push(format!(
                        "{id}: a {} item is a row of an [[expect]], but {} names it",
                        k.name(),
                        n.describe(stem)
                    )),
                (_, Naming::Row { paper: got, .. }) => {
                    if let (Some(want), Some(got)) = (paper, got)
                        && (want - got).abs() > 1e-9 * want.abs().max(1.0)
                    {
                        out.push(format!(
                            "{id}: {} compares with {got}, but the item's figure is {want}",
                            n.describe(stem)
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIGURES: &str = "[g]\nlist = [94.92, 84.58, 75.23]\none = 135.0\nnote = \"words\"\n";

    const SCENARIO: &str = r#"
name = "s"
[[workload]]
kind = "saturated"
inputs = [1, 2, 3]
outputs = 5
[[expect]]
source = "g.list"
items = ["003.a.1", "003.a.2", "-"]
[[check]]
item = "003.a.falls"
decreasing = "throughput_mbps @ w0"
"#;

    fn item(id: &str, kind: &str, extra: &str) -> String {
        let scenario = if kind == "missing" {
            "why = \"w\"\nwaits_for = \"x\""
        } else {
            "scenario = \"s\""
        };
        format!(
            "[[item]]\nid = \"{id}\"\nstudy = \"003\"\nwhere = \"Table 7\"\nwhat = \"w\"\n\
             kind = \"{kind}\"\n{scenario}\n{extra}\n"
        )
    }

    fn predicted(id: &str, index: usize) -> String {
        item(
            id,
            "predicted",
            &format!(
                "source = \"g.list\"\nindex = {index}\nengines = [\"sim\"]\ntolerance = 0.1\n\
                 tolerance_why = \"t\""
            ),
        )
    }

    fn run(catalogue: &str, scenario: &str) -> Vec<String> {
        let c = Catalogue::parse(catalogue, "c.toml").unwrap_or_else(|e| panic!("{e}"));
        let f = Figures::parse(FIGURES, "f.toml").unwrap_or_else(|e| panic!("{e}"));
        let s = Scenario::parse(scenario, "s.toml").unwrap_or_else(|e| panic!("{e}"));
        problems(&c, &f, &[("s", s)])
    }

    fn good() -> String {
        [
            predicted("003.a.1", 0),
            predicted("003.a.2", 1),
            item("003.a.falls", "qualitative", "engines = [\"sim\"]"),
            item("003.a.tool", "method", ""),
            item("003.a.gone", "missing", "source = \"g.note\""),
        ]
        .concat()
    }

    #[test]
    fn a_consistent_pair_has_no_problems() {
        assert_eq!(run(&good(), SCENARIO), Vec::<String>::new());
    }

    #[test]
    fn a_check_of_no_item_is_left_out_of_the_catalogue() {
        let own =
            format!("{SCENARIO}[[check]]\nitem = \"-\"\nvalue = \"mean_wait @ w0\"\nabove = 0\n");
        assert_eq!(run(&good(), &own), Vec::<String>::new());
        // Any other id is looked up.
        let p = run(
            &good(),
            &own.replace("item = \"-\"", "item = \"003.a.own\""),
        );
        assert!(
            p.iter().any(|p| p.contains("\"003.a.own\", which is not")),
            "{p:?}"
        );
    }

    #[test]
    fn each_disagreement_is_named() {
        let has = |problems: &[String], part: &str| {
            assert!(
                problems.iter().any(|p| p.contains(part)),
                "no problem mentions {part:?}: {problems:#?}"
            );
        };
        // An item no row names, and a row that names an unknown id.
        let p = run(&good(), &SCENARIO.replace("\"003.a.2\"", "\"003.a.9\""));
        has(&p, "003.a.2: a predicted item named by 0");
        has(&p, "names \"003.a.9\", which is not in the catalogue");
        // A row whose paper value is not its item's figure (rows out of order).
        let p = run(
            &good(),
            &SCENARIO.replace("[\"003.a.1\", \"003.a.2\"", "[\"003.a.2\", \"003.a.1\""),
        );
        has(&p, "compares with 94.92, but the item's figure is 84.58");
        // A source that is no key, and a list without an index.
        let p = run(
            &good().replacen("source = \"g.list\"\nindex = 0", "source = \"g.nope\"", 1),
            SCENARIO,
        );
        has(&p, "source \"g.nope\" is not a key");
        let p = run(
            &good().replacen("source = \"g.list\"\nindex = 0", "source = \"g.list\"", 1),
            SCENARIO,
        );
        has(&p, "is not one number");
        // A scenario that does not exist.
        let p = run(
            &good().replacen("scenario = \"s\"", "scenario = \"t\"", 1),
            SCENARIO,
        );
        has(&p, "scenario \"t\" is not in scenarios/");
        // A qualitative item on a row, a predicted one on a check.
        let swapped = SCENARIO
            .replace("\"003.a.falls\"", "\"003.a.2\"")
            .replace("\"003.a.2\", \"-\"", "\"003.a.falls\", \"-\"");
        let p = run(&good(), &swapped);
        has(&p, "003.a.falls: a qualitative item is held by a [[check]]");
        has(&p, "003.a.2: a predicted item is a row");
        // A fitted item may be shown by a check (a ratio a parameter was fitted to).
        let fitted = good().replace(
            "kind = \"qualitative\"",
            "kind = \"fitted\"\nsource = \"g.one\"\ntolerance = 0.1\ntolerance_why = \"t\"\nwhy = \"p\"",
        );
        assert_eq!(run(&fitted, SCENARIO), Vec::<String>::new());
        // An item named twice.
        let p = run(
            &good(),
            &format!("{SCENARIO}[[check]]\nitem = \"003.a.falls\"\nincreasing = \"e @ w0\"\n"),
        );
        has(&p, "003.a.falls: a qualitative item named by 2");
        // A missing item that a scenario names anyway.
        let p = run(
            &good(),
            &format!("{SCENARIO}[[check]]\nitem = \"003.a.gone\"\nincreasing = \"e @ w0\"\n"),
        );
        has(&p, "003.a.gone: a missing item, but s check[1] names it");
        // Too few ids for the rows the figures give.
        let p = run(
            &good(),
            &SCENARIO.replace(
                "source = \"g.list\"\nitems",
                "source = \"g.list\"\nselect = [0, 1, 2]\nitems",
            ),
        );
        assert!(p.is_empty(), "{p:#?}");
        let p = run(
            &good(),
            &SCENARIO
                .replace("inputs = [1, 2, 3]", "inputs = [1, 2]")
                .replace(
                    "[\"003.a.1\", \"003.a.2\", \"-\"]",
                    "[\"003.a.1\", \"003.a.2\"]",
                ),
        );
        has(&p, "`items` names 2 item(s) for 3 row(s)");
    }
}
