//! The catalogue of the studies' results (`data/catalogue.toml`, format and kinds in
//! `data/README.md`): one [`Item`] per quantitative result of the five texts, with how weft
//! reproduces it or why it does not. Parsed here with errors that name the file, line and item;
//! [`crate::consistency`] holds it against the figures and the scenarios.

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// The five studies, by the number the catalogue gives them, with a short name.
pub const STUDIES: &[(&str, &str)] = &[
    ("000", "Sandia: ATM in a production LAN (OC-3c)"),
    ("001", "NASA TP-3532: ATM for cluster computing (LACE)"),
    ("002", "DHPC: Classical IP over the EBN E3 WAN"),
    ("003", "Sandia: DEC GIGAswitch switched FDDI"),
    ("004", "RIACS: bulk transfer over ATM (SBTP, MBTP)"),
];

/// The short name of study `number`, if it is one of the five.
pub fn study_name(number: &str) -> Option<&'static str> {
    STUDIES.iter().find(|(n, _)| *n == number).map(|(_, t)| *t)
}

/// How an item is reproduced (`data/README.md`, "The kinds").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An engine computes it from parameters that were not fitted to it.
    Predicted,
    /// A parameter was fitted to this very figure: shown, never counted as reproduced.
    Fitted,
    /// The figure is a parameter of the scenario.
    Input,
    /// A stated check (an ordering, a ratio, a shape) that a scenario's `[[check]]` evaluates.
    Qualitative,
    /// A measuring method that `real` re-runs on the user's own network.
    Method,
    /// No engine reproduces it yet.
    Missing,
}

impl Kind {
    /// The name as written in the catalogue.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Predicted => "predicted",
            Kind::Fitted => "fitted",
            Kind::Input => "input",
            Kind::Qualitative => "qualitative",
            Kind::Method => "method",
            Kind::Missing => "missing",
        }
    }

    /// Whether a figure of the paper is compared with the engines (a row of an `[[expect]]`).
    pub const fn has_paper_value(self) -> bool {
        matches!(self, Kind::Predicted | Kind::Fitted | Kind::Input)
    }
}

/// The engines an item can name.
pub const ENGINE_NAMES: &[&str] = &["model", "sim", "emu", "real"];

/// One result of one study.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// Unique: the study's number, then a short dotted path (`003.t1.with_switch`).
    pub id: String,
    /// The study's number, `000` to `004`.
    pub study: String,
    /// Where in the text: section, table, figure, caption, abstract, conclusion.
    #[serde(rename = "where")]
    pub location: String,
    /// What was measured.
    pub what: String,
    /// Under which conditions.
    #[serde(default)]
    pub conditions: String,
    /// The published value: a dotted key into `data/figures.toml`.
    #[serde(default)]
    pub source: Option<String>,
    /// The element of a list-valued figure, if it is one.
    #[serde(default)]
    pub index: Option<usize>,
    /// The figure's unit as the text gives it (`Mbit/s`, `ms`, `KiB/s`).
    #[serde(default)]
    pub unit: String,
    /// How weft reproduces it.
    pub kind: Kind,
    /// The scenario that reproduces it (a file stem of `scenarios/`); none for `missing`.
    #[serde(default)]
    pub scenario: Option<String>,
    /// The engines held to the figure (others may run and are shown).
    #[serde(default)]
    pub engines: Vec<String>,
    /// The largest relative miss counted as reproduced, |engine - paper| / |paper|.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// Why the tolerance is what it is.
    #[serde(default)]
    pub tolerance_why: String,
    /// Fitted: what was fitted; input: which parameter; missing: what is missing; a predicted
    /// item that misses: where the difference comes from.
    #[serde(default)]
    pub why: String,
    /// Missing only: the capability it waits for.
    #[serde(default)]
    pub waits_for: String,
}

/// The catalogue, parsed and checked on its own (ids, studies, kinds, engines, the fields each
/// kind needs).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Catalogue {
    /// The items in file order.
    pub items: Vec<Item>,
}

/// The catalogue cannot be used: where and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct CatalogueError {
    /// The file name as given.
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
    /// What is wrong (naming the item's id where there is one) and what was expected.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    item: Vec<Spanned<Item>>,
}

