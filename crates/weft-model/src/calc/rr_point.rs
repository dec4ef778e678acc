//! The `model` engine's answer for a request/response (`rr`) workload: the closed-form round
//! trip over the scenario's path from the client to the server (propagation, serialisation per
//! hop, each switch's latency, the hosts' costs): [`super::rtt::request_response`] for UDP,
//! [`super::rr_tcp::tcp_request_response`] for TCP (segments of the workload's MSS, Nagle's rule
//! and delayed ACKs of its `stack`, `nodelay`, `echo`).

use super::engine::ModelPoint;
use super::rr_tcp::{TcpExchange, tcp_request_response};
use super::rtt::{Hop, request_response};
use crate::host::HostCosts;
use crate::host::presets;
use crate::scenario::{Metric, Scenario, Workload};
use crate::tech::Transport;

/// The host costs of the scenario's host `name`: its preset, or a host that costs nothing.
pub fn host_costs(s: &Scenario, name: &str) -> HostCosts {
    s.hosts
        .iter()
        .find(|h| h.name == name)
        .and_then(|h| h.costs.as_deref())
        .and_then(presets::by_name)
        .unwrap_or(HostCosts::FREE)
}

/// Fills `out` with the round trip of `w` (its first client and first server).
pub fn rr(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(a), Some(b), Some(size)) = (w.from.first(), w.to.first(), w.size) else {
        return;
    };
    let Some(path) = s.path(a, b) else {
        out.notes.push(format!("no path from {a:?} to {b:?}"));
        return;
    };
    // Walk the path from the client: each link leads into the node at its far end, and a hop
    // that ends at a switch pays that switch's latency.
    let mut at = a.as_str();
    let mut hops = Vec::with_capacity(path.len());
    for l in &path {
        let next = if l.ends[0] == at {
            l.ends[1].as_str()
        } else {
            l.ends[0].as_str()
        };
        let latency = s
            .switches
            .iter()
            .find(|sw| sw.name == next)
            .map(|sw| sw.latency)
            .unwrap_or_default();
        hops.push(Hop {
            tech: &l.tech,
            propagation: l.delay,
            switch_latency: latency,
        });
        at = next;
    }
    // The switches' latencies one way: a scenario parameter (GIGAswitch's measured 16.5 us),
    // reported so that a comparison can show it beside the published figure.
    let one_way_switching: u64 = hops.iter().map(|h| h.switch_latency.as_nanos()).sum();
    let transport = w.proto.unwrap_or(Transport::Udp);
    let (client, server) = (host_costs(s, a), host_costs(s, b));
    let response = w.response_size.unwrap_or(size).0;
    let r = match transport {
        Transport::Tcp { .. } => {
            let mtu = path.iter().map(|l| l.tech.mtu.0).min().unwrap_or(1500);
            let x = TcpExchange::from_config(&w.tcp_config(mtu), w.rr_answer());
            let r = tcp_request_response(&hops, &x, size.0, response, &client, &server);
            out.metrics
                .insert("waiting_us".into(), r.waiting.as_nanos() as f64 / 1e3);
            r
        }
        _ => request_response(&hops, transport, size.0, response, &client, &server),
    };
    let us = |d: crate::time::Duration| d.as_nanos() as f64 / 1e3;
    let m = &mut out.metrics;
    m.insert(Metric::RTT_MEAN_US.into(), us(r.total));
    m.insert("rtt_ms".into(), us(r.total) / 1e3);
    m.insert("propagation_us".into(), us(r.propagation));
    m.insert("serialisation_us".into(), us(r.serialisation));
    m.insert("switching_us".into(), us(r.switching));
    m.insert("switch_latency_us".into(), one_way_switching as f64 / 1e3);
    m.insert("hosts_us".into(), us(r.hosts));
    m.insert(Metric::RR_LOSS.into(), 0.0);
    out.notes.push(format!(
        "closed-form round trip: no queueing, no loss; hosts {} and {}",
        client.name, server.name
    ));
    if let Some(b) = w.beside {
        out.notes.push(format!(
            "the flows of workload {b} it runs beside are not in this round trip (sim runs them)"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calc::evaluate;

    #[test]
    fn a_switch_latency_counts_both_ways() {
        let text = |latency: &str| {
            format!(
                r#"
name = "r"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "sw"
latency = "{latency}"
[[link]]
ends = ["a", "sw"]
tech = "fddi"
delay = "1us"
[[link]]
ends = ["sw", "b"]
tech = "fddi"
delay = "1us"
[[workload]]
kind = "rr"
from = "a"
to = "b"
size = 64
"#
            )
        };
        let rtt = |l: &str| {
            let s = Scenario::parse(&text(l), "r.toml").unwrap();
            evaluate(&s)[0].metrics[Metric::RTT_MEAN_US]
        };
        let (without, with) = (rtt("0us"), rtt("16.5us"));
        assert!((with - without - 33.0).abs() < 1e-6, "{without} {with}");
        // The parameter itself, one way, as the catalogue's input item shows it.
        let s = Scenario::parse(&text("16.5us"), "r.toml").unwrap();
        assert!((evaluate(&s)[0].metrics["switch_latency_us"] - 16.5).abs() < 1e-9);
        // Two hops each way of a 92-byte datagram on FDDI, and 4 us of propagation.
        assert!(without > 4.0, "{without}");
    }
}
