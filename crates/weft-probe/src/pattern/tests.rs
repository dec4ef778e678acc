//! Patterns run against several in-process agents on loopback, each on its own port.

use std::net::SocketAddr;
use std::time::Duration;

use super::*;
use crate::proto::{Amount, TputSpec};
use crate::server::{Limits, Server, ServerConfig, ServerHandle};

fn agents(n: usize) -> Vec<ServerHandle> {
    (0..n)
        .map(|_| {
            let mut cfg = ServerConfig::loopback();
            cfg.open = true;
            cfg.limits = Limits {
                idle_timeout: Duration::from_secs(3),
                max_duration: Duration::from_secs(10),
                ..Limits::default()
            };
            Server::bind(cfg).unwrap().spawn()
        })
        .collect()
}

fn addrs(h: &[ServerHandle]) -> Vec<SocketAddr> {
    h.iter().map(ServerHandle::local_addr).collect()
}

fn stop(h: Vec<ServerHandle>) {
    for a in &h {
        a.shutdown();
    }
    for a in h {
        a.join().unwrap();
    }
}

fn tput(ms: u64) -> SessionTest {
    SessionTest::Tput(TputSpec::tcp(64 * 1024, Amount::TimeNs(ms * 1_000_000)))
}

/// Every session's measuring interval overlaps every other's: they ran together.
fn overlapped(r: &PatternResult) -> bool {
    let latest_start = r.sessions.iter().map(|s| s.start_s).fold(0.0, f64::max);
    let earliest_end = r
        .sessions
        .iter()
        .map(|s| s.end_s)
        .fold(f64::INFINITY, f64::min);
    latest_start < earliest_end
}

#[test]
fn one_to_many_runs_a_session_to_each_agent_at_once() {
    let h = agents(3);
    let cfg = PatternConfig {
        line_rate_bps: Some(100e9),
        ..PatternConfig::new("one-to-many", one_to_many(&addrs(&h), &tput(400)))
    };
    let r = run(&cfg).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert_eq!(r.sessions.len(), 3);
    assert!(overlapped(&r), "{}", r.table());
    for (s, a) in r.sessions.iter().zip(addrs(&h)) {
        assert_eq!(s.session.to, Endpoint::Agent(a));
        assert!(s.throughput_bps.unwrap() > 0.0 && s.bytes.unwrap() > 0);
    }
    let sum: f64 = r.sessions.iter().filter_map(|s| s.throughput_bps).sum();
    assert_eq!(r.aggregate_bps(), Some(sum));
    assert_eq!(r.line_efficiency(), Some(sum / 100e9));
    let doc = r.to_result_doc();
    assert_eq!(doc.samples.len(), 3);
    assert_eq!(doc.summary["failed"], 0);
    stop(h);
}

#[test]
fn many_to_one_makes_every_agent_send_to_this_host() {
    let h = agents(2);
    let r = run(&PatternConfig::new(
        "many-to-one",
        many_to_one(&addrs(&h), &tput(400)),
    ))
    .unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert!(overlapped(&r), "{}", r.table());
    let doc = r.to_result_doc();
    for s in &doc.samples {
        assert_eq!(s["to"], "local");
        // The agent sent: its direction was reversed.
        assert_eq!(s["detail"]["up"], serde_json::Value::Null);
        assert!(s["detail"]["down"]["receiver_bytes"].as_u64().unwrap() > 0);
    }
    stop(h);
}

