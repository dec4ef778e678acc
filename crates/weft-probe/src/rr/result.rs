//! The outcome of a request/response run: one record per size, the result document and the
//! table a person reads.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use weft_report::{Engine, ResultDoc};

use super::config::{Peer, Proto, RrConfig, StopRule};
use super::meter::Meter;
use super::stats::LatencySummary;

/// What one size measured (also the body of a relayed request/response report).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeResult {
    /// Request size, bytes.
    pub request_bytes: u32,
    /// Response size, bytes.
    pub response_bytes: u32,
    /// Measured transactions started (warm-up excluded, lost included).
    pub sent: u64,
    /// Measured transactions answered.
    pub count: u64,
    /// Measured transactions not answered within the time-out.
    pub lost: u64,
    /// Replies that came after their transaction had been counted lost, discarded.
    pub late: u64,
    /// Replies that matched no request, discarded.
    pub stray: u64,
    /// Round-trip latency statistics (cold: connection set-up included), ns.
    pub rtt: LatencySummary,
    /// Cold runs: connection set-up statistics, ns.
    pub connect: Option<LatencySummary>,
    /// Derived throughput, bits/s: (request + response bytes) * 8 / mean RTT, both directions
    /// counted.
    pub throughput_bps: f64,
    /// Derived throughput of the request direction alone, bits/s: request bytes * 8 / mean RTT.
    pub request_bps: f64,
    /// Transactions completed per second of wall time (exceeds 1 / mean RTT with `--burst`).
    pub transactions_per_s: f64,
    /// Wall time of the measured transactions, from the first request to the last answer or
    /// time-out, ns. Divided by `sent`, it is the GIGAswitch study's average RTT.
    pub elapsed_ns: u64,
    /// Agent runs: requests the agent answered, warm-up included (tells a lost request from a
    /// lost answer under UDP).
    pub agent_requests: Option<u64>,
    /// Whether `--converge` was met (always false under `--count`).
    pub converged: bool,
    /// Why the size stopped early, if it did.
    pub aborted: Option<String>,
}

impl SizeResult {
    /// Builds the record of a size from its meter.
    pub fn from_meter(req: u32, resp: u32, m: &Meter, cold: bool, aborted: Option<String>) -> Self {
        let rtt = m.rtt.summary();
        let mean_s = rtt.mean_ns / 1e9;
        let per = |bytes: f64| {
            if mean_s > 0.0 {
                bytes * 8.0 / mean_s
            } else {
                0.0
            }
        };
        let elapsed = m.measured_elapsed_s();
        SizeResult {
            request_bytes: req,
            response_bytes: resp,
            sent: m.measured_issued(),
            count: rtt.count,
            lost: m.lost,
            late: m.late,
            stray: m.stray,
            throughput_bps: per(f64::from(req) + f64::from(resp)),
            request_bps: per(f64::from(req)),
            transactions_per_s: if elapsed > 0.0 {
                rtt.count as f64 / elapsed
            } else {
                0.0
            },
            elapsed_ns: (elapsed * 1e9).round() as u64,
            rtt,
            connect: cold.then(|| m.connect.summary()),
            agent_requests: None,
            converged: m.converged(),
            aborted,
        }
    }
}

/// The outcome of a whole run.
#[derive(Clone, Debug, Serialize)]
pub struct RrResult {
    /// `"agent"` or `"echo"`.
    pub peer: String,
    /// The address measured (the agent's control address, or the echo service).
    pub addr: String,
    /// Transport.
    pub proto: Proto,
    /// Connection (or socket) per transaction.
    pub cold: bool,
    /// Transactions in flight.
    pub burst: u32,
    /// Warm-up transactions per size.
    pub warmup: u64,
    /// The stop rule.
    pub stop: StopRule,
    /// Per-request time-out, ns.
    pub timeout_ns: u64,
    /// One record per size, in the order run.
    pub sizes: Vec<SizeResult>,
    /// The agent that ran the client side, when the test was relayed (`weft pattern A:B`);
    /// `None` when this host was the client.
    pub relay: Option<String>,
}

impl RrResult {
    /// An empty result for `cfg`.
    pub fn new(cfg: &RrConfig) -> Self {
        let (peer, addr) = match cfg.peer {
            Peer::Agent(a) => ("agent", a),
            Peer::Echo(a) => ("echo", a),
        };
        RrResult {
            peer: peer.into(),
            addr: addr.to_string(),
            proto: cfg.proto,
            cold: cfg.cold,
            burst: cfg.burst,
            warmup: cfg.warmup,
            stop: cfg.stop,
            timeout_ns: u64::try_from(cfg.timeout.as_nanos()).unwrap_or(u64::MAX),
            sizes: Vec::new(),
            relay: None,
        }
    }

    /// Whether any size was aborted.
    pub fn failed(&self) -> bool {
        self.sizes.iter().any(|s| s.aborted.is_some())
    }

