//! Simulator results (`weft sim`): throughput against port or input count with the published and
//! closed-form curves (`sim.hol`, `sim.contention`), delay and throughput against load (`sim.oq`,
//! `sim.islip`), goodput per drop policy (`sim.epd`) and queue occupancy over time
//! (`sim.many_to_one`).

use super::{nothing, records, subtitle};
use crate::plot::PlotError;
use crate::plot::fields::Record;
use crate::plot::figure::{Axis, BarGroup, Bars, Body, Figure, Panel, Quantity, Series};
use crate::schema::ResultDoc;

/// Points (x, y) of every sample that has both fields.
fn xy(recs: &[Record], x: &str, y: &str) -> Vec<(f64, f64)> {
    recs.iter()
        .filter_map(|r| Some((r.num(&[x])?, r.num(&[y])?)))
        .collect()
}

fn line(name: &str, points: Vec<(f64, f64)>, dashed: bool) -> Option<Series> {
    (!points.is_empty()).then(|| Series {
        dashed,
        markers: !dashed,
        ..Series::new(name, points)
    })
}

fn lines_panel(title: &str, x: Axis, y: Axis, series: Vec<Option<Series>>) -> Option<Panel> {
    let s: Vec<Series> = series.into_iter().flatten().collect();
    (!s.is_empty()).then(|| Panel {
        title: title.into(),
        x,
        y,
        body: Body::Lines(s),
    })
}

fn finish(doc: &ResultDoc, title: &str, panels: Vec<Option<Panel>>) -> Result<Figure, PlotError> {
    let panels: Vec<Panel> = panels.into_iter().flatten().collect();
    if panels.is_empty() {
        return Err(nothing(
            doc,
            "no samples with the fields this kind of result records",
        ));
    }
    let seed = doc.params.get("seed").map(|s| format!("seed {s}"));
    Ok(Figure {
        title: title.into(),
        subtitle: subtitle(doc, &seed.into_iter().collect::<Vec<_>>()),
        panels,
    })
}

/// `sim.hol`: saturation throughput against N, with Karol et al. and 2 - sqrt(2).
pub fn hol(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let r = records(doc);
    let panel = lines_panel(
        "",
        Axis::linear("ports N", Quantity::Plain),
        Axis::linear("throughput per port", Quantity::Fraction),
        vec![
            line("simulated FIFO", xy(&r, "ports", "throughput"), false),
            line("Karol et al. 1987", xy(&r, "ports", "karol"), false),
            line("2 - sqrt 2", xy(&r, "ports", "limit"), true),
            line(
                "GIGAswitch formula",
                xy(&r, "ports", "gigaswitch_formula"),
                true,
            ),
        ],
    );
    finish(
        doc,
        "Head-of-line blocking: saturated input-queued FIFO",
        vec![panel],
    )
}

/// `sim.contention`: input efficiency against contending inputs, FIFO and memoryless, with the
/// GIGAswitch formula.
pub fn contention(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let r = records(doc);
    let panel = lines_panel(
        "",
        Axis::linear("contending inputs M", Quantity::Plain),
        Axis::linear("input efficiency", Quantity::Fraction),
        vec![
            line("simulated FIFO", xy(&r, "inputs", "efficiency"), false),
            line(
                "simulated, no memory",
                xy(&r, "inputs", "efficiency_no_memory"),
                false,
            ),
            line("(N/M)(1-(1-1/N)^M)", xy(&r, "inputs", "formula"), true),
        ],
    );
    finish(
        doc,
        "Output contention (GIGAswitch Tables 8-9)",
        vec![panel],
    )
}

/// `sim.oq` and `sim.islip`: delay (and throughput) against load.
pub fn load(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let r = records(doc);
    let delay = lines_panel(
        "delay",
        Axis::linear("load", Quantity::Fraction),
        Axis::linear("delay (slots)", Quantity::Plain),
        vec![
            line("mean", xy(&r, "load", "mean_delay_slots"), false),
            line(
                "formula mean",
                xy(&r, "load", "formula_mean_wait_slots"),
                true,
            ),
            line("p99", xy(&r, "load", "p99_delay_slots"), true),
        ],
    );
    let tput = lines_panel(
        "throughput",
        Axis::linear("load", Quantity::Fraction),
        Axis::linear("throughput per port", Quantity::Fraction),
        vec![line("carried", xy(&r, "load", "throughput"), false)],
    );
    let title = if doc.kind == "sim.islip" {
        "VOQ + iSLIP against load"
    } else {
        "Output-queued switch: delay against load"
    };
    finish(doc, title, vec![delay, tput])
}

/// `sim.epd`: goodput and throughput per drop policy.
pub fn epd(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let r = records(doc);
    let cats: Vec<String> = r.iter().filter_map(|x| x.text(&["policy"])).collect();
    let group = |name: &str, key: &str| BarGroup {
        name: name.into(),
        values: r.iter().map(|x| x.num(&[key])).collect(),
    };
    let panel = (!cats.is_empty()).then(|| Panel {
        title: String::new(),
        x: Axis::linear("drop policy", Quantity::Plain),
        y: Axis::linear("of the output line", Quantity::Fraction),
        body: Body::Bars(Bars {
            categories: cats,
            groups: vec![
                group("cells carried", "throughput"),
                group("frame goodput", "goodput"),
            ],
            references: vec![("line rate".into(), 1.0)],
        }),
    });
    finish(doc, "Frame overload: tail drop, PPD and EPD", vec![panel])
}

/// `sim.many_to_one`: output queue occupancy over time.
pub fn many_to_one(doc: &ResultDoc) -> Result<Figure, PlotError> {
    let r = records(doc);
    let panel = lines_panel(
        "",
        Axis::linear("time", Quantity::Nanoseconds),
        Axis::linear("queued", Quantity::Plain),
        vec![line("output buffer", xy(&r, "time_ns", "queue"), false)],
    );
    finish(doc, "Many-to-one: output buffer occupancy", vec![panel])
}
