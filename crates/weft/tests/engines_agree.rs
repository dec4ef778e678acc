//! One fabric, two clocks, end to end: the shipped two-to-one scenarios on `--engine sim` show
//! early packet discard's benefit and treat equal senders equally; `sim` and `emu` (the same
//! switch code in virtual and in wall-clock time) agree on frame goodput and cell loss, and on the
//! rate of a shaped VC; the simulator's captures open in tshark. The `emu` tests need root and
//! say so (and fail under WEFT_TEST_STRICT=1: see weft-testutil).

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use common::run_json as run;
use serde_json::Value;
use weft_testutil::{missing_root, missing_tool, skip_if};

/// One emulation at a time: they share two cores, and timing is what they measure.
static SERIAL: Mutex<()> = Mutex::new(());

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The sample of workload 0 in a result document.
fn frames_sample(doc: &Value) -> &Value {
    doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["workload"] == 0)
        .unwrap_or_else(|| panic!("no sample of workload 0 in {doc}"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// A shipped scenario cut to its first workload (the `frames` one) running for `time`, written
/// to a temporary directory.
fn frames_only(name: &str, time: &str, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("scenarios").join(name)).unwrap();
    let first = text.find("[[workload]]").unwrap();
    let second = text[first + 1..]
        .find("[[workload]]")
        .map(|i| i + first + 1);
    let cut = &text[..second.unwrap_or(text.len())];
    let cut = cut.replace("time = \"3s\"", &format!("time = \"{time}\""));
    assert!(cut.contains(&format!("time = \"{time}\"")), "{cut}");
    let path = dir.join(name);
    std::fs::write(&path, cut).unwrap();
    path
}

/// `weft run FILE --engine sim,emu`, and `check` of the sim and emu samples of workload 0,
/// which returns the misses. A run that agrees passes; a miss in a run whose switch kept time
/// fails; a miss in a run whose switch fell behind the clock (`degraded`: more than 1% of the
/// frames it sent to hosts over 1 ms late; under tail drop few frames arrive whole, so one late
/// frame is enough) is the machine's, and the run is repeated, up to three times. A machine too
/// busy to emulate in real time three times running makes the test skip (fail under
/// WEFT_TEST_STRICT=1).
fn agree_on_sim_and_emu(file: &Path, check: impl Fn(&Value, &Value) -> Vec<String>) {
    let mut seen = Vec::new();
    for _ in 0..3 {
        let docs = run(file, "sim,emu", &[]);
        assert_eq!(
            (docs[0]["engine"].as_str(), docs[1]["engine"].as_str()),
            (Some("sim"), Some("emu"))
        );
        let (sim, emu) = (frames_sample(&docs[0]), frames_sample(&docs[1]));
        let misses = check(sim, emu);
        if misses.is_empty() {
            return;
        }
        assert!(
            emu["switch"]["degraded"] == true,
            "{}: {misses:?} in a run whose switch kept time",
            file.display()
        );
        seen.push(format!(
            "{misses:?} with {} of frames late",
            emu["switch"]["late_fraction"]
        ));
    }
    weft_testutil::skip(&format!(
        "the switch fell behind the clock in every run that missed (the machine is too busy to \
         emulate in real time): {}",
        seen.join("; ")
    ));
}

/// `a` and `b` within `rel` of each other (relative to the larger), or both below `floor`.
fn close(a: f64, b: f64, rel: f64, floor: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()) || (a.abs() < floor && b.abs() < floor)
}

#[test]
fn sim_shows_epd_well_above_tail_drop_and_equal_senders_equal() {
    let goodput = |name: &str| {
        let docs = run(&root().join("scenarios").join(name), "sim", &[]);
        let s = frames_sample(&docs[0]).clone();
        let senders = s["per_sender"].as_array().unwrap().clone();
        assert_eq!(senders.len(), 2, "{s}");
        let each: Vec<f64> = senders.iter().map(|p| num(p, "frame_goodput")).collect();
        // Equal senders see equal loss: neither locks the other out.
        assert!(
            close(each[0], each[1], 0.05, 0.01),
            "{name}: per sender {each:?}"
        );
        (num(&s, "frame_goodput"), num(&s, "cell_loss"))
    };
    let (tail, tail_loss) = goodput("sandia-two-to-one.toml");
    let (epd, epd_loss) = goodput("sandia-two-to-one-epd.toml");
    // Two full OC-3c cell streams into one: half the cells must go either way.
    assert!((tail_loss - 0.5).abs() < 0.01 && (epd_loss - 0.5).abs() < 0.01);
    // Tail drop spreads the loss over nearly every frame; EPD drops whole frames and delivers
    // the half the output can carry.
    assert!(tail < 0.05, "tail drop {tail}");
    assert!(epd > 0.45, "EPD {epd}");
}

