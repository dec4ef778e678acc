//! The result of a message-passing run: one sample per pattern and size, built from every rank's
//! iteration times, with percentiles from an HDR histogram, the compact table and the JSON
//! result document (`kind = "mp"`).
//!
//! Definitions (OSU's where OSU has one):
//! - ping-pong `mean_us`/`p50_us`/`p99_us`: half of rank 0's round trips (`osu_latency`);
//!   `mbps`: payload of the bandwidth loop over its time (`osu_bw`, window of 64);
//! - collectives and NPB skeletons: the time of one call (one time step) as every rank saw it,
//!   all ranks' iterations together; `mbps`: the payload a rank sends per iteration (mean over
//!   ranks) over the mean iteration time (for a ring all-reduce this is nccl-tests' bus
//!   bandwidth);
//! - `size`: the message size, bytes; for an NPB skeleton the mean payload a rank sends per time
//!   step.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::json;
use weft_model::mp::{Pattern, npb};
use weft_report::{Engine, ResultDoc};

use super::msg::RankStats;
use super::rank::RankSample;
use super::spec::MpSpec;
use crate::stats::LatencyStats;

/// One pattern at one size, over all ranks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MpSample {
    /// Pattern name (`pingpong`, `allreduce`, `bt.S`).
    pub pattern: String,
    /// All-reduce algorithm that ran (`ring`, `rd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// Message size, bytes (NPB: payload per rank per time step).
    pub size: u64,
    /// Mean time, µs (ping-pong: one way).
    pub mean_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Fastest, µs.
    pub min_us: f64,
    /// Slowest, µs.
    pub max_us: f64,
    /// Rate, Mbit/s (see the module docs).
    pub mbps: f64,
    /// Timed iterations per rank.
    pub iterations: u64,
    /// Payload a rank sends per iteration, bytes (mean over ranks).
    pub bytes_per_iter: f64,
    /// Messages a rank sends per iteration (mean over ranks).
    pub messages_per_iter: f64,
    /// NPB skeletons: the benchmark's time steps times the mean step, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<f64>,
    /// Time a rank spent in the calls that sent a message, per message, µs (ping-pong: rank
    /// 0's; collectives: all ranks'): LogP's send overhead, its copy included. Not measured on
    /// the simulator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_us: Option<f64>,
    /// Time a rank spent in the calls that received a message, per message sent, µs (every
    /// pattern has a rank receive as many messages as it sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_us: Option<f64>,
    /// Time a rank spent in its reductions per iteration, µs (mean over ranks; all-reduce
    /// only). Measured in the run, for seeing where its time went: the model never takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_us: Option<f64>,
    /// CPU time (user and system) of a rank per iteration, µs (mean over the ranks that send
    /// messages; ping-pong: per round trip). Not measured on the simulator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_us: Option<f64>,
    /// Ping-pong: the ranks' reduction kernel over `size` bytes, timed on its own after the
    /// ping-pong (median of its calls, mean of the two ranks), µs: what the model's `gamma`
    /// is fitted from ([`super::kernel`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_kernel_us: Option<f64>,
    /// What the model fitted from a ping-pong predicts for this sample, µs (`weft mp
    /// --model-from`; see [`super::model`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_us: Option<f64>,
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MpResult {
    /// The request (rank 0's; all agree by digest).
    pub spec: MpSpec,
    /// Where each rank ran (agent addresses, or host names in an emulation).
    pub hosts: Vec<String>,
    /// The samples, in the order they were run.
    pub samples: Vec<MpSample>,
    /// What each rank moved.
    pub ranks: Vec<RankStats>,
}

