//! Inputs and outputs a user can trust (issue 31): a duration without a unit and a negative value
//! are refused with the flag's range, a client that reached something other than a weft agent
//! says so, `weft recv` checks its directory at start, a capture smoothed over more than its
//! length is warned about, `weft run` names `--strict` when it exits 0 past a miss, tables print
//! no JSON, and message-passing workloads are named by what they run.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Output;
use std::time::Duration;

use common::weft;

fn run(args: &[&str]) -> Output {
    weft().args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scenario(name: &str) -> String {
    format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_duration_without_a_unit_is_refused() {
    let o = run(&["calc", "window", "--rtt", "17"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    let e = text(&o.stderr);
    assert!(e.contains("17 has no unit") && e.contains("17ms"), "{e}");
    let o = run(&["calc", "window", "--rtt", "17ms"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn a_negative_time_gets_the_range() {
    let o = run(&["tput", "127.0.0.1", "-t", "-5"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("-5 is out of range") && e.contains("between 1ms and"),
        "{e}"
    );
}

/// A listener that, for each connection, writes `greeting` (nothing: stays silent) and holds
/// the connection open for a while.
fn impostor(greeting: &'static [u8]) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let _ = c.write_all(greeting);
            std::thread::spawn(move || {
                let mut buf = [0u8; 512];
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    port
}

#[test]
fn tput_to_something_that_is_not_an_agent_says_so_and_names_the_port() {
    let ssh = impostor(b"SSH-2.0-OpenSSH_9.6\r\n");
    let o = run(&["tput", &format!("127.0.0.1:{ssh}"), "-t", "1s"]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(
        e.contains(&format!("127.0.0.1:{ssh} is not a weft agent"))
            && e.contains("SSH-")
            && e.contains(&format!("listening on port {ssh}")),
        "{e}"
    );
    let quiet = impostor(b"");
    let o = run(&[
        "tput",
        &format!("127.0.0.1:{quiet}"),
        "-t",
        "1s",
        "--connect-timeout",
        "1s",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(
        e.contains("did not answer as a weft agent") && e.contains(&format!("port {quiet}")),
        "{e}"
    );
}

/// A listener that sends every connection's bytes back (an RFC 862 echo service).
fn echo_service() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 || c.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

/// A listener that reads what a connection sends first, answers `reply` (shorter than a weft
/// header) and closes.
fn answers_and_closes(reply: &'static [u8]) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = c.read(&mut buf);
            let _ = c.write_all(reply);
        }
    });
    port
}

#[test]
fn every_client_to_an_echo_service_says_it_is_not_an_agent() {
    let port = echo_service();
    let at = format!("127.0.0.1:{port}");
    let key = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(key.path(), [7u8; 32]).unwrap();
    let key = key.path().to_str().unwrap();
    let two = format!("{at},{at}");
    let runs: [(&str, Vec<&str>); 4] = [
        ("Request", vec!["tput", &at, "-t", "1s"]),
        (
            "AuthHello",
            vec!["tput", &at, "-t", "1s", "--key-file", key],
        ),
        ("Request", vec!["rr", &at, "-n", "10", "--warmup", "0"]),
        ("Request", vec!["mp", "--hosts", &two, "--sizes", "8"]),
    ];
    for (sent, args) in &runs {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = text(&o.stderr);
        assert!(
            e.contains(&format!(
                "{at} is not a weft agent: it sent this client's own {sent} message back"
            )) && e.contains(&format!("listening on port {port}")),
            "{args:?}: {e}"
        );
    }
}

#[test]
fn a_peer_that_answers_a_few_bytes_and_closes_is_not_an_agent() {
    let port = answers_and_closes(b"hello\n");
    let at = format!("127.0.0.1:{port}");
    for args in [vec!["tput", &at, "-t", "1s"], vec!["rr", &at, "-n", "10"]] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = text(&o.stderr);
        assert!(
            e.contains(&format!(
                "{at} is not a weft agent: it answered 6 bytes that are no weft message"
            )) && e.contains(&format!("listening on port {port}")),
            "{args:?}: {e}"
        );
    }
}

#[test]
fn recv_refuses_a_directory_it_cannot_write_at_start() {
    // Nobody, root included, creates files in /proc.
    let mut child = weft()
        .args(["recv", "--dir", "/proc", "--bind", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("weft recv --dir /proc kept running");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut e = String::new();
    child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
    assert_eq!(status.code(), Some(1), "{e}");
    assert!(
        e.contains(
            "cannot write into the receiving directory /proc: its file system does not allow new files there"
        ),
        "{e}"
    );
    assert!(!e.contains("listening on"), "{e}");
}

#[test]
fn util_warns_when_the_smoothing_window_outlasts_the_capture() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap.pcap");
    let cap = cap.to_str().unwrap();
    let o = run(&["trace", "synth", cap, "--size", "20MB"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let util = |smooth: &str| {
        run(&[
            "trace",
            "util",
            cap,
            "--tech",
            "ethernet10",
            "--bin",
            "10s",
            "--smooth",
            smooth,
        ])
    };
    let o = util("5m");
    assert!(o.status.success());
    let e = text(&o.stderr);
    assert!(
        e.contains("smoothing window (300s) is longer than the capture (40.0s)"),
        "{e}"
    );
    let o = util("20s");
    assert!(!text(&o.stderr).contains("warning"), "{}", text(&o.stderr));
}

#[test]
fn run_names_strict_when_it_exits_0_past_a_miss() {
    // Sandia's 1500-byte echo rows miss (+18% and more, in the catalogue's why).
    let o = run(&["run", &scenario("sandia-echo.toml"), "--engine", "model"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("%!"), "{}", text(&o.stdout));
    let e = text(&o.stderr);
    assert!(
        e.contains("missed") && e.contains("--strict exits 1"),
        "{e}"
    );
    let o = run(&[
        "run",
        &scenario("sandia-echo.toml"),
        "--engine",
        "model",
        "--strict",
    ]);
    assert_eq!(o.status.code(), Some(1));
    // Nothing missed, nothing said.
    let o = run(&["run", &scenario("hol-finite-n.toml"), "--engine", "model"]);
    assert!(o.status.success());
    assert!(!text(&o.stderr).contains("--strict"), "{}", text(&o.stderr));
}

#[test]
fn run_says_where_its_captures_went_and_how_big() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let o = run(&[
        "run",
        &scenario("riacs-oc3c-to-taxi.toml"),
        "--engine",
        "sim",
        "--capture",
        cap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(
        e.contains("capture(s)") && e.contains(&format!("under {}", cap.display())),
        "{e}"
    );
}

#[test]
fn sim_tables_print_no_json() {
    let o = run(&["sim", "many-to-one"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(!t.contains('{') && !t.contains('['), "{t}");
    assert!(
        t.contains("delay.p99_ns") && t.contains("per_sender:"),
        "{t}"
    );
    // One row per sender under the per_sender header.
    let rows: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.starts_with("per_sender"))
        .skip(2)
        .collect();
    assert_eq!(rows.len(), 2, "{t}");
}

#[test]
fn npb_results_are_named_by_benchmark() {
    let o = run(&["run", &scenario("nasa-lace-npb.toml"), "--engine", "model"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    for b in ["w0 (BT class S)", "w1 (LU class S)", "w2 (SP class S)"] {
        assert!(t.contains(&format!("mean_us of {b}")), "{b}: {t}");
    }
    assert!(!t.contains("workload 0"), "{t}");
}