#[test]
fn two_to_one_frame_goodput_and_cell_loss_agree_on_sim_and_emu() {
    skip_if!(missing_root("the emulator"));
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    for name in ["sandia-two-to-one.toml", "sandia-two-to-one-epd.toml"] {
        let file = frames_only(name, "1s", dir.path());
        agree_on_sim_and_emu(&file, |sim, emu| {
            ["frame_goodput", "cell_loss"]
                .into_iter()
                .filter_map(|key| {
                    let (a, b) = (num(sim, key), num(emu, key));
                    println!("{name} {key}: sim {a:.4} emu {b:.4}");
                    // Within 5%. Tail drop's frame goodput is nearly nothing on both (0.1-1%:
                    // the emulated hosts' timing jitter lets the odd frame through whole); below
                    // 2% on both counts as the same.
                    (!close(a, b, 0.05, 0.02)).then(|| format!("{key}: sim {a} vs emu {b}"))
                })
                .collect()
        });
    }
}

/// Two hosts on OC-3c, the sender's VC shaped to a peak cell rate of 26 Mbit/s, offering 30
/// Mbit/s of 9180-byte frames.
const SHAPED: &str = r#"
name = "shaped-vc"
seed = 1
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "sw"
fabric = "output-queued"
buffer = "4096 cells"
[[link]]
ends = ["a", "sw"]
tech = "oc3c"
pcr = "26Mbps"
[[link]]
ends = ["sw", "b"]
tech = "oc3c"
[[workload]]
kind = "frames"
from = "a"
to = "b"
size = 9180
rate = "30Mbps"
time = "2s"
"#;

#[test]
fn a_shaped_vc_delivers_the_same_rate_on_sim_and_emu() {
    skip_if!(missing_root("the emulator"));
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shaped.toml");
    std::fs::write(&file, SHAPED).unwrap();
    agree_on_sim_and_emu(&file, |sim, emu| {
        let (a, b) = (num(sim, "goodput_mbps"), num(emu, "goodput_mbps"));
        println!(
            "shaped VC: sim {a:.3} Mbit/s, emu {b:.3} Mbit/s (lag p99 {} us)",
            emu["switch"]["lag_p99_us"]
        );
        // 26 Mbit/s of cells carries 26 x 48/53 = 23.5 Mbit/s of AAL5 payload, less the padding
        // and trailers of 9180-byte frames.
        assert!(a > 22.5 && a < 23.6, "sim {a}");
        if close(a, b, 0.01, 0.0) {
            vec![]
        } else {
            vec![format!("sim {a} vs emu {b} Mbit/s")]
        }
    });
}

#[test]
fn sim_captures_open_in_tshark() {
    skip_if!(missing_tool("tshark"));
    let dir = tempfile::tempdir().unwrap();
    let file = frames_only("sandia-two-to-one-epd.toml", "20ms", dir.path());
    let cap = dir.path().join("cap");
    let docs = run(&file, "sim", &["--capture", cap.to_str().unwrap()]);
    let sent = num(frames_sample(&docs[0]), "frames_sent") as usize;
    let mut pcaps: Vec<PathBuf> = walk(&cap.join("sim"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    pcaps.sort();
    // One per link: three links, each way.
    assert!(pcaps.len() >= 3, "{pcaps:?}");
    let mut total = 0;
    for p in &pcaps {
        let out = Command::new("tshark")
            .args([
                "-r",
                p.to_str().unwrap(),
                "-T",
                "fields",
                "-e",
                "frame.number",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !err.contains("appears to"),
            "tshark {p:?}: {err}"
        );
        total += String::from_utf8_lossy(&out.stdout).lines().count();
        let proto = Command::new("tshark")
            .args([
                "-r",
                p.to_str().unwrap(),
                "-c",
                "1",
                "-T",
                "fields",
                "-e",
                "frame.protocols",
            ])
            .output()
            .unwrap();
        let proto = String::from_utf8_lossy(&proto.stdout);
        // SunATM headers: tshark decodes ATM, LLC/SNAP, IP, UDP.
        assert!(
            proto.is_empty() || proto.starts_with("atm:llc:ip:udp"),
            "{p:?}: {proto}"
        );
    }
    // Every frame the senders sent is on their links' captures, and more on the receiver's.
    assert!(total >= sent, "{total} frames captured, {sent} sent");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
