//! Reading every container variant: pcap micro/nano × byte orders, modified pcap, pcapng in both
//! byte orders with several interfaces, timestamp resolutions, simple packet blocks, unknown
//! blocks, several sections, and gzip.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

mod common;

use std::io::Write;

use weft_trace::decode::linktype;
use weft_trace::synth::{L4, PcapWriter, PcapngWriter, frame_for, ipv4_packet};
use weft_trace::{CaptureReader, Format};

fn read_all(bytes: Vec<u8>) -> Vec<(u64, u32, Vec<u8>, u16, u32)> {
    let mut r = CaptureReader::with_chunk(std::io::Cursor::new(bytes), 100).unwrap();
    let mut v = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        v.push((p.ts_ns, p.orig_len, p.data.to_vec(), p.linktype, p.iface));
    }
    v
}

#[test]
fn pcap_micro_and_nano_in_both_byte_orders() {
    let f1 = common::udp_frame(60, 1, 2);
    let f2 = common::udp_frame(1514, 3, 4);
    for nanos in [false, true] {
        for be in [false, true] {
            let mut w = PcapWriter::new(Vec::new(), 1, nanos, be).unwrap();
            w.write(1_000_000_123_456_789, 60, &f1).unwrap();
            w.write(1_000_000_124_000_001, 3000, &f2[..100]).unwrap();
            let got = read_all(w.into_inner());
            assert_eq!(got.len(), 2, "nanos={nanos} be={be}");
            let frac = |ns: u64| if nanos { ns } else { ns / 1000 * 1000 };
            assert_eq!(got[0].0, frac(1_000_000_123_456_789));
            assert_eq!(got[1].0, frac(1_000_000_124_000_001));
            assert_eq!(got[0].2, f1);
            assert_eq!(got[1].1, 3000);
            assert_eq!(got[1].2, &f2[..100]);
            assert_eq!(got[0].3, 1);
        }
    }
}

#[test]
fn modified_pcap_records_have_eight_extra_bytes() {
    let f = common::udp_frame(64, 5, 6);
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_cd34u32.to_le_bytes());
    b.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1, 0, 0, 0]);
    for _ in 0..2 {
        for v in [7u32, 500_000, 64, 64] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&f);
    }
    let got = read_all(b);
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].0, 7_500_000_000);
    assert_eq!(got[1].2, f);
}

#[test]
fn pcapng_interfaces_resolutions_spb_unknown_blocks_both_byte_orders() {
    let ip = ipv4_packet(common::A, common::B, 1, L4::Udp(9, 10), &[1, 2, 3]);
    for be in [false, true] {
        let mut w = PcapngWriter::new(Vec::new(), be).unwrap();
        let eth = w.add_interface(linktype::ETHERNET, 6).unwrap();
        let raw = w.add_interface(linktype::RAW, 9).unwrap();
        let sll = w.add_interface(linktype::LINUX_SLL, 0x80 | 20).unwrap();
        w.write_custom(0x0bad, &[1, 2, 3, 4, 5]).unwrap();
        w.write_epb(
            eth,
            5_000_001_000,
            2000,
            &frame_for(linktype::ETHERNET, &ip),
        )
        .unwrap();
        w.write_epb(raw, 5_000_001_001, ip.len() as u32, &ip)
            .unwrap();
        // 2^-20 s units: 1 s + 2^19 units = 1.5 s exactly.
        w.write_epb(sll, 1_500_000_000, 40, &frame_for(linktype::LINUX_SLL, &ip))
            .unwrap();
        w.write_spb(77, &frame_for(linktype::ETHERNET, &ip))
            .unwrap();
        // Interface statistics block (type 5): skipped.
        w.write_custom(5, &[0; 12]).unwrap();
        let mut bytes = w.into_inner();
        // A second section in the other byte order with its own interface 0.
        let mut w2 = PcapngWriter::new(Vec::new(), !be).unwrap();
        let i0 = w2.add_interface(linktype::IPV4, 9).unwrap();
        w2.write_epb(i0, 9, ip.len() as u32, &ip).unwrap();
        bytes.extend(w2.into_inner());
        let got = read_all(bytes);
        assert_eq!(got.len(), 5, "be={be}");
        assert_eq!(
            (got[0].0, got[0].1, got[0].3, got[0].4),
            (5_000_001_000, 2000, 1, 0)
        );
        assert_eq!((got[1].0, got[1].3, got[1].4), (5_000_001_001, 101, 1));
        assert_eq!(got[1].2, ip);
        assert_eq!((got[2].0, got[2].3, got[2].4), (1_500_000_000, 113, 2));
        // The simple packet block takes its predecessor's time and interface 0's link type.
        assert_eq!((got[3].0, got[3].1, got[3].3), (1_500_000_000, 77, 1));
        assert_eq!((got[4].0, got[4].3), (9, 228));
        for g in &got {
            let info = weft_trace::decode(g.3, &g.2);
            assert_eq!(info.ports(), Some((9, 10)), "{g:?}");
        }
    }
}

#[test]
fn gzip_input_is_read_transparently() {
    let recs: Vec<(u64, Vec<u8>)> = (0..1000)
        .map(|i| (i * 1000, common::udp_frame(100 + i as usize % 50, 1, 2)))
        .collect();
    let plain = common::pcap_of(&recs);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    let mut r = CaptureReader::new(std::io::Cursor::new(gz)).unwrap();
    assert!(r.gzip());
    assert_eq!(r.format(), Format::Pcap);
    let mut n = 0;
    while let Some(p) = r.next_packet().unwrap() {
        assert_eq!(p.data, recs[n].1.as_slice());
        n += 1;
    }
    assert_eq!(n, 1000);
    assert_eq!(r.offset(), plain.len() as u64);
}
