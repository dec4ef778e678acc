//! The table from result kind to figure, and helpers shared by the figure builders.
//!
//! To teach `weft plot` a new kind, write a builder `fn(&ResultDoc) -> Result<Figure, PlotError>`
//! in a file of its own here and add one [`FigureKind`] line to [`FIGURES`]. A kind `a.b` with no
//! entry of its own uses the entry for `a`; a kind with no entry at all, or whose builder finds
//! nothing it knows, gets the generic line plot of any two numeric sample fields.

mod composite;
mod generic;
mod mp;
mod pattern;
mod rr;
mod sim;
mod tput;
mod vc;

use serde_json::Value;

use super::PlotError;
use super::fields::Record;
use super::figure::{Figure, Quantity};
use crate::schema::{Engine, ResultDoc};

pub use generic::figure as generic_figure;

/// Builds the figure for one kind of result document.
pub type Builder = fn(&ResultDoc) -> Result<Figure, PlotError>;

/// One entry of the kind -> figure table.
#[derive(Clone, Copy, Debug)]
pub struct FigureKind {
    /// The result kind (`ResultDoc::kind`) this entry draws.
    pub kind: &'static str,
    /// What the figure shows, for help texts.
    pub about: &'static str,
    /// The builder.
    pub build: Builder,
}

/// Every kind with a figure of its own.
pub const FIGURES: &[FigureKind] = &[
    FigureKind {
        kind: "rr",
        about: "latency (p50 with a p99 or min/max band) and throughput against message size",
        build: rr::figure,
    },
    FigureKind {
        kind: "tput",
        about: "throughput per interval over time, per stream and in total",
        build: tput::figure,
    },
    FigureKind {
        kind: "pattern",
        about: "per-session throughput and latency bars, with the line rate",
        build: pattern::figure,
    },
    FigureKind {
        kind: "mp",
        about: "message passing: time per iteration and rate against size per pattern, NPB bars",
        build: mp::figure,
    },
    FigureKind {
        kind: "demo",
        about: "the figures of the result documents it holds, stacked (weft demo)",
        build: composite::figure,
    },
    FigureKind {
        kind: "sim.hol",
        about: "saturated FIFO throughput against port count, with Karol et al. and 2 - sqrt 2",
        build: sim::hol,
    },
    FigureKind {
        kind: "sim.contention",
        about: "input efficiency against contending inputs, with the GIGAswitch formula",
        build: sim::contention,
    },
    FigureKind {
        kind: "sim.oq",
        about: "mean and p99 delay and throughput against load, with the output-queued formula",
        build: sim::load,
    },
    FigureKind {
        kind: "sim.islip",
        about: "VOQ + iSLIP delay and throughput against load",
        build: sim::load,
    },
    FigureKind {
        kind: "sim.epd",
        about: "cells carried and frame goodput per drop policy",
        build: sim::epd,
    },
    FigureKind {
        kind: "sim.many_to_one",
        about: "output buffer occupancy over time",
        build: sim::many_to_one,
    },
    FigureKind {
        kind: "vc.growth",
        about: "a full mesh's circuits and switch entries against hosts, with n(n-1)",
        build: vc::growth,
    },
];

/// The table entry for `kind`: an exact match, else the longest dotted prefix (`rr.cold` -> `rr`).
pub fn lookup(kind: &str) -> Option<&'static FigureKind> {
    if let Some(k) = FIGURES.iter().find(|k| k.kind == kind) {
        return Some(k);
    }
    let mut prefix = kind;
    while let Some((head, _)) = prefix.rsplit_once('.') {
        if let Some(k) = FIGURES.iter().find(|k| k.kind == head) {
            return Some(k);
        }
        prefix = head;
    }
    None
}

/// The figure that fits `doc`: its kind's own, else the generic one. When both fail, the error of
/// the kind's own builder is returned, since it says what that kind needs.
pub fn figure_for(doc: &ResultDoc) -> Result<Figure, PlotError> {
    match lookup(&doc.kind) {
        Some(k) => match (k.build)(doc) {
            Ok(f) => Ok(f),
            Err(own) => generic::figure(doc).map_err(|_| own),
        },
        None => generic::figure(doc),
    }
}

