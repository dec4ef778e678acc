//! Per-flow summary: 5-tuple, bytes, packets, duration, mean rate, TCP retransmissions, and the
//! round-trip time estimated from the handshake and from TCP timestamps.
//!
//! A flow is bidirectional; its first packet's source is the initiator. The RTT from timestamps
//! is the sum of the minimum "TSval seen → echoed TSecr seen" delay in each direction, which is
//! the full round trip wherever on the path the capture was taken.

use std::net::IpAddr;

use serde::Serialize;

use crate::decode::{Net, PacketInfo, Transport};
use crate::hash::FxHashMap;
use crate::mix::FragTable;

/// Canonical flow key: protocol and the two endpoints in sorted order.
type Key = (u8, (IpAddr, u16), (IpAddr, u16));

const TS_RING: usize = 8;

#[derive(Clone, Copy, Default)]
struct Dir {
    packets: u64,
    bytes: u64,
    payload: u64,
    retrans: u64,
    seq_end: Option<u32>,
    ts_ring: [(u32, u64); TS_RING],
    ts_len: usize,
    ts_pos: usize,
    rtt_min: Option<u64>,
    rtt_sum: u64,
    rtt_n: u64,
}

#[derive(Clone)]
struct Flow {
    init: (IpAddr, u16),
    resp: (IpAddr, u16),
    proto: u8,
    first: u64,
    last: u64,
    dir: [Dir; 2],
    syn: Option<u64>,
    synack: Option<u64>,
    handshake: Option<(u64, u64)>,
}

/// Sort order of the flow table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// Bytes, largest first.
    Bytes,
    /// Packets, most first.
    Packets,
    /// Duration, longest first.
    Duration,
    /// Mean rate, fastest first.
    Rate,
}

/// One flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowSummary {
    /// `tcp`, `udp`, `icmp` or the protocol number.
    pub proto: String,
    /// Initiator address.
    pub src: IpAddr,
    /// Initiator port (0 without ports).
    pub sport: u16,
    /// Responder address.
    pub dst: IpAddr,
    /// Responder port.
    pub dport: u16,
    /// Packets both ways.
    pub packets: u64,
    /// Bytes both ways (recorded frame lengths).
    pub bytes: u64,
    /// Packets initiator → responder.
    pub packets_fwd: u64,
    /// Bytes initiator → responder.
    pub bytes_fwd: u64,
    /// Packets responder → initiator.
    pub packets_rev: u64,
    /// Bytes responder → initiator.
    pub bytes_rev: u64,
    /// Transport payload bytes both ways.
    pub payload_bytes: u64,
    /// First packet, ns since the epoch.
    pub start_ns: u64,
    /// Last minus first packet time, ns.
    pub duration_ns: u64,
    /// Bytes × 8 / duration, bits per second (0 for a single instant).
    pub mean_rate_bps: f64,
    /// TCP segments whose data had all been seen before (retransmissions), both ways.
    pub retransmissions: u64,
    /// SYN → SYN-ACK → ACK round trip as seen at the capture point, ns.
    pub rtt_handshake_ns: Option<u64>,
    /// Round trip from TCP timestamps (sum of both directions' minimum echo delay), ns.
    pub rtt_ts_ns: Option<u64>,
    /// Number of timestamp echo samples behind `rtt_ts_ns`.
    pub rtt_ts_samples: u64,
}

/// Accumulates flows.
pub struct FlowTable {
    flows: FxHashMap<Key, Flow>,
    frags: FragTable,
    max_flows: usize,
    /// Packets of flows beyond the limit.
    pub untracked_packets: u64,
    /// Non-IP packets.
    pub non_ip_packets: u64,
}

impl FlowTable {
    /// A table that tracks up to `max_flows` flows.
    pub fn new(max_flows: usize) -> Self {
        FlowTable {
            flows: FxHashMap::default(),
            frags: FragTable::default(),
            max_flows,
            untracked_packets: 0,
            non_ip_packets: 0,
        }
    }

