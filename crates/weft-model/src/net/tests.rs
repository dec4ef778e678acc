//! Tests of the network parts together: queues, switches, fabrics and networks of switches.

use super::*;
use crate::Element;
use crate::fabric::{Contention, Rng};
use crate::queue::{Buffer, DropPolicy};
use crate::time::{Duration, Instant};
use crate::units::Rate;

const OC3C: Rate = Rate::bps(149_760_000);

/// Hosts `h0`, `h1`, ... on switch 0, each on a copy of `link`.
pub(super) fn hosts_on(link: &LinkSpec, n: usize) -> Vec<HostSpec> {
    (0..n)
        .map(|i| HostSpec {
            name: format!("h{i}"),
            addr: None,
            link: link.clone(),
            switch: 0,
        })
        .collect()
}

pub(super) fn frame(to: usize, from: usize, len: usize, tag: u8) -> Vec<u8> {
    let mut f = vec![tag; len];
    f[0..6].copy_from_slice(&host_mac(to));
    f[6..12].copy_from_slice(&host_mac(from));
    f
}

/// Runs `e` until idle; returns (due, frame length) in order.
fn drain(e: &mut Egress<Vec<u8>>) -> Vec<(u64, usize)> {
    let mut v = Vec::new();
    while let Some(t) = e.poll_timeout() {
        while let Some((due, f)) = e.poll_frame(t) {
            v.push((due, f.len()));
        }
    }
    v
}

fn train(frame: Vec<u8>, first: u64, spacing: u64, units: u64, flow: u32) -> Train<Vec<u8>> {
    Train {
        frame,
        first,
        spacing,
        units,
        flow,
        damaged: false,
        tagged: false,
        vc: Default::default(),
        efci: false,
        rm: Default::default(),
        counted: None,
    }
}

#[test]
fn a_frame_link_serialises_and_delays() {
    let link = LinkSpec::ethernet(Some(Rate::mbps(8)), Duration::from_millis(5));
    let mut ing = Ingress::new(&link, Rng::new(1));
    let mut eg = Egress::new(&link, Rng::new(2), false);
    for _ in 0..3 {
        ing.handle_frame(Instant(0), vec![0u8; 1000], &mut |t| eg.handle_train(t));
    }
    let out = drain(&mut eg);
    // Each 1000-byte frame: 1 ms per hop; ingress then egress (store and forward), 5 ms each.
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].0, 1_000_000 + 5_000_000 + 1_000_000 + 5_000_000);
    assert_eq!(out[2].0 - out[1].0, 1_000_000);
}

/// Two inputs at the OC-3c cell rate into one OC-3c output with a 512-cell buffer: each sends
/// 200 CLIP frames of 192 cells back to back, with the given phase between them (ns).
fn two_to_one(drop: DropPolicy<Buffer>, phase: u64, seed: u64) -> EgressStats {
    let mut link = LinkSpec::atm(Some(OC3C), Duration::ZERO, 0, 100);
    link.buffer = Buffer::cells(512);
    link.drop = drop;
    let mut a = Ingress::new(&link, Rng::new(1));
    let mut b = Ingress::new(&link, Rng::new(2));
    let mut eg = Egress::new(&link, Rng::new(seed), false);
    for _ in 0..200 {
        a.handle_frame(Instant(0), vec![0u8; 9194], &mut |t| eg.handle_train(t));
        b.handle_frame(Instant(phase), vec![0u8; 9194], &mut |mut t| {
            t.flow = 1;
            eg.handle_train(t)
        });
    }
    drain(&mut eg);
    eg.stats
}

