//! The `tput` workload of a scenario file on the simulated network: bulk transfers (ttcp) from
//! every `from` host to every `to` host, one flow per pair as the emulator runs them.
//!
//! The applications are the core's bulk source and sink ([`weft_model::app::bulk`]) on simulated
//! hosts ([`Hosted`], as the bulk model's host: [`Hosted::bulk_host`]).
//!
//! - `proto = "tcp"`: a source and a sink per flow, configured from the workload: `stack` (the
//!   1995 BSD stack by default, or Linux), `cc`, `mss` (default: the path MTU, or `mtu`, less
//!   40 bytes), `window` (the socket buffers at both ends, so a fixed advertised window with 1995
//!   semantics: window scaling only when the window does not fit 16 bits), and the hosts' `costs`.
//! - `proto = "udp"`: a ttcp-style blast, `size`-byte messages at `rate` of payload (default: as
//!   fast as the sender's link goes), each source on its own phase, counted by a sink on each
//!   receiving host. A message longer than the path's MTU leaves in IP fragments and counts
//!   only if every one arrives. The hosts' `costs` are charged: the source's `sendto` blocks
//!   until its host has done the call's work (so a slow host sends slower than its link), and
//!   the sink reads each datagram on its host's CPU from a socket receive buffer of
//!   [`UDP_RECVSPACE`] bytes that drops what arrives while it is full.
//!
//! TCP goodput is the payload read in `[warmup, time)`, warmup = min(time / 5, 1 s) as the
//! emulator measures it; UDP's is what arrived over the whole run. Both in Mbit/s and KiB/s under
//! the model engine's metric names; TCP's also as [`EFFECTIVE_THROUGHPUT`]. Each host's coarse
//! TCP timer ticks in its own phase ([`on_host`]).

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};
use weft_model::app::Application;
use weft_model::app::bulk::{BulkSink, BulkSource, Pace, goodput_metrics};
use weft_model::app::rr::Via;
use weft_model::app::traffic::sized_flow_metrics;
use weft_model::calc::fct::PathIdeal;
use weft_model::fabric::Rng;
use weft_model::host::HostCpu;
use weft_model::net::{ETH_HEADER, Topology, delivery};
use weft_model::scenario::{Metric, Scenario, TcpStack, Workload};
use weft_model::tcp::{Config, SeqNum};
use weft_model::tech::Transport;
use weft_model::{Duration, Instant, Rate};

use super::datagram::datagrams;
use super::frame::UDP_IP_HEADERS;
use super::hosted::{Hosted, TcpEnd};
use super::hosts::{App, machines, thread_on};
use super::run::{NetRun, insert_delivery, run_noted};

/// The metric of a TCP `tput` result that says how much of the path carried useful
/// payload: goodput over the bottleneck's payload rate at the flows' MSS, 0..=1 (Romanow and
/// Floyd's "effective throughput").
pub const EFFECTIVE_THROUGHPUT: &str = "effective_throughput";

/// Simulated time of a tput workload that gives none.
pub const DEFAULT_TIME: Duration = Duration::from_secs(10);
/// Bytes a ttcp-style sender writes per call (ttcp's default buffer, 8 KiB).
pub const WRITE_SIZE: u64 = 8192;
/// Free send-buffer bytes a blocked writer waits for before it copies more (BSD's default
/// SO_SNDLOWAT, MCLBYTES).
pub const SEND_LOWAT: u64 = 2048;
/// A UDP socket's receive buffer on a host with costs, bytes: 4.3BSD's `udp_recvspace`
/// (40 datagrams of 1 KB with their senders' addresses), as SunOS 4.1 inherits it; the
/// default of `xfer` workloads' `socket_buffer` too.
pub const UDP_RECVSPACE: u64 = 41_600;
/// The largest UDP payload (an IP datagram of 65,535 bytes), bytes.
const MAX_UDP_PAYLOAD: u64 = 65_507;
/// First port of the senders' connections (one per flow).
const SENDER_PORT: u16 = 40_000;
/// First port the receivers listen on (one per flow).
const RECEIVER_PORT: u16 = 5001;

