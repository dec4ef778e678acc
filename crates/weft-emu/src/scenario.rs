//! The `emu` engine of `weft run`: a scenario file brought up as namespaces around the userspace
//! switch, its workloads run with real TCP/UDP stacks, and one result document returned.
//!
//! Translation: the emulator runs one output-queued switch. Each host is joined to it by the
//! path from the host to the *core* switch (the one with most links; the first host when there
//! is no switch) collapsed into one link: the bottleneck's rate and framing, the sum of the
//! delays, the combined loss, the smallest MTU. The buffer and drop policy come from the switch
//! the host's path reaches first. The notes of each sample say when a collapse or a fabric
//! substitution happened. Slotted synthetic kinds (saturated, bernoulli, onoff, hotspot) are the
//! simulator's; the emulator reports them as skipped.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration as StdDuration;

use serde_json::{Value, json};
use weft_model::scenario::{self, BufferUnit, Fabric, Scenario, Workload, WorkloadKind};
use weft_model::tech::{Framing as ModelFraming, Transport};
use weft_model::{Duration, Rate};
use weft_report::{Engine, ResultDoc};

use crate::driver::DriverReport;
use crate::emulation::{Emulation, HOST_IF, UpOptions};
use crate::error::EmuError;
use crate::fabric_stage::frame_cells;
use crate::framing::{CELL_BYTES, ETH_HEADER, Framing};
use crate::topo::{Buffer, DropPolicy, FabricKind, FabricSpec, HostSpec, LinkSpec, Topology};
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

/// The emulator's topology for a scenario, with notes on what was simplified.
pub fn topology(s: &Scenario, seed: u64) -> Result<(Topology, Vec<String>), EmuError> {
    let mut notes = Vec::new();
    let core: String = s
        .switches
        .iter()
        .max_by_key(|sw| s.links_of(&sw.name).count())
        .map(|sw| sw.name.clone())
        .or_else(|| s.hosts.first().map(|h| h.name.clone()))
        .ok_or_else(|| EmuError::Workload("scenario".into(), "it has no hosts".into()))?;
    if s.switches.len() > 1 {
        notes.push(format!(
            "{} switches merged into one switch ({core}, whose fabric is emulated); each host's path to it is one link",
            s.switches.len()
        ));
    }
    for sw in s.switches.iter().filter(|sw| sw.name != core) {
        if sw.fabric != Fabric::OutputQueued {
            notes.push(format!(
                "switch {}: fabric {:?} emulated as output-queued (only the core switch's fabric is emulated)",
                sw.name, sw.fabric
            ));
        }
    }
    let mut hosts = Vec::new();
    for (i, h) in s.hosts.iter().enumerate() {
        let path = if h.name == core {
            Vec::new()
        } else {
            s.path(&h.name, &core).ok_or_else(|| {
                EmuError::Workload(
                    "scenario".into(),
                    format!("host {} is not connected to {core}", h.name),
                )
            })?
        };
        let link = collapse(s, &h.name, &path, i, &mut notes);
        let addr = match &h.addr {
            None => None,
            Some(a) => Some(
                a.split('/')
                    .next()
                    .unwrap_or(a)
                    .parse::<Ipv4Addr>()
                    .map_err(|_| {
                        EmuError::Workload(
                            "scenario".into(),
                            format!("host {}: address {a:?} is not IPv4", h.name),
                        )
                    })?,
            ),
        };
        hosts.push(HostSpec {
            name: h.name.clone(),
            addr,
            link,
        });
    }
    let fabric = s
        .switches
        .iter()
        .find(|sw| sw.name == core)
        .map(|sw| fabric_of(sw, &hosts))
        .unwrap_or_default();
    Ok((
        Topology {
            hosts,
            seed,
            fabric,
        },
        notes,
    ))
}

