//! Tests of FTP from disk to disk on simulated hosts ([`super::ftp_workload`]): the core's FTP
//! source and sink over one TCP flow, the source reading its disk, the sink writing its own.

use weft_model::app::ftp::{FtpSink, FtpSource};
use weft_model::host::disk::{Disk, DiskSpec};
use weft_model::host::{HostCosts, HostCpu};
use weft_model::net::{Faults, Topology};
use weft_model::tcp::{Config, SeqNum};
use weft_model::{Duration, Instant, Rate};

use super::hosted::Hosted;
use super::hosts::App;
use super::run::{NetRun, RunOptions, run};
use super::tcp_tests::{A, B};
use super::tput::SEND_LOWAT;

const MIB: u64 = 1 << 20;

/// Two hosts on a switch, 100 Mbit/s lines, 10 us each way.
fn pair() -> Topology {
    super::tcp_tests::pair(
        Rate::mbps(100),
        Duration::from_micros(10),
        Faults::default(),
    )
}

/// A disk of `rate` (read and write), 10 ms positioning, no cache: it writes through.
fn through(rate: Rate) -> DiskSpec {
    DiskSpec::plain("t", rate, Duration::from_millis(10))
}

/// The same disk behind a cache that takes `dirty` bytes of writes before a write waits.
fn behind(rate: Rate, dirty: u64) -> DiskSpec {
    DiskSpec {
        cache: 8 * MIB,
        dirty_limit: dirty,
        ..through(rate)
    }
}

/// Moves a `size`-byte file a -> b over TCP (64 KiB windows) from `from`'s disk to `to`'s,
/// each host with `recv` ns a byte received (its `read` calls' copies, 0: free);
/// returns the run and the engine's turns.
fn ftp(size: u64, from: Option<DiskSpec>, to: Option<DiskSpec>) -> (NetRun, u64) {
    ftp_on(size, from, to, 0.0)
}

fn ftp_on(size: u64, from: Option<DiskSpec>, to: Option<DiskSpec>, recv: f64) -> (NetRun, u64) {
    let cpu = || {
        (recv > 0.0).then(|| {
            HostCpu::new(HostCosts {
                recv_other_ns_per_byte: recv,
                ..HostCosts::FREE
            })
        })
    };
    let cfg = Config {
        mss: 1460,
        ..Config::default()
    };
    let source = FtpSource::new(size, from.map(Disk::new));
    let sink = FtpSink::new(to.map(Disk::new));
    let tx = Hosted::connect(source, A, cfg.clone(), SeqNum(1)).bulk_host(SEND_LOWAT);
    let rx = Hosted::listen(sink, B, cfg, SeqNum(2)).bulk_host(SEND_LOWAT);
    let apps: Vec<(usize, Box<dyn App>)> = vec![
        (0, Box::new(tx.with_cpu(cpu()))),
        (1, Box::new(rx.with_cpu(cpu()))),
    ];
    let opts = RunOptions {
        duration: Duration::from_secs(30),
        ..RunOptions::default()
    };
    // A 1 MiB transfer takes a few thousand turns ([`run`] reports every 2^16): an instant
    // that asks for turns forever is a storm that would never end.
    let r = run(&pair(), apps, opts, |now| panic!("2^16 turns by {now:?}")).unwrap();
    let turns = r.stats.turns;
    (r, turns)
}

/// The sink's file: bytes written and when the last write returned, seconds.
fn written(r: &NetRun) -> (u64, f64) {
    let k = r.hosts.app::<Hosted<FtpSink>>(1).unwrap().app();
    let done: Instant = k.finished().expect("the file was written");
    (k.written(), done.0 as f64 / 1e9)
}

/// A sink in a write-through write reads nothing until it returns, and asks for no turn
/// before: the reads its CPU finished meanwhile (80 ns a byte) wait for it (the run ends, in
/// few turns).
#[test]
fn a_sink_in_a_write_asks_for_no_turn_before_it_returns() {
    let (r, turns) = ftp_on(MIB, None, Some(through(Rate::mbps(64))), 80.0);
    let (bytes, _) = written(&r);
    assert_eq!(bytes, MIB);
    // 2,147 turns when written: a bound that only a storm breaks.
    assert!(turns < 20_000, "{turns} turns");
}

