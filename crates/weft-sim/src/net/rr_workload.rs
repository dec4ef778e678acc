//! The `rr` workload of a scenario file on the simulated network: a client on every `from` host
//! asking the server on every `to` host, one pair after another (each pair alone on the network,
//! as an echo test is run), with the metrics every engine reports ([`Latencies::metrics`]). The
//! client and server are the core's ([`weft_model::app::rr`]) on the simulated hosts
//! ([`Hosted`]): over UDP (`proto = "udp"`, the default) on a UDP socket each; over TCP on one
//! connection opened before the first request, configured as a `tput` workload's flows are
//! (`stack`, `cc`, `mss`, `window` as both socket buffers), with `nodelay` turning Nagle's
//! algorithm off at both ends and `echo` making the server an RFC 862 echo service.
//!
//! With `together = true` every pair runs at once: each client a process of its own on its
//! host, each server host one UDP echo process answering all its clients (over TCP a process
//! per connection), every host's applications charging its one machine ([`machines`]).
//!
//! Over UDP it reports what an analyser on the hosts' links sees, each frame stamped at its
//! first bit there (see [`super::datagram`]): the clients' and the servers' turnarounds
//! (`client_turnaround_us`, `server_turnaround_us`: from a datagram's arrival at a host to the
//! next one back to its sender), their waits (`client_wait_us`, `server_wait_us`: from a
//! datagram leaving for a peer to the next from it), and the network's share of a round trip
//! measured from each end, the GIGAswitch study's switch round trips (Table 19):
//! `switch_forward_us` = client's wait - server's turnaround (A - B), `switch_echo_us` =
//! server's wait - client's turnaround (D - C), and the server's turnaround over their mean
//! (`server_over_switch`).
//!
//! With `beside = K` the requests share the network with the flows of `tput` workload K (its
//! first point if it sweeps): the bulk flows start at time zero, the first request leaves when
//! their warm-up ends, and the run stops when they do, so requests not asked by then are not
//! asked (`requests` counts those that were).

use serde_json::{Map, Value, json};
use weft_model::app::rr::keys::{
    CLIENT_TURNAROUND_US, CLIENT_WAIT_US, SERVER_OVER_SWITCH, SERVER_TURNAROUND_US, SERVER_WAIT_US,
    SWITCH_ECHO_US, SWITCH_FORWARD_US,
};
use weft_model::app::rr::{Latencies, RrClient, RrServer, RrSpec, Via, keys};
use weft_model::fabric::Rng;
use weft_model::host::HostCpu;
use weft_model::net::{LinkSpec, Topology};
use weft_model::scenario::{Scenario, Workload};
use weft_model::tcp::SeqNum;
use weft_model::tech::Transport;
use weft_model::{Duration, Instant};

use super::hosted::{Hosted, TcpEnd};
use super::hosts::{App, machines, thread_on};
use super::run::{RunOptions, run};
use super::tput;