/// The emulated fabric of switch `sw`: its kind, the fastest of the hosts' links as the fabric's
/// port rate, and its buffer in cells (frames count as MTU-sized).
fn fabric_of(sw: &scenario::Switch, hosts: &[HostSpec]) -> FabricSpec {
    let kind = match sw.fabric {
        Fabric::OutputQueued => return FabricSpec::default(),
        Fabric::InputFifo => FabricKind::InputFifo {
            contention: sw.contention.into(),
        },
        Fabric::VoqIslip => FabricKind::VoqIslip {
            iterations: sw.iterations,
        },
    };
    let rate = hosts
        .iter()
        .filter_map(|h| h.link.rate)
        .max()
        .unwrap_or(Rate::mbps(10_000));
    let cells_per_frame = hosts
        .iter()
        .map(|h| frame_cells(h.link.framing, h.link.mtu as usize + ETH_HEADER))
        .max()
        .unwrap_or(1);
    FabricSpec {
        kind,
        rate,
        buffer_cells: sw
            .buffer
            .as_ref()
            .map_or(1 << 20, |b| buffer_cells(b, cells_per_frame)),
        drop: drop_policy(Some(sw.drop), cells_per_frame),
    }
}

/// A scenario buffer size in cells, frames counting `cells_per_frame` each.
fn buffer_cells(b: &scenario::Buffer, cells_per_frame: u64) -> u64 {
    match b.unit {
        BufferUnit::Cells => b.amount,
        BufferUnit::Frames => b.amount.saturating_mul(cells_per_frame),
        BufferUnit::Bytes => b.amount / CELL_BYTES,
    }
}

/// A switch's drop policy (`None`: tail drop), its EPD threshold in cells.
fn drop_policy(d: Option<scenario::DropPolicy>, cells_per_frame: u64) -> DropPolicy {
    match d {
        None | Some(scenario::DropPolicy::Tail) => DropPolicy::Tail,
        Some(scenario::DropPolicy::Ppd) => DropPolicy::Ppd,
        Some(scenario::DropPolicy::Epd { threshold }) => DropPolicy::Epd {
            threshold: buffer_cells(&threshold, cells_per_frame),
        },
    }
}

fn collapse(
    s: &Scenario,
    host: &str,
    path: &[&scenario::Link],
    index: usize,
    notes: &mut Vec<String>,
) -> LinkSpec {
    let Some(bottleneck) = path.iter().min_by_key(|l| l.tech.rate) else {
        let mut l = LinkSpec::ethernet(None, Duration::ZERO);
        l.mtu = s
            .links
            .iter()
            .map(|l| l.tech.mtu.0 as u32)
            .max()
            .unwrap_or(1500)
            .min(65000);
        return l;
    };
    if path.len() > 1 {
        notes.push(format!(
            "host {host}: a path of {} links is one link ({} at {}, delays summed)",
            path.len(),
            bottleneck.tech.name,
            bottleneck.tech.rate
        ));
    }
    let tech = &bottleneck.tech;
    let framing = match tech.framing {
        ModelFraming::Cells => Framing::Atm {
            vpi: 0,
            vci: 100 + index as u16,
        },
        ModelFraming::Frame(f) => Framing::Frame {
            overhead: (f.preamble + f.header + f.trailer + f.gap).saturating_sub(ETH_HEADER as u64),
        },
    };
    let delay = Duration(path.iter().map(|l| l.delay.as_nanos()).sum());
    let keep: f64 = path.iter().map(|l| 1.0 - l.loss).product();
    let mtu = path
        .iter()
        .map(|l| l.tech.mtu.0)
        .min()
        .unwrap_or(1500)
        .clamp(68, 65000) as u32;
    // The switch nearest the host on its path gives the queue.
    let sw = path
        .iter()
        .flat_map(|l| l.ends.iter())
        .find_map(|e| s.switches.iter().find(|sw| &sw.name == e));
    let cells_per_frame = framing.units(mtu as usize + ETH_HEADER).max(1);
    let to_buffer = |b: &scenario::Buffer| match b.unit {
        BufferUnit::Cells => Buffer::Cells(b.amount),
        BufferUnit::Frames => Buffer::Frames(b.amount),
        BufferUnit::Bytes => Buffer::Bytes(b.amount),
    };
    let buffer = sw
        .and_then(|sw| sw.buffer.as_ref())
        .map(to_buffer)
        .unwrap_or(Buffer::Bytes(64 << 20));
    let drop = drop_policy(sw.map(|sw| sw.drop), cells_per_frame);
    LinkSpec {
        rate: Some(tech.rate),
        delay,
        mtu,
        framing,
        buffer,
        drop,
        loss: 1.0 - keep,
        ingress_buffer: 4 << 20,
        contract: path.iter().find_map(|l| l.contract),
    }
}

