//! `scenarios/vc-fail-middle-switch.toml` on both engines (issue 28): `weft run --engine
//! sim,emu` fails the middle switch of the 3-switch PVC mesh as the file's `[vc] fail` says on
//! each: on the emulator through `weft emu fail`'s path under a connection manager of the run's
//! own, which restores the switch's table without any manual step. Each engine reports the
//! cells the cleared switch dropped (`vc.cells_unknown`) and the restore time (`vc_restore_us`),
//! the all-to-all finishes over the same circuits, and Sandia's check `000.pvc.cms_loss` holds
//! on both. Needs root (network namespaces); the run is bounded (a time-out kills it) and takes
//! its emulation down itself; its state directory and temporary directory are checked empty.

use std::process::Command;
use std::time::{Duration, Instant};

use weft_testutil::{missing_root, skip_if};

const BIN: &str = env!("CARGO_BIN_EXE_weft");

#[test]
fn the_failed_middle_switch_drops_cells_and_is_restored_on_sim_and_emu() {
    skip_if!(missing_root("the emulator (network namespaces)"));
    let dir = tempfile::tempdir().expect("tempdir");
    let (state, tmp) = (dir.path().join("state"), dir.path().join("tmp"));
    std::fs::create_dir_all(&tmp).expect("a temporary directory");
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/vc-fail-middle-switch.toml"
    );
    // Into files: a pipe nobody reads while the run lasts would fill up and stop it.
    let (json, log) = (dir.path().join("out.json"), dir.path().join("err.log"));
    let mut child = Command::new(BIN)
        .args(["-q", "run", file, "--engine", "sim,emu", "--json"])
        .env("WEFT_EMU_STATE_DIR", &state)
        .env("TMPDIR", &tmp)
        .stdout(std::fs::File::create(&json).expect("a file"))
        .stderr(std::fs::File::create(&log).expect("a file"))
        .spawn()
        .expect("weft run");
    // A run takes a few seconds; two minutes allows for a loaded machine.
    let start = Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let _ = child.wait();
            panic!("weft run did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = child.wait().expect("its status");
    let err = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "{status}: {err}");
    let text = std::fs::read(&json).expect("its output");
    let docs: Vec<serde_json::Value> = serde_json::from_slice(&text).expect("two documents");
    assert_eq!(docs.len(), 2, "{docs:?}");
    for d in &docs {
        let engine = d["engine"].as_str().expect("an engine");
        let x = &d["samples"][0];
        assert!(x["mean_us"].as_f64().is_some(), "{engine} finishes: {x}");
        let vc = &x["vc"];
        assert_eq!(vc["circuits_used"].as_u64(), Some(260), "{engine}: {vc}");
        assert!(
            vc["cells_unknown"].as_u64().is_some_and(|c| c > 0)
                && vc["frames_unknown"].as_u64().is_some_and(|f| f > 0),
            "{engine}: the cleared switch drops what reaches it: {vc}"
        );
        assert_eq!(vc["misdelivered"].as_u64(), Some(0), "{engine}: {vc}");
        assert!(
            x["vc_restore_us"].as_f64().is_some_and(|r| r > 0.0),
            "{engine} reports the restore: {x}"
        );
        let check = &d["summary"]["check"][0];
        assert_eq!(check["item"], "000.pvc.cms_loss", "{engine}: {check}");
        assert_eq!(check["held"], true, "{engine}: {check}");
        eprintln!(
            "{engine}: cells_unknown {}, frames_unknown {}, vc_restore_us {}, mean_us {}",
            vc["cells_unknown"], vc["frames_unknown"], x["vc_restore_us"], x["mean_us"]
        );
    }
    let emu = docs
        .iter()
        .find(|d| d["engine"] == "emu")
        .expect("the emulator's");
    let note = emu["samples"][0]["notes"].to_string();
    assert!(
        note.contains("weft emu fail") && note.contains("bay2 cleared"),
        "{note}"
    );
    // The manager's socket and the run's records and sockets are gone.
    let left = |d: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(left(&tmp), Vec::<String>::new());
    assert_eq!(left(&state), Vec::<String>::new());
}
