//! The `model` engine's answer for a request/response (`rr`) workload: the closed-form round
//! trip over the scenario's path from the client to the server (propagation, serialisation per
//! hop, each switch's latency, the hosts' costs): [`super::rtt::request_response`] for UDP,
//! [`super::rr_tcp::tcp_request_response`] for TCP (segments of the workload's MSS, Nagle's rule
//! and delayed ACKs of its `stack`, `nodelay`, `echo`).

use super::engine::ModelPoint;
use super::rr_tcp::{TcpExchange, tcp_request_response};
use super::rtt::{Hop, request_response};
use super::server::SharedServer;
use super::udp::ip_fragments;
use crate::app::rr::keys;
use crate::host::{Direction, HostCosts};
use crate::scenario::{Metric, Scenario, Workload};
use crate::tech::Transport;

/// The host costs of the scenario's host `name`: its preset, or a host that costs nothing.
pub fn host_costs(s: &Scenario, name: &str) -> HostCosts {
    s.host(name)
        .and_then(crate::scenario::Host::cost_preset)
        .unwrap_or(HostCosts::FREE)
}

/// The hops of `path` (the scenario's links from host `a`) as the round-trip model sees them:
/// each link leads into the node at its far end, and a hop that ends at a switch pays that
/// switch's latency.
pub fn path_hops<'a>(s: &Scenario, a: &str, path: &[&'a crate::scenario::Link]) -> Vec<Hop<'a>> {
    let mut at = a;
    let mut hops = Vec::with_capacity(path.len());
    for l in path {
        let next = if l.ends[0] == at {
            l.ends[1].as_str()
        } else {
            l.ends[0].as_str()
        };
        let sw = s.switches.iter().find(|sw| sw.name == next);
        hops.push(Hop {
            tech: &l.tech,
            propagation: l.delay,
            switch_latency: sw.map(|sw| sw.latency).unwrap_or_default(),
            cut_through: sw.is_some_and(|sw| sw.cut_through),
        });
        at = next;
    }
    hops
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
    let hops = path_hops(s, a, &path);
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
    // Each end's turnaround alone: from a message's arrival to the next one back, a read woken
    // from idle and a write, and the server's daemon's select (the model's round trip is these
    // two and the network). As an analyser on the host's link stamps frames, at their first
    // bit, the turnaround begins one frame's time on that link (the message's last) before the
    // host has the message.
    let mtu = path.iter().map(|l| l.tech.mtu.0).min().unwrap_or(1500);
    let on_line = |tech: &crate::tech::Tech, payload: u64| {
        ip_fragments(payload, u32::try_from(mtu).unwrap_or(u32::MAX))
            .last()
            .map_or(crate::time::Duration::ZERO, |&ip| {
                tech.wire_time(u64::from(ip))
            })
    };
    // Over UDP (the simulator measures turnarounds over UDP alone).
    let (first, last) = match transport {
        Transport::Udp => (hops.first().map(|h| h.tech), hops.last().map(|h| h.tech)),
        _ => (None, None),
    };
    let on_lines = (
        first.map_or(crate::time::Duration::ZERO, |t| on_line(t, response)),
        last.map_or(crate::time::Duration::ZERO, |t| on_line(t, size.0)),
    );
    let turnaround = |h: &HostCosts, read: u64, written: u64| {
        let packets = |b: u64| b.div_ceil(mtu.saturating_sub(transport.header_bytes()).max(1));
        h.cost(Direction::Receive, read, packets(read).max(1), 1)
            + h.wakeup()
            + h.cost(Direction::Send, written, packets(written).max(1), 1)
    };
    out.metrics.insert(
        keys::CLIENT_TURNAROUND_US.into(),
        us(turnaround(&client, response, size.0) + on_lines.0),
    );
    out.metrics.insert(
        keys::SERVER_TURNAROUND_US.into(),
        us(turnaround(&server, size.0, response) + server.select() + on_lines.1),
    );
    let mut rtt_us = us(r.total);
    if w.together {
        let lines_us = (us(on_lines.0), us(on_lines.1));
        rtt_us = together(
            s, w, &client, &server, transport, size.0, response, rtt_us, lines_us, out,
        );
    }
    let m = &mut out.metrics;
    m.insert(Metric::RTT_MEAN_US.into(), rtt_us);
    m.insert("rtt_ms".into(), rtt_us / 1e3);
    m.insert("propagation_us".into(), us(r.propagation));
    m.insert("serialisation_us".into(), us(r.serialisation));
    m.insert("switching_us".into(), us(r.switching));
    m.insert("switch_latency_us".into(), one_way_switching as f64 / 1e3);
    m.insert("hosts_us".into(), us(r.hosts));
    // A round trip longer than the time-out loses every request.
    let late = w
        .timeout
        .is_some_and(|t| rtt_us * 1e3 > t.as_nanos() as f64);
    m.insert(Metric::RR_LOSS.into(), if late { 1.0 } else { 0.0 });
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

