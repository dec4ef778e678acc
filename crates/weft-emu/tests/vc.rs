//! The emulator's switches forward by the planned circuits: the 3-switch, 12-host scenario of
//! `scenarios/vc-mesh-three-switches.toml` runs an all-to-all among twelve namespaced Linux hosts
//! whose every frame is switched by the plan's cross-connect tables: the run finishes, every
//! table entry carried traffic and no frame was on an unknown circuit. A circuit under a policed
//! traffic contract loses its cells at its first switch; one under a tagging contract carries
//! them on, tagged.
//! Needs root (network namespaces); says `skipped` without it unless WEFT_TEST_STRICT=1.

mod common;

use weft_model::Scenario;

/// `scenarios/vc-mesh-three-switches.toml`, parsed.
fn mesh_scenario() -> Scenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/vc-mesh-three-switches.toml"
    );
    let text = std::fs::read_to_string(path).expect("the scenario file");
    Scenario::parse(&text, path).expect("the scenario parses")
}

#[test]
fn every_pair_exchanges_its_all_to_all_by_the_tables() {
    require_root!();
    let _g = common::serial();
    let s = mesh_scenario();
    let doc = weft_emu::scenario::run(&s, &Default::default()).expect("emu run");
    let x = &doc.samples[0];
    assert!(x["mean_us"].as_f64().is_some_and(|m| m > 0.0), "{x}");
    let vc = &x["vc"];
    let entries = weft_model::vc::plan(
        s.vc.as_ref().expect("as planned"),
        &weft_model::vc::Shape::Mesh,
    )
    .expect("as planned")
    .counts
    .entries as u64;
    assert_eq!(vc["circuits_used"].as_u64(), Some(entries), "{vc}");
    assert_eq!(vc["frames_unknown"].as_u64(), Some(0), "{vc}");
    assert_eq!(vc["unbound"].as_u64(), Some(0), "{vc}");
    assert_eq!(vc["misdelivered"].as_u64(), Some(0), "{vc}");
    assert!(
        vc["frames"].as_u64().expect("as planned") > 12 * 11 * 20,
        "{vc}"
    );
}

/// The mesh scenario with one contract of 1 Mbit/s of cells on the circuit `from` -> `to`,
/// enforced at `at` (its first switch if empty): `police` is the contract's `police` value.
fn mesh_with_contract(from: &str, to: &str, at: &str, police: &str) -> Scenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/vc-mesh-three-switches.toml"
    );
    let switch = if at.is_empty() {
        String::new()
    } else {
        format!("switch = \"{at}\"\n")
    };
    let text = std::fs::read_to_string(path)
        .expect("the scenario file")
        .replace(
            "\nforward = \"mesh\"\n",
            &format!(
                "\nforward = \"mesh\"\n[[vc.contract]]\nfrom = \"{from}\"\nto = \"{to}\"\n{switch}\
                 pcr = \"1Mbps\"\ncdvt = \"1us\"\npolice = {police}\n"
            ),
        );
    Scenario::parse(&text, path).expect("the scenario parses")
}

/// Through weft's switch on the emulator, a policed circuit loses the cells that break its
/// contract: a ping is a few cells back to back on OC-3c (2.8 us apart, against the contract's
/// 424 us), so all but its first cell break it and the frame never arrives; sparc2's circuit to
/// the same host, through the same switches, has no contract and carries its ping. Tagged
/// instead, the same ping arrives with its cells tagged. The counters are the switch's.
#[test]
fn a_policed_circuit_drops_its_cells_and_a_tagged_one_marks_them() {
    require_root!();
    let _g = common::serial();
    for police in ["true", "\"tag\""] {
        let s = mesh_with_contract("sparc1", "fileserver", "", police);
        let (topo, _) = weft_emu::scenario::topology(&s, s.seed).expect("a topology");
        let ((policed, free), report) = common::with_emulation(&topo, |emu| {
            // Three tries each: the first ping of a pair may wait for the host's neighbour entry.
            let policed = (0..3).any(|_| ping(emu, "sparc1", "fileserver", 1));
            let free = (0..3).any(|_| ping(emu, "sparc2", "fileserver", 1));
            Ok((policed, free))
        });
        let vc = report.vc.expect("the switches forward by circuits");
        eprintln!("police = {police}: {vc:?}");
        assert!(
            free,
            "police = {police}: the circuit without a contract carries its ping"
        );
        if police == "true" {
            assert!(!policed, "the policed circuit's pings are lost");
            assert!(vc.cells_policed > 0 && vc.frames_policed > 0, "{vc:?}");
            assert_eq!(vc.frames_tagged, 0, "{vc:?}");
        } else {
            assert!(policed, "a tagged ping still arrives");
            assert!(vc.cells_policed > 0 && vc.frames_tagged > 0, "{vc:?}");
            assert_eq!(vc.frames_policed, 0, "{vc:?}");
        }
    }
}

