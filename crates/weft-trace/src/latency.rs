//! Two-point latency breakdown, after the GIGAswitch study (its Figure 9 and Tables 12-19).
//!
//! Capture A is taken near the echo client, capture B near the echo server, of the same traffic.
//! In each capture every request is paired with its reply (same transport endpoints reversed, same
//! payload). Requests are matched across the captures by protocol, endpoints, IP identification,
//! a payload hash and the occurrence count of that combination. Per exchange, as in the study:
//!
//! - A: round trip at the client-side tap (request out → reply back);
//! - B: round trip at the server-side tap, the server's latency;
//! - C: at the client tap, reply → the client's next request (the client's latency);
//! - D: at the server tap, reply → the next request (client plus switch both ways);
//! - A − B: the switch round trip in the forward sense, D − C in the echo sense.
//!
//! Unlike the study's analyser, which took the two sides in separate runs, both captures here are
//! of the same packets, so the switch round trip also splits into one-way parts. That needs the
//! offset θ between the two capture clocks: with `fwd = t_B(req) − t_A(req)` and
//! `ret = t_A(rep) − t_B(rep)`, θ is estimated as `(min fwd − min ret) / 2`, i.e. assuming the
//! fastest forward and return crossings of the switch take equally long. A − B = fwd + ret does
//! not depend on θ.

use std::collections::VecDeque;
use std::hash::Hasher;
use std::net::IpAddr;

use serde::Serialize;

use crate::capture::CaptureReader;
use crate::decode::{PacketInfo, Transport};
use crate::error::CaptureError;
use rustc_hash::{FxHashMap, FxHasher};

type Endpoint = (IpAddr, u16);

/// Identity of a request: protocol, client, server, IP id, payload hash.
type ReqKey = (u8, Endpoint, Endpoint, u32, u64);

/// A request waiting for its reply: protocol, source, destination, payload hash.
type PendingKey = (u8, Endpoint, Endpoint, u64);

/// When a pending request was seen, its IP id and payload length.
type PendingReq = (u64, u32, u32);

#[derive(Clone, Copy, Debug)]
struct Exchange {
    key: ReqKey,
    occ: u32,
    t_req: u64,
    t_rep: u64,
    size: u32,
}

/// Bounds of the request/reply matching of one capture (both tables are keyed by what the
/// capture holds), each with a flag of `weft trace latency`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyLimits {
    /// Requests waiting for their reply at once; past it they are all given up as unanswered
    /// (`--max-pending`).
    pub max_pending: usize,
    /// Exchanges kept for the breakdown (about 150 bytes each); later ones are counted in
    /// [`EchoPairs::left_out`] (`--max-exchanges`).
    pub max_exchanges: usize,
}

impl Default for LatencyLimits {
    fn default() -> Self {
        LatencyLimits {
            max_pending: 1 << 20,
            max_exchanges: 2_000_000,
        }
    }
}

/// Request/reply pairs found in one capture.
#[derive(Default)]
pub struct EchoPairs {
    pending: FxHashMap<PendingKey, VecDeque<PendingReq>>,
    pending_len: usize,
    occ: FxHashMap<ReqKey, u32>,
    done: Vec<Exchange>,
    limits: LatencyLimits,
    /// Requests that never saw a reply (or were given up when too many waited).
    pub unanswered: u64,
    /// Exchanges found beyond the limit, not kept for the breakdown.
    pub left_out: u64,
}

fn payload_hash(p: &[u8], len: u32) -> u64 {
    let mut h = FxHasher::default();
    h.write_u32(len);
    h.write(&p[..p.len().min(32)]);
    h.finish()
}

impl EchoPairs {
    /// Adds one packet of the capture (packets without a TCP/UDP payload are ignored; with
    /// `port`, so are those not to or from it).
    pub fn add(&mut self, ts: u64, frame: &[u8], info: &PacketInfo, port: Option<u16>) {
        let (sp, dp) = match info.transport {
            Transport::Tcp(t) => (t.sport, t.dport),
            Transport::Udp { sport, dport } => (sport, dport),
            _ => return,
        };
        if info.payload_len == 0 || port.is_some_and(|p| p != sp && p != dp) {
            return;
        }
        let h = payload_hash(info.payload(frame), info.payload_len);
        let src = (info.src, sp);
        let dst = (info.dst, dp);
        // A reply travels the reverse way with the same payload.
        if let Some(q) = self.pending.get_mut(&(info.proto, dst, src, h)) {
            if let Some((t_req, id, size)) = q.pop_front() {
                self.pending_len -= 1;
                if q.is_empty() {
                    self.pending.remove(&(info.proto, dst, src, h));
                }
                if self.done.len() >= self.limits.max_exchanges {
                    self.left_out += 1;
                    return;
                }
                let key = (info.proto, dst, src, id, h);
                let occ = self.occ.entry(key).or_insert(0);
                *occ += 1;
                self.done.push(Exchange {
                    key,
                    occ: *occ,
                    t_req,
                    t_rep: ts,
                    size,
                });
                return;
            }
        }
        if self.pending_len >= self.limits.max_pending {
            self.unanswered += self.pending_len as u64;
            self.pending.clear();
            self.pending_len = 0;
        }
        self.pending
            .entry((info.proto, src, dst, h))
            .or_default()
            .push_back((ts, info.ip_id, info.payload_len));
        self.pending_len += 1;
    }

