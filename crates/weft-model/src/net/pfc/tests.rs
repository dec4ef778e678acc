use std::collections::VecDeque;

use super::*;

const TEN_G: Rate = Rate::mbps(10_000);
/// Bytes of every frame of these tests.
const FRAME: u64 = 1_000;
/// One-way delay of every link (ns).
const DELAY: u64 = 1_000;

fn spec() -> PfcSpec {
    PfcSpec {
        xoff: 20 * FRAME,
        xon: 10 * FRAME,
        headroom: PfcSpec::headroom_for(TEN_G, DELAY, FRAME),
        classes: 1 << 3,
    }
}

#[test]
fn an_ingress_pauses_at_xoff_and_resumes_at_xon() {
    let mut i = PfcIngress::new(spec(), TEN_G);
    for k in 0..19 {
        assert_eq!(i.admit(k, 3, FRAME), Admit::Accepted);
    }
    assert_eq!(
        i.admit(19, 3, FRAME),
        Admit::Pause(PauseFrame {
            class: 3,
            quanta: MAX_QUANTA
        })
    );
    assert!(i.pausing(3));
    // Once paused, further arrivals fill the headroom without pausing again.
    assert_eq!(i.admit(20, 3, FRAME), Admit::Accepted);
    for _ in 0..10 {
        assert_eq!(i.release(3, FRAME), None);
    }
    assert_eq!(
        i.release(3, FRAME),
        Some(PauseFrame {
            class: 3,
            quanta: 0
        })
    );
    assert!(!i.pausing(3));
    assert_eq!((i.stats.pauses_sent, i.stats.resumes_sent), (1, 1));
    // A lossy class is neither counted nor paused.
    for k in 0..100 {
        assert_eq!(i.admit(k, 0, FRAME), Admit::Accepted);
    }
    assert_eq!(i.held(0), 0);
}

#[test]
fn beyond_the_headroom_a_frame_is_dropped_and_counted() {
    let s = spec();
    let mut i = PfcIngress::new(s, TEN_G);
    let fit = (s.xoff + s.headroom) / FRAME;
    for k in 0..fit {
        assert_ne!(i.admit(k, 3, FRAME), Admit::Dropped);
    }
    assert_eq!(i.admit(fit, 3, FRAME), Admit::Dropped);
    assert_eq!(i.stats.headroom_drops, 1);
    assert_eq!(i.held(3), fit * FRAME);
}

#[test]
fn the_headroom_covers_a_round_trip_of_the_line_and_two_frames() {
    // 10 Gbit/s for 2 us is 2500 bytes.
    assert_eq!(
        PfcSpec::headroom_for(TEN_G, DELAY, FRAME),
        2_500 + 2 * FRAME
    );
}

#[test]
fn an_xoff_is_refreshed_before_it_runs_out_while_the_ingress_stays_full() {
    let mut i = PfcIngress::new(spec(), TEN_G);
    for _ in 0..20 {
        i.admit(0, 3, FRAME);
    }
    // 65535 quanta of 512 bits at 10 Gbit/s: 3.355 ms; refreshed half way.
    let reach = quanta_ns(MAX_QUANTA, TEN_G);
    assert_eq!(reach, 3_355_392);
    assert_eq!(i.poll_timeout(), Some(reach / 2 + reach % 2));
    let mut sent = Vec::new();
    i.handle_timeout(reach / 2 - 1, &mut |p| sent.push(p));
    assert!(sent.is_empty());
    i.handle_timeout(reach / 2 + 1, &mut |p| sent.push(p));
    assert_eq!(sent.len(), 1);
    assert_eq!(i.stats.pauses_sent, 2);
    // Resumed, nothing is due.
    for _ in 0..10 {
        i.release(3, FRAME);
    }
    assert_eq!(i.poll_timeout(), None);
}

#[test]
fn an_egress_counts_its_pause_time_per_class_and_a_pause_runs_out_by_itself() {
    let mut e = PfcEgress::new(TEN_G);
    e.handle_pause(
        1_000,
        PauseFrame {
            class: 3,
            quanta: 100,
        },
    );
    // 100 quanta of 512 bits at 10 Gbit/s: 5.12 us.
    assert!(e.is_paused(1_000, 3));
    assert!(!e.is_paused(1_000, 0));
    assert!(e.is_paused(6_119, 3));
    assert!(!e.is_paused(6_120, 3));
    assert_eq!(e.paused_ns(100_000, 3), 5_120);
    // A resume ends a pause early.
    e.handle_pause(
        200_000,
        PauseFrame {
            class: 3,
            quanta: MAX_QUANTA,
        },
    );
    e.handle_pause(
        201_000,
        PauseFrame {
            class: 3,
            quanta: 0,
        },
    );
    assert!(!e.is_paused(201_000, 3));
    assert_eq!(e.paused_ns(300_000, 3), 5_120 + 1_000);
    assert_eq!(e.total_paused_ns(300_000), 6_120);
}

#[test]
fn a_resume_stamped_before_its_pause_ends_it_without_going_back_in_time() {
    // The emulator's wall clock can hand the network an XON whose instant is earlier than that
    // of the XOFF already applied (work done late, stamped when it was due).
    let mut e = PfcEgress::new(TEN_G);
    let frame = |quanta| PauseFrame { class: 3, quanta };
    e.handle_pause(10_000, frame(MAX_QUANTA));
    e.handle_pause(9_000, frame(0));
    assert!(!e.is_paused(10_000, 3));
    assert_eq!(e.paused_ns(20_000, 3), 0, "a pause ended as it began");
    // A pause stamped before the last frame starts then, and runs its full length.
    e.handle_pause(30_000, frame(0));
    e.handle_pause(29_000, frame(100));
    assert!(e.is_paused(35_119, 3));
    assert!(!e.is_paused(35_120, 3));
    assert_eq!(e.paused_ns(100_000, 3), 5_120);
}

