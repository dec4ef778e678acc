//! `weft emu` end to end: exit code without root, run with commands, up/list/exec/down, signal
//! and crash clean-up, captures read back by tshark. Tests that need root say so and return
//! (and fail under WEFT_TEST_STRICT=1: see weft-testutil).

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use weft_testutil::{is_root, missing_root, missing_tool, skip_if};

static SERIAL: Mutex<()> = Mutex::new(());

const BIN: &str = env!("CARGO_BIN_EXE_weft");

const SCENARIO: &str = r#"
name = "emu-cli"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "sw"
fabric = "output-queued"
buffer = "2048 cells"
[[link]]
ends = ["a", "sw"]
tech = "oc3c"
[[link]]
ends = ["sw", "b"]
tech = "oc3c"
delay = "8.5ms"
[[workload]]
kind = "tput"
from = "a"
to = "b"
proto = "tcp"
window = 65536
time = "1s"
"#;

fn weft(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run weft")
}

/// Emulator namespaces (`weft-<6 hex>...`) present now.
fn emu_namespaces() -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| {
            n.strip_prefix("weft-").is_some_and(|r| {
                r.len() >= 6
                    && r.as_bytes()[..6].iter().all(|b| b.is_ascii_hexdigit())
                    && (r.len() == 6 || r.as_bytes()[6] == b'-')
            })
        })
        .map(str::to_string)
        .collect()
}

fn write_scenario(dir: &Path) -> String {
    let p = dir.join("s.toml");
    std::fs::write(&p, SCENARIO).expect("write scenario");
    p.display().to_string()
}

fn wait_for_run(child_pid: u32) -> String {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        let out = weft(&["emu", "list", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("list json");
        if let Some(r) = v["runs"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["pid"].as_u64() == Some(child_pid as u64))
        {
            return r["run_id"].as_str().expect("run id").to_string();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("run of pid {child_pid} never appeared");
}

fn wait_exit(child: &mut Child, secs: u64) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "child did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn up(file: &str) -> Child {
    Command::new(BIN)
        .args(["emu", "up", file])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn weft emu up")
}

#[test]
fn without_root_it_says_so_and_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_scenario(dir.path());
    let out = if is_root() {
        skip_if!(missing_tool("setpriv").map(|m| format!("running as root: {m}")));
        let _ = Command::new("chmod")
            .args(["755", &dir.path().display().to_string()])
            .status();
        let _ = Command::new("chmod").args(["644", &file]).status();
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                BIN,
                "emu",
                "up",
                &file,
            ])
            .output()
            .expect("setpriv")
    } else {
        weft(&["emu", "up", &file])
    };
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("root"),
        "{out:?}"
    );
}

#[test]
fn run_with_commands_and_capture() {
    skip_if!(missing_root("the emulator (network namespaces)"));
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = emu_namespaces();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_scenario(dir.path());
    let cap = dir.path().join("cap");
    let out = weft(&[
        "emu",
        "run",
        &file,
        "--json",
        "--capture",
        &cap.display().to_string(),
        "--exec",
        "a: ping -c 3 -i 0.2 -s 1000 10.77.0.2",
    ]);
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    assert_eq!(doc["engine"], "emu");
    let text = doc["samples"][0]["stdout"].as_str().expect("ping output");
    println!("{text}");
    // 17 ms of propagation plus 1028-byte datagrams in 22 cells over two OC-3c links each way
    // (0.25 ms in all), plus the hosts' own stacks.
    let mut times: Vec<f64> = text
        .split("time=")
        .skip(1)
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(times.len(), 3, "{text}");
    times.sort_by(|a, b| a.total_cmp(b));
    assert!(
        (17.2..17.8).contains(&times[1]),
        "median ping {} ms",
        times[1]
    );
    assert_eq!(emu_namespaces(), before, "namespaces leaked");
    skip_if!(missing_tool("tshark").map(|m| format!("capture not decoded: {m}")));
    let pcap = cap.join("b.pcap");
    let t = Command::new("tshark")
        .args([
            "-r",
            &pcap.display().to_string(),
            "-T",
            "fields",
            "-e",
            "atm.vci",
            "-e",
            "icmp.type",
        ])
        .output()
        .expect("tshark");
    let lines = String::from_utf8_lossy(&t.stdout);
    println!("{lines}");
    assert!(t.status.success(), "{t:?}");
    assert_eq!(
        lines.lines().filter(|l| *l == "101\t8").count(),
        3,
        "{lines}"
    );
    assert_eq!(
        lines.lines().filter(|l| *l == "101\t0").count(),
        3,
        "{lines}"
    );
}

