//! Tests of a switch whose output queues share one buffer under the dynamic threshold
//! ([`SharedBuffer`]): one port hogging the buffer beside a burst on another.

use super::*;
use crate::queue::Buffer;
use crate::time::{Duration, Instant};
use crate::units::Rate;

/// An IPv4 frame of 1514 bytes from host `from` to host `to`, ECN-capable.
fn frame(to: usize, from: usize) -> Vec<u8> {
    let mut f = vec![0u8; 1514];
    f[0..6].copy_from_slice(&host_mac(to));
    f[6..12].copy_from_slice(&host_mac(from));
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[15] = Ecn::Ect0 as u8;
    f[16..18].copy_from_slice(&1500u16.to_be_bytes());
    f[23] = 17;
    f
}

/// The buffer of the switch: thirty full frames.
const POOL: u64 = 30 * 1514;

/// Hosts h0 and h1 on 1 Gbit/s links, h2 and h3 on 100 Mbit/s links, around one switch whose
/// queues share [`POOL`] bytes with threshold `alpha` (and trim, with `trim`).
fn star(alpha: f64, trim: bool) -> Topology {
    let host = |i: usize, mbps: u64| {
        let mut link = LinkSpec::ethernet(Some(Rate::mbps(mbps)), Duration::from_micros(1));
        link.buffer = Buffer::bytes(POOL);
        link.trim = trim;
        HostSpec {
            name: format!("h{i}"),
            addr: None,
            link,
            switch: 0,
        }
    };
    let hosts = vec![host(0, 1000), host(1, 1000), host(2, 100), host(3, 100)];
    let mut t = Topology::star(hosts, FabricSpec::default(), 3);
    t.switches[0].shared_buffer = Some(SharedBufferSpec { bytes: POOL, alpha });
    t
}

/// h0 sends sixty frames to h2 from t = 0 (ten times faster than h2's line takes them: h2's
/// queue hogs the buffer); at 300 us h1 sends a burst of six to h3. The frames each of h2 and
/// h3 received whole, and the network.
fn hog_and_burst(alpha: f64, trim: bool) -> (usize, usize, Network<Vec<u8>>) {
    let mut net = Network::new(&star(alpha, trim)).unwrap();
    for _ in 0..60 {
        net.handle_frame(Instant(0), 0, frame(2, 0));
    }
    for _ in 0..6 {
        net.handle_frame(Instant(300_000), 1, frame(3, 1));
    }
    let mut whole = [0usize; 4];
    let mut now = Instant(0);
    while let Some(t) = net.poll_timeout() {
        now = now.max(t);
        while let Some((h, _, f)) = net.poll_transmit(now) {
            if f.len() == 1514 {
                whole[h] += 1;
            }
        }
    }
    (whole[2], whole[3], net)
}

#[test]
fn the_dynamic_threshold_keeps_room_for_a_burst_beside_a_hog() {
    // alpha 1: h2's queue stops at half the buffer (Choudhury & Hahne: alpha / (1 + alpha)),
    // and the burst to h3 finds the other half free.
    let (hog, burst, net) = hog_and_burst(1.0, false);
    let q2 = net.host_stats(2).unwrap().egress;
    let q3 = net.host_stats(3).unwrap().egress;
    assert_eq!(burst, 6, "{q3:?}");
    assert!(q2.max_occupancy <= POOL / 2 + 1514, "{}", q2.max_occupancy);
    assert!(q2.max_occupancy >= POOL / 2 - 1514, "{}", q2.max_occupancy);
    assert!(q2.frames_over_threshold > 20, "{q2:?}");
    assert_eq!(q2.frames_dropped, q2.frames_over_threshold);
    assert_eq!(hog as u64 + q2.frames_dropped, 60);
    assert_eq!(q3.frames_over_threshold, 0);
    // alpha 64 is all but complete sharing: the hog takes the whole buffer and the burst
    // finds it full, but for what h2's line frees between h0's frames.
    let (hog_all, burst_all, net) = hog_and_burst(64.0, false);
    let q2 = net.host_stats(2).unwrap().egress;
    let q3 = net.host_stats(3).unwrap().egress;
    assert!(q2.max_occupancy >= POOL - 1514, "{}", q2.max_occupancy);
    assert!(burst_all <= 4, "{burst_all} of the burst got through");
    assert!(q3.frames_over_threshold >= 2, "{q3:?}");
    assert!(
        hog_all > hog,
        "the hog sends more with the whole buffer: {hog_all} vs {hog}"
    );
}

#[test]
fn a_trimming_queue_trims_what_the_dynamic_threshold_refuses() {
    let (hog, burst, net) = hog_and_burst(1.0, true);
    let q2 = net.host_stats(2).unwrap().egress;
    assert_eq!(burst, 6);
    assert!(q2.max_occupancy <= POOL / 2 + 1514, "{}", q2.max_occupancy);
    // What the threshold refused became headers, not drops.
    assert_eq!(q2.frames_dropped, 0, "{q2:?}");
    assert_eq!(hog as u64 + q2.frames_trimmed, 60, "{q2:?}");
    // The pool is empty once every line is idle: every byte held came back.
    let mut pool = net.switch(0).unwrap().shared_buffer().unwrap().clone();
    pool.advance(u64::MAX);
    assert_eq!(pool.used(), 0);
}

#[test]
fn a_lossless_queue_is_held_by_its_pauses_not_by_the_threshold() {
    // h0 and h1 send forty frames each to h2 over lossless links (XOFF at 3 frames per input):
    // h2's 100 Mbit/s queue holds what the two inputs' pauses let in, beyond the dynamic
    // threshold a lossy queue would have (alpha 1/8 of a 30-frame buffer: 3.3 frames), and
    // loses nothing; its bytes count in the buffer.
    let mut t = star(0.125, false);
    for h in &mut t.hosts {
        h.link.pfc = Some(PfcSpec {
            xoff: 3 * 1514,
            xon: 1514,
            headroom: PfcSpec::headroom_for(h.link.rate.unwrap(), h.link.delay.as_nanos(), 1514),
            classes: 0x7f,
        });
    }
    let mut net = Network::new(&t).unwrap();
    for _ in 0..40 {
        net.handle_frame(Instant(0), 0, frame(2, 0));
        net.handle_frame(Instant(0), 1, frame(2, 1));
    }
    let mut got = 0;
    let mut now = Instant(0);
    while let Some(t) = net.poll_timeout() {
        now = now.max(t);
        while net.poll_transmit(now).is_some() {
            got += 1;
        }
    }
    let q2 = net.host_stats(2).unwrap().egress;
    assert_eq!(got, 80, "{q2:?}");
    assert_eq!((q2.frames_dropped, q2.frames_over_threshold), (0, 0));
    assert_eq!(net.pfc_drops(), 0);
    let pool = net.switch(0).unwrap().shared_buffer().unwrap();
    assert!(q2.max_occupancy > POOL / 9 + 1514, "{}", q2.max_occupancy);
    assert!(pool.max_used >= q2.max_occupancy, "{}", pool.max_used);
}
