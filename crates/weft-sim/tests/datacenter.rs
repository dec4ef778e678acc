//! Datacenter fabrics on the simulator (issue 29): the permutation and incast scenarios' results
//! held to what they claim.

use weft_model::scenario::Scenario;

fn run(file: &str) -> Vec<serde_json::Value> {
    let path = format!("{}/../../scenarios/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the scenario file");
    let s = Scenario::parse(&text, &path).expect("a valid scenario");
    weft_sim::scenario::run(&s, s.seed).samples
}

fn f(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"))
}

#[test]
fn spraying_completes_a_permutation_sooner_than_per_flow_ecmp() {
    let s = run("fabric-permutation.toml");
    let (ecmp, spray) = (&s[0], &s[1]);
    for w in [ecmp, spray] {
        assert_eq!(f(w, "flows_completed"), 16.0);
        assert!(f(w, "ideal_fct_us") > 0.0, "{w}");
        assert!(f(w, "fct_p50_us") >= f(w, "ideal_fct_us"), "{w}");
    }
    // ECMP's collisions leave some flows half a link: its median and last flows finish later
    // and its flows' goodputs are less even.
    assert!(f(ecmp, "fct_p50_us") > 1.2 * f(spray, "fct_p50_us"));
    assert!(f(ecmp, "fct_max_us") > 1.2 * f(spray, "fct_max_us"));
    assert!(f(ecmp, "goodput_jain") < f(spray, "goodput_jain"));
}

#[test]
fn a_sized_flow_permutation_reports_the_ideal_of_its_first_flows_path() {
    // NDP's sized flows, every host sending to its partner: the ideal is the first sender's
    // path to its partner (it was the path from host 0 to itself, which has none: 0).
    let text = r#"
name = "p16-ndp"
seed = 1
[fabric]
topology = "fat-tree"
k = 4
host_link = { tech = "10gige", delay = "1us", mtu = 9000 }
switch = { buffer = "8 frames", trim = true }
multipath = "spray"
[[workload]]
kind = "tput"
traffic = "permutation"
flow_size = "200KB"
transport = "ndp"
time = "10ms"
"#;
    let s = Scenario::parse(text, "p16-ndp.toml").expect("a valid scenario");
    let w = &weft_sim::scenario::run(&s, s.seed).samples[0];
    assert_eq!(f(w, "flows_completed"), 16.0);
    // 200 KB at 10 Gbit/s less the headers of 9000-byte frames, and the round trip.
    let ideal = f(w, "ideal_fct_us");
    assert!(ideal > 160.0 && ideal < 180.0, "{w}");
    assert!(f(w, "fct_p50_us") >= ideal, "{w}");
    assert!(f(w, "slowdown_p50") >= 1.0, "{w}");
}

#[test]
fn dctcp_incast_finishes_near_the_fair_share_ideal_and_cubic_waits_for_a_timeout() {
    let s = run("fabric-incast-lossy.toml");
    let (dctcp, cubic) = (&s[0], &s[1]);
    // Fifteen flows of 450 KB into one 10 Gbit/s port: together after 15 x 450 KB.
    let fair = 15.0 * 450_000.0 * 8.0 / 10e3;
    let last = f(dctcp, "fct_max_us");
    assert!(last > fair && last < 1.1 * fair, "{last} against {fair}");
    assert!(f(dctcp, "frames_marked") > 0.0);
    // Cubic overflows the 100-frame buffer and a flow waits out a 200 ms minimum RTO.
    assert!(f(cubic, "frames_dropped") > 10.0 * f(dctcp, "frames_dropped").max(1.0));
    assert!(f(cubic, "fct_max_us") > 200_000.0);
}

