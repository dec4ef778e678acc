//! Helpers shared by the capture tests (included with `mod common;`).
#![allow(clippy::unwrap_used, dead_code)] // Tests: a failed unwrap is a failed test.

use std::net::Ipv4Addr;

use weft_trace::synth::{L4, PcapWriter, ethernet_frame, ipv4_packet};

/// The first test host.
pub const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The second test host.
pub const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// An Ethernet/IPv4/UDP frame of exactly `len` bytes (len >= 42).
pub fn udp_frame(len: usize, sport: u16, dport: u16) -> Vec<u8> {
    let ip = ipv4_packet(A, B, 7, L4::Udp(sport, dport), &vec![0x11; len - 42]);
    ethernet_frame(&ip)
}

/// A pcap (µs, little-endian, Ethernet) of `(ts_ns, frame)` records.
pub fn pcap_of(records: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), 1, false, false).unwrap();
    for (t, f) in records {
        w.write(*t, f.len() as u32, f).unwrap();
    }
    w.into_inner()
}
