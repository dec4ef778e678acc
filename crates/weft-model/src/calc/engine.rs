//! The `model` engine: the closed-form answer for every point of a scenario.
//!
//! | workload | fabric | what the model gives |
//! |---|---|---|
//! | saturated | input-fifo | exact FIFO saturation throughput (Markov chain) as `efficiency`, x rate as `throughput_mbps`; the GIGAswitch formula E(N, M) as `formula_efficiency` / `formula_mbps` |
//! | saturated | output-queued, voq-islip | min(1, N/M) of the inputs' rate (every output busy) |
//! | bernoulli | output-queued | mean wait ((N-1)/N) p/(2(1-p)) slots, and M/D/1 beside it |
//! | bernoulli | input-fifo | whether the load is under the saturation throughput (no closed-form wait) |
//! | hotspot | any | the hot output's offered load |
//! | frames | any | frame goodput (1-l)^cells for per-cell loss l along the path |
//! | tput | - | min(window / (RTT + two bottleneck segment times: delayed ACKs), bottleneck goodput at the path MTU (or `mss` + 40), and with loss on the path the Mathis bound) |
//! | ring | - | a shared FDDI ring's efficiency with `active` stations saturated (Jain's timed-token result), and the payload left after framing and ACKs ([`super::ring`]) |
//! | vc | - | the circuits planned from the `[vc]` database and their counts ([`crate::calc::vc_point::plan_point`]) |
//! | rr | - | the round trip: propagation, serialisation per hop, switch latency, host costs ([`super::rr_point`]) |
//! | xfer | - | SBTP's or MBTP's time per buffer from the hosts' costs and disks, the path's rate and round trip, and its sync / disk / transfer split ([`super::xfer`]) |
//! | nfs | - | NFS over UDP RPC: a request's round trip and the server's disk, and with `biods` outstanding the busiest of the disk, the hosts' CPUs and the slowest link ([`super::nfs`]) |
//! | x11 | - | X11 frames: the renderer's time, the slowest of the sender's path, the wire and the X server's path with its frame-buffer copy, and XSync's round trip ([`super::x11`]) |

use std::collections::BTreeMap;

use serde::Serialize;

use super::ftp::{FtpEstimate, FtpLimit};
use super::hol::{fifo_saturation, gigaswitch_efficiency, saturation_throughput};
use super::mathis::{C_PER_SEGMENT_ACK, Mathis};
use super::queue::{Md1, output_queued_wait};
use super::window::{self, Limit, TransferBound, ebn_paper_mbps};
use crate::app::traffic::Traffic;
use crate::net::{Multipath, ShapeSpec};
use crate::scenario::run::{PointCtx, PointEngine, PointResult};
use crate::scenario::{
    Fabric, Host, Metric, Param, Point, Scenario, TcpStack, Workload, WorkloadKind,
};
use crate::tech::{Tech, Transport};
use crate::time::Duration;
use crate::units::Size;

/// The model's answer at one point of one workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelPoint {
    /// Index of the workload.
    pub workload: usize,
    /// The swept value here, if any.
    pub point: Option<Param>,
    /// Named results (keys of [`Metric`] and a few more), in their units.
    pub metrics: BTreeMap<String, f64>,
    /// What the model assumed or could not answer.
    pub notes: Vec<String>,
}

/// Evaluates every point of `scenario` in closed form, in the order of [`Scenario::points`].
pub fn evaluate(scenario: &Scenario) -> Vec<ModelPoint> {
    scenario
        .points()
        .iter()
        .map(|p| evaluate_point(scenario, p))
        .collect()
}

/// Evaluates one point of `scenario` in closed form.
pub fn evaluate_point(scenario: &Scenario, p: &Point) -> ModelPoint {
    let mut out = ModelPoint {
        workload: p.workload,
        point: p.value,
        metrics: BTreeMap::new(),
        notes: Vec::new(),
    };
    match p.spec.kind {
        WorkloadKind::Saturated => saturated(scenario, &p.spec, &mut out),
        WorkloadKind::Bernoulli | WorkloadKind::Onoff => bernoulli(scenario, &p.spec, &mut out),
        WorkloadKind::Hotspot => hotspot(scenario, &p.spec, &mut out),
        WorkloadKind::Frames => frames(scenario, &p.spec, &mut out),
        WorkloadKind::Tput => {
            if matches!(p.spec.traffic, None | Some(Traffic::Pairs)) {
                tput(scenario, &p.spec, &mut out);
            }
            flow_times(scenario, &p.spec, &mut out);
        }
        WorkloadKind::Rr => super::rr_point::rr(scenario, &p.spec, &mut out),
        WorkloadKind::Mp => mp(scenario, &p.spec, &mut out),
        WorkloadKind::Xfer => xfer(scenario, &p.spec, &mut out),
        WorkloadKind::Vc => vc(scenario, &p.spec, &mut out),
        WorkloadKind::Ring => match &p.spec.ring {
            Some(r) => super::ring::ring_point(r, p.spec.size, &mut out.metrics, &mut out.notes),
            None => out.notes.push("a ring workload without its ring".into()),
        },
        WorkloadKind::Nfs => super::nfs::nfs(scenario, &p.spec, &mut out),
        WorkloadKind::X11 => super::x11::x11(scenario, &p.spec, &mut out),
    }
    out
}

/// The closed forms as an engine of the one loop over points
/// ([`crate::scenario::run::run_points`]): they draw no random numbers, so the seed is unused.
#[derive(Clone, Copy, Debug, Default)]
pub struct ModelEngine;

impl PointEngine for ModelEngine {
    type Error = std::convert::Infallible;

    fn run_point(&mut self, p: &PointCtx<'_>) -> Result<PointResult, Self::Error> {
        let m = evaluate_point(p.scenario, p.point);
        Ok(PointResult {
            metrics: m
                .metrics
                .into_iter()
                .map(|(k, v)| (k, serde_json::json!(v)))
                .collect(),
            notes: m.notes,
            skipped: None,
        })
    }
}

/// Ports of the workload's switch, and the rate of its first link (for rate-less workloads).
fn port_counts(s: &Scenario, w: &Workload) -> (Option<u32>, Option<u32>, Fabric, Option<Tech>) {
    let sw = s.switch_for(w);
    let ports = sw.and_then(|x| x.ports);
    let fabric = sw.map_or(Fabric::OutputQueued, |x| x.fabric);
    let tech = sw.and_then(|x| s.links_of(&x.name).next().map(|l| l.tech.clone()));
    (
        w.input_count().or(ports),
        w.output_count().or(ports),
        fabric,
        tech,
    )
}