impl Catalogue {
    /// The catalogue built into weft (`data/catalogue.toml`), or an empty one when the
    /// repository had none when weft was built.
    pub fn bundled() -> Result<Catalogue, CatalogueError> {
        match crate::bundled::CATALOGUE {
            Some(text) => Catalogue::parse(text, crate::bundled::CATALOGUE_NAME),
            None => Ok(Catalogue::default()),
        }
    }

    /// Parses catalogue text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Catalogue, CatalogueError> {
        let at = |span: std::ops::Range<usize>, message: String| {
            let (line, column) = line_col(text, span.start);
            CatalogueError {
                file: file.to_string(),
                line,
                column,
                message,
            }
        };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            at(
                e.span().unwrap_or(0..0),
                format!("not a catalogue: {}", e.message().trim()),
            )
        })?;
        let mut items: Vec<Item> = Vec::with_capacity(raw.item.len());
        for spanned in raw.item {
            let span = spanned.span();
            let item = spanned.into_inner();
            validate(&item).map_err(|m| at(span.clone(), format!("item {:?}: {m}", item.id)))?;
            if items.iter().any(|i| i.id == item.id) {
                return Err(at(
                    span,
                    format!("item {:?}: the id is already used", item.id),
                ));
            }
            items.push(item);
        }
        Ok(Catalogue { items })
    }

    /// The item called `id`.
    pub fn get(&self, id: &str) -> Option<&Item> {
        self.items.iter().find(|i| i.id == id)
    }
}

/// What an item lacks or has wrong, judged on its own.
fn validate(item: &Item) -> Result<(), String> {
    let id_ok = !item.id.is_empty()
        && item
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !id_ok {
        return Err("an id is letters, digits, '.', '_' and '-'".into());
    }
    if study_name(&item.study).is_none() {
        let known: Vec<&str> = STUDIES.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "study {:?} is none of {}",
            item.study,
            known.join(", ")
        ));
    }
    if !item.id.starts_with(&format!("{}.", item.study)) {
        return Err(format!(
            "the id starts with the study's number and a dot (\"{}.\")",
            item.study
        ));
    }
    for (field, value) in [("where", &item.location), ("what", &item.what)] {
        if value.trim().is_empty() {
            return Err(format!("`{field}` is empty"));
        }
    }
    for e in &item.engines {
        if !ENGINE_NAMES.contains(&e.as_str()) {
            return Err(format!(
                "engine {e:?} is none of {}",
                ENGINE_NAMES.join(", ")
            ));
        }
    }
    if let Some(t) = item.tolerance
        && !(0.0..=10.0).contains(&t)
    {
        return Err(format!(
            "tolerance {t} is outside 0 to 10 (a relative miss: 0.05 is 5%)"
        ));
    }
    let need = |ok: bool, what: &str| -> Result<(), String> {
        if ok {
            Ok(())
        } else {
            Err(format!("a {} item needs {what}", item.kind.name()))
        }
    };
    let has = |s: &str| !s.trim().is_empty();
    if item.kind == Kind::Missing {
        need(has(&item.why), "`why` (what is missing)")?;
        need(
            has(&item.waits_for),
            "`waits_for` (the capability it waits for)",
        )?;
        if item.scenario.is_some() {
            return Err("a missing item has no `scenario` (no engine reproduces it yet)".into());
        }
        return Ok(());
    }
    need(
        item.scenario.as_deref().is_some_and(has),
        "`scenario` (a file stem of scenarios/)",
    )?;
    if item.kind.has_paper_value() {
        need(
            item.source.as_deref().is_some_and(has),
            "`source` (a key of figures.toml)",
        )?;
    }
    match item.kind {
        Kind::Predicted => {
            need(
                !item.engines.is_empty(),
                "`engines` (those held to the figure)",
            )?;
            need(item.tolerance.is_some(), "`tolerance`")?;
            need(has(&item.tolerance_why), "`tolerance_why`")?;
        }
        Kind::Fitted => need(has(&item.why), "`why` (which parameter was fitted)")?,
        Kind::Input => need(has(&item.why), "`why` (which parameter the figure is)")?,
        Kind::Qualitative => need(!item.engines.is_empty(), "`engines` (those held to it)")?,
        Kind::Method | Kind::Missing => {}
    }
    Ok(())
}

