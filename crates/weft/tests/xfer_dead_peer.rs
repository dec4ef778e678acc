//! A peer that vanishes mid-transfer is found fast: when `weft recv` is killed (SIGKILL), the
//! sender fails within max(3 x RTO, 2 s) with an error that says so, nothing appears under the
//! final name, and `--resume` completes from the part file; and the same the other way round
//! (the sender killed: the receiver gives up as fast and keeps the part file). And a peer that
//! sends no reset (its host gone, the path down: here everything is blackholed in a
//! router namespace between them, as root) is found within the same bound by both ends.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{Recv, SLOW, WEFT, send_cmd};

/// The bound on loopback, where 3 x RTO is far below the 2 s floor, plus slack for a loaded
/// machine (process exit, the receiver's clean-up).
const BOUND: Duration = Duration::from_millis(2000 + 1500);

/// The 24 MiB file of these tests.
fn data(seed: u64) -> Vec<u8> {
    common::pseudo_random(24 << 20, seed)
}

/// Waits until the receiver's journal lists at least `n` buffers (so data is on disk).
fn wait_for_journal(dir: &Path, n: usize) {
    let j = dir.join(".big.bin.weft-journal");
    let start = Instant::now();
    while !std::fs::read_to_string(&j).is_ok_and(|t| t.lines().count() > n) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no progress in the journal"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Resumes the transfer into `dir` with a fresh receiver and checks the file arrived whole.
fn resume_completes(dir: &Path, file: &Path, want: &[u8]) {
    let recv = Recv::start(dir, &[]);
    common::resume_send(&recv, file);
    assert_eq!(std::fs::read(dir.join("big.bin")).unwrap(), want);
}

/// The sender's run `out`, `took` after the peer vanished: it failed within [`BOUND`] with an
/// error containing every one of `cause`, and `dir` holds the part file, nothing under the
/// final name.
fn assert_sender_failed_fast(
    out: &std::process::Output,
    took: Duration,
    cause: &[&str],
    dir: &Path,
) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the sender must fail: {err}");
    assert!(
        took < BOUND,
        "the sender took {took:?} to notice (bound {BOUND:?}): {err}"
    );
    assert!(
        cause.iter().all(|c| err.contains(c)),
        "the error names the cause ({cause:?}): {err}"
    );
    assert_part_kept(dir);
}

/// Nothing under the final name in `dir`, and the part file kept for `--resume`.
fn assert_part_kept(dir: &Path) {
    assert!(
        !dir.join("big.bin").exists(),
        "nothing under the final name"
    );
    assert!(
        dir.join(".big.bin.weft-part").exists(),
        "the part file is kept"
    );
}

#[test]
fn a_killed_receiver_fails_the_sender_fast_and_clearly_and_resume_completes() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let want = data(21);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &want).unwrap();
    let mut recv = Recv::start(dst.path(), &[]);
    let sender = send_cmd(recv.port, &file, &SLOW)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_journal(dst.path(), 3);
    recv.child.kill().unwrap(); // SIGKILL: no goodbye
    let killed = Instant::now();
    recv.child.wait().unwrap();
    let out = sender.wait_with_output().unwrap();
    assert_sender_failed_fast(
        &out,
        killed.elapsed(),
        &[
            "receiver closed the control connection mid-transfer",
            "--resume",
        ],
        dst.path(),
    );
    resume_completes(dst.path(), &file, &want);
}

#[test]
fn a_killed_sender_ends_the_receivers_session_fast_and_keeps_the_part_file() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let want = data(22);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &want).unwrap();
    // One session: the receiver exits when it gives up on this sender.
    let mut recv = Recv::start(dst.path(), &["--sessions", "1"]);
    let mut sender = send_cmd(recv.port, &file, &SLOW)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_journal(dst.path(), 3);
    sender.kill().unwrap();
    let killed = Instant::now();
    sender.wait().unwrap();
    loop {
        if recv.child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            killed.elapsed() < BOUND,
            "the receiver still waits {BOUND:?} after the sender died: {}",
            recv.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Its log thread may still be catching up with the last lines.
    std::thread::sleep(Duration::from_millis(100));
    let log = recv.log();
    assert!(
        log.contains("the sender went away mid-transfer") && log.contains("--resume"),
        "the receiver says why: {log}"
    );
    assert_part_kept(dst.path());
    resume_completes(dst.path(), &file, &want);
}

/// Three network namespaces in a line, A - R - B, with R routing between A (10.79.N.1) and B
/// (10.79.N.6); removed when dropped. [`Path3::unplug`] makes R drop everything between them
/// silently, as a pulled cable or a dead host does: no reset, no ICMP, both ends still up.
struct Path3 {
    ns: [String; 3],
    net: u32,
}