fn saturated(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(m), Some(n), fabric, tech) = port_counts(s, w) else {
        out.notes.push("inputs or outputs unknown".into());
        return;
    };
    let formula = gigaswitch_efficiency(n, m);
    let efficiency = match fabric {
        Fabric::InputFifo => match fifo_saturation(m, n) {
            Some(x) => x,
            None => {
                out.notes.push(format!(
                    "exact FIFO chain too large for {m} x {n}; efficiency is the one-slot formula"
                ));
                formula
            }
        },
        Fabric::OutputQueued | Fabric::VoqIslip => (n as f64 / m as f64).min(1.0),
    };
    out.metrics.insert(Metric::EFFICIENCY.into(), efficiency);
    out.metrics
        .insert(Metric::FORMULA_EFFICIENCY.into(), formula);
    out.metrics.insert("inputs".into(), m as f64);
    out.metrics.insert("outputs".into(), n as f64);
    if fabric == Fabric::InputFifo {
        out.notes.push(
            "efficiency: exact FIFO saturation (Markov chain); formula: E = (N/M)(1-(1-1/N)^M), \
             one slot, blocked packets not carried over"
                .into(),
        );
    }
    let rate = w.rate.or(tech.map(|t| t.rate));
    if let Some(rate) = rate {
        let mbps = rate.as_mbps_f64();
        out.metrics
            .insert(Metric::THROUGHPUT_MBPS.into(), efficiency * mbps);
        out.metrics
            .insert(Metric::FORMULA_MBPS.into(), formula * mbps);
        out.metrics.insert("peak_mbps".into(), mbps);
    }
}

fn bernoulli(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(m), n, fabric, _) = port_counts(s, w) else {
        out.notes.push("ports unknown".into());
        return;
    };
    let Some(p) = w.load else {
        return;
    };
    if w.kind == WorkloadKind::Onoff {
        out.notes
            .push("bursty arrivals: the Bernoulli formula is a lower bound on the wait".into());
    }
    match fabric {
        Fabric::OutputQueued => {
            if let Some(x) = output_queued_wait(n.unwrap_or(m), p) {
                out.metrics.insert(Metric::MEAN_WAIT_SLOTS.into(), x);
            }
            if let Some(q) = Md1::new(p) {
                out.metrics.insert("md1_wait_slots".into(), q.wait);
            }
        }
        Fabric::InputFifo => {
            if let Some(sat) = saturation_throughput(m) {
                out.metrics.insert("fifo_saturation".into(), sat);
                out.notes.push(format!(
                    "no closed-form FIFO wait; load {p} is {} the saturation throughput {sat:.4}",
                    if p < sat { "under" } else { "over" }
                ));
            }
        }
        Fabric::VoqIslip => out
            .notes
            .push("no closed form for iSLIP; uniform Bernoulli load below 1 is sustained".into()),
    }
}

fn hotspot(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(m), n, _, _) = port_counts(s, w) else {
        return;
    };
    let (Some(p), Some(h)) = (w.load, w.hotspot) else {
        return;
    };
    let n = n.unwrap_or(m) as f64;
    let hot = p * m as f64 * (h + (1.0 - h) / n);
    out.metrics.insert("hot_output_load".into(), hot);
    if hot >= 1.0 {
        out.notes.push(
            "the hot output is offered more than it can carry: its queue grows without bound"
                .into(),
        );
    }
}

fn frames(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let Some(size) = w.size else {
        return;
    };
    let (from, to) = (w.from.first(), w.to.first());
    let links = match (from, to) {
        (Some(a), Some(b)) => s.path(a, b).unwrap_or_default(),
        _ => s.links.iter().collect(),
    };
    let mut keep = 1.0;
    for l in &links {
        let units = l.tech.cells(size.0).unwrap_or(1);
        keep *= (1.0 - l.loss).powf(units as f64);
    }
    out.metrics.insert(Metric::FRAME_GOODPUT.into(), keep);
    out.notes
        .push("frame goodput from link loss only; queue drops need the simulator".into());
}

fn mp(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    match crate::calc::mp_point::predict(s, w) {
        Ok(p) => {
            out.metrics
                .insert(Metric::MEAN_US.into(), p.iteration_s * 1e6);
            out.metrics.insert("alpha_us".into(), p.machine.alpha * 1e6);
            out.metrics
                .insert("rate_mbps".into(), p.machine.rate_bps() / 1e6);
            out.notes.push(
                "alpha-beta: alpha = propagation delay between the farthest ranks, beta = the \
                 slowest link's TCP goodput; host overheads left out (a floor)"
                    .into(),
            );
        }
        Err(e) => out.notes.push(e),
    }
}

fn vc(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(db), Some(vw)) = (&s.vc, &w.vc) else {
        out.notes.push("no [vc] host database".into());
        return;
    };
    match crate::calc::vc_point::plan_point(db, vw) {
        Ok(p) => {
            let m = &mut out.metrics;
            m.insert(Metric::PVCS.into(), p.pvcs as f64);
            m.insert("vcs".into(), p.vcs as f64);
            m.insert("hosts".into(), p.hosts as f64);
            m.insert("entries".into(), p.entries as f64);
            m.insert("max_switch_entries".into(), p.max_switch_entries as f64);
            m.insert("verified".into(), f64::from(u8::from(p.verified)));
            m.insert(
                "vci_per_destination".into(),
                f64::from(u8::from(p.vci_per_destination)),
            );
            if let Some(d) = p.growth_degree {
                m.insert(Metric::PVC_GROWTH_DEGREE.into(), d as f64);
            }
        }
        Err(e) => out.notes.push(e.to_string()),
    }
}

