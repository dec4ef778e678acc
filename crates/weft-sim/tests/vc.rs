//! The simulator forwards by the planned circuits: the 3-switch, 12-host scenario of
//! `scenarios/vc-mesh-three-switches.toml` runs an all-to-all among its twelve hosts whose every
//! cell is switched by the plan's cross-connect tables (every table entry carries traffic, no
//! cell is on an unknown circuit), and the same run with the tables emptied does not finish.

use std::path::PathBuf;

use weft_model::scenario::Scenario;

fn scenario() -> (Scenario, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/vc-mesh-three-switches.toml");
    let text = std::fs::read_to_string(&path).expect("the scenario file");
    (
        Scenario::parse(&text, "vc-mesh-three-switches.toml").expect("the scenario parses"),
        text,
    )
}

#[test]
fn every_pair_exchanges_its_all_to_all_by_the_tables() {
    let (s, _) = scenario();
    let doc = weft_sim::scenario::run(&s, 1);
    let x = &doc.samples[0];
    assert!(x["mean_us"].as_f64().is_some(), "{x}");
    let vc = &x["vc"];
    // Every entry of every switch's table (each circuit's at each switch it crosses) carried
    // frames.
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

#[test]
fn without_circuits_between_the_sites_nothing_finishes() {
    // A plan of pairs within each switch only: the hosts have no circuit to the other switches.
    let (_, text) = scenario();
    let text = text.replace(
        "\nforward = \"mesh\"\n",
        "\nforward = \"pairs\"\npairs = [[\"sp2a\", \"sp2b\"]]\n",
    );
    let s = Scenario::parse(&text, "x.toml").expect("as planned");
    let doc = weft_sim::scenario::run(&s, 1);
    let x = &doc.samples[0];
    assert!(x["mean_us"].is_null(), "{x}");
    assert!(x.to_string().contains("did not finish"), "{x}");
}

/// `scenarios/vc-fail-middle-switch.toml`: bay2 fails 2 ms into the all-to-all for 5 ms; the
/// cells that reach it meanwhile are counted and dropped, its manager restores its table in two
/// control delays (200 us of simulated time), and the all-to-all still finishes.
#[test]
fn the_failed_middle_switch_drops_cells_and_is_restored_in_two_control_delays() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/vc-fail-middle-switch.toml");
    let text = std::fs::read_to_string(&path).expect("the scenario file");
    let s = Scenario::parse(&text, "vc-fail-middle-switch.toml").expect("the scenario parses");
    let doc = weft_sim::scenario::run(&s, 1);
    let x = &doc.samples[0];
    assert!(x["mean_us"].as_f64().is_some(), "finishes: {x}");
    assert_eq!(x["vc_restore_us"].as_f64(), Some(200.0), "{x}");
    let vc = &x["vc"];
    assert!(vc["cells_unknown"].as_u64().is_some_and(|c| c > 0), "{vc}");
    // Without the failure nothing is dropped and there is no restore.
    let (s, _) = scenario();
    let x = &weft_sim::scenario::run(&s, 1).samples[0];
    assert!(x["vc_restore_us"].is_null(), "{x}");
    assert_eq!(x["vc"]["cells_unknown"].as_u64(), Some(0), "{x}");
}

