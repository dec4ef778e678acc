//! The `frames` workload of a scenario file on the simulated network: constant-rate sources on
//! the `from` hosts, one per (from, to) pair as the emulator runs them, sinks on the `to` hosts,
//! and the same counters the emulator reports (frame goodput and cell loss at the receivers'
//! queues, per sender too).

use std::path::Path;

use serde_json::{Map, Value, json};
use weft_model::fabric::Rng;
use weft_model::net::{ETH_HEADER, Topology, delivery};
use weft_model::scenario::{Metric, Workload};
use weft_model::{Duration, Instant, Rate};

use super::cbr::{Cbr, CbrSpec, DEFAULT_JITTER_FRACTION, Sink};
use super::hosts::App;
use super::run::{add_sinks, insert_delivery, run_noted};

/// Simulated time of a frames workload that gives none.
pub const DEFAULT_TIME: Duration = Duration::from_millis(200);

/// Runs a `frames` workload on `topo`; metrics into `m`, what could not be done into `notes`.
/// With `capture`, one pcap per link is written there.
pub fn frames(
    topo: &Topology,
    w: &Workload,
    seed: u64,
    capture: Option<&Path>,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let Some(size) = w.size else {
        return notes.push("a frames workload needs `size`".into());
    };
    let index = |name: &String| topo.hosts.iter().position(|h| &h.name == name);
    let (Some(from), Some(to)) = (
        w.from.iter().map(index).collect::<Option<Vec<usize>>>(),
        w.to.iter().map(index).collect::<Option<Vec<usize>>>(),
    ) else {
        return notes.push("a frames workload names a host that does not exist".into());
    };
    if from.is_empty() || to.is_empty() {
        return notes.push("a frames workload needs `from` and `to` hosts".into());
    }
    let time = w.time.unwrap_or(DEFAULT_TIME);
    let end = Instant(time.as_nanos());
    let ip_len = size.as_bytes().clamp(28, 65_000) as u32;
    let mut apps: Vec<(usize, Box<dyn App>)> = Vec::new();
    let pairs = from
        .iter()
        .flat_map(|&f| to.iter().map(move |&t| (f, t)))
        .filter(|(f, t)| f != t);
    for (k, (f, t)) in pairs.enumerate() {
        let link = &topo.hosts[f].link;
        let line = link.rate.unwrap_or(Rate::mbps(10_000));
        // The line rate each source occupies: `rate`, or `load` of its link, or all of it.
        let rate = match (w.rate, w.load) {
            (Some(r), _) => r,
            (None, Some(p)) => Rate((line.as_bps() as f64 * p.clamp(0.0, 1.0)) as u64),
            (None, None) => line,
        };
        let wire = link.wire_bytes(ip_len as usize + ETH_HEADER);
        let rng = Rng::for_stream(seed, 0x100 + k as u64);
        apps.push((
            f,
            Box::new(Cbr::new(
                CbrSpec {
                    host: f,
                    dst: t,
                    ip_len,
                    wire_bytes: wire,
                    rate,
                    jitter: DEFAULT_JITTER_FRACTION,
                    until: end,
                },
                rng,
            )),
        ));
    }
    add_sinks(&mut apps, &to);
    let Some(r) = run_noted(topo, apps, time, capture, notes) else {
        return;
    };
    let ports = r.network.all_host_stats();
    let names: Vec<String> = topo.hosts.iter().map(|h| h.name.clone()).collect();
    let d = delivery(&ports, &names, &from, &to);
    let sinks: Vec<&Sink> = r.hosts.apps_of::<Sink>().map(|(_, s)| s).collect();
    let good: u64 = sinks.iter().map(|s| s.total()).sum();
    let bytes: u64 = sinks.iter().flat_map(|s| s.bytes.iter()).sum();
    let sent: u64 = from.iter().map(|&f| ports[f].ingress.frames).sum();
    let bps = bytes as f64 * 8.0 / time.as_secs_f64().max(1e-12);
    if let Some(g) = d.frame_goodput {
        m.insert(Metric::FRAME_GOODPUT.into(), json!(g));
    }
    if let Some(l) = d.cell_loss {
        m.insert(Metric::CELL_LOSS.into(), json!(l));
    }
    m.insert(Metric::GOODPUT_MBPS.into(), json!(bps / 1e6));
    m.insert(Metric::PAYLOAD_KIB_S.into(), json!(bps / 8.0 / 1024.0));
    m.insert("frames_sent".into(), json!(sent));
    m.insert("frames_good".into(), json!(good));
    let max_queue = to
        .iter()
        .map(|&t| ports[t].egress.max_occupancy)
        .max()
        .unwrap_or(0);
    m.insert("max_queue".into(), json!(max_queue));
    let delay: Vec<f64> = sinks
        .iter()
        .filter(|s| s.delay.count() > 0)
        .map(|s| s.delay.mean())
        .collect();
    if !delay.is_empty() {
        m.insert(
            "mean_delay_us".into(),
            json!(delay.iter().sum::<f64>() / delay.len() as f64 / 1e3),
        );
    }
    insert_delivery(m, &d);
    m.insert("seconds".into(), json!(time.as_secs_f64()));
    m.insert("events".into(), json!(r.stats.sent + r.stats.delivered));
}