#[test]
fn two_to_one_tail_drop_corrupts_frames_and_epd_saves_them() {
    let tail = two_to_one(DropPolicy::Tail, 500, 3);
    let epd = two_to_one(
        DropPolicy::Epd {
            threshold: Buffer::cells(256),
        },
        500,
        3,
    );
    assert_eq!(tail.cells_in, 400 * 192);
    assert!(tail.cells_dropped > 0 && tail.frames_corrupt > 0);
    assert_eq!(epd.frames_corrupt, 0, "{epd:?}");
    assert!(epd.frames_epd > 0);
    // The output carries one input's worth: EPD delivers about half the frames whole, plain
    // cell drop almost none.
    assert!(epd.frames_out >= 190, "epd delivered {}", epd.frames_out);
    assert!(
        tail.frames_out < epd.frames_out / 4,
        "tail {} epd {}",
        tail.frames_out,
        epd.frames_out
    );
    assert_eq!(tail.frames_out + tail.frames_corrupt, 400);
}

#[test]
fn equal_senders_at_fixed_phases_lose_alike() {
    // Without a fair order among simultaneous arrivals, the sender whose cells reach the
    // switch a few nanoseconds earlier in every cell time takes every place the line frees,
    // and the other loses every cell once the buffer is full. With it, both lose alike.
    for phase in [1, 700, 2000] {
        let tail = two_to_one(DropPolicy::Tail, phase, 9);
        let loss = |f: &FlowStats| f.cells_dropped as f64 / f.cells_in as f64;
        let flow = |f: usize| tail.flows.get(f).expect("both senders reach the output");
        let (a, b) = (loss(flow(0)), loss(flow(1)));
        assert!(
            (0.35..0.65).contains(&a) && (0.35..0.65).contains(&b),
            "phase {phase}: cell loss {a:.3} / {b:.3}"
        );
    }
}

#[test]
fn random_loss_is_seeded() {
    let mut link = LinkSpec::ethernet(None, Duration::ZERO);
    link.faults.loss = 0.5;
    let count = |seed| {
        let mut e = Egress::new(&link, Rng::new(seed), false);
        for _ in 0..1000 {
            e.handle_train(train(vec![0u8; 100], 0, 0, 1, 0));
        }
        drain(&mut e).len()
    };
    assert_eq!(count(7), count(7));
    let n = count(7);
    assert!((400..600).contains(&n), "{n}");
}

#[test]
fn oversize_frames_are_dropped() {
    let link = LinkSpec::ethernet(None, Duration::ZERO);
    let mut e = Egress::new(&link, Rng::new(1), false);
    e.handle_train(train(vec![0u8; 1515], 0, 0, 1, 0));
    e.handle_train(train(vec![0u8; 1514], 0, 0, 1, 0));
    assert_eq!(drain(&mut e).len(), 1);
    assert_eq!(e.stats.frames_oversize, 1);
}

fn star(kind: FabricKind, buffer_cells: u64, hosts: usize) -> Topology {
    let link = LinkSpec::atm(Some(OC3C), Duration::ZERO, 0, 100);
    Topology::star(
        hosts_on(&link, hosts),
        FabricSpec {
            kind,
            rate: OC3C,
            buffer_cells,
            drop: DropPolicy::Tail,
        },
        7,
    )
}

/// Runs the network until idle; returns (host, due ns, frame) in the order delivered.
pub(super) fn run(net: &mut Network<Vec<u8>>) -> Vec<(usize, u64, Vec<u8>)> {
    let mut got = Vec::new();
    let mut now = Instant(0);
    while let Some(t) = net.poll_timeout() {
        now = now.max(t);
        while let Some((h, due, f)) = net.poll_transmit(now) {
            assert!(due <= now);
            got.push((h, due.0, f));
        }
    }
    got
}

#[test]
fn forwards_by_mac_and_floods_broadcast() {
    let link = LinkSpec::ethernet(Some(Rate::mbps(100)), Duration::from_micros(10));
    let mut net = Network::new(&Topology::star(
        hosts_on(&link, 3),
        FabricSpec::default(),
        3,
    ))
    .unwrap();
    net.handle_frame(Instant(0), 0, frame(2, 0, 1000, 1));
    let mut bc = frame(0, 1, 100, 2);
    bc[0..6].copy_from_slice(&BROADCAST);
    net.handle_frame(Instant(0), 1, bc);
    let mut got: Vec<(usize, usize)> = run(&mut net)
        .into_iter()
        .map(|g| (g.0, g.2.len()))
        .collect();
    got.sort();
    assert_eq!(got, vec![(0, 100), (2, 100), (2, 1000)]);
}

