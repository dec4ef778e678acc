//! The report's figures from a repro document's items, drawn like the studies' own with
//! `weft plot`'s figure model ([`crate::plot::Figure`]): round trip and throughput against
//! message size (a line per path and engine, the paper's dashed), each value against the
//! parameter a scenario sweeps (contention against inputs), and the studies' tables as grouped
//! bars (EBN's runs, the SBTP time split, MBTP against FTP), the paper's bars beside each
//! engine's. Families the studies draw but no item has values for yet are listed, not drawn.

use std::collections::BTreeMap;

use crate::html::esc;
use crate::plot::{Axis, BarGroup, Bars, Body, Figure, Panel, Quantity, Scale, Series};
use crate::repro_doc::{ENGINES, ItemSample, Verdict};

/// A figure with its caption (HTML).
pub struct Drawn {
    /// The figure.
    pub figure: Figure,
    /// The caption, already escaped.
    pub caption: String,
}

/// Every figure the items give, in this order: against message size, against swept
/// parameters, the tables as bars.
pub fn all(items: &[ItemSample]) -> Vec<Drawn> {
    let mut out = Vec::new();
    out.extend(against_size(items, Family::Latency));
    out.extend(against_size(items, Family::Throughput));
    out.extend(against_swept(items));
    out.extend(tables(items));
    out
}

