//! The `emu` engine of `weft run`: a scenario file brought up as namespaces around the userspace
//! switch, its workloads run with real TCP/UDP stacks, and one result document returned.
//!
//! The topology is [`Topology::from_scenario`], the one the simulator builds too: every switch
//! and link of the file runs in the switch process (links between switches included), so the two
//! engines answer the same network. Slotted synthetic kinds (saturated, bernoulli, onoff,
//! hotspot) are the simulator's; the emulator reports them as skipped.

use std::path::PathBuf;
use std::time::Duration as StdDuration;

use serde_json::{Value, json};
use weft_model::Rate;
use weft_model::app::rr::Latencies;
use weft_model::app::traffic::sized_flow_metrics;
use weft_model::calc::fct::PathIdeal;
use weft_model::net::{ETH_HEADER, FabricCounts, Topology, delivery};
use weft_model::scenario::run::{PointCtx, PointEngine, PointResult, run_points};
use weft_model::scenario::{Scenario, TcpStack, Workload, WorkloadKind};
use weft_model::tcp::CcAlgorithm;
use weft_model::tech::Transport;
use weft_report::{Engine, ResultDoc};

use crate::driver::DriverReport;
use crate::emulation::{Emulation, HOST_IF, UpOptions};
use crate::error::EmuError;
use crate::rr_tcp::{self, TcpRrSpec};
use crate::vc_scenario::{self, FailRun};
use crate::{netns, signals, workload};

/// How to run a scenario on the emulator.
#[derive(Clone, Debug, Default)]
pub struct ScenarioOptions {
    /// Seed for random loss (default: the scenario's).
    pub seed: Option<u64>,
    /// Cap on each workload's duration (real time is spent: keep runs short).
    pub max_time: Option<StdDuration>,
    /// Write one capture per link, per point, under this directory.
    pub capture_dir: Option<PathBuf>,
}

/// The emulator's topology for a scenario (the simulator's too), with notes on what was assumed.
pub fn topology(s: &Scenario, seed: u64) -> Result<(Topology, Vec<String>), EmuError> {
    let (mut topo, mut notes) = Topology::from_scenario(s, seed)?;
    if !topo.rings.is_empty() {
        notes.push(
            "[[ring]] runs on the simulator only: here each of the rings' hosts has a line of \
             its own, of no rate"
                .into(),
        );
        // Without the rings in front of it, the switch gives each of their hosts its own port
        // (with them, a ring's hosts share one port, which only net::Ringed delivers from).
        topo.rings.clear();
    }
    Ok((topo, notes))
}

/// The topology workload `w` of `s` runs on: [`topology`], with the workload's `multipath` in
/// place of the fabric's, as the simulator runs it.
pub fn workload_topology(
    s: &Scenario,
    w: &Workload,
    seed: u64,
) -> Result<(Topology, Vec<String>), EmuError> {
    let (topo, notes) = topology(s, seed)?;
    Ok((topo.for_workload(w), notes))
}

/// Runs every point of `s` on the emulator (one bring-up per point, its topology built with
/// the point's seed, as the simulator builds it) and returns the result document: one sample
/// per point with `workload`, `point`, the metrics and `notes` ([`run_points`]).
pub fn run(s: &Scenario, opts: &ScenarioOptions) -> Result<ResultDoc, EmuError> {
    netns::preflight()?;
    // The file as the emulator runs it ([emu]: link rates, a stand-in for dctcp).
    let (emulated, emu_notes) = s.as_emulated(weft_sys::sockopt::has_congestion("dctcp"));
    let s = &emulated;
    let seed = opts.seed.unwrap_or(s.seed);
    let (topo, mut notes) = topology(s, seed)?;
    notes.extend(emu_notes.iter().cloned());
    let mut doc = ResultDoc::new(format!("run.{}", s.name), Engine::Emu);
    doc.params = json!({
        "scenario": s.name,
        "description": s.description,
        "seed": seed,
        "topology": topo,
        "notes": notes,
    });
    doc.samples = run_points(
        s,
        seed,
        &mut EmuEngine {
            opts,
            notes: emu_notes,
        },
    )?;
    Ok(doc)
}

/// The emulator as an engine of the one loop over points ([`run_points`]).
#[derive(Clone, Debug)]
pub struct EmuEngine<'a> {
    /// Captures and the cap on each workload's time.
    pub opts: &'a ScenarioOptions,
    /// What the emulator changed in the file ([`Scenario::as_emulated`]), noted on every
    /// point it runs.
    pub notes: Vec<String>,
}

