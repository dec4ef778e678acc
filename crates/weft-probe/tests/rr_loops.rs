//! Request/response loops over loopback against peers built here: a TCP echo server, and UDP
//! peers that drop or delay chosen requests so that losses and late replies can be counted
//! exactly.

#![allow(clippy::unwrap_used)]
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use weft_probe::rr::{self, Peer, Proto, RrConfig, StopRule};

/// A TCP echo server on 127.0.0.1:0, one thread per connection.
fn tcp_echo() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            thread::spawn(move || {
                let _ = s.set_nodelay(true);
                let mut buf = vec![0u8; 65536];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

/// A UDP peer that answers request number `i` (in arrival order) as `policy(i)` says: `None`
/// drops it, `Some(d)` echoes it after `d`. Runs until `stop` is set.
fn udp_peer(
    policy: impl Fn(u64) -> Option<Duration> + Send + 'static,
) -> (SocketAddr, Arc<AtomicBool>) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = s.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let mut i = 0u64;
        while !st.load(Ordering::SeqCst) {
            let Ok((n, from)) = s.recv_from(&mut buf) else {
                continue;
            };
            let d = policy(i);
            i += 1;
            match d {
                None => {}
                Some(d) if d.is_zero() => {
                    let _ = s.send_to(&buf[..n], from);
                }
                Some(d) => {
                    let data = buf[..n].to_vec();
                    let s2 = s.try_clone().unwrap();
                    thread::spawn(move || {
                        thread::sleep(d);
                        let _ = s2.send_to(&data, from);
                    });
                }
            }
        }
    });
    (addr, stop)
}

fn cfg(addr: SocketAddr, proto: Proto, sizes: Vec<u32>, count: u64) -> RrConfig {
    let mut c = RrConfig::new(Peer::Echo(addr), sizes);
    c.proto = proto;
    c.warmup = 5;
    c.stop = StopRule::Count { count };
    c
}

#[test]
fn tcp_warm_counts_exactly_and_orders_percentiles() {
    let addr = tcp_echo();
    let r = rr::run(&cfg(addr, Proto::Tcp, vec![1, 1000], 200)).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert_eq!(r.sizes.len(), 2);
    for s in &r.sizes {
        assert_eq!(s.sent, 200);
        assert_eq!(s.count, 200);
        assert_eq!(s.lost, 0);
        let l = &s.rtt;
        assert!(l.min_ns > 0);
        assert!(l.min_ns <= l.p50_ns && l.p50_ns <= l.p90_ns && l.p90_ns <= l.p99_ns);
        assert!(l.p99_ns <= l.p999_ns && l.p999_ns <= l.p9999_ns);
        assert!(l.p9999_ns as f64 <= l.max_ns as f64 * 1.001);
        assert!(l.mean_ns >= l.min_ns as f64 && l.mean_ns <= l.max_ns as f64);
        assert!(l.ci95_ns.unwrap() > 0.0);
        assert!(s.connect.is_none());
        let expect = f64::from(s.request_bytes + s.response_bytes) * 8.0 / (l.mean_ns / 1e9);
        assert!((s.throughput_bps - expect).abs() < 1e-6 * expect);
        assert!(s.transactions_per_s > 0.0);
        // Strict ping-pong: the wall time covers at least every measured round trip.
        assert!(s.elapsed_ns as f64 >= l.mean_ns * s.count as f64 * 0.999);
    }
    let doc = r.to_result_doc();
    assert_eq!(doc.kind, "rr");
    assert_eq!(doc.samples.len(), 2);
    assert_eq!(doc.samples[1]["request_bytes"], 1000);
    assert_eq!(doc.samples[1]["size_bytes"], 1000);
    assert_eq!(doc.samples[1]["p50_ns"], r.sizes[1].rtt.p50_ns);
    assert_eq!(doc.samples[1]["rtt"]["p99_ns"], r.sizes[1].rtt.p99_ns);
    assert_eq!(doc.samples[1]["proto"], "tcp");
    assert!(r.table().contains("1000"));
}