/// A sized `tput` workload's ideal flow completion times ([`super::fct`]): `ideal_fct_us` (a
/// flow alone), and `fct_p50_us` / `fct_max_us` of the pattern sharing fairly, with their
/// slowdowns.
fn flow_times(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(size), Some(a), Some(b)) = (w.flow_size, w.from.first(), w.to.first()) else {
        return;
    };
    let b = if w.traffic == Some(Traffic::Permutation) {
        // The first host's partner in the permutation the engines draw.
        let p = crate::app::traffic::derangement(w.from.len(), s.seed);
        p.first().and_then(|&j| w.from.get(j)).unwrap_or(b)
    } else {
        b
    };
    let Some(path) = super::fct::PathIdeal::between(s, w, a, b) else {
        return;
    };
    let alone = path.alone_ns(size.0);
    let m = &mut out.metrics;
    m.insert("ideal_fct_us".into(), alone / 1e3);
    let Some(traffic) = w.traffic else {
        return;
    };
    let ratio = s.fabric.as_ref().map_or(1.0, |f| f.oversubscription);
    let multipath = w
        .multipath
        .or(s.fabric.as_ref().map(|f| f.multipath))
        .unwrap_or_default();
    // Per-flow ECMP: the hosts of one edge (leaf) switch hashed onto its uplinks.
    let share = match (multipath, s.fabric.as_ref().map(|f| f.shape)) {
        (Multipath::Ecmp, Some(ShapeSpec::FatTree { k })) => super::fct::ecmp_share(k / 2, k / 2),
        (
            Multipath::Ecmp,
            Some(ShapeSpec::LeafSpine {
                spines,
                hosts_per_leaf,
                ..
            }),
        ) => super::fct::ecmp_share(spines, hosts_per_leaf),
        _ => 1.0,
    };
    let flows = w.from.len() as u64;
    let (p50, last) = super::fct::pattern_fct(traffic, flows, size.0, &path, ratio, share);
    m.insert("fct_p50_us".into(), p50 / 1e3);
    m.insert("fct_max_us".into(), last / 1e3);
    m.insert("slowdown_p50".into(), p50 / alone);
    m.insert("goodput_mean_mbps".into(), size.0 as f64 * 8.0 / p50 * 1e3);
    m.insert(
        Metric::GOODPUT_MBPS.into(),
        (flows * size.0) as f64 * 8.0 / last * 1e3,
    );
    if traffic == Traffic::Permutation {
        m.insert("multipath_share".into(), share);
    }
    out.notes.push(
        "flow completion: bytes over the bottleneck's goodput plus the base round trip, the \
         pattern's flows sharing fairly (no queueing, no loss); per-flow ECMP's collisions at \
         the first hashing stage only (an upper bound on its goodput)"
            .into(),
    );
}

