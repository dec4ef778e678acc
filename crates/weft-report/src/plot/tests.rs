//! Figures drawn from known documents, checked by parsing the SVG they produce.

use serde_json::{Value, json};

use super::*;
use crate::schema::{Engine, ResultDoc};

fn doc(kind: &str, samples: Vec<Value>, summary: Value) -> ResultDoc {
    let mut d = ResultDoc::new(kind, Engine::Real);
    d.samples = samples;
    d.summary = summary;
    d
}

/// Elements with `class` containing `class_word`, in the parsed SVG.
fn count(svg: &str, class_word: &str) -> usize {
    let tree = roxmltree::Document::parse(svg).expect("well-formed SVG");
    tree.descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c.split(' ').any(|w| w == class_word))
        })
        .count()
}

fn texts(svg: &str, class_word: &str) -> Vec<String> {
    let tree = roxmltree::Document::parse(svg).expect("well-formed SVG");
    tree.descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c.split(' ').any(|w| w == class_word))
        })
        .map(|n| n.text().unwrap_or_default().to_string())
        .collect()
}

fn rr_doc() -> ResultDoc {
    let samples = (0..7)
        .map(|i| {
            let size = 1u64 << (i * 2); // 1 .. 4096
            let p50 = 18_000 + 3 * size;
            json!({
                "size_bytes": size,
                "latency": { "min_ns": p50 - 2_000, "p50_ns": p50, "p99_ns": p50 + 9_000,
                             "mean_ns": p50 + 500 },
                "throughput_bps": size as f64 * 8.0 / (p50 as f64 * 1e-9),
            })
        })
        .collect();
    let mut d = doc("rr", samples, json!({}));
    d.params = json!({ "proto": "tcp", "host": "127.0.0.1:5201" });
    d
}

#[test]
fn rr_draws_latency_band_and_throughput_against_log2_size() {
    let svg = svg_for(&rr_doc()).unwrap();
    assert_eq!(count(&svg, "panel"), 2);
    // p50 points + throughput points; the mean is drawn as a line without markers.
    assert_eq!(count(&svg, "point"), 14);
    assert_eq!(count(&svg, "band"), 1);
    assert_eq!(count(&svg, "line"), 3);
    let xt = texts(&svg, "tick-label");
    assert!(
        xt.iter().any(|t| t == "1K") && xt.iter().any(|t| t == "4K"),
        "{xt:?}"
    );
    let labels = texts(&svg, "axis-label");
    assert!(labels.iter().any(|l| l == "latency (µs)"), "{labels:?}");
    assert!(
        labels.iter().any(|l| l == "message size (bytes)"),
        "{labels:?}"
    );
    let legend = texts(&svg, "legend-entry");
    assert_eq!(legend, ["p50", "min–p99", "mean", "throughput"]);
    assert!(texts(&svg, "subtitle")[0].contains("TCP"));
}

#[test]
fn rr_splits_series_by_protocol() {
    let mut samples = Vec::new();
    for proto in ["tcp", "udp"] {
        for size in [64, 256, 1024] {
            samples.push(json!({ "proto": proto, "size_bytes": size, "p50_ns": 20_000 + size }));
        }
    }
    let svg = svg_for(&doc("rr", samples, json!({}))).unwrap();
    assert_eq!(count(&svg, "panel"), 1);
    assert_eq!(count(&svg, "series"), 2);
    assert_eq!(texts(&svg, "legend-entry"), ["tcp p50", "udp p50"]);
}

#[test]
fn tput_draws_each_stream_and_the_total_over_time() {
    let mut samples = Vec::new();
    for i in 0..5 {
        let (a, b) = (i as f64, i as f64 + 1.0);
        samples.push(json!({ "start_s": a, "end_s": b, "stream": 0, "bits_per_second": 4.0e9 }));
        samples.push(json!({ "start_s": a, "end_s": b, "stream": 1, "bits_per_second": 5.0e9 }));
        samples
            .push(json!({ "start_s": a, "end_s": b, "stream": "total", "bits_per_second": 9.0e9 }));
    }
    let svg = svg_for(&doc("tput", samples, json!({ "goodput_bps": 9.0e9 }))).unwrap();
    assert_eq!(count(&svg, "series"), 3);
    assert_eq!(count(&svg, "point"), 15);
    assert_eq!(
        texts(&svg, "legend-entry"),
        ["total", "stream 0", "stream 1"]
    );
    assert!(texts(&svg, "subtitle")[0].contains("goodput 9 Gbit/s"));
    assert!(
        texts(&svg, "axis-label")
            .iter()
            .any(|l| l == "throughput (Gbit/s)")
    );
}