/// The measurement span of a run of `time`: from the warm-up's end to the end.
pub fn warmup(time: Duration) -> Duration {
    Duration((time.as_nanos() / 5).min(Duration::from_secs(1).as_nanos()))
}

/// `cfg` on host `host`: a coarse timer (BSD's 500 ms slow timer) ticks with the host's own
/// phase, drawn from `seed`, as each machine's clock ran from its own boot. With every host
/// ticking in step, flows that lose segments together time out together forever.
pub fn on_host(cfg: &Config, seed: u64, host: usize) -> Config {
    let mut cfg = cfg.clone();
    if let Some(g) = cfg.rto.granularity.filter(|g| g.0 > 0) {
        let mut rng = Rng::for_stream(seed, 0x300 + host as u64);
        cfg.rto.phase = Duration(rng.next_u64() % g.0);
    }
    cfg
}

/// A workload's applications with its flows' pairs and its `from` and `to` hosts ([`flow_pairs`]).
pub type FlowApps = (Vec<(usize, Box<dyn App>)>, FlowPairs);

/// Runs a `tput` workload of `s` on `topo`; metrics into `m`, what could not be done into
/// `notes`. With `capture`, one pcap per link is written there.
pub fn tput(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    seed: u64,
    capture: Option<&Path>,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    if w.file.is_some() {
        return super::ftp_workload::ftp(s, topo, w, seed, capture, m, notes);
    }
    if w.ndp {
        return super::ndp::tput_ndp(s, topo, w, capture, m, notes);
    }
    if w.dcqcn {
        return super::dcqcn::tput_dcqcn(s, topo, w, capture, m, notes);
    }
    let time = w.time.unwrap_or(DEFAULT_TIME);
    let warm = warmup(time);
    let udp = matches!(w.proto, Some(Transport::Udp));
    let (apps, (_, from, to)) = match flow_apps(s, topo, w, seed) {
        Ok(x) => x,
        Err(e) => return notes.push(e),
    };
    let Some(r) = run_noted(topo, apps, time, capture, notes) else {
        return;
    };
    // TCP is measured after its warm-up; a UDP blast starts at full rate, so over the whole run.
    let span = if udp {
        time.as_secs_f64()
    } else {
        Duration(time.0 - warm.0).as_secs_f64()
    }
    .max(1e-12);
    let bytes = if udp {
        udp_metrics(&r, topo, w, span, m)
    } else {
        tcp_metrics(&r, topo, span, m, notes)
    };
    let bps = bytes as f64 * 8.0 / span;
    if !udp && w.flow_size.is_none() {
        if let Some(cap) = tcp_capacity(s, &r, topo, &from, &to) {
            m.insert(EFFECTIVE_THROUGHPUT.into(), json!(bps / cap));
        }
    }
    m.extend(goodput_metrics(bps));
    if !udp {
        goodput_by_costs(s, m);
    }
    crate::ring::path_metrics(&r.rings, topo, bps, m);
    if let Some(size) = w.flow_size.filter(|_| !udp) {
        flow_times(s, &r, topo, w, size.0, m);
    }
    let ports = r.network.all_host_stats();
    let names: Vec<String> = topo.hosts.iter().map(|h| h.name.clone()).collect();
    let d = delivery(&ports, &names, &from, &to);
    if let Some(l) = d.cell_loss {
        m.insert(Metric::CELL_LOSS.into(), json!(l));
    }
    insert_delivery(m, &d);
    if w.traffic.is_some() {
        fabric_metrics(&r, m);
    } else if to
        .iter()
        .any(|&h| topo.hosts[h].link.ecn_threshold.is_some())
    {
        queue_metrics(topo, &ports, &to, m);
    }
    router_metrics(&r, m);
    m.insert("seconds".into(), json!(time.as_secs_f64()));
    m.insert("warmup_seconds".into(), json!(warm.as_secs_f64()));
    m.insert("events".into(), json!(r.stats.sent + r.stats.delivered));
}