fn tput(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(a), Some(b)) = (w.from.first(), w.to.first()) else {
        return;
    };
    let Some(path) = s.path(a, b) else {
        out.notes.push(format!("no path from {a:?} to {b:?}"));
        return;
    };
    let transport = w.proto.unwrap_or(Transport::Tcp { options: 0 });
    let path_mtu = path.iter().map(|l| l.tech.mtu.0).min().unwrap_or(1500);
    let mtu = w.mtu.map_or(path_mtu, |m| m.0.min(path_mtu));
    if w.mtu.is_some_and(|m| m.0 > path_mtu) {
        out.notes
            .push(format!("mtu above the path MTU: {path_mtu} used"));
    }
    // A segment size smaller than the MTU allows makes smaller datagrams (EBN's runs 0-1: no
    // path MTU set, so 536-byte segments on a 4490-byte link).
    let mtu = match w.mss {
        Some(mss) => (mss.0 + transport.header_bytes()).min(mtu),
        None => mtu,
    };
    // The bottleneck is the link with the lowest goodput for this datagram size.
    let Some(bottleneck) = path
        .iter()
        .filter_map(|l| l.tech.goodput(mtu, transport).ok().map(|g| (g, &l.tech)))
        .min_by_key(|(g, _)| *g)
        .map(|(_, t)| t)
    else {
        out.notes.push(format!(
            "datagrams of {mtu} B cannot carry {}",
            transport.name()
        ));
        return;
    };
    // Routers on the path (`forwarding`) bound the packets a second and lengthen the round
    // ([`super::router`]); a round the workload gives (`rtt`) is taken to include them.
    let routers = super::router::on_path(s, a, &path);
    let tcp = matches!(transport, Transport::Tcp { .. });
    let router = super::router::bound(&routers, mtu, mtu - transport.header_bytes(), tcp);
    let rtt = w.rtt.unwrap_or_else(|| {
        let one_way: u64 = path.iter().map(|l| l.delay.0).sum();
        Duration(2 * one_way) + router.map_or(Duration::ZERO, |r| r.round)
    });
    let flows = w.from.len().max(w.to.len()) as u64;
    // A window-less transport (UDP) is bounded by the link alone.
    let window = w.window.unwrap_or(Size(u64::MAX / 16));
    // The hosts' paths lengthen each round of the window ([`window::hosts_time`]), with the
    // copy a file transfer adds to each ([`crate::host::HostCosts::moving_files`]).
    let (tx, rx) = round_costs(s, a, b, w.file.is_some());
    let hosts = window::RoundHosts {
        sender: &tx,
        receiver: &rx,
        call: crate::calc::fit::TTCP_DEFAULT_BUFFER,
    };
    let (window, round) = ack_clock(w, transport, bottleneck, mtu, window, rtt, &hosts);
    let Ok(bound) = TransferBound::new(bottleneck, mtu, transport, window, round) else {
        return;
    };
    let link_mbps = bound.link_bps as f64 / 1e6;
    let mut per_flow = if bound.limit == Limit::Window {
        (bound.window_bps as f64 / 1e6).min(link_mbps / flows as f64)
    } else {
        link_mbps / flows as f64
    };
    let router_limited = router.is_some_and(|r| r.goodput_mbps / (flows as f64) < per_flow);
    if let Some(r) = router {
        per_flow = per_flow.min(r.goodput_mbps / flows as f64);
    }
    // Random loss on the path bounds TCP by Mathis et al.: each link's `loss` is taken per
    // datagram here (an emulated link drops frames; on a simulated ATM link it is per cell).
    let keep: f64 = path.iter().map(|l| 1.0 - l.loss).product();
    let mathis = match transport {
        Transport::Tcp { .. } if keep < 1.0 => Mathis::new(
            mtu - transport.header_bytes(),
            rtt.as_secs_f64(),
            1.0 - keep,
            C_PER_SEGMENT_ACK,
        ),
        _ => None,
    };
    // Hosts with a cost model (`costs`) bound a TCP transfer by what their send and receive
    // paths sustain, ttcp-style (8 KiB calls), as `weft calc host` fits them; FTP (`file`) adds
    // a copy of each byte to each path, out of the sender's file cache and into the receiver's.
    let shape = Shape {
        transport,
        mtu,
        window,
        rtt,
        files: w.file.is_some(),
    };
    let paths = host_bound(s, a, b, &shape, per_flow);
    let host_bound = paths.map(|(tx, rx)| tx.min(rx));
    let host_limited = host_bound.is_some_and(|h| h < per_flow);
    if let Some(h) = host_bound {
        per_flow = per_flow.min(h);
    }
    let mut loss_limited = false;
    if let Some(b) = &mathis {
        let mbps = b.rate_bps / 1e6;
        if mbps < per_flow {
            per_flow = mbps;
            loss_limited = true;
        }
    }
    let mut aggregate = (per_flow * flows as f64).min(link_mbps);
    // A UDP blast between hosts with costs: what the sender's send path sends and the
    // receiver's reads keep ([`super::udp`]), in datagrams of `size`.
    let blast = (flows == 1)
        .then(|| udp_blast(s, a, b, w, &path[0].tech, bottleneck, mtu))
        .flatten();
    if let Some(u) = &blast {
        aggregate = u.received_bps / 1e6;
    }
    // Hosts on shared rings (`[[ring]]`) share their ring's time, the ACKs included.
    let ring = matches!(transport, Transport::Tcp { .. })
        .then(|| super::ring::tcp_bound(s, w, mtu))
        .flatten();
    if let Some(r) = ring.filter(|r| *r < aggregate) {
        aggregate = r;
        out.notes
            .push("limited by a shared ring the flows cross (timed token, ACKs on it)".into());
    }
    if ring.is_some() {
        // Study 003's line efficiency: the sessions' payload over an FDDI ring's 100 Mbit/s.
        let fddi = crate::net::RingSpec::fddi(1, 0.0, Duration::ZERO, Duration::ZERO);
        out.metrics.insert(
            Metric::LINE_EFFICIENCY.into(),
            aggregate / fddi.rate.as_mbps_f64(),
        );
    }
    let rx_path = paths.map_or(f64::INFINITY, |(_, rx)| rx);
    // A contract policed on the path that breaks every data segment delivers nothing: the
    // connection hangs in retransmission time-outs ([`super::policed`]).
    let policed_away = matches!(transport, Transport::Tcp { .. })
        .then(|| policing_breaks(&path, mtu))
        .flatten();
    if policed_away.is_some() {
        aggregate = 0.0;
    }
    let ftp = w
        .file
        .map(|file| ftp(s, a, b, file, (aggregate, rx_path), out));
    if let Some(e) = ftp {
        aggregate = e.bps / 1e6;
    }
    let kib = aggregate * 1e6 / 8.0 / 1024.0;
    let m = &mut out.metrics;
    if let Some(kib) = app_written(w, transport, aggregate, policed_away.is_some()) {
        m.insert(Metric::APP_WRITTEN_KIB.into(), kib);
    }
    m.insert(Metric::GOODPUT_MBPS.into(), aggregate);
    m.insert(Metric::PAYLOAD_KIB_S.into(), kib);
    m.insert("link_goodput_mbps".into(), link_mbps);
    goodput_by_kind(s, w, aggregate, m);
    // The bottleneck's rate of cells or frames: a scenario parameter (a VP's 26 Mbit/s), shown
    // beside the published figure it is.
    m.insert("bottleneck_mbps".into(), bottleneck.rate.as_mbps_f64());
    // Romanow and Floyd's measure, as the simulator reports it: goodput over the bottleneck's
    // payload rate (1 when nothing but the window, the hosts or loss holds the transfer back).
    if link_mbps > 0.0 && matches!(transport, Transport::Tcp { .. }) {
        m.insert("effective_throughput".into(), aggregate / link_mbps);
    }
    if let Some(b) = mathis {
        m.insert("mathis_mbps".into(), b.rate_bps / 1e6);
    }
    if let Some(h) = host_bound {
        m.insert("host_mbps".into(), h);
    }
    if let Some(r) = router {
        m.insert("router_mbps".into(), r.goodput_mbps);
        m.insert("router_round_ms".into(), r.round.0 as f64 / 1e6);
    }
    if let Some(u) = blast {
        m.insert("sent_mbps".into(), u.sent_bps / 1e6);
        m.insert("datagram_loss".into(), u.loss);
    }
    if bottleneck.is_cells() {
        m.insert(
            "cell_payload_mbps".into(),
            bottleneck.cell_payload_rate().as_mbps_f64(),
        );
    }
    if w.window.is_some() {
        m.insert("window_mbps".into(), bound.window_bps as f64 / 1e6);
    }
    m.insert("window_needed_bytes".into(), bound.window_needed as f64);
    m.insert("rtt_ms".into(), rtt.0 as f64 / 1e6);
    if round != rtt {
        m.insert("ack_round_ms".into(), round.0 as f64 / 1e6);
        m.insert("window_sent_bytes".into(), window.0 as f64);
    }
    m.insert("mtu_bytes".into(), mtu as f64);
    // The share of the bottleneck's cell (or frame) rate the payload occupies.
    let wire = bottleneck.wire_bytes(mtu) as f64;
    let payload = (mtu - transport.header_bytes()) as f64;
    m.insert(
        "utilisation".into(),
        aggregate * 1e6 * wire / payload / bottleneck.rate.0 as f64,
    );
    m.insert("cell_rate_mbps_53_48".into(), ebn_paper_mbps(kib));
    out.notes.push(format!(
        "bottleneck {} at {}; limited by the {}",
        bottleneck.name,
        bottleneck.rate,
        match (loss_limited, w.window.is_some(), bound.limit) {
            (true, _, _) => "loss (Mathis bound, C = sqrt(3/2), loss per datagram)",
            _ if ftp.is_some_and(|e| e.limit == FtpLimit::Read) => "sender's disk (FTP)",
            _ if ftp.is_some_and(|e| e.limit == FtpLimit::Write) => "receiver's disk (FTP)",
            _ if ftp.is_some_and(|e| e.limit == FtpLimit::WriteThrough) =>
                "receiving process: its receive path and its write-through disk, in turn (FTP)",
            _ if host_limited => "hosts (their `costs`: send and receive paths)",
            _ if router_limited => "routers' forwarding processors (`forwarding`)",
            (false, true, Limit::Window) => "window",
            _ => "link",
        }
    ));
    if let Some(link) = policed_away {
        out.notes.push(format!(
            "the contract policed on {link} breaks every {mtu}-byte segment (its cells back to \
             back at the line's rate, from a rested policer): nothing is delivered, the \
             connection hangs in retransmission time-outs, and the sender's writes stop when \
             they have filled its send buffer"
        ));
    }
    if flows > 1 {
        out.notes
            .push(format!("{flows} flows share the bottleneck equally"));
    }
}

