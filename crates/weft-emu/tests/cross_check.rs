//! One fabric, two clocks: the frames the emulator's switch received, replayed into the same
//! network in virtual time, leave in the same order, at the same due instants, with the same
//! drops. The emulator records what crossed each link (a [`Recorder`] tap); the replay feeds
//! the recorded arrivals to a fresh `Network` on the simulator's clock.

mod common;

use std::time::Duration as StdDuration;

use weft_emu::{FabricSpec, HostSpec, LinkSpec, Topology, UpOptions, workload};
use weft_model::engine::{self, Clock, EventQueue, Hosts, VirtualClock};
use weft_model::net::{Direction, Network, Record, Recorder};
use weft_model::queue::{Buffer, DropPolicy};
use weft_model::{Duration, Instant, Rate};

const OC3C: Rate = Rate::bps(149_760_000);

/// Replays recorded arrivals at their instants and keeps what is delivered.
struct Replay {
    arrivals: EventQueue<(usize, Vec<u8>)>,
    delivered: Vec<(usize, u64, Vec<u8>)>,
}

impl Hosts<Vec<u8>> for Replay {
    fn poll_send(&mut self, now: Instant) -> Option<(usize, Instant, Vec<u8>)> {
        self.arrivals.pop_due(now).map(|(at, (h, f))| (h, at, f))
    }
    fn deliver(&mut self, _now: Instant, port: usize, due: Instant, frame: Vec<u8>) {
        self.delivered.push((port, due.0, frame));
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.arrivals.peek_time()
    }
}

fn host_of(r: &Record<Vec<u8>>) -> usize {
    match r.link {
        weft_model::net::LinkId::Host(h) => h,
        weft_model::net::LinkId::Trunk(_) => usize::MAX,
    }
}

#[test]
fn replayed_arrivals_leave_in_the_same_order_at_the_same_instants() {
    require_root!();
    let _g = common::serial();
    // Two senders overload one OC-3c receiver whose 512-cell queue discards early: cells
    // interleave, queue, and whole frames are refused, so order and drops both matter.
    let link = |vci| LinkSpec::atm(Some(OC3C), Duration::from_micros(50), 0, vci);
    let mut out = link(102);
    out.buffer = Buffer::cells(512);
    out.drop = DropPolicy::Epd {
        threshold: Buffer::cells(256),
    };
    let host = |name: &str, link| HostSpec {
        name: name.into(),
        addr: None,
        link,
        switch: 0,
    };
    let topo = Topology::star(
        vec![host("a", link(100)), host("b", link(101)), host("c", out)],
        FabricSpec::default(),
        23,
    );
    let recorder = Recorder::new();
    let opts = UpOptions {
        recorder: Some(recorder.clone()),
        ..UpOptions::default()
    };
    let emu = weft_emu::Emulation::up(&topo, &opts).expect("emulation comes up");
    let secs = StdDuration::from_millis;
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            workload::udp_cbr(&emu, "a", "c", Rate::mbps(100), 4000, secs(700), secs(100))
        });
        let b = workload::udp_cbr(&emu, "b", "c", Rate::mbps(100), 4000, secs(700), secs(100));
        let a = a.join().expect("sender a");
        assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    });
    let report = emu.down().expect("switch report");
    let records = recorder.records();
    let mut arrivals = EventQueue::new();
    let mut emulated = Vec::new();
    for r in &records {
        match r.dir {
            Direction::FromHost => arrivals.push(Instant(r.at_ns), (host_of(r), r.frame.clone())),
            Direction::ToHost => emulated.push((host_of(r), r.at_ns, r.frame.clone())),
        }
    }
    let first = arrivals.peek_time().unwrap_or(Instant::ZERO);
    let mut net: Network<Vec<u8>> = Network::new(&topo).expect("network");
    let mut replay = Replay {
        arrivals,
        delivered: Vec::new(),
    };
    let end = Instant(records.iter().map(|r| r.at_ns).max().unwrap_or(0) + 1_000_000_000);
    let mut clock = VirtualClock::until(end);
    // The virtual clock starts where the emulator's first frame arrived.
    clock.wait_until(Some(first), false);
    engine::run(&mut net, &mut replay, &mut clock, |now, _, _| now < end);
    // Each host's frames leave its queue in due order; across hosts, the emulator serves what is
    // due at one wake-up round-robin, so compare host by host.
    let mut replayed = replay.delivered;
    replayed.sort_by_key(|d| (d.0, d.1));
    emulated.sort_by_key(|d| (d.0, d.1));
    let dropped = |p: &weft_model::net::PortStats| {
        (
            p.egress.cells_dropped,
            p.egress.frames_epd,
            p.egress.frames_out,
        )
    };
    println!(
        "{} frames in, {} out in the emulator, {} out in the replay; receiver queue (cells dropped, EPD refusals, frames out): emu {:?} replay {:?}; emulator lag p50 {} us p99 {} us, degraded {}",
        records.len() - emulated.len(),
        emulated.len(),
        replayed.len(),
        dropped(&report.ports[2]),
        net.host_stats(2).map(|p| dropped(&p)),
        report.lag.p50_ns / 1000,
        report.lag.p99_ns / 1000,
        report.degraded
    );
    assert!(
        report.ports[2].egress.frames_epd > 0,
        "the receiver's queue refused no frame: no drops to compare"
    );
    assert_eq!(
        Some(dropped(&report.ports[2])),
        net.host_stats(2).map(|p| dropped(&p)),
        "same drops"
    );
    assert_eq!(
        emulated.len(),
        replayed.len(),
        "same number of frames delivered"
    );
    for (k, (e, r)) in emulated.iter().zip(&replayed).enumerate() {
        assert_eq!(
            (e.0, e.1),
            (r.0, r.1),
            "frame {k}: host and due instant (ns)"
        );
        assert!(e.2 == r.2, "frame {k}: same frame");
    }
}
