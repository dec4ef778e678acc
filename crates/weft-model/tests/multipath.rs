//! Multipath forwarding in a network: the frames one host sends to a host on another leaf of
//! a leaf-spine, counted on each of the leaf's four uplinks. The leaf-spine comes from a
//! scenario's `[fabric]`, so these tests stand above both the network and the scenario layer.
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use weft_model::Scenario;
use weft_model::net::{Multipath, Network, Topology, host_mac};
use weft_model::time::{Duration, Instant};

/// Two leaves of two hosts, four spines, 10 Gbit/s everywhere.
fn leaf_spine(multipath: Multipath) -> Network<Vec<u8>> {
    let text = "name = \"ls\"\n[fabric]\ntopology = \"leaf-spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 4\nhost_link = { tech = \"10gige\", delay = \"1us\" }";
    let s = Scenario::parse(text, "ls.toml").unwrap();
    let (mut t, _) = Topology::from_scenario(&s, 7).unwrap();
    t.multipath = multipath;
    Network::new(&t).unwrap()
}

/// A UDP/IPv4 frame from host `from` to host `to`, source port `sport`, 1000 bytes.
fn udp(from: usize, to: usize, sport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 1000];
    f[0..6].copy_from_slice(&host_mac(to));
    f[6..12].copy_from_slice(&host_mac(from));
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&986u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&Topology::addr_of_index(from).octets());
    ip[16..20].copy_from_slice(&Topology::addr_of_index(to).octets());
    ip[20..22].copy_from_slice(&sport.to_be_bytes());
    ip[22..24].copy_from_slice(&5001u16.to_be_bytes());
    f
}

/// Sends `frames` frames from h0 to h2, flow `k`'s source port `1000 + k % flows`; returns
/// the frames delivered and the frames each of leaf0's uplinks carried.
fn spread(multipath: Multipath, frames: u64, flows: u64) -> (usize, Vec<u64>) {
    let mut net = leaf_spine(multipath);
    for k in 0..frames {
        let f = udp(0, 2, 1000 + (k % flows) as u16);
        net.handle_frame(Instant(k * 1_000), 0, f);
    }
    let mut got = 0;
    let mut now = Instant(0);
    while let Some(t) = net.poll_timeout() {
        now = now.max(t);
        while let Some((h, _, _)) = net.poll_transmit(now) {
            assert_eq!(h, 2);
            got += 1;
        }
    }
    let up = net
        .trunk_stats()
        .iter()
        .filter(|t| t.ends[0] == "leaf0")
        .map(|t| t.egress[0].frames_out)
        .collect();
    (got, up)
}

#[test]
fn per_flow_ecmp_keeps_a_flow_on_one_uplink_and_spreads_flows() {
    let (got, up) = spread(Multipath::Ecmp, 400, 1);
    assert_eq!(got, 400);
    assert_eq!(up.len(), 4);
    assert_eq!(up.iter().filter(|&&n| n > 0).count(), 1, "{up:?}");
    let (_, up) = spread(Multipath::Ecmp, 400, 64);
    assert!(up.iter().all(|&n| n > 0), "64 flows over 4 uplinks: {up:?}");
}

#[test]
fn spraying_spreads_one_flow_over_every_uplink() {
    let (got, up) = spread(Multipath::Spray, 400, 1);
    assert_eq!(got, 400);
    assert!(up.iter().all(|&n| (70..130).contains(&n)), "{up:?}");
    let (_, up) = spread(Multipath::SprayRr, 400, 1);
    assert_eq!(up, vec![100; 4]);
}

#[test]
fn flowlets_move_a_flow_only_after_a_pause() {
    let gap = Duration::from_micros(50);
    // Frames 1 µs apart, never a pause: one uplink.
    let (_, up) = spread(Multipath::Flowlet { gap }, 400, 1);
    assert_eq!(up.iter().filter(|&&n| n > 0).count(), 1, "{up:?}");
    // A gap of 500 ns: every frame a flowlet of its own, spread like spraying.
    let short = Duration(500);
    let (_, up) = spread(Multipath::Flowlet { gap: short }, 400, 1);
    assert!(up.iter().all(|&n| n > 40), "{up:?}");
}
