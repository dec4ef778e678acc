//! `weft pattern` from the command line against in-process agents on loopback.

use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};

use weft_probe::server::{Server, ServerConfig, ServerHandle};

mod common;
use common::weft;

/// The result document a successful `weft ... --json` run printed on stdout.
fn json_doc(out: &Output) -> weft_report::ResultDoc {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    weft_report::ResultDoc::from_json(&String::from_utf8_lossy(&out.stdout))
        .expect("stdout is one result document")
}

/// An in-process agent, open: the relayed pairs here run between agents on loopback, which
/// protected mode refuses.
fn agent() -> ServerHandle {
    let mut cfg = ServerConfig::loopback();
    cfg.open = true;
    Server::bind(cfg).expect("bind agent").spawn()
}

#[test]
fn one_to_many_json_result_plots_as_bars() {
    let (a, b) = (agent(), agent());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.json");
    let hosts = format!("{},{}", a.local_addr(), b.local_addr());
    let out = weft()
        .args(["pattern", "--one-to-many", &hosts, "--time", "300ms"])
        .args(["--line-rate", "100Gbps", "--json", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    let doc = json_doc(&out);
    assert_eq!(doc.kind, "pattern");
    assert_eq!(doc.samples.len(), 2);
    assert_eq!(doc.params["pattern"], "one-to-many");
    let eff = doc.summary["line_efficiency"].as_f64().unwrap();
    let agg = doc.summary["aggregate_bps"].as_f64().unwrap();
    assert!((eff - agg / 100e9).abs() < 1e-12);
    let saved =
        weft_report::ResultDoc::from_json(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved, doc);

    let plot = weft().arg("plot").arg(&file).output().unwrap();
    assert!(
        plot.status.success(),
        "{}",
        String::from_utf8_lossy(&plot.stderr)
    );
    let svg = std::fs::read_to_string(dir.path().join("p.svg")).unwrap();
    let tree = roxmltree::Document::parse(&svg).unwrap();
    let bars = tree
        .descendants()
        .filter(|n| n.attribute("class") == Some("bar"))
        .count();
    assert_eq!(bars, 2);
    a.shutdown();
    b.shutdown();
}

#[test]
fn latency_under_load_table_names_the_probes() {
    let a = agent();
    let out = weft()
        .args(["pattern", "--pairs", &format!("local:{}", a.local_addr())])
        .args([
            "--load", "tput", "--probe", "rr", "--time", "1s", "--count", "100",
        ])
        .args(["--probe-delay", "100ms"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("pattern pairs: 2 sessions"), "{text}");
    assert!(
        text.contains(" load ") && text.contains(" probe "),
        "{text}"
    );
    a.shutdown();
}

#[test]
fn usage_errors_exit_2_and_failed_sessions_exit_1() {
    let cases: [&[&str]; 4] = [
        &["pattern"],
        &["pattern", "--pairs", "local:local"],
        &["pattern", "--one-to-many", "local"],
        &[
            "pattern",
            "--many-to-one",
            "127.0.0.1:1",
            "--to",
            "127.0.0.1:2",
        ],
    ];
    for args in cases {
        let out = weft().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        // weft's own usage errors (not clap's): one line saying what to change.
        assert!(err.starts_with("weft: error: "), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = weft()
        .args(["pattern", "--one-to-many", &format!("127.0.0.1:{port}")])
        .args(["--time", "200ms", "--connect-timeout", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("failed:"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 of 1 sessions failed"));
}

#[test]
fn pairs_between_agents_are_relayed_and_a_no_relay_agent_refuses() {
    let (a, b, c) = (agent(), agent(), agent());
    let pairs = format!(
        "{}:{},{}->{}",
        a.local_addr(),
        b.local_addr(),
        b.local_addr(),
        c.local_addr()
    );
    let out = weft()
        .args(["pattern", "--pairs", &pairs, "--time", "400ms", "--json"])
        .output()
        .unwrap();
    let doc = json_doc(&out);
    assert_eq!(doc.samples.len(), 2);
    for (s, (from, to)) in doc.samples.iter().zip([(&a, &b), (&b, &c)]) {
        assert_eq!(s["from"], from.local_addr().to_string());
        assert_eq!(s["to"], to.local_addr().to_string());
        let up = &s["detail"]["up"];
        let sent = up["sender_bytes"].as_u64().unwrap();
        assert!(
            sent > 0 && up["receiver_bytes"].as_u64() == Some(sent),
            "{s}"
        );
    }

    // An agent started with --no-relay refuses, says why, and serves on.
    let mut nr = weft()
        .args(["serve", "--bind", "127.0.0.1:0", "--no-relay", "--quiet"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read where it listens, then drain the rest of its stderr: a quiet agent also says, once,
    // that it runs in protected mode, and a closed pipe would kill it as it writes that.
    let mut lines = BufReader::new(nr.stderr.take().unwrap()).lines();
    let line = lines.next().expect("printed nothing").unwrap();
    let addr = line.trim().rsplit(' ').next().unwrap().to_string();
    std::thread::spawn(move || lines.for_each(drop));
    let out = weft()
        .args(["pattern", "--pairs", &format!("{addr}->{}", a.local_addr())])
        .args(["--time", "300ms"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("does not relay") && text.contains("--no-relay"),
        "{text}"
    );
    let out = weft()
        .args(["tput", &addr, "-t", "200ms"])
        .output()
        .unwrap();
    let _ = nr.kill();
    let _ = nr.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for h in [a, b, c] {
        h.shutdown();
    }
}
