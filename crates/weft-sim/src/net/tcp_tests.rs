//! Tests of TCP on simulated hosts: flows through the one network and engine, checked for what
//! arrives (every byte written, in order, closed), for the window and link limits, for loss
//! recovery and for the host cost model's delay.

use weft_model::host::{HostCosts, HostCpu};
use weft_model::net::{Faults, HostSpec, LinkSpec, Topology};
use weft_model::tcp::{Config, SeqNum, State};
use weft_model::{Duration, Instant, Rate};

use weft_model::app::bulk::{BulkSink, BulkSource};
use weft_model::app::rr::Via;

use super::hosted::{Hosted, TcpEnd};
use super::hosts::App;
use super::run::{NetRun, RunOptions, run};
use super::tput::{SEND_LOWAT, WRITE_SIZE};

/// The sending end of the flows of these tests (and of FTP's), on host 0.
pub(super) const A: TcpEnd = TcpEnd {
    host: 0,
    port: 40_000,
    peer: 1,
    peer_port: 5001,
};
/// The receiving end, on host 1.
pub(super) const B: TcpEnd = TcpEnd {
    host: 1,
    port: 5001,
    peer: 0,
    peer_port: 40_000,
};

/// A bulk flow a -> b: the source writing until `stop`, the sink measuring `[from, stop)`.
fn apps(
    cfg: Config,
    stop: Duration,
    from: Duration,
    iss: (u32, u32),
    cpu: Option<HostCosts>,
) -> Vec<(usize, Box<dyn App>)> {
    let source = BulkSource::new(Via::Stream, WRITE_SIZE, Instant(stop.0), None);
    let sink = BulkSink::new(Instant(from.0), Instant(stop.0));
    let tx = Hosted::connect(source, A, cfg.clone(), SeqNum(iss.0)).bulk_host(SEND_LOWAT);
    let rx = Hosted::listen(sink, B, cfg, SeqNum(iss.1)).bulk_host(SEND_LOWAT);
    let on_cpu = || cpu.clone().map(HostCpu::new);
    vec![
        (0, Box::new(tx.with_cpu(on_cpu()))),
        (1, Box::new(rx.with_cpu(on_cpu()))),
    ]
}

/// Two hosts on a switch, each link `rate` with `delay` one way and `faults`.
pub(super) fn pair(rate: Rate, delay: Duration, faults: Faults) -> Topology {
    let host = |name: &str| {
        let mut link = LinkSpec::ethernet(Some(rate), delay);
        link.faults = faults;
        HostSpec {
            name: name.into(),
            addr: None,
            link,
            switch: 0,
        }
    };
    Topology::star(vec![host("a"), host("b")], Default::default(), 7)
}

/// One flow a -> b writing until `stop`, run until `end`.
fn flow(
    topo: &Topology,
    cfg: Config,
    stop: Duration,
    end: Duration,
    cpu: Option<HostCosts>,
) -> NetRun {
    let apps = apps(cfg, stop, Duration::ZERO, (0xffff_f000, 77), cpu);
    let opts = RunOptions {
        duration: end,
        ..RunOptions::default()
    };
    run(topo, apps, opts, |_| {}).unwrap()
}

type Ends<'a> = (&'a Hosted<BulkSource>, &'a Hosted<BulkSink>);

fn ends(r: &NetRun) -> Ends<'_> {
    (
        r.hosts.app::<Hosted<BulkSource>>(0).unwrap(),
        r.hosts.app::<Hosted<BulkSink>>(1).unwrap(),
    )
}

fn cfg(mss: u16, window: u32) -> Config {
    Config {
        mss,
        send_buffer: window,
        recv_buffer: window,
        ..Config::default()
    }
}