#[test]
fn tcp_cold_times_connection_set_up_apart() {
    let addr = tcp_echo();
    let mut c = cfg(addr, Proto::Tcp, vec![64], 40);
    c.cold = true;
    let r = rr::run(&c).unwrap();
    assert!(!r.failed(), "{}", r.table());
    let s = &r.sizes[0];
    assert_eq!(s.count, 40);
    let conn = s.connect.as_ref().expect("cold runs report connect times");
    assert_eq!(conn.count, 40);
    assert!(conn.mean_ns > 0.0);
    assert!(
        conn.mean_ns < s.rtt.mean_ns,
        "connect is part of the transaction"
    );
    assert!(r.table().contains("connect"));
}

#[test]
fn tcp_burst_keeps_several_in_flight() {
    let addr = tcp_echo();
    let mut c = cfg(addr, Proto::Tcp, vec![32, 16384], 300);
    c.burst = 8;
    let r = rr::run(&c).unwrap();
    assert!(!r.failed(), "{}", r.table());
    for s in &r.sizes {
        assert_eq!(s.count, 300);
        assert_eq!(s.lost, 0);
    }
}

#[test]
fn messages_larger_than_the_socket_buffers_do_not_deadlock_an_echo() {
    // The echo answers while the request is still being sent: a client that wrote the whole
    // request before reading would block both ends on full buffers.
    let addr = tcp_echo();
    let mut c = cfg(addr, Proto::Tcp, vec![16 << 20], 3);
    c.warmup = 1;
    c.timeout = Duration::from_secs(5);
    let r = rr::run(&c).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert_eq!(r.sizes[0].count, 3);
}

#[test]
fn sweep_runs_every_power_of_two() {
    let addr = tcp_echo();
    let sizes = rr::config::parse_sweep("1..65536").unwrap();
    let r = rr::run(&cfg(addr, Proto::Tcp, sizes, 20)).unwrap();
    assert!(!r.failed(), "{}", r.table());
    let got: Vec<u32> = r.sizes.iter().map(|s| s.request_bytes).collect();
    let want: Vec<u32> = (0..=16).map(|i| 1u32 << i).collect();
    assert_eq!(got, want);
    assert!(r.sizes.iter().all(|s| s.count == 20));
}

#[test]
fn converge_stops_early_on_loopback_and_respects_the_cap() {
    let addr = tcp_echo();
    let mut c = cfg(addr, Proto::Tcp, vec![64], 0);
    c.stop = StopRule::Converge {
        rel: 0.05,
        max_count: 200_000,
    };
    let r = rr::run(&c).unwrap();
    let s = &r.sizes[0];
    assert!(s.converged, "{}", r.table());
    assert!(s.count < 200_000);
    assert!(s.count >= rr::stats::MIN_CONVERGE_SAMPLES);
    assert!(s.rtt.ci95_ns.unwrap() / s.rtt.mean_ns < 0.05);

    c.stop = StopRule::Converge {
        rel: 1e-7,
        max_count: 150,
    };
    let r = rr::run(&c).unwrap();
    let s = &r.sizes[0];
    assert!(!s.converged);
    assert_eq!(s.count, 150);
}

#[test]
fn time_rule_measures_for_its_duration() {
    let addr = tcp_echo();
    let mut c = cfg(addr, Proto::Tcp, vec![64], 0);
    c.stop = StopRule::Time {
        duration_ns: 150_000_000,
    };
    let r = rr::run(&c).unwrap();
    assert!(!r.failed(), "{}", r.table());
    let s = &r.sizes[0];
    assert!(s.count > 10, "{}", r.table());
    assert!(s.elapsed_ns >= 150_000_000, "{}", s.elapsed_ns);
    assert_eq!(r.to_result_doc().params["stop"]["rule"], "time");
}

