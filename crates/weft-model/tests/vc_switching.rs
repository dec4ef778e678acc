//! Switching by VPI/VCI in the shared fabric: the 3-switch, 12-host scenario whose switches
//! forward by its planned PVC mesh delivers a frame between every ordered pair of hosts by the
//! tables (every one of the 132 circuits used, nothing unknown), and a switch whose table is
//! cleared drops the cells of the circuits through it as unknown until the plan's table is back.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::PathBuf;

use weft_model::element::Element;
use weft_model::net::{Network, Topology, VcManaged, host_mac};
use weft_model::{Instant, Scenario};

fn scenario() -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/vc-mesh-three-switches.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    Scenario::parse(&text, "vc-mesh-three-switches.toml").unwrap()
}

fn frame(to: usize, from: usize) -> Vec<u8> {
    let mut f = vec![0u8; 200];
    f[0..6].copy_from_slice(&host_mac(to));
    f[6..12].copy_from_slice(&host_mac(from));
    f[12] = to as u8;
    f[13] = from as u8;
    f
}

/// Every host sends one frame to every other, from `at` (ns); runs until idle; the (to, from)
/// pairs delivered, sorted, and the instant it ended.
fn all_pairs(net: &mut Network<Vec<u8>>, at: u64) -> (Vec<(usize, usize)>, Instant) {
    let n = net.hosts();
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            net.handle_frame(Instant(at), a, frame(b, a));
        }
    }
    let mut got = Vec::new();
    let mut now = Instant(at);
    while let Some(t) = net.poll_timeout() {
        now = now.max(t);
        while let Some((h, _, f)) = net.poll_transmit(now) {
            assert_eq!(f[12] as usize, h, "delivered to the host it was for");
            got.push((h, f[13] as usize));
        }
    }
    got.sort();
    (got, now)
}

#[test]
fn every_pair_is_delivered_by_the_planned_tables() {
    let (topo, notes) = Topology::from_scenario(&scenario(), 1).unwrap();
    assert!(
        notes.iter().any(|n| n.contains("132 circuits")),
        "{notes:?}"
    );
    let mut net: Network<Vec<u8>> = Network::new(&topo).unwrap();
    let (got, _) = all_pairs(&mut net, 0);
    let want: Vec<(usize, usize)> = (0..12)
        .flat_map(|b| (0..12).filter(move |&a| a != b).map(move |a| (b, a)))
        .collect();
    assert_eq!(got, want);
    let v = net.vc_stats().unwrap();
    // Each of the 132 one-way circuits enters a table once per switch it crosses: its first
    // switch, and the middle and far ones on the way.
    assert_eq!((v.frames_unknown, v.unbound, v.misdelivered), (0, 0, 0));
    assert_eq!(v.frames, v.circuits_used as u64);
    let hops: usize = topo
        .circuits
        .as_ref()
        .unwrap()
        .tables
        .iter()
        .map(Vec::len)
        .sum();
    assert_eq!(v.circuits_used, hops);
    assert_eq!(net.runts(), 0);
}

#[test]
fn a_cleared_switch_drops_its_circuits_as_unknown_until_the_table_is_back() {
    let (topo, _) = Topology::from_scenario(&scenario(), 1).unwrap();
    let circuits = topo.circuits.clone().unwrap();
    let mut net: Network<Vec<u8>> = Network::new(&topo).unwrap();
    let mid = net.switch_index("bay2").unwrap();
    net.switch_mut(mid).unwrap().circuits_mut().unwrap().clear();
    let (got, end) = all_pairs(&mut net, 0);
    // Only the pairs on bay1 alone and on bay3 alone still talk: 2 x (4 x 3).
    assert_eq!(got.len(), 24);
    let lost = net.vc_stats().unwrap().frames_unknown;
    // 132 - 24 circuits cross bay2, each dropped there once.
    assert_eq!(lost, 108);
    net.switch_mut(mid)
        .unwrap()
        .circuits_mut()
        .unwrap()
        .install(&circuits.tables[mid], &[])
        .unwrap();
    let (got, _) = all_pairs(&mut net, end.0 + 1);
    assert_eq!(got.len(), 132);
    assert_eq!(net.vc_stats().unwrap().frames_unknown, 108);
}

#[test]
fn without_forward_the_switches_forward_by_mac() {
    let mut s = scenario();
    s.vc_forward = None;
    let (topo, _) = Topology::from_scenario(&s, 1).unwrap();
    let mut net: Network<Vec<u8>> = Network::new(&topo).unwrap();
    assert!(net.vc_stats().is_none());
    assert_eq!(all_pairs(&mut net, 0).0.len(), 132);
}

