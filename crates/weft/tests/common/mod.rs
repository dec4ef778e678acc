//! Helpers shared by the CLI tests: the `weft` binary, and a `weft serve` agent process.

#![allow(dead_code)] // each test file uses its own subset
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// The path of the `weft` binary under test.
pub const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// The `weft` binary under test.
pub fn weft() -> Command {
    Command::new(WEFT)
}

/// `n` pseudo-random bytes (xorshift from `seed`): files for the transfer tests, no two
/// buffers alike.
pub fn pseudo_random(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Runs `cmd` to the end and returns its output, failing the test with its stderr if it did
/// not succeed.
pub fn succeed(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `weft run FILE --engine ENGINES --json -q [EXTRA]` from the repository's root: one result
/// document per engine, in the order asked.
pub fn run_json(file: &Path, engines: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let out = succeed(
        weft()
            .args([
                "run",
                file.to_str().unwrap(),
                "--engine",
                engines,
                "--json",
                "-q",
            ])
            .args(extra)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")),
    );
    match serde_json::from_slice(&out.stdout).unwrap() {
        serde_json::Value::Array(docs) => docs,
        doc => vec![doc],
    }
}

/// A `weft serve --bind 127.0.0.1:0 EXTRA...` process and the port it took; killed when
/// dropped.
pub struct Agent {
    /// The process.
    pub child: Child,
    /// Its control port on 127.0.0.1.
    pub port: u16,
    /// Its stderr after the "listening on" line, collected until it exits.
    log: Option<std::thread::JoinHandle<String>>,
}

impl Agent {
    /// Starts an agent with `extra` arguments and waits for it to say where it listens.
    pub fn start(extra: &[&str]) -> Agent {
        Agent::start_with(extra, &[])
    }

    /// As [`Agent::start`], with environment variables set for the agent.
    pub fn start_with(extra: &[&str], env: &[(&str, &str)]) -> Agent {
        let mut child = weft()
            .envs(env.iter().copied())
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(extra)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let port = loop {
            let line = lines.next().expect("serve printed nothing").unwrap();
            if let Some(addr) = line.split("listening on ").nth(1) {
                break addr.rsplit(':').next().unwrap().parse().unwrap();
            }
        };
        // Keep draining stderr so the agent never blocks on a full pipe.
        let log = std::thread::spawn(move || {
            lines
                .map_while(Result::ok)
                .fold(String::new(), |acc, l| acc + &l + "\n")
        });
        Agent {
            child,
            port,
            log: Some(log),
        }
    }

    /// Stops the agent and returns what it wrote on stderr after where it listens.
    pub fn stop(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `weft send FILE 127.0.0.1 --port PORT --no-progress EXTRA...`: a sender toward a
/// [`Recv`] on loopback.
pub fn send_cmd(port: u16, file: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(WEFT);
    c.arg("send")
        .arg(file)
        .arg("127.0.0.1")
        .args(["--port", &port.to_string(), "--no-progress"])
        .args(extra);
    c
}

/// `weft send` options that pace a 24 MiB file at 60 Mbit/s, over three seconds, so that a kill
/// or a stop lands mid-transfer; the first four (buffer and packet sizes) without the pacing.
pub const SLOW: [&str; 6] = [
    "--buffer-size",
    "1MiB",
    "--packet-size",
    "8000",
    "--rate",
    "60Mbps",
];

/// Runs `weft send FILE --resume --json` toward `recv`, unpaced, and asserts that it succeeds
/// having taken at least three buffers from the part file; returns its result document.
pub fn resume_send(recv: &Recv, file: &Path) -> serde_json::Value {
    let out = send_cmd(
        recv.port,
        file,
        &[&SLOW[..4], &["--resume", "--json"]].concat(),
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "resume: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        recv.log()
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["samples"][0]["resumed_buffers"].as_u64().unwrap() >= 3,
        "{doc}"
    );
    doc
}

/// A running `weft recv --listen 127.0.0.1:0 --dir DIR EXTRA...`, its port, and what it has
/// printed on stderr so far; killed when dropped.
pub struct Recv {
    /// The process.
    pub child: Child,
    /// Its control port on 127.0.0.1.
    pub port: u16,
    log: Arc<Mutex<String>>,
}

impl Recv {
    /// Starts a receiver into `dir` and waits for it to say where it listens.
    pub fn start(dir: &Path, extra: &[&str]) -> Recv {
        let mut child = Command::new(WEFT)
            .args(["recv", "--listen", "127.0.0.1:0", "--dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn weft recv");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        // Warnings (a key file others can read) may come before the listening line.
        let first = lines
            .by_ref()
            .map_while(Result::ok)
            .find(|l| l.contains("listening on"))
            .expect("recv never said where it listens");
        let port: u16 = first
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {first:?}"));
        let log = Arc::new(Mutex::new(String::new()));
        let l2 = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut g = l2.lock().unwrap();
                g.push_str(&line);
                g.push('\n');
            }
        });
        Recv { child, port, log }
    }

    /// Everything it has printed on stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Recv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
