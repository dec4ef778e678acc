//! `weft plot` from the command line: result files in, SVG/PNG files out, clear errors.

use std::path::Path;

mod common;
use common::weft;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write input");
    p
}

const RR: &str = r#"{"weft":"0.1.0","kind":"rr","engine":"real","params":{},"samples":[
 {"size_bytes":1,"p50_ns":18000,"p99_ns":30000},{"size_bytes":64,"p50_ns":19000,"p99_ns":31000},
 {"size_bytes":4096,"p50_ns":25000,"p99_ns":40000}],"summary":{}}"#;

#[test]
fn plots_svg_beside_the_input_by_default_and_png_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "r.json", RR);
    let out = weft()
        .arg("plot")
        .arg(&input)
        .arg("--png")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(dir.path().join("r.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let points = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("point"))
        .count();
    assert_eq!(points, 3);
    let png = std::fs::read(dir.path().join("r.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("r.svg") && stdout.contains("r.png"),
        "{stdout}"
    );
}

#[test]
fn out_path_ending_in_png_writes_only_png() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "r.json", RR);
    let target = dir.path().join("fig.png");
    let out = weft()
        .arg("plot")
        .arg(&input)
        .arg("-o")
        .arg(&target)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(target.exists());
    assert!(!dir.path().join("fig.svg").exists() && !dir.path().join("r.svg").exists());
}

#[test]
fn bad_inputs_fail_with_a_message_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("missing.json", None, "cannot read"),
        (
            "garbage.json",
            Some("not json at all"),
            "is not a weft result document",
        ),
        (
            "nokind.json",
            Some(r#"{"weft":"0.1.0","engine":"real"}"#),
            "missing field `kind`",
        ),
        (
            "empty.json",
            Some(r#"{"weft":"0.1.0","kind":"tput","engine":"real","samples":[]}"#),
            "nothing to plot",
        ),
    ];
    for (name, text, want) in cases {
        let p = match text {
            Some(t) => write(dir.path(), name, t),
            None => dir.path().join(name),
        };
        let out = weft().arg("plot").arg(&p).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
}
