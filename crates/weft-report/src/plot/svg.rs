//! A small SVG writer for [`Figure`]s: axes, grid, ticks, lines with bands, grouped bars, legend.
//!
//! Every drawn mark carries a class (`point`, `band`, `bar`, `tick-label`, `legend-entry`, ...)
//! so that tests and style sheets can find it. Text from result files is escaped.

use std::fmt::Write;

use super::figure::{Axis, Bars, Body, Figure, Panel, Series};
use super::scale::{Resolved, short_num};

/// Width of the figure, pixels.
pub const WIDTH: f64 = 900.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 190.0;
const PLOT_H: f64 = 290.0;
const PANEL_TOP: f64 = 34.0;
const PANEL_BOTTOM: f64 = 56.0;
const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// Draws `fig` as a standalone SVG document.
pub fn render(fig: &Figure) -> String {
    let head = if fig.subtitle.is_empty() { 44.0 } else { 64.0 };
    let heights: Vec<f64> = fig.panels.iter().map(panel_height).collect();
    let total = head + heights.iter().sum::<f64>() + 10.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}" font-size="12">"#,
        w = WIDTH,
        h = total
    );
    let _ = writeln!(
        out,
        r#"<rect class="background" x="0" y="0" width="{WIDTH}" height="{total}" fill="white"/>"#
    );
    let _ = writeln!(
        out,
        r#"<text class="title" x="{}" y="26" font-size="17" font-weight="bold" text-anchor="middle">{}</text>"#,
        WIDTH / 2.0,
        esc(&fig.title)
    );
    if !fig.subtitle.is_empty() {
        let _ = writeln!(
            out,
            r##"<text class="subtitle" x="{}" y="47" font-size="12" fill="#444" text-anchor="middle">{}</text>"##,
            WIDTH / 2.0,
            esc(&fig.subtitle)
        );
    }
    let mut top = head;
    for (i, (panel, h)) in fig.panels.iter().zip(&heights).enumerate() {
        draw_panel(&mut out, panel, i, top);
        top += h;
    }
    out.push_str("</svg>\n");
    out
}

fn panel_height(p: &Panel) -> f64 {
    PANEL_TOP + PLOT_H + PANEL_BOTTOM + bar_label_room(p)
}

/// Extra room under a bar chart for slanted category labels.
fn bar_label_room(p: &Panel) -> f64 {
    match &p.body {
        Body::Bars(b) => label_room(b),
        Body::Lines(_) => 0.0,
    }
}

/// Longest category label drawn, characters.
const MAX_CATEGORY_CHARS: usize = 40;

fn label_room(b: &Bars) -> f64 {
    if slanted(b) {
        let longest = b
            .categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0);
        // About 7 px per character, slanted at 35 degrees (sin 35° = 0.57).
        longest.min(MAX_CATEGORY_CHARS) as f64 * 7.0 * 0.574 + 6.0
    } else {
        0.0
    }
}

fn slanted(b: &Bars) -> bool {
    let slot = (WIDTH - LEFT - RIGHT) / b.categories.len().max(1) as f64;
    b.categories
        .iter()
        .any(|c| c.chars().count() as f64 * 7.0 > slot)
}

struct Frame {
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
    x: Resolved,
    y: Resolved,
}

impl Frame {
    fn px(&self, v: f64) -> f64 {
        self.x0 + self.x.frac(v) * self.w
    }
    fn py(&self, v: f64) -> f64 {
        self.y0 + self.h - self.y.frac(v) * self.h
    }
}