/// Input 0 and input 1 both send a 40-cell frame to output 2 at once; input 1 then has a frame
/// for the idle output 0. FIFO: that frame waits behind the head-of-line frame; VOQ/iSLIP: it
/// crosses at once.
fn head_of_line(kind: FabricKind) -> (u64, u64) {
    let mut net = Network::new(&star(kind, 10_000, 3)).unwrap();
    let len = 40 * 48 - 16 + 14; // 40 cells with LLC/SNAP and the AAL5 trailer
    net.handle_frame(Instant(0), 0, frame(2, 0, len, 1));
    net.handle_frame(Instant(0), 1, frame(2, 1, len, 2));
    net.handle_frame(Instant(0), 1, frame(0, 1, 200, 3));
    let got = run(&mut net);
    assert_eq!(got.len(), 3, "every frame delivered");
    let to0 = got.iter().find(|g| g.0 == 0).map(|g| g.1).unwrap_or(0);
    let last2 = got
        .iter()
        .filter(|g| g.0 == 2)
        .map(|g| g.1)
        .max()
        .unwrap_or(0);
    (to0, last2)
}

#[test]
fn fifo_blocks_behind_head_of_line_and_voq_does_not() {
    let cell = 2_831; // ns per OC-3c cell time, rounded down
    let (fifo_to0, fifo_last) = head_of_line(FabricKind::InputFifo {
        contention: Contention::RoundRobin,
    });
    let (voq_to0, voq_last) = head_of_line(FabricKind::VoqIslip { iterations: 1 });
    assert!(
        fifo_last >= 80 * cell && voq_last >= 80 * cell,
        "{fifo_last} {voq_last}"
    );
    assert!(fifo_to0 >= 78 * cell, "fifo {fifo_to0}");
    assert!(voq_to0 <= 55 * cell, "voq {voq_to0}");
}

#[test]
fn frames_cross_a_fabric_intact_and_cells_are_conserved() {
    let mut net = Network::new(&star(FabricKind::VoqIslip { iterations: 2 }, 10_000, 3)).unwrap();
    let mut sent = Vec::new();
    for k in 0..30u8 {
        let (from, to) = ((k % 3) as usize, ((k + 1) % 3) as usize);
        let f = frame(to, from, 100 + 37 * k as usize, k);
        sent.push((to, f.clone()));
        net.handle_frame(Instant(k as u64 * 1_000), from, f);
    }
    let mut got: Vec<(usize, Vec<u8>)> = run(&mut net).into_iter().map(|g| (g.0, g.2)).collect();
    got.sort();
    sent.sort();
    assert_eq!(got, sent);
    let st = net.fabric_stats().unwrap();
    assert_eq!(st.cells_in, st.cells_out + st.cells_dropped);
    assert_eq!(
        (st.frames_out, st.frames_corrupt, st.cells_dropped),
        (30, 0, 0)
    );
}

#[test]
fn a_full_input_buffer_drops_cells_and_corrupts_exactly_those_frames() {
    let mut net = Network::new(&star(
        FabricKind::InputFifo {
            contention: Contention::Random,
        },
        8,
        3,
    ))
    .unwrap();
    for k in 0..20u64 {
        net.handle_frame(Instant(k * 10), 0, frame(2, 0, 1000, 1));
        net.handle_frame(Instant(k * 10), 1, frame(2, 1, 1000, 2));
    }
    let got = run(&mut net);
    let st = net.fabric_stats().unwrap();
    assert!(st.cells_dropped > 0, "{st:?}");
    assert_eq!(st.cells_in, st.cells_out + st.cells_dropped);
    assert_eq!(st.frames_out + st.frames_corrupt, 40, "{st:?}");
    assert_eq!(got.len() as u64, st.frames_out);
}