#[test]
fn echo_sessions_and_latency_under_load() {
    let h = agents(2);
    let a = addrs(&h);
    // Request/response to both agents at once (the GIGAswitch one-to-many echo).
    let rr = SessionTest::Rr(RrSettings {
        count: 200,
        ..RrSettings::default()
    });
    let r = run(&PatternConfig::new("one-to-many", one_to_many(&a, &rr))).unwrap();
    assert!(!r.failed(), "{}", r.table());
    for s in &r.sessions {
        let l = s.latency.as_ref().unwrap();
        assert_eq!(l.count, 200);
        assert!(l.p50_ns > 0 && l.p50_ns <= l.p99_ns);
        assert!(s.throughput_bps.is_none());
    }
    assert_eq!(r.aggregate_bps(), None);

    // Bulk load to both agents with a probe beside it to each.
    let probe = RrSettings {
        time_ns: Some(500_000_000),
        warmup: 10,
        ..RrSettings::default()
    };
    let sessions = with_probes(one_to_many(&a, &tput(1200)), probe);
    let mut cfg = PatternConfig::new("one-to-many", sessions);
    cfg.probe_delay = Duration::from_millis(100);
    let r = run(&cfg).unwrap();
    assert!(!r.failed(), "{}", r.table());
    let roles: Vec<Role> = r.sessions.iter().map(|s| s.session.role).collect();
    assert_eq!(roles, [Role::Load, Role::Load, Role::Probe, Role::Probe]);
    let doc = r.to_result_doc();
    // The aggregate counts the load only.
    let load: f64 = r.sessions[..2]
        .iter()
        .filter_map(|s| s.throughput_bps)
        .sum();
    assert_eq!(doc.summary["aggregate_bps"].as_f64(), Some(load));
    assert!(doc.summary["probe_p50_ns"].as_u64().unwrap() > 0);
    for s in &doc.samples[2..] {
        // Probes measure for 0.5 s from 0.1 s; the load runs 1.2 s from 0.
        assert_eq!(s["under_load"], true, "{}", r.table());
        assert!(s["start_s"].as_f64().unwrap() >= 0.1);
    }
    stop(h);
}

#[test]
fn a_dead_agent_fails_its_session_only() {
    let h = agents(1);
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut cfg = PatternConfig::new(
        "one-to-many",
        one_to_many(&[h[0].local_addr(), dead], &tput(300)),
    );
    cfg.connect_timeout = Duration::from_secs(2);
    let r = run(&cfg).unwrap();
    assert!(r.failed());
    assert!(r.sessions[0].error.is_none(), "{}", r.table());
    assert!(r.sessions[1].error.is_some());
    assert!(r.table().contains("failed:"));
    assert_eq!(r.to_result_doc().summary["failed"], 1);
    stop(h);
}

/// The relay's and the target's byte counts as the session's detail reports them.
fn relayed_counts(doc: &weft_report::ResultDoc, i: usize) -> (u64, u64) {
    let up = &doc.samples[i]["detail"]["up"];
    (
        up["sender_bytes"].as_u64().unwrap(),
        up["receiver_bytes"].as_u64().unwrap(),
    )
}

#[test]
fn a_pair_between_two_agents_is_relayed_by_the_first() {
    let h = agents(3);
    let a = addrs(&h);
    let pairs = vec![(Endpoint::Agent(a[0]), Endpoint::Agent(a[1]))];
    let r = run(&PatternConfig::new("pairs", from_pairs(&pairs, &tput(400)))).unwrap();
    assert!(!r.failed(), "{}", r.table());
    let doc = r.to_result_doc();
    let (sent, got) = relayed_counts(&doc, 0);
    assert!(sent > 0 && sent == got, "{sent} vs {got}");
    assert_eq!(r.sessions[0].bytes, Some(got));
    assert_eq!(doc.samples[0]["from"], a[0].to_string());
    assert_eq!(doc.samples[0]["to"], a[1].to_string());
    assert_eq!(doc.samples[0]["detail"]["down"], serde_json::Value::Null);

    // Two relayed pairs at once, one of them through the agent that was the target above.
    let pairs = vec![
        (Endpoint::Agent(a[0]), Endpoint::Agent(a[1])),
        (Endpoint::Agent(a[1]), Endpoint::Agent(a[2])),
    ];
    let mut cfg = PatternConfig::new("pairs", from_pairs(&pairs, &tput(600)));
    cfg.line_rate_bps = Some(100e9);
    let r = run(&cfg).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert!(overlapped(&r), "{}", r.table());
    let doc = r.to_result_doc();
    for i in 0..2 {
        let (sent, got) = relayed_counts(&doc, i);
        assert!(sent > 0 && sent == got, "session {i}: {sent} vs {got}");
    }
    let sum: f64 = r.sessions.iter().filter_map(|s| s.throughput_bps).sum();
    assert_eq!(r.aggregate_bps(), Some(sum));
    assert_eq!(r.line_efficiency(), Some(sum / 100e9));
    assert!(r.fairness().is_some());
    stop(h);
}

