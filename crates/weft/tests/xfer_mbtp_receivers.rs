//! MBTP as the RIACS study ran it, with receivers that are separate `weft recv` processes: on
//! five emulated hosts (root: the emulator), each receiver keeps its stripe of the file with a
//! manifest and `weft join` puts the five back together; on loopback, a receiver killed
//! mid-transfer fails the sender within the dead-peer bound, naming that receiver, and no
//! receiver leaves a stripe under its final name.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{Recv, WEFT, pseudo_random};
use weft_testutil::{missing_root, skip_if};

/// One sending host `a` and five receiving hosts `r1`..`r5` on one switch, gigabit links
/// (hosts get 10.77.0.1, .2, ...).
fn five_receivers() -> String {
    let mut s = String::from("name = \"mbtp-five-receivers\"\n");
    let hosts = ["a", "r1", "r2", "r3", "r4", "r5"];
    for h in hosts {
        s += &format!("[[host]]\nname = \"{h}\"\n");
    }
    s += "[[switch]]\nname = \"sw\"\nfabric = \"output-queued\"\n";
    for h in hosts {
        s += &format!("[[link]]\nends = [\"{h}\", \"sw\"]\ntech = \"gige\"\n");
    }
    s
}

/// `expect` with the bytes of `gaps` (offset, length) zero-filled, as MBTP leaves lost data.
fn with_gaps(expect: &[u8], gaps: &[serde_json::Value]) -> Vec<u8> {
    let mut v = expect.to_vec();
    for g in gaps {
        let (off, len) = (g["offset"].as_u64().unwrap(), g["len"].as_u64().unwrap());
        v[off as usize..(off + len) as usize].fill(0);
    }
    v
}

#[test]
fn mbtp_runs_with_five_receiver_processes_on_five_emulated_hosts() {
    skip_if!(missing_root("the emulator (network namespaces)"));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("s.toml"), five_receivers()).unwrap();
    // 24 buffers of 256 KiB: about five per receiver, as the study's 25 MB in 1 MB buffers.
    let want = pseudo_random(6 << 20, 31);
    std::fs::write(d.join("f.bin"), &want).unwrap();
    let mut exec: Vec<String> = (1..=5)
        .map(|k| {
            format!(
                "r{k}: {WEFT} recv --open --dir {dir}/r{k} --listen 10.77.0.{ip}:7140 --sessions 1 --json > {dir}/r{k}.json 2> {dir}/r{k}.err &",
                dir = d.display(),
                ip = k + 1
            )
        })
        .collect();
    exec.push(format!(
        "a: {WEFT} send --mode mbtp {dir}/f.bin --receiver 10.77.0.2,10.77.0.3,10.77.0.4,10.77.0.5,10.77.0.6 \
         --buffer-size 256KiB --packet-size 8000 --rate 200Mbps --no-progress --json > {dir}/send.json",
        dir = d.display()
    ));
    let mut cmd = Command::new(WEFT);
    cmd.args([
        "emu",
        "run",
        &d.join("s.toml").display().to_string(),
        "--json",
    ]);
    for e in &exec {
        cmd.args(["--exec", e]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(d.join("send.json")).unwrap_or_default()
    );
    let sent: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("send.json")).unwrap()).unwrap();
    let s = &sent["summary"];
    assert_eq!(s["files_ok"], 1, "{sent}");
    let receivers = s["receivers"].as_array().unwrap();
    assert_eq!(receivers.len(), 5, "{sent}");
    let mut buffers = 0;
    for (k, r) in (1..=5).zip(receivers) {
        assert_eq!(r["addr"], format!("10.77.0.{}:7140", k + 1));
        assert_eq!(r["stripe"]["part"], k);
        assert_eq!(r["stripe"]["parts"], 5);
        assert_eq!(r["stripe"]["transfer"], receivers[0]["stripe"]["transfer"]);
        let n = r["buffers"].as_u64().unwrap();
        assert!(n >= 1, "every receiver takes buffers in turn: {sent}");
        buffers += n;
        // Each host holds its stripe and its manifest, and nothing under the file's name.
        let mut names: Vec<String> = std::fs::read_dir(d.join(format!("r{k}")))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                format!("f.bin.mbtp-{k}-of-5"),
                format!("f.bin.mbtp-{k}-of-5.manifest")
            ]
        );
        let rx: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join(format!("r{k}.json"))).unwrap()).unwrap();
        assert!(rx["summary"]["error"].is_null(), "{rx}");
        assert!(rx["samples"][0]["ok"].as_bool().unwrap(), "{rx}");
    }
    assert_eq!(buffers, 24);
    // Gathered (here: named where they are), the five stripes make the file again.
    let joined = d.join("joined.bin");
    let mut join = Command::new(WEFT);
    join.args(["join", "--json", "-o", &joined.display().to_string()]);
    for k in 1..=5 {
        join.arg(d.join(format!("r{k}/f.bin.mbtp-{k}-of-5.manifest")));
    }
    let out = join.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["parts"], 5);
    assert_eq!(doc["summary"]["buffers"], 24);
    let gaps = doc["samples"].as_array().unwrap();
    assert_eq!(
        gaps.len() as u64,
        doc["summary"]["gaps"].as_u64().unwrap(),
        "{doc}"
    );
    assert!(
        std::fs::read(&joined).unwrap() == with_gaps(&want, gaps),
        "the joined file is the sent one, lost ranges zero-filled ({} gaps)",
        gaps.len()
    );
}

