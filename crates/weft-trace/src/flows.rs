//! Per-flow summary: 5-tuple, bytes, packets, duration, mean rate, TCP retransmissions, and the
//! round-trip time estimated from the handshake and from TCP timestamps.
//!
//! A flow is bidirectional; its first packet's source is the initiator. The RTT from timestamps
//! is the sum of the minimum "TSval seen → echoed TSecr seen" delay in each direction, which is
//! the full round trip wherever on the path the capture was taken.

use std::cmp::Ordering;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use indexmap::IndexMap;
use indexmap::map::Entry;
use serde::Serialize;

use crate::decode::{Net, PacketInfo, Transport};
use crate::mix::{FragStats, FragTable};
use rustc_hash::FxBuildHasher;

// Memory per tracked flow: the flows live in one vector (indexmap) of 128-byte entries (the
// key's hash, a 40-byte key, an 80-byte `Flow`), found through a hash index of 8 bytes a slot;
// a TCP flow adds a 300-byte `TcpFlow` on the heap. About 150 bytes for a UDP flow and 450 for
// a TCP one, plus the vector's spare capacity: a 1,000,000-flow capture in some 150-300 MB.
// Each packet costs one probe of the index, so time grows with the packets; the flows are
// sorted in place at the end (or, for a table, the top few picked in one pass).

/// The table: flows in insertion order, with a hash index over their keys.
type FlowMap = IndexMap<Key, Flow, FxBuildHasher>;

/// Canonical flow key: protocol and the two endpoints in sorted order, addresses in 16 bytes
/// (IPv4 as IPv4-mapped IPv6, told apart by `v6`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key {
    lo: [u8; 16],
    hi: [u8; 16],
    lo_port: u16,
    hi_port: u16,
    proto: u8,
    v6: bool,
}

fn addr_bytes(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
        IpAddr::V6(v) => v.octets(),
    }
}

fn addr_of(b: [u8; 16], v6: bool) -> IpAddr {
    let a = Ipv6Addr::from(b);
    match a.to_ipv4_mapped() {
        Some(v4) if !v6 => IpAddr::V4(v4),
        _ if !v6 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        _ => IpAddr::V6(a),
    }
}

/// Echoes of TCP timestamps remembered per direction, to match TSecr to the TSval it echoes.
const TS_RING: usize = 8;

/// "Not seen" for the optional times below (a capture's timestamps never reach it).
const NONE: u64 = u64::MAX;

/// Packets, bytes and payload bytes of one direction.
#[derive(Clone, Copy, Default)]
struct Counts {
    packets: u64,
    bytes: u64,
    payload: u64,
}

/// One flow: its counts per direction (0: initiator to responder) and, for TCP, its state.
struct Flow {
    first: u64,
    last: u64,
    dir: [Counts; 2],
    /// The initiator (the first packet's source) is the key's `lo` end.
    init_is_lo: bool,
    tcp: Option<Box<TcpFlow>>,
}

/// Retransmission and round-trip state of one direction of a TCP flow.
#[derive(Clone, Copy)]
struct TcpDir {
    retrans: u64,
    /// Highest sequence number sent (end of the data seen), once any data was.
    seq_end: Option<u32>,
    ts_val: [u32; TS_RING],
    /// When each remembered TSval was first seen; [`NONE`] once echoed.
    ts_at: [u64; TS_RING],
    ts_len: u8,
    ts_pos: u8,
    /// Shortest TSval-to-echo delay seen, [`NONE`] if none.
    rtt_min: u64,
    rtt_n: u64,
}

impl Default for TcpDir {
    fn default() -> Self {
        TcpDir {
            retrans: 0,
            seq_end: None,
            ts_val: [0; TS_RING],
            ts_at: [0; TS_RING],
            ts_len: 0,
            ts_pos: 0,
            rtt_min: NONE,
            rtt_n: 0,
        }
    }
}