/// a0, a1 on switch 0; b0 on switch 1; a 10 Mbit/s trunk with 1 ms of delay between them.
pub(super) fn dumbbell() -> Topology {
    let fast = LinkSpec::ethernet(Some(Rate::mbps(100)), Duration::from_micros(1));
    let mut slow = LinkSpec::ethernet(Some(Rate::mbps(10)), Duration::from_millis(1));
    slow.buffer = Buffer::frames(4);
    let host = |name: &str, switch| HostSpec {
        name: name.into(),
        addr: None,
        link: fast.clone(),
        switch,
    };
    let mut t = Topology::star(
        vec![host("a0", 0), host("a1", 0), host("b0", 1)],
        FabricSpec::default(),
        5,
    );
    t.switches.push(SwitchSpec {
        forwarding: None,
        shared_buffer: None,
        cut_through: false,
        name: "right".into(),
        fabric: FabricSpec::default(),
        latency: Duration::ZERO,
    });
    t.trunks.push(TrunkSpec {
        ends: [0, 1],
        links: [slow.clone(), slow],
    });
    t
}

#[test]
fn frames_cross_a_trunk_with_its_rate_delay_and_queue() {
    let mut net = Network::new(&dumbbell()).unwrap();
    // One 1250-byte frame: 100 us on a host link, 1 ms on the trunk, twice 1 us and 1 ms of
    // delay.
    net.handle_frame(Instant(0), 0, frame(2, 0, 1250, 1));
    let got = run(&mut net);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, 2);
    assert_eq!(
        got[0].1,
        100_000 + 1_000 + 1_000_000 + 1_000_000 + 100_000 + 1_000
    );
    // Twenty frames at once from both senders: the trunk's 4-frame queue drops most of them,
    // and the survivors arrive one trunk frame time apart.
    for k in 0..10 {
        net.handle_frame(Instant(10_000_000), 0, frame(2, 0, 1250, k));
        net.handle_frame(Instant(10_000_000), 1, frame(2, 1, 1250, k));
    }
    let got = run(&mut net);
    let trunk = &net.trunk_stats()[0];
    assert_eq!(trunk.egress[0].frames_in, 21);
    assert!(
        trunk.egress[0].frames_dropped >= 10,
        "{:?}",
        trunk.egress[0]
    );
    assert_eq!(got.len() as u64, 20 - trunk.egress[0].frames_dropped);
    assert!(got.windows(2).all(|w| w[1].1 - w[0].1 >= 1_000_000));
    // Back the other way, through the other direction's queue.
    net.handle_frame(Instant(50_000_000), 2, frame(1, 2, 500, 9));
    assert_eq!(run(&mut net).first().map(|g| g.0), Some(1));
}

/// A cut-through switch sends a frame on as its first bit arrives: it saves the shorter of the
/// frame's two serialisations (into and out of the switch), never more, so that a slower output
/// still sends only what has arrived and frames back to back keep its pace.
#[test]
fn a_cut_through_switch_saves_the_shorter_serialisation() {
    let mut t = dumbbell();
    t.switches[0].cut_through = true;
    let mut net = Network::new(&t).unwrap();
    net.handle_frame(Instant(0), 0, frame(2, 0, 1250, 1));
    let got = run(&mut net);
    // Store and forward takes 2202 us (frames_cross_a_trunk_with_its_rate_delay_and_queue);
    // the left switch cuts through from the 100 Mbit/s host link (100 us) onto the 10 Mbit/s
    // trunk (1 ms): 100 us sooner. The right switch stores and forwards.
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, 2_202_000 - 100_000);
    for k in 0..3 {
        net.handle_frame(Instant(10_000_000), 0, frame(2, 0, 1250, k));
    }
    let got = run(&mut net);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].1, 10_000_000 + 2_102_000);
    assert!(
        got.windows(2).all(|w| w[1].1 - w[0].1 == 1_000_000),
        "{got:?}"
    );
    // Without it, the same network as before.
    let mut net = Network::new(&dumbbell()).unwrap();
    net.handle_frame(Instant(0), 0, frame(2, 0, 1250, 1));
    assert_eq!(run(&mut net)[0].1, 2_202_000);
}