/// The bound on loopback, where 3 x RTO is far below the 2 s floor, plus slack for a loaded
/// machine (as in xfer_dead_peer.rs).
const BOUND: Duration = Duration::from_millis(2000 + 1500);

#[test]
fn a_killed_receiver_fails_a_striped_send_fast_and_the_others_keep_no_stripe() {
    let src = tempfile::tempdir().unwrap();
    let file = src.path().join("big.bin");
    std::fs::write(&file, pseudo_random(24 << 20, 41)).unwrap();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut recvs: Vec<Recv> = dirs.iter().map(|d| Recv::start(d.path(), &[])).collect();
    let list: Vec<String> = recvs
        .iter()
        .map(|r| format!("127.0.0.1:{}", r.port))
        .collect();
    // 24 MiB at 60 Mbit/s: over three seconds, so the kill lands mid-transfer.
    let sender = Command::new(WEFT)
        .arg("send")
        .arg(&file)
        .args(["--mode", "mbtp", "--receiver", &list.join(",")])
        .args(["--buffer-size", "1MiB", "--packet-size", "8000"])
        .args(["--rate", "60Mbps", "--no-progress"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let part = |d: &Path, k: usize| d.join(format!(".big.bin.mbtp-{k}-of-3.weft-part"));
    let start = Instant::now();
    while !(1..=3)
        .all(|k| std::fs::metadata(part(dirs[k - 1].path(), k)).is_ok_and(|m| m.len() >= 1 << 20))
    {
        assert!(start.elapsed() < Duration::from_secs(20), "no stripe grew");
        std::thread::sleep(Duration::from_millis(10));
    }
    recvs[1].child.kill().unwrap(); // receiver 2 of 3: SIGKILL, no goodbye
    let killed = Instant::now();
    recvs[1].child.wait().unwrap();
    let out = sender.wait_with_output().unwrap();
    let took = killed.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the sender must fail: {err}");
    assert!(took < BOUND, "the sender took {took:?} to notice: {err}");
    assert!(
        err.contains(&format!("receiver 2 of 3 ({})", list[1]))
            && err.contains("closed the control connection mid-transfer"),
        "the error names the receiver and the cause: {err}"
    );
    // The survivors gave up on the sender too; none holds a stripe under its final name, or a
    // manifest (a stripe without one is incomplete).
    for (k, d) in (1..=3).zip(&dirs) {
        for name in [
            format!("big.bin.mbtp-{k}-of-3"),
            format!("big.bin.mbtp-{k}-of-3.manifest"),
        ] {
            assert!(!d.path().join(&name).exists(), "{name} left in place");
        }
    }
    // Join says what is missing rather than writing anything.
    let out = Command::new(WEFT)
        .args(["join"])
        .arg(dirs[0].path().join("big.bin"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no stripes of big.bin"), "{err}");
}