    /// Exchanges found.
    pub fn len(&self) -> usize {
        self.done.len()
    }

    /// True if none were found.
    pub fn is_empty(&self) -> bool {
        self.done.is_empty()
    }
}

/// Reads a whole capture into request/reply pairs; also returns the read error, if any.
pub fn pairs_from(
    reader: &mut CaptureReader,
    port: Option<u16>,
) -> (EchoPairs, Option<CaptureError>) {
    pairs_within(reader, port, LatencyLimits::default())
}

/// [`pairs_from`] with other bounds.
pub fn pairs_within(
    reader: &mut CaptureReader,
    port: Option<u16>,
    limits: LatencyLimits,
) -> (EchoPairs, Option<CaptureError>) {
    let mut pairs = EchoPairs {
        limits,
        ..EchoPairs::default()
    };
    let err = crate::for_each_packet(reader, |p, info| pairs.add(p.ts_ns, p.data, info, port));
    pairs.unanswered += pairs.pending_len as u64;
    (pairs, err)
}

/// Statistics of one component over the exchanges of one size, in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stat {
    /// Values.
    pub n: u64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Median, ns.
    pub median_ns: f64,
    /// Minimum, ns.
    pub min_ns: i64,
    /// Maximum, ns.
    pub max_ns: i64,
}

fn stat(mut v: Vec<i64>) -> Stat {
    if v.is_empty() {
        return Stat::default();
    }
    v.sort_unstable();
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0
    };
    Stat {
        n: n as u64,
        mean_ns: v.iter().map(|&x| x as f64).sum::<f64>() / n as f64,
        median_ns: median,
        min_ns: v[0],
        max_ns: v[n - 1],
    }
}

/// One matched exchange, all times in ns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExchangeRow {
    /// Request payload, bytes.
    pub size: u32,
    /// Request seen at the client tap, ns since the epoch (A's clock).
    pub t_ns: u64,
    /// A: round trip at the client tap.
    pub a_ns: i64,
    /// B: round trip at the server tap (server latency).
    pub b_ns: i64,
    /// C: client latency (reply → next request at the client tap), if a next request exists.
    pub c_ns: Option<i64>,
    /// D: reply → next request at the server tap.
    pub d_ns: Option<i64>,
    /// Forward one-way switch delay, corrected for the clock offset.
    pub fwd_ns: i64,
    /// Return one-way switch delay, corrected for the clock offset.
    pub ret_ns: i64,
}

/// Breakdown for one request size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeRow {
    /// Request payload, bytes.
    pub size: u32,
    /// A.
    pub rtt_client_tap: Stat,
    /// B: the server's latency.
    pub server: Stat,
    /// C: the client's latency.
    pub client: Stat,
    /// D.
    pub d: Stat,
    /// A − B: switch round trip (forward sense).
    pub switch_rtt: Stat,
    /// D − C: switch round trip (echo sense).
    pub switch_rtt_echo: Stat,
    /// Forward one-way through the switch.
    pub switch_fwd: Stat,
    /// Return one-way through the switch.
    pub switch_ret: Stat,
}

/// The result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyReport {
    /// Clock of B minus clock of A, ns (estimate).
    pub clock_offset_ns: i64,
    /// How the offset was estimated.
    pub clock_offset_method: &'static str,
    /// Exchanges matched in both captures.
    pub matched: u64,
    /// Exchanges in A without a counterpart in B.
    pub unmatched_a: u64,
    /// Exchanges in B without a counterpart in A.
    pub unmatched_b: u64,
    /// Requests without reply in A.
    pub unanswered_a: u64,
    /// Requests without reply in B.
    pub unanswered_b: u64,
    /// Exchanges in A beyond `--max-exchanges`, left out of the breakdown.
    pub left_out_a: u64,
    /// Exchanges in B beyond `--max-exchanges`, left out of the breakdown.
    pub left_out_b: u64,
    /// True if A's round trips are mostly shorter than B's: the captures are probably swapped.
    pub swapped_suspected: bool,
    /// Per request size.
    pub per_size: Vec<SizeRow>,
    /// Every matched exchange.
    pub exchanges: Vec<ExchangeRow>,
}

