//! `weft send --checksum blake3|xxh3`: both deliver identical files and say which one (and
//! whether keyed) in the JSON summary; the receiver refuses a checksum it does not know by name,
//! and still serves a sender of the previous protocol version (BLAKE3, no checksum byte).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::net::TcpStream;
use std::process::Command;

use weft_xfer::net::ctl::CtlConn;
use weft_xfer::wire::{Control, Mode, RefuseCode};

mod common;

use common::{Recv, WEFT};

fn hello(port: u16, version: u16, checksum: u8) -> Control {
    let mut conn = CtlConn::new(TcpStream::connect(("127.0.0.1", port)).unwrap()).unwrap();
    conn.queue(&Control::ClientHello {
        version,
        mode: Mode::Reliable,
        window: 2,
        nonce: [5; 16],
        checksum,
        stripe: None,
    });
    conn.flush_all(5000).unwrap();
    conn.recv_wait(5000).unwrap()
}

#[test]
fn both_checksums_deliver_identical_files_and_the_summary_names_them() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..(5 << 20) + 4321u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let file = src.path().join("f.bin");
    std::fs::write(&file, &data).unwrap();
    let keyed = Recv::start(dst.path(), &["--key", "open sesame, says ali", "--force"]);
    let open = Recv::start(dst.path(), &["--force"]);
    let key = ["--key", "open sesame, says ali"];
    for (recv, args, want) in [
        (&open, &["--checksum", "xxh3"][..], "xxh3"),
        (&keyed, &key[..], "blake3-keyed"),
        (
            &keyed,
            &[&key[..], &["--checksum", "blake3"]].concat(),
            "blake3-keyed",
        ),
    ] {
        let out = Command::new(WEFT)
            .arg("send")
            .arg(&file)
            .arg("127.0.0.1")
            .args(["--port", &recv.port.to_string(), "--no-progress", "--json"])
            .args(["--buffer-size", "1MiB"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            recv.log()
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["summary"]["checksum"], want, "{args:?}");
        let cpu = doc["summary"]["cpu_s_per_gbit"].as_f64().unwrap();
        assert!(cpu > 0.0 && cpu.is_finite(), "CPU per Gbit: {cpu}");
        assert_eq!(std::fs::read(dst.path().join("f.bin")).unwrap(), data);
        std::fs::remove_file(dst.path().join("f.bin")).unwrap();
    }
}

#[test]
fn an_unknown_checksum_is_refused_by_name_and_an_older_sender_is_still_served() {
    let dst = tempfile::tempdir().unwrap();
    let recv = Recv::start(dst.path(), &[]);
    match hello(recv.port, 3, 9) {
        Control::Refuse { code, msg } => {
            assert_eq!(code, RefuseCode::Version);
            assert!(
                msg.contains("unknown checksum number 9") && msg.contains("xxh3"),
                "{msg}"
            );
        }
        m => panic!("expected a refusal, got {m:?}"),
    }
    // Version 2 (no checksum byte: BLAKE3) and 3 (no stripe) senders are answered in their
    // own versions.
    for v in [2, 3] {
        match hello(recv.port, v, 0) {
            Control::ServerHello { version, .. } => assert_eq!(version, v),
            m => panic!("expected ServerHello, got {m:?}"),
        }
    }
    match hello(recv.port, 1, 0) {
        Control::Refuse { code, msg } => {
            assert_eq!(code, RefuseCode::Version);
            assert!(msg.contains("version 1 is not supported"), "{msg}");
        }
        m => panic!("expected a refusal, got {m:?}"),
    }
    let out = Command::new(WEFT)
        .args(["send", "--mem", "1KiB", "127.0.0.1", "--checksum", "md5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown checksum \"md5\""), "{err}");
}