/// The link of `path` (named by its ends) whose contract polices away every datagram of `mtu`
/// bytes ([`super::policed::passes_whole`]), if one does.
fn policing_breaks(path: &[&crate::scenario::Link], mtu: u64) -> Option<String> {
    path.iter()
        .find(|l| {
            l.contract
                .is_some_and(|c| !super::policed::passes_whole(&c, &l.tech, mtu))
        })
        .map(|l| format!("{}-{}", l.ends[0], l.ends[1]))
}

/// [`Metric::APP_WRITTEN_KIB`] of a TCP transfer of `w` carrying `mbps` (8 KiB writes into a
/// send buffer of its `window`): into a contract that polices every segment away
/// (`policed_away`), the whole writes that fit the send buffer; otherwise, when the workload
/// gives its `time`, what the transfer carries over it and the whole writes waiting in the
/// buffer at its end. `None` for UDP, or a transfer that flows for no given time.
fn app_written(w: &Workload, transport: Transport, mbps: f64, policed_away: bool) -> Option<f64> {
    if !matches!(transport, Transport::Tcp { .. }) {
        return None;
    }
    let call = crate::calc::fit::TTCP_DEFAULT_BUFFER;
    let buffered = w
        .window
        .map_or(0, |b| super::policed::whole_writes(b.0, call)) as f64;
    if policed_away {
        return Some(buffered / 1024.0);
    }
    let time = w.time?;
    Some((mbps * 1e6 / 8.0 * time.as_secs_f64() + buffered) / 1024.0)
}

/// FTP of `file` bytes from `a`'s disk to `b`'s ([`super::ftp::estimate`]) over a network
/// that carries `net_mbps`, into a receiver whose receive path carries `rx_path_mbps`; each
/// end's disk (its `disk` preset, Mbit/s) into `out`'s metrics.
fn ftp(
    s: &Scenario,
    a: &str,
    b: &str,
    file: Size,
    (net_mbps, rx_path_mbps): (f64, f64),
    out: &mut ModelPoint,
) -> FtpEstimate {
    let disk = |n: &str| s.host(n).and_then(Host::disk_preset);
    let (tx, rx) = (disk(a), disk(b));
    if let Some(d) = &tx {
        out.metrics
            .insert("tx_disk_read_mbps".into(), d.read_rate.as_mbps_f64());
    }
    if let Some(d) = &rx {
        out.metrics
            .insert("rx_disk_write_mbps".into(), d.write_rate.as_mbps_f64());
    }
    out.metrics.insert("net_mbps".into(), net_mbps);
    super::ftp::estimate(
        file,
        net_mbps * 1e6,
        rx_path_mbps * 1e6,
        tx.as_ref(),
        rx.as_ref(),
    )
}

/// The window a TCP sender keeps in flight and the time one window takes to come back
/// ([`window::ack_clocked`]), the `hosts`' paths included: whole segments for the 1995 BSD
/// sender (`stack = "bsd"`, the default). UDP and window-less workloads are returned unchanged.
fn ack_clock(
    w: &Workload,
    transport: Transport,
    bottleneck: &Tech,
    mtu: u64,
    window: Size,
    rtt: Duration,
    hosts: &window::RoundHosts<'_>,
) -> (Size, Duration) {
    if !matches!(transport, Transport::Tcp { .. }) || w.window.is_none() {
        return (window, rtt);
    }
    let whole_segments = matches!(w.stack.unwrap_or_default(), TcpStack::Bsd);
    window::ack_clocked(
        bottleneck,
        mtu,
        transport,
        window,
        rtt,
        whole_segments,
        Some(hosts),
    )
}

/// The costs of `a` sending to `b` as the model charges them (a host without a cost model
/// costs nothing, as on the simulator), each with a copy more per byte for a file transfer
/// (`files`).
fn round_costs(
    s: &Scenario,
    a: &str,
    b: &str,
    files: bool,
) -> (crate::host::HostCosts, crate::host::HostCosts) {
    let free = crate::host::HostCosts::FREE;
    let (tx, rx) = (
        costs_of(s, a).unwrap_or(free.clone()),
        costs_of(s, b).unwrap_or(free),
    );
    if files {
        (tx.moving_files(), rx.moving_files())
    } else {
        (tx, rx)
    }
}

/// The transfer [`host_bound`] prices: its transport, datagram size, window and round trip, and
/// whether it moves a file between the hosts' caches (FTP) rather than memory to memory.
struct Shape {
    transport: Transport,
    mtu: u64,
    window: Size,
    rtt: Duration,
    files: bool,
}

/// What the hosts' send and receive paths sustain for a TCP transfer of `shape` from `a` to `b`,
/// Mbit/s, the sender's and the receiver's, when either names a cost model (the other then costs nothing, as the simulator has
/// a host without one); `None` when neither does. A file transfer charges each path one more
/// copy per byte ([`crate::host::HostCosts::moving_files`]): the sender's out of its file
/// cache, the receiver's into its own.
fn host_bound(s: &Scenario, a: &str, b: &str, shape: &Shape, link_mbps: f64) -> Option<(f64, f64)> {
    let Shape {
        transport,
        mtu,
        window,
        rtt,
        files,
    } = *shape;
    if !matches!(transport, Transport::Tcp { .. }) {
        return None;
    }
    if costs_of(s, a).is_none() && costs_of(s, b).is_none() {
        return None;
    }
    let (tx, rx) = round_costs(s, a, b, files);
    let shape = super::host::BulkShape {
        mss: mtu.saturating_sub(transport.header_bytes()).max(1),
        call: crate::calc::fit::TTCP_DEFAULT_BUFFER,
        headers: transport.header_bytes(),
        acks_per_segment: 0.0,
    };
    let link = crate::units::Rate((link_mbps * 1e6) as u64);
    let bound = super::host::BulkBound::new(link, window, rtt, &tx, &rx, &shape);
    Some((
        bound.sender_bps as f64 / 1e6,
        bound.receiver_bps as f64 / 1e6,
    ))
}