#[test]
fn tput_nested_streams_without_total_get_a_summed_total() {
    let samples = (0..4)
        .map(|i| {
            json!({ "start_s": i, "end_s": i + 1,
                    "streams": [ { "id": "a", "bps": 1.0e6 }, { "id": "b", "bps": 3.0e6 } ] })
        })
        .collect();
    let fig = figure_for(&doc("tput", samples, json!({}))).unwrap();
    let Body::Lines(series) = &fig.panels[0].body else {
        panic!("lines expected")
    };
    let total = series.iter().find(|s| s.name == "total").expect("total");
    assert!(total.points.iter().all(|p| (p.1 - 4.0e6).abs() < 1e-6));
    assert_eq!(total.points.len(), 4);
    assert_eq!(series.len(), 3);
}

#[test]
fn single_stream_tput_is_drawn_once() {
    let samples = (0..3)
        .map(|i| json!({ "start_s": i, "end_s": i + 1, "stream": 0, "bits_per_second": 1e9 }))
        .chain((0..3).map(|i| json!({ "start_s": i, "end_s": i + 1, "bits_per_second": 1e9 })))
        .collect();
    let svg = svg_for(&doc("tput", samples, json!({}))).unwrap();
    assert_eq!(count(&svg, "series"), 1);
}

#[test]
fn pattern_draws_one_bar_per_session_and_the_line_rate() {
    let samples = vec![
        json!({ "label": "A→C", "throughput_bps": 47.9e6 }),
        json!({ "label": "B→D", "throughput_bps": 49.7e6 }),
        json!({ "label": "E→F", "p50_ns": 120_000, "p99_ns": 400_000, "role": "probe" }),
    ];
    let summary =
        json!({ "aggregate_bps": 97.6e6, "line_rate_bps": 100e6, "line_efficiency": 0.976 });
    let svg = svg_for(&doc("pattern", samples, summary)).unwrap();
    assert_eq!(count(&svg, "panel"), 2);
    // Two throughput bars, then p50 and p99 of the one latency session.
    assert_eq!(count(&svg, "bar"), 4);
    assert_eq!(count(&svg, "reference"), 1);
    let cats = texts(&svg, "category-label");
    assert_eq!(cats, ["A→C", "B→D", "E→F (probe)"]);
    assert!(cats.contains(&"E→F (probe)".to_string()), "{cats:?}");
    let sub = &texts(&svg, "subtitle")[0];
    assert!(sub.contains("line efficiency 97.6%"), "{sub}");
}

#[test]
fn unknown_kinds_get_the_generic_line_plot() {
    let samples = (1..=9)
        .map(|m| json!({ "inputs": m, "efficiency": 1.0 / m as f64, "label": "x" }))
        .collect();
    let svg = svg_for(&doc("sim.hol", samples, json!({}))).unwrap();
    assert_eq!(count(&svg, "panel"), 1);
    assert_eq!(count(&svg, "point"), 9);
    let labels = texts(&svg, "axis-label");
    assert!(labels.contains(&"efficiency (%)".to_string()), "{labels:?}");
    assert!(labels.contains(&"inputs".to_string()), "{labels:?}");
}

#[test]
fn known_kind_without_its_fields_falls_back_to_generic() {
    let samples = (0..3)
        .map(|i| json!({ "t_s": i, "queue_frames": i * 10 }))
        .collect();
    let fig = figure_for(&doc("rr", samples, json!({}))).unwrap();
    assert_eq!(fig.panels.len(), 1);
    assert_eq!(fig.panels[0].y.label, "queue_frames");
}

#[test]
fn nothing_plottable_is_a_clear_error() {
    let e = svg_for(&doc("tput", vec![], json!({ "goodput_bps": 1e9 }))).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("`tput`") && msg.contains("--interval"),
        "{msg}"
    );
    let e = svg_for(&doc("x", vec![json!({ "a": "b" }), json!(3)], json!({}))).unwrap_err();
    assert!(e.to_string().contains("no numeric field"), "{e}");
    let e = figure_from_json("{\"kind\": 3}").unwrap_err();
    assert!(
        e.to_string().starts_with("not a weft result document"),
        "{e}"
    );
}