fn draw_panel(out: &mut String, p: &Panel, index: usize, top: f64) {
    let (xr, yr) = ranges(p);
    let f = Frame {
        x0: LEFT,
        y0: top + PANEL_TOP,
        w: WIDTH - LEFT - RIGHT,
        h: PLOT_H,
        x: Resolved::new(&p.x, xr.0, xr.1),
        y: Resolved::new(&p.y, yr.0, yr.1),
    };
    let _ = writeln!(out, r#"<g class="panel">"#);
    if !p.title.is_empty() {
        let _ = writeln!(
            out,
            r#"<text class="panel-title" x="{:.1}" y="{:.1}" font-size="14" font-weight="bold">{}</text>"#,
            f.x0,
            top + 20.0,
            esc(&p.title)
        );
    }
    let _ = writeln!(
        out,
        r#"<clipPath id="clip{index}"><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"/></clipPath>"#,
        // A little wider than the frame so that markers on its edges stay whole.
        f.x0 - 5.0,
        f.y0 - 5.0,
        f.w + 10.0,
        f.h + 10.0
    );
    y_axis(out, &f, &p.y);
    match &p.body {
        Body::Lines(series) => {
            x_axis(out, &f, &p.x);
            let _ = writeln!(out, r#"<g clip-path="url(#clip{index})">"#);
            for (i, s) in series.iter().enumerate() {
                draw_series(out, &f, s, PALETTE[i % PALETTE.len()]);
            }
            out.push_str("</g>\n");
            let entries: Vec<_> = series
                .iter()
                .enumerate()
                .flat_map(|(i, s)| {
                    let c = PALETTE[i % PALETTE.len()];
                    let mut v = vec![(s.name.clone(), c, if s.dashed { "dash" } else { "line" })];
                    // A band without a name is explained elsewhere (a sweep's subtitle).
                    if !s.band.is_empty() && !s.band_name.is_empty() {
                        v.push((s.band_name.clone(), c, "band"));
                    }
                    v
                })
                .collect();
            legend(out, &f, &entries);
        }
        Body::Bars(bars) => {
            draw_bars(out, &f, bars, &p.x);
            let entries: Vec<_> = bars
                .groups
                .iter()
                .enumerate()
                .map(|(i, g)| (g.name.clone(), PALETTE[i % PALETTE.len()], "bar"))
                .collect();
            legend(out, &f, &entries);
        }
    }
    let _ = writeln!(
        out,
        r##"<rect class="frame" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#333"/>"##,
        f.x0, f.y0, f.w, f.h
    );
    out.push_str("</g>\n");
}

/// Data ranges (x, y) of a panel, in base units.
fn ranges(p: &Panel) -> ((f64, f64), (f64, f64)) {
    let mut xs = Range::default();
    let mut ys = Range::default();
    match &p.body {
        Body::Lines(series) => {
            for s in series {
                for &(x, y) in &s.points {
                    xs.add(x);
                    ys.add(y);
                }
                for &(x, lo, hi) in &s.band {
                    xs.add(x);
                    ys.add(lo);
                    ys.add(hi);
                }
            }
        }
        Body::Bars(b) => {
            xs.add(0.0);
            xs.add(1.0);
            for v in b.groups.iter().flat_map(|g| &g.values).flatten() {
                ys.add(*v);
            }
            for (_, v) in &b.references {
                ys.add(*v);
            }
        }
    }
    // Headroom above the highest value, so that its marker is not cut by the frame.
    let (lo, hi) = ys.get();
    (xs.get(), (lo, hi + (hi - lo).abs() * 0.04))
}

#[derive(Default)]
struct Range(Option<(f64, f64)>);

impl Range {
    fn add(&mut self, v: f64) {
        if v.is_finite() {
            self.0 = Some(match self.0 {
                None => (v, v),
                Some((a, b)) => (a.min(v), b.max(v)),
            });
        }
    }
    fn get(&self) -> (f64, f64) {
        self.0.unwrap_or((0.0, 1.0))
    }
}

fn y_axis(out: &mut String, f: &Frame, axis: &Axis) {
    for (v, label) in &f.y.ticks {
        let y = f.py(*v);
        let _ = writeln!(
            out,
            r##"<line class="grid" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/>"##,
            f.x0,
            f.x0 + f.w
        );
        let _ = writeln!(
            out,
            r#"<text class="tick-label y" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            f.x0 - 6.0,
            y + 4.0,
            esc(label)
        );
    }
    let cx = f.x0 - 62.0;
    let cy = f.y0 + f.h / 2.0;
    let _ = writeln!(
        out,
        r#"<text class="axis-label y" x="{cx:.1}" y="{cy:.1}" text-anchor="middle" transform="rotate(-90 {cx:.1} {cy:.1})">{}</text>"#,
        esc(&f.y.label(axis))
    );
}

fn x_axis(out: &mut String, f: &Frame, axis: &Axis) {
    for (v, label) in &f.x.ticks {
        let x = f.px(*v);
        let _ = writeln!(
            out,
            r##"<line class="grid" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#eee"/>"##,
            f.y0,
            f.y0 + f.h
        );
        let _ = writeln!(
            out,
            r#"<text class="tick-label x" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            f.y0 + f.h + 17.0,
            esc(label)
        );
    }
    axis_label_x(out, f, 0.0, &f.x.label(axis));
}

fn axis_label_x(out: &mut String, f: &Frame, extra: f64, text: &str) {
    let _ = writeln!(
        out,
        r#"<text class="axis-label x" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        f.x0 + f.w / 2.0,
        f.y0 + f.h + 40.0 + extra,
        esc(text)
    );
}

fn draw_series(out: &mut String, f: &Frame, s: &Series, color: &str) {
    let _ = writeln!(out, r#"<g class="series" data-name="{}">"#, esc(&s.name));
    if !s.band.is_empty() {
        let mut d = String::new();
        for (i, &(x, _, hi)) in s.band.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.2},{:.2} ",
                if i == 0 { 'M' } else { 'L' },
                f.px(x),
                f.py(hi)
            );
        }
        for &(x, lo, _) in s.band.iter().rev() {
            let _ = write!(d, "L{:.2},{:.2} ", f.px(x), f.py(lo));
        }
        let _ = writeln!(
            out,
            r#"<path class="band" d="{}Z" fill="{color}" fill-opacity="0.18" stroke="none"/>"#,
            d
        );
    }
    if s.points.len() > 1 {
        let pts: Vec<String> = s
            .points
            .iter()
            .map(|&(x, y)| format!("{:.2},{:.2}", f.px(x), f.py(y)))
            .collect();
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            out,
            r#"<polyline class="line" points="{}" fill="none" stroke="{color}" stroke-width="2"{dash}/>"#,
            pts.join(" ")
        );
    }
    if s.markers || s.points.len() == 1 {
        for &(x, y) in &s.points {
            let _ = writeln!(
                out,
                r#"<circle class="point" cx="{:.2}" cy="{:.2}" r="3" fill="{color}"><title>{}: {}</title></circle>"#,
                f.px(x),
                f.py(y),
                esc(&value_text(&f.x, x)),
                esc(&value_text(&f.y, y))
            );
        }
    }
    out.push_str("</g>\n");
}

