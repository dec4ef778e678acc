//! The flags every command shares: `-p/--port` and `--bind` (and `recv --listen`), `HOST:.` for
//! `weft send`, `--csv`, `-q`/`-v`, and the generated completions and manual page.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};

use common::{Agent, weft};

/// A port that was free a moment ago (the kernel hands out ephemeral ports in turn, so another
/// process is unlikely to take it before the test binds it).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits for a "listening on ADDR" line on `child`'s stderr and returns ADDR's port; the rest of
/// stderr is drained in the background.
fn listening_port(child: &mut Child) -> u16 {
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port = loop {
        let line = lines.next().expect("printed nothing").unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            let addr = rest.split([',', ' ']).next().unwrap();
            break addr.rsplit(':').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    port
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn port_flag_on_serve_tput_rr_and_pattern() {
    let port = free_port();
    let mut serve = weft()
        .args(["serve", "--bind", "127.0.0.1", "-p", &port.to_string()])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(listening_port(&mut serve), port);
    let _serve = Killed(serve);
    let p = port.to_string();
    let runs: [&[&str]; 4] = [
        &["tput", "127.0.0.1", "-p", &p, "-t", "200ms", "--json"],
        &[
            "rr",
            "127.0.0.1",
            "--port",
            &p,
            "-n",
            "50",
            "--warmup",
            "5",
            "--json",
        ],
        &[
            "pattern",
            "--one-to-many",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "200ms",
            "--json",
        ],
        // HOST:PORT still wins over the default port.
        &[
            "rr",
            &format!("127.0.0.1:{p}"),
            "-n",
            "20",
            "--warmup",
            "1",
            "--json",
        ],
    ];
    for args in runs {
        let out = weft().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["engine"], "real", "{args:?}");
    }
    // Nothing listens on the default port of a `-p` that names another: the port is used.
    let wrong = free_port().to_string();
    let out = weft()
        .args(["tput", "127.0.0.1", "-p", &wrong, "-t", "200ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&wrong),
        "{out:?}"
    );
}

#[test]
fn recv_binds_with_bind_port_or_the_old_listen_and_send_takes_host_dot() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let file = src.path().join("a.bin");
    std::fs::write(&file, b"scp's habit").unwrap();
    let port = free_port();
    let forms: [Vec<String>; 3] = [
        vec!["--bind".into(), format!("127.0.0.1:{port}")],
        vec![
            "--bind".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
        ],
        vec!["--listen".into(), format!("127.0.0.1:{port}")],
    ];
    for (i, form) in forms.iter().enumerate() {
        let mut recv = weft()
            .args(["recv", "--dir"])
            .arg(dir.path())
            .args(form)
            .args(["--sessions", "1", "--force", "--csv"])
            .arg(src.path().join("sessions.csv"))
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        assert_eq!(listening_port(&mut recv), port, "{form:?}");
        let recv = Killed(recv);
        // `HOST:.` (and `HOST:./`) is the receive directory itself.
        let target = if i == 0 {
            "127.0.0.1:."
        } else {
            "127.0.0.1:./"
        };
        let out = weft()
            .arg("send")
            .arg(&file)
            .arg(target)
            .args(["-p", &port.to_string(), "--no-progress"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{form:?}: {out:?}");
        assert_eq!(
            std::fs::read(dir.path().join("a.bin")).unwrap(),
            b"scp's habit"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            ["a.bin"],
            "nothing but the file at the top: {form:?}"
        );
        // After its one session the receiver exits, its CSV of sessions written.
        let mut recv = recv;
        let t0 = std::time::Instant::now();
        while recv.0.try_wait().unwrap().is_none() {
            assert!(
                t0.elapsed().as_secs() < 20,
                "recv did not exit after its session"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let csv = std::fs::read_to_string(src.path().join("sessions.csv")).unwrap();
        let rows = csv_rows(&csv);
        assert_eq!(rows.len(), 2, "{csv}");
        let files = rows[0]
            .iter()
            .position(|c| c == "files_ok")
            .expect("files_ok");
        assert_eq!(rows[1][files], "1", "{csv}");
    }
}

#[test]
fn csv_from_rr_tput_and_calc_has_a_row_per_sample() {
    let agent = Agent::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let rr = dir.path().join("rr.csv");
    let out = weft()
        .args([
            "rr",
            &format!("127.0.0.1:{}", agent.port),
            "--sizes",
            "1,64,1K",
        ])
        .args(["-n", "30", "--warmup", "3", "--csv"])
        .arg(&rr)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&rr).unwrap();
    let mut r = csv_rows(&text);
    let header = r.remove(0);
    assert_eq!(r.len(), 3, "{text}");
    let size = header
        .iter()
        .position(|c| c == "request_bytes")
        .expect("request_bytes");
    let p50 = header
        .iter()
        .position(|c| c == "rtt.p50_ns")
        .expect("rtt.p50_ns");
    assert_eq!(
        r.iter().map(|row| row[size].as_str()).collect::<Vec<_>>(),
        ["1", "64", "1024"]
    );
    assert!(
        r.iter().all(|row| row[p50].parse::<u64>().unwrap() > 0),
        "{text}"
    );

    let tput = dir.path().join("tput.csv");
    let out = weft()
        .args([
            "tput",
            &format!("127.0.0.1:{}", agent.port),
            "-t",
            "600ms",
            "-i",
            "200ms",
        ])
        .arg("--csv")
        .arg(&tput)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let rows = csv_rows(&std::fs::read_to_string(&tput).unwrap());
    assert!(rows.len() >= 3, "{rows:?}");
    assert!(rows[0].iter().any(|c| c == "bps"), "{:?}", rows[0]);

    // A closed-form answer has no samples: its summary is the one row; "-" is stdout.
    let out = weft()
        .args([
            "calc", "mathis", "--rtt", "17ms", "--loss", "1e-4", "--csv", "-", "-o",
        ])
        .arg(dir.path().join("m.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = csv_rows(text.lines().take(2).collect::<Vec<_>>().join("\n").as_str());
    assert_eq!(rows[0], ["c", "loss", "mss", "rate_bps", "rtt_s"], "{text}");
    assert_eq!(&rows[1][1..3], ["0.0001", "1460"], "{text}");
}

fn csv_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn verbose_logs_and_quiet_silences_the_agent() {
    let mut quiet = Agent::start(&["-q"]);
    let mut loud = Agent::start(&[]);
    let target = |a: &Agent| format!("127.0.0.1:{}", a.port);
    for a in [&quiet, &loud] {
        let out = weft()
            .args(["-v", "rr", &target(a), "-n", "10", "--warmup", "1"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("INFO") && err.contains("rr size done"),
            "{err}"
        );
        let out = weft()
            .args(["rr", &target(a), "-n", "10", "--warmup", "1"])
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("INFO"),
            "{out:?}"
        );
    }
    // The agents' own logs: the loud one said something about the tests, the quiet one only
    // where it listens and, at start, that it runs in protected mode (issue 32).
    let (q, l) = (quiet.stop(), loud.stop());
    let q: Vec<&str> = q.lines().collect();
    assert!(
        q.len() <= 1
            && q.iter()
                .all(|l| l.starts_with("weft serve: protected mode: ")),
        "a quiet agent logs nothing after where it listens but its mode: {q:?}"
    );
    assert!(l.lines().count() > 1, "{l}");
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "_weft()"),
        ("zsh", "#compdef weft"),
        ("fish", "complete -c weft"),
    ] {
        let out = weft().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(marker),
            "{shell}: {}",
            &text[..text.len().min(300)]
        );
        for sub in ["serve", "tput", "rr", "emu", "completions"] {
            assert!(text.contains(sub), "{shell} script lacks {sub}");
        }
    }
    let out = weft().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_page_names_every_command_and_man_reads_it() {
    let out = weft().arg("man").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let page = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(page.lines().any(|l| l.starts_with(".TH weft 1")), "{page}");
    let subs = [
        "demo",
        "serve",
        "tput",
        "rr",
        "pattern",
        "plot",
        "calc",
        "sim",
        "run",
        "emu",
        "trace",
        "send",
        "recv",
        "completions",
        "man",
    ];
    for s in subs {
        assert!(
            page.contains(&format!("weft\\-{s}(1)")),
            "no {s} in the page"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = weft()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for s in subs {
        assert!(
            dir.path().join(format!("weft-{s}.1")).exists(),
            "no weft-{s}.1"
        );
    }
    assert!(dir.path().join("weft-emu-run.1").exists());
    if let Some(why) = weft_testutil::missing_tool("man") {
        weft_testutil::skip(&format!("rendering the page with man -l: {why}"));
        return;
    }
    let mut man = std::process::Command::new("man")
        .args(["-l", "-"])
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    man.stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let shown = man.wait_with_output().unwrap();
    assert!(shown.status.success(), "{shown:?}");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("SUBCOMMANDS") && text.contains("weft-rr(1)"),
        "{text}"
    );
}

/// CPUs online here.
fn cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

#[test]
fn rr_places_both_ends_spins_and_says_so() {
    let agent = Agent::start(&[]);
    let last = cpus() - 1;
    let place = format!("0,{last}");
    for udp in [false, true] {
        let mut cmd = weft();
        cmd.args([
            "rr",
            &format!("127.0.0.1:{}", agent.port),
            "--sizes",
            "1,4K",
        ])
        .args([
            "-n",
            "300",
            "--warmup",
            "10",
            "-A",
            &place,
            "--busy-poll",
            "--json",
        ]);
        if udp {
            cmd.arg("-u");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "udp {udp}: {out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["params"]["affinity"]["client_cpu"], 0);
        assert_eq!(doc["params"]["busy_poll"], true);
        for s in doc["samples"].as_array().unwrap() {
            assert_eq!(s["client_cpus"]["seen"], serde_json::json!([0]), "{s}");
            assert_eq!(s["agent_cpus"]["seen"], serde_json::json!([last]), "{s}");
            assert_eq!(s["busy_poll"]["spin"], true, "{s}");
            assert_eq!(s["agent_busy_poll"]["spin"], true, "{s}");
            assert_eq!(s["count"], 300, "{s}");
        }
    }
    // Without placement the CPUs are still reported, and nobody spins.
    let out = weft()
        .args([
            "rr",
            &format!("127.0.0.1:{}", agent.port),
            "-n",
            "100",
            "--json",
        ])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &doc["samples"][0];
    assert!(s["client_cpus"]["samples"].as_u64().unwrap() >= 100, "{s}");
    assert!(s["agent_cpus"]["samples"].as_u64().unwrap() >= 100, "{s}");
    assert!(
        s["busy_poll"].is_null() && s["agent_busy_poll"].is_null(),
        "{s}"
    );
    let table = weft()
        .args([
            "rr",
            &format!("127.0.0.1:{}", agent.port),
            "-n",
            "50",
            "-A",
            &place,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains(&format!("placement: client CPU 0, agent CPU {last}")),
        "{text}"
    );
}

#[test]
fn rr_floor_alone_and_beside_a_run() {
    let out = weft().args(["rr", "--floor", "--json"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kind"], "rr.floor");
    let figures: Vec<&str> = doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["figure"].as_str().unwrap())
        .collect();
    assert_eq!(figures, ["wakeup_rtt", "spin_rtt", "timer_overshoot"]);
    for s in doc["samples"].as_array().unwrap() {
        assert!(s["stats"]["p50_ns"].as_u64().unwrap() > 0, "{s}");
    }
    let agent = Agent::start(&[]);
    let out = weft()
        .args([
            "rr",
            &format!("127.0.0.1:{}", agent.port),
            "-n",
            "100",
            "--floor",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let share = doc["summary"]["host_share_of_smallest_p50"]
        .as_f64()
        .unwrap();
    assert!(share > 0.0 && share <= 1.0, "{share}");
    assert!(
        doc["summary"]["host_floor"]["wakeup_rtt"]["count"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn rr_placement_usage_errors_exit_2() {
    let cases: [&[&str]; 5] = [
        &["rr", "127.0.0.1", "--busy-poll", "--cold"],
        &["rr", "127.0.0.1", "--busy-poll", "--burst", "4"],
        &["rr", "127.0.0.1", "--echo", "-A", "0,1"],
        &["rr", "127.0.0.1", "-A", "x"],
        &["rr", "127.0.0.1", "-A", "100000"],
    ];
    let agent = Agent::start(&[]);
    let port = agent.port.to_string();
    for args in cases {
        let out = weft().args(args).args(["-p", &port]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
    let out = weft().arg("rr").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "no HOST and no --floor: {out:?}"
    );
}

#[test]
fn progress_bars_only_on_a_terminal_and_not_with_quiet() {
    let bin = env!("CARGO_BIN_EXE_weft");
    let sim = "sim hol --ports 16 --slots 2e6";
    // Piped stderr: no bar at all.
    let out = weft().args(sim.split(' ')).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "a bar on a pipe");
    if let Some(why) = weft_testutil::missing_tool("script") {
        weft_testutil::skip(&format!(
            "a terminal for the bar (script, util-linux): {why}"
        ));
        return;
    }
    // A terminal (script's pseudo-terminal): the bar is drawn, and -q takes it away.
    let on_tty = |args: &str| {
        let out = std::process::Command::new("script")
            .args(["-qec", &format!("{bin} {args}"), "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(on_tty(sim).contains("hol ["), "no bar on a terminal");
    assert!(
        !on_tty(&format!("-q {sim}")).contains("hol ["),
        "a bar despite -q"
    );
}