#[test]
fn the_engine_runs_a_network_in_virtual_time() {
    struct Blast {
        left: u32,
        got: Vec<(usize, u64)>,
    }
    impl crate::engine::Hosts<Vec<u8>> for Blast {
        fn poll_send(&mut self, now: Instant) -> Option<(usize, Instant, Vec<u8>)> {
            if self.left == 0 {
                return None;
            }
            self.left -= 1;
            Some((0, now, frame(2, 0, 1250, 0)))
        }
        fn deliver(&mut self, now: Instant, port: usize, due: Instant, _: Vec<u8>) {
            assert_eq!(now, due);
            self.got.push((port, now.0));
        }
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
    }
    let mut net = Network::new(&dumbbell()).unwrap();
    let mut hosts = Blast {
        left: 3,
        got: Vec::new(),
    };
    let mut clock = crate::engine::VirtualClock::until(Instant(1_000_000_000));
    let end = clock.end();
    crate::engine::run(&mut net, &mut hosts, &mut clock, |now, _, _| now < end);
    assert_eq!(hosts.got.len(), 3);
    assert_eq!(hosts.got[0], (2, 2_202_000));
    assert_eq!(hosts.got[2].1 - hosts.got[1].1, 1_000_000);
    // The element view of the network is the same object.
    assert_eq!(Element::poll_timeout(&net), None);
}

/// An IPv4 frame of `len` bytes from host 0 to host 1 with ECN field `ecn`.
fn ip_frame(ecn: Ecn, len: usize) -> Vec<u8> {
    let mut f = frame(1, 0, len, 0);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[15] = ecn as u8;
    f
}

#[test]
fn an_ecn_threshold_marks_capable_frames_that_find_the_queue_that_full() {
    let mut link = LinkSpec::ethernet(Some(Rate::mbps(8)), Duration::ZERO);
    link.buffer = Buffer::frames(100);
    link.ecn_threshold = Some(Buffer::frames(5));
    let mut e = Egress::new(&link, Rng::new(1), false);
    for i in 0..40 {
        // Twenty ECN-capable frames, then twenty that are not, one every 0.1 ms onto a line
        // that sends one per ms (in order: frames within one slot are taken in random order).
        let ecn = if i < 20 { Ecn::Ect0 } else { Ecn::NotEct };
        e.handle_train(train(ip_frame(ecn, 1000), i * 100_000, 0, 1, 0));
    }
    let mut out = Vec::new();
    while let Some(t) = e.poll_timeout() {
        while let Some((_, f)) = e.poll_frame(t) {
            out.push(f.ecn());
        }
    }
    // The first five found fewer than five ahead of them; the other capable ones are marked;
    // the others pass unmarked (the queue's limit, not the threshold, drops those).
    let mut want = vec![Ecn::Ect0; 5];
    want.extend([Ecn::Ce; 15]);
    want.extend([Ecn::NotEct; 20]);
    assert_eq!(out, want);
    assert_eq!(e.stats.frames_marked, 15);
    assert_eq!(e.stats.frames_dropped, 0);
    // Without a threshold nothing is marked, and the counter stays out of the JSON.
    link.ecn_threshold = None;
    let mut e = Egress::new(&link, Rng::new(1), false);
    for _ in 0..20 {
        e.handle_train(train(ip_frame(Ecn::Ect0, 1000), 0, 0, 1, 0));
    }
    assert!(drain(&mut e).len() == 20 && e.stats.frames_marked == 0);
    let json = serde_json::to_string(&e.stats).unwrap();
    assert!(!json.contains("frames_marked"), "{json}");
}

