//! Shared helpers of the emulator's integration tests: skipping without root, serialising the
//! tests (they measure timing), and checking that nothing leaks.

#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};

use weft_emu::{EmuError, Emulation, HostSpec, LinkSpec, Topology, UpOptions, netns};

static SERIAL: Mutex<()> = Mutex::new(());

/// Takes the lock that keeps timing tests from running at the same time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `Some(reason)` when this machine cannot run emulations.
pub fn skip_reason() -> Option<String> {
    match netns::preflight() {
        Ok(()) => None,
        Err(e) => Some(e.to_string()),
    }
}

/// Returns early from a test, saying why, when emulation is impossible here.
#[macro_export]
macro_rules! require_root {
    () => {
        if let Some(reason) = common::skip_reason() {
            weft_testutil::skip(&reason);
            return;
        }
    };
}

/// Root-namespace links whose names the emulator might leak.
pub fn suspicious_root_links() -> Vec<String> {
    netns::ip(&["-br", "link"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .filter(|n| n.starts_with('p') && n[1..].parse::<u32>().is_ok())
        .collect()
}

/// Hosts named `names`, all with `link`.
pub fn star(names: &[&str], link: LinkSpec) -> Topology {
    Topology::star(
        names
            .iter()
            .map(|n| HostSpec {
                name: n.to_string(),
                addr: None,
                link: link.clone(),
                switch: 0,
            })
            .collect(),
        Default::default(),
        42,
    )
}

/// Brings `topo` up, runs `f`, takes it down, and checks that the run's namespaces and any
/// root-namespace links are gone. Returns `f`'s value and the switch report.
pub fn with_emulation<R>(
    topo: &Topology,
    f: impl FnOnce(&Emulation) -> Result<R, EmuError>,
) -> (R, weft_emu::driver::DriverReport) {
    with_emulation_opts(topo, &UpOptions::default(), f)
}

/// [`with_emulation`] with bring-up options of the caller's.
pub fn with_emulation_opts<R>(
    topo: &Topology,
    opts: &UpOptions,
    f: impl FnOnce(&Emulation) -> Result<R, EmuError>,
) -> (R, weft_emu::driver::DriverReport) {
    let links_before = suspicious_root_links();
    let emu = Emulation::up(topo, opts).expect("emulation comes up");
    let id = emu.run_id().to_string();
    let ns = netns::list_namespaces();
    assert_eq!(
        ns.iter()
            .filter(|n| netns::run_id_of(n) == Some(id.as_str()))
            .count(),
        topo.hosts.len() + 1,
        "namespaces of run {id}: {ns:?}"
    );
    let r = f(&emu);
    let report = emu.down().expect("switch report");
    let after = netns::list_namespaces();
    assert!(
        !after
            .iter()
            .any(|n| netns::run_id_of(n) == Some(id.as_str())),
        "leaked namespaces of run {id}: {after:?}"
    );
    assert_eq!(
        suspicious_root_links(),
        links_before,
        "links leaked into the root namespace"
    );
    (r.expect("workload"), report)
}