/// The samples of `doc`, flattened for lookup by name.
pub(crate) fn records(doc: &ResultDoc) -> Vec<Record> {
    doc.samples.iter().map(Record::new).collect()
}

/// A "nothing to plot" error for `doc`.
pub(crate) fn nothing(doc: &ResultDoc, reason: impl Into<String>) -> PlotError {
    PlotError::Nothing {
        kind: doc.kind.clone(),
        reason: reason.into(),
    }
}

/// The engine's name as written in documents.
pub(crate) fn engine_name(e: Engine) -> &'static str {
    match e {
        Engine::Real => "real",
        Engine::Emu => "emu",
        Engine::Sim => "sim",
        Engine::Model => "model",
        Engine::Mixed => "mixed",
    }
}

/// A subtitle: the engine, then the given parts, separated by middle dots.
pub(crate) fn subtitle(doc: &ResultDoc, parts: &[String]) -> String {
    let mut all = vec![format!("engine: {}", engine_name(doc.engine))];
    all.extend(parts.iter().filter(|p| !p.is_empty()).cloned());
    all.join(" · ")
}

/// A number from the document's params or summary (flattened), by accepted names.
pub(crate) fn doc_num(v: &Value, names: &[&str]) -> Option<f64> {
    Record::new(v).num(names)
}

/// A text from the document's params or summary (flattened), by accepted names.
pub(crate) fn doc_text(v: &Value, names: &[&str]) -> Option<String> {
    Record::new(v).text(names)
}

/// The quantity a field name's suffix announces (`_ns`, `_bps`, `_bytes`, `_s`, ...).
pub(crate) fn quantity_of(key: &str) -> Quantity {
    let k = key.rsplit('.').next().unwrap_or(key);
    if k.ends_with("_ns") {
        Quantity::Nanoseconds
    } else if k.ends_with("_bps") || k == "bps" || k.ends_with("bits_per_second") {
        Quantity::BitsPerSecond
    } else if k.ends_with("_bytes") || k == "bytes" {
        Quantity::Bytes
    } else if k.ends_with("_s") || k.ends_with("_secs") {
        Quantity::Seconds
    } else if k.ends_with("_frac") || k.ends_with("efficiency") || k.ends_with("utilisation") {
        Quantity::Fraction
    } else {
        Quantity::Plain
    }
}

/// `v` in the unit that reads best for its quantity, e.g. `9.41 Gbit/s`.
pub(crate) fn pretty(q: Quantity, v: f64) -> String {
    let u = super::scale::display_unit(q, super::figure::Scale::Linear, v.abs());
    let n = super::scale::short_num(v / u.divisor);
    if u.name.is_empty() {
        n
    } else if u.name == "%" {
        format!("{n}%")
    } else {
        format!("{n} {}", u.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_kinds_fall_back_to_their_prefix() {
        assert_eq!(lookup("rr").map(|k| k.kind), Some("rr"));
        assert_eq!(lookup("rr.cold").map(|k| k.kind), Some("rr"));
        assert_eq!(lookup("sim.hol").map(|k| k.kind), Some("sim.hol"));
        assert!(lookup("sim").is_none());
        assert!(lookup("").is_none());
    }

    #[test]
    fn suffixes_name_quantities() {
        assert_eq!(quantity_of("latency.p50_ns"), Quantity::Nanoseconds);
        assert_eq!(quantity_of("goodput_bps"), Quantity::BitsPerSecond);
        assert_eq!(quantity_of("size_bytes"), Quantity::Bytes);
        assert_eq!(quantity_of("t_s"), Quantity::Seconds);
        assert_eq!(quantity_of("line_efficiency"), Quantity::Fraction);
        assert_eq!(quantity_of("count"), Quantity::Plain);
        assert_eq!(pretty(Quantity::BitsPerSecond, 9.41e9), "9.41 Gbit/s");
        assert_eq!(pretty(Quantity::Fraction, 0.945), "94.5%");
    }
}