impl MpSample {
    /// Combines the ranks' reports of one pattern and size (all from the same pattern and
    /// size; `None` if there are none).
    pub fn from_ranks(parts: &[RankSample]) -> Option<MpSample> {
        let first = parts.first()?;
        let pingpong = first.pattern.parse::<Pattern>() == Ok(Pattern::PingPong);
        let mut stats = LatencyStats::new();
        for p in parts {
            if pingpong && p.rank != 0 {
                continue;
            }
            for &t in &p.times_ns {
                stats.record(if pingpong { t / 2 } else { t });
            }
        }
        let s = stats.summary();
        let n = parts.len() as f64;
        let bytes = parts.iter().map(|p| p.bytes_per_iter as f64).sum::<f64>() / n;
        let msgs = parts
            .iter()
            .map(|p| p.messages_per_iter as f64)
            .sum::<f64>()
            / n;
        let mbps = if pingpong {
            let r0 = parts.iter().find(|p| p.rank == 0);
            match r0.and_then(|p| Some((p.bw_bytes?, p.bw_ns?))) {
                Some((b, ns)) if ns > 0 => b as f64 * 8.0 / ns as f64 * 1e3,
                _ => 0.0,
            }
        } else if s.mean_ns > 0.0 {
            bytes * 8.0 / s.mean_ns * 1e3
        } else {
            0.0
        };
        let npb = match first.pattern.parse::<Pattern>() {
            Ok(Pattern::Npb(b, c)) => Some(npb::problem(b, c).1),
            _ => None,
        };
        let iterations = parts
            .iter()
            .map(|p| p.times_ns.len() as u64)
            .max()
            .unwrap_or(0);
        let (send_us, recv_us) = call_times(parts, pingpong);
        let (reduce_us, cpu_us) = per_iteration(parts);
        let kernels: Vec<f64> = parts
            .iter()
            .filter_map(|p| p.kernel_ns)
            .map(|ns| ns as f64)
            .collect();
        let reduce_kernel_us =
            (!kernels.is_empty()).then(|| kernels.iter().sum::<f64>() / kernels.len() as f64 / 1e3);
        Some(MpSample {
            pattern: first.pattern.clone(),
            algorithm: first.algorithm.clone(),
            size: if npb.is_some() {
                bytes.round() as u64
            } else {
                first.size
            },
            mean_us: s.mean_ns / 1e3,
            p50_us: s.p50_ns as f64 / 1e3,
            p99_us: s.p99_ns as f64 / 1e3,
            min_us: s.min_ns as f64 / 1e3,
            max_us: s.max_ns as f64 / 1e3,
            mbps,
            iterations,
            bytes_per_iter: bytes,
            messages_per_iter: msgs,
            total_ms: npb.map(|steps| s.mean_ns * f64::from(steps) / 1e6),
            send_us,
            recv_us,
            reduce_us,
            cpu_us,
            reduce_kernel_us,
            model_us: None,
        })
    }
}

/// The ranks' time in send and receive calls per message sent in their timed iterations, µs
/// (ping-pong: rank 0's alone, the rank that times it); `None` where no rank measured any.
fn call_times(parts: &[RankSample], pingpong: bool) -> (Option<f64>, Option<f64>) {
    let (mut send, mut recv, mut msgs) = (0u64, 0u64, 0u64);
    for p in parts.iter().filter(|p| !pingpong || p.rank == 0) {
        send += p.send_ns;
        recv += p.recv_ns;
        msgs += p.messages_per_iter * p.times_ns.len() as u64;
    }
    if msgs == 0 || send + recv == 0 {
        return (None, None);
    }
    let per = |ns: u64| Some(ns as f64 / msgs as f64 / 1e3);
    (per(send), per(recv))
}

/// The ranks' time in reductions and their CPU time per timed iteration, µs, over the ranks
/// that send messages; `None` where nothing was measured.
fn per_iteration(parts: &[RankSample]) -> (Option<f64>, Option<f64>) {
    let active = || parts.iter().filter(|p| p.messages_per_iter > 0);
    let iterations: u64 = active().map(|p| p.times_ns.len() as u64).sum();
    let per = |ns: u64| (iterations > 0 && ns > 0).then(|| ns as f64 / iterations as f64 / 1e3);
    (
        per(active().map(|p| p.reduce_ns).sum()),
        per(active().map(|p| p.cpu_ns).sum()),
    )
}

impl MpResult {
    /// The sample of `pattern` at `size`, if measured.
    pub fn sample(&self, pattern: &str, size: u64) -> Option<&MpSample> {
        self.samples
            .iter()
            .find(|s| s.pattern == pattern && (s.size == size || !is_sized(&s.pattern)))
    }

    /// The result document (`kind = "mp"`) from `engine`.
    pub fn to_result_doc(&self, engine: Engine) -> ResultDoc {
        let mut doc = ResultDoc::new("mp", engine);
        doc.params = json!({
            "ranks": self.spec.ranks,
            "route": self.spec.route.name(),
            "hosts": self.hosts,
            "patterns": self.spec.patterns,
            "sizes": self.spec.sizes,
            "iterations": self.spec.iterations,
            "iterations_large": self.spec.iterations_large,
            "warmup": self.spec.warmup,
            "timeout_ms": self.spec.timeout_ms,
            "daemon": self.spec.daemon,
            "bind": self.spec.place.slot.is_some(),
            "realtime": self.spec.place.realtime,
        });
        doc.samples = self
            .samples
            .iter()
            .map(|s| {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                v["ranks"] = json!(self.spec.ranks);
                v["route"] = json!(self.spec.route.name());
                v
            })
            .collect();
        doc.summary = json!({
            "samples": self.samples.len(),
            "messages_sent": self.ranks.iter().map(|r| r.messages_sent).sum::<u64>(),
            "bytes_sent": self.ranks.iter().map(|r| r.bytes_sent).sum::<u64>(),
            "unexpected": self.ranks.iter().map(|r| r.unexpected).sum::<u64>(),
            "daemon_packets": self.ranks.iter().filter_map(|r| r.daemon).map(|d| d.packets_sent).sum::<u64>(),
            "daemon_retransmits": self.ranks.iter().filter_map(|r| r.daemon).map(|d| d.retransmits).sum::<u64>(),
        });
        doc
    }