impl PointEngine for EmuEngine<'_> {
    type Error = EmuError;

    fn run_point(&mut self, p: &PointCtx<'_>) -> Result<PointResult, EmuError> {
        if signals::interrupted() {
            return Err(EmuError::Interrupted);
        }
        let (s, w) = (p.scenario, &p.point.spec);
        if let Some(why) = not_on_emu(w, weft_sys::sockopt::has_congestion) {
            return Ok(PointResult::skipped(why));
        }
        let (topo, _) = workload_topology(s, w, p.seed)?;
        // Declared before the emulation, so dropped after it on every path.
        let mut failing = FailRun::start(s, &topo)?;
        let driver = if w.kind == WorkloadKind::Mp {
            workload::mp_driver()
        } else {
            Default::default()
        };
        let up = UpOptions {
            driver,
            capture_dir: self
                .opts
                .capture_dir
                .as_ref()
                .map(|d| d.join(format!("point{}", p.index))),
            source: format!("scenario {}", s.name),
            vc_manager: failing.as_ref().map(FailRun::link),
            ..Default::default()
        };
        if let Some(d) = &up.capture_dir {
            std::fs::create_dir_all(d)
                .map_err(EmuError::io(format!("creating {}", d.display())))?;
        }
        let mut r = PointResult::default();
        r.notes.extend(self.notes.iter().cloned());
        let emu = Emulation::up(&topo, &up)?;
        if let Some(f) = failing.as_mut() {
            f.arm(&emu)?;
        }
        let sized = w
            .flow_size
            .filter(|_| w.kind == WorkloadKind::Tput && !matches!(w.proto, Some(Transport::Udp)));
        let out = match (w.kind, sized) {
            (WorkloadKind::Rr, _) => run_rr(&emu, s, w, &mut r.notes),
            (_, Some(size)) => {
                let time = point_time(w, self.opts, &mut r.notes);
                sized_flows_point(&emu, s, w, size.0, time)
            }
            _ => run_point(&emu, s, w, self.opts, &mut r.notes)
                .map(|m| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
        };
        let report = emu.down()?;
        r.metrics = out?.into_iter().collect();
        add_switch_metrics(&mut r.metrics, &report, &topo, w);
        if let Some(f) = failing {
            vc_scenario::report(f, &mut r);
        }
        Ok(r)
    }
}

/// Why the emulator cannot run workload `w` at all, if it cannot; `has_cc` says whether the
/// kernel has a congestion control ([`weft_sys::sockopt::has_congestion`]).
pub fn not_on_emu(w: &Workload, has_cc: impl Fn(&str) -> bool) -> Option<String> {
    match w.kind {
        WorkloadKind::Tput | WorkloadKind::Frames | WorkloadKind::Rr | WorkloadKind::Mp => {}
        WorkloadKind::Saturated
        | WorkloadKind::Bernoulli
        | WorkloadKind::Onoff
        | WorkloadKind::Hotspot => {
            return Some(format!(
                "not on emu: {} is a slotted synthetic workload for the simulator",
                w.kind.name()
            ));
        }
        _ => {
            return Some(format!(
                "not on emu: {} runs on the model and sim engines (the emulator's hosts have no \
                 driver for it yet)",
                w.kind.name()
            ));
        }
    }
    if w.file.is_some() {
        return Some("not on emu: FTP from disk (`file`) runs on the model engine only".into());
    }
    if w.ndp {
        return Some(
            "not on emu: NDP is simulator-only (the emulated Linux hosts have no NDP)".into(),
        );
    }
    if w.dcqcn {
        return Some(
            "not on emu: DCQCN is simulator-only (the emulated Linux hosts have no RoCE)".into(),
        );
    }
    if let Some(cc) = w.cc.map(linux_cc).filter(|cc| !has_cc(cc)) {
        return Some(format!("not on emu: this kernel has no tcp_{cc}"));
    }
    None
}