fn draw_bars(out: &mut String, f: &Frame, b: &Bars, x_axis: &Axis) {
    let n = b.categories.len().max(1);
    let g = b.groups.len().max(1);
    let slot = f.w / n as f64;
    let bar_w = (slot * 0.8 / g as f64).min(70.0);
    let pad = (slot - bar_w * g as f64) / 2.0;
    let base = f.py(f.y.lo.max(0.0));
    let slant = slanted(b);
    for (ci, cat) in b.categories.iter().enumerate() {
        let cx = f.x0 + slot * (ci as f64 + 0.5);
        for (gi, group) in b.groups.iter().enumerate() {
            let Some(Some(v)) = group.values.get(ci) else {
                continue;
            };
            let x = f.x0 + slot * ci as f64 + pad + bar_w * gi as f64;
            let y = f.py(*v);
            let (top, h) = if y < base {
                (y, base - y)
            } else {
                (base, y - base)
            };
            let _ = writeln!(
                out,
                r#"<rect class="bar" data-group="{}" data-category="{}" x="{x:.2}" y="{top:.2}" width="{bar_w:.2}" height="{h:.2}" fill="{}"><title>{}: {}</title></rect>"#,
                esc(&group.name),
                esc(cat),
                PALETTE[gi % PALETTE.len()],
                esc(cat),
                esc(&value_text(&f.y, *v))
            );
        }
        let ly = f.y0 + f.h + 16.0;
        if slant {
            let _ = writeln!(
                out,
                r#"<text class="category-label" x="{cx:.1}" y="{ly:.1}" text-anchor="end" transform="rotate(-35 {cx:.1} {ly:.1})">{}</text>"#,
                esc(&truncate(cat, MAX_CATEGORY_CHARS))
            );
        } else {
            let _ = writeln!(
                out,
                r#"<text class="category-label" x="{cx:.1}" y="{ly:.1}" text-anchor="middle">{}</text>"#,
                esc(cat)
            );
        }
    }
    for (label, v) in &b.references {
        let y = f.py(*v);
        let _ = writeln!(
            out,
            r##"<line class="reference" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#000" stroke-dasharray="8 4" stroke-width="1.5"/>"##,
            f.x0,
            f.x0 + f.w
        );
        let _ = writeln!(
            out,
            r#"<text class="reference-label" x="{:.1}" y="{:.1}" text-anchor="end">{} {}</text>"#,
            f.x0 + f.w - 4.0,
            y - 5.0,
            esc(label),
            esc(&value_text(&f.y, *v))
        );
    }
    axis_label_x(out, f, label_room(b), &x_axis.label);
}

fn legend(out: &mut String, f: &Frame, entries: &[(String, &str, &str)]) {
    let x = f.x0 + f.w + 14.0;
    let _ = writeln!(out, r#"<g class="legend">"#);
    for (i, (name, color, mark)) in entries.iter().enumerate() {
        let y = f.y0 + 10.0 + 20.0 * i as f64;
        match *mark {
            "band" => {
                let _ = writeln!(
                    out,
                    r#"<rect x="{x:.1}" y="{:.1}" width="22" height="10" fill="{color}" fill-opacity="0.18"/>"#,
                    y - 5.0
                );
            }
            "bar" => {
                let _ = writeln!(
                    out,
                    r#"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="{color}"/>"#,
                    x + 5.0,
                    y - 6.0
                );
            }
            m => {
                let dash = if m == "dash" {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    r#"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2"{dash}/>"#,
                    x + 22.0
                );
            }
        }
        let _ = writeln!(
            out,
            r#"<text class="legend-entry" x="{:.1}" y="{:.1}">{}</text>"#,
            x + 28.0,
            y + 4.0,
            esc(&truncate(name, 22))
        );
    }
    out.push_str("</g>\n");
}

fn value_text(r: &Resolved, v: f64) -> String {
    let shown = short_num(v / r.unit.divisor);
    if r.unit.name.is_empty() {
        shown
    } else {
        format!("{shown} {}", r.unit.name)
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

/// Escapes text for XML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' && c != '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
