//! Tests of a switch with forwarding processors (a store-and-forward router,
//! [`Forwarder`]) inside a network: the time each packet costs it, the pace it sets, the
//! packets its queue drops, and that it stores a packet of cells whole.

use super::tests::{dumbbell, frame, hosts_on, run};
use super::*;
use crate::time::{Duration, Instant};
use crate::units::Rate;

fn router(per_packet_us: u64, per_byte_ps: u64, queue: Option<u32>) -> ForwardingSpec {
    ForwardingSpec {
        per_packet: Duration::from_micros(per_packet_us),
        per_byte_ps,
        processors: 1,
        queue,
    }
}

/// A 1250-byte frame's IP packet (1236 bytes) at 1 ns a byte.
const PER_BYTE_NS: u64 = 1236;

#[test]
fn a_router_adds_its_per_packet_and_per_byte_time() {
    // The dumbbell takes one 1250-byte frame across in 2202 us
    // (frames_cross_a_trunk_with_its_rate_delay_and_queue); a router in the left switch adds
    // 300 us and 1 ns a byte.
    let mut t = dumbbell();
    t.switches[0].forwarding = Some(router(300, 1000, None));
    let mut net = Network::new(&t).unwrap();
    net.handle_frame(Instant(0), 0, frame(2, 0, 1250, 1));
    let got = run(&mut net);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, 2_202_000 + 300_000 + PER_BYTE_NS);
    let stats = net.router_stats();
    assert_eq!(stats.len(), 1);
    assert_eq!((stats[0].0.as_str(), stats[0].1.packets), ("switch", 1));
    assert_eq!(stats[0].1.busy_ns, 300_000 + PER_BYTE_NS);
}

#[test]
fn a_router_paces_packets_at_its_packet_rate() {
    // A 2 ms router behind the 10 Mbit/s trunk (1 ms a frame): three frames sent back to back
    // reach it 1 ms apart and leave it 2 ms and 1236 ns apart, its service time.
    let mut t = dumbbell();
    t.switches[1].forwarding = Some(router(2000, 1000, None));
    let mut net = Network::new(&t).unwrap();
    for k in 0..3 {
        net.handle_frame(Instant(0), 0, frame(2, 0, 1250, k));
    }
    let got = run(&mut net);
    assert_eq!(got.len(), 3);
    let gaps: Vec<u64> = got.windows(2).map(|w| w[1].1 - w[0].1).collect();
    assert_eq!(gaps, vec![2_000_000 + PER_BYTE_NS; 2]);
    // Without the router the trunk sets the pace.
    let mut net = Network::new(&dumbbell()).unwrap();
    for k in 0..3 {
        net.handle_frame(Instant(0), 0, frame(2, 0, 1250, k));
    }
    let got = run(&mut net);
    assert!(got.windows(2).all(|w| w[1].1 - w[0].1 == 1_000_000));
}

#[test]
fn a_routers_full_queue_drops_and_counts() {
    // Ten frames 100 us apart into a 2 ms router that lets two wait: the first is served at
    // once, the next two wait, and the seven after find the queue full.
    let mut t = dumbbell();
    t.switches[0].forwarding = Some(router(2000, 0, Some(2)));
    let mut net = Network::new(&t).unwrap();
    for k in 0..10 {
        net.handle_frame(Instant(0), 0, frame(2, 0, 1250, k));
    }
    let got = run(&mut net);
    assert_eq!(got.len(), 3);
    let s = net.router_stats()[0].1;
    assert_eq!((s.packets, s.dropped, s.max_waiting), (3, 7, 2));
    // The ones that went on are the first three, in order.
    let tags: Vec<u8> = got.iter().map(|g| g.2[20]).collect();
    assert_eq!(tags, vec![0, 1, 2]);
}

#[test]
fn a_router_stores_a_packet_of_cells_whole() {
    // Two hosts on OC-3c ATM links around one switch: a switch passes a frame's cells on as
    // they arrive, a router (even one that costs nothing) only once the last is in.
    let link = LinkSpec::atm(Some(Rate::bps(149_760_000)), Duration::ZERO, 0, 100);
    let t = Topology::star(hosts_on(&link, 2), FabricSpec::default(), 3);
    let deliver = |t: &Topology| {
        let mut net = Network::new(t).unwrap();
        net.handle_frame(Instant(0), 0, frame(1, 0, 4504, 1));
        run(&mut net)[0].1
    };
    let through = deliver(&t);
    let mut r = t.clone();
    r.switches[0].forwarding = Some(router(0, 0, None));
    let stored = deliver(&r);
    // A 4490-byte packet is 94 cells of 2.83 us, 266.1 us on each line: the switch delivers
    // it a cell time after the last cell has left the host, the router a whole frame later.
    let frame_ns = 94 * 424 * 1_000_000_000 / 149_760_000;
    assert!(through < frame_ns + 3_000, "{through}");
    assert!(stored >= 2 * frame_ns, "{stored} against {through}");
}

#[test]
fn a_router_cannot_cut_through() {
    let mut t = dumbbell();
    t.switches[0].forwarding = Some(router(1, 0, None));
    t.switches[0].cut_through = true;
    assert_eq!(
        t.validate(),
        Err(TopologyError::RouterCutThrough("switch".into()))
    );
}