/// The TCP part of a flow, allocated only for TCP flows.
struct TcpFlow {
    dir: [TcpDir; 2],
    syn: u64,
    synack: u64,
    /// SYN to SYN-ACK plus SYN-ACK to ACK, once seen.
    handshake: u64,
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

/// Bounds of a [`FlowTable`], each with a flag of `weft trace flows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowLimits {
    /// Flows tracked at most; packets of further flows are counted apart (`--max-flows`).
    pub max_flows: usize,
    /// IP datagrams whose first fragment's ports are remembered for their later fragments
    /// (`--max-fragments`).
    pub max_fragments: usize,
}

impl Default for FlowLimits {
    fn default() -> Self {
        FlowLimits {
            max_flows: 1_000_000,
            max_fragments: crate::mix::FRAG_TABLE_MAX,
        }
    }
}

/// Accumulates flows.
pub struct FlowTable {
    flows: FlowMap,
    frags: FragTable,
    max_flows: usize,
    /// Packets of flows beyond the limit.
    pub untracked_packets: u64,
    /// Bytes (recorded frame lengths) of flows beyond the limit.
    pub untracked_bytes: u64,
    /// Non-IP packets.
    pub non_ip_packets: u64,
}

impl FlowTable {
    /// A table that tracks up to `max_flows` flows.
    pub fn new(max_flows: usize) -> Self {
        Self::with_limits(FlowLimits {
            max_flows,
            ..FlowLimits::default()
        })
    }

    /// A table with these bounds.
    pub fn with_limits(limits: FlowLimits) -> Self {
        FlowTable {
            flows: FlowMap::default(),
            frags: FragTable::new(limits.max_fragments),
            max_flows: limits.max_flows,
            untracked_packets: 0,
            untracked_bytes: 0,
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
        let (s, d) = (addr_bytes(info.src), addr_bytes(info.dst));
        let src_is_lo = (s, sp) <= (d, dp);
        let key = if src_is_lo {
            Key {
                lo: s,
                hi: d,
                lo_port: sp,
                hi_port: dp,
                proto: info.proto,
                v6: info.net == Net::Ipv6,
            }
        } else {
            Key {
                lo: d,
                hi: s,
                lo_port: dp,
                hi_port: sp,
                proto: info.proto,
                v6: info.net == Net::Ipv6,
            }
        };
        let n = self.flows.len();
        // One probe of the table per packet (a lookup, then an insert, would be two cache
        // misses in a table of a million flows).
        let f = match self.flows.entry(key) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) if n < self.max_flows => v.insert(Flow {
                first: ts,
                last: ts,
                dir: [Counts::default(); 2],
                init_is_lo: src_is_lo,
                tcp: matches!(info.transport, Transport::Tcp(_)).then(|| {
                    Box::new(TcpFlow {
                        dir: [TcpDir::default(); 2],
                        syn: NONE,
                        synack: NONE,
                        handshake: NONE,
                    })
                }),
            }),
            Entry::Vacant(_) => {
                self.untracked_packets += 1;
                self.untracked_bytes += orig_len as u64;
                return;
            }
        };
        // Direction 0: from the initiator.
        let d = usize::from(src_is_lo != f.init_is_lo);
        f.first = f.first.min(ts);
        f.last = f.last.max(ts);
        let c = &mut f.dir[d];
        c.packets += 1;
        c.bytes += orig_len as u64;
        c.payload += info.payload_len as u64;
        if let (Transport::Tcp(t), Some(tcp)) = (info.transport, f.tcp.as_deref_mut()) {
            tcp.add(ts, d, info.payload_len, t.seq, t.flags, t.ts);
        }
    }

    /// Makes room for `flows` flows at once (at most the table's bound), so that the table
    /// does not grow step by step: re-indexing a growing table costs about as much again as
    /// filling it. Room not used costs address space, not memory (pages are touched only as
    /// flows arrive). A caller that knows the capture's size can bound the flows it may hold:
    /// [`max_flows_in`].
    pub fn reserve(&mut self, flows: usize) {
        let want = flows.min(self.max_flows).saturating_sub(self.flows.len());
        self.flows.reserve(want);
    }

    /// Flows tracked so far.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// True if no flow was seen.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// What the fragment table did (datagrams forgotten, fragments whose ports were unknown).
    pub fn fragments(&self) -> FragStats {
        self.frags.stats()
    }

    /// The flows, sorted.
    pub fn finish(self, sort: SortBy) -> Vec<FlowSummary> {
        let mut flows = self.into_flows();
        flows.sort(sort, None);
        flows.iter().collect()
    }

    /// The flows in their compact form, unsorted (see [`Flows::sort`]).
    pub fn into_flows(self) -> Flows {
        Flows {
            map: self.flows,
            top: None,
        }
    }
}

