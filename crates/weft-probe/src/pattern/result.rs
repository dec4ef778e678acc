//! What a pattern measured: per-session records, the aggregate, line efficiency and fairness,
//! as a `ResultDoc` (kind `pattern`) and as a table.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Map, Value, json};
use weft_model::Rate;
use weft_report::{Engine, ResultDoc};

use super::spec::{Role, Session, SessionTest};
use crate::rr::LatencySummary;

/// What one session produced (filled in by the runner).
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Receiver goodput, bits/s (throughput sessions).
    pub throughput_bps: Option<f64>,
    /// Bytes received (throughput sessions).
    pub bytes: Option<u64>,
    /// Round-trip statistics (request/response sessions).
    pub latency: Option<LatencySummary>,
    /// Transactions per second (request/response sessions).
    pub transactions_per_s: Option<f64>,
    /// Transactions lost (request/response sessions).
    pub lost: Option<u64>,
    /// Why the session failed, if it did.
    pub error: Option<String>,
    /// The session's own result summary, as its command would report it.
    pub detail: Option<Value>,
}

impl Outcome {
    /// A failed session.
    pub fn failed(msg: impl Into<String>) -> Self {
        Outcome {
            error: Some(msg.into()),
            ..Outcome::default()
        }
    }
}

/// One session's record.
#[derive(Clone, Debug)]
pub struct SessionResult {
    /// Position in the pattern, from 0.
    pub index: usize,
    /// The session as configured.
    pub session: Session,
    /// When it started measuring, seconds after the barrier.
    pub start_s: f64,
    /// When it finished, seconds after the barrier.
    pub end_s: f64,
    /// Receiver goodput, bits/s (throughput sessions that succeeded).
    pub throughput_bps: Option<f64>,
    /// Bytes received (throughput sessions that succeeded).
    pub bytes: Option<u64>,
    /// Round-trip statistics (request/response sessions).
    pub latency: Option<LatencySummary>,
    /// Transactions per second (request/response sessions).
    pub transactions_per_s: Option<f64>,
    /// Transactions lost (request/response sessions).
    pub lost: Option<u64>,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// The session's own result summary.
    pub detail: Option<Value>,
}

impl SessionResult {
    /// A record from a runner's outcome.
    pub fn new(index: usize, session: Session, start: Duration, end: Duration, o: Outcome) -> Self {
        SessionResult {
            index,
            session,
            start_s: start.as_secs_f64(),
            end_s: end.as_secs_f64(),
            throughput_bps: o.throughput_bps,
            bytes: o.bytes,
            latency: o.latency,
            transactions_per_s: o.transactions_per_s,
            lost: o.lost,
            error: o.error,
            detail: o.detail,
        }
    }

    /// Whether this session counts towards the aggregate (bulk, not a probe).
    fn is_bulk(&self) -> bool {
        matches!(self.session.test, SessionTest::Tput(_)) && self.session.role != Role::Probe
    }
}

/// Everything a pattern measured.
#[derive(Clone, Debug)]
pub struct PatternResult {
    /// The pattern's name (`pairs`, `one-to-many`, `many-to-one`).
    pub name: String,
    /// One record per session, in the pattern's order.
    pub sessions: Vec<SessionResult>,
    /// The line rate the aggregate is compared with, bits/s.
    pub line_rate_bps: Option<f64>,
    /// Wall time of the whole pattern, seconds.
    pub wall_s: f64,
}

impl PatternResult {
    /// Whether any session failed.
    pub fn failed(&self) -> bool {
        self.sessions.iter().any(|s| s.error.is_some())
    }

    fn bulk_rates(&self) -> Vec<f64> {
        self.sessions
            .iter()
            .filter(|s| s.is_bulk())
            .filter_map(|s| s.throughput_bps)
            .collect()
    }

    /// Sum of the bulk sessions' receiver goodputs, bits/s (the GIGAswitch "aggregate").
    pub fn aggregate_bps(&self) -> Option<f64> {
        let r = self.bulk_rates();
        (!r.is_empty()).then(|| r.iter().sum())
    }

    /// Bytes of all bulk sessions over the span from the first start to the last end, bits/s: a
    /// cross-check of the aggregate that does not assume the sessions overlapped exactly.
    pub fn span_bps(&self) -> Option<f64> {
        let bulk: Vec<&SessionResult> = self
            .sessions
            .iter()
            .filter(|s| s.is_bulk() && s.bytes.is_some())
            .collect();
        let first = bulk.iter().map(|s| s.start_s).fold(f64::INFINITY, f64::min);
        let last = bulk.iter().map(|s| s.end_s).fold(0.0, f64::max);
        let bytes: u64 = bulk.iter().filter_map(|s| s.bytes).sum();
        (last > first).then(|| bytes as f64 * 8.0 / (last - first))
    }

