//! Flow summaries (handshake and timestamp RTT, retransmissions) and the two-point latency
//! breakdown, on captures written by the tests with known timings.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

mod common;

use std::net::Ipv4Addr;

use weft_trace::CaptureReader;
use weft_trace::flows::{FlowTable, SortBy};
use weft_trace::latency;
use weft_trace::synth::{L4, ethernet_frame, ipv4_packet};

const US: u64 = 1000;

#[allow(clippy::too_many_arguments)]
fn tcp_ts(
    from_client: bool,
    seq: u32,
    ack: u32,
    flags: u8,
    tsval: u32,
    tsecr: u32,
    len: usize,
) -> Vec<u8> {
    let (src, dst, sp, dp) = if from_client {
        (common::A, common::B, 5000u16, 80u16)
    } else {
        (common::B, common::A, 80, 5000)
    };
    let mut t = Vec::new();
    t.extend_from_slice(&sp.to_be_bytes());
    t.extend_from_slice(&dp.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[8 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(&[1, 1, 8, 10]);
    t.extend_from_slice(&tsval.to_be_bytes());
    t.extend_from_slice(&tsecr.to_be_bytes());
    t.resize(t.len() + len, 0x33);
    let mut p = ipv4_packet(src, dst, 1, L4::Icmp, &[]);
    p.truncate(20);
    p[9] = 6;
    p[2..4].copy_from_slice(&((20 + t.len()) as u16).to_be_bytes());
    p.extend_from_slice(&t);
    ethernet_frame(&p)
}

#[test]
fn tcp_flow_rtt_from_handshake_and_timestamps_and_retransmissions() {
    let (syn, ack, psh) = (0x02u8, 0x10u8, 0x18u8);
    let recs = vec![
        (0, tcp_ts(true, 100, 0, syn, 1000, 0, 0)),
        (300 * US, tcp_ts(false, 900, 101, syn | ack, 5000, 1000, 0)),
        (1000 * US, tcp_ts(true, 101, 901, ack, 1001, 5000, 0)),
        (2000 * US, tcp_ts(true, 101, 901, psh, 1002, 5000, 100)),
        (2400 * US, tcp_ts(false, 901, 201, ack, 5001, 1002, 0)),
        (3000 * US, tcp_ts(true, 101, 901, psh, 1003, 5001, 100)),
        (3100 * US, tcp_ts(false, 901, 201, ack, 5002, 1003, 0)),
    ];
    let bytes = common::pcap_of(&recs);
    let mut r = CaptureReader::new(std::io::Cursor::new(bytes)).unwrap();
    let mut t = FlowTable::new(100);
    assert!(weft_trace::for_each_packet(&mut r, |p, i| t.add(p.ts_ns, p.orig_len, i)).is_none());
    let flows = t.finish(SortBy::Bytes);
    assert_eq!(flows.len(), 1);
    let f = &flows[0];
    assert_eq!((f.proto.as_str(), f.sport, f.dport), ("tcp", 5000, 80));
    assert_eq!(f.src.to_string(), "10.0.0.1");
    assert_eq!((f.packets, f.packets_fwd, f.packets_rev), (7, 4, 3));
    assert_eq!(f.bytes, recs.iter().map(|r| r.1.len() as u64).sum::<u64>());
    assert_eq!(f.payload_bytes, 200);
    assert_eq!(f.duration_ns, 3100 * US);
    assert_eq!(f.retransmissions, 1);
    assert_eq!(f.rtt_handshake_ns, Some(1000 * US));
    // Client-side echo minimum 100 µs (the retransmission's), server side 600 µs.
    assert_eq!(f.rtt_ts_ns, Some(700 * US));
    assert_eq!(f.rtt_ts_samples, 5);
    let rate = f.bytes as f64 * 8.0 / 0.0031;
    assert!((f.mean_rate_bps - rate).abs() < 1e-6);
}

#[test]
fn udp_flows_sort_and_csv() {
    let mut recs = Vec::new();
    for k in 0..5u64 {
        recs.push((k * 1_000_000, common::udp_frame(100, 1111, 53)));
    }
    recs.push((10_000_000, common::udp_frame(1000, 2222, 53)));
    let mut r = CaptureReader::new(std::io::Cursor::new(common::pcap_of(&recs))).unwrap();
    let mut t = FlowTable::new(100);
    weft_trace::for_each_packet(&mut r, |p, i| t.add(p.ts_ns, p.orig_len, i));
    let by_bytes = {
        let mut r = CaptureReader::new(std::io::Cursor::new(common::pcap_of(&recs))).unwrap();
        let mut t2 = FlowTable::new(100);
        weft_trace::for_each_packet(&mut r, |p, i| t2.add(p.ts_ns, p.orig_len, i));
        t2.finish(SortBy::Bytes)
    };
    let by_packets = t.finish(SortBy::Packets);
    assert_eq!(by_bytes[0].sport, 2222);
    assert_eq!(by_packets[0].sport, 1111);
    assert_eq!(by_packets[0].duration_ns, 4_000_000);
    assert_eq!(by_bytes[0].mean_rate_bps, 0.0);
    let csv = weft_trace::flows::to_csv(&by_packets);
    assert_eq!(csv.lines().count(), 3);
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("udp,10.0.0.1,1111,10.0.0.2,53,5,500,")
    );
}

fn echo(from_client: bool, id: u16, size: usize) -> Vec<u8> {
    let (s, d, sp, dp) = if from_client {
        (common::A, common::B, 5555, 7)
    } else {
        (common::B, common::A, 7, 5555)
    };
    ethernet_frame(&ipv4_packet(s, d, id, L4::Udp(sp, dp), &vec![0xab; size]))
}

#[test]
fn two_point_breakdown_recovers_each_part_and_the_clock_offset() {
    let theta: i64 = 250_000; // B's clock runs 250 µs ahead of A's.
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut t: u64 = 1_000_000_000_000;
    let mut truth = Vec::new();
    let sizes = [64usize, 512];
    let n = 5;
    let mut id = 1u16;
    for (si, &size) in sizes.iter().enumerate() {
        for k in 0..n {
            let fwd = 20 * US + (k as u64 * 7 % 5) * US + si as u64 * 40 * US;
            let ret = 20 * US + (k as u64 * 3 % 4) * US + si as u64 * 40 * US;
            let server = 100 * US + size as u64 / 8 * US + k as u64 * US;
            let client = 50 * US + k as u64 * 3 * US;
            let bt = |x: u64| (x as i64 + theta) as u64;
            a.push((t, echo(true, id, size)));
            b.push((bt(t + fwd), echo(true, id, size)));
            b.push((bt(t + fwd + server), echo(false, 9000 + id, size)));
            let rep_a = t + fwd + server + ret;
            a.push((rep_a, echo(false, 9000 + id, size)));
            truth.push((size, fwd, ret, server, client));
            t = rep_a + client;
            id += 1;
        }
    }
    // A request lost between the taps: in A only, never answered.
    a.push((t, echo(true, id, 64)));
    let pa = {
        let mut r = CaptureReader::new(std::io::Cursor::new(common::pcap_of(&a))).unwrap();
        latency::pairs_from(&mut r, Some(7)).0
    };
    let mut pb = {
        let mut r = CaptureReader::new(std::io::Cursor::new(common::pcap_of(&b))).unwrap();
        latency::pairs_from(&mut r, None).0
    };
    assert_eq!(pa.len(), 10);
    assert_eq!(pb.len(), 10);
    // Unrelated traffic with a payload in B is ignored.
    pb.add(
        0,
        &common::udp_frame(80, 1, 2),
        &weft_trace::decode(1, &common::udp_frame(80, 1, 2)),
        Some(7),
    );
    let r = latency::breakdown(pa, pb);
    assert_eq!(r.clock_offset_ns, theta);
    assert_eq!(
        (r.matched, r.unmatched_a, r.unmatched_b, r.unanswered_a),
        (10, 0, 0, 1)
    );
    assert!(!r.swapped_suspected);
    for (row, &(size, fwd, ret, server, _)) in r.exchanges.iter().zip(&truth) {
        assert_eq!(row.size as usize, size);
        assert_eq!(row.fwd_ns, fwd as i64);
        assert_eq!(row.ret_ns, ret as i64);
        assert_eq!(row.b_ns, server as i64);
        assert_eq!(row.a_ns, (fwd + server + ret) as i64);
    }
    // C and D: the client's latency, and the client's plus the switch both ways.
    for i in 0..9 {
        let row = &r.exchanges[i];
        let (_, _, ret, _, client) = truth[i];
        let fwd_next = truth[i + 1].1;
        assert_eq!(row.c_ns, Some(client as i64));
        assert_eq!(row.d_ns, Some((ret + client + fwd_next) as i64));
    }
    assert_eq!(r.exchanges[9].c_ns, None);
    assert_eq!(r.per_size.len(), 2);
    let s64 = &r.per_size[0];
    assert_eq!((s64.size, s64.server.n), (64, 5));
    assert_eq!(s64.switch_fwd.min_ns, 20_000);
    assert_eq!(r.per_size[1].switch_ret.min_ns, 60_000);
    let mean_sw: f64 = truth[..5].iter().map(|x| (x.1 + x.2) as f64).sum::<f64>() / 5.0;
    assert!((s64.switch_rtt.mean_ns - mean_sw).abs() < 1e-9);
    let _ = Ipv4Addr::LOCALHOST;
}

#[test]
fn tcp_echo_is_matched_by_payload_and_pure_acks_are_ignored() {
    let tcp = |from_client: bool, seq: u32, flags: u8, payload: &[u8]| {
        let (s, d, sp, dp) = if from_client {
            (common::A, common::B, 6000, 7)
        } else {
            (common::B, common::A, 7, 6000)
        };
        ethernet_frame(&ipv4_packet(
            s,
            d,
            seq as u16,
            L4::Tcp(sp, dp, seq, 1, flags),
            payload,
        ))
    };
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut t = 1_000_000_000u64;
    for k in 0..4u32 {
        let msg = vec![k as u8; 200];
        a.push((t, tcp(true, 1 + 200 * k, 0x18, &msg)));
        b.push((t + 40 * US, tcp(true, 1 + 200 * k, 0x18, &msg)));
        b.push((t + 60 * US, tcp(false, 1, 0x10, &[])));
        b.push((t + 340 * US, tcp(false, 1 + 200 * k, 0x18, &msg)));
        a.push((t + 380 * US, tcp(false, 1 + 200 * k, 0x18, &msg)));
        a.push((t + 390 * US, tcp(true, 201 + 200 * k, 0x10, &[])));
        t += 1000 * US;
    }
    let pairs = |recs: &[(u64, Vec<u8>)]| {
        let mut r = CaptureReader::new(std::io::Cursor::new(common::pcap_of(recs))).unwrap();
        latency::pairs_from(&mut r, Some(7)).0
    };
    let r = latency::breakdown(pairs(&a), pairs(&b));
    assert_eq!(r.matched, 4);
    assert_eq!(r.clock_offset_ns, 0);
    let row = &r.per_size[0];
    assert_eq!(row.size, 200);
    assert_eq!(row.server.median_ns, 300_000.0);
    assert_eq!(row.switch_fwd.median_ns, 40_000.0);
    assert_eq!(row.switch_ret.median_ns, 40_000.0);
}
