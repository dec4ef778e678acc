//! The `rr` workload of a scenario file on the simulated network: a client on every `from` host
//! asking the server on every `to` host, one pair after another (each pair alone on the network,
//! as an echo test is run), with the round-trip table the emulator reports. Over UDP
//! (`proto = "udp"`, the default) an [`RrClient`] and an [`RrServer`]; over TCP a
//! [`TcpRrClient`] and a [`TcpRrServer`] on one connection opened before the first request,
//! configured as a `tput` workload's flows are (`stack`, `cc`, `mss`, `window` as both socket
//! buffers), with `nodelay` turning Nagle's algorithm off at both ends and `echo` making the
//! server an RFC 862 echo service.
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

use weft_model::fabric::Rng;
use weft_model::tcp::SeqNum;
use weft_model::tech::Transport;

use super::hosts::App;
use super::rr::{RrClient, RrServer};
use super::rr_tcp::{TcpRrClient, TcpRrServer, Transactions};
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
            // Long enough for every request to time out (over TCP, for every late answer to
            // arrive or the connection to give up); the clock jumps over idle time, and once the
            // client is done nothing is left to happen.
            let per_request = if matches!(w.proto, Some(Transport::Tcp { .. })) {
                timeout.0.saturating_add(TCP_GIVE_UP.0)
            } else {
                timeout.0 + Duration::from_millis(1).0
            };
            let mut ns = per_request.saturating_mul(count + 1);
            let (mut flows, mut start) = (Vec::new(), Instant::ZERO);
            if let Some(bw) = &bulk {
                match tput::flow_apps(s, topo, bw, seed) {
                    Ok((f, _, _)) => flows = f,
                    Err(e) => return notes.push(format!("beside: {e}")),
                }
                let time = bw.time.unwrap_or(tput::DEFAULT_TIME);
                start = Instant(tput::warmup(time).0);
                ns = time.0;
            }
            let ends = Ends {
                client: (a, cpu(a)),
                server: (b, cpu(b)),
                mtu,
                start,
                seed: Rng::for_stream(seed, 0x400 + pairs.len() as u64).next_u64(),
            };
            let (client, server) = pair_apps(w, size.0, count, timeout, seed, ends);
            let mut apps: Vec<(usize, Box<dyn App>)> = vec![(a, client), (b, server)];
            apps.extend(flows);
            let opts = RunOptions {
                duration: Duration(ns),
                ..RunOptions::default()
            };
            let r = match run(topo, apps, opts, |_| {}) {
                Ok(r) => r,
                Err(e) => return notes.push(e.to_string()),
            };
            let Some(mut pair) = answered(&r.hosts) else {
                continue;
            };
            pair.rtt_ns.sort_unstable();
            let v = pair.rtt_ns;
            let mut row = json!({
                "from": f, "to": t, "answered": v.len(), "lost": pair.lost,
                "rtt_p50_us": quantile(&v, 0.5) as f64 / 1e3,
            });
            if let Some(x) = pair.tcp {
                row["tcp"] = x;
            }
            if let Some(e) = pair.failed {
                notes.push(format!("rr {f} -> {t}: the connection failed ({e})"));
            }
            pairs.push(row);
            lost += pair.lost;
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

/// What one pair's client measured.
struct PairResult {
    rtt_ns: Vec<u64>,
    lost: u64,
    /// TCP: the connections' counters.
    tcp: Option<Value>,
    /// TCP: why the connection failed.
    failed: Option<weft_model::tcp::Error>,
}

/// The client (application 0) and server (application 1) of a finished pair's run.
fn answered(hosts: &super::SimHosts) -> Option<PairResult> {
    if let Some(c) = hosts.app::<RrClient>(0) {
        return Some(PairResult {
            rtt_ns: c.rtt_ns.clone(),
            lost: c.lost,
            tcp: None,
            failed: None,
        });
    }
    let c = hosts.app::<TcpRrClient>(0)?;
    let server = hosts.app::<TcpRrServer>(1)?;
    let counters = |conn: &weft_model::tcp::Connection| {
        let st = conn.stats();
        json!({
            "segments": st.segments_sent, "retransmits": st.segments_retransmitted,
            "timeouts": st.timeouts, "delayed_acks": st.delayed_acks,
            "pure_acks": st.pure_acks_sent,
        })
    };
    Some(PairResult {
        rtt_ns: c.rtt_ns.clone(),
        lost: c.lost,
        tcp: Some(json!({
            "mss": c.connection().mss(),
            "client": counters(c.connection()),
            "server": counters(server.connection()),
        })),
        failed: c.failed,
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
    /// The first request is not asked before this instant.
    start: Instant,
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
    if !matches!(w.proto, Some(Transport::Tcp { .. })) {
        let mut c = RrClient::new(a, b, size, mtu, count, timeout)
            .with_response(response, mtu)
            .starting(ends.start);
        let mut sv = RrServer::new(b, size, mtu).with_response(response, mtu);
        if let Some(x) = a_cpu {
            c = c.with_cpu(x);
        }
        if let Some(x) = b_cpu {
            sv = sv.with_cpu(x);
        }
        return (Box::new(c), Box::new(sv));
    }
    let cfg = w.tcp_config(u64::from(mtu));
    let mut rng = Rng::for_stream(ends.seed, 0);
    let iss = (SeqNum(rng.next_u64() as u32), SeqNum(rng.next_u64() as u32));
    let spec = Transactions {
        request: size,
        response,
        count,
        timeout,
    };
    let c_cfg = tput::on_host(&cfg, seed, a);
    let s_cfg = tput::on_host(&cfg, seed, b);
    let mut c =
        TcpRrClient::new(a, CLIENT_PORT, b, SERVER_PORT, c_cfg, iss.0, spec).starting(ends.start);
    let mut sv = TcpRrServer::new(
        b,
        SERVER_PORT,
        a,
        CLIENT_PORT,
        s_cfg,
        iss.1,
        size,
        response,
        w.rr_answer(),
    );
    if let Some(x) = a_cpu {
        c = c.with_cpu(x);
    }
    if let Some(x) = b_cpu {
        sv = sv.with_cpu(x);
    }
    (Box::new(c), Box::new(sv))
}