/// The families of the studies' figures this page has no drawing for (utilisation over a day,
/// PVC counts against hosts), with the items of each and their verdicts: (what, the items).
/// Each is listed whenever the document holds one of its items, so that the page says which
/// of the studies' figures it does not redraw.
pub fn undrawn(items: &[ItemSample]) -> Vec<(String, Vec<String>)> {
    let families: [(&str, &[&str]); 2] = [
        (
            "utilisation over a working day and its histogram (Sandia, figures 2 and 3)",
            &["traffic_"],
        ),
        (
            "PVC counts against hosts (Sandia section VI, EBN's mesh)",
            &["pvc"],
        ),
    ];
    families
        .iter()
        .filter_map(|(what, keys)| {
            let ids: Vec<&ItemSample> = items
                .iter()
                .filter(|i| {
                    let src = i.source.as_deref().unwrap_or("");
                    keys.iter().any(|k| src.contains(k) || i.item.contains(k))
                })
                .collect();
            (!ids.is_empty()).then(|| {
                (
                    what.to_string(),
                    ids.iter()
                        .map(|i| format!("{} ({})", i.item, i.verdict.name()))
                        .collect(),
                )
            })
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Latency,
    Throughput,
}

/// A value in the metric's unit, in the base unit of its axis (ns, bit/s, a fraction), with the
/// quantity; `None` for a metric of another family.
fn base_value(metric: &str, v: f64) -> Option<(f64, Quantity)> {
    let m = metric.rsplit('.').next().unwrap_or(metric);
    if m.ends_with("_us") {
        Some((v * 1e3, Quantity::Nanoseconds))
    } else if m.ends_with("_ms") {
        Some((v * 1e6, Quantity::Nanoseconds))
    } else if m.ends_with("_ns") {
        Some((v, Quantity::Nanoseconds))
    } else if m.ends_with("_mbps") {
        Some((v * 1e6, Quantity::BitsPerSecond))
    } else if m.ends_with("_kib_s") {
        Some((v * 8.0 * 1024.0, Quantity::BitsPerSecond))
    } else if m.ends_with("_bps") {
        Some((v, Quantity::BitsPerSecond))
    } else if m.contains("efficiency") {
        Some((v, Quantity::Fraction))
    } else {
        None
    }
}

fn family_of(q: Quantity) -> Option<Family> {
    match q {
        Quantity::Nanoseconds => Some(Family::Latency),
        Quantity::BitsPerSecond => Some(Family::Throughput),
        _ => None,
    }
}

/// The paper's value and each engine's, named, for an item.
fn columns(i: &ItemSample) -> Vec<(&'static str, Option<f64>)> {
    let mut out = vec![("paper", i.paper)];
    out.extend(ENGINES.iter().map(|e| (*e, i.value(e))));
    out
}

/// Lines against message size, a panel per scenario.
fn against_size(items: &[ItemSample], family: Family) -> Option<Drawn> {
    let mut panels: BTreeMap<&str, Vec<(&ItemSample, Quantity)>> = BTreeMap::new();
    for i in items {
        let (Some(s), Some(_), Some(m), Some(_)) =
            (&i.scenario, i.size_bytes, &i.metric, &i.series)
        else {
            continue;
        };
        let Some((_, q)) = base_value(m, 1.0) else {
            continue;
        };
        let named = match family {
            Family::Latency => m.starts_with("rtt"),
            Family::Throughput => m.contains("goodput") || m.contains("payload"),
        };
        if named && family_of(q) == Some(family) && i.paper.is_some() && i.kind != "input" {
            panels.entry(s.as_str()).or_default().push((i, q));
        }
    }
    let mut drawn_items: Vec<&ItemSample> = Vec::new();
    let mut out_panels = Vec::new();
    for (scenario, rows) in panels {
        let hosts: Vec<&str> = rows
            .iter()
            .filter_map(|(i, _)| i.series.as_deref()?.rsplit(' ').next())
            .collect();
        let one_path = hosts.windows(2).all(|w| w[0] == w[1]);
        let mut lines: BTreeMap<(String, &str), Vec<(f64, f64)>> = BTreeMap::new();
        for (i, _) in &rows {
            let (Some(series), Some(size), Some(metric)) = (&i.series, i.size_bytes, &i.metric)
            else {
                continue;
            };
            // "stem proto from-to" -> "proto", or "proto from" when the paths differ.
            let mut parts = series.splitn(3, ' ').skip(1);
            let proto = parts.next().unwrap_or("");
            let label = match (one_path, parts.next()) {
                (false, Some(h)) => format!("{proto} {}", h.split('-').next().unwrap_or(h)),
                _ => proto.to_string(),
            };
            for (name, v) in columns(i) {
                if let Some((y, _)) = v.and_then(|v| base_value(metric, v)) {
                    lines
                        .entry((label.clone(), name))
                        .or_default()
                        .push((size, y));
                }
            }
            drawn_items.push(i);
        }
        let series: Vec<Series> = lines
            .into_iter()
            .map(|((label, name), mut pts)| {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let mut s = Series::new(format!("{label} {name}"), pts);
                s.dashed = name == "paper";
                s
            })
            .collect();
        let (y_label, q) = match family {
            Family::Latency => ("round trip", Quantity::Nanoseconds),
            Family::Throughput => ("throughput", Quantity::BitsPerSecond),
        };
        out_panels.push(Panel {
            title: scenario.to_string(),
            x: Axis::log2("message size", Quantity::Bytes),
            y: Axis::linear(y_label, q),
            body: Body::Lines(series),
        });
    }
    if out_panels.is_empty() {
        return None;
    }
    let title = match family {
        Family::Latency => "Round trip against message size",
        Family::Throughput => "Throughput against message size",
    };
    Some(Drawn {
        figure: Figure {
            title: title.into(),
            subtitle: "the paper's values dashed; every engine that ran, solid".into(),
            panels: out_panels,
        },
        caption: caption(title, &drawn_items),
    })
}

/// Each scenario's values against the parameter it sweeps (other than message size): a panel
/// per (scenario, parameter), a line per (metric, engine).
fn against_swept(items: &[ItemSample]) -> Vec<Drawn> {
    let mut groups: BTreeMap<(&str, String), Vec<&ItemSample>> = BTreeMap::new();
    for i in items {
        let (Some(s), Some(_), Some(p)) = (&i.scenario, i.x, &i.point) else {
            continue;
        };
        if i.kind == "input" {
            continue;
        }
        let Some(field) = p
            .split_whitespace()
            .nth(1)
            .and_then(|f| f.split_once('='))
            .map(|(f, _)| f.to_string())
        else {
            continue;
        };
        if field == "size" {
            continue;
        }
        groups.entry((s.as_str(), field)).or_default().push(i);
    }
    let mut out = Vec::new();
    for ((scenario, field), rows) in groups {
        let xs: Vec<f64> = rows.iter().filter_map(|i| i.x).collect();
        if xs.iter().all(|x| Some(x) == xs.first()) {
            continue;
        }
        let mut lines: BTreeMap<(String, &str), Vec<(f64, f64)>> = BTreeMap::new();
        let mut quantity = None;
        for i in &rows {
            let (Some(x), Some(metric)) = (i.x, &i.metric) else {
                continue;
            };
            for (name, v) in columns(i) {
                let Some(v) = v else { continue };
                let (y, q) = base_value(metric, v).unwrap_or((v, Quantity::Plain));
                if quantity.is_some_and(|known| known != q) {
                    continue;
                }
                quantity = Some(q);
                lines
                    .entry((metric.clone(), name))
                    .or_default()
                    .push((x, y));
            }
        }
        let series: Vec<Series> = lines
            .into_iter()
            .map(|((metric, name), mut pts)| {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let mut s = Series::new(format!("{metric} {name}"), pts);
                s.dashed = name == "paper";
                s
            })
            .collect();
        let q = quantity.unwrap_or(Quantity::Plain);
        let x_q = match field.as_str() {
            "window" | "mtu" | "mss" | "response_size" => Quantity::Bytes,
            _ => Quantity::Plain,
        };
        let title = format!("{scenario}: against {field}");
        let mut x = Axis::linear(field.clone(), x_q);
        x.from_zero = false;
        out.push(Drawn {
            figure: Figure {
                title: title.clone(),
                subtitle: "the paper's values dashed; every engine that ran, solid".into(),
                panels: vec![Panel {
                    title: String::new(),
                    x,
                    y: Axis::linear(
                        match q {
                            Quantity::BitsPerSecond => "throughput".to_string(),
                            Quantity::Nanoseconds => "time".to_string(),
                            Quantity::Fraction => "fraction".to_string(),
                            _ => rows.first().map(|i| i.unit.clone()).unwrap_or_default(),
                        },
                        q,
                    ),
                    body: Body::Lines(series),
                }],
            },
            caption: caption(&title, &rows),
        });
    }
    out
}

/// The studies' tables as grouped bars: items of one list-valued figure family (the same
/// source but its last part, the same unit), a category per element, a bar per source and
/// column (paper, then each engine with values).
fn tables(items: &[ItemSample]) -> Vec<Drawn> {
    let mut groups: BTreeMap<(String, String, String), Vec<&ItemSample>> = BTreeMap::new();
    for i in items {
        let Some(src) = &i.source else { continue };
        let Some((base, _)) = src.rsplit_once('.') else {
            continue;
        };
        if i.paper.is_none() || index_of(i).is_none() {
            continue;
        }
        groups
            .entry((i.study.clone(), base.to_string(), i.unit.clone()))
            .or_default()
            .push(i);
    }
    let mut out = Vec::new();
    for ((_, base, unit), rows) in groups {
        let mut categories: Vec<usize> = rows.iter().filter_map(|i| index_of(i)).collect();
        categories.sort_unstable();
        categories.dedup();
        if categories.len() < 2 {
            continue;
        }
        let positions = differing_positions(&rows);
        let labels: Vec<String> = categories
            .iter()
            .map(|c| {
                let first = rows.iter().find(|i| index_of(i) == Some(*c));
                first.map_or_else(String::new, |i| category_label(&i.item, &positions))
            })
            .collect();
        let mut sources: Vec<&str> = rows.iter().filter_map(|i| i.source.as_deref()).collect();
        sources.sort_unstable();
        sources.dedup();
        let mut bar_groups: Vec<BarGroup> = Vec::new();
        for src in &sources {
            let last = src.rsplit('.').next().unwrap_or(src);
            for col in ["paper", "model", "sim", "emu", "real"] {
                let values: Vec<Option<f64>> = categories
                    .iter()
                    .map(|c| {
                        rows.iter()
                            .find(|i| i.source.as_deref() == Some(*src) && index_of(i) == Some(*c))
                            .and_then(|i| {
                                if col == "paper" {
                                    i.paper
                                } else {
                                    i.value(col)
                                }
                            })
                    })
                    .collect();
                if values.iter().any(Option::is_some) {
                    let name = if sources.len() > 1 {
                        format!("{last} {col}")
                    } else {
                        col.to_string()
                    };
                    bar_groups.push(BarGroup { name, values });
                }
            }
        }
        let title = format!(
            "{}: {}",
            rows.first()
                .map(|i| i
                    .location
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string())
                .unwrap_or_default(),
            base
        );
        out.push(Drawn {
            figure: Figure {
                title: title.clone(),
                subtitle: String::new(),
                panels: vec![Panel {
                    title: String::new(),
                    x: Axis {
                        label: String::new(),
                        quantity: Quantity::Plain,
                        scale: Scale::Linear,
                        from_zero: true,
                    },
                    y: Axis::linear(unit.clone(), Quantity::Plain),
                    body: Body::Bars(Bars {
                        categories: labels,
                        groups: bar_groups,
                        references: Vec::new(),
                    }),
                }],
            },
            caption: caption(&title, &rows),
        });
    }
    out
}

/// The element of a list-valued figure an item is.
fn index_of(i: &ItemSample) -> Option<usize> {
    i.index
}

/// The positions of the dotted id parts that differ among the items of one source (`run0`
/// against `run1`, `psyche_conan` against `psyche_dufus`): what tells the categories apart.
fn differing_positions(rows: &[&ItemSample]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let mut sources: Vec<&str> = rows.iter().filter_map(|i| i.source.as_deref()).collect();
    sources.sort_unstable();
    sources.dedup();
    for src in sources {
        let ids: Vec<Vec<&str>> = rows
            .iter()
            .filter(|i| i.source.as_deref() == Some(src))
            .map(|i| i.item.split('.').collect())
            .collect();
        let Some(first) = ids.first() else { continue };
        for (k, part) in first.iter().enumerate() {
            if ids.iter().any(|id| id.get(k) != Some(part)) && !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out.sort_unstable();
    out
}

/// The parts of `id` at `positions`, or the whole id when there are none.
fn category_label(id: &str, positions: &[usize]) -> String {
    let parts: Vec<&str> = id.split('.').collect();
    let picked: Vec<&str> = positions
        .iter()
        .filter_map(|k| parts.get(*k).copied())
        .collect();
    if picked.is_empty() {
        id.to_string()
    } else {
        picked.join(".")
    }
}

/// A caption: what the figure shows and the items in it with their verdicts.
fn caption(title: &str, items: &[&ItemSample]) -> String {
    let mut counts: BTreeMap<Verdict, usize> = BTreeMap::new();
    for i in items {
        *counts.entry(i.verdict).or_insert(0) += 1;
    }
    let verdicts: Vec<String> = counts
        .iter()
        .map(|(v, n)| format!("{n} {}", v.name()))
        .collect();
    let ids: Vec<String> = items
        .iter()
        .map(|i| format!("<a href=\"#item-{0}\">{0}</a>", esc(&i.item)))
        .collect();
    format!(
        "{}: {} item(s), {}. Items: {}.",
        esc(title),
        items.len(),
        verdicts.join(", "),
        ids.join(", ")
    )
}
