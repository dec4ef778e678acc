//! `weft recv` on a file system that is too small: the file that cannot fit is refused before it
//! starts, with both sizes; a disk that fills during a transfer ends it with the cause at both
//! ends, keeping the part file for `--resume`. Needs root (to mount a small tmpfs).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Recv, weft};

/// A tmpfs of a given size mounted on a fresh directory; unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Says why the test cannot run; under WEFT_TEST_STRICT=1 (CI) that is a failure.
fn skip(why: &str) {
    if std::env::var("WEFT_TEST_STRICT").as_deref() == Ok("1") {
        panic!("cannot run under WEFT_TEST_STRICT=1: {why}");
    }
    println!("skipped: {why}");
}

fn tmpfs(size: &str) -> Option<Tmpfs> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root {
        skip("needs root to mount a small tmpfs");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip("mount -t tmpfs failed (no CAP_SYS_ADMIN here?)");
        return None;
    }
    Some(Tmpfs { dir })
}

fn file(dir: &Path, name: &str, len: usize) -> (PathBuf, Vec<u8>) {
    let data: Vec<u8> = (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as u8)
        .collect();
    let p = dir.join(name);
    std::fs::write(&p, &data).unwrap();
    (p, data)
}

fn send(port: u16, f: &Path, extra: &[&str]) -> Command {
    let mut c = weft();
    c.arg("send")
        .arg(f)
        .args(["127.0.0.1", "--port", &port.to_string(), "--no-progress"])
        .args(extra);
    c
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_file_larger_than_the_free_space_is_refused_before_it_starts_with_both_sizes() {
    let Some(fs) = tmpfs("30m") else { return };
    let src = tempfile::tempdir().unwrap();
    let (f, _) = file(src.path(), "f50", 50_000_000);
    let recv = Recv::start(fs.path(), &[]);
    let out = send(recv.port, &f, &[]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no space for \"f50\""), "{err}");
    assert!(err.contains("50000000 bytes"), "{err}");
    let free = fs2_free(fs.path());
    assert!(
        err.contains("bytes) free") && free < 31_500_000,
        "{err} (free {free})"
    );
    // Said once, on stderr (the table on stdout lists the file as failed).
    assert_eq!(err.matches("no space for").count(), 1, "{err}");
    assert!(names(fs.path()).is_empty(), "{:?}", names(fs.path()));
}

/// Free bytes of the file system at `p`, as `df` reports them.
fn fs2_free(p: &Path) -> u64 {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap()
}

#[test]
fn a_disk_that_fills_mid_transfer_is_reported_at_both_ends_and_resume_finishes_the_file() {
    let Some(fs) = tmpfs("30m") else { return };
    let src = tempfile::tempdir().unwrap();
    let (f, data) = file(src.path(), "f20", 20_000_000);
    let recv = Recv::start(fs.path(), &[]);
    let args = ["--buffer-size", "1MiB", "--packet-size", "8000"];
    let slow: Vec<&str> = args.iter().copied().chain(["--rate", "40Mbps"]).collect();
    let child = send(recv.port, &f, &slow)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once a few buffers are on disk, something else fills the file system.
    let journal = fs.path().join(".f20.weft-journal");
    let t = Instant::now();
    while std::fs::read_to_string(&journal).map_or(0, |j| j.lines().count()) < 3 {
        assert!(t.elapsed() < Duration::from_secs(20), "no progress");
        std::thread::sleep(Duration::from_millis(10));
    }
    let filler = fs.path().join("filler");
    let _ = std::fs::write(&filler, vec![1u8; 30 << 20]);
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the receiver failed: No space left on device"),
        "{err}"
    );
    assert!(err.contains("\"f20\"") && err.contains("--resume"), "{err}");
    assert_eq!(err.matches("No space left").count(), 1, "{err}");
    let t = Instant::now();
    while !recv.log().contains("No space left") {
        assert!(t.elapsed() < Duration::from_secs(5), "{}", recv.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        names(fs.path()),
        vec![".f20.weft-journal", ".f20.weft-part", "filler"]
    );
    // Room again: --resume finishes it.
    std::fs::remove_file(&filler).unwrap();
    let out = send(recv.port, &f, &[&args[..], &["--resume"]].concat())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stderr(&out), recv.log());
    assert!(std::fs::read(fs.path().join("f20")).unwrap() == data);
}