#[test]
fn udp_losses_are_counted_exactly() {
    // Drops every other request (the first warm-up one included).
    let (addr, stop) = udp_peer(|i| (i % 2 == 1).then_some(Duration::ZERO));
    let mut c = cfg(addr, Proto::Udp, vec![64], 20);
    c.warmup = 4;
    c.timeout = Duration::from_millis(100);
    let r = rr::run(&c).unwrap();
    stop.store(true, Ordering::SeqCst);
    assert!(!r.failed(), "{}", r.table());
    let s = &r.sizes[0];
    assert_eq!(s.sent, 20);
    assert_eq!(s.lost, 10, "{}", r.table());
    assert_eq!(s.count, 10);
    assert_eq!(s.stray, 0);
    assert_eq!(r.to_result_doc().summary["lost"], 10);
}

#[test]
fn udp_burst_with_losses_and_small_messages() {
    let (addr, stop) = udp_peer(|i| (i % 2 == 1).then_some(Duration::ZERO));
    // One-byte messages: the sequence number is truncated to one byte.
    let mut c = cfg(addr, Proto::Udp, vec![1, 512], 40);
    c.warmup = 0;
    c.burst = 4;
    c.timeout = Duration::from_millis(100);
    let r = rr::run(&c).unwrap();
    stop.store(true, Ordering::SeqCst);
    assert!(!r.failed(), "{}", r.table());
    for s in &r.sizes {
        assert_eq!(s.sent, 40);
        assert_eq!(s.lost, 20, "{}", r.table());
        assert_eq!(s.count, 20);
    }
}

#[test]
fn udp_late_replies_are_lost_and_discarded() {
    // Every fourth reply comes 600 ms late, after a 150 ms time-out.
    let (addr, stop) = udp_peer(|i| {
        Some(if i % 4 == 0 {
            Duration::from_millis(600)
        } else {
            Duration::ZERO
        })
    });
    let mut c = cfg(addr, Proto::Udp, vec![100], 40);
    c.warmup = 0;
    c.timeout = Duration::from_millis(150);
    let r = rr::run(&c).unwrap();
    stop.store(true, Ordering::SeqCst);
    assert!(!r.failed(), "{}", r.table());
    let s = &r.sizes[0];
    assert_eq!(s.lost, 10, "{}", r.table());
    assert_eq!(s.count, 30);
    assert!(s.late >= 1 && s.late <= 10, "{}", r.table());
    assert_eq!(s.stray, 0);
    // No answered transaction may be slower than the time-out.
    assert!(s.rtt.max_ns <= 150_000_000);
}

#[test]
fn udp_silence_aborts_after_consecutive_losses() {
    let (addr, stop) = udp_peer(|_| None);
    let mut c = cfg(addr, Proto::Udp, vec![64, 128], 1000);
    c.timeout = Duration::from_millis(10);
    c.abort_after_losses = 5;
    let r = rr::run(&c).unwrap();
    stop.store(true, Ordering::SeqCst);
    assert!(r.failed());
    for s in &r.sizes {
        let why = s.aborted.as_deref().unwrap();
        assert!(why.contains("5 consecutive"), "{why}");
        assert_eq!(s.count, 0);
    }
}

#[test]
fn udp_cold_uses_a_socket_per_transaction() {
    let (addr, stop) = udp_peer(|_| Some(Duration::ZERO));
    let mut c = cfg(addr, Proto::Udp, vec![64], 30);
    c.cold = true;
    let r = rr::run(&c).unwrap();
    stop.store(true, Ordering::SeqCst);
    assert!(!r.failed(), "{}", r.table());
    let s = &r.sizes[0];
    assert_eq!(s.count, 30);
    assert_eq!(s.connect.as_ref().unwrap().count, 30);
}

#[test]
fn refused_tcp_connection_is_reported_not_hung() {
    // A port that was free a moment ago: nothing listens there.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let r = rr::run(&cfg(addr, Proto::Tcp, vec![64], 10)).unwrap();
    assert!(r.failed());
    let why = r.sizes[0].aborted.as_deref().unwrap();
    assert!(why.contains("connect"), "{why}");
}

#[test]
fn oversized_udp_is_a_config_error() {
    let c = cfg("127.0.0.1:7".parse().unwrap(), Proto::Udp, vec![70000], 10);
    let e = rr::run(&c).unwrap_err();
    assert!(matches!(e, rr::RrError::Config(_)), "{e}");
}
