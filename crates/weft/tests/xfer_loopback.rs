//! `weft send` / `weft recv` over real sockets on loopback: sizes, modes, kills and `--resume`,
//! and the refusals (path traversal, symlinks, oversize, existing files, missing or wrong keys).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use weft_xfer::net::client_handshake;
use weft_xfer::net::ctl::CtlConn;
use weft_xfer::wire::{Control, Mode, RefuseCode};

mod common;

use common::{Recv, WEFT, pseudo_random};

fn send_cmd(port: u16, args: &[&str], files: &[&Path], target: &str) -> Command {
    let mut c = Command::new(WEFT);
    c.arg("send")
        .args(files)
        .arg(target)
        .args(["--port", &port.to_string(), "--no-progress"])
        .args(args);
    c
}

fn send(port: u16, args: &[&str], files: &[&Path], target: &str) -> Output {
    send_cmd(port, args, files, target)
        .output()
        .expect("run weft send")
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = walk(dir)
        .into_iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect();
    v.sort();
    v
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.push(p.clone());
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Asserts that `weft send` succeeded; if not, shows `what`, its stderr and the receiver's log.
fn assert_sent(out: &Output, recv: &Recv, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        recv.log()
    );
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn files_of_awkward_sizes_and_a_directory_arrive_identical() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let sizes = [0usize, 1, 1399, 1400 * 7 + 3, 64 * 1024 * 5 + 17];
    let mut paths = Vec::new();
    for (i, n) in sizes.iter().enumerate() {
        let p = src.path().join(format!("f{i}.bin"));
        std::fs::write(&p, pseudo_random(*n, i as u64 + 1)).unwrap();
        paths.push(p);
    }
    let tree = src.path().join("tree");
    std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    std::fs::write(tree.join("a.txt"), b"hello").unwrap();
    std::fs::write(tree.join("sub/deeper/b.bin"), pseudo_random(200_000, 9)).unwrap();
    let recv = Recv::start(dst.path(), &[]);
    let mut all: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    all.push(&tree);
    let out = send(
        recv.port,
        &["--packet-size", "1400", "--buffer-size", "64KiB", "--json"],
        &all,
        "127.0.0.1:in",
    );
    assert_sent(&out, &recv, "");
    let doc = json(&out);
    assert_eq!(doc["kind"], "xfer");
    assert_eq!(doc["engine"], "real");
    assert_eq!(doc["summary"]["files_ok"], 7);
    let total: usize = sizes.iter().sum::<usize>() + 5 + 200_000;
    assert_eq!(doc["summary"]["bytes"], total);
    // The study's Table 2 breakdown: one session's sync, disk and transfer times are disjoint
    // parts of its elapsed time and `other` is the rest, so the four add up to 100% (each is
    // rounded to 0.1%); data moved, so transfer took time.
    let pct = |k: &str| {
        doc["summary"][k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k}: {doc}"))
    };
    let parts = ["sync_pct", "disk_pct", "transfer_pct", "other_pct"].map(pct);
    let sum: f64 = parts.iter().sum();
    assert!((sum - 100.0).abs() <= 0.3, "{parts:?} add up to {sum}");
    assert!(parts.iter().all(|&p| p >= 0.0), "{parts:?}");
    assert!(pct("transfer_pct") > 0.0, "{parts:?}");
    for (i, p) in paths.iter().enumerate() {
        assert_eq!(
            std::fs::read(dst.path().join(format!("in/f{i}.bin"))).unwrap(),
            std::fs::read(p).unwrap(),
            "file {i}"
        );
    }
    assert_eq!(
        std::fs::read(dst.path().join("in/tree/a.txt")).unwrap(),
        b"hello"
    );
    assert_eq!(
        std::fs::read(dst.path().join("in/tree/sub/deeper/b.bin")).unwrap(),
        pseudo_random(200_000, 9)
    );
    assert!(
        !listing(dst.path()).iter().any(|n| n.contains(".weft-")),
        "{:?}",
        listing(dst.path())
    );
}

#[test]
fn sbtp_and_mbtp_deliver_and_account_for_loss() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data = pseudo_random(3 * 1024 * 1024 + 5, 3);
    let p = src.path().join("image.raw");
    std::fs::write(&p, &data).unwrap();
    let recv = Recv::start(dst.path(), &["--sockets", "4", "--json"]);
    for (mode, extra) in [("sbtp", vec![]), ("mbtp", vec!["--receivers", "3"])] {
        let mut args = vec![
            "--mode",
            mode,
            "--packet-size",
            "9000",
            "--json",
            "--rate",
            "2Gbps",
        ];
        args.extend(extra);
        let out = send(recv.port, &args, &[&p], &format!("127.0.0.1:{mode}"));
        assert_sent(&out, &recv, mode);
        let doc = json(&out);
        let lost = doc["summary"]["packets_lost"].as_u64().unwrap();
        assert_eq!(doc["summary"]["stripes"], 4);
        let got = std::fs::read(dst.path().join(mode).join("image.raw")).unwrap();
        assert_eq!(got.len(), data.len());
        // Every byte is right except zero-filled lost packets, and the count matches.
        let bad_packets = got
            .chunks(9000)
            .zip(data.chunks(9000))
            .enumerate()
            .filter(|(_, (g, d))| g != d)
            .inspect(|(i, (g, _))| {
                assert!(
                    g.iter().all(|b| *b == 0),
                    "{mode}: packet {i} neither right nor zero"
                )
            })
            .count() as u64;
        assert!(
            bad_packets <= lost,
            "{mode}: {bad_packets} wrong packets but {lost} reported lost"
        );
        // Buffers of 1 MiB are not multiples of 9000: count per buffer would differ; with loss
        // zero the file must be exact.
        if lost == 0 {
            assert_eq!(got, data, "{mode}");
        }
    }
}