/// What the routers' forwarding processors (`forwarding`) did: the packets they dropped for a
/// full queue, and per router its packets, drops, most packets waiting and share of the run
/// busy (summed over its processors). Absent without routers, so that other results keep their
/// form.
fn router_metrics(r: &NetRun, m: &mut Map<String, Value>) {
    let routers = r.network.router_stats();
    if routers.is_empty() {
        return;
    }
    let span = r.duration.as_nanos().max(1) as f64;
    let each: Vec<Value> = routers
        .iter()
        .map(|(name, s)| {
            json!({ "switch": name, "packets": s.packets, "dropped": s.dropped,
                "max_waiting": s.max_waiting, "busy": s.busy_ns as f64 / span })
        })
        .collect();
    let dropped: u64 = routers.iter().map(|(_, s)| s.dropped).sum();
    m.insert("router_dropped".into(), json!(dropped));
    m.insert("routers".into(), json!(each));
}

/// When a workload's senders are of more than one kind (`costs`), the goodput of each kind's
/// flows summed, Mbit/s ([`weft_model::app::bulk::goodput_by_kind`]).
fn goodput_by_costs(s: &Scenario, m: &mut Map<String, Value>) {
    let flows = m
        .get("flows")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let kinds = flows.filter_map(|f| {
        let kind = s.host(f["from"].as_str()?)?.costs.as_deref()?;
        Some((kind, f["goodput_mbps"].as_f64()?))
    });
    for (key, sum) in weft_model::app::bulk::goodput_by_kind(kinds) {
        m.insert(key, json!(sum));
    }
}

/// The applications of `w`'s flows on `topo`, each on its host: a sender and a receiver per TCP
/// flow (in that order), or a UDP source per flow and one sink per receiving host; with the
/// `from` and `to` host indices. An error says what in the workload cannot be run.
pub fn flow_apps(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    seed: u64,
) -> Result<FlowApps, String> {
    let (pairs, from, to) = flow_pairs(s, topo, w)?;
    let time = w.time.unwrap_or(DEFAULT_TIME);
    let end = Instant(time.as_nanos());
    let warm = warmup(time);
    let udp = matches!(w.proto, Some(Transport::Udp));
    let mut apps: Vec<(usize, Box<dyn App>)> = Vec::new();
    // One machine per host, shared by every flow's end on it (each end a process of its own).
    let machines = machines(s, topo);
    // Path MTUs by the pair of switches (a fabric has thousands of flows, few switch pairs).
    let mut mtus: HashMap<(usize, usize), Option<u64>> = HashMap::new();
    for (k, &(f, t)) in pairs.iter().enumerate() {
        let rng = Rng::for_stream(seed, 0x200 + k as u64);
        if udp {
            let source = udp_source(topo, w, f, t, end, rng);
            apps.push((f, Box::new(source.with_cpu(thread_on(&machines, f)))));
            continue;
        }
        let mut source = BulkSource::new(Via::Stream, WRITE_SIZE, end, None);
        if let Some(size) = w.flow_size {
            source = source.with_limit(size.0);
        }
        let sink = BulkSink::new(Instant(warm.0), end);
        let ends = Ends {
            seed,
            k,
            pair: (f, t),
            machines: &machines,
        };
        let (tx, rx) = tcp_flow(s, topo, w, &ends, &mut mtus, source, sink);
        apps.push((f, Box::new(tx)));
        apps.push((t, Box::new(rx)));
    }
    if udp {
        let mut hosts = to.clone();
        hosts.sort_unstable();
        hosts.dedup();
        for h in hosts {
            let sink = Hosted::udp(BulkSink::all(), h, topo.hosts[h].link.mtu);
            let sink = match thread_on(&machines, h) {
                Some(cpu) => sink.with_cpu(cpu).with_recv_buffer(UDP_RECVSPACE),
                None => sink,
            };
            apps.push((h, Box::new(sink)));
        }
    }
    Ok((apps, (pairs, from, to)))
}

/// Where a TCP flow of a workload runs: the run's seed, the flow's number, its (sender,
/// receiver) host indices and the hosts' machines ([`machines`]).
pub struct Ends<'a> {
    /// The run's seed.
    pub seed: u64,
    /// The flow's number (its ports and initial sequence numbers).
    pub k: usize,
    /// Sender and receiver host indices.
    pub pair: (usize, usize),
    /// Each host's machine, if it has costs.
    pub machines: &'a [Option<HostCpu>],
}