/// Line and column (from 1) of byte offset `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at.min(text.len())).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.chars().count(), |i| {
        before.get(i + 1..).map_or(0, |s| s.chars().count())
    }) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[item]]
id = "003.t1.with_switch"
study = "003"
where = "Table 1"
what = "ttcp throughput between two Indigos through the GIGAswitch"
conditions = "FDDI, 63 KB window"
source = "gigaswitch.ttcp_with_switch_mbps"
index = 0
unit = "Mbit/s"
kind = "predicted"
scenario = "gigaswitch-table1-switch"
engines = ["model", "sim"]
tolerance = 0.05
tolerance_why = "three runs within 0.6%"

[[item]]
id = "003.echo.sizes"
study = "003"
where = "section 3"
what = "the UDP echo tool"
kind = "method"
scenario = "gigaswitch-table1-direct"

[[item]]
id = "004.sbtp.disk"
study = "004"
where = "Table 2"
what = "disk share of an SBTP transfer"
source = "riacs_transfer.sbtp.disk_pct"
index = 0
kind = "missing"
why = "no disk on simulated hosts"
waits_for = "a disk model (issue 27)"
"#;

    #[test]
    fn parses_items_of_each_kind() {
        let c = Catalogue::parse(GOOD, "c.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.items.len(), 3);
        let i = c.get("003.t1.with_switch").expect("there");
        assert_eq!(i.kind, Kind::Predicted);
        assert_eq!(i.location, "Table 1");
        assert_eq!(i.index, Some(0));
        assert_eq!(i.engines, ["model", "sim"]);
        assert_eq!(c.get("004.sbtp.disk").map(|i| i.kind), Some(Kind::Missing));
        assert!(Catalogue::parse("", "empty.toml").is_ok_and(|c| c.items.is_empty()));
    }

    fn error(text: &str) -> CatalogueError {
        match Catalogue::parse(text, "bad.toml") {
            Ok(c) => panic!("parsed: {c:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn errors_name_the_line_and_the_item() {
        let e = error(&GOOD.replace("id = \"003.echo.sizes\"", "id = \"003.t1.with_switch\""));
        assert!(e.message.contains("already used"), "{e}");
        assert_eq!(e.line, 17, "{e}");
        let e = error(&GOOD.replace("kind = \"method\"", "kind = \"guessed\""));
        assert!(e.message.contains("predicted"), "{e}");
        assert_eq!(e.line, 22, "{e}");
        let e = error(&GOOD.replace("unit = \"Mbit/s\"", "units = \"Mbit/s\""));
        assert!(e.message.contains("units"), "{e}");
        let e = error(&GOOD.replace("engines = [\"model\", \"sim\"]", "engines = [\"ns3\"]"));
        assert!(e.message.contains("\"ns3\""), "{e}");
        let e = error(&GOOD.replace("tolerance_why = \"three runs within 0.6%\"", ""));
        assert!(e.message.contains("003.t1.with_switch"), "{e}");
        assert!(e.message.contains("tolerance_why"), "{e}");
        let e = error(&GOOD.replace("waits_for = \"a disk model (issue 27)\"", ""));
        assert!(e.message.contains("waits_for"), "{e}");
        let e = error(&GOOD.replace("study = \"004\"", "study = \"005\""));
        assert!(e.message.contains("005"), "{e}");
        let e = error(&GOOD.replace("study = \"004\"", "study = \"003\""));
        assert!(e.message.contains("\"003.\""), "{e}");
        let e = error(&GOOD.replace("tolerance = 0.05", "tolerance = 50"));
        assert!(e.message.contains("outside"), "{e}");
        let e = error(&GOOD.replace("scenario = \"gigaswitch-table1-direct\"", ""));
        assert!(e.message.contains("`scenario`"), "{e}");
        let e = error("[[item]\n");
        assert_eq!(e.line, 1, "{e}");
    }
}
