//! The deterministic tables of `weft calc`, `weft sim` and `weft run`, snapshot-tested with
//! `insta`: a fixed seed gives the same table on every machine, so any change to a model, the
//! simulator or the table layout shows up as a diff of `tests/snapshots/*.snap` to review (and
//! accept with `cargo insta review`, or `INSTA_UPDATE=always cargo test -p weft --test
//! tables_snapshot`). Small slot counts keep each run to a second or so.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

/// Runs `weft ARGS` from the repository root and returns its stdout, which must be a success.
fn table(args: &[&str]) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = common::weft()
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "weft {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn calc_tables() {
    insta::assert_snapshot!(
        "calc_overhead_oc3c",
        table(&["calc", "overhead", "--tech", "oc3c", "--mtu", "9180"])
    );
    insta::assert_snapshot!(
        "calc_window_e3",
        table(&[
            "calc",
            "window",
            "--rtt",
            "17ms",
            "--window",
            "35600,64KiB,128KiB",
            "--tech",
            "e3",
            "--link-rate",
            "26Mbps",
        ])
    );
    insta::assert_snapshot!(
        "calc_hol_simulated",
        table(&[
            "calc",
            "hol",
            "--outputs",
            "5",
            "--inputs",
            "1-5",
            "--simulate"
        ])
    );
}

#[test]
fn sim_tables() {
    insta::assert_snapshot!(
        "sim_hol",
        table(&["sim", "hol", "--ports", "1-4", "--slots", "1e4"])
    );
    insta::assert_snapshot!(
        "sim_contention",
        table(&[
            "sim",
            "contention",
            "--inputs",
            "4",
            "--outputs",
            "5",
            "--slots",
            "1e4"
        ])
    );
    insta::assert_snapshot!(
        "sim_oq",
        table(&[
            "sim", "oq", "--ports", "8", "--loads", "0.5,0.9", "--slots", "1e4"
        ])
    );
    insta::assert_snapshot!(
        "sim_islip",
        table(&[
            "sim", "islip", "--ports", "8", "--loads", "0.5,0.9", "--slots", "1e4"
        ])
    );
    insta::assert_snapshot!("sim_epd", table(&["sim", "epd", "--slots", "1e4"]));
}

#[test]
fn run_model_and_sim_side_by_side() {
    insta::assert_snapshot!(
        "run_gigaswitch_contention",
        table(&[
            "run",
            "scenarios/gigaswitch-contention.toml",
            "--engine",
            "model,sim"
        ])
    );
}

/// A sweep of request/response sizes over TCP prints its round-trip table on each engine: the
/// paper beside model and sim, then every engine's round trips per size (mean, min, p50, p99,
/// loss; the model's split into propagation, serialisation, switching, hosts and waiting).
#[test]
fn run_rr_tables_on_model_and_sim() {
    insta::assert_snapshot!(
        "run_sandia_echo_tcp",
        table(&["run", "scenarios/sandia-echo.toml", "--engine", "model,sim"])
    );
}