    /// The compact table.
    pub fn table(&self) -> String {
        let mut out = format!(
            "weft mp: {} ranks, {} route ({})\n",
            self.spec.ranks,
            self.spec.route.name(),
            self.hosts.join(", ")
        );
        let modelled = self.samples.iter().any(|s| s.model_us.is_some());
        let _ = write!(
            out,
            "{:<16} {:>10} {:>11} {:>11} {:>11} {:>11}",
            "pattern", "size", "p50 µs", "p99 µs", "mean µs", "Mbit/s"
        );
        if modelled {
            let _ = write!(out, " {:>11} {:>7}", "model µs", "mean/m");
        }
        out.push('\n');
        for s in &self.samples {
            let name = match &s.algorithm {
                Some(a) if !s.pattern.contains(a.as_str()) => format!("{} ({a})", s.pattern),
                _ => s.pattern.clone(),
            };
            let _ = write!(
                out,
                "{:<16} {:>10} {:>11.2} {:>11.2} {:>11.2} {:>11.1}",
                name,
                size_text(s.size),
                s.p50_us,
                s.p99_us,
                s.mean_us,
                s.mbps
            );
            if let Some(m) = s.model_us.filter(|m| *m > 0.0) {
                let _ = write!(out, " {:>11.2} {:>6.2}x", m, s.mean_us / m);
            }
            out.push('\n');
            if let Some(t) = s.total_ms {
                let _ = writeln!(
                    out,
                    "{:<16} {:>10} {:.1} messages and {} per rank per step; {:.1} ms for the \
                     benchmark's steps",
                    "",
                    "",
                    s.messages_per_iter,
                    size_text(s.bytes_per_iter.round() as u64),
                    t
                );
            }
        }
        out
    }
}

fn is_sized(pattern: &str) -> bool {
    pattern.parse::<Pattern>().is_ok_and(Pattern::sized)
}

/// `1536` -> `1.5KiB`, `4194304` -> `4MiB`.
pub fn size_text(b: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b}B")
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{}{}", v.round() as u64, UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(rank: u32, pattern: &str, times: &[u64]) -> RankSample {
        RankSample {
            rank,
            pattern: pattern.into(),
            algorithm: None,
            size: 1000,
            times_ns: times.to_vec(),
            bw_ns: (rank == 0).then_some(1_000_000),
            bw_bytes: (rank == 0).then_some(1_000_000),
            bytes_per_iter: 1000,
            messages_per_iter: 1,
            send_ns: 3000 * times.len() as u64,
            recv_ns: 1000 * times.len() as u64,
            reduce_ns: 500 * times.len() as u64,
            cpu_ns: 6000 * times.len() as u64,
            kernel_ns: (rank < 2).then_some(100 + 100 * u64::from(rank)),
        }
    }

    #[test]
    fn pingpong_halves_rank_zero_and_collectives_pool_ranks() {
        let s = MpSample::from_ranks(&[
            part(0, "pingpong", &[20_000, 20_000]),
            part(1, "pingpong", &[999_999]),
        ])
        .unwrap();
        assert_eq!(s.mean_us, 10.0);
        assert_eq!(
            (s.send_us, s.recv_us),
            (Some(3.0), Some(1.0)),
            "rank 0's calls"
        );
        assert_eq!((s.reduce_us, s.cpu_us), (Some(0.5), Some(6.0)));
        assert_eq!(s.reduce_kernel_us, Some(0.15), "both ranks' kernel, mean");
        // 1e6 bytes in 1 ms = 8000 Mbit/s.
        assert!((s.mbps - 8000.0).abs() < 1e-6);
        let s = MpSample::from_ranks(&[
            part(0, "exchange", &[10_000]),
            part(1, "exchange", &[30_000]),
        ])
        .unwrap();
        assert_eq!(s.mean_us, 20.0);
        assert!((s.mbps - 400.0).abs() < 1e-6);
        assert!(MpSample::from_ranks(&[]).is_none());
        assert_eq!(size_text(8), "8B");
        assert_eq!(size_text(1 << 20), "1MiB");
        assert_eq!(size_text(1536), "1.5KiB");
    }
}