#[test]
fn red_marks_none_below_kmin_all_above_kmax_and_some_between() {
    // 1000-byte frames, all at once, onto a slow line: the k-th finds k x 1000 bytes queued.
    let marks = |red: Option<RedSpec>, trim: bool| {
        let mut link = LinkSpec::ethernet(Some(Rate::mbps(8)), Duration::ZERO);
        link.buffer = Buffer::bytes(1 << 20);
        link.ecn_red = red;
        link.trim = trim;
        let mut e = Egress::new(&link, Rng::new(1), false);
        for i in 0..300 {
            e.handle_train(train(ip_frame(Ecn::Ect0, 1000), 0, 0, 1, i));
        }
        let out: Vec<bool> = drain_ecn(&mut e).iter().map(|&c| c == Ecn::Ce).collect();
        (out, e.stats.frames_marked)
    };
    let red = RedSpec {
        kmin: 5_000,
        kmax: 200_000,
        pmax: 0.5,
    };
    for trim in [false, true] {
        let (out, n) = marks(Some(red), trim);
        assert_eq!(out.len(), 300);
        // Five or fewer ahead: never; more than 200 ahead: always; between, about pmax / 2 on
        // average (195 frames, 49 expected).
        assert!(out[..6].iter().all(|m| !m), "trim {trim}");
        assert!(out[201..].iter().all(|m| *m), "trim {trim}");
        let ramp = out[6..201].iter().filter(|m| **m).count();
        assert!((35..64).contains(&ramp), "trim {trim}: {ramp}");
        assert_eq!(n as usize, ramp + 99);
        // Without RED nothing is marked.
        assert_eq!(marks(None, trim).1, 0);
    }
}

/// The ECN fields of every frame an egress towards a host delivers, in order.
fn drain_ecn(e: &mut Egress<Vec<u8>>) -> Vec<Ecn> {
    let mut out = Vec::new();
    while let Some(t) = e.poll_timeout() {
        while let Some((_, f)) = e.poll_frame(t) {
            out.push(f.ecn());
        }
    }
    out
}

#[test]
fn an_ecn_threshold_in_bytes_counts_bytes() {
    let mut link = LinkSpec::ethernet(Some(Rate::mbps(8)), Duration::ZERO);
    link.ecn_threshold = Some(Buffer::bytes(3000));
    assert_eq!(link.ecn_limit(), Some(3000));
    link.ecn_threshold = Some(Buffer::frames(2));
    // A 1 MiB buffer of bytes: two MTU-sized frames.
    assert_eq!(link.ecn_limit(), Some(2 * 1514));
    let atm = LinkSpec::atm(None, Duration::ZERO, 0, 1);
    assert_eq!(
        LinkSpec {
            ecn_threshold: Some(Buffer::frames(2)),
            ..atm
        }
        .ecn_limit(),
        None,
        "not on ATM"
    );
}

#[test]
fn a_trimming_queue_sends_the_headers_of_what_it_cannot_hold_ahead_of_the_data() {
    let mut link = LinkSpec::ethernet(Some(Rate::mbps(8)), Duration::ZERO);
    link.buffer = Buffer::frames(4);
    link.trim = true;
    let mut e = Egress::new(&link, Rng::new(1), false);
    // Twenty MTU-sized frames at once onto a 4-frame queue (4 x 1514 bytes): one goes on the line, three wait,
    // sixteen are cut to their 34 bytes of headers and go before the three.
    for i in 0..20 {
        e.handle_train(train(ip_frame(Ecn::NotEct, 1514), 0, 0, 1, i));
    }
    let out = drain(&mut e);
    let lens: Vec<usize> = out.iter().map(|o| o.1).collect();
    let mut want = vec![1514];
    want.extend([34; 16]);
    want.extend([1514; 3]);
    assert_eq!(lens, want);
    assert_eq!((e.stats.frames_trimmed, e.stats.frames_dropped), (16, 0));
    assert_eq!(e.stats.frames_out, 20);
    // Without trimming the same queue drops the sixteen.
    link.trim = false;
    let mut e = Egress::new(&link, Rng::new(1), false);
    for i in 0..20 {
        e.handle_train(train(ip_frame(Ecn::NotEct, 1514), 0, 0, 1, i));
    }
    assert_eq!(drain(&mut e).len(), 4);
    assert_eq!((e.stats.frames_trimmed, e.stats.frames_dropped), (0, 16));
}