/// `[[vc.contract]]` on the mesh: one circuit shaped to 1 Mbit/s of cells holds up the
/// all-to-all (every rank waits for the slowest exchange), and the same contract policed loses
/// that circuit's frames at its first switch, so the all-to-all (over UDP, which does not
/// retransmit) never finishes.
#[test]
fn a_contract_on_one_circuit_shapes_or_polices_its_cells_at_its_first_switch() {
    let (s, text) = scenario();
    let free = weft_sim::scenario::run(&s, 1).samples[0].clone();
    let with = |police: &str| {
        let t = text.replace(
            "\nforward = \"mesh\"\n",
            &format!(
                "\nforward = \"mesh\"\n[[vc.contract]]\nfrom = \"sparc1\"\nto = \"fileserver\"\npcr = \"1Mbps\"\ncdvt = \"1us\"\npolice = {police}\n"
            ),
        );
        let s = Scenario::parse(&t, "x.toml").expect("as planned");
        weft_sim::scenario::run(&s, 1).samples[0].clone()
    };
    let shaped = with("false");
    let vc = &shaped["vc"];
    assert!(vc["cells_shaped"].as_u64().is_some_and(|c| c > 0), "{vc}");
    assert!(vc["cells_policed"].is_null(), "{vc}");
    let (a, b) = (free["mean_us"].as_f64(), shaped["mean_us"].as_f64());
    assert!(a.zip(b).is_some_and(|(a, b)| b > 2.0 * a), "{a:?} {b:?}");
    assert!(free["vc"]["cells_shaped"].is_null(), "{}", free["vc"]);
    let policed = with("true");
    assert!(policed["mean_us"].is_null(), "{policed}");
    assert!(policed.to_string().contains("did not finish"), "{policed}");
}

/// `scenarios/ebn-dstc-abr.toml`: the Alpha whose adapter is an ABR source loses no cell into
/// the 3.3 Mbit/s port and carries more than twice what the Alpha at the line rate does, which
/// overruns the port's queue and loses cells.
#[test]
fn abr_flow_control_keeps_an_unthrottled_alpha_from_overrunning_the_throttled_path() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ebn-dstc-abr.toml");
    let text = std::fs::read_to_string(&path).expect("the scenario file");
    let s = Scenario::parse(&text, "ebn-dstc-abr.toml").expect("the scenario parses");
    let doc = weft_sim::scenario::run(&s, 1);
    let (abr, plain) = (&doc.samples[0], &doc.samples[1]);
    assert_eq!(abr["cell_loss"].as_f64(), Some(0.0), "{abr}");
    assert!(
        plain["cell_loss"].as_f64().is_some_and(|l| l > 0.0),
        "{plain}"
    );
    let rate = |x: &serde_json::Value| x["payload_kib_s"].as_f64().expect("a rate");
    assert!(
        rate(abr) > 2.0 * rate(plain),
        "{} {}",
        rate(abr),
        rate(plain)
    );
    // Without `abr` on the host, the first Alpha fares as the second.
    let s = Scenario::parse(&text.replace("abr = { pcr", "# abr = { pcr"), "x.toml")
        .expect("as planned");
    let doc = weft_sim::scenario::run(&s, 1);
    assert!(
        doc.samples[0]["cell_loss"]
            .as_f64()
            .is_some_and(|l| l > 0.0)
    );
}

/// `scenarios/ebn-anspag-policed.toml`: into a contract that polices every data segment away,
/// the sender's 8 KiB writes fill its 35600-byte send buffer and no ACK ever frees it: four
/// writes return and the fifth blocks for good, so the application handed TCP 32 KiB (the
/// paper's FTP client showed about 30 KB before the transfer hung). Unpoliced, the writes keep
/// returning.
#[test]
fn a_hung_transfer_hands_tcp_one_send_buffer_of_whole_writes() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ebn-anspag-policed.toml");
    let text = std::fs::read_to_string(&path).expect("the scenario file");
    let handed = |text: &str| {
        let s = Scenario::parse(text, "x.toml").expect("the scenario parses");
        let doc = weft_sim::scenario::run(&s, 1);
        let x = &doc.samples[0];
        (x["goodput_mbps"].as_f64(), x["app_written_kib"].as_f64())
    };
    assert_eq!(handed(&text), (Some(0.0), Some(32.0)));
    let (goodput, written) = handed(&text.replace("police = true", "police = false"));
    assert!(goodput.is_some_and(|g| g > 1.0), "{goodput:?}");
    assert!(written.is_some_and(|w| w > 1000.0), "{written:?}");
}