#[test]
fn relayed_load_gets_relayed_probes_and_relayed_echo_sessions_run() {
    let h = agents(2);
    let a = addrs(&h);
    let pairs = vec![(Endpoint::Agent(a[0]), Endpoint::Agent(a[1]))];
    let probe = RrSettings {
        time_ns: Some(400_000_000),
        warmup: 10,
        ..RrSettings::default()
    };
    let mut cfg = PatternConfig::new("pairs", with_probes(from_pairs(&pairs, &tput(1000)), probe));
    cfg.probe_delay = Duration::from_millis(100);
    let r = run(&cfg).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert_eq!(r.sessions.len(), 2);
    let p = &r.sessions[1];
    assert_eq!(p.session.role, Role::Probe);
    assert_eq!(
        (p.session.from, p.session.to),
        (Endpoint::Agent(a[0]), Endpoint::Agent(a[1]))
    );
    assert!(p.latency.as_ref().unwrap().count > 0);
    let doc = r.to_result_doc();
    assert_eq!(doc.samples[1]["under_load"], true, "{}", r.table());
    assert_eq!(doc.samples[1]["detail"]["sizes"], 1);

    let rr = SessionTest::Rr(RrSettings {
        count: 100,
        ..RrSettings::default()
    });
    let r = run(&PatternConfig::new("pairs", from_pairs(&pairs, &rr))).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert_eq!(r.sessions[0].latency.as_ref().unwrap().count, 100);
    stop(h);
}

#[test]
fn a_refused_relay_fails_its_session_with_the_reason_and_the_agent_serves_on() {
    let h = agents(1);
    let mut cfg = ServerConfig::loopback();
    cfg.open = true;
    cfg.relay = false;
    let refusing = Server::bind(cfg).unwrap().spawn();
    let (r_addr, b) = (refusing.local_addr(), h[0].local_addr());
    let pairs = vec![
        (Endpoint::Agent(r_addr), Endpoint::Agent(b)),
        (Endpoint::Local, Endpoint::Agent(b)),
    ];
    let r = run(&PatternConfig::new("pairs", from_pairs(&pairs, &tput(300)))).unwrap();
    let e = r.sessions[0].error.as_deref().unwrap();
    assert!(
        e.contains("does not relay") && e.contains("--no-relay"),
        "{e}"
    );
    assert!(r.sessions[1].error.is_none(), "{}", r.table());
    // The refusing agent still serves ordinary tests, and relays nothing.
    let direct = vec![(Endpoint::Local, Endpoint::Agent(r_addr))];
    let r = run(&PatternConfig::new(
        "pairs",
        from_pairs(&direct, &tput(200)),
    ))
    .unwrap();
    assert!(!r.failed(), "{}", r.table());
    refusing.shutdown();
    let summary = refusing.join().unwrap();
    assert_eq!((summary.tests_ok, summary.tests_failed), (1, 1));
    stop(h);
}

#[test]
fn local_to_local_is_refused_before_anything_runs() {
    let cfg = PatternConfig::new(
        "pairs",
        from_pairs(&[(Endpoint::Local, Endpoint::Local)], &tput(100)),
    );
    let e = run(&cfg).unwrap_err();
    assert!(matches!(e, PatternError::Config(_)), "{e}");
    assert!(run(&PatternConfig::new("x", vec![])).is_err());
}