/// One hop of a chain: frames queued for the line out of a node, the line, its pause state,
/// and the lossless ingress at the far end.
struct Hop {
    queue: VecDeque<u64>,
    busy_until: u64,
    paused: PfcEgress,
    far: PfcIngress,
    /// Frames on the line: arrival at the far end (ns).
    in_flight: VecDeque<u64>,
    /// Pause frames on their way back: arrival (ns) and frame.
    pauses: VecDeque<(u64, PauseFrame)>,
    /// Most bytes queued here.
    max_queued: u64,
}

/// A host sends `n` frames of class 3 at 10 Gbit/s through two switches to a sink whose link
/// runs at a quarter of that; each node's output honours pauses if `pfc`. The hops after the
/// run (the host's, the first switch's, the second switch's) and the frames delivered.
fn chain(n: u64, pfc: bool) -> (Vec<Hop>, u64) {
    let rates = [TEN_G, TEN_G, Rate::mbps(2_500)];
    let mut hops: Vec<Hop> = rates
        .iter()
        .map(|&r| Hop {
            queue: VecDeque::new(),
            busy_until: 0,
            paused: PfcEgress::new(r),
            far: PfcIngress::new(spec(), r),
            in_flight: VecDeque::new(),
            pauses: VecDeque::new(),
            max_queued: 0,
        })
        .collect();
    hops[0].queue.extend(0..n);
    let mut delivered = 0;
    for now in (0..100_000_000u64).step_by(10) {
        for h in 0..hops.len() {
            // Pause frames that reach this hop's sender.
            while hops[h].pauses.front().is_some_and(|&(t, _)| t <= now) {
                if let Some((_, p)) = hops[h].pauses.pop_front() {
                    hops[h].paused.handle_pause(now, p);
                }
            }
            // Frames that reach the far end: counted against its ingress, queued on the next
            // hop (or delivered).
            while hops[h].in_flight.front().is_some_and(|&t| t <= now) {
                hops[h].in_flight.pop_front();
                match hops[h].far.admit(now, 3, FRAME) {
                    Admit::Pause(p) => hops[h].pauses.push_back((now + DELAY, p)),
                    Admit::Dropped => continue,
                    Admit::Accepted => {}
                }
                if h + 1 < hops.len() {
                    hops[h + 1].queue.push_back(0);
                    let q = hops[h + 1].queue.len() as u64 * FRAME;
                    hops[h + 1].max_queued = hops[h + 1].max_queued.max(q);
                } else {
                    delivered += 1;
                    hops[h].far.release(3, FRAME);
                }
            }
            let mut refresh = Vec::new();
            hops[h].far.handle_timeout(now, &mut |p| refresh.push(p));
            for p in refresh {
                hops[h].pauses.push_back((now + DELAY, p));
            }
            // The line starts the next frame if free and not paused.
            let stopped = pfc && hops[h].paused.is_paused(now, 3);
            if hops[h].busy_until <= now && !stopped && hops[h].queue.pop_front().is_some() {
                let ser = FRAME * 8 * 1_000_000_000 / rates[h].as_bps();
                hops[h].busy_until = now + ser;
                hops[h].in_flight.push_back(now + ser + DELAY);
                // The frame has left this switch: its ingress releases it.
                if h > 0 {
                    if let Some(p) = hops[h - 1].far.release(3, FRAME) {
                        hops[h - 1].pauses.push_back((now + DELAY, p));
                    }
                }
            }
        }
        if hops
            .iter()
            .all(|h| h.in_flight.is_empty() && h.queue.is_empty())
        {
            break;
        }
    }
    (hops, delivered)
}

#[test]
fn pauses_propagate_upstream_hop_by_hop_and_nothing_is_lost() {
    let n = 400;
    let (hops, delivered) = chain(n, true);
    assert_eq!(delivered, n);
    assert!(hops.iter().all(|h| h.far.stats.headroom_drops == 0));
    // The slow line's switch paused the first switch, which filled and paused the host.
    assert!(hops[1].far.stats.pauses_sent >= 1);
    assert!(hops[0].far.stats.pauses_sent >= 1);
    assert!(hops[0].paused.total_paused_ns(u64::MAX) > 0);
    assert!(hops[1].paused.total_paused_ns(u64::MAX) > 0);
    // The second switch never held more than its thresholds allow.
    let s = spec();
    assert!(
        hops[2].max_queued <= s.xoff + s.headroom,
        "{}",
        hops[2].max_queued
    );
    // Without pauses the same burst overruns the second switch's buffer and loses frames.
    let (lossy, got) = chain(n, false);
    assert!(got < n);
    assert!(lossy[1].far.stats.headroom_drops > 0);
}

#[test]
fn a_cycle_of_paused_ports_is_a_deadlock() {
    // 0 -> 1 -> 2 -> 0 is a cycle; 3 waits on it but is not part of it.
    let waits = vec![vec![1], vec![2], vec![0], vec![0]];
    let mut cycle = find_deadlock(&waits).expect("a deadlock");
    cycle.sort_unstable();
    assert_eq!(cycle, [0, 1, 2]);
    // A chain of waits drains from its end: no deadlock.
    let chain = vec![vec![1], vec![2], vec![], vec![0, 2]];
    assert_eq!(find_deadlock(&chain), None);
    // A port waiting on itself (a frame turned back out of its input) is one.
    assert_eq!(find_deadlock(&[vec![], vec![1]]), Some(vec![1]));
}