/// The TCP sender running `source` and the receiver running `sink` of flow `e.k` between the
/// hosts of `e.pair`, configured from `w` (stack, congestion control, MSS from the path MTU,
/// window, the hosts' CPUs), as `tput` runs every TCP flow. `mtus` caches path MTUs by the
/// pair of switches.
pub fn tcp_flow<A: Application + 'static, B: Application + 'static>(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    e: &Ends<'_>,
    mtus: &mut HashMap<(usize, usize), Option<u64>>,
    source: A,
    sink: B,
) -> (Hosted<A>, Hosted<B>) {
    let (seed, k, (f, t), machines) = (e.seed, e.k, e.pair, e.machines);
    let (hf, ht) = (&topo.hosts[f], &topo.hosts[t]);
    let path_mtu = if s.switches.is_empty() {
        s.path(&hf.name, &ht.name)
            .and_then(|p| p.iter().map(|l| l.tech.mtu.0).min())
    } else {
        let between = *mtus.entry((hf.switch, ht.switch)).or_insert_with(|| {
            s.path(&s.switches[hf.switch].name, &s.switches[ht.switch].name)
                .and_then(|p| p.iter().map(|l| l.tech.mtu.0).min())
        });
        Some(
            between
                .unwrap_or(u64::MAX)
                .min(u64::from(hf.link.mtu.min(ht.link.mtu))),
        )
    }
    .unwrap_or(u64::from(hf.link.mtu));
    let cfg = w.tcp_config(path_mtu);
    let (sp, rp) = (SENDER_PORT + k as u16, RECEIVER_PORT + k as u16);
    let mut rng = Rng::for_stream(seed, 0x200 + k as u64);
    let iss = (SeqNum(rng.next_u64() as u32), SeqNum(rng.next_u64() as u32));
    let cpu = |h: usize| thread_on(machines, h);
    let mut tx_cfg = on_host(&cfg, seed, f);
    if w.stack == Some(TcpStack::Linux) && w.window.is_some() {
        // The emulator's sender keeps the window by writing only what fits in it, with
        // TCP_NODELAY: the last bytes that fit go at once, in a short segment.
        tx_cfg.nagle = false;
    }
    // The emulator's sender writes whatever fits; BSD's waits for its low-water mark.
    let lowat = if w.stack == Some(TcpStack::Linux) {
        1
    } else {
        SEND_LOWAT
    };
    let from = TcpEnd {
        host: f,
        port: sp,
        peer: t,
        peer_port: rp,
    };
    let tx = Hosted::connect(source, from, tx_cfg, iss.0)
        .bulk_host(lowat)
        .with_cpu(cpu(f));
    let to = TcpEnd {
        host: t,
        port: rp,
        peer: f,
        peer_port: sp,
    };
    let rx = Hosted::listen(sink, to, on_host(&cfg, seed, t), iss.1)
        .bulk_host(SEND_LOWAT)
        .with_cpu(cpu(t));
    (tx, rx)
}

/// The (sender, receiver) host pairs of `w`'s flows, with its `from` and `to` host indices.
pub type FlowPairs = (Vec<(usize, usize)>, Vec<usize>, Vec<usize>);

/// The flows of `w` on `topo`: every `from` host to every `to` host, a permutation of the
/// `from` hosts; an error says what in the workload cannot be run.
pub fn flow_pairs(s: &Scenario, topo: &Topology, w: &Workload) -> Result<FlowPairs, String> {
    let index = |name: &String| topo.hosts.iter().position(|h| &h.name == name);
    let (Some(from), Some(to)) = (
        w.from.iter().map(index).collect::<Option<Vec<usize>>>(),
        w.to.iter().map(index).collect::<Option<Vec<usize>>>(),
    ) else {
        return Err("a tput workload names a host that does not exist".into());
    };
    let pairs = w.flow_pairs(&from, &to, s.seed);
    if pairs.is_empty() {
        return Err("a tput workload needs `from` and `to` hosts that differ".into());
    }
    Ok((pairs, from, to))
}