/// Requests of an rr workload that gives no `count`.
pub const DEFAULT_COUNT: u64 = 1000;
/// Time-out of an rr workload that gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long past its time-out a TCP request may still be waited for: longer than a stack takes
/// to give a connection up (Linux: 15 retransmissions backing off to 120 s, about 15 minutes).
const TCP_GIVE_UP: Duration = Duration::from_secs(1800);
/// The TCP client's port.
const CLIENT_PORT: u16 = 41_000;
/// The TCP server's port (the echo service's).
const SERVER_PORT: u16 = 7;

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
    let mut ends = Vec::new();
    for f in &w.from {
        for t in &w.to {
            let (Some(a), Some(b)) = (index(f), index(t)) else {
                return notes.push(format!("rr: no host {f:?} or {t:?}"));
            };
            if a != b {
                ends.push((f, t, a, b));
            }
        }
    }
    // One pair after another, each alone on the network; or, `together`, all at once.
    let groups: Vec<Vec<usize>> = if w.together {
        vec![(0..ends.len()).collect()]
    } else {
        (0..ends.len()).map(|k| vec![k]).collect()
    };
    let (mut all, mut pairs, mut failed) = (Latencies::default(), Vec::new(), 0u64);
    // Turnarounds of the clients' and the servers' hosts (UDP), then their waits: counts and
    // sums.
    let mut turns = [(0u64, Duration::ZERO); 4];
    for group in groups {
        // Long enough for every request to time out (over TCP, for every late answer to
        // arrive or the connection to give up); the clock jumps over idle time, and once the
        // clients are done nothing is left to happen.
        let per_request = if matches!(w.proto, Some(Transport::Tcp { .. })) {
            timeout.0.saturating_add(TCP_GIVE_UP.0)
        } else {
            timeout.0 + Duration::from_millis(1).0
        };
        let mut ns = per_request.saturating_mul(count + 1);
        let (mut flows, mut start) = (Vec::new(), Instant::ZERO);
        if let Some(bw) = &bulk {
            match tput::flow_apps(s, topo, bw, seed) {
                Ok((f, _)) => flows = f,
                Err(e) => return notes.push(format!("beside: {e}")),
            }
            let time = bw.time.unwrap_or(tput::DEFAULT_TIME);
            start = Instant(tput::warmup(time).0);
            ns = time.0;
        }
        // Every application of a host charges that host's machine.
        let machines = machines(s, topo);
        let mut apps: Vec<(usize, Box<dyn App>)> = Vec::new();
        // A UDP echo server per server host, answering all its clients.
        let mut udp_servers: Vec<(usize, usize)> = Vec::new();
        let mut slots = Vec::with_capacity(group.len());
        for &k in &group {
            let (f, t, a, b) = ends[k];
            // The path MTU, as the model takes it.
            let mtu = s
                .path(f, t)
                .and_then(|p| p.iter().map(|l| l.tech.mtu.0).min())
                .map_or(topo.hosts[a].link.mtu, |m| m.min(65_535) as u32);
            let pair = Ends {
                client: (a, thread_on(&machines, a)),
                server: (b, thread_on(&machines, b)),
                mtu,
                links: (topo.hosts[a].link.clone(), topo.hosts[b].link.clone()),
                start,
                port: CLIENT_PORT + k as u16,
                seed: Rng::for_stream(seed, 0x400 + k as u64).next_u64(),
            };
            let (client, server) = pair_apps(w, size.0, count, timeout, seed, pair);
            apps.push((a, client));
            let c = apps.len() - 1;
            let udp = !matches!(w.proto, Some(Transport::Tcp { .. }));
            let sv = match udp_servers.iter().find(|x| x.0 == b) {
                Some(&(_, i)) if udp => i,
                _ => {
                    apps.push((b, server));
                    if udp {
                        udp_servers.push((b, apps.len() - 1));
                    }
                    apps.len() - 1
                }
            };
            slots.push((k, c, sv));
        }
        apps.extend(flows);
        let opts = RunOptions {
            duration: Duration(ns),
            ..RunOptions::default()
        };
        let r = match run(topo, apps, opts, |_| {}) {
            Ok(r) => r,
            Err(e) => return notes.push(e.to_string()),
        };
        let mut servers_seen = Vec::new();
        for &(_, c, sv) in &slots {
            let first = !servers_seen.contains(&sv);
            servers_seen.push(sv);
            for (side, app, count) in [(0, c, true), (1, sv, first)] {
                let client = r.hosts.app::<Hosted<RrClient>>(app);
                let server = r.hosts.app::<Hosted<RrServer>>(app);
                let t = client.and_then(Hosted::turnarounds);
                let t = t.or_else(|| server.and_then(Hosted::turnarounds));
                let wait = client.and_then(Hosted::aways);
                let wait = wait.or_else(|| server.and_then(Hosted::aways));
                for (k, x) in [(side, t), (side + 2, wait)] {
                    if let (Some((n, sum)), true) = (x, count) {
                        turns[k].0 += n;
                        turns[k].1 += sum;
                    }
                }
            }
        }
        for (k, c, sv) in slots {
            let (f, t, _, _) = ends[k];
            let Some(pair) = answered(&r.hosts, c, sv) else {
                continue;
            };
            let l = &pair.latencies;
            let mut row = json!({
                "from": f, "to": t, "answered": l.rtt_ns.len(), "lost": l.lost,
                keys::RTT_P50_US: l.quantile(0.5) as f64 / 1e3,
            });
            if let Some(mean) = l.mean_ns().filter(|_| w.together) {
                row[keys::RTT_MEAN_US] = json!(mean / 1e3);
            }
            if let Some(x) = pair.tcp {
                row["tcp"] = x;
            }
            if let Some(e) = pair.failed {
                notes.push(format!("rr {f} -> {t}: the connection failed ({e})"));
            }
            pairs.push(row);
            failed += u64::from(pair.latencies.lost > 0);
            all.extend(&pair.latencies);
        }
    }
    m.extend(all.metrics());
    let mean_us =
        |(n, sum): (u64, Duration)| (n > 0).then(|| sum.as_nanos() as f64 / n as f64 / 1e3);
    let keys = [
        CLIENT_TURNAROUND_US,
        SERVER_TURNAROUND_US,
        CLIENT_WAIT_US,
        SERVER_WAIT_US,
    ];
    let means = turns.map(mean_us);
    for (key, mean) in keys.into_iter().zip(means) {
        if let Some(x) = mean {
            m.insert(key.into(), json!(x));
        }
    }
    // The network's share of a round trip, from each end: A - B and D - C.
    if let [Some(c), Some(b), Some(a), Some(d)] = means {
        m.insert(SWITCH_FORWARD_US.into(), json!(a - b));
        m.insert(SWITCH_ECHO_US.into(), json!(d - c));
        let switch = (a - b + d - c) / 2.0;
        if switch > 0.0 {
            m.insert(SERVER_OVER_SWITCH.into(), json!(b / switch));
        }
    }
    if w.together {
        m.insert("sessions_failed".into(), json!(failed));
    }
    m.insert("pairs".into(), json!(pairs));
}