/// A capture's flows in their compact form, to sort and then read one [`FlowSummary`] at a
/// time (a million flows are never all expanded at once).
pub struct Flows {
    map: FlowMap,
    /// After a partial sort: the positions of the top flows, in order.
    top: Option<Vec<usize>>,
}

impl Flows {
    /// Number of flows.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sorts by `by`, largest first (ties: earlier start, then the endpoints). With `top`, only
    /// that many flows are picked, in one pass over the table, and [`Flows::iter`] yields just
    /// them.
    pub fn sort(&mut self, by: SortBy, top: Option<usize>) {
        match top {
            Some(n) if n < self.map.len() => {
                // The best `n` so far, best first; a flow that does not beat the last is
                // passed over with one comparison.
                let mut best: Vec<usize> = Vec::with_capacity(n + 1);
                for (i, f) in self.map.iter().enumerate() {
                    let last = best.last().and_then(|&j| self.map.get_index(j));
                    if n == 0 || (best.len() == n && last.is_some_and(|l| order(by, f, l).is_ge()))
                    {
                        continue;
                    }
                    let pos = best.partition_point(|&j| {
                        self.map
                            .get_index(j)
                            .is_some_and(|b| order(by, b, f).is_le())
                    });
                    best.insert(pos, i);
                    best.truncate(n);
                }
                self.top = Some(best);
            }
            _ => {
                self.map
                    .sort_unstable_by(|ka, fa, kb, fb| order(by, (ka, fa), (kb, fb)));
                self.top = None;
            }
        }
    }

    /// The flows in their current order, each summarised when it is reached.
    pub fn iter(&self) -> Box<dyn Iterator<Item = FlowSummary> + '_> {
        match &self.top {
            Some(ix) => Box::new(
                ix.iter()
                    .filter_map(|&i| self.map.get_index(i))
                    .map(|(k, f)| summarise(k, f)),
            ),
            None => Box::new(self.map.iter().map(|(k, f)| summarise(k, f))),
        }
    }
}

/// `a` before `b` when sorting by `by`: larger first, then earlier, then by endpoints.
fn order(by: SortBy, a: (&Key, &Flow), b: (&Key, &Flow)) -> Ordering {
    let value = |f: &Flow| -> f64 {
        let bytes = f.dir[0].bytes + f.dir[1].bytes;
        match by {
            SortBy::Bytes => bytes as f64,
            SortBy::Packets => (f.dir[0].packets + f.dir[1].packets) as f64,
            SortBy::Duration => (f.last - f.first) as f64,
            SortBy::Rate => rate_bps(bytes, f.last - f.first),
        }
    };
    value(b.1)
        .total_cmp(&value(a.1))
        .then(a.1.first.cmp(&b.1.first))
        .then(a.0.cmp(b.0))
}

/// The most flows a pcap or pcapng file of `bytes` bytes can hold: one per record of at least
/// 16 bytes of record header and a 20-byte IP header.
pub fn max_flows_in(bytes: u64) -> usize {
    usize::try_from(bytes / 36).unwrap_or(usize::MAX)
}

fn rate_bps(bytes: u64, duration_ns: u64) -> f64 {
    if duration_ns == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 * 1e9 / duration_ns as f64
    }
}

