//! The `rr` workload of a scenario file on the simulated network: an [`RrClient`] on every
//! `from` host asking the [`RrServer`] on every `to` host, one pair after another (each pair
//! alone on the network, as an echo test is run), with the round-trip table the emulator reports.
//!
//! With `beside = K` the requests share the network with the flows of `tput` workload K (its
//! first point if it sweeps): the bulk flows start at time zero, the first request leaves when
//! their warm-up ends, and the run stops when they do, so requests not asked by then are not
//! asked (`requests` counts those that were).

use serde_json::{Map, Value, json};
use weft_model::host::{HostCpu, presets};
use weft_model::net::Topology;
use weft_model::scenario::{Metric, Scenario, Workload};
use weft_model::{Duration, Instant};

use super::hosts::App;
use super::rr::{RrClient, RrServer};
use super::run::{RunOptions, run};
use super::tput;

/// Requests of an rr workload that gives no `count`.
pub const DEFAULT_COUNT: u64 = 1000;
/// Time-out of an rr workload that gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

/// The `q` quantile (0..=1) of sorted `v`, by nearest rank.
fn quantile(v: &[u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)]
}

/// Runs an `rr` workload of `s` on `topo`; metrics into `m`, problems into `notes`.
pub fn rr(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    seed: u64,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    // The bulk workload the requests run beside, as its first point.
    let bulk = w
        .beside
        .and_then(|b| s.workloads.get(b))
        .and_then(|b| b.expand().into_iter().next())
        .map(|(_, b)| b);
    let Some(size) = w.size else {
        return notes.push("an rr workload needs `size`".into());
    };
    let index = |name: &String| topo.hosts.iter().position(|h| &h.name == name);
    let count = w.count.unwrap_or(DEFAULT_COUNT);
    let timeout = w.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let cpu = |h: usize| {
        s.hosts
            .iter()
            .find(|x| x.name == topo.hosts[h].name)
            .and_then(|x| x.costs.as_deref())
            .and_then(presets::by_name)
            .map(HostCpu::new)
    };
    let (mut all, mut lost, mut pairs) = (Vec::new(), 0u64, Vec::new());
    for f in &w.from {
        for t in &w.to {
            let (Some(a), Some(b)) = (index(f), index(t)) else {
                return notes.push(format!("rr: no host {f:?} or {t:?}"));
            };
            if a == b {
                continue;
            }
            // The path MTU, as the model takes it.
            let mtu = s
                .path(f, t)
                .and_then(|p| p.iter().map(|l| l.tech.mtu.0).min())
                .map_or(topo.hosts[a].link.mtu, |m| m.min(65_535) as u32);
            let mut client = RrClient::new(a, b, size.0, mtu, count, timeout);
            let mut server = RrServer::new(b, size.0, mtu);
            if let Some(c) = cpu(a) {
                client = client.with_cpu(c);
            }
            if let Some(c) = cpu(b) {
                server = server.with_cpu(c);
            }
            // Long enough for every request to time out; the clock jumps over idle time.
            let mut ns = (timeout.0 + Duration::from_millis(1).0).saturating_mul(count + 1);
            let mut flows = Vec::new();
            if let Some(bw) = &bulk {
                match tput::flow_apps(s, topo, bw, seed) {
                    Ok((f, _, _)) => flows = f,
                    Err(e) => return notes.push(format!("beside: {e}")),
                }
                let time = bw.time.unwrap_or(tput::DEFAULT_TIME);
                client = client.starting(Instant(tput::warmup(time).0));
                ns = time.0;
            }
            let mut apps: Vec<(usize, Box<dyn App>)> =
                vec![(a, Box::new(client)), (b, Box::new(server))];
            apps.extend(flows);
            let opts = RunOptions {
                duration: Duration(ns),
                ..RunOptions::default()
            };
            let r = match run(topo, apps, opts, |_| {}) {
                Ok(r) => r,
                Err(e) => return notes.push(e.to_string()),
            };
            let Some(c) = r.hosts.app::<RrClient>(0) else {
                continue;
            };
            let mut v = c.rtt_ns.clone();
            v.sort_unstable();
            pairs.push(json!({
                "from": f, "to": t, "answered": v.len(), "lost": c.lost,
                "rtt_p50_us": quantile(&v, 0.5) as f64 / 1e3,
            }));
            lost += c.lost;
            all.extend(v);
        }
    }
    all.sort_unstable();
    let asked = all.len() as u64 + lost;
    if !all.is_empty() {
        let mean = all.iter().sum::<u64>() as f64 / all.len() as f64;
        m.insert(Metric::RTT_MEAN_US.into(), json!(mean / 1e3));
        m.insert("rtt_ms".into(), json!(mean / 1e6));
        m.insert("rtt_min_us".into(), json!(all[0] as f64 / 1e3));
        m.insert("rtt_p50_us".into(), json!(quantile(&all, 0.5) as f64 / 1e3));
        m.insert(
            "rtt_p99_us".into(),
            json!(quantile(&all, 0.99) as f64 / 1e3),
        );
    }
    m.insert(
        Metric::RR_LOSS.into(),
        json!(if asked == 0 {
            0.0
        } else {
            lost as f64 / asked as f64
        }),
    );
    m.insert("requests".into(), json!(asked));
    m.insert("pairs".into(), json!(pairs));
}