/// Matches the two captures' exchanges and computes the breakdown.
pub fn breakdown(a: EchoPairs, b: EchoPairs) -> LatencyReport {
    let mut ea = a.done;
    let mut eb = b.done;
    ea.sort_by_key(|e| e.t_req);
    eb.sort_by_key(|e| e.t_req);
    let index_b: FxHashMap<(ReqKey, u32), usize> = eb
        .iter()
        .enumerate()
        .map(|(i, e)| ((e.key, e.occ), i))
        .collect();
    // For C and D: the next exchange of the same client→server flow, in each capture.
    let next_of = |v: &[Exchange]| -> Vec<Option<usize>> {
        let mut next = vec![None; v.len()];
        let mut last: FxHashMap<(u8, Endpoint, Endpoint), usize> = FxHashMap::default();
        for (i, e) in v.iter().enumerate() {
            if let Some(p) = last.insert((e.key.0, e.key.1, e.key.2), i) {
                next[p] = Some(i);
            }
        }
        next
    };
    let next_a = next_of(&ea);
    let pairs: Vec<(usize, usize)> = ea
        .iter()
        .enumerate()
        .filter_map(|(i, e)| index_b.get(&(e.key, e.occ)).map(|&j| (i, j)))
        .collect();
    let matched = pairs.len() as u64;
    let fwd_raw = |i: usize, j: usize| eb[j].t_req as i64 - ea[i].t_req as i64;
    let ret_raw = |i: usize, j: usize| ea[i].t_rep as i64 - eb[j].t_rep as i64;
    let min_f = pairs.iter().map(|&(i, j)| fwd_raw(i, j)).min().unwrap_or(0);
    let min_r = pairs.iter().map(|&(i, j)| ret_raw(i, j)).min().unwrap_or(0);
    let theta = (min_f - min_r) / 2;
    let mut rows = Vec::with_capacity(pairs.len());
    for &(i, j) in &pairs {
        let (x, y) = (&ea[i], &eb[j]);
        let a_ns = x.t_rep as i64 - x.t_req as i64;
        let b_ns = y.t_rep as i64 - y.t_req as i64;
        let (c_ns, d_ns) = match next_a[i].map(|n| (n, index_b.get(&(ea[n].key, ea[n].occ)))) {
            Some((n, Some(&m))) => (
                Some(ea[n].t_req as i64 - x.t_rep as i64),
                Some(eb[m].t_req as i64 - y.t_rep as i64),
            ),
            _ => (None, None),
        };
        rows.push(ExchangeRow {
            size: x.size,
            t_ns: x.t_req,
            a_ns,
            b_ns,
            c_ns,
            d_ns,
            fwd_ns: fwd_raw(i, j) - theta,
            ret_ns: ret_raw(i, j) + theta,
        });
    }
    let mut sizes: Vec<u32> = rows.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let per_size = sizes
        .into_iter()
        .map(|size| {
            let rs: Vec<&ExchangeRow> = rows.iter().filter(|r| r.size == size).collect();
            let col = |f: &dyn Fn(&ExchangeRow) -> Option<i64>| {
                stat(rs.iter().filter_map(|r| f(r)).collect())
            };
            SizeRow {
                size,
                rtt_client_tap: col(&|r| Some(r.a_ns)),
                server: col(&|r| Some(r.b_ns)),
                client: col(&|r| r.c_ns),
                d: col(&|r| r.d_ns),
                switch_rtt: col(&|r| Some(r.a_ns - r.b_ns)),
                switch_rtt_echo: col(&|r| Some(r.d_ns? - r.c_ns?)),
                switch_fwd: col(&|r| Some(r.fwd_ns)),
                switch_ret: col(&|r| Some(r.ret_ns)),
            }
        })
        .collect();
    let shorter = rows.iter().filter(|r| r.a_ns < r.b_ns).count();
    LatencyReport {
        clock_offset_ns: theta,
        clock_offset_method: "(min forward - min return) / 2: the fastest crossings of the path are assumed equal both ways",
        matched,
        unmatched_a: ea.len() as u64 - matched,
        unmatched_b: eb.len() as u64 - matched,
        unanswered_a: a.unanswered,
        unanswered_b: b.unanswered,
        left_out_a: a.left_out,
        left_out_b: b.left_out,
        swapped_suspected: !rows.is_empty() && shorter * 2 > rows.len(),
        per_size,
        exchanges: rows,
    }
}
