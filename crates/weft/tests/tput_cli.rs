//! `weft serve` and `weft tput` as processes over loopback: JSON output, exit codes, `--once`.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use weft_report::ResultDoc;

mod common;
use common::{Agent, weft};

#[test]
fn json_output_is_one_result_doc_and_nothing_else() {
    let agent = Agent::start(&[]);
    let port = agent.port;
    let out = weft()
        .args([
            "tput",
            &format!("127.0.0.1:{port}"),
            "-t",
            "300ms",
            "-i",
            "100ms",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = ResultDoc::from_json(std::str::from_utf8(&out.stdout).unwrap()).unwrap();
    assert_eq!(doc.kind, "tput");
    assert_eq!(doc.engine, weft_report::Engine::Real);
    assert!(doc.summary["goodput_bps"].as_f64().unwrap() > 0.0);
    assert!(!doc.samples.is_empty());
    assert_eq!(
        doc.summary["up"]["sender_bytes"],
        doc.summary["up"]["receiver_bytes"]
    );
}

#[test]
fn json_stream_prints_one_json_event_per_line_and_o_writes_a_file() {
    let agent = Agent::start(&[]);
    let port = agent.port;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    let out = weft()
        .args([
            "tput",
            &format!("127.0.0.1:{port}"),
            "-u",
            "-b",
            "20M",
            "-t",
            "300ms",
        ])
        .args(["-i", "100ms", "--json-stream", "-o", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.iter().any(|e| e["event"] == "interval"));
    let last = events.last().unwrap();
    assert_eq!(last["event"], "result");
    let doc = ResultDoc::from_json(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc.params["transport"], "udp");
    assert!(doc.summary["up"]["udp"]["expected"].as_u64().unwrap() > 0);
}

#[test]
fn failures_exit_non_zero_and_usage_errors_exit_two() {
    let agent = Agent::start(&["--max-streams", "2"]);
    let port = agent.port;
    let host = format!("127.0.0.1:{port}");
    let out = weft()
        .args(["tput", &host, "-P", "3", "-t", "200ms", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("max-streams"));
    let out = weft()
        .args(["tput", &host, "--rate", "1M"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = weft()
        .args(["serve", "--bind", "nonsense"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn serve_once_exits_after_one_test() {
    let mut agent = Agent::start(&["--once"]);
    let port = agent.port;
    let out = weft()
        .args(["tput", &format!("127.0.0.1:{port}"), "-n", "1M", "-R"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("down") && table.contains("1MiB"), "{table}");
    let t = std::time::Instant::now();
    loop {
        if let Some(status) = agent.child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "serve --once did not exit"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
