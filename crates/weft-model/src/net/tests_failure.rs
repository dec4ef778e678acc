//! Tests of a link or switch lost during a run: rehash over the paths that remain, the frames
//! lost with the link, the recovery, a host cut off.

use super::*;
use crate::time::{Duration, Instant};
use crate::units::Rate;

fn frame(to: usize, from: usize, len: usize, tag: u8) -> Vec<u8> {
    let mut f = vec![tag; len];
    f[0..6].copy_from_slice(&host_mac(to));
    f[6..12].copy_from_slice(&host_mac(from));
    f
}

/// Hosts a0 (on switch 0) and b0 (on switch 1), the switches joined by `trunks` parallel
/// 10 Mbit/s trunks of 1 ms (equal cost), frames sprayed round-robin over them.
fn parallel(trunks: usize) -> Topology {
    let fast = LinkSpec::ethernet(Some(Rate::mbps(100)), Duration::from_micros(1));
    let slow = LinkSpec::ethernet(Some(Rate::mbps(10)), Duration::from_millis(1));
    let host = |name: &str, switch| HostSpec {
        name: name.into(),
        addr: None,
        link: fast.clone(),
        switch,
    };
    let mut t = Topology::star(vec![host("a0", 0), host("b0", 1)], FabricSpec::default(), 5);
    t.switches.push(SwitchSpec {
        forwarding: None,
        shared_buffer: None,
        cut_through: false,
        name: "right".into(),
        fabric: FabricSpec::default(),
        latency: Duration::ZERO,
    });
    for _ in 0..trunks {
        t.trunks.push(TrunkSpec {
            ends: [0, 1],
            links: [slow.clone(), slow.clone()],
        });
    }
    t.multipath = Multipath::SprayRr;
    t
}

/// Runs the network up to `until` (or until idle); returns the frames delivered.
fn run_until(net: &mut Network<Vec<u8>>, until: Option<Instant>) -> usize {
    let mut n = 0;
    let mut now = Instant(0);
    while let Some(t) = net.poll_timeout() {
        if until.is_some_and(|u| t > u) {
            break;
        }
        now = now.max(t);
        while net.poll_transmit(now).is_some() {
            n += 1;
        }
    }
    n
}

/// Frames into trunk `k`'s queue from switch 0.
fn into_trunk(net: &Network<Vec<u8>>, k: usize) -> u64 {
    net.trunk_stats()[k].egress[0].frames_in
}

#[test]
fn spraying_skips_a_dead_trunk_and_uses_it_again_when_it_is_back() {
    let mut net = Network::new(&parallel(2)).unwrap();
    assert_eq!(
        net.set_trunk_down(Instant(0), 0, true),
        0,
        "nothing in flight"
    );
    for k in 0..20 {
        net.handle_frame(Instant(k * 200_000), 0, frame(1, 0, 1000, k as u8));
    }
    assert_eq!(
        run_until(&mut net, None),
        20,
        "every frame took the live trunk"
    );
    assert_eq!((into_trunk(&net, 0), into_trunk(&net, 1)), (0, 20));
    assert_eq!(net.fail_lost(), (Vec::new(), 0));
    // Back up: the spray uses both trunks again.
    net.set_trunk_down(Instant(10_000_000), 0, false);
    for k in 0..20 {
        net.handle_frame(Instant(10_000_000 + k * 200_000), 0, frame(1, 0, 1000, 0));
    }
    assert_eq!(run_until(&mut net, None), 20);
    assert_eq!((into_trunk(&net, 0), into_trunk(&net, 1)), (10, 30));
}

/// A switch that fails loses what its outputs hold (frames on their way to its host, due
/// later) and what reaches it afterwards; every frame is delivered before the failure or
/// counted, none after it.
#[test]
fn what_a_failed_switch_holds_is_lost_and_counted() {
    let mut net = Network::new(&parallel(2)).unwrap();
    // Twenty 1000-byte frames at once: 80 us apart off the host link, 800 us apart on each
    // trunk, so at 2 ms most are still on their way.
    for k in 0..20 {
        net.handle_frame(Instant(0), 0, frame(1, 0, 1000, k));
    }
    let early = run_until(&mut net, Some(Instant(2_000_000)));
    let lost = net.set_switch_down(Instant(2_000_000), 1, true);
    assert_eq!(
        run_until(&mut net, None),
        0,
        "nothing crosses a dead switch"
    );
    let (ports, unrouted) = net.fail_lost();
    let counted: u64 = ports.iter().map(|p| p.1).sum();
    assert_eq!(counted, lost);
    assert!(lost > 0, "the right switch held frames for b0: {ports:?}");
    assert_eq!(
        early + (lost + unrouted) as usize,
        20,
        "{ports:?} {unrouted}"
    );
}

#[test]
fn a_host_whose_only_path_died_loses_its_frames_and_nothing_hangs() {
    let mut net = Network::new(&parallel(1)).unwrap();
    net.set_trunk_down(Instant(0), 0, true);
    for k in 0..5 {
        net.handle_frame(Instant(k * 200_000), 0, frame(1, 0, 1000, 0));
    }
    assert_eq!(run_until(&mut net, None), 0);
    assert_eq!(net.fail_lost().1, 5, "each frame counted as having no path");
    assert_eq!(net.poll_timeout(), None);
    net.set_trunk_down(Instant(5_000_000), 0, false);
    net.handle_frame(Instant(5_000_000), 0, frame(1, 0, 1000, 0));
    assert_eq!(run_until(&mut net, None), 1, "the path is back");
}

#[test]
fn a_switch_down_takes_its_hosts_and_trunks_with_it() {
    let mut net = Network::new(&parallel(2)).unwrap();
    net.set_switch_down(Instant(0), 1, true);
    net.handle_frame(Instant(0), 0, frame(1, 0, 1000, 0));
    net.handle_frame(Instant(0), 1, frame(0, 1, 1000, 0));
    assert_eq!(run_until(&mut net, None), 0);
    let (ports, unrouted) = net.fail_lost();
    assert_eq!(unrouted, 1, "a0's frame has no live trunk");
    assert_eq!(
        ports,
        vec![("right:0".to_string(), 1)],
        "b0's frame met a dead port"
    );
}

/// A failure of the topology's takes its trunk down at `at` and brings it back `for` later:
/// frames before the return have no path, frames after it arrive; the network's deadlines
/// include both instants.
#[test]
fn a_timed_failure_ends_when_its_time_is_up() {
    let mut t = parallel(1);
    t.failures.push(LinkFailure {
        target: FailTarget::Trunk(0),
        at: Duration::from_millis(1),
        down: Some(Duration::from_millis(2)),
    });
    let mut net = Network::new(&t).unwrap();
    assert_eq!(net.poll_timeout(), Some(Instant(1_000_000)));
    net.handle_frame(Instant(1_500_000), 0, frame(1, 0, 1000, 0));
    assert_eq!(run_until(&mut net, Some(Instant(2_900_000))), 0);
    assert_eq!(net.fail_lost().1, 1, "no path while it is down");
    assert_eq!(net.poll_timeout(), Some(Instant(3_000_000)), "the return");
    run_until(&mut net, Some(Instant(3_000_000)));
    net.handle_frame(Instant(3_000_000), 0, frame(1, 0, 1000, 0));
    assert_eq!(run_until(&mut net, None), 1, "back up at 3 ms");
    assert!(net.has_failures());
}