/// The round trip of `w`'s sessions run `together`: the host most of them share (the server
/// host of a many-to-one test, the client host of a one-to-many one) as a [`SharedServer`] whose
/// work per request is its send and receive costs and whose sessions spend the rest of the lone
/// round trip `lone_us` elsewhere. `lines_us` is the last frame's time on the client's and the
/// server's link, which the turnarounds (as an analyser stamps them) include. Writes what it
/// found into `out`; returns the round trip, µs.
#[allow(clippy::too_many_arguments)] // the exchange, spelled out
fn together(
    s: &Scenario,
    w: &Workload,
    client: &HostCosts,
    server: &HostCosts,
    transport: Transport,
    request: u64,
    response: u64,
    lone_us: f64,
    lines_us: (f64, f64),
    out: &mut ModelPoint,
) -> f64 {
    // Sessions on the busiest client host and on the busiest server host.
    let pairs: Vec<(&String, &String)> = w
        .from
        .iter()
        .flat_map(|f| w.to.iter().map(move |t| (f, t)))
        .filter(|(f, t)| f != t)
        .collect();
    let busiest = |server_side: bool| {
        let side = |p: (&String, &String)| {
            if server_side {
                p.1.clone()
            } else {
                p.0.clone()
            }
        };
        pairs
            .iter()
            .map(|&p| pairs.iter().filter(|&&q| side(q) == side(p)).count())
            .max()
            .unwrap_or(0)
    };
    let per_client_host = busiest(false);
    let per_server_host = busiest(true);
    let mtu = w
        .from
        .first()
        .zip(w.to.first())
        .and_then(|(a, b)| s.path(a, b))
        .and_then(|p| p.iter().map(|l| l.tech.mtu.0).min())
        .unwrap_or(1500);
    let per_packet = mtu.saturating_sub(transport.header_bytes()).max(1);
    let packets = |bytes: u64| bytes.div_ceil(per_packet).max(1);
    let work = |h: &HostCosts, read: u64, written: u64| {
        (h.cost(Direction::Receive, read, packets(read), 1)
            + h.cost(Direction::Send, written, packets(written), 1))
        .as_nanos() as f64
    };
    // One echo process serves all a server host's clients, selecting before each request;
    // each client is a process of its own.
    let (sessions, host, busy, switch) = if per_server_host >= per_client_host {
        (
            per_server_host,
            server,
            work(server, request, response) + server.select_ns,
            0.0,
        )
    } else {
        let c = client;
        (per_client_host, c, work(c, response, request), c.switch_ns)
    };
    let wakeup = host.wakeup_ns;
    let station = SharedServer {
        sessions: sessions as u32,
        work_ns: busy,
        wakeup_ns: wakeup,
        switch_ns: switch,
        elsewhere_ns: (lone_us * 1e3 - busy - wakeup).max(0.0),
    };
    let load = station.load();
    let m = &mut out.metrics;
    m.insert("shared_sessions".into(), sessions as f64);
    m.insert("shared_host_us".into(), load.at_host_ns / 1e3);
    // The shared host's turnaround is its time with the others' requests.
    let (side, line_us) = if per_server_host >= per_client_host {
        (keys::SERVER_TURNAROUND_US, lines_us.1)
    } else {
        (keys::CLIENT_TURNAROUND_US, lines_us.0)
    };
    m.insert(side.into(), load.at_host_ns / 1e3 + line_us);
    m.insert("shared_queueing_us".into(), load.queueing_ns / 1e3);
    m.insert("shared_utilisation".into(), load.utilisation);
    m.insert("lone_rtt_us".into(), lone_us);
    out.notes.push(format!(
        "{sessions} sessions share the {} host {} ({}): closed loop, cycle = max(alone, \
         sessions x work)",
        if per_server_host >= per_client_host {
            "server"
        } else {
            "client"
        },
        host.name,
        if load.saturated {
            "saturated"
        } else {
            "not saturated"
        }
    ));
    load.cycle_ns / 1e3
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

    /// A turnaround as an analyser on the host's link stamps it (each frame at its first bit)
    /// begins the arriving datagram's time on that link before the host has it: between hosts
    /// that cost nothing, each end's turnaround is one 92-byte datagram's time on FDDI. Without
    /// it both would be zero.
    #[test]
    fn a_turnaround_counts_the_arriving_frame_on_the_line() {
        let text = r#"
name = "r"
[[host]]
name = "a"
[[host]]
name = "b"
[[link]]
ends = ["a", "b"]
tech = "fddi"
[[workload]]
kind = "rr"
from = "a"
to = "b"
size = 64
"#;
        let s = Scenario::parse(text, "r.toml").unwrap();
        let m = &evaluate(&s)[0].metrics;
        let fddi = crate::tech::Tech::preset("fddi").unwrap();
        let line_us = fddi.wire_time(92).as_nanos() as f64 / 1e3;
        assert!(line_us > 7.0, "{line_us}");
        for key in [keys::CLIENT_TURNAROUND_US, keys::SERVER_TURNAROUND_US] {
            assert!((m[key] - line_us).abs() < 1e-9, "{key} {}", m[key]);
        }
    }
}