/// The source reads each block from its disk before it sends it: a slower disk, a slower file.
#[test]
fn a_slower_source_disk_lowers_the_rate() {
    let (fast, _) = ftp(MIB, Some(through(Rate::mbps(64))), None);
    let (slow, _) = ftp(MIB, Some(through(Rate::mbps(16))), None);
    let (_, t_fast) = written(&fast);
    let (_, t_slow) = written(&slow);
    let (_, t_memory) = written(&ftp(MIB, None, None).0);
    // The platter's time at 16 Mbit/s (524 ms a MiB, and its positioning) bounds the slow one
    // from below; at 64 Mbit/s the disk's 141 ms hide partly behind the network's.
    assert!(t_slow > 0.534, "{t_slow}");
    assert!(
        t_fast > t_memory && t_slow > t_fast + 0.15,
        "{t_memory} {t_fast} {t_slow}"
    );
}

/// Writes behind a cache with room for the file return at once: the sink keeps reading and the
/// file is in its cache at the network's pace; written through, each write's platter time is
/// the receiving process's, and the file takes at least the disk's time.
#[test]
fn a_write_behind_cache_lets_the_sink_read_on() {
    let rate = Rate::mbps(16);
    let (thru, _) = ftp(MIB, None, Some(through(rate)));
    let (cached, _) = ftp(MIB, None, Some(behind(rate, 4 * MIB)));
    let (_, t_thru) = written(&thru);
    let (_, t_cached) = written(&cached);
    let (_, t_memory) = written(&ftp(MIB, None, None).0);
    // Behind the cache, the file arrives as into memory; through it, at least the platter's
    // 524 ms and a positioning at 16 Mbit/s, the network's time partly on top.
    assert_eq!(t_cached, t_memory);
    assert!(
        t_thru > 0.534 && t_thru > t_memory + 0.1,
        "{t_memory} {t_thru}"
    );
    let sink = |r: &NetRun| r.hosts.app::<Hosted<FtpSink>>(1).unwrap().app().clone();
    let waited = |r: &NetRun| sink(r).disk().unwrap().stats.write_wait;
    assert_eq!(waited(&cached), Duration::ZERO);
    assert!(
        waited(&thru) > Duration::from_millis(500),
        "{:?}",
        waited(&thru)
    );
}

/// A sink that counts what its reads return and what it had read when told the stream closed.
#[derive(Debug, Default)]
struct Counter {
    read: u64,
    read_at_close: Option<u64>,
}

impl weft_model::app::Application for Counter {
    fn handle_input(&mut self, _now: Instant, input: weft_model::app::Input<'_>) {
        match input {
            weft_model::app::Input::Read { len, .. } => self.read += len,
            weft_model::app::Input::Closed { .. } => self.read_at_close = Some(self.read),
            _ => {}
        }
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_output(&mut self, _now: Instant) -> Option<weft_model::app::Output> {
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

/// `Input::Closed` means every byte the peer sent has been read: a read that the receiver's CPU
/// (1 us a byte, so the reads lag the line) still holds when the FIN arrives is delivered first.
#[test]
fn the_stream_closes_after_its_last_read_returns() {
    let cpu = HostCpu::new(HostCosts {
        recv_other_ns_per_byte: 1000.0,
        ..HostCosts::FREE
    });
    let cfg = Config {
        mss: 1460,
        ..Config::default()
    };
    let size = 256 * 1024;
    let tx = Hosted::connect(FtpSource::new(size, None), A, cfg.clone(), SeqNum(1))
        .bulk_host(SEND_LOWAT);
    let rx = Hosted::listen(Counter::default(), B, cfg, SeqNum(2)).bulk_host(SEND_LOWAT);
    let apps: Vec<(usize, Box<dyn App>)> =
        vec![(0, Box::new(tx)), (1, Box::new(rx.with_cpu(Some(cpu))))];
    let opts = RunOptions {
        duration: Duration::from_secs(30),
        ..RunOptions::default()
    };
    let r = run(&pair(), apps, opts, |_| {}).unwrap();
    let k = r.hosts.app::<Hosted<Counter>>(1).unwrap().app();
    assert_eq!(k.read, size);
    assert_eq!(k.read_at_close, Some(size));
}