/// Payload bits per second the flows' bottlenecks carry when full of their segments: for each
/// distinct receiving host, the slowest link of the path to it (from the first sender) at the
/// flows' MSS, its rate times MSS over the wire bytes of a full segment (on ATM, whole cells).
/// `None` without a path or a flow.
fn tcp_capacity(
    s: &Scenario,
    r: &NetRun,
    topo: &Topology,
    from: &[usize],
    to: &[usize],
) -> Option<f64> {
    let sources = r
        .hosts
        .apps_of::<Hosted<BulkSource>>()
        .map(|(_, a)| a.connection());
    let sinks = r
        .hosts
        .apps_of::<Hosted<BulkSink>>()
        .map(|(_, a)| a.connection());
    let mss = sources
        .chain(sinks)
        .flatten()
        .map(|c| u64::from(c.mss()))
        .max()?;
    let sender = &topo.hosts[*from.first()?].name;
    let mut hosts = to.to_vec();
    hosts.sort_unstable();
    hosts.dedup();
    let mut cap = 0.0;
    for h in hosts {
        let path = s.path(sender, &topo.hosts[h].name)?;
        cap += path
            .iter()
            .map(|l| {
                l.tech.datagram_rate(mss + 40).as_bps() as f64 * mss as f64 / (mss + 40) as f64
            })
            .fold(f64::INFINITY, f64::min);
    }
    (cap.is_finite() && cap > 0.0).then_some(cap)
}

/// The receivers' output queues, for a fabric that marks ECN (absent otherwise, so that older
/// results keep their form): each queue's largest occupancy (in its buffer's unit), drops and
/// marks, the largest of them all, and the flows' fairness (Jain's index of their goodputs).
fn queue_metrics(
    topo: &Topology,
    ports: &[weft_model::net::PortStats],
    to: &[usize],
    m: &mut Map<String, Value>,
) {
    let mut hosts = to.to_vec();
    hosts.sort_unstable();
    hosts.dedup();
    let queues: Vec<Value> = hosts
        .iter()
        .filter_map(|&h| {
            let e = &ports.get(h)?.egress;
            Some(json!({
                "host": topo.hosts[h].name, "max_occupancy": e.max_occupancy,
                "frames_dropped": e.frames_dropped, "frames_marked": e.frames_marked,
            }))
        })
        .collect();
    let max = hosts
        .iter()
        .filter_map(|&h| ports.get(h).map(|p| p.egress.max_occupancy))
        .max();
    m.insert("max_queue".into(), json!(max));
    m.insert("receiver_queues".into(), json!(queues));
    let goodputs: Vec<f64> = m
        .get("flows")
        .and_then(Value::as_array)
        .map(|fs| {
            fs.iter()
                .filter_map(|f| f["goodput_mbps"].as_f64())
                .collect()
        })
        .unwrap_or_default();
    if !goodputs.is_empty() {
        let (sum, sq): (f64, f64) = goodputs
            .iter()
            .fold((0.0, 0.0), |(s, q), g| (s + g, q + g * g));
        let jain = if sq > 0.0 {
            sum * sum / (goodputs.len() as f64 * sq)
        } else {
            1.0
        };
        let min = goodputs.iter().copied().fold(f64::INFINITY, f64::min);
        m.insert("goodput_min_mbps".into(), json!(min));
        m.insert("goodput_jain".into(), json!(jain));
    }
}

/// The completion times of sized flows (all started at 0): each flow that delivered its
/// `size` bytes, its completion the arrival of its last byte ([`sized_flow_metrics`]), beside
/// the ideal of the first flow's path ([`PathIdeal`]).
fn flow_times(
    s: &Scenario,
    r: &NetRun,
    topo: &Topology,
    w: &Workload,
    size: u64,
    m: &mut Map<String, Value>,
) {
    let sources = r.hosts.apps_of::<Hosted<BulkSource>>();
    let sinks = r.hosts.apps_of::<Hosted<BulkSink>>();
    let mut done = Vec::new();
    let mut first = None;
    for ((f, _), (t, rx)) in sources.zip(sinks) {
        first.get_or_insert((f, t));
        if rx.app().bytes() >= size {
            if let Some((_, last)) = rx.app().arrivals() {
                done.push((size, last.as_nanos()));
            }
        }
    }
    let ideal = first
        .and_then(|(f, t)| PathIdeal::between(s, w, &topo.hosts[f].name, &topo.hosts[t].name))
        .map_or(0.0, |p| p.alone_ns(size));
    m.extend(sized_flow_metrics(&done, ideal));
}