/// When `w`'s senders are of more than one kind (`costs`), each kind's share of `aggregate`
/// (Mbit/s) as [`Metric::GOODPUT_OF`]`<preset>`: the flows share the bottleneck equally, so a
/// kind carries its senders' share of it (the simulator sums each kind's measured flows).
fn goodput_by_kind(s: &Scenario, w: &Workload, aggregate: f64, m: &mut BTreeMap<String, f64>) {
    let kinds = w
        .from
        .iter()
        .filter_map(|name| s.host(name)?.costs.as_deref())
        .map(|kind| (kind, 1.0));
    let senders = w.from.len() as f64;
    for (key, n) in crate::app::bulk::goodput_by_kind(kinds) {
        m.insert(key, aggregate * n / senders);
    }
}

/// The cost model (`costs`) of host `name`, if it names one.
fn costs_of(s: &Scenario, name: &str) -> Option<crate::host::HostCosts> {
    s.host(name).and_then(Host::cost_preset)
}

/// A UDP blast of `w` from `a` (its first link `first`) to `b` through `bottleneck` when either
/// host has costs (`None` otherwise, or over TCP): `size`-byte datagrams (default: what fills
/// the path MTU `mtu`), fragmented beyond it.
fn udp_blast(
    s: &Scenario,
    a: &str,
    b: &str,
    w: &Workload,
    first: &crate::tech::Tech,
    bottleneck: &crate::tech::Tech,
    mtu: u64,
) -> Option<super::udp::UdpBlast> {
    if !matches!(w.proto, Some(Transport::Udp)) {
        return None;
    }
    let (tx, rx) = (costs_of(s, a), costs_of(s, b));
    if tx.is_none() && rx.is_none() {
        return None;
    }
    let free = crate::host::HostCosts::FREE;
    let headers = Transport::Udp.header_bytes();
    let payload = w
        .size
        .map_or(mtu.saturating_sub(headers), |z| z.0)
        .clamp(1, 65_507);
    Some(super::udp::UdpBlast::new(
        tx.as_ref().unwrap_or(&free),
        rx.as_ref().unwrap_or(&free),
        first,
        bottleneck,
        payload,
        u32::try_from(mtu).unwrap_or(u32::MAX),
    ))
}