fn run_point(
    emu: &Emulation,
    s: &Scenario,
    w: &Workload,
    opts: &ScenarioOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<(&'static str, Value)>, EmuError> {
    let time = point_time(w, opts, notes);
    let warmup = (time / 5).min(StdDuration::from_secs(1));
    if w.kind == WorkloadKind::Mp {
        return mp_point(emu, w, notes);
    }
    if w.from.is_empty() || w.to.is_empty() {
        return Err(EmuError::Workload(
            w.kind.name().into(),
            "needs `from` and `to` hosts".into(),
        ));
    }
    let pairs: Vec<(String, String)> = w
        .from
        .iter()
        .flat_map(|f| w.to.iter().map(move |t| (f.clone(), t.clone())))
        .filter(|(f, t)| f != t)
        .collect();
    let frames = w.kind == WorkloadKind::Frames;
    let udp = frames || matches!(w.proto, Some(Transport::Udp));
    if !frames {
        for (f, t) in &pairs {
            set_route(emu, s, w, f, t)?;
        }
    }
    let cc = w.cc.map(linux_cc);
    if w.stack.unwrap_or_default() == TcpStack::Bsd && !udp {
        notes.push("emu runs Linux TCP whatever the `stack`".into());
    }
    let results: Vec<Result<(f64, Value), EmuError>> = std::thread::scope(|sc| {
        let handles: Vec<_> = pairs
            .iter()
            .map(|(f, t)| {
                sc.spawn(move || -> Result<(f64, Value), EmuError> {
                    if udp {
                        let (size, rate) = udp_shape(emu, w, f, frames)?;
                        let r = workload::udp_cbr(emu, f, t, rate, size, time, warmup)?;
                        Ok((r.steady_bps, json!({ "from": f, "to": t, "sent": r.sent, "received": r.received, "goodput_mbps": r.steady_bps / 1e6 })))
                    } else {
                        let window = w.window.map(|s| s.0.min(u32::MAX as u64) as u32);
                        let r = workload::tcp_bulk_cc(emu, f, t, window, cc, time, warmup)?;
                        Ok((r.steady_bps, json!({ "from": f, "to": t, "bytes": r.bytes, "goodput_mbps": r.steady_bps / 1e6 })))
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(EmuError::Workload("flow".into(), "panicked".into())))
            })
            .collect()
    });
    let mut total = 0.0;
    let mut flows = Vec::new();
    for r in results {
        let (bps, v) = r?;
        total += bps;
        flows.push(v);
    }
    Ok(vec![
        ("goodput_mbps", json!(total / 1e6)),
        ("payload_kib_s", json!(total / 8.0 / 1024.0)),
        ("flows", json!(flows)),
        ("seconds", json!(time.as_secs_f64())),
    ])
}

/// A workload's `time` (default 3 s), cut to the options' cap (noted).
fn point_time(w: &Workload, opts: &ScenarioOptions, notes: &mut Vec<String>) -> StdDuration {
    let time = w
        .time
        .map(StdDuration::from)
        .unwrap_or(StdDuration::from_secs(3));
    match opts.max_time {
        Some(max) if time > max => {
            notes.push(format!("time cut from {time:?} to {max:?}"));
            max
        }
        _ => time,
    }
}

/// A workload of sized TCP flows (`flow_size`; incast, permutation, or from x to), all started
/// at once ([`workload::tcp_sized_flows`]): completion times beside the ideal, goodput per
/// flow, and drops and ECN marks over the fabric, under the simulator's metric names.
fn sized_flows_point(
    emu: &Emulation,
    s: &Scenario,
    w: &Workload,
    size: u64,
    time: StdDuration,
) -> Result<Vec<(String, Value)>, EmuError> {
    let from: Vec<&str> = w.from.iter().map(String::as_str).collect();
    let to: Vec<&str> = w.to.iter().map(String::as_str).collect();
    let pairs: Vec<(String, String)> = w
        .flow_pairs(&from, &to, s.seed)
        .into_iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
    if pairs.is_empty() {
        return Err(EmuError::Workload(
            "tput".into(),
            "needs `from` and `to` hosts that differ".into(),
        ));
    }
    let cc = w.cc.map(linux_cc);
    let mut hosts: Vec<&String> = pairs.iter().flat_map(|(f, t)| [f, t]).collect();
    hosts.sort_unstable();
    hosts.dedup();
    for h in &hosts {
        if w.ecn {
            // RFC 3168 on this host's connections (dctcp asks for it whatever this says).
            emu.sysctl(h, &[("net.ipv4.tcp_ecn", "1")])?;
        }
    }
    for (f, t) in &pairs {
        set_route(emu, s, w, f, t)?;
    }
    let flows = workload::tcp_sized_flows(emu, &pairs, size, cc, time)?;
    let done: Vec<(u64, u64)> = flows
        .iter()
        .filter(|f| f.bytes >= size)
        .filter_map(|f| f.last_ns.map(|t| (size, t)))
        .collect();
    let ideal = pairs
        .first()
        .and_then(|(f, t)| PathIdeal::between(s, w, f, t))
        .map_or(0.0, |p| p.alone_ns(size));
    let mut out: Vec<(String, Value)> = sized_flow_metrics(&done, ideal).into_iter().collect();
    out.push(("flows".into(), json!(flows)));
    out.push(("seconds".into(), json!(time.as_secs_f64())));
    if let Some(cc) = cc {
        let name = if w.ecn {
            format!("{cc}+ecn")
        } else {
            cc.to_string()
        };
        out.push(("cc".into(), json!(name)));
    }
    Ok(out)
}

/// Linux's name for the congestion control `c`.
fn linux_cc(c: CcAlgorithm) -> &'static str {
    match c {
        // Linux has no NewReno module: its "reno" recovers as NewReno does (and with SACK).
        CcAlgorithm::Reno | CcAlgorithm::NewReno => "reno",
        CcAlgorithm::Cubic => "cubic",
        CcAlgorithm::Dctcp => "dctcp",
    }
}

/// Routes between `f` and `t`, both ways, as the transfer's path: MTU the path's (or the
/// workload's `mtu`, as the EBN study set with `route`), advertised MSS the workload's `mss`.
/// Host routes, so that they win over the subnet's.
fn set_route(
    emu: &Emulation,
    s: &Scenario,
    w: &Workload,
    f: &str,
    t: &str,
) -> Result<(), EmuError> {
    let path_mtu = s
        .path(f, t)
        .and_then(|p| p.iter().map(|l| l.tech.mtu.0).min());
    let mtu = match (w.mtu, path_mtu) {
        (Some(m), Some(p)) => Some(m.0.min(p)),
        (m, p) => m.map(|x| x.0).or(p),
    };
    for (a, b) in [(f, t), (t, f)] {
        let ns = emu.host(a)?.ns.clone();
        let peer = format!("{}/32", emu.host(b)?.addr);
        let mut args: Vec<String> = ["-n", &ns, "route", "replace", &peer, "dev", HOST_IF]
            .iter()
            .map(|x| x.to_string())
            .collect();
        if let Some(m) = mtu {
            args.extend(["mtu".into(), m.to_string()]);
        }
        if let Some(mss) = w.mss {
            args.extend(["advmss".into(), mss.0.to_string()]);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        netns::ip(&refs)?;
    }
    Ok(())
}

/// Request/response between every `from` and `to` host: `count` requests of `size` bytes, each
/// answered with `response_size` (default `size`) and waiting `timeout` (the simulator's
/// defaults: 1000 requests, 1 s), over UDP to an echo responder or over one Linux TCP
/// connection per pair ([`rr_tcp::tcp_rr`]: `nodelay`, `echo`, `window`, `cc`).
fn run_rr(
    emu: &Emulation,
    s: &Scenario,
    w: &Workload,
    notes: &mut Vec<String>,
) -> Result<Vec<(String, Value)>, EmuError> {
    let size = w.size.map_or(64, |x| x.0.clamp(4, 65_000) as usize);
    let response = w
        .response_size
        .map_or(size, |x| x.0.clamp(4, 65_000) as usize);
    let count = w.count.unwrap_or(1000).min(u64::from(u32::MAX)) as u32;
    let timeout = w
        .timeout
        .map_or(StdDuration::from_secs(1), StdDuration::from);
    let mut all = Vec::new();
    let mut lost = 0u64;
    for f in &w.from {
        for t in &w.to {
            if f == t {
                continue;
            }
            set_route(emu, s, w, f, t)?;
            let r = match w.proto {
                Some(Transport::Tcp { .. }) => {
                    let spec = TcpRrSpec {
                        request: size,
                        response,
                        count,
                        timeout,
                        nodelay: w.nodelay,
                        echo: w.echo,
                        window: w.window.map(|x| x.0.min(u64::from(u32::MAX)) as u32),
                        cc: w.cc.map(linux_cc),
                    };
                    rr_tcp::tcp_rr(emu, f, t, spec)?
                }
                _ => workload::udp_rr(emu, f, t, (size, response), count, timeout, None)?,
            };
            lost += r.lost;
            all.extend(r.rtt_ns);
        }
    }
    notes.push(match w.proto {
        Some(Transport::Tcp { .. }) => {
            "TCP request/response on Linux hosts: Linux's stack whatever the `stack`, the hosts' own costs, not the scenario's `costs`"
        }
        _ => "UDP echo on Linux hosts: their own costs, not the scenario's `costs`",
    }.into());
    if w.beside.is_some() {
        notes.push("emu gives the unloaded round trip: `beside` runs on sim".into());
    }
    let latencies = Latencies { rtt_ns: all, lost };
    Ok(latencies.metrics().into_iter().collect())
}

/// Runs an `mp` workload point ([`workload::mp`]) and reports its first sample's metrics
/// (`mean_us` is the default one) and every sample.
fn mp_point(
    emu: &Emulation,
    w: &Workload,
    notes: &mut Vec<String>,
) -> Result<Vec<(&'static str, Value)>, EmuError> {
    use weft_sock::mp::{DaemonParams, MP_VERSION, MpSpec};
    let m =
        w.mp.as_ref()
            .ok_or_else(|| EmuError::Workload("mp".into(), "no ranks or pattern".into()))?;
    let iterations = m.iterations.map(|i| i.min(100_000) as u32);
    let spec = MpSpec {
        version: MP_VERSION,
        rank: 0,
        ranks: m.ranks.len() as u32,
        route: m.route,
        patterns: vec![m.pattern.to_string()],
        sizes: w.size.map(|s| vec![s.as_bytes()]).unwrap_or_default(),
        iterations: iterations.unwrap_or(200),
        iterations_large: iterations.unwrap_or(20),
        warmup: iterations.map_or(10, |i| (i / 10).max(1)),
        npb_steps: iterations,
        timeout_ms: 10_000,
        spin_us: 50,
        daemon: DaemonParams::default(),
        place: Default::default(),
    };
    let r = workload::mp(emu, &m.ranks, &spec)?;
    let doc = r.to_result_doc(weft_report::Engine::Emu);
    let Some(s) = r.samples.first() else {
        notes.push("the run produced no sample".into());
        return Ok(Vec::new());
    };
    let mut out = vec![
        ("mean_us", json!(s.mean_us)),
        ("p50_us", json!(s.p50_us)),
        ("p99_us", json!(s.p99_us)),
        ("mbps", json!(s.mbps)),
        ("size", json!(s.size)),
        ("iterations", json!(s.iterations)),
        ("route", json!(m.route.name())),
        ("samples", json!(doc.samples)),
    ];
    if let Some(t) = s.total_ms {
        out.push(("total_ms", json!(t)));
    }
    Ok(out)
}

/// UDP payload bytes and payload rate of a workload's datagrams. For `frames`, `size` is the IP
/// datagram and `rate` the line rate each source occupies (as the simulator reads them); for
/// `tput` over UDP, `size` is the message and `rate` its payload rate.
fn udp_shape(
    emu: &Emulation,
    w: &Workload,
    from: &str,
    frames: bool,
) -> Result<(usize, Rate), EmuError> {
    let _ = emu.host(from)?;
    let size = w.size.map(|s| s.0).unwrap_or(1500);
    let rate = w.rate.unwrap_or(Rate::mbps(10));
    if !frames {
        return Ok((size.clamp(16, 65000) as usize, rate));
    }
    let payload = size.saturating_sub(28).max(16);
    let Some(link) = emu
        .topology()
        .hosts
        .iter()
        .find(|h| h.name == from)
        .map(|h| &h.link)
    else {
        return Ok((payload as usize, rate));
    };
    let wire = link.wire_bytes(size as usize + ETH_HEADER).max(1);
    Ok((
        payload as usize,
        Rate((rate.as_bps() as u128 * payload as u128 / wire as u128) as u64),
    ))
}

fn add_switch_metrics(
    sample: &mut serde_json::Map<String, Value>,
    rep: &DriverReport,
    topo: &Topology,
    w: &Workload,
) {
    let index = |names: &[String]| -> Vec<usize> {
        names
            .iter()
            .filter_map(|n| topo.hosts.iter().position(|h| &h.name == n))
            .collect()
    };
    let names: Vec<String> = topo.hosts.iter().map(|h| h.name.clone()).collect();
    let d = delivery(&rep.ports, &names, &index(&w.from), &index(&w.to));
    if let Some(loss) = d.cell_loss {
        sample.insert("cell_loss".into(), json!(loss));
    }
    if let Some(g) = d.frame_goodput {
        sample.insert("frame_goodput".into(), json!(g));
    }
    sample.insert("per_sender".into(), json!(d.per_sender));
    let switch = json!({
        "cells_in": d.cells_in, "cells_dropped": d.cells_dropped, "frames_in": d.frames_in,
        "frames_out": d.frames_out, "frames_corrupt": d.frames_corrupt, "frames_epd": d.frames_epd,
        "lag_p50_us": rep.lag.p50_ns as f64 / 1e3, "lag_p99_us": rep.lag.p99_ns as f64 / 1e3,
        "late_frames": rep.late_frames, "late_fraction": rep.late_fraction,
        "degraded": rep.degraded, "realtime": rep.realtime,
    });
    sample.insert("switch".into(), switch);
    if w.traffic.is_some() {
        // Over every output of the fabric, as the simulator reports a fabric run.
        let c = FabricCounts::of(&rep.ports, &rep.trunks);
        sample.insert("frames_dropped".into(), json!(c.frames_dropped));
        sample.insert("frames_marked".into(), json!(c.frames_marked));
        sample.insert("max_queue".into(), json!(c.max_queue));
        sample.insert("frames_forwarded".into(), json!(c.frames_forwarded));
    }
    if let Some(v) = &rep.vc {
        sample.insert("vc".into(), json!(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_model::net::Multipath;

    #[test]
    fn the_hosts_of_a_ring_keep_ports_of_their_own_on_the_emulator() {
        let text = r#"
name = "ring"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
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
[[ring]]
switch = "s"
hosts = ["a", "b"]
"#;
        let s = Scenario::parse(text, "ring.toml").expect("the scenario parses");
        let (topo, notes) = topology(&s, 1).expect("a topology");
        // With the ring kept, the switch would send b's frames out of a's port.
        assert!(topo.rings.is_empty());
        assert!(
            notes.iter().any(|n| n.contains("simulator only")),
            "{notes:?}"
        );
    }

    #[test]
    fn each_permutation_workload_runs_on_its_own_multipath() {
        let text = include_str!("../../../scenarios/fabric-permutation.toml");
        let s = Scenario::parse(text, "fabric-permutation.toml").expect("a shipped scenario");
        let policy = |k: usize| {
            let (t, _) = workload_topology(&s, &s.workloads[k], 1).expect("a topology");
            t.multipath
        };
        // Before, the emulator built every point on the fabric's ECMP: the sprayed workload
        // took one path per flow.
        assert_eq!(policy(0), Multipath::Ecmp);
        assert_eq!(policy(1), Multipath::Spray);
    }

    #[test]
    fn host_application_workloads_are_skipped_as_model_and_sim_only_not_as_slotted() {
        let skip = |file: &str, text: &str| {
            let s = Scenario::parse(text, file).expect("a shipped scenario parses");
            not_on_emu(&s.workloads[0], |_| true)
        };
        let nfs = skip(
            "sandia-nfs.toml",
            include_str!("../../../scenarios/sandia-nfs.toml"),
        );
        assert_eq!(
            nfs.as_deref(),
            Some(
                "not on emu: nfs runs on the model and sim engines (the emulator's hosts have no \
                 driver for it yet)"
            )
        );
        let x11 = include_str!("../../../scenarios/sandia-avs-x11.toml");
        assert!(skip("sandia-avs-x11.toml", x11).is_some_and(|w| w.contains("x11 runs on")));
        let slots = include_str!("../../../scenarios/gigaswitch-contention.toml");
        let why = skip("gigaswitch-contention.toml", slots);
        assert!(why.is_some_and(|w| w.contains("slotted synthetic")));
    }

    #[test]
    fn the_incast_s_ndp_and_dcqcn_and_a_missing_dctcp_are_skipped_each_saying_why() {
        let text = include_str!("../../../scenarios/fabric-incast.toml");
        let s = Scenario::parse(text, "fabric-incast.toml").expect("a shipped scenario parses");
        let why = |has_dctcp: bool| -> Vec<Option<String>> {
            s.workloads
                .iter()
                .map(|w| not_on_emu(w, |cc| has_dctcp || cc != "dctcp"))
                .collect()
        };
        let skipped = why(false);
        assert_eq!(
            skipped,
            vec![
                Some(
                    "not on emu: NDP is simulator-only (the emulated Linux hosts have no NDP)"
                        .into()
                ),
                Some("not on emu: this kernel has no tcp_dctcp".into()),
                Some(
                    "not on emu: DCQCN is simulator-only (the emulated Linux hosts have no RoCE)"
                        .into()
                ),
            ]
        );
        // A kernel with dctcp runs the DCTCP workload.
        assert_eq!(why(true)[1], None);
    }
}