/// Runs every point of `s` on the emulator (one bring-up per point) and returns the result
/// document: one sample per point with `workload`, `point`, the metrics and `notes`.
pub fn run(s: &Scenario, opts: &ScenarioOptions) -> Result<ResultDoc, EmuError> {
    netns::preflight()?;
    let seed = opts.seed.unwrap_or(s.seed);
    let (topo, notes) = topology(s, seed)?;
    let mut doc = ResultDoc::new(format!("run.{}", s.name), Engine::Emu);
    doc.params = json!({
        "scenario": s.name,
        "description": s.description,
        "seed": seed,
        "topology": topo,
        "notes": notes,
    });
    for (k, p) in s.points().into_iter().enumerate() {
        if signals::interrupted() {
            return Err(EmuError::Interrupted);
        }
        let mut sample = json!({ "workload": p.workload, "point": p.value });
        let mut pnotes: Vec<String> = Vec::new();
        match p.spec.kind {
            WorkloadKind::Tput | WorkloadKind::Frames | WorkloadKind::Mp => {
                let driver = if p.spec.kind == WorkloadKind::Mp {
                    workload::mp_driver()
                } else {
                    Default::default()
                };
                let up = UpOptions {
                    driver,
                    capture_dir: opts
                        .capture_dir
                        .as_ref()
                        .map(|d| d.join(format!("point{k}"))),
                    source: format!("scenario {}", s.name),
                };
                if let Some(d) = &up.capture_dir {
                    std::fs::create_dir_all(d)
                        .map_err(EmuError::io(format!("creating {}", d.display())))?;
                }
                let emu = Emulation::up(&topo, &up)?;
                let out = run_point(&emu, &p.spec, opts, &mut pnotes);
                let report = emu.down()?;
                let metrics = out?;
                for (key, v) in metrics {
                    sample[key] = v;
                }
                add_switch_metrics(&mut sample, &report, &topo, &p.spec);
            }
            kind => pnotes.push(format!(
                "skipped: {} is a slotted synthetic workload for the simulator",
                kind.name()
            )),
        }
        sample["notes"] = json!(pnotes);
        doc.samples.push(sample);
    }
    Ok(doc)
}