#[test]
fn dcqcn_incast_cuts_its_rates_on_cnps_and_every_flow_completes() {
    let s = run("fabric-incast-lossy.toml");
    let dcqcn = &s[2];
    let fair = 15.0 * 450_000.0 * 8.0 / 10e3;
    assert_eq!(f(dcqcn, "flows_completed"), 15.0);
    // The switches marked, h0 sent CNPs, and the senders cut their rates: all fifteen end
    // within twice the fair share although the lossy fabric drops and go-back-N sends again.
    assert!(
        f(dcqcn, "frames_marked") > 0.0 && f(dcqcn, "cnps") > 0.0,
        "{dcqcn}"
    );
    let last = f(dcqcn, "fct_max_us");
    assert!(last > fair && last < 2.0 * fair, "{last} against {fair}");
    assert!(f(dcqcn, "goodput_jain") > 0.95, "{dcqcn}");
}

#[test]
fn over_pfc_ndp_dctcp_and_dcqcn_lose_nothing_and_the_pauses_are_counted() {
    let lossless = run("fabric-incast.toml");
    let lossy = run("fabric-incast-lossy.toml");
    let fair = 15.0 * 450_000.0 * 8.0 / 10e3;
    for w in &lossless {
        assert_eq!(f(w, "flows_completed"), 15.0, "{w}");
        // Nothing dropped anywhere: not at a queue, not beyond an input's headroom.
        assert_eq!(f(w, "frames_dropped"), 0.0, "{w}");
        assert_eq!(f(w, "pfc_headroom_drops"), 0.0, "{w}");
        assert!(w["pfc_deadlock"].is_null(), "{w}");
        let last = f(w, "fct_max_us");
        assert!(
            last > fair && last < 1.5 * fair,
            "{last} against {fair}: {w}"
        );
    }
    // The incast fills h0's queue past the inputs' XOFF: pauses were sent and held ports.
    let (ndp, dcqcn) = (&lossless[0], &lossless[2]);
    assert!(
        f(ndp, "pfc_pause_us") > 0.0 && f(ndp, "pfc_frames_sent") > 0.0,
        "{ndp}"
    );
    assert!(f(dcqcn, "pfc_pause_us") > 0.0, "{dcqcn}");
    // DCQCN on the same fabric without PFC drops and goes back. Over PFC it loses nothing; the
    // few packets it sends again are its 1 ms timer firing while a pause holds its packets in
    // the NIC (which, unlike a RoCE NIC, does not hold the sender back): a tenth at most.
    let again = f(&lossy[2], "retransmits");
    assert!(f(&lossy[2], "frames_dropped") > 0.0 && again > 0.0);
    assert!(f(dcqcn, "retransmits") < again / 10.0, "{dcqcn}");
}

#[test]
fn dcqcn_over_pfc_at_the_emulators_rate_finishes_every_flow() {
    // fabric-incast.toml as `--as-emu` runs it: 100 Mbit/s links, time x 100. The paper's
    // DCQCN parameters, set for 10 Gbit/s, are slowed down as much (dcqcn::Params::slowed):
    // unscaled, its 1 ms time-out fired under PFC's pauses and go-back-N kept the fabric full,
    // 0 of 15 flows finishing in 100 s.
    let path = format!(
        "{}/../../scenarios/fabric-incast.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("the scenario file");
    let (s, _) = Scenario::parse(&text, &path)
        .expect("a valid scenario")
        .as_emulated(false);
    let dcqcn = &weft_sim::scenario::run(&s, s.seed).samples[2];
    assert_eq!(f(dcqcn, "flows_completed"), 15.0, "{dcqcn}");
    // Together after 15 x 450 KB at 100 Mbit/s (540 ms); at 10 Gbit/s the last flow takes 7.2 ms
    // against 5.7, so within 1.5 times the fair share here too.
    let fair = 15.0 * 450_000.0 * 8.0 / 100.0;
    let last = f(dcqcn, "fct_max_us");
    assert!(last > fair && last < 1.5 * fair, "{last} against {fair}");
    assert!(f(dcqcn, "timeouts") < 15.0, "{dcqcn}");
}