/// What one pair's client measured.
struct PairResult {
    latencies: Latencies,
    /// TCP: the connections' counters.
    tcp: Option<Value>,
    /// TCP: why the connection failed.
    failed: Option<weft_model::app::StreamError>,
}

/// The client (application `c`) and server (application `sv`) of a pair in a finished run.
fn answered(hosts: &super::SimHosts, c: usize, sv: usize) -> Option<PairResult> {
    let c = hosts.app::<Hosted<RrClient>>(c)?;
    let latencies = c.app().latencies().clone();
    let (Some(client), Some(server)) = (
        c.connection(),
        hosts
            .app::<Hosted<RrServer>>(sv)
            .and_then(Hosted::connection),
    ) else {
        return Some(PairResult {
            latencies,
            tcp: None,
            failed: None,
        });
    };
    let counters = |conn: &weft_model::tcp::Connection| {
        let st = conn.stats();
        json!({
            "segments": st.segments_sent, "retransmits": st.segments_retransmitted,
            "timeouts": st.timeouts, "delayed_acks": st.delayed_acks,
            "pure_acks": st.pure_acks_sent,
        })
    };
    Some(PairResult {
        latencies,
        tcp: Some(json!({
            "mss": client.mss(),
            "client": counters(client),
            "server": counters(server),
        })),
        failed: c.app().failed(),
    })
}

/// Where one pair's client and server run.
struct Ends {
    /// The client's host and its CPU if it has costs.
    client: (usize, Option<HostCpu>),
    /// The server's.
    server: (usize, Option<HostCpu>),
    /// The path MTU, bytes.
    mtu: u32,
    /// The client's and the server's links, where the analyser stamps their frames.
    links: (LinkSpec, LinkSpec),
    /// The first request is not asked before this instant.
    start: Instant,
    /// The client's port (TCP).
    port: u16,
    /// Draws the TCP initial sequence numbers.
    seed: u64,
}

/// The client and the server of `w` between `ends`: UDP, or TCP on one connection.
fn pair_apps(
    w: &Workload,
    size: u64,
    count: u64,
    timeout: Duration,
    seed: u64,
    ends: Ends,
) -> (Box<dyn App>, Box<dyn App>) {
    let response = w.response_size.map_or(size, |r| r.0);
    let ((a, a_cpu), (b, b_cpu), mtu) = (ends.client, ends.server, ends.mtu);
    let spec = RrSpec {
        request: size,
        response,
        count,
        timeout,
        start: ends.start,
        give_up: None,
    };
    if !matches!(w.proto, Some(Transport::Tcp { .. })) {
        let c = Hosted::udp(RrClient::new(spec, Via::Datagram(b)), a, mtu)
            .connected_to(b)
            .analysed_on(ends.links.0);
        let sv = RrServer::new(size, response, w.rr_answer(), Via::Datagram(a));
        // The echo server is a daemon (inetd's own echo service): it selects before each read.
        let sv = Hosted::udp(sv, b, mtu)
            .selecting()
            .analysed_on(ends.links.1);
        return (Box::new(c.with_cpu(a_cpu)), Box::new(sv.with_cpu(b_cpu)));
    }
    let cfg = w.tcp_config(u64::from(mtu));
    let mut rng = Rng::for_stream(ends.seed, 0);
    let iss = (SeqNum(rng.next_u64() as u32), SeqNum(rng.next_u64() as u32));
    let client = TcpEnd {
        host: a,
        port: ends.port,
        peer: b,
        peer_port: SERVER_PORT,
    };
    let server = TcpEnd {
        host: b,
        port: SERVER_PORT,
        peer: a,
        peer_port: ends.port,
    };
    let c = RrClient::new(spec, Via::Stream);
    let c = Hosted::connect(c, client, tput::on_host(&cfg, seed, a), iss.0);
    let sv = RrServer::new(size, response, w.rr_answer(), Via::Stream);
    let sv = Hosted::listen(sv, server, tput::on_host(&cfg, seed, b), iss.1);
    (Box::new(c.with_cpu(a_cpu)), Box::new(sv.with_cpu(b_cpu)))
}
