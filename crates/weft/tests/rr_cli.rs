//! `weft rr` from the command line: table and JSON output, exit codes, against an in-process
//! agent and an echo server built here, on loopback.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};

use weft_probe::server::{Server, ServerConfig};

mod common;
use common::weft;

fn tcp_echo() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                while let Ok(n @ 1..) = s.read(&mut buf) {
                    if s.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn json_mode_prints_only_the_document() {
    let a = tcp_echo();
    let out = weft()
        .args([
            "rr",
            &a.to_string(),
            "--echo",
            "--sizes",
            "1,1K",
            "-n",
            "50",
            "--warmup",
            "5",
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kind"], "rr");
    assert_eq!(doc["engine"], "real");
    let samples = doc["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[1]["request_bytes"], 1024);
    assert_eq!(samples[0]["count"], 50);
    assert!(samples[0]["rtt"]["p99_ns"].as_u64().unwrap() > 0);
}

#[test]
fn table_mode_and_output_file_against_an_agent() {
    let h = Server::bind(ServerConfig::loopback()).unwrap().spawn();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rr.json");
    let out = weft()
        .args([
            "rr",
            &h.local_addr().to_string(),
            "--udp",
            "--sweep",
            "64..256",
            "-n",
            "40",
        ])
        .args(["--timeout", "500ms", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("rr udp warm agent"), "{table}");
    assert_eq!(
        table
            .lines()
            .filter(|l| l.trim_start().starts_with("128 "))
            .count(),
        1
    );
    let doc = weft_report::ResultDoc::from_json(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc.samples.len(), 3);
    assert_eq!(doc.params["proto"], "udp");
    h.shutdown();
    h.join().unwrap();
}

#[test]
fn usage_errors_exit_2_and_failures_exit_1() {
    let out = weft()
        .args(["rr", "127.0.0.1", "--echo", "--udp", "--sweep", "1..65536"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("UDP") && err.contains("65507"), "{err}");

    let out = weft()
        .args(["rr", "127.0.0.1", "--converge", "200%"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    // Nothing listens on a port that was free a moment ago.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = weft()
        .args([
            "rr",
            &format!("127.0.0.1:{port}"),
            "--echo",
            "-n",
            "5",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["aborted"], 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("aborted"));
}

#[test]
fn rr_against_a_weft_serve_process_in_every_mode() {
    let agent = common::Agent::start(&[]);
    let host = format!("127.0.0.1:{}", agent.port);
    let modes: [&[&str]; 4] = [
        &["--sweep", "1..4096"],
        &["--cold", "--size", "64"],
        &["--udp", "--sizes", "64,1024", "--burst", "4"],
        &["--udp", "--cold", "--size", "32", "--response-size", "1K"],
    ];
    for extra in modes {
        let out = weft()
            .args(["rr", &host, "-n", "30", "--warmup", "3", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for s in doc["samples"].as_array().unwrap() {
            assert_eq!(s["count"], 30, "{extra:?}");
            assert_eq!(s["agent_requests"], 33, "{extra:?}");
        }
    }
}