/// Drops, ECN marks and the largest queue over every port of the fabric (host ports and both
/// directions of every trunk), and the ports that dropped or marked.
pub(crate) fn fabric_metrics(r: &NetRun, m: &mut Map<String, Value>) {
    let hosts = r.network.all_host_stats();
    let trunks = r.network.trunk_stats();
    let c = weft_model::net::FabricCounts::of(&hosts, &trunks);
    let busy: Vec<Value> = trunks
        .iter()
        .flat_map(|t| {
            (0..2).filter_map(move |d| {
                let e = &t.egress[d];
                (e.frames_dropped + e.frames_marked > 0).then(|| {
                    json!({ "from": t.ends[d], "to": t.ends[1 - d],
                        "frames_dropped": e.frames_dropped, "frames_marked": e.frames_marked,
                        "max_occupancy": e.max_occupancy })
                })
            })
        })
        .collect();
    m.insert("frames_dropped".into(), json!(c.frames_dropped));
    m.insert("frames_marked".into(), json!(c.frames_marked));
    m.insert("max_queue".into(), json!(c.max_queue));
    m.insert("frames_forwarded".into(), json!(c.frames_forwarded));
    // A shared buffer's refusals and peak (absent without one, so that other results keep
    // their form).
    if let Some(peak) = r.network.shared_buffer_peak() {
        let mut ports: Vec<Value> = hosts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.egress.frames_over_threshold > 0)
            .map(|(h, p)| json!({ "host": h, "frames": p.egress.frames_over_threshold }))
            .collect();
        for t in &trunks {
            for d in 0..2 {
                let n = t.egress[d].frames_over_threshold;
                if n > 0 {
                    ports.push(json!({ "from": t.ends[d], "to": t.ends[1 - d], "frames": n }));
                }
            }
        }
        m.insert(
            "frames_over_threshold".into(),
            json!(c.frames_over_threshold),
        );
        m.insert("over_threshold_ports".into(), json!(ports));
        m.insert("shared_buffer_peak".into(), json!(peak));
    }
    m.insert("congested_trunks".into(), json!(busy));
    pfc_metrics(r, &hosts, &trunks, m);
    fail_metrics(r, m);
}

/// What the links and switches lost during the run cost (`[[fabric.fail]]`): the frames their
/// outputs held when they failed, per port (`switch:port`) and in all, and the frames dropped
/// for want of a live path.
fn fail_metrics(r: &NetRun, m: &mut Map<String, Value>) {
    if !r.network.has_failures() {
        return;
    }
    let (ports, unrouted) = r.network.fail_lost();
    let total: u64 = ports.iter().map(|p| p.1).sum();
    let ports: Map<String, Value> = ports.into_iter().map(|(p, n)| (p, json!(n))).collect();
    m.insert("fail_lost_frames".into(), json!(total));
    m.insert("fail_lost_by_port".into(), Value::Object(ports));
    m.insert("fail_unrouted_frames".into(), json!(unrouted));
}

/// On a lossless fabric (PFC): pause time per port (switch outputs, and the hosts' NICs),
/// pause frames sent, drops beyond the headroom, and the deadlock at the end if there is one.
fn pfc_metrics(
    r: &NetRun,
    hosts: &[weft_model::net::PortStats],
    trunks: &[weft_model::net::TrunkStats],
    m: &mut Map<String, Value>,
) {
    if hosts.iter().all(|p| p.pfc.is_none()) {
        return;
    }
    let end = r.duration.as_nanos();
    let mut ports = Vec::new();
    let mut total = 0u64;
    for (h, p) in hosts.iter().enumerate() {
        let (nic, held) = r.network.host_pause(end, h);
        if nic + p.egress.paused_ns > 0 {
            ports.push(json!({ "host": h, "nic_paused_us": nic as f64 / 1e3,
                "nic_max_held": held, "to_host_paused_us": p.egress.paused_ns as f64 / 1e3 }));
        }
        total += nic + p.egress.paused_ns;
    }
    for t in trunks {
        for d in 0..2 {
            let e = &t.egress[d];
            total += e.paused_ns;
            if e.paused_ns > 0 {
                ports.push(json!({ "from": t.ends[d], "to": t.ends[1 - d],
                    "paused_us": e.paused_ns as f64 / 1e3, "pauses_received": e.pauses_received }));
            }
        }
    }
    m.insert("pfc_pause_us".into(), json!(total as f64 / 1e3));
    m.insert("pfc_frames_sent".into(), json!(r.network.pfc_frames_sent()));
    m.insert("pfc_headroom_drops".into(), json!(r.network.pfc_drops()));
    m.insert("pfc_paused_ports".into(), json!(ports));
    m.insert("pfc_deadlock".into(), json!(r.network.pfc_deadlock(end)));
}