#[test]
fn labels_survive_an_input_queued_fabric() {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/vc-mesh-three-switches.toml"),
    )
    .unwrap()
    .replace("fabric = \"output-queued\"", "fabric = \"voq\"");
    let s = Scenario::parse(&text, "voq.toml").unwrap();
    let (topo, _) = Topology::from_scenario(&s, 1).unwrap();
    let mut net: Network<Vec<u8>> = Network::new(&topo).unwrap();
    assert_eq!(all_pairs(&mut net, 0).0.len(), 132);
    assert_eq!(net.vc_stats().unwrap().frames_unknown, 0);
}

#[test]
fn the_manager_gives_a_switch_that_lost_its_pvcs_its_table_back() {
    use weft_model::vc::{Manager, Shape, plan};
    let s = scenario();
    let p = plan(s.vc.as_ref().unwrap(), &Shape::Mesh).unwrap();
    let (topo, _) = Topology::from_scenario(&s, 1).unwrap();
    let mut net: Network<Vec<u8>> = Network::new(&topo).unwrap();
    let mut m = Manager::new(&p, &[]);
    let held = |net: &Network<Vec<u8>>, name: &str| {
        let i = net.switch_index(name).unwrap();
        net.switch(i).unwrap().circuits().unwrap().held()
    };
    for t in &p.tables {
        let s = m.switch_index(&t.switch).unwrap();
        m.handle_hello(Instant(0), s, held(&net, &t.switch));
    }
    assert!(m.all_installed());
    // bay2 restarts: every PVC through it is gone, and it says hello to its manager empty.
    let mid = net.switch_index("bay2").unwrap();
    net.switch_mut(mid).unwrap().circuits_mut().unwrap().clear();
    let (got, end) = all_pairs(&mut net, 0);
    assert_eq!(got.len(), 24);
    let ms = m.switch_index("bay2").unwrap();
    m.handle_hello(end, ms, held(&net, "bay2"));
    while let Some(push) = m.poll_push() {
        let name = p.tables[push.switch].switch.clone();
        let i = net.switch_index(&name).unwrap();
        let vc = net.switch_mut(i).unwrap().circuits_mut().unwrap();
        vc.install(&push.entries, &push.contracts).unwrap();
        m.handle_ack(Instant(end.0 + 1_000), push.switch, held(&net, &name));
    }
    assert!(m.all_installed());
    assert_eq!(m.restores.len(), 1);
    assert_eq!(m.restores[0].restore_time().as_nanos(), 1_000);
    assert_eq!(all_pairs(&mut net, end.0 + 2_000).0.len(), 132);
}

/// The scenario with `[vc] fail`: bay2 fails at 1 ms for 2 ms; the control channel's one-way
/// delay is 100 us.
fn failing() -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/vc-mesh-three-switches.toml");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "\nforward = \"mesh\"\n",
        "\nforward = \"mesh\"\nfail = { switch = \"bay2\", at = \"1ms\", for = \"2ms\", control_delay = \"100us\" }\n",
    );
    Scenario::parse(&text, "vc-fail.toml").unwrap()
}

/// [`all_pairs`] through an element (the managed network), from `at` until `until` (ns).
fn all_pairs_until(net: &mut VcManaged<Vec<u8>>, at: u64, until: u64) -> usize {
    let n = net.net.hosts();
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            net.handle_input(Instant(at), a, frame(b, a));
        }
    }
    let mut got = 0;
    while let Some(t) = net.poll_timeout().filter(|t| t.0 <= until) {
        while let Some((h, _, f)) = net.poll_output_due(t) {
            assert_eq!(f[12] as usize, h, "delivered to the host it was for");
            got += 1;
        }
    }
    got
}