/// The dumbbell with priority flow control on every link (XOFF at 3 frames, XON at 1).
fn lossless_dumbbell() -> Topology {
    let mut t = dumbbell();
    let spec = |l: &LinkSpec| PfcSpec {
        xoff: 3 * 1264,
        xon: 1264,
        headroom: PfcSpec::headroom_for(l.rate.unwrap(), l.delay.as_nanos(), 1264),
        classes: 0x7f,
    };
    for h in &mut t.hosts {
        h.link.pfc = Some(spec(&h.link));
    }
    for tr in &mut t.trunks {
        for l in &mut tr.links {
            l.pfc = Some(spec(l));
        }
    }
    t
}

#[test]
fn pfc_pauses_the_senders_and_loses_nothing_where_the_lossy_fabric_drops() {
    // Forty 1250-byte frames at once from a0 and a1 towards b0, behind the 10 Mbit/s trunk and
    // its 4-frame queue: lossy, the queue drops most; lossless, switch 0's inputs pause the two
    // hosts and the trunk's queue pauses nothing (its far end drains at its own pace), so all
    // forty arrive, in order per sender, at the trunk's pace.
    let send = |net: &mut Network<Vec<u8>>| {
        for k in 0..20 {
            net.handle_frame(Instant(0), 0, frame(2, 0, 1250, k));
            net.handle_frame(Instant(0), 1, frame(2, 1, 1250, k));
        }
        run(net)
    };
    let mut lossy = Network::new(&dumbbell()).unwrap();
    let got = send(&mut lossy);
    assert!(lossy.trunk_stats()[0].egress[0].frames_dropped >= 20);
    assert!(got.len() < 20);

    let mut net = Network::new(&lossless_dumbbell()).unwrap();
    let got = send(&mut net);
    assert_eq!(got.len(), 40);
    assert_eq!(net.trunk_stats()[0].egress[0].frames_dropped, 0);
    assert_eq!(net.pfc_drops(), 0);
    for from in [0u8, 1] {
        let tags: Vec<u8> = got
            .iter()
            .filter(|g| g.2[11] == from)
            .map(|g| g.2[20])
            .collect();
        assert_eq!(tags, (0..20).collect::<Vec<u8>>());
    }
    // The trunk sends one 1250-byte frame per ms, back to back: never idle while the hosts
    // are paused.
    assert!(got.windows(2).all(|w| w[1].1 - w[0].1 == 1_000_000));
    // Both hosts were paused, for most of the run, and the trunk's queue never was.
    let end = got.last().unwrap().1;
    for h in [0, 1] {
        let (paused, held) = net.host_pause(end, h);
        assert!(paused > end / 2, "host {h} paused {paused} ns of {end}");
        assert!(held >= 15, "host {h} held {held}");
        let pfc = net.host_stats(h).unwrap().pfc.unwrap();
        assert!(pfc.pauses_sent >= 1 && pfc.resumes_sent >= 1, "{pfc:?}");
        assert_eq!(pfc.headroom_drops, 0);
    }
    assert_eq!(net.trunk_stats()[0].egress[0].paused_ns, 0);
    assert_eq!(net.pfc_deadlock(end), None);
}