/// Waits until the receiver's journal lists at least `n` buffers.
fn wait_for_journal(dir: &Path, name: &str, n: usize) {
    let j = dir.join(format!(".{name}.weft-journal"));
    let start = Instant::now();
    loop {
        if let Ok(t) = std::fs::read_to_string(&j)
            && t.lines().count() > n
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no progress in the journal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn killed_sender_then_resume_completes() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data = pseudo_random(24 << 20, 5);
    let p = src.path().join("big.bin");
    std::fs::write(&p, &data).unwrap();
    let recv = Recv::start(dst.path(), &[]);
    let args = ["--buffer-size", "1MiB", "--packet-size", "8000"];
    let slow: Vec<&str> = args.iter().copied().chain(["--rate", "60Mbps"]).collect();
    let mut child = send_cmd(recv.port, &slow, &[&p], "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_journal(dst.path(), "big.bin", 3);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !dst.path().join("big.bin").exists(),
        "no file under the final name after a kill"
    );
    assert!(dst.path().join(".big.bin.weft-part").exists());
    let mut a = args.to_vec();
    a.extend(["--resume", "--json", "--rate", "2Gbps"]);
    let out = send(recv.port, &a, &[&p], "127.0.0.1");
    assert_sent(&out, &recv, "");
    let doc = json(&out);
    let resumed = doc["samples"][0]["resumed_buffers"].as_u64().unwrap();
    assert!(resumed >= 3, "resumed {resumed} buffers");
    assert!(
        doc["summary"]["bytes"].as_u64().unwrap() < data.len() as u64,
        "resume resent everything"
    );
    assert_eq!(std::fs::read(dst.path().join("big.bin")).unwrap(), data);
    assert_eq!(listing(dst.path()), vec!["big.bin"]);
}

#[test]
fn killed_receiver_then_resume_completes() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data = pseudo_random(24 << 20, 6);
    let p = src.path().join("big.bin");
    std::fs::write(&p, &data).unwrap();
    let recv = Recv::start(dst.path(), &[]);
    let args = [
        "--buffer-size",
        "1MiB",
        "--packet-size",
        "8000",
        "--timeout",
        "3s",
    ];
    let slow: Vec<&str> = args.iter().copied().chain(["--rate", "60Mbps"]).collect();
    let child = send_cmd(recv.port, &slow, &[&p], "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_journal(dst.path(), "big.bin", 3);
    drop(recv);
    let out = child.wait_with_output().unwrap();
    assert!(
        !out.status.success(),
        "the sender must fail when the receiver dies"
    );
    assert!(!dst.path().join("big.bin").exists());
    let recv = Recv::start(dst.path(), &[]);
    let mut a = args.to_vec();
    a.extend(["--resume", "--json", "--rate", "2Gbps"]);
    let out = send(recv.port, &a, &[&p], "127.0.0.1");
    assert_sent(&out, &recv, "");
    assert!(
        json(&out)["samples"][0]["resumed_buffers"]
            .as_u64()
            .unwrap()
            >= 3
    );
    assert_eq!(std::fs::read(dst.path().join("big.bin")).unwrap(), data);
    assert_eq!(listing(dst.path()), vec!["big.bin"]);
}

#[test]
fn refusals_write_nothing() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let p = src.path().join("x.bin");
    std::fs::write(&p, pseudo_random(5000, 7)).unwrap();
    std::os::unix::fs::symlink(outside.path(), dst.path().join("link")).unwrap();
    std::fs::write(dst.path().join("x.bin"), b"precious").unwrap();
    let key = src.path().join("key");
    std::fs::write(&key, "correct horse battery").unwrap();
    let recv = Recv::start(
        dst.path(),
        &["--key-file", key.to_str().unwrap(), "--max-size", "4000"],
    );

    // No key, wrong key.
    let out = send(recv.port, &[], &[&p], "127.0.0.1:new");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("requires a pre-shared key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = send(
        recv.port,
        &["--key", "a wrong key of sixteen"],
        &[&p],
        "127.0.0.1:new",
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("wrong or missing key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Oversize (5000 > 4000).
    let out = send(
        recv.port,
        &["--key", "correct horse battery"],
        &[&p],
        "127.0.0.1:new",
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exceed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Existing file without --force, and a directory that is a symlink out of D.
    let small = src.path().join("x.bin");
    std::fs::write(&small, b"tiny").unwrap();
    let out = send(
        recv.port,
        &["--key", "correct horse battery"],
        &[&small],
        "127.0.0.1",
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already exists"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = send(
        recv.port,
        &["--key", "correct horse battery"],
        &[&small],
        "127.0.0.1:link",
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("symbolic link"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Traversal in a name, from a hand-made client (weft send itself refuses to build one).
    let mut conn = CtlConn::new(TcpStream::connect(("127.0.0.1", recv.port)).unwrap()).unwrap();
    let k = weft_xfer::auth::Key::from_secret(b"correct horse battery").unwrap();
    client_handshake(&mut conn, Mode::Reliable, 1, Some(&k)).unwrap();
    for (i, name) in ["../escape", "/etc/evil", "a/../../escape"]
        .iter()
        .enumerate()
    {
        conn.queue(&Control::FileOffer {
            file: i as u32,
            size: 4,
            buffer_size: 4,
            packet_size: 4,
            resume: false,
            hash: [0; 32],
            name: name.to_string(),
        });
        conn.flush_all(2000).unwrap();
        match conn.recv_wait(5000).unwrap() {
            Control::FileReject { code, .. } => assert_eq!(code, RefuseCode::Path, "{name}"),
            m => panic!("{name}: {m:?}"),
        }
    }
    drop(conn);
    assert_eq!(
        std::fs::read(dst.path().join("x.bin")).unwrap(),
        b"precious"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert_eq!(listing(dst.path()), vec!["link", "x.bin"]);
    assert!(!src.path().parent().unwrap().join("escape").exists());
    // With the key and acceptable size, it works.
    let out = send(
        recv.port,
        &["--key", "correct horse battery"],
        &[&small],
        "127.0.0.1:ok",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(dst.path().join("ok/x.bin")).unwrap(), b"tiny");
}

#[test]
fn memory_source_arrives_as_its_pattern_and_a_discarding_receiver_writes_nothing() {
    use weft_xfer::net::source::{Source, read_block};
    let size: u64 = 3 * (1 << 20) + 5;
    let mem = format!("{size}B");
    // Into an ordinary receiver: the file holds the pattern, block by block.
    let dst = tempfile::tempdir().unwrap();
    let recv = Recv::start(dst.path(), &[]);
    let args = ["--mem", &mem, "--buffer-size", "1MiB", "--json"];
    let out = send(recv.port, &args, &[], "127.0.0.1:m");
    assert_sent(&out, &recv, "");
    assert_eq!(json(&out)["summary"]["files_ok"], 1);
    let got = std::fs::read(dst.path().join("m/weft-memory")).unwrap();
    let want: Vec<u8> = (0..4)
        .flat_map(|i| read_block(&Source::Memory, &mut None, size, 1 << 20, i, Vec::new()).unwrap())
        .collect();
    assert_eq!(got.len() as u64, size);
    assert!(
        got == want,
        "the received bytes are not the memory source's"
    );
    // Into a discarding receiver, in every mode: verified (reliable) and dropped.
    let sink = tempfile::tempdir().unwrap();
    let recv = Recv::start(sink.path(), &["--discard"]);
    for mode in ["reliable", "sbtp", "mbtp"] {
        let args = [
            "--mem",
            &mem,
            "--buffer-size",
            "1MiB",
            "--json",
            "--mode",
            mode,
        ];
        let out = send(recv.port, &args, &[], "127.0.0.1");
        assert_sent(&out, &recv, mode);
        assert_eq!(json(&out)["summary"]["bytes"], size, "{mode}");
    }
    assert!(
        recv.log().contains("verified and discarded"),
        "{}",
        recv.log()
    );
    assert!(walk(sink.path()).is_empty(), "{:?}", walk(sink.path()));
    // --mem takes no files.
    let out = send(recv.port, &["--mem", "1MiB"], &[dst.path()], "127.0.0.1");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_sender_without_a_key_still_insists_on_welcome_first() {
    // A hand-made receiver that answers Auth with something other than Welcome.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = std::thread::spawn(move || {
        let mut conn = CtlConn::new(listener.accept().unwrap().0).unwrap();
        assert!(matches!(
            conn.recv_wait(5000).unwrap(),
            Control::ClientHello { .. }
        ));
        conn.queue(&Control::ServerHello {
            version: weft_xfer::wire::control::PROTOCOL_VERSION,
            session: 7,
            nonce: [1; 16],
            window: 1,
            ports: vec![9],
            key_required: false,
        });
        conn.flush_all(2000).unwrap();
        assert!(matches!(
            conn.recv_wait(5000).unwrap(),
            Control::Auth { .. }
        ));
        conn.queue(&Control::FileAccept {
            file: 0,
            have: Vec::new(),
        });
        conn.flush_all(2000).unwrap();
        // Hold the connection until the sender gives up.
        let _ = conn.recv_wait(5000);
    });
    let src = tempfile::tempdir().unwrap();
    let f = src.path().join("f.bin");
    std::fs::write(&f, b"hello").unwrap();
    let out = send(port, &[], &[&f], "127.0.0.1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("instead of Welcome"),
        "{err}"
    );
    fake.join().unwrap();
}