fn run_point(
    emu: &Emulation,
    w: &Workload,
    opts: &ScenarioOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<(&'static str, Value)>, EmuError> {
    let mut time = w
        .time
        .map(StdDuration::from)
        .unwrap_or(StdDuration::from_secs(3));
    if let Some(max) = opts.max_time {
        if time > max {
            notes.push(format!("time cut from {:?} to {max:?}", time));
            time = max;
        }
    }
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
    if let Some(mtu) = w.mtu {
        // As the EBN study did with `route`: the path MTU of the transfer, per route.
        for h in w.from.iter().chain(w.to.iter()) {
            let ns = emu.host(h)?.ns.clone();
            netns::ip(&[
                "-n",
                &ns,
                "route",
                "replace",
                "default",
                "dev",
                HOST_IF,
                "mtu",
                &mtu.0.to_string(),
            ])?;
        }
    }
    let pairs: Vec<(String, String)> = w
        .from
        .iter()
        .flat_map(|f| w.to.iter().map(move |t| (f.clone(), t.clone())))
        .filter(|(f, t)| f != t)
        .collect();
    let frames = w.kind == WorkloadKind::Frames;
    let udp = frames || matches!(w.proto, Some(Transport::Udp));
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
                        let r = workload::tcp_bulk(emu, f, t, window, time, warmup)?;
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

/// Runs an `mp` workload point ([`workload::mp`]) and reports its first sample's metrics
/// (`mean_us` is the default one) and every sample.
fn mp_point(
    emu: &Emulation,
    w: &Workload,
    notes: &mut Vec<String>,
) -> Result<Vec<(&'static str, Value)>, EmuError> {
    use weft_probe::mp::{DaemonParams, MP_VERSION, MpSpec};
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
    let link = emu
        .topology()
        .hosts
        .iter()
        .find(|h| h.name == from)
        .map(|h| h.link.framing)
        .unwrap_or(Framing::Frame { overhead: 0 });
    let wire = link.wire_bytes(size as usize + ETH_HEADER).max(1);
    Ok((
        payload as usize,
        Rate((rate.as_bps() as u128 * payload as u128 / wire as u128) as u64),
    ))
}

fn add_switch_metrics(sample: &mut Value, rep: &DriverReport, topo: &Topology, w: &Workload) {
    let idx: Vec<usize> =
        w.to.iter()
            .filter_map(|t| topo.hosts.iter().position(|h| &h.name == t))
            .collect();
    let (mut cin, mut cdrop, mut fin, mut fout, mut corrupt, mut epd) = (0, 0, 0, 0, 0, 0);
    for &i in &idx {
        if let Some(p) = rep.ports.get(i) {
            cin += p.egress.cells_in;
            cdrop += p.egress.cells_dropped;
            fin += p.egress.frames_in;
            fout += p.egress.frames_out;
            corrupt += p.egress.frames_corrupt;
            epd += p.egress.frames_epd;
        }
    }
    if cin > 0 {
        sample["cell_loss"] = json!(cdrop as f64 / cin as f64);
    }
    if fin > 0 {
        sample["frame_goodput"] = json!(fout as f64 / fin as f64);
    }
    sample["switch"] = json!({
        "cells_in": cin, "cells_dropped": cdrop, "frames_in": fin, "frames_out": fout,
        "frames_corrupt": corrupt, "frames_epd": epd,
        "lag_p50_us": rep.lag.p50_ns as f64 / 1e3, "lag_p99_us": rep.lag.p99_ns as f64 / 1e3,
        "late_frames": rep.late_frames, "realtime": rep.realtime,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const EBN: &str = r#"
name = "ebn"
[[host]]
name = "canberra"
[[host]]
name = "adelaide"
addr = "192.168.7.2"
[[switch]]
name = "decnis"
fabric = "output-queued"
buffer = "300 cells"
drop = "epd"
epd_threshold = "200 cells"
[[switch]]
name = "asx"
fabric = "input-fifo"
[[link]]
ends = ["canberra", "decnis"]
tech = "oc3c"
delay = "10us"
[[link]]
ends = ["decnis", "asx"]
tech = { preset = "e3", rate = "26Mbps" }
delay = "8.48ms"
[[link]]
ends = ["asx", "adelaide"]
tech = "oc3c"
delay = "10us"
"#;

    #[test]
    fn paths_collapse_to_their_bottleneck() {
        let s = Scenario::parse(EBN, "ebn.toml").unwrap();
        let (t, notes) = topology(&s, 9).unwrap();
        assert_eq!(t.seed, 9);
        let c = &t.hosts[0].link;
        // canberra reaches the core (asx, the later of two equal switches) over oc3c + the VP.
        assert_eq!(c.rate, Some(Rate::mbps(26)));
        assert_eq!(c.delay, Duration::from_micros(8490));
        assert!(c.framing.is_atm());
        assert_eq!(c.buffer, Buffer::Cells(300));
        assert_eq!(c.drop, DropPolicy::Epd { threshold: 200 });
        let a = &t.hosts[1].link;
        assert_eq!(a.rate, Some(Rate::bps(149_760_000)));
        assert_eq!(a.delay, Duration::from_micros(10));
        assert_eq!(t.hosts[1].addr, Some(Ipv4Addr::new(192, 168, 7, 2)));
        assert!(notes.iter().any(|n| n.contains("merged")), "{notes:?}");
        // The core switch's input-FIFO fabric is emulated, at the fastest port's rate.
        assert!(
            matches!(t.fabric.kind, FabricKind::InputFifo { .. }),
            "{:?}",
            t.fabric
        );
        assert_eq!(t.fabric.rate, Rate::bps(149_760_000));
        assert!(!notes.iter().any(|n| n.contains("InputFifo")), "{notes:?}");
    }
}