    /// Aggregate over line rate, a fraction.
    pub fn line_efficiency(&self) -> Option<f64> {
        Some(self.aggregate_bps()? / self.line_rate_bps?)
    }

    /// Jain's fairness index over the bulk sessions: 1 when all get the same, 1/n when one gets
    /// everything.
    pub fn fairness(&self) -> Option<f64> {
        let r = self.bulk_rates();
        let sq: f64 = r.iter().map(|x| x * x).sum();
        (r.len() > 1 && sq > 0.0).then(|| r.iter().sum::<f64>().powi(2) / (r.len() as f64 * sq))
    }

    /// Whether each probe ran entirely while every load session was running.
    fn under_load(&self, s: &SessionResult) -> Option<bool> {
        if s.session.role != Role::Probe {
            return None;
        }
        let loads: Vec<&SessionResult> = self
            .sessions
            .iter()
            .filter(|l| l.session.role == Role::Load)
            .collect();
        Some(
            !loads.is_empty()
                && loads
                    .iter()
                    .all(|l| l.start_s <= s.start_s && l.end_s >= s.end_s),
        )
    }

    /// The result document: kind `pattern`, engine `real`, one sample per session.
    pub fn to_result_doc(&self) -> ResultDoc {
        let mut doc = ResultDoc::new("pattern", Engine::Real);
        let tests: Vec<Value> = self
            .sessions
            .iter()
            .map(|s| test_params(&s.session.test))
            .collect();
        doc.params = json!({
            "pattern": self.name,
            "sessions": self.sessions.len(),
            "line_rate_bps": self.line_rate_bps,
            "tests": tests,
        });
        doc.samples = self.sessions.iter().map(|s| self.sample(s)).collect();
        let rates = self.bulk_rates();
        let probes: Vec<&SessionResult> = self
            .sessions
            .iter()
            .filter(|s| s.session.role == Role::Probe)
            .collect();
        doc.summary = json!({
            "sessions": self.sessions.len(),
            "failed": self.sessions.iter().filter(|s| s.error.is_some()).count(),
            "aggregate_bps": self.aggregate_bps(),
            "span_bps": self.span_bps(),
            "line_rate_bps": self.line_rate_bps,
            "line_efficiency": self.line_efficiency(),
            "fairness": self.fairness(),
            "min_session_bps": rates.iter().copied().reduce(f64::min),
            "max_session_bps": rates.iter().copied().reduce(f64::max),
            "probe_p50_ns": probes.iter().filter_map(|p| p.latency.as_ref().map(|l| l.p50_ns)).max(),
            "probe_p99_ns": probes.iter().filter_map(|p| p.latency.as_ref().map(|l| l.p99_ns)).max(),
            "probes_under_load": probes.iter().all(|p| self.under_load(p) == Some(true)),
            "wall_s": self.wall_s,
        });
        doc
    }

    fn sample(&self, s: &SessionResult) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            if !v.is_null() {
                m.insert(k.to_string(), v);
            }
        };
        put("session", json!(s.index));
        put("label", json!(s.session.label()));
        put("from", json!(s.session.from.to_string()));
        put("to", json!(s.session.to.to_string()));
        put("test", json!(s.session.test.name()));
        put("role", json!(s.session.role.name()));
        put("start_s", json!(s.start_s));
        put("end_s", json!(s.end_s));
        put("throughput_bps", json!(s.throughput_bps));
        put("bytes", json!(s.bytes));
        if let Some(l) = &s.latency {
            put("min_ns", json!(l.min_ns));
            put("p50_ns", json!(l.p50_ns));
            put("p99_ns", json!(l.p99_ns));
            put("max_ns", json!(l.max_ns));
            put("mean_ns", json!(l.mean_ns));
            put("count", json!(l.count));
        }
        put("transactions_per_s", json!(s.transactions_per_s));
        put("lost", json!(s.lost));
        put("under_load", json!(self.under_load(s)));
        put("error", json!(s.error));
        put("detail", s.detail.clone().unwrap_or(Value::Null));
        Value::Object(m)
    }

    /// A compact table: one line per session, then the aggregate.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "pattern {}: {} sessions",
            self.name,
            self.sessions.len()
        );
        let _ = writeln!(
            out,
            "{:>3} {:<44} {:<5} {:<5} {:>14} {:>10} {:>10}",
            "#", "session", "test", "role", "throughput", "p50 us", "p99 us"
        );
        for s in &self.sessions {
            let tput = s
                .throughput_bps
                .map_or_else(|| "-".into(), |b| Rate(b.round() as u64).to_string());
            let (p50, p99) = s
                .latency
                .as_ref()
                .map_or(("-".into(), "-".into()), |l| (us(l.p50_ns), us(l.p99_ns)));
            let _ = writeln!(
                out,
                "{:>3} {:<44} {:<5} {:<5} {:>14} {:>10} {:>10}",
                s.index,
                s.session.label(),
                s.session.test.name(),
                s.session.role.name(),
                tput,
                p50,
                p99
            );
            if let Some(e) = &s.error {
                let _ = writeln!(out, "    failed: {e}");
            }
        }
        if let Some(a) = self.aggregate_bps() {
            let _ = write!(out, "aggregate {}", Rate(a.round() as u64));
            if let (Some(l), Some(e)) = (self.line_rate_bps, self.line_efficiency()) {
                let _ = write!(
                    out,
                    ", line rate {}, line efficiency {:.2}%",
                    Rate(l.round() as u64),
                    e * 100.0
                );
            }
            if let Some(f) = self.fairness() {
                let _ = write!(out, ", fairness {f:.3}");
            }
            out.push('\n');
        }
        out
    }
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

