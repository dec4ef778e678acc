//! `weft vc manager` and `weft emu fail` end to end (issue 28): the 3-switch, 12-host mesh of
//! `scenarios/vc-mesh-three-switches.toml` brought up under a connection manager, whose tables
//! carry a ping from bay1 to bay3; `weft emu fail bay2 --for 300ms` prints the restore of
//! bay2's whole table; the ping crosses again with no manual step; the manager logged the
//! restore. Needs root (network namespaces); the emulation and the manager are stopped, and the
//! namespaces checked gone, whatever happens. Every wait is bounded.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use weft_testutil::{missing_root, skip_if};

const BIN: &str = env!("CARGO_BIN_EXE_weft");

fn scenario() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/vc-mesh-three-switches.toml"
    )
    .into()
}

/// The run and the manager, stopped on drop.
struct Running {
    state: PathBuf,
    run: Option<String>,
    manager: Child,
}

impl Running {
    fn weft(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .env("WEFT_EMU_STATE_DIR", &self.state)
            .output()
            .expect("run weft")
    }

    fn ping(&self, from: &str, to: &str) -> bool {
        let run = self.run.as_deref().expect("up");
        let args = [
            "emu", "exec", from, "--run", run, "--", "ping", "-c", "1", "-W", "2", to,
        ];
        self.weft(&args).status.success()
    }

    /// Stops the manager with SIGTERM (it prints its summary then) and waits up to 10 s.
    fn stop_manager(&mut self) {
        if self.manager.try_wait().ok().flatten().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .arg(self.manager.id().to_string())
            .status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if self.manager.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.manager.kill();
        let _ = self.manager.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(id) = self.run.take() {
            let _ = self.weft(&["emu", "down", &id]);
        }
        self.stop_manager();
    }
}

fn namespaces_of(id: &str) -> usize {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&format!("weft-{id}")))
        .count()
}

fn start(dir: &Path) -> Running {
    let key = dir.join("key");
    std::fs::write(&key, b"a manager key of 32 bytes here!!").expect("key");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let sock = dir.join("manager.sock");
    let log = std::fs::File::create(dir.join("manager.log")).expect("log");
    let manager = Command::new(BIN)
        .args(["vc", "manager", &scenario(), "--listen"])
        .arg(&sock)
        .arg("--key-file")
        .arg(&key)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("weft vc manager");
    let mut r = Running {
        state: dir.join("state"),
        run: None,
        manager,
    };
    let (s, k) = (sock.display().to_string(), key.display().to_string());
    let out = r.weft(&[
        "emu",
        "up",
        "--detach",
        &scenario(),
        "--vc-manager",
        &s,
        "--key-file",
        &k,
    ]);
    assert!(out.status.success(), "{out:?}");
    r.run = Some(String::from_utf8_lossy(&out.stdout).trim().to_string());
    r
}

#[test]
fn fail_prints_the_restore_and_traffic_resumes() {
    skip_if!(missing_root("the emulator (network namespaces)"));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut r = start(dir.path());
    let id = r.run.clone().expect("up");
    assert!(
        (0..10).any(|_| r.ping("sp2a", "sparc3")),
        "the manager's tables carry the ping"
    );
    let out = r.weft(&[
        "emu", "fail", "bay2", "--for", "300ms", "--run", &id, "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["switch"], "bay2", "{v}");
    assert_eq!(
        v["entries"], 108,
        "bay2's whole table of the mesh plan: {v}"
    );
    assert!(
        v["down_ns"].as_u64().is_some_and(|d| d >= 300_000_000),
        "{v}"
    );
    let restore = v["restore_ns"].as_u64().expect("restore time");
    assert!(restore > 0 && restore < 2_000_000_000, "{v}");
    assert!(r.ping("sp2a", "sparc3"), "bay2 forwards again");
    let out = r.weft(&["emu", "fail", "bay9", "--run", &id]);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no switch \"bay9\""),
        "{out:?}"
    );
    let down = r.weft(&["emu", "down", &id]);
    assert!(down.status.success(), "{down:?}");
    r.run = None;
    r.stop_manager();
    assert_eq!(namespaces_of(&id), 0, "run {id} left namespaces");
    let log = std::fs::read_to_string(dir.path().join("manager.log")).expect("the log");
    assert_eq!(
        log.matches("bay2 holds its 108 entries and 0 contracts again")
            .count(),
        2,
        "at start and after the failure: {log}"
    );
    assert!(log.contains("after it was lost"), "{log}");
}