impl TcpFlow {
    /// Adds a segment travelling in direction `d` (0: from the initiator).
    fn add(
        &mut self,
        ts: u64,
        d: usize,
        payload: u32,
        seq: u32,
        flags: u8,
        tsopt: Option<(u32, u32)>,
    ) {
        let syn = flags & 0x02 != 0;
        let ack = flags & 0x10 != 0;
        let fin = flags & 0x01 != 0;
        let dir = &mut self.dir[d];
        let seg_len = payload + u32::from(syn) + u32::from(fin);
        if seg_len > 0 {
            let end = seq.wrapping_add(seg_len);
            match dir.seq_end {
                Some(m) if (m.wrapping_sub(end) as i32) >= 0 => dir.retrans += 1,
                _ => dir.seq_end = Some(end),
            }
        }
        if syn && !ack && d == 0 {
            self.syn = ts;
            self.synack = NONE;
        } else if syn && ack && d == 1 && self.syn != NONE {
            self.synack = ts;
        } else if !syn
            && ack
            && d == 0
            && self.handshake == NONE
            && self.syn != NONE
            && self.synack != NONE
        {
            self.handshake = self.synack.saturating_sub(self.syn) + ts.saturating_sub(self.synack);
        }
        let Some((tsval, tsecr)) = tsopt else { return };
        let dir = &mut self.dir[d];
        let last = (dir.ts_pos as usize + TS_RING - 1) % TS_RING;
        if dir.ts_len == 0 || dir.ts_val[last] != tsval {
            let p = dir.ts_pos as usize;
            dir.ts_val[p] = tsval;
            dir.ts_at[p] = ts;
            dir.ts_pos = ((p + 1) % TS_RING) as u8;
            dir.ts_len = (dir.ts_len + 1).min(TS_RING as u8);
        }
        if ack {
            let other = &mut self.dir[1 - d];
            let n = other.ts_len as usize;
            if let Some(i) = (0..n).find(|&i| other.ts_val[i] == tsecr && other.ts_at[i] != NONE) {
                let sample = ts.saturating_sub(other.ts_at[i]);
                other.ts_at[i] = NONE;
                other.rtt_min = other.rtt_min.min(sample);
                other.rtt_n += 1;
            }
        }
    }
}