fn test_params(t: &SessionTest) -> Value {
    match t {
        SessionTest::Tput(spec) => json!({ "test": "tput", "spec": spec }),
        SessionTest::Rr(r) => json!({
            "test": "rr", "proto": r.proto, "size_bytes": r.size, "count": r.count, "time_ns": r.time_ns,
            "warmup": r.warmup,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::spec::{Endpoint, RrSettings};
    use crate::proto::{Amount, TputSpec};

    fn tput_session() -> Session {
        Session {
            from: Endpoint::Local,
            to: Endpoint::Agent("127.0.0.1:9".parse().unwrap()),
            test: SessionTest::Tput(TputSpec::tcp(1000, Amount::TimeNs(1))),
            role: Role::Session,
        }
    }

    fn rec(i: usize, bps: f64) -> SessionResult {
        let o = Outcome {
            throughput_bps: Some(bps),
            bytes: Some((bps / 8.0) as u64),
            ..Outcome::default()
        };
        SessionResult::new(i, tput_session(), Duration::ZERO, Duration::from_secs(1), o)
    }

    #[test]
    fn aggregate_efficiency_and_fairness_follow_the_gigaswitch_arithmetic() {
        // Table 3, experiment 1 of the GIGAswitch study: 47.8882 + 49.6707 Mbps on a 100 Mbps port.
        let r = PatternResult {
            name: "pairs".into(),
            sessions: vec![rec(0, 47.8882e6), rec(1, 49.6707e6)],
            line_rate_bps: Some(100e6),
            wall_s: 1.0,
        };
        let eff = r.line_efficiency().unwrap();
        assert!((eff - 0.975589).abs() < 1e-6, "{eff}");
        let f = r.fairness().unwrap();
        assert!(f > 0.99 && f < 1.0, "{f}");
        assert!((r.span_bps().unwrap() - r.aggregate_bps().unwrap()).abs() < 10.0);
        let doc = r.to_result_doc();
        assert_eq!(doc.kind, "pattern");
        assert_eq!(doc.samples.len(), 2);
        assert_eq!(doc.summary["failed"], 0);
        assert!(
            r.table().contains("line efficiency 97.56%"),
            "{}",
            r.table()
        );
    }

    #[test]
    fn one_session_taking_everything_has_fairness_one_over_n() {
        let r = PatternResult {
            name: "x".into(),
            sessions: vec![rec(0, 1e9), rec(1, 0.0), rec(2, 0.0), rec(3, 0.0)],
            line_rate_bps: None,
            wall_s: 1.0,
        };
        assert!((r.fairness().unwrap() - 0.25).abs() < 1e-12);
        assert!(r.line_efficiency().is_none());
    }

    #[test]
    fn probes_are_left_out_of_the_aggregate_and_checked_for_overlap() {
        let mut load = rec(0, 1e9);
        load.session.role = Role::Load;
        let probe_session = Session {
            test: SessionTest::Rr(RrSettings::default()),
            role: Role::Probe,
            ..tput_session()
        };
        let probe = SessionResult::new(
            1,
            probe_session,
            Duration::from_millis(300),
            Duration::from_millis(600),
            Outcome::default(),
        );
        let r = PatternResult {
            name: "one-to-many".into(),
            sessions: vec![load, probe],
            line_rate_bps: None,
            wall_s: 1.0,
        };
        assert_eq!(r.aggregate_bps(), Some(1e9));
        let doc = r.to_result_doc();
        assert_eq!(doc.samples[1]["under_load"], true);
        assert_eq!(doc.summary["probes_under_load"], true);
    }
}
