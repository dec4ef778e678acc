//! Throughput tests over loopback: every mode, both transports, and the reconciled counts.

mod common;

use std::time::Duration;

use common::{agent, run, spec};
use weft_probe::proto::{Amount, Direction, Transport};
use weft_report::ResultDoc;

#[test]
fn tcp_forward_by_time_counts_match_and_doc_parses() {
    let h = agent(Duration::from_secs(5));
    let mut s = spec(Transport::Tcp, Direction::Forward, 300);
    s.interval_ns = Some(100_000_000);
    let r = run(&h, s).unwrap();
    let up = r.up.as_ref().unwrap();
    assert!(r.down.is_none());
    assert!(up.receiver_bytes > 0);
    assert_eq!(up.sender_bytes, up.receiver_bytes);
    assert!(up.goodput_bps > 0.0);
    assert!(r.remote_cpu.wall_ns > 0 && r.local_cpu.wall_ns > 0);
    assert!(!r.intervals.is_empty());
    assert!(
        r.intervals
            .iter()
            .all(|i| i.direction == "up" && i.measured_by == "agent")
    );
    let doc = ResultDoc::from_json(&r.to_result_doc().to_json_pretty()).unwrap();
    assert_eq!(doc.kind, "tput");
    assert_eq!(doc.summary["up"]["receiver_bytes"], up.receiver_bytes);
    h.shutdown();
    let sum = h.join().unwrap();
    assert_eq!(sum.tests_ok, 1);
}

#[test]
fn tcp_by_bytes_and_count_send_exactly_that() {
    let h = agent(Duration::from_secs(5));
    let mut s = spec(Transport::Tcp, Direction::Forward, 0);
    s.amount = Amount::Bytes(1_000_003);
    s.streams = 3;
    let r = run(&h, s.clone()).unwrap();
    assert_eq!(r.up.unwrap().receiver_bytes, 1_000_003);
    s.amount = Amount::Count(10);
    s.len = 1000;
    let r = run(&h, s).unwrap();
    assert_eq!(r.up.unwrap().receiver_bytes, 10_000);
}

#[test]
fn tcp_reverse_and_bidir() {
    let h = agent(Duration::from_secs(5));
    let mut s = spec(Transport::Tcp, Direction::Reverse, 200);
    s.interval_ns = Some(50_000_000);
    let r = run(&h, s).unwrap();
    let down = r.down.unwrap();
    assert!(r.up.is_none());
    assert!(down.receiver_bytes > 0);
    assert_eq!(down.sender_bytes, down.receiver_bytes);
    assert!(
        r.intervals
            .iter()
            .all(|i| i.direction == "down" && i.measured_by == "client")
    );
    let mut s = spec(Transport::Tcp, Direction::Bidir, 200);
    s.streams = 2;
    let r = run(&h, s).unwrap();
    let (up, down) = (r.up.unwrap(), r.down.unwrap());
    assert_eq!(up.streams.len(), 2);
    assert_eq!(down.streams.len(), 2);
    assert!(up.receiver_bytes > 0 && down.receiver_bytes > 0);
    assert_eq!(r.local_sockets.len(), 4);
}

#[test]
fn tcp_parallel_streams_all_carry_data() {
    let h = agent(Duration::from_secs(5));
    let mut s = spec(Transport::Tcp, Direction::Forward, 200);
    s.streams = 4;
    let r = run(&h, s).unwrap();
    let up = r.up.unwrap();
    assert_eq!(up.streams.len(), 4);
    for (snd, rcv) in &up.streams {
        assert!(rcv.bytes > 0);
        assert_eq!(snd.bytes, rcv.bytes);
    }
}

