//! `weft demo` end to end: an in-process agent, a short measurement, JSON and SVG on disk.

use std::process::Command;

#[test]
fn demo_writes_a_result_and_its_figure() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args([
            "demo",
            "--time",
            "500ms",
            "--max-size",
            "4KiB",
            "--count",
            "200",
            "--out",
        ])
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("demo.json") && stdout.contains("demo.svg"),
        "{stdout}"
    );
    // The report of the measurement beside the studies' reproductions on model and sim.
    assert!(stdout.contains("report.html"), "{stdout}");
    let page = std::fs::read_to_string(dir.path().join("o/report.html")).unwrap();
    assert!(page.contains("Summary per study") && page.contains("Measurements"));

    let json = std::fs::read_to_string(dir.path().join("o/demo.json")).unwrap();
    let doc = weft_report::ResultDoc::from_json(&json).unwrap();
    assert_eq!(doc.kind, "demo");
    assert!(doc.summary["goodput_bps"].as_f64().unwrap() > 0.0);
    let parts: Vec<weft_report::ResultDoc> = doc
        .samples
        .iter()
        .map(|s| serde_json::from_value(s.clone()).unwrap())
        .collect();
    assert_eq!(parts[0].kind, "tput");
    assert_eq!(parts[1].kind, "rr");
    assert_eq!(parts[1].samples.len(), 13); // 1 B .. 4 KiB

    let svg = std::fs::read_to_string(dir.path().join("o/demo.svg")).unwrap();
    let tree = roxmltree::Document::parse(&svg).unwrap();
    let class_count = |c: &str| {
        tree.descendants()
            .filter(|n| n.attribute("class") == Some(c))
            .count()
    };
    // Throughput over time, latency vs size, throughput vs size.
    assert_eq!(class_count("panel"), 3);
    assert!(class_count("point") >= 13 * 2);
}