#[test]
fn hostile_text_and_values_stay_well_formed() {
    let samples = vec![
        json!({ "label": "<script>&\"'\u{1}", "throughput_bps": 1e308 }),
        json!({ "label": "b", "throughput_bps": -5.0 }),
        json!({ "label": "c", "throughput_bps": 0 }),
    ];
    let mut d = doc("pattern", samples, json!({}));
    d.kind = "pattern".into();
    let svg = svg_for(&d).unwrap();
    assert_eq!(count(&svg, "bar"), 3);
    assert!(texts(&svg, "category-label")[0].starts_with("<script>&"));
    // Sizes that cannot sit on a log axis are skipped, not drawn at -inf.
    let rr = doc(
        "rr",
        vec![
            json!({ "size_bytes": 0, "p50_ns": 1 }),
            json!({ "size_bytes": 8, "p50_ns": 2 }),
        ],
        json!({}),
    );
    assert_eq!(count(&svg_for(&rr).unwrap(), "point"), 1);
}

// With the `png` feature only (on in `cargo test --workspace`, which builds the `weft` binary
// that turns it on; alone: `cargo test -p weft-report --features png`).
#[cfg(feature = "png")]
#[test]
fn png_has_signature_and_the_svg_size() {
    let svg = svg_for(&rr_doc()).unwrap();
    let tree = roxmltree::Document::parse(&svg).unwrap();
    let root = tree.root_element();
    let w: f64 = root.attribute("width").unwrap().parse().unwrap();
    let h: f64 = root.attribute("height").unwrap().parse().unwrap();
    let png = match render_png(&svg, 1.0) {
        Ok(p) => p,
        Err(PlotError::NoFonts) => {
            weft_testutil::skip("no fonts installed (apt-get install fonts-dejavu-core)");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png[12..16], b"IHDR");
    let pw = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let ph = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((pw as f64, ph as f64), (w.round(), h.round()));
    let png2 = render_png(&svg, 2.0).unwrap();
    let pw2 = u32::from_be_bytes(png2[16..20].try_into().unwrap());
    assert_eq!(pw2, 2 * pw);
    assert!(render_png("<svg", 1.0).is_err());
    assert!(render_png(&svg, 0.0).is_err());
}

#[test]
fn composite_documents_stack_the_panels_of_their_parts() {
    let mut tput = doc(
        "tput",
        (0..4)
            .map(|i| json!({ "start_s": i, "end_s": i + 1, "direction": "up", "bps": 5e9 }))
            .collect(),
        json!({}),
    );
    tput.params = json!({ "transport": "tcp" });
    let demo = doc(
        "demo",
        vec![
            serde_json::to_value(&tput).unwrap(),
            serde_json::to_value(rr_doc()).unwrap(),
            json!({ "not": "a document" }),
        ],
        json!({}),
    );
    let svg = svg_for(&demo).unwrap();
    assert_eq!(count(&svg, "panel"), 3);
    assert_eq!(count(&svg, "point"), 4 + 14);
    let titles = texts(&svg, "panel-title");
    assert_eq!(titles[0], "Throughput over time");
    // One direction only: no direction prefix in the legend.
    assert_eq!(texts(&svg, "legend-entry")[0], "total");
    let empty = doc("demo", vec![json!(1)], json!({}));
    assert!(svg_for(&empty).is_err());
}

#[test]
fn vc_growth_draws_the_mesh_beside_n_squared() {
    let samples = (2..=12)
        .map(|n: u64| {
            json!({ "n": n, "pvcs": n * (n - 1) / 2, "vcs": n * (n - 1),
                    "entries": 2 * n * (n - 1), "max_switch_entries": n * (n - 1) })
        })
        .collect();
    let svg = svg_for(&doc("vc.growth", samples, json!({}))).unwrap();
    assert_eq!(count(&svg, "panel"), 1);
    let legend = texts(&svg, "legend-entry");
    assert!(legend.iter().any(|l| l == "n(n-1)"), "{legend:?}");
    assert!(legend.iter().any(|l| l == "duplex PVCs"), "{legend:?}");
}