/// Per-flow TCP results into `m`; returns the payload bytes read in the measurement span.
fn tcp_metrics(
    r: &NetRun,
    topo: &Topology,
    span: f64,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> u64 {
    let sources = r.hosts.apps_of::<Hosted<BulkSource>>();
    let sinks = r.hosts.apps_of::<Hosted<BulkSink>>();
    let mut flows = Vec::new();
    let (mut bytes, mut retransmits, mut handed) = (0u64, 0u64, 0u64);
    // Each flow's source and sink were added in that order, flow after flow.
    for ((f, tx), (t, rx)) in sources.zip(sinks) {
        let Some(conn) = tx.connection() else {
            continue;
        };
        let st = conn.stats();
        let (read, measured) = (rx.app().bytes(), rx.app().measured());
        bytes += measured;
        handed += tx.app().written_returned();
        retransmits += st.segments_retransmitted;
        let mut flow = json!({
            "from": topo.hosts[f].name, "to": topo.hosts[t].name,
            "goodput_mbps": measured as f64 * 8.0 / span / 1e6,
            "bytes": read,
            "mss": conn.mss(),
            "retransmits": st.segments_retransmitted,
            "timeouts": st.timeouts,
            "fast_retransmits": st.fast_retransmits,
            "srtt_ms": conn.srtt().map(|d| d.as_nanos() as f64 / 1e6),
            "cwnd_bytes": conn.cwnd(),
        });
        if let Some(cpu) = tx.cpu() {
            flow["sender_cpu"] = json!(cpu.utilisation(Instant(r.duration.as_nanos())));
        }
        if let Some(cpu) = rx.cpu() {
            flow["receiver_cpu"] = json!(cpu.utilisation(Instant(r.duration.as_nanos())));
        }
        if read == 0 {
            notes.push(format!(
                "flow {} -> {}: nothing arrived (connection {:?})",
                topo.hosts[f].name,
                topo.hosts[t].name,
                conn.state()
            ));
        }
        flows.push(flow);
    }
    m.insert(Metric::RETRANSMITS.into(), json!(retransmits));
    // What the senders' write calls that returned handed to TCP over the run, KiB: beside a
    // transfer that hangs, the count an FTP client's hash marks show.
    m.insert(
        Metric::APP_WRITTEN_KIB.into(),
        json!(handed as f64 / 1024.0),
    );
    m.insert("flows".into(), json!(flows));
    bytes
}

/// UDP results into `m`: datagrams sent and received, the share lost (`datagram_loss`), those
/// dropped at full socket buffers (`socket_drops`) and the senders' payload rate
/// (`sent_mbps`, over `span` seconds); returns the payload bytes received.
fn udp_metrics(
    r: &NetRun,
    topo: &Topology,
    w: &Workload,
    span: f64,
    m: &mut Map<String, Value>,
) -> u64 {
    let sources: Vec<(usize, &BulkSource)> = r
        .hosts
        .apps_of::<Hosted<BulkSource>>()
        .map(|(h, c)| (h, c.app()))
        .collect();
    let sent: u64 = sources.iter().map(|(_, c)| c.sent()).sum();
    let sent_bytes: u64 = sources
        .iter()
        .map(|(h, c)| c.sent() * udp_payload(topo, w, *h))
        .sum();
    let sinks: Vec<&Hosted<BulkSink>> = r
        .hosts
        .apps_of::<Hosted<BulkSink>>()
        .map(|(_, s)| s)
        .collect();
    let got: u64 = sinks.iter().map(|s| s.app().datagrams()).sum();
    let drops: u64 = sinks.iter().filter_map(|s| s.socket_drops()).sum();
    m.insert("datagrams_sent".into(), json!(sent));
    m.insert("datagrams_received".into(), json!(got));
    if sent > 0 {
        let loss = 1.0 - got as f64 / sent as f64;
        m.insert("datagram_loss".into(), json!(loss.max(0.0)));
    }
    m.insert("socket_drops".into(), json!(drops));
    m.insert(
        "sent_mbps".into(),
        json!(sent_bytes as f64 * 8.0 / span / 1e6),
    );
    sinks.iter().map(|s| s.app().bytes()).sum()
}

/// The payload of each datagram host `f` sends in `w`: `size`, or what fills its link's MTU;
/// at most 65,507 bytes.
fn udp_payload(topo: &Topology, w: &Workload, f: usize) -> u64 {
    let mtu = u64::from(topo.hosts[f].link.mtu);
    w.size
        .map_or(mtu - u64::from(UDP_IP_HEADERS), |s| s.0)
        .clamp(1, MAX_UDP_PAYLOAD)
}

/// A ttcp-style UDP blast from `f` to `t`: `size`-byte messages (default: what fills the link's
/// MTU; at most 65,507, in IP fragments beyond the MTU) at `rate` of payload, or the line rate,
/// on a phase drawn from `rng`; each send blocks until its host has done its work.
fn udp_source(
    topo: &Topology,
    w: &Workload,
    f: usize,
    t: usize,
    end: Instant,
    mut rng: Rng,
) -> Hosted<BulkSource> {
    let link = &topo.hosts[f].link;
    let payload = udp_payload(topo, w, f);
    let wire: u64 = datagrams(payload, link.mtu)
        .into_iter()
        .map(|ip| link.wire_bytes(ip as usize + ETH_HEADER))
        .sum();
    let line = link.rate.unwrap_or(Rate::mbps(10_000));
    // `rate` is of payload; the source is paced in line time, so scale by wire / payload.
    let rate = w.rate.map_or(line, |r| {
        Rate((u128::from(r.as_bps()) * u128::from(wire) / u128::from(payload)) as u64).min(line)
    });
    let pace = Pace::new(wire.max(1) * 8, rate, &mut rng);
    let source = BulkSource::new(Via::Datagram(t), payload, end, Some(pace));
    Hosted::udp(source, f, link.mtu).blocking_sends()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sparc 10s a and b and an RS/6000 c sending to d.
    fn scenario() -> Scenario {
        let text = r#"
name = "kinds"
[[host]]
name = "a"
costs = "sparc10"
[[host]]
name = "b"
costs = "sparc10"
[[host]]
name = "c"
costs = "rs6000-giga"
[[host]]
name = "d"
[[switch]]
name = "s"
[[link]]
ends = ["a", "s"]
tech = "fddi"
[[link]]
ends = ["b", "s"]
tech = "fddi"
[[link]]
ends = ["c", "s"]
tech = "fddi"
[[link]]
ends = ["d", "s"]
tech = "fddi"
"#;
        Scenario::parse(text, "kinds.toml").expect("the scenario parses")
    }

    fn flows(from: &[(&str, f64)]) -> Map<String, Value> {
        let flows: Vec<Value> = from
            .iter()
            .map(|(h, g)| json!({ "from": h, "to": "d", "goodput_mbps": g }))
            .collect();
        let mut m = Map::new();
        m.insert("flows".into(), json!(flows));
        m
    }

    #[test]
    fn each_kind_of_sender_gets_its_flows_summed() {
        let mut m = flows(&[("a", 10.0), ("c", 30.0), ("b", 12.5)]);
        goodput_by_costs(&scenario(), &mut m);
        assert_eq!(m["goodput_mbps_of_sparc10"], json!(22.5));
        assert_eq!(m["goodput_mbps_of_rs6000-giga"], json!(30.0));
    }

    #[test]
    fn senders_of_one_kind_add_nothing() {
        let mut m = flows(&[("a", 10.0), ("b", 12.5)]);
        goodput_by_costs(&scenario(), &mut m);
        assert_eq!(m.len(), 1, "{m:?}");
    }
}