#[test]
fn a_failed_switch_is_restored_by_its_manager_in_simulated_time() {
    let s = failing();
    let f = s.vc_failure.clone().unwrap();
    assert_eq!(
        (f.switch.as_str(), f.at.as_nanos(), f.down.as_nanos()),
        ("bay2", 1_000_000, 2_000_000)
    );
    let (topo, _) = Topology::from_scenario(&s, 1).unwrap();
    let mut net = VcManaged::new(Network::<Vec<u8>>::new(&topo).unwrap(), &topo);
    assert_eq!(
        all_pairs_until(&mut net, 0, 900_000),
        132,
        "before the failure"
    );
    assert_eq!(
        all_pairs_until(&mut net, 1_500_000, 2_900_000),
        24,
        "bay2 is down"
    );
    assert_eq!(net.net.vc_stats().unwrap().frames_unknown, 108);
    // Back at 3 ms: the hello reaches the manager at 3.1 ms, the table bay2 at 3.2 ms, the
    // acknowledgement the manager at 3.3 ms.
    assert!(net.restore().is_none());
    assert_eq!(
        all_pairs_until(&mut net, 3_400_000, 10_000_000),
        132,
        "restored"
    );
    let r = net.restore().unwrap();
    assert_eq!(r.switch, "bay2");
    assert_eq!(r.lost_at, Some(Instant(1_000_000)));
    assert_eq!(r.hello_at, Instant(3_100_000));
    assert_eq!(r.restore_time().as_nanos(), 200_000, "two control delays");
    assert_eq!(
        net.net.vc_stats().unwrap().frames_unknown,
        108,
        "nothing lost after"
    );
}

/// The failing scenario with bay2 policing the circuit sp2a -> sparc3 at 1 Mbit/s of cells: of
/// each 200-byte frame's five cells, 2.8 us apart on OC-3c, only the first conforms, and the
/// frame is lost. The manager gives bay2 its contract back with its table: after the restore the
/// circuit is policed as before (without the contract it would deliver all 132 frames).
#[test]
fn a_restored_switch_gets_its_contracts_back_with_its_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/vc-mesh-three-switches.toml");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "\nforward = \"mesh\"\n",
        "\nforward = \"mesh\"\nfail = { switch = \"bay2\", at = \"1ms\", for = \"2ms\", control_delay = \"100us\" }\n\
         [[vc.contract]]\nfrom = \"sp2a\"\nto = \"sparc3\"\nswitch = \"bay2\"\npcr = \"1Mbps\"\npolice = true\n",
    );
    let s = Scenario::parse(&text, "vc-fail-policed.toml").unwrap();
    let (topo, _) = Topology::from_scenario(&s, 1).unwrap();
    let mut net = VcManaged::new(Network::<Vec<u8>>::new(&topo).unwrap(), &topo);
    let bay2 = net.net.switch_index("bay2").unwrap();
    let contracts = |net: &VcManaged<Vec<u8>>| {
        let v = net.net.switch(bay2).unwrap().circuits().unwrap();
        v.held().contracts
    };
    assert_eq!(contracts(&net), 1);
    assert_eq!(all_pairs_until(&mut net, 0, 900_000), 131, "policed");
    assert_eq!(net.net.vc_stats().unwrap().cells_policed, 4);
    assert_eq!(all_pairs_until(&mut net, 1_500_000, 2_900_000), 24);
    assert_eq!(contracts(&net), 0, "bay2 lost its contract with its table");
    assert_eq!(
        all_pairs_until(&mut net, 3_400_000, 10_000_000),
        131,
        "restored, policed again"
    );
    assert_eq!(contracts(&net), 1);
    assert_eq!(net.net.vc_stats().unwrap().cells_policed, 8);
    assert_eq!(net.restore().unwrap().restore_time().as_nanos(), 200_000);
}

#[test]
fn a_failure_needs_a_switch_of_the_database_and_a_plan_to_forward_by() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/vc-mesh-three-switches.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let bad = |fail: &str, forward: &str| {
        let t = text.replace(
            "\nforward = \"mesh\"\n",
            &format!("\n{forward}\nfail = {fail}\n"),
        );
        Scenario::parse(&t, "vc-fail.toml").unwrap_err().to_string()
    };
    let fwd = "forward = \"mesh\"";
    let e = bad(r#"{ switch = "bay9", at = "1ms", for = "1ms" }"#, fwd);
    assert!(e.contains("no switch of [vc] is called \"bay9\""), "{e}");
    let e = bad(r#"{ switch = "bay2", at = "1ms" }"#, fwd);
    assert!(e.contains("fail: expected"), "{e}");
    let e = bad(
        r#"{ switch = "bay2", at = "1ms", for = "1ms", when = 3 }"#,
        fwd,
    );
    assert!(e.contains("unknown key \"when\""), "{e}");
    let e = bad(r#"{ switch = "bay2", at = "1ms", for = "1ms" }"#, "");
    assert!(e.contains("only with `forward`"), "{e}");
}