/// A file transfer by SBTP or MBTP ([`super::xfer::estimate`]).
fn xfer(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(x), Some(a), Some(b)) = (&w.xfer, w.from.first(), w.to.first()) else {
        return;
    };
    let Some(path) = s.path(a, b) else {
        out.notes.push(format!("no path from {a:?} to {b:?}"));
        return;
    };
    let end = |name: &String| {
        let disk = s.host(name).and_then(Host::disk_preset);
        (super::rr_point::host_costs(s, name), disk)
    };
    let (tx, rx) = (end(a), end(b));
    // The datagrams' payload rate on the slowest link (cells and headers counted).
    let ip = x.packet.0 + super::xfer::DATA_HEADER + 28;
    let Some(line) = path
        .iter()
        .filter_map(|l| l.tech.goodput(ip, Transport::Udp).ok())
        .min()
    else {
        out.notes
            .push(format!("datagrams of {ip} B do not fit the path"));
        return;
    };
    let line = crate::units::Rate(
        (line.as_bps() as u128 * u128::from(x.packet.0) / u128::from(ip - 28)) as u64,
    );
    let rtt = Duration(2 * path.iter().map(|l| l.delay.0).sum::<u64>());
    let e = super::xfer::estimate(
        x,
        super::xfer::XferEnd {
            costs: &tx.0,
            disk: tx.1.as_ref(),
        },
        super::xfer::XferEnd {
            costs: &rx.0,
            disk: rx.1.as_ref(),
        },
        line,
        rtt,
    );
    let m = &mut out.metrics;
    m.insert(Metric::GOODPUT_MBPS.into(), e.bps / 1e6);
    m.insert(Metric::PAYLOAD_KIB_S.into(), e.bps / 8.0 / 1024.0);
    m.insert(Metric::SYNC_PCT.into(), e.pct(e.sync()));
    m.insert(Metric::DISK_PCT.into(), e.pct(e.read));
    m.insert(Metric::TRANSFER_PCT.into(), e.pct(e.transfer));
    m.extend(Metric::idle(e.pct(e.transfer)));
    // The closed form has no sockets to overflow: it loses no datagram.
    m.insert("loss_fraction".into(), 0.0);
    m.insert("buffer_ms".into(), e.cycle.as_secs_f64() * 1e3);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gigaswitch_points() {
        let text = r#"
name = "g"
[[switch]]
name = "sw"
fabric = "input-fifo"
ports = 5
[[workload]]
kind = "saturated"
inputs = [1, 2, 5]
outputs = 5
rate = "95Mbps"
"#;
        let s = Scenario::parse(text, "g.toml").unwrap();
        let pts = evaluate(&s);
        let t: Vec<f64> = pts
            .iter()
            .map(|p| p.metrics[Metric::FORMULA_MBPS])
            .collect();
        assert!((t[0] - 95.0).abs() < 1e-9);
        assert!((t[1] - 85.5).abs() < 1e-9);
        assert!((t[2] - 95.0 * 0.67232).abs() < 1e-9);
        let e5 = pts[2].metrics[Metric::EFFICIENCY];
        assert_eq!(Some(e5), saturation_throughput(5));
        // Two inputs: a packet left behind and a fresh one collide with the same probability 1/N
        // as two fresh ones, so the FIFO's memory costs nothing.
        assert!((pts[1].metrics[Metric::THROUGHPUT_MBPS] - t[1]).abs() < 1e-9);
        assert!(pts[2].metrics[Metric::THROUGHPUT_MBPS] < t[2]);
    }

    #[test]
    fn tput_over_a_path() {
        let text = r#"
name = "t"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "sw"
[[link]]
ends = ["a", "sw"]
tech = "oc3c"
delay = "4ms"
[[link]]
ends = ["sw", "b"]
tech = { preset = "e3", rate = "26Mbps" }
delay = "4.5ms"
[[workload]]
kind = "tput"
from = "a"
to = "b"
window = [35600, "64KiB"]
mtu = 4490
"#;
        let s = Scenario::parse(text, "t.toml").unwrap();
        let pts = evaluate(&s);
        // 35600 B (eight whole 4450-byte segments) over 17 ms and the two segment times at
        // 26 Mbit/s (94 cells each) that the delayed ACK of the first two waits for.
        let seg_s = 94.0 * 53.0 * 8.0 / 26e6;
        let win = 35_600.0 * 8.0 / (0.017 + 2.0 * seg_s) / 1e6;
        assert!((pts[0].metrics[Metric::GOODPUT_MBPS] - win).abs() < 1e-3);
        assert!((pts[0].metrics["ack_round_ms"] - (17.0 + 2e3 * seg_s)).abs() < 1e-5);
        // 64 KiB fills the 26 Mbit/s VP: 26 * 4450 / (94 * 53).
        let link = 26.0 * 4450.0 / (94.0 * 53.0);
        assert!((pts[1].metrics[Metric::GOODPUT_MBPS] - link).abs() < 1e-5);
        assert!((pts[1].metrics["utilisation"] - 1.0).abs() < 1e-6);
        // The bottleneck's cell rate, the VP's 26 Mbit/s, as the catalogue's input item shows it.
        assert!((pts[1].metrics["bottleneck_mbps"] - 26.0).abs() < 1e-9);

        // 5% loss on a link: the Mathis bound, MSS/(RTT sqrt(2p/3)), takes over.
        let lossy = text.replace("delay = \"4ms\"", "delay = \"4ms\"\nloss = 0.05");
        let s = Scenario::parse(&lossy, "t.toml").unwrap();
        let pts = evaluate(&s);
        let mathis = 4450.0 * 8.0 / (0.017 * (2.0 * 0.05f64 / 3.0).sqrt()) / 1e6;
        assert!((pts[1].metrics[Metric::GOODPUT_MBPS] - mathis).abs() < 1e-6);
        assert!(pts[1].notes.iter().any(|n| n.contains("Mathis")));
    }

    #[test]
    fn bsd_window_is_whole_segments_acked_every_second() {
        let text = r#"
name = "t"
[[host]]
name = "a"
[[host]]
name = "b"
[[link]]
ends = ["a", "b"]
tech = { preset = "e3", rate = "33Mbps" }
delay = "8.5ms"
[[workload]]
kind = "tput"
from = "a"
to = "b"
window = 65536
mtu = 4490
"#;
        let seg_s = 94.0 * 53.0 * 8.0 / 33e6;
        let round = 0.017 + 2.0 * seg_s;
        let bsd = evaluate(&Scenario::parse(text, "t.toml").unwrap());
        // Nagle: 14 whole segments of 4450 bytes, not 65536 bytes.
        assert_eq!(bsd[0].metrics["window_sent_bytes"], 62_300.0);
        let want = 62_300.0 * 8.0 / round / 1e6;
        assert!((bsd[0].metrics[Metric::GOODPUT_MBPS] - want).abs() < 1e-3);
        // A Linux sender keeps the partial segment in flight too.
        let linux = text.replace("mtu = 4490", "mtu = 4490\nstack = \"linux\"");
        let linux = evaluate(&Scenario::parse(&linux, "t.toml").unwrap());
        let want = 65_536.0 * 8.0 / round / 1e6;
        assert!((linux[0].metrics[Metric::GOODPUT_MBPS] - want).abs() < 1e-3);
    }

    #[test]
    fn tput_is_bounded_by_the_hosts_costs() {
        let text = r#"
name = "t"
[[host]]
name = "a"
costs = "indigo-r4000"
[[host]]
name = "b"
costs = "indigo-r4000"
[[link]]
ends = ["a", "b"]
tech = "fddi"
[[workload]]
kind = "tput"
from = "a"
to = "b"
window = 64512
"#;
        let s = Scenario::parse(text, "t.toml").unwrap();
        let pts = evaluate(&s);
        // The Indigo preset is fitted to the directly connected ttcp mean, 91.37 Mbit/s, below
        // FDDI's 98.3 at a 4352-byte MTU.
        let g = pts[0].metrics[Metric::GOODPUT_MBPS];
        assert!((g - 91.3749).abs() < 0.05, "{g}");
        assert!(pts[0].metrics["link_goodput_mbps"] > 98.0);
        assert!(
            pts[0].notes.iter().any(|n| n.contains("hosts")),
            "{:?}",
            pts[0].notes
        );
        // Without costs the link bounds it.
        let free = Scenario::parse(&text.replace("costs = \"indigo-r4000\"\n", ""), "t.toml");
        let pts = evaluate(&free.unwrap());
        assert!(pts[0].metrics[Metric::GOODPUT_MBPS] > 98.0);
    }

    /// Senders of two kinds: each kind's share of the aggregate, by its number of senders;
    /// one kind alone gives no breakdown.
    #[test]
    fn tput_breaks_the_goodput_down_by_kind_of_sender() {
        let text = r#"
name = "t"
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
[[workload]]
kind = "tput"
from = ["a", "b", "c"]
to = ["d"]
window = 64512
"#;
        let m = &evaluate(&Scenario::parse(text, "t.toml").unwrap())[0].metrics;
        let all = m[Metric::GOODPUT_MBPS];
        let of = |k: &str| m[&format!("{}{k}", Metric::GOODPUT_OF)];
        assert!((of("sparc10") - all * 2.0 / 3.0).abs() < 1e-9, "{m:?}");
        assert!((of("rs6000-giga") - all / 3.0).abs() < 1e-9, "{m:?}");
        let one = text.replace("costs = \"rs6000-giga\"", "costs = \"sparc10\"");
        let m = &evaluate(&Scenario::parse(&one, "t.toml").unwrap())[0].metrics;
        assert!(
            !m.keys().any(|k| k.starts_with(Metric::GOODPUT_OF)),
            "{m:?}"
        );
    }

    /// One end with a preset and one without (Sandia's SGI): the preset's paths bound the
    /// transfer alone, the other end costing nothing, as on the simulator.
    #[test]
    fn tput_is_bounded_by_one_ends_costs_when_the_other_has_none() {
        let text = r#"
name = "t"
[[host]]
name = "a"
costs = "indigo-r4000"
[[host]]
name = "b"
[[link]]
ends = ["a", "b"]
tech = "fddi"
[[workload]]
kind = "tput"
from = "a"
to = "b"
window = 64512
"#;
        let g = |t: &str| {
            evaluate(&Scenario::parse(t, "t.toml").unwrap())[0]
                .metrics
                .clone()
        };
        let one = g(text);
        let shape = crate::calc::host::BulkShape {
            mss: one["mtu_bytes"] as u64 - 40,
            call: crate::calc::fit::TTCP_DEFAULT_BUFFER,
            headers: 40,
            acks_per_segment: 0.0,
        };
        let h = crate::host::presets::indigo_r4000();
        let free = crate::host::HostCosts::FREE;
        let link = crate::units::Rate((one["link_goodput_mbps"] * 1e6) as u64);
        let rtt = Duration((one["rtt_ms"] * 1e6) as u64);
        let want = crate::calc::host::BulkBound::new(link, Size(64512), rtt, &h, &free, &shape);
        let want = want.sender_bps.min(want.receiver_bps) as f64 / 1e6;
        assert!(want < one["link_goodput_mbps"]);
        assert!(
            (one["host_mbps"] - want).abs() < 1e-9 * want,
            "{one:?} {want}"
        );
        assert_eq!(one[Metric::GOODPUT_MBPS], one["host_mbps"]);
        // Neither end with a preset: no host bound, the link's rate.
        let none = g(&text.replace("costs = \"indigo-r4000\"\n", ""));
        assert!(!none.contains_key("host_mbps"));
        assert_eq!(none[Metric::GOODPUT_MBPS], none["link_goodput_mbps"]);
    }

    /// EBN's Adelaide to Monash (scenarios/ebn-anspag-policed.toml): an Alpha at OC-3c into a
    /// contract policed at 27 Mbit/s with 50 us of tolerance. No 9180-byte segment passes whole,
    /// so nothing is delivered and the writes that returned are the four 8 KiB ones that fill
    /// the 35600-byte send buffer. Unpoliced, the window-limited rate flows and the writes go
    /// on over the 10 s.
    #[test]
    fn a_contract_that_polices_every_segment_away_hangs_the_transfer() {
        let text = r#"
name = "t"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "sw"
[[link]]
ends = ["a", "sw"]
tech = "oc3c"
delay = "10us"
pcr = "27Mbps"
cdvt = "50us"
police = true
[[link]]
ends = ["sw", "b"]
tech = "e3"
delay = "8ms"
[[workload]]
kind = "tput"
from = "a"
to = "b"
proto = "tcp"
window = 35600
time = "10s"
"#;
        let m = |t: &str| evaluate(&Scenario::parse(t, "t.toml").unwrap())[0].clone();
        let hung = m(text);
        assert_eq!(hung.metrics[Metric::GOODPUT_MBPS], 0.0);
        assert_eq!(hung.metrics[Metric::APP_WRITTEN_KIB], 32.0);
        assert!(
            hung.notes.iter().any(|n| n.contains("hangs")),
            "{:?}",
            hung.notes
        );
        let free = m(&text.replace("police = true\n", ""));
        let g = free.metrics[Metric::GOODPUT_MBPS];
        assert!(g > 10.0, "{g}");
        let want = (g * 1e6 / 8.0 * 10.0 + 32_768.0) / 1024.0;
        assert!((free.metrics[Metric::APP_WRITTEN_KIB] - want).abs() < 1e-6);
    }

    #[test]
    fn ftp_is_bounded_by_the_senders_disk() {
        // Sandia's file server sending to a desktop Sparc 20 whose disk reads at 16 Mbit/s:
        // the other way round, the desktop's disk bounds the file, not the 91 Mbit/s hosts.
        let text = r#"
name = "t"
[[host]]
name = "a"
costs = "indigo-r4000"
disk = "sandia-desktop-scsi"
[[host]]
name = "b"
costs = "indigo-r4000"
disk = "sandia-fileserver-fwscsi2"
[[link]]
ends = ["a", "b"]
tech = "fddi"
[[workload]]
kind = "tput"
from = "a"
to = "b"
window = 64512
file = "25MiB"
"#;
        let pts = evaluate(&Scenario::parse(text, "t.toml").unwrap());
        let g = pts[0].metrics[Metric::GOODPUT_MBPS];
        assert!(g < 16.0 && g > 15.9, "{g}");
        assert!(pts[0].notes.iter().any(|n| n.contains("sender's disk")));
        assert_eq!(pts[0].metrics["tx_disk_read_mbps"], 16.0);
        // Memory to memory (no `file`): the hosts' 91.37.
        let ttcp = Scenario::parse(&text.replace("file = \"25MiB\"\n", ""), "t.toml");
        let g = evaluate(&ttcp.unwrap())[0].metrics[Metric::GOODPUT_MBPS];
        assert!((g - 91.3749).abs() < 0.05, "{g}");
    }

    #[test]
    fn ftp_charges_the_cache_copies_to_the_hosts() {
        // Two Sparc 20s (a copy: 16.2 ns a byte) over OC-3c, no disks named: the file moves
        // between the caches, each path paying one more copy than ttcp's.
        let text = r#"
name = "t"
[[host]]
name = "a"
costs = "sparc20-m50-solaris2.3"
[[host]]
name = "b"
costs = "sparc20-m50-solaris2.3"
[[link]]
ends = ["a", "b"]
tech = "oc3c"
[[workload]]
kind = "tput"
from = "a"
to = "b"
window = 65536
file = "25MiB"
"#;
        let g = |t: &str| evaluate(&Scenario::parse(t, "t.toml").unwrap())[0].metrics["host_mbps"];
        let (ftp, ttcp) = (g(text), g(&text.replace("file = \"25MiB\"\n", "")));
        // The send path's 8 KiB call and per-byte costs, with and without the copy.
        let h = crate::host::presets::sparc20_m50_solaris23();
        let per_byte = h.per_byte_ns(crate::host::Direction::Send) + h.send_call_ns / 8192.0;
        let want = ttcp * per_byte / (per_byte + h.copy_ns_per_byte);
        assert!((ftp - want).abs() < 0.01 * want, "{ftp} {ttcp} {want}");
    }
}