#[test]
fn everything_written_arrives_and_the_connection_closes() {
    let topo = pair(Rate::mbps(10), Duration::from_millis(1), Faults::default());
    let r = flow(
        &topo,
        cfg(1460, 32_768),
        Duration::from_millis(500),
        Duration::from_secs(5),
        None,
    );
    let (tx, rx) = ends(&r);
    let st = tx.connection().unwrap().stats();
    assert!(rx.app().bytes() > 100_000, "{}", rx.app().bytes());
    // Every byte written was acknowledged and read, and nothing else.
    assert_eq!(rx.app().bytes(), tx.connection().unwrap().acked_offset());
    assert_eq!(st.timeouts, 0, "{st:?}");
    assert!(rx.connection().unwrap().is_recv_finished());
    assert!(
        matches!(
            tx.connection().unwrap().state(),
            State::TimeWait | State::Closed
        ),
        "{:?}",
        tx.connection().unwrap().state()
    );
}

/// Payload rate of the receiver over `[from, until)` of a run, bits/s.
fn rate_of(r: &NetRun) -> f64 {
    let (_, rx) = ends(r);
    rx.app().measured() as f64 * 8.0 / (r.duration.as_secs_f64() - 1.0)
}

fn measured_flow(topo: &Topology, cfg: Config, cpu: Option<HostCosts>) -> NetRun {
    let end = Duration::from_secs(6);
    let apps = apps(cfg, end, Duration::from_secs(1), (1, 2), cpu);
    let opts = RunOptions {
        duration: end,
        ..RunOptions::default()
    };
    run(topo, apps, opts, |_| {}).unwrap()
}

#[test]
fn a_small_window_limits_the_rate_to_window_per_round_trip() {
    // 4 ms each way on each of two links: a 16 ms round trip; 100 Mbit/s lines.
    let topo = pair(Rate::mbps(100), Duration::from_millis(4), Faults::default());
    // Ten whole segments (a window that is no multiple of the segment leaves a short remainder
    // that Nagle holds back, and the writer refills the buffer in low-water-mark steps).
    let r = measured_flow(&topo, cfg(1460, 14_600), None);
    let want = 14_600.0 * 8.0 / 0.016;
    let got = rate_of(&r);
    assert!((got / want - 1.0).abs() < 0.1, "{got} vs {want}");
}

#[test]
fn a_large_window_fills_the_link() {
    let topo = pair(Rate::mbps(10), Duration::from_millis(1), Faults::default());
    let r = measured_flow(&topo, cfg(1460, 65_535), None);
    // 1460 of every 1514 bytes on an ideal Ethernet line are payload.
    let want = 10e6 * 1460.0 / 1514.0;
    let got = rate_of(&r);
    assert!(got < want * 1.001 && got > want * 0.97, "{got} vs {want}");
}

#[test]
fn loss_is_recovered_and_costs_retransmissions() {
    let faults = Faults {
        loss: 0.01,
        ..Faults::default()
    };
    let topo = pair(Rate::mbps(10), Duration::from_millis(1), faults);
    let r = flow(
        &topo,
        cfg(1460, 32_768),
        Duration::from_secs(2),
        Duration::from_secs(60),
        None,
    );
    let (tx, rx) = ends(&r);
    let st = tx.connection().unwrap().stats();
    assert!(st.segments_retransmitted > 0, "{st:?}");
    assert_eq!(rx.app().bytes(), tx.connection().unwrap().acked_offset());
    assert!(
        rx.connection().unwrap().is_recv_finished(),
        "{:?}",
        rx.connection().unwrap().state()
    );
}

#[test]
fn host_costs_slow_the_transfer_to_what_the_cpu_can_copy() {
    let topo = pair(
        Rate::mbps(100),
        Duration::from_micros(10),
        Faults::default(),
    );
    // 400 ns per byte sent: 20 Mbit/s, far under the line.
    let slow = HostCosts {
        send_other_ns_per_byte: 400.0,
        ..HostCosts::FREE
    };
    let free = rate_of(&measured_flow(&topo, cfg(1460, 65_535), None));
    let costly = rate_of(&measured_flow(&topo, cfg(1460, 65_535), Some(slow)));
    assert!(free > 90e6, "{free}");
    assert!((costly / 20e6 - 1.0).abs() < 0.05, "{costly}");
}