/// Under a key only the reliable mode with BLAKE3 runs: xxh3 and the unreliable modes carry
/// nothing the key protects. `weft send` refuses them itself, and a keyed receiver refuses a
/// hand-made hello that asks for them, and a sender older than protocol 6, by name (issue 32).
#[test]
fn a_keyed_receiver_refuses_what_its_key_would_not_protect() {
    let dst = tempfile::tempdir().unwrap();
    let recv = Recv::start(dst.path(), &["--key", "open sesame, says ali"]);
    for extra in [
        &["--checksum", "xxh3"][..],
        &["--mode", "sbtp"],
        &["--mode", "mbtp"],
    ] {
        let out = Command::new(WEFT)
            .args(["send", "--mem", "1KiB", "127.0.0.1", "--no-progress"])
            .args([
                "--port",
                &recv.port.to_string(),
                "--key",
                "open sesame, says ali",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("with a key") && err.contains("reliable"),
            "{err}"
        );
    }
    let ask = |mode: Mode, checksum: u8, version: u16| {
        let mut conn = CtlConn::new(TcpStream::connect(("127.0.0.1", recv.port)).unwrap()).unwrap();
        conn.queue(&Control::ClientHello {
            version,
            mode,
            window: 2,
            nonce: [5; 16],
            checksum,
            stripe: None,
        });
        conn.flush_all(5000).unwrap();
        conn.recv_wait(5000).unwrap()
    };
    for (mode, checksum, version, says) in [
        (Mode::Reliable, 1, 6, "xxh3 with a key"),
        (Mode::Sbtp, 0, 6, "sbtp with a key"),
        (Mode::Mbtp, 0, 6, "mbtp with a key"),
        (Mode::Reliable, 0, 5, "stretched"),
    ] {
        match ask(mode, checksum, version) {
            Control::Refuse { code, msg } => {
                assert_eq!(code, RefuseCode::Version);
                assert!(msg.contains(says), "{msg}");
            }
            m => panic!("{mode:?} {checksum}: expected a refusal, got {m:?}"),
        }
    }
    assert!(matches!(
        ask(Mode::Reliable, 0, 6),
        Control::ServerHello { .. }
    ));
}

/// A receiver of protocol 2 closes on a version 3 hello (one byte too many) without a word: the
/// sender says what that probably means instead of "the peer closed the control connection".
#[test]
fn a_receiver_that_closes_on_the_hello_is_named_as_probably_older() {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let old = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut hello = [0u8; 64];
        let n = s.read(&mut hello).unwrap();
        assert!(n > 4, "a hello arrived");
        // Dropped: closed without an answer, as a protocol 2 receiver does on a parse error.
    });
    let out = Command::new(WEFT)
        .args(["send", "--mem", "1KiB", "127.0.0.1", "--no-progress"])
        .args(["--port", &port.to_string()])
        .output()
        .unwrap();
    old.join().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("older weft (protocol 2") && err.contains("upgrade it"),
        "{err}"
    );
}

/// With a key the buffers' BLAKE3 is keyed per session: a resumed transfer (a new session, a new
/// key) re-checks the buffers already on disk under the new session's key at both ends.
#[test]
fn a_keyed_transfer_resumes_under_the_new_sessions_key() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..24u32 << 20)
        .map(|i| (i.wrapping_mul(2_246_822_519) >> 11) as u8)
        .collect();
    let file = src.path().join("big.bin");
    std::fs::write(&file, &data).unwrap();
    let recv = Recv::start(dst.path(), &["--key", "open sesame, says ali"]);
    let send = |extra: &[&str]| {
        let mut c = Command::new(WEFT);
        c.arg("send")
            .arg(&file)
            .arg("127.0.0.1")
            .args([
                "--port",
                &recv.port.to_string(),
                "--no-progress",
                "--key",
                "open sesame, says ali",
            ])
            .args(["--buffer-size", "1MiB", "--packet-size", "8000"])
            .args(extra);
        c
    };
    let mut first = send(&["--rate", "60Mbps"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let journal = dst.path().join(".big.bin.weft-journal");
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&journal).is_ok_and(|t| t.lines().count() > 3) {
        assert!(start.elapsed().as_secs() < 20, "no progress");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let out = send(&["--resume", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        recv.log()
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["checksum"], "blake3-keyed");
    assert!(
        doc["samples"][0]["resumed_buffers"].as_u64().unwrap() >= 3,
        "{doc}"
    );
    assert_eq!(std::fs::read(dst.path().join("big.bin")).unwrap(), data);
}