fn summarise(k: &Key, f: &Flow) -> FlowSummary {
    let [fw, rv] = f.dir;
    let bytes = fw.bytes + rv.bytes;
    let duration = f.last - f.first;
    let lo = (addr_of(k.lo, k.v6), k.lo_port);
    let hi = (addr_of(k.hi, k.v6), k.hi_port);
    let (init, resp) = if f.init_is_lo { (lo, hi) } else { (hi, lo) };
    let some = |v: u64| (v != NONE).then_some(v);
    let (retrans, rtt_handshake, rtt_ts, samples) = match f.tcp.as_deref() {
        None => (0, None, None, 0),
        Some(t) => {
            let rtt_ts = match (some(t.dir[0].rtt_min), some(t.dir[1].rtt_min)) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            (
                t.dir[0].retrans + t.dir[1].retrans,
                some(t.handshake),
                rtt_ts,
                t.dir[0].rtt_n + t.dir[1].rtt_n,
            )
        }
    };
    FlowSummary {
        proto: match k.proto {
            6 => "tcp".into(),
            17 => "udp".into(),
            1 | 58 => "icmp".into(),
            p => p.to_string(),
        },
        src: init.0,
        sport: init.1,
        dst: resp.0,
        dport: resp.1,
        packets: fw.packets + rv.packets,
        bytes,
        packets_fwd: fw.packets,
        bytes_fwd: fw.bytes,
        packets_rev: rv.packets,
        bytes_rev: rv.bytes,
        payload_bytes: fw.payload + rv.payload,
        start_ns: f.first,
        duration_ns: duration,
        mean_rate_bps: rate_bps(bytes, duration),
        retransmissions: retrans,
        rtt_handshake_ns: rtt_handshake,
        rtt_ts_ns: rtt_ts,
        rtt_ts_samples: samples,
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

/// The header line of the CSV form, [`CSV_COLUMNS`] (with its newline), for writing flows one
/// at a time with [`csv_row`] (a capture of millions of flows is never held as text at once).
pub fn csv_header() -> String {
    let mut h = CSV_COLUMNS.join(",");
    h.push('\n');
    h
}

/// One flow as a CSV line in the columns of [`CSV_COLUMNS`] (with its newline); every cell is
/// a number, an address or a protocol name, so none needs quoting.
pub fn csv_row(f: &FlowSummary) -> String {
    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.0},{},{},{},{}\n",
        f.proto,
        f.src,
        f.sport,
        f.dst,
        f.dport,
        f.packets,
        f.bytes,
        f.packets_fwd,
        f.bytes_fwd,
        f.packets_rev,
        f.bytes_rev,
        f.payload_bytes,
        f.start_ns,
        f.duration_ns,
        f.mean_rate_bps,
        f.retransmissions,
        opt(f.rtt_handshake_ns),
        opt(f.rtt_ts_ns),
        f.rtt_ts_samples
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CaptureReader;
    use crate::synth::SyntheticPcap;

    #[test]
    fn a_flow_costs_a_few_hundred_bytes_with_its_tcp_state() {
        // An entry of the table: hash, key and flow (see the note at the top of the file).
        let entry = 8 + std::mem::size_of::<Key>() + std::mem::size_of::<Flow>();
        assert!(entry <= 128, "{entry} bytes an entry");
        let tcp = std::mem::size_of::<TcpFlow>();
        assert!(tcp <= 320, "{tcp} bytes of TCP state");
    }

    /// `flows` one-packet flows of 60 bytes, then 37 flows of some 50 packets of 100 bytes
    /// each (so that sizes, durations and rates differ).
    fn table(flows: u64, limits: FlowLimits) -> FlowTable {
        let mut t = FlowTable::with_limits(limits);
        let one = SyntheticPcap::new(flows, 60, 1_000, 1_000, 1).distinct_flows();
        let many = SyntheticPcap::new(2000, 100, 7_000, 3_000, 37);
        for g in [one, many] {
            let mut r = CaptureReader::new(g).unwrap();
            crate::for_each_packet(&mut r, |p, i| t.add(p.ts_ns, p.orig_len, i));
        }
        t
    }

    #[test]
    fn flows_past_the_bound_are_counted_not_kept() {
        let t = table(
            1000,
            FlowLimits {
                max_flows: 300,
                ..FlowLimits::default()
            },
        );
        assert_eq!(t.len(), 300);
        assert_eq!(t.untracked_packets, 700 + 2000);
        assert_eq!(t.untracked_bytes, 700 * 60 + 2000 * 100);
    }

    #[test]
    fn the_top_rows_are_those_of_the_full_sort() {
        for by in [
            SortBy::Bytes,
            SortBy::Packets,
            SortBy::Duration,
            SortBy::Rate,
        ] {
            let full = table(5000, FlowLimits::default()).finish(by);
            assert_eq!(full.len(), 5037);
            assert!(full.iter().any(|f| f.packets > 1));
            for n in [0, 1, 7, 20, 40, 5036, 5037, 6000] {
                let mut f = table(5000, FlowLimits::default()).into_flows();
                f.sort(by, Some(n));
                let top: Vec<FlowSummary> = f.iter().collect();
                assert_eq!(top, full[..n.min(full.len())], "{by:?} top {n}");
            }
        }
    }

    #[test]
    fn reserving_room_changes_nothing_but_speed() {
        let mut t = FlowTable::new(100);
        t.reserve(usize::MAX);
        t.reserve(max_flows_in(1 << 40));
        assert!(t.is_empty());
        assert_eq!(max_flows_in(36 * 10), 10);
    }
}
