//! The outcome of a request/response run: one record per size, the result document and the
//! table a person reads.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use weft_report::{Engine, ResultDoc};

use super::busy::BusyPoll;
use super::config::{Peer, Proto, RrConfig, StopRule};
use super::floor::Floor;
use super::meter::Meter;
use super::place::CpuTrace;
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
    /// The CPUs the client's loop ran on.
    #[serde(default)]
    pub client_cpus: CpuTrace,
    /// The CPUs the agent's serving thread ran on (agents that report it).
    #[serde(default)]
    pub agent_cpus: Option<CpuTrace>,
    /// How the client waited (`--busy-poll`); `None`: it slept in the kernel.
    #[serde(default)]
    pub busy_poll: Option<BusyPoll>,
    /// How the agent waited (`--busy-poll`); `None`: it slept, or did not say.
    #[serde(default)]
    pub agent_busy_poll: Option<BusyPoll>,
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
            client_cpus: m.cpus.clone(),
            agent_cpus: None,
            busy_poll: m.busy_poll.clone(),
            agent_busy_poll: None,
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
    /// The host's own wake-up latency, measured before the sizes (`--floor`).
    pub floor: Option<Floor>,
    /// The client CPU asked for (`--affinity N`).
    pub client_cpu: Option<u32>,
    /// The agent CPU asked for (`--affinity N,M`).
    pub agent_cpu: Option<u32>,
    /// Whether both ends were asked to busy-poll (`--busy-poll`).
    pub busy_poll: bool,
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
            floor: None,
            client_cpu: cfg.client_cpu,
            agent_cpu: cfg.agent_cpu,
            busy_poll: cfg.busy_poll,
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
            "affinity": { "client_cpu": self.client_cpu, "agent_cpu": self.agent_cpu },
            "busy_poll": self.busy_poll,
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
            "host_floor": self.floor,
            "host_share_of_smallest_p50": self.host_share(),
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

    /// The host's wake-up round trip as a fraction of the smallest size's median round trip:
    /// how much of it is the machine rather than the network (`--floor` without
    /// `--busy-poll`; with it, the spinning round trip is the floor).
    pub fn host_share(&self) -> Option<f64> {
        let f = self.floor.as_ref()?;
        let p50 = self.sizes.iter().find(|s| s.count > 0)?.rtt.p50_ns;
        let floor = if self.busy_poll {
            f.spin_rtt.p50_ns
        } else {
            f.wakeup_rtt.p50_ns
        };
        (p50 > 0).then(|| (floor as f64 / p50 as f64).min(1.0))
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
        if let Some(s) = self.sizes.first() {
            let agent = s
                .agent_cpus
                .as_ref()
                .map_or_else(|| "-".into(), CpuTrace::label);
            let moved = self.sizes.iter().any(|s| {
                s.client_cpus.migrated() || s.agent_cpus.as_ref().is_some_and(CpuTrace::migrated)
            });
            let wait = s
                .busy_poll
                .as_ref()
                .map_or_else(|| "sleep".into(), BusyPoll::label);
            let _ = writeln!(
                out,
                "placement: client CPU {}, agent CPU {agent}{}; waiting: {wait}",
                s.client_cpus.label(),
                if moved {
                    " (a thread moved between CPUs during the run)"
                } else {
                    ""
                }
            );
        }
        if let Some(f) = &self.floor {
            out.push_str(&f.table());
            if let Some(share) = self.host_share() {
                let _ = writeln!(
                    out,
                    "  the host's {} round trip is {:.0}% of the smallest size's p50",
                    if self.busy_poll { "spin" } else { "wake-up" },
                    share * 100.0
                );
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