impl Path3 {
    fn new() -> Path3 {
        let id = std::process::id() % 60_000;
        let ns = ["a", "r", "b"].map(|r| format!("xfdp{r}{id}"));
        let path = Path3 {
            ns: ns.clone(),
            net: id % 250,
        };
        let [a, r, b] = &ns;
        let n = path.net;
        for x in &ns {
            ip(&["netns", "add", x]);
        }
        for (left, right, lv, rv, la, ra) in
            [(a, r, "xfa", "xfra", 1, 2), (r, b, "xfrb", "xfb", 5, 6)]
        {
            let (lv, rv) = (format!("{lv}{id}"), format!("{rv}{id}"));
            ip(&["link", "add", &lv, "type", "veth", "peer", "name", &rv]);
            ip(&["link", "set", &lv, "netns", left]);
            ip(&["link", "set", &rv, "netns", right]);
            ip(&[
                "-n",
                left,
                "addr",
                "add",
                &format!("10.79.{n}.{la}/30"),
                "dev",
                &lv,
            ]);
            ip(&[
                "-n",
                right,
                "addr",
                "add",
                &format!("10.79.{n}.{ra}/30"),
                "dev",
                &rv,
            ]);
            ip(&["-n", left, "link", "set", &lv, "up"]);
            ip(&["-n", right, "link", "set", &rv, "up"]);
        }
        ip(&[
            "-n",
            a,
            "route",
            "add",
            "default",
            "via",
            &format!("10.79.{n}.2"),
        ]);
        ip(&[
            "-n",
            b,
            "route",
            "add",
            "default",
            "via",
            &format!("10.79.{n}.5"),
        ]);
        let st = Command::new("ip")
            .args(["netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
            .status()
            .unwrap();
        assert!(st.success(), "enabling forwarding in {r}");
        path
    }

    /// The address of A (`1`) or B (`6`).
    fn addr(&self, host: u8) -> String {
        format!("10.79.{}.{host}", self.net)
    }

    /// R drops (`add`) or forwards again (`del`) everything between A and B.
    fn unplug(&self, how: &str) {
        for host in [1, 6] {
            ip(&[
                "-n",
                &self.ns[1],
                "route",
                how,
                "blackhole",
                &format!("{}/32", self.addr(host)),
            ]);
        }
    }

    /// `weft ARGS...` inside namespace `ns`.
    fn weft(ns: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, WEFT]).args(args);
        c
    }
}

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().unwrap();
    assert!(st.success(), "ip {args:?}");
}

impl Drop for Path3 {
    fn drop(&mut self) {
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn a_peer_that_vanishes_without_a_reset_is_found_within_the_bound_by_both_ends() {
    if let Some(why) = weft_testutil::missing_root("network namespaces")
        .or_else(|| weft_testutil::missing_tool("ip"))
    {
        weft_testutil::skip(&why);
        return;
    }
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let want = data(23);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &want).unwrap();
    let path = Path3::new();
    let listen = format!("{}:7141", path.addr(6));
    let recv = Path3::weft(
        &path.ns[2],
        &["recv", "--open", "--listen", &listen, "--dir"],
    )
    .arg(dst.path())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut recv = KillOnDrop(Some(recv));
    std::thread::sleep(Duration::from_millis(300));
    let send_args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["send".into(), file.display().to_string(), path.addr(6)];
        v.extend(["--port", "7141", "--no-progress"].map(String::from));
        v.extend(SLOW[..4].iter().map(|s| s.to_string()));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let args = send_args(&["--rate", "60Mbps"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let sender = Path3::weft(&path.ns[0], &args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_journal(dst.path(), 3);
    path.unplug("add");
    let cut = Instant::now();
    let out = sender.wait_with_output().unwrap();
    assert_sender_failed_fast(
        &out,
        cut.elapsed(),
        &[
            "receiver stopped answering mid-transfer",
            "max(3 x RTO, 2 s)",
        ],
        dst.path(),
    );
    // The receiver gave up on that session by itself, within the same bound, and still serves:
    // plug the path back in and resume.
    std::thread::sleep(BOUND.saturating_sub(cut.elapsed()));
    path.unplug("del");
    let args = send_args(&["--resume", "--json"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = Path3::weft(&path.ns[0], &args).output().unwrap();
    assert!(
        out.status.success(),
        "resume: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["samples"][0]["resumed_buffers"].as_u64().unwrap() >= 3,
        "{doc}"
    );
    assert_eq!(std::fs::read(dst.path().join("big.bin")).unwrap(), want);
    let log = recv.finish();
    assert!(
        log.contains("stopped answering") && log.contains("kept for --resume"),
        "the receiver gave up on the silent sender by itself and said why: {log}"
    );
    drop(path);
}

/// A child process killed (and reaped) when dropped, unless [`KillOnDrop::finish`] ran.
struct KillOnDrop(Option<std::process::Child>);

impl KillOnDrop {
    /// Kills the process and returns what it printed on stderr.
    fn finish(&mut self) -> String {
        let Some(mut c) = self.0.take() else {
            return String::new();
        };
        let _ = c.kill();
        let out = c.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.finish();
    }
}