#[test]
fn window_mss_cc_nodelay_are_applied_and_reported() {
    let h = agent(Duration::from_secs(5));
    let mut s = spec(Transport::Tcp, Direction::Forward, 0);
    s.amount = Amount::Bytes(2_000_000);
    s.window = Some(100_000);
    s.mss = Some(1000);
    s.cc = Some("reno".into());
    s.nodelay = true;
    let r = run(&h, s).unwrap();
    for info in r.local_sockets.iter().chain(&r.remote_sockets) {
        // Linux doubles the request (see sockopt.rs).
        assert_eq!(info.rcvbuf, 200_000, "{info:?}");
        assert_eq!(info.sndbuf, 200_000, "{info:?}");
        assert_eq!(info.cc.as_deref(), Some("reno"));
        assert!(info.mss.unwrap() <= 1000, "{info:?}");
    }
    // A set buffer is locked: auto-tuning leaves it alone to the end.
    assert_eq!(r.local_sockets_end.len(), 1);
    assert_eq!(r.remote_sockets_end.len(), 1);
    assert_eq!(r.remote_sockets_end[0].rcvbuf, 200_000);
    let mut s = spec(Transport::Tcp, Direction::Forward, 100);
    s.cc = Some("no-such-cc".into());
    let e = run(&h, s).unwrap_err().to_string();
    assert!(e.contains("no-such-cc"), "{e}");
}

#[test]
fn udp_forward_with_rate_accounts_every_datagram() {
    let h = agent(Duration::from_secs(5));
    let mut s = spec(Transport::Udp, Direction::Forward, 300);
    s.rate_bps = Some(20_000_000);
    s.interval_ns = Some(100_000_000);
    let r = run(&h, s).unwrap();
    let up = r.up.unwrap();
    let u = up.udp.unwrap();
    assert!(u.expected > 0);
    assert_eq!(u.expected, up.sender_packets);
    assert_eq!(u.received + u.lost, u.expected);
    // At 20 Mbit/s for 0.3 s: about 625 datagrams of 1200 bytes; pacing, not a flood.
    assert!(up.sender_packets < 2000, "{}", up.sender_packets);
    assert!(!r.intervals.is_empty());
    // Interval loss changes sum to the gaps open at the last tick: at most the final loss
    // (loopback does not reorder, so no gap closes later).
    let lost: i64 = r.intervals.iter().map(|i| i.lost.unwrap()).sum();
    assert!(lost <= u.lost as i64, "{lost} vs {}", u.lost);
    assert!(r.intervals.iter().map(|i| i.packets).sum::<u64>() <= u.received);
}

#[test]
fn udp_reverse_and_bidir_by_count() {
    let h = agent(Duration::from_secs(5));
    let mut s = spec(Transport::Udp, Direction::Reverse, 0);
    s.amount = Amount::Count(500);
    s.rate_bps = Some(50_000_000);
    let r = run(&h, s).unwrap();
    let d = r.down.unwrap();
    assert_eq!(d.sender_packets, 500);
    assert_eq!(d.udp.as_ref().unwrap().expected, 500);
    let mut s = spec(Transport::Udp, Direction::Bidir, 0);
    s.amount = Amount::Count(300);
    s.streams = 2;
    s.rate_bps = Some(40_000_000);
    let r = run(&h, s).unwrap();
    assert_eq!(r.up.unwrap().sender_packets, 300);
    assert_eq!(r.down.unwrap().sender_packets, 300);
}

#[test]
fn one_agent_serves_several_clients_at_once() {
    let h = agent(Duration::from_secs(5));
    let addr = h.local_addr();
    let clients: Vec<_> = (0..3)
        .map(|i| {
            std::thread::spawn(move || {
                let transport = if i == 2 {
                    Transport::Udp
                } else {
                    Transport::Tcp
                };
                let mut s = spec(transport, Direction::Forward, 300);
                s.rate_bps = (i == 2).then_some(10_000_000);
                let cfg = weft_probe::tput::TputConfig {
                    server: addr,
                    spec: s,
                    connect_timeout: Duration::from_secs(5),
                    key: None,
                };
                weft_probe::tput::run(&cfg, &mut |_| {})
            })
        })
        .collect();
    let mut ids = Vec::new();
    for c in clients {
        let r = c.join().unwrap().unwrap();
        assert!(r.up.unwrap().receiver_bytes > 0);
        ids.push(r.test_id);
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3);
}