#[test]
fn up_list_exec_down_and_signals_leave_nothing() {
    skip_if!(missing_root("the emulator (network namespaces)"));
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = emu_namespaces();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_scenario(dir.path());

    // up, exec, down
    let mut child = up(&file);
    let id = wait_for_run(child.id());
    let out = weft(&[
        "emu", "exec", "b", "--run", &id, "--", "ip", "-br", "addr", "show", "eth0",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("10.77.0.2"),
        "{out:?}"
    );
    let out = weft(&["emu", "down", "--run", &id]);
    assert!(out.status.success(), "{out:?}");
    assert!(wait_exit(&mut child, 10).success());
    assert_eq!(emu_namespaces(), before, "namespaces after down");

    // SIGINT tears down as down does.
    let mut child = up(&file);
    wait_for_run(child.id());
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    assert!(wait_exit(&mut child, 10).success());
    assert_eq!(emu_namespaces(), before, "namespaces after SIGINT");

    // A crash (SIGKILL) of the owner: its guard removes the run by itself, the processes run in
    // its hosts included. Without the guard the namespaces stay until `down --all`.
    let mut child = Command::new(BIN)
        .args(["emu", "run", &file, "--exec", "b:sleep 300"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn weft emu run");
    let id = wait_for_run(child.id());
    let in_host = || {
        Command::new("ip")
            .args(["netns", "pids", &format!("weft-{id}-b")])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let start = Instant::now();
    while in_host().is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let orphans: Vec<String> = in_host().lines().map(str::to_string).collect();
    assert!(!orphans.is_empty(), "the command never ran in host b");
    let _ = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status();
    let _ = wait_exit(&mut child, 10);
    let start = Instant::now();
    while emu_namespaces().iter().any(|n| n.contains(&id))
        && start.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !emu_namespaces().iter().any(|n| n.contains(&id)),
        "an emulation whose owner died should remove itself"
    );
    for p in &orphans {
        assert!(
            !Path::new(&format!("/proc/{p}")).exists()
                || std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .is_ok_and(|s| s.split_whitespace().nth(2) == Some("Z")),
            "process {p} of the dead run's host b still runs"
        );
    }
    assert!(
        !Path::new(&format!("/etc/netns/weft-{id}-b")).exists()
            && !Path::new(&format!("/run/weft/emu/{id}.json")).exists(),
        "the guard left the hosts files or the run record"
    );

    // A crash of owner and guard together (the machine's OOM killer, say) leaves namespaces;
    // list shows them, down --all removes them.
    let mut child = up(&file);
    let id = wait_for_run(child.id());
    let out = weft(&["emu", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("list json");
    let guard = v["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["run_id"] == id.as_str())
        .and_then(|r| r["guard_pid"].as_u64())
        .expect("the run has a guard");
    let _ = Command::new("kill")
        .args(["-KILL", &guard.to_string()])
        .status();
    let _ = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status();
    let _ = wait_exit(&mut child, 10);
    assert!(
        emu_namespaces().iter().any(|n| n.contains(&id)),
        "a crash of owner and guard should leave its namespaces"
    );
    let hosts_dir = format!("/etc/netns/weft-{id}-a");
    assert!(
        Path::new(&hosts_dir).exists(),
        "a crash should leave its hosts files"
    );
    let out = weft(&["emu", "list"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("leftover"),
        "{out:?}"
    );
    let out = weft(&["emu", "down", "--all"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        !emu_namespaces().iter().any(|n| n.contains(&id)),
        "down --all left namespaces"
    );
    assert!(
        !Path::new(&hosts_dir).exists(),
        "down --all left {hosts_dir}"
    );
}

#[test]
fn weft_run_engine_emu_reports_goodput() {
    skip_if!(missing_root("the emulator (network namespaces)"));
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_scenario(dir.path());
    // The emulator reports how many frames left its switch late (`late_frames`, past the lag
    // warning threshold) and marks a run `degraded` when over 1% of them were: on a machine busy
    // with other work a run can fall behind the clock and then measures the machine, not the
    // fabric (CI saw 9 of 364 frames late stretch a 64 KiB window's rounds to 22.9 against
    // 28.3 Mbit/s). A miss in such a run is repeated (at most three times), by the same rule
    // as the engines' agreement tests; a miss in a run that kept up fails.
    let mut degraded = Vec::new();
    for _ in 0..3 {
        let out = weft(&["run", &file, "--engine", "model,emu", "--json"]);
        assert!(out.status.success(), "{out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let docs = v.as_array().expect("one document per engine");
        let sample = |engine: &str| {
            docs.iter()
                .find(|d| d["engine"] == engine)
                .map(|d| d["samples"][0].clone())
                .unwrap_or_else(|| panic!("no {engine} result in {v}"))
        };
        let (model, emu) = (sample("model"), sample("emu"));
        let goodput = |s: &serde_json::Value| s["goodput_mbps"].as_f64().expect("goodput_mbps");
        let (late, frames) = (
            emu["switch"]["late_frames"].as_u64().expect("late_frames"),
            emu["switch"]["frames_in"].as_u64().expect("frames_in"),
        );
        let behind = emu["switch"]["degraded"] == true;
        let (model, emu) = (goodput(&model), goodput(&emu));
        println!(
            "64 KiB window over 17 ms on OC-3c: model {model:.2}, emulated {emu:.2} Mbit/s \
             ({late} of {frames} frames late)"
        );
        // Window-bound, far below the line: the emulated TCP must reach the model's window/RTT
        // within 10% (slow start costs a few round trips of the 1 s run). A miss fails in a run
        // whose switch kept time; in one that fell behind it is the machine's, and run again.
        let within = (emu - model).abs() <= 0.10 * model;
        if !within && behind {
            degraded.push(format!(
                "{emu:.2} Mbit/s with {late} of {frames} frames late"
            ));
            continue;
        }
        assert!(
            within,
            "emulated {emu:.2} Mbit/s is not within 10% of the model's {model:.2} \
             ({late} of {frames} frames late)"
        );
        return;
    }
    weft_testutil::skip(&format!(
        "the switch fell behind the clock in every run (the machine is too busy to emulate \
         in real time): {}",
        degraded.join("; ")
    ));
}

const NAMED: &str = r#"
name = "emu-names"
[[host]]
name = "adelaide"
[[host]]
name = "canberra"
[[switch]]
name = "sw"
[[link]]
ends = ["adelaide", "sw"]
tech = "gige"
[[link]]
ends = ["sw", "canberra"]
tech = "gige"
"#;

/// Hosts-file directories of emulator namespaces under /etc/netns.
fn emu_hosts_dirs() -> Vec<String> {
    std::fs::read_dir("/etc/netns")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("weft-"))
        .collect()
}

/// Interfaces of the root namespace.
fn root_links() -> Vec<String> {
    let out = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .expect("ip link");
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1).map(|n| n.trim().to_string()))
        .collect();
    v.sort();
    v
}

#[test]
fn detach_names_resolve_wait_down_leave_nothing() {
    skip_if!(missing_root("the emulator (network namespaces)"));
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (ns_before, dirs_before, links_before) = (emu_namespaces(), emu_hosts_dirs(), root_links());
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("named.toml");
    std::fs::write(&file, NAMED).expect("write scenario");

    // --detach returns once the emulation is up, with the run id alone on stdout.
    let out = weft(&["emu", "up", "--detach", &file.display().to_string()]);
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        id.len() == 6 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "run id {id:?}"
    );
    let hosts = std::fs::read_to_string(format!("/etc/netns/weft-{id}-adelaide/hosts"))
        .expect("hosts file of adelaide");
    assert!(hosts.contains("10.77.0.2\tcanberra"), "{hosts}");

    // Names resolve inside the emulation: through the resolver, and for weft itself.
    let out = weft(&[
        "emu", "exec", "adelaide", "--run", &id, "--", "getent", "hosts", "canberra",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("10.77.0.2 "),
        "{out:?}"
    );
    let mut agent = Command::new(BIN)
        .args([
            "emu", "exec", "canberra", "--run", &id, "--", BIN, "serve", "--open",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("agent in canberra");
    let mut rr = None;
    for _ in 0..50 {
        let out = weft(&[
            "emu", "exec", "adelaide", "--run", &id, "--", BIN, "rr", "canberra", "-n", "20",
            "--warmup", "2", "--json",
        ]);
        if out.status.success() {
            rr = Some(out);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let rr = rr.expect("weft rr canberra from adelaide never succeeded");
    let doc: serde_json::Value = serde_json::from_slice(&rr.stdout).expect("rr json");
    assert_eq!(doc["kind"], "rr", "{doc}");

    // wait blocks while the run is up and returns once `down ID` has torn it down.
    let mut waiter = Command::new(BIN)
        .args(["emu", "wait", &id])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weft emu wait");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        waiter.try_wait().expect("try_wait").is_none(),
        "wait returned while the run was up"
    );
    let out = weft(&["emu", "down", &id]);
    assert!(out.status.success(), "{out:?}");
    assert!(wait_exit(&mut waiter, 10).success());
    let _ = agent.kill();
    let _ = agent.wait();

    assert_eq!(emu_namespaces(), ns_before, "namespaces after down");
    assert_eq!(emu_hosts_dirs(), dirs_before, "hosts files after down");
    assert_eq!(root_links(), links_before, "links after down");
    assert!(
        !Path::new(&format!("/run/weft/emu/{id}.json")).exists()
            && !Path::new(&format!("/run/weft/emu/{id}.log")).exists(),
        "run record or log left behind"
    );
}

/// `weft emu down --all` stops every running emulation (here: every one recorded in a state
/// directory of this test's own, so that others' emulations on this machine are not touched),
/// saying which, then removes leftovers; namespaces that no record of that directory names are
/// left alone.
#[test]
fn down_all_stops_running_emulations_and_says_which() {
    skip_if!(missing_root("the emulator (network namespaces)"));
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let file = write_scenario(dir.path());
    let with_state = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("WEFT_EMU_STATE_DIR", &state)
            .output()
            .expect("run weft")
    };
    let out = with_state(&["emu", "up", "--detach", &file]);
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let ours = |id: &str| -> Vec<String> {
        emu_namespaces()
            .into_iter()
            .filter(|n| n.starts_with(&format!("weft-{id}")))
            .collect()
    };
    assert!(!ours(&id).is_empty(), "the run's namespaces are up");
    // A namespace of the emulator's pattern that this state directory knows nothing of.
    let stranger = format!("weft-{:06x}", std::process::id() & 0xff_ffff);
    let _ = Command::new("ip")
        .args(["netns", "add", &stranger])
        .status();
    let out = with_state(&["emu", "down", "--all"]);
    let _ = Command::new("ip")
        .args(["netns", "del", &stranger])
        .status();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(
        err.contains(&format!("stopped run {id}")),
        "down --all says what it stopped: {err}"
    );
    assert!(ours(&id).is_empty(), "namespaces left after down --all");
    assert!(
        !err.contains(&stranger),
        "down --all removed a namespace not of its state directory: {err}"
    );
    assert!(
        !state.join(format!("{id}.json")).exists(),
        "run record left behind"
    );
}