/// Whether one ping from `from` reaches `to` within `wait_s` seconds.
fn ping(emu: &weft_emu::Emulation, from: &str, to: &str, wait_s: u32) -> bool {
    let addr = emu.host(to).expect("a host").addr.to_string();
    let args = ["-c", "1", "-W", &wait_s.to_string(), &addr].map(String::from);
    emu.command(from, "ping", &args)
        .expect("a host")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The connection manager installs the switches' tables and contracts and restores the middle
/// switch's after `weft emu fail` (what `weft emu fail bay2 --for 500ms` does): with no manager
/// the switches hold nothing and no ping crosses; with one, sp2a (bay1) reaches sparc3 (bay3)
/// through bay2, and sp2b's circuit to sparc4, policed at bay2 to 1 Mbit/s of cells, loses its
/// pings; while bay2 is down the ping is lost; it comes back with its whole table and its
/// contract, without any manual step: the ping crosses again and sp2b's are still policed. Bounded: every wait has a limit, and the emulation is torn
/// down (and checked gone) whatever happens.
#[test]
fn a_failed_switch_gets_its_table_back_from_the_manager() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use weft_emu::vc_agent::{ManagerLink, fail};
    use weft_gate::auth::Key;

    require_root!();
    let _g = common::serial();
    let s = mesh_with_contract("sp2b", "sparc4", "bay2", "true");
    let (topo, _) = weft_emu::scenario::topology(&s, s.seed).expect("a topology");
    let plan = weft_model::vc::plan(s.vc.as_ref().expect("[vc]"), &weft_model::vc::Shape::Mesh)
        .expect("a plan");
    let contracts = weft_model::vc::resolve_all(&s.vc_contracts, &plan).expect("resolved");
    assert_eq!(contracts.len(), 1);
    let bay2 = plan
        .tables
        .iter()
        .find(|t| t.switch == "bay2")
        .expect("bay2's table")
        .entries
        .len();
    let dir = std::env::temp_dir().join(format!("weft-vc-manager-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let socket = dir.join("manager.sock");
    let key = Key::from_derived([9; 32]);
    let opts = weft_emu::UpOptions {
        vc_manager: Some(ManagerLink {
            socket: socket.clone(),
            key: key.clone(),
        }),
        ..Default::default()
    };
    let stop = AtomicBool::new(false);
    let ((report, restores), _) = common::with_emulation_opts(&topo, &opts, |emu| {
        assert!(!ping(emu, "sp2a", "sparc3", 1), "no manager, no tables");
        let listener = std::os::unix::net::UnixListener::bind(&socket).expect("the socket");
        std::thread::scope(|sc| {
            let manager = sc.spawn(|| {
                weft_emu::vc_manager::serve(&listener, &plan, &contracts, &key, &stop, &|_, _| {})
            });
            let stopped = || stop.store(true, Ordering::Relaxed);
            let reached = (0..10).any(|_| ping(emu, "sp2a", "sparc3", 1));
            let policed = (0..3).any(|_| ping(emu, "sp2b", "sparc4", 1));
            if !reached || policed {
                stopped();
            }
            assert!(reached, "the manager's tables carry the ping");
            assert!(!policed, "the manager's contract polices sp2b's circuit");
            let failing = sc.spawn(|| fail(emu.run_id(), "bay2", 1_000_000_000));
            std::thread::sleep(std::time::Duration::from_millis(200));
            let during = ping(emu, "sp2a", "sparc3", 1);
            let report = failing.join().expect("the fail thread");
            let after = ping(emu, "sp2a", "sparc3", 2);
            let policed_after = (0..3).any(|_| ping(emu, "sp2b", "sparc4", 1));
            stopped();
            let restores = manager.join().expect("the manager").expect("served");
            assert!(!during, "bay2 is down: its table is gone");
            assert!(after, "bay2 is back with its table");
            assert!(!policed_after, "bay2 is back with its contract");
            Ok((report.expect("restored"), restores))
        })
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(report.switch, "bay2");
    assert_eq!(report.entries, bay2, "the whole table");
    assert_eq!(report.contracts, 1, "and its contract");
    assert!(report.down_ns >= 1_000_000_000, "{report:?}");
    assert!(
        report.restore_ns > 0 && report.restore_ns < 2_000_000_000,
        "{report:?}"
    );
    // The manager saw bay2 go and come back: the three first installs, then bay2's restore.
    assert_eq!(restores.len(), 4, "{restores:?}");
    let r = &restores[3];
    assert_eq!(r.switch, "bay2");
    assert!(r.lost_at.is_some_and(|l| l < r.hello_at), "{r:?}");
    eprintln!(
        "bay2 down {} ms, restored in {} us at the switch, {} us at the manager ({} entries, {} \
         contracts)",
        report.down_ns / 1_000_000,
        report.restore_ns / 1000,
        r.restore_time().as_nanos() / 1000,
        report.entries,
        report.contracts
    );
}