    /// The result document: kind `rr`, engine `real`, one sample per size.
    pub fn to_result_doc(&self) -> ResultDoc {
        let mut doc = ResultDoc::new("rr", Engine::Real);
        doc.params = json!({
            "peer": self.peer,
            "addr": self.addr,
            "proto": self.proto,
            "cold": self.cold,
            "burst": self.burst,
            "warmup": self.warmup,
            "stop": self.stop,
            "timeout_ns": self.timeout_ns,
            "sizes": self.sizes.iter().map(|s| s.request_bytes).collect::<Vec<_>>(),
            "relay": self.relay,
        });
        doc.samples = self.sizes.iter().map(|s| self.sample(s)).collect();
        let lost: u64 = self.sizes.iter().map(|s| s.lost).sum();
        let sent: u64 = self.sizes.iter().map(|s| s.sent).sum();
        let best = self
            .sizes
            .iter()
            .filter(|s| s.count > 0)
            .map(|s| s.rtt.min_ns)
            .min();
        doc.summary = json!({
            "sizes": self.sizes.len(),
            "sent": sent,
            "lost": lost,
            "loss_ratio": if sent > 0 { lost as f64 / sent as f64 } else { 0.0 },
            "min_rtt_ns": best,
            "smallest_size_p50_ns": self.sizes.first().map(|s| s.rtt.p50_ns),
            "smallest_size_mean_ns": self.sizes.first().map(|s| s.rtt.mean_ns),
            "max_throughput_bps": self.sizes.iter().map(|s| s.throughput_bps).fold(0.0, f64::max),
            "aborted": self.sizes.iter().filter(|s| s.aborted.is_some()).count(),
        });
        doc
    }

    /// One sample: the size's full record, plus its headline figures as top-level keys
    /// (`size_bytes`, `proto`, `min_ns`, `p50_ns`, `p90_ns`, `p99_ns`, `max_ns`, `mean_ns`) so
    /// that readers never confuse the round trip with the nested connect statistics.
    fn sample(&self, s: &SizeResult) -> Value {
        let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            let r = &s.rtt;
            let flat = [
                ("size_bytes", json!(s.request_bytes)),
                ("proto", json!(self.proto)),
                ("cold", json!(self.cold)),
                ("min_ns", json!(r.min_ns)),
                ("p50_ns", json!(r.p50_ns)),
                ("p90_ns", json!(r.p90_ns)),
                ("p99_ns", json!(r.p99_ns)),
                ("max_ns", json!(r.max_ns)),
                ("mean_ns", json!(r.mean_ns)),
            ];
            for (k, x) in flat {
                m.insert(k.to_string(), x);
            }
        }
        v
    }

    /// A compact table, one line per size, latencies in microseconds.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "rr {} {} {} to {} (burst {}, warm-up {}, time-out {})",
            self.proto,
            if self.cold { "cold" } else { "warm" },
            self.peer,
            self.addr,
            self.burst,
            self.warmup,
            weft_model::Duration(self.timeout_ns),
        );
        let _ = writeln!(
            out,
            "{:>8} {:>7} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>20} {:>11}",
            "size",
            "count",
            "lost",
            "min us",
            "p50 us",
            "p90 us",
            "p99 us",
            "max us",
            "mean ± 95% CI us",
            "tput"
        );
        for s in &self.sizes {
            let r = &s.rtt;
            let ci = r.ci95_ns.map_or_else(|| "-".into(), us);
            let size = if s.request_bytes == s.response_bytes {
                s.request_bytes.to_string()
            } else {
                format!("{}/{}", s.request_bytes, s.response_bytes)
            };
            if s.count == 0 {
                let _ = writeln!(out, "{size:>8} {:>7} {:>5} {:>9}", 0, s.lost, "-");
            } else {
                let _ = writeln!(
                    out,
                    "{:>8} {:>7} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>20} {:>11}",
                    size,
                    s.count,
                    s.lost,
                    us(r.min_ns as f64),
                    us(r.p50_ns as f64),
                    us(r.p90_ns as f64),
                    us(r.p99_ns as f64),
                    us(r.max_ns as f64),
                    format!("{} ± {}", us(r.mean_ns), ci),
                    weft_model::Rate(s.throughput_bps.round() as u64).to_string(),
                );
            }
            if let Some(c) = s.connect.as_ref().filter(|c| c.count > 0) {
                let _ = writeln!(
                    out,
                    "{:>8} connect: min {} p50 {} p99 {} mean {} us",
                    "",
                    us(c.min_ns as f64),
                    us(c.p50_ns as f64),
                    us(c.p99_ns as f64),
                    us(c.mean_ns)
                );
            }
            if s.late + s.stray > 0 {
                let _ = writeln!(
                    out,
                    "{:>8} discarded: {} late, {} stray",
                    "", s.late, s.stray
                );
            }
            if let Some(a) = &s.aborted {
                let _ = writeln!(out, "{:>8} ABORTED: {a}", "");
            }
        }
        let _ = writeln!(
            out,
            "tput = (request + response bytes) * 8 / mean RTT, both directions counted"
        );
        out
    }
}

fn us(ns: f64) -> String {
    let v = ns / 1e3;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