/// The two hosts of the lossless dumbbell are paused, resumed and paused again many times
/// over; each of their two switch ports keeps one refresh of its XOFF pending at the most,
/// not one per XOFF sent.
#[test]
fn a_paused_port_keeps_one_refresh_pending() {
    let mut net = Network::new(&lossless_dumbbell()).unwrap();
    for k in 0..20 {
        net.handle_frame(Instant(0), 0, frame(2, 0, 1250, k));
        net.handle_frame(Instant(0), 1, frame(2, 1, 1250, k));
    }
    let (mut most, mut now, mut got) = (0, Instant(0), 0);
    while let Some(t) = net.poll_timeout() {
        now = now.max(t);
        while net.poll_transmit(now).is_some() {
            got += 1;
        }
        most = most.max(net.refreshes_pending());
    }
    assert_eq!(got, 40);
    let sent: u64 = (0..2)
        .map(|h| net.host_stats(h).unwrap().pfc.unwrap().pauses_sent)
        .sum();
    assert!(sent > 4, "{sent} XOFFs");
    assert_eq!(most, 2);
}

/// Four switches in a ring, a host on each, every link 100 Mbit/s and lossless (XOFF 3 frames,
/// XON 1); each host sends 200 frames clockwise to the host `hops` switches on (two: every
/// trunk carries two flows, each waiting on the next trunk, a cyclic buffer dependency; one:
/// every flow leaves the fabric after one trunk). Runs 100 ms; what arrived, and the deadlock
/// at the end if there is one.
fn ring_of_four(hops: usize) -> (usize, Option<Vec<String>>) {
    let mut link = LinkSpec::ethernet(Some(Rate::mbps(100)), Duration::from_micros(1));
    link.pfc = Some(PfcSpec {
        xoff: 3 * 1250,
        xon: 1250,
        headroom: PfcSpec::headroom_for(Rate::mbps(100), 1_000, 1250),
        classes: 0x7f,
    });
    let mut hosts = hosts_on(&link, 4);
    for (i, h) in hosts.iter_mut().enumerate() {
        h.switch = i;
    }
    let mut t = Topology::star(hosts, FabricSpec::default(), 3);
    t.switches = (0..4)
        .map(|i| SwitchSpec {
            forwarding: None,
            shared_buffer: None,
            cut_through: false,
            name: format!("s{i}"),
            fabric: FabricSpec::default(),
            latency: Duration::ZERO,
        })
        .collect();
    t.trunks = (0..4)
        .map(|i| TrunkSpec {
            ends: [i, (i + 1) % 4],
            links: [link.clone(), link.clone()],
        })
        .collect();
    let mut net = Network::new(&t).unwrap();
    // Port 0 is the host; switch 0's trunk to s1 is its port 1, the others' their port 2.
    for i in 0..4 {
        let port = if i == 0 { 1 } else { 2 };
        net.switch_mut(i).unwrap().set_routes((i + 2) % 4, &[port]);
    }
    for k in 0..200u64 {
        for h in 0..4 {
            net.handle_frame(Instant(0), h, frame((h + hops) % 4, h, 1250, k as u8));
        }
    }
    let end = Instant(100_000_000);
    let mut got = 0;
    while let Some(t) = net.poll_timeout().filter(|&t| t <= end) {
        while net.poll_transmit(t).is_some() {
            got += 1;
        }
    }
    (got, net.pfc_deadlock(end.0))
}

#[test]
fn a_cycle_of_paused_ports_is_found_as_a_pfc_deadlock() {
    let (got, dead) = ring_of_four(2);
    let cycle = dead.expect("the clockwise ring deadlocks");
    assert!(got < 800, "{got} frames arrived");
    // The four clockwise trunk outputs, each paused by the next switch.
    let mut ports = cycle.clone();
    ports.sort();
    assert_eq!(ports, ["s0:1", "s1:2", "s2:2", "s3:2"], "{cycle:?}");
    // One hop each: every flow leaves the ring at the next switch, no cycle; all arrive.
    assert_eq!(ring_of_four(1), (800, None));
}