    /// Adds one packet.
    pub fn add(&mut self, ts: u64, orig_len: u32, info: &PacketInfo) {
        if !matches!(info.net, Net::Ipv4 | Net::Ipv6) {
            self.non_ip_packets += 1;
            return;
        }
        let (sp, dp) = self.frags.ports(info).unwrap_or((0, 0));
        let a = (info.src, sp);
        let b = (info.dst, dp);
        let key = if a <= b {
            (info.proto, a, b)
        } else {
            (info.proto, b, a)
        };
        let n = self.flows.len();
        let f = match self.flows.get_mut(&key) {
            Some(f) => f,
            None if n < self.max_flows => self.flows.entry(key).or_insert(Flow {
                init: a,
                resp: b,
                proto: info.proto,
                first: ts,
                last: ts,
                dir: [Dir::default(); 2],
                syn: None,
                synack: None,
                handshake: None,
            }),
            None => {
                self.untracked_packets += 1;
                return;
            }
        };
        let d = usize::from(a != f.init);
        f.first = f.first.min(ts);
        f.last = f.last.max(ts);
        let dir = &mut f.dir[d];
        dir.packets += 1;
        dir.bytes += orig_len as u64;
        dir.payload += info.payload_len as u64;
        if let Transport::Tcp(t) = info.transport {
            let syn = t.flags & 0x02 != 0;
            let ack = t.flags & 0x10 != 0;
            let fin = t.flags & 0x01 != 0;
            let seg_len = info.payload_len + u32::from(syn) + u32::from(fin);
            if seg_len > 0 {
                let end = t.seq.wrapping_add(seg_len);
                match dir.seq_end {
                    Some(m) if (m.wrapping_sub(end) as i32) >= 0 => dir.retrans += 1,
                    _ => dir.seq_end = Some(end),
                }
            }
            if syn && !ack && d == 0 {
                f.syn = Some(ts);
                f.synack = None;
            } else if syn && ack && d == 1 && f.syn.is_some() {
                f.synack = Some(ts);
            } else if !syn && ack && d == 0 && f.handshake.is_none() {
                if let (Some(s), Some(sa)) = (f.syn, f.synack) {
                    f.handshake = Some((sa.saturating_sub(s), ts.saturating_sub(sa)));
                }
            }
            if let Some((tsval, tsecr)) = t.ts {
                let dir = &mut f.dir[d];
                let last = dir.ts_ring[(dir.ts_pos + TS_RING - 1) % TS_RING];
                if dir.ts_len == 0 || last.0 != tsval {
                    dir.ts_ring[dir.ts_pos] = (tsval, ts);
                    dir.ts_pos = (dir.ts_pos + 1) % TS_RING;
                    dir.ts_len = (dir.ts_len + 1).min(TS_RING);
                }
                if ack {
                    let other = &mut f.dir[1 - d];
                    if let Some(slot) = other.ts_ring[..other.ts_len]
                        .iter_mut()
                        .find(|(v, t)| *v == tsecr && *t != u64::MAX)
                    {
                        let sample = ts.saturating_sub(slot.1);
                        slot.1 = u64::MAX;
                        other.rtt_min = Some(other.rtt_min.map_or(sample, |m| m.min(sample)));
                        other.rtt_sum += sample;
                        other.rtt_n += 1;
                    }
                }
            }
        }
    }

    /// Flows tracked so far.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// True if no flow was seen.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// The flows, sorted.
    pub fn finish(self, sort: SortBy) -> Vec<FlowSummary> {
        let mut v: Vec<FlowSummary> = self.flows.into_values().map(summarise).collect();
        let key = |f: &FlowSummary| -> f64 {
            match sort {
                SortBy::Bytes => f.bytes as f64,
                SortBy::Packets => f.packets as f64,
                SortBy::Duration => f.duration_ns as f64,
                SortBy::Rate => f.mean_rate_bps,
            }
        };
        v.sort_by(|a, b| {
            key(b)
                .total_cmp(&key(a))
                .then(a.start_ns.cmp(&b.start_ns))
                .then(a.src.cmp(&b.src))
                .then(a.sport.cmp(&b.sport))
        });
        v
    }
}

fn summarise(f: Flow) -> FlowSummary {
    let [fw, rv] = f.dir;
    let bytes = fw.bytes + rv.bytes;
    let duration = f.last - f.first;
    let rtt_ts = match (fw.rtt_min, rv.rtt_min) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    FlowSummary {
        proto: match f.proto {
            6 => "tcp".into(),
            17 => "udp".into(),
            1 | 58 => "icmp".into(),
            p => p.to_string(),
        },
        src: f.init.0,
        sport: f.init.1,
        dst: f.resp.0,
        dport: f.resp.1,
        packets: fw.packets + rv.packets,
        bytes,
        packets_fwd: fw.packets,
        bytes_fwd: fw.bytes,
        packets_rev: rv.packets,
        bytes_rev: rv.bytes,
        payload_bytes: fw.payload + rv.payload,
        start_ns: f.first,
        duration_ns: duration,
        mean_rate_bps: if duration == 0 {
            0.0
        } else {
            bytes as f64 * 8.0 * 1e9 / duration as f64
        },
        retransmissions: fw.retrans + rv.retrans,
        rtt_handshake_ns: f.handshake.map(|(a, b)| a + b),
        rtt_ts_ns: rtt_ts,
        rtt_ts_samples: fw.rtt_n + rv.rtt_n,
    }
}

/// The columns of [`to_csv`] in their order (the 5-tuple first, then the counts).
pub const CSV_COLUMNS: [&str; 19] = [
    "proto",
    "src",
    "sport",
    "dst",
    "dport",
    "packets",
    "bytes",
    "packets_fwd",
    "bytes_fwd",
    "packets_rev",
    "bytes_rev",
    "payload_bytes",
    "start_ns",
    "duration_ns",
    "mean_rate_bps",
    "retransmissions",
    "rtt_handshake_ns",
    "rtt_ts_ns",
    "rtt_ts_samples",
];

/// The flows as CSV (header line first), through the CSV writer every result file uses
/// ([`weft_report::csv`]); an unknown RTT is an empty cell.
pub fn to_csv(flows: &[FlowSummary]) -> String {
    let rows: Vec<serde_json::Value> = flows
        .iter()
        .map(|f| serde_json::to_value(f).unwrap_or_default())
        .collect();
    // Writing to memory cannot fail but for a bug; an empty string then says so loudly enough.
    weft_report::csv::rows_to_csv(&rows, &CSV_COLUMNS)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}
