//! `weft calc`: closed-form arithmetic. The logic lives in `weft_model::calc`; this file parses
//! arguments, prints tables and writes result documents (engine `model`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use weft_model::calc::ebn::{self, EbnRuns};
use weft_model::calc::fit::{self, Published};
use weft_model::calc::{self, Chain, Mathis, Md1, SandiaNote, TransferBound, hol, window};
use weft_model::host::{HostCosts, presets};
use weft_model::scenario::Figures;
use weft_model::tech::{Encap, PRESETS, Tech, Transport};
use weft_model::{Duration, Rate, Size};
use weft_report::{Engine, ResultDoc, write_atomic};

use crate::cli::usage;

/// Arguments of `weft calc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which calculation.
    #[command(subcommand)]
    pub what: What,
    /// Print the result document as JSON on stdout (and nothing else).
    #[arg(long, global = true)]
    pub json: bool,
    /// Write the result document to this file.
    #[arg(short = 'o', long = "output", global = true)]
    pub output: Option<PathBuf>,
    /// CSV export of the rows (the summary for a single answer).
    #[arg(long, value_name = "FILE", global = true)]
    pub csv: Option<PathBuf>,
}

/// The calculations.
#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Layer-by-layer rate chain: line -> frames/cells -> AAL5 -> IP -> TCP/UDP payload.
    Overhead(OverheadArgs),
    /// Bandwidth-delay product, the window a rate needs, the rate a window allows.
    Window(WindowArgs),
    /// Head-of-line blocking: the GIGAswitch formula E = (N/M)(1-(1-1/N)^M) and its rate.
    Hol(HolArgs),
    /// Queueing: output-queued switch mean wait ((N-1)/N) p/(2(1-p)) and M/D/1.
    Queue(QueueArgs),
    /// TCP throughput bound under random loss: MSS/(RTT sqrt(2p/3)) (Mathis et al.).
    Mathis(MathisArgs),
    /// List the link technology presets.
    Techs,
    /// The studies' host presets (a scenario host's `costs`): their costs, the published figures
    /// each parameter was fitted to, and the other figures the fitted hosts predict.
    Host(HostArgs),
}

/// `weft calc host`.
#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// Only this preset (default: all).
    pub name: Option<String>,
    /// A figures file to fit to instead of the published figures built into weft.
    #[arg(long, value_name = "FILE")]
    pub figures: Option<PathBuf>,
}

/// `weft calc overhead`.
#[derive(Debug, clap::Args)]
pub struct OverheadArgs {
    /// Technology preset (see `weft calc techs`).
    #[arg(long, default_value = "oc3c", value_parser = tech_arg)]
    pub tech: Tech,
    /// Encapsulation: null, llc-snap or lane (default: the preset's).
    #[arg(long, value_parser = |s: &str| s.parse::<Encap>().map_err(|e| e.to_string()))]
    pub encap: Option<Encap>,
    /// IP MTU (default: the preset's).
    #[arg(long, value_parser = crate::cmd::bounds::size("1", "65535"))]
    pub mtu: Option<Size>,
    /// IP datagram size to compute the chain for (default: the MTU).
    #[arg(long, value_parser = crate::cmd::bounds::size("1", "65535"))]
    pub size: Option<Size>,
    /// Rate available to frames or cells, overriding the preset (a shaped VP: `26Mbps`).
    #[arg(long, value_parser = crate::cmd::bounds::rate("1", "10Tbps"))]
    pub rate: Option<Rate>,
    /// Transport: tcp, tcp-ts, udp or ip.
    #[arg(long, default_value = "tcp", value_parser = |s: &str| s.parse::<Transport>().map_err(|e| e.to_string()))]
    pub transport: Transport,
    /// A figures file to read instead of the published figures built into weft, for the Sandia
    /// note on OC-3c.
    #[arg(long, value_name = "FILE")]
    pub figures: Option<PathBuf>,
}

/// `weft calc window`.
#[derive(Debug, clap::Args)]
pub struct WindowArgs {
    /// Round-trip time.
    #[arg(long, value_parser = crate::cmd::bounds::duration("1ns", "1h"))]
    pub rtt: Duration,
    /// Rate to fill (payload bits/s), for the window it needs.
    #[arg(long, value_parser = crate::cmd::bounds::rate("1", "10Tbps"))]
    pub rate: Option<Rate>,
    /// Windows to evaluate (repeatable or comma-separated): `35600,64KiB,128KiB`.
    #[arg(long, value_delimiter = ',', value_parser = crate::cmd::bounds::size("1", "1TiB"))]
    pub window: Vec<Size>,
    /// A bottleneck technology: also bound each window by its goodput.
    #[arg(long, value_parser = tech_arg)]
    pub tech: Option<Tech>,
    /// Bottleneck rate override (a shaped VP, e.g. `26Mbps`).
    #[arg(long, value_parser = crate::cmd::bounds::rate("1", "10Tbps"))]
    pub link_rate: Option<Rate>,
    /// Path MTU (default: the technology's).
    #[arg(long, value_parser = crate::cmd::bounds::size("1", "65535"))]
    pub mtu: Option<Size>,
    /// Also set the runs of the EBN study (002) from figures.toml beside the model.
    #[arg(long)]
    pub ebn: bool,
    /// A figures file to read instead of the published figures built into weft (for --ebn).
    #[arg(long, value_name = "FILE")]
    pub figures: Option<PathBuf>,
}

/// `weft calc hol`.
#[derive(Debug, clap::Args)]
pub struct HolArgs {
    /// Outputs (N).
    #[arg(long, default_value_t = 5)]
    pub outputs: u32,
    /// Contending inputs (M): `4`, `1-5` or `1,2,3`.
    #[arg(long, default_value = "1-5", value_parser = parse_counts)]
    pub inputs: Counts,
    /// The rate of an uncontended port (the GIGAswitch study: 95 Mbit/s).
    #[arg(long, default_value = "95Mbps", value_parser = crate::cmd::bounds::rate("1", "10Tbps"))]
    pub rate: Rate,
    /// Also run the simulator (weft-sim) beside the formula.
    #[arg(long)]
    pub simulate: bool,
    /// Slots per simulated point.
    #[arg(long, default_value_t = 200_000)]
    pub slots: u64,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `weft calc queue`.
#[derive(Debug, clap::Args)]
pub struct QueueArgs {
    /// Ports of the output-queued switch (N).
    #[arg(long, default_value_t = 16)]
    pub ports: u32,
    /// Loads per input (comma-separated), 0..1.
    #[arg(long, value_delimiter = ',', default_value = "0.5,0.8,0.9")]
    pub load: Vec<f64>,
    /// Slot (service) time, to print waits as time too: a duration, or a technology whose cell
    /// time is the slot (`oc3c`).
    #[arg(long, value_parser = slot_arg)]
    pub slot: Option<Duration>,
}

/// `weft calc mathis`.
#[derive(Debug, clap::Args)]
pub struct MathisArgs {
    /// Segment payload (MSS).
    #[arg(long, default_value = "1460", value_parser = crate::cmd::bounds::size("1", "65535"))]
    pub mss: Size,
    /// Round-trip time.
    #[arg(long, value_parser = crate::cmd::bounds::duration("1ns", "1h"))]
    pub rtt: Duration,
    /// Loss probability per segment (0 < p <= 1).
    #[arg(long)]
    pub loss: f64,
    /// The constant C: sqrt(3/2) = 1.22 with an ACK per segment, sqrt(3/4) = 0.87 with delayed ACKs.
    #[arg(long, default_value_t = calc::mathis::C_PER_SEGMENT_ACK)]
    pub c: f64,
}

/// Runs `weft calc`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (doc, text) = match &args.what {
        What::Overhead(a) => overhead(a)?,
        What::Window(a) => window_cmd(a)?,
        What::Hol(a) => hol_cmd(a, args.json)?,
        What::Queue(a) => queue(a)?,
        What::Mathis(a) => mathis(a)?,
        What::Techs => techs(),
        What::Host(a) => host(a)?,
    };
    crate::output::write_csv(args.csv.as_deref(), &doc)?;
    emit(&doc, &text, args.json, args.output.as_deref())
}

/// Prints the table (or the JSON) and writes the file if asked.
pub(crate) fn emit(
    doc: &ResultDoc,
    text: &str,
    json: bool,
    out: Option<&Path>,
) -> anyhow::Result<()> {
    let body = doc.to_json_pretty();
    if let Some(path) = out {
        write_atomic(path, body.as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if json {
        println!("{body}");
    } else {
        print!("{text}");
    }
    Ok(())
}

/// `--tech NAME`: a preset of `weft calc techs`.
fn tech_arg(name: &str) -> Result<Tech, String> {
    Tech::preset(name).map_err(|e| e.to_string())
}

/// `--slot`: a duration, or a technology whose cell time is the slot.
fn slot_arg(s: &str) -> Result<Duration, String> {
    match s.parse::<Duration>() {
        Ok(d) => Ok(d),
        Err(_) => tech_arg(s)?
            .cell_time()
            .ok_or_else(|| format!("{s} has no cells: give --slot as a duration")),
    }
}

fn overhead(a: &OverheadArgs) -> anyhow::Result<(ResultDoc, String)> {
    let mut tech = a.tech.clone();
    if let Some(e) = a.encap {
        tech.encap = e;
    }
    if let Some(m) = a.mtu {
        tech.mtu = m;
    }
    if let Some(r) = a.rate {
        if r.0 == 0 || r > tech.line_rate {
            return Err(usage(format!(
                "--rate must be above 0 and at most the line rate {}",
                tech.line_rate
            )));
        }
        tech.rate = r;
    }
    let transport = a.transport;
    let size = a.size.unwrap_or(tech.mtu).0;
    let chain = Chain::new(&tech, size, transport).map_err(|e| usage(e.to_string()))?;
    let mut text = chain.table();
    let mut doc = ResultDoc::new("calc.overhead", Engine::Model);
    doc.params = json!({ "tech": tech, "size": size, "transport": transport.name() });
    doc.samples = chain.layers.iter().map(|l| json!(l)).collect();
    doc.summary = json!({
        "goodput_bps": chain.goodput_bps(),
        "efficiency": chain.efficiency,
        "upper_overhead": chain.upper_overhead(),
        "cells": chain.cells,
    });
    // The paper's case: OC-3c Classical IP, 9180-byte datagrams, TCP.
    let sandia_case = tech.name == "oc3c"
        && tech.rate == Rate(149_760_000)
        && tech.encap == Encap::LlcSnap
        && size == 9180
        && matches!(transport, Transport::Tcp { .. });
    if sandia_case {
        let note = SandiaNote::new(
            &chain,
            calc::overhead::SANDIA_SONET_PAYLOAD_BPS,
            calc::overhead::SANDIA_USABLE_BPS,
        );
        text.push('\n');
        text.push_str(&note.text());
        if let Some(n) = read_figures(a.figures.as_deref())
            .ok()
            .and_then(|f| f.text("rates.note"))
        {
            text.push_str(&format!("figures.toml: {n}\n"));
        }
        doc.summary["sandia"] = json!(note);
    }
    Ok((doc, text))
}

/// The published figures: those built into weft (`data/figures.toml`), or the file given.
pub(crate) fn read_figures(path: Option<&Path>) -> anyhow::Result<Figures> {
    let Some(path) = path else {
        return Ok(Figures::bundled()?);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read the figures file {}: {e}", path.display()))?;
    Ok(Figures::parse(&text, &path.display().to_string())?)
}

fn window_cmd(a: &WindowArgs) -> anyhow::Result<(ResultDoc, String)> {
    let rtt = a.rtt;
    if rtt.0 == 0 {
        return Err(usage("--rtt must be above zero"));
    }
    let mut text = String::new();
    let mut doc = ResultDoc::new("calc.window", Engine::Model);
    doc.params = json!({ "rtt_ns": rtt.0 });
    if let Some(rate) = a.rate {
        let need = window::bdp(rate, rtt);
        text.push_str(&format!(
            "to fill {rate} over {rtt}: a window of {} B ({need}); bandwidth-delay product\n",
            need.0
        ));
        doc.summary["window_needed_bytes"] = json!(need.0);
    }
    let mut bottleneck = a.tech.clone();
    if let (Some(t), Some(r)) = (bottleneck.as_mut(), a.link_rate) {
        t.rate = r;
    }
    if !a.window.is_empty() {
        text.push_str(&format!(
            "{:>10} {:>14} {:>14} {:>14}  limit\n",
            "window B", "window Mbit/s", "link Mbit/s", "bound Mbit/s"
        ));
    }
    for w in &a.window {
        let wr = window::window_rate(*w, rtt);
        let mut sample = json!({ "window_bytes": w.0, "window_bps": wr.0 });
        match &bottleneck {
            Some(t) => {
                let mtu = a.mtu.unwrap_or(t.mtu).0;
                let b = TransferBound::new(t, mtu, Transport::Tcp { options: 0 }, *w, rtt)
                    .map_err(|e| usage(e.to_string()))?;
                text.push_str(&format!(
                    "{:>10} {:>14.3} {:>14.3} {:>14.3}  {:?}\n",
                    w.0,
                    wr.0 as f64 / 1e6,
                    b.link_bps as f64 / 1e6,
                    b.bound_bps as f64 / 1e6,
                    b.limit
                ));
                sample = json!(b);
            }
            None => text.push_str(&format!("{:>10} {:>14.3}\n", w.0, wr.0 as f64 / 1e6)),
        }
        doc.samples.push(sample);
    }
    if a.ebn {
        let figures = read_figures(a.figures.as_deref())?;
        let (t, rows) = ebn_runs(&figures)?;
        text.push_str(&t);
        doc.summary["ebn_runs"] = Value::Array(rows);
    }
    Ok((doc, text))
}

/// The EBN study's runs (figures.toml `dhpc_ebn.runs`, set out by `weft_model::calc::ebn`) as a
/// table and JSON rows.
fn ebn_runs(f: &Figures) -> anyhow::Result<(String, Vec<Value>)> {
    let EbnRuns { rtt, runs } = ebn::ebn_runs(f)?;
    let mut text = format!(
        "\nEBN runs (002), RTT {rtt}; paper Mbps = KiB/s * 8 * 1.024 * 53/48\n{:>8} {:>5} {:>5} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>10}\n",
        "window",
        "mss",
        "vp",
        "paperKiB",
        "paperMbps",
        "ourMbps",
        "modelKiB",
        "limit",
        "win/link",
        "rtt*"
    );
    let mut rows = Vec::new();
    for r in &runs {
        let b = &r.model;
        text.push_str(&format!(
            "{:>8} {:>5} {:>5} {:>9} {:>9} {:>9.2} {:>9.0} {:>8} {:>8.3} {:>10}\n",
            r.window_bytes,
            r.mss_bytes,
            r.vp_mbps,
            r.paper_payload_kib_s,
            r.paper_mbps.map_or("-".into(), |x| format!("{x:.2}")),
            r.recomputed_paper_mbps,
            b.payload_kib_s,
            format!("{:?}", b.limit).to_lowercase(),
            b.window_bps as f64 / b.link_bps as f64,
            Duration(r.implied_rtt_ns).to_string(),
        ));
        rows.push(serde_json::to_value(r)?);
    }
    text.push_str(
        "modelKiB = the bound `weft run` gives the run's scenario (ebn-vp26, ebn-vp33): the whole \
         segments a 1995 BSD sender keeps in flight over the round trip plus the two segment times \
         a delayed ACK waits for, or the VP's payload rate for the run's segments; here over the \
         ping's 17 ms, where ebn-vp33 makes the DECNIS a router (the links' 16 ms and its time: \
         run 3 3094.6).\n\
         win/link = that window's rate against the link's TCP payload rate: near 1 the window \
         barely covers the path, and any extra delay makes it the limit.\n\
         rtt* = window in flight / measured rate: the round at which the window alone would \
         explain the measurement.\n",
    );
    Ok((text, rows))
}

/// Counts of contending inputs: `4`, `1-5` or `1,2,3`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts(pub Vec<u32>);

fn parse_counts(s: &str) -> Result<Counts, String> {
    let bad = || {
        format!("cannot read {s:?}: expected a count, a range such as 1-5, or a list such as 1,2,4")
    };
    if let Some((a, b)) = s.split_once('-') {
        let (a, b): (u32, u32) = (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        );
        if a == 0 || b < a || b - a > 10_000 {
            return Err(bad());
        }
        return Ok(Counts((a..=b).collect()));
    }
    let v: Vec<u32> = s
        .split(',')
        .map(|x| x.trim().parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if v.is_empty() || v.contains(&0) {
        return Err(bad());
    }
    Ok(Counts(v))
}

fn hol_cmd(a: &HolArgs, json_out: bool) -> anyhow::Result<(ResultDoc, String)> {
    if a.outputs == 0 {
        return Err(usage("--outputs must be at least 1"));
    }
    let inputs = &a.inputs.0;
    let rows = hol::gigaswitch_table(a.outputs, inputs, a.rate.0 as f64);
    let mut doc = ResultDoc::new("calc.hol", Engine::Model);
    doc.params = json!({ "outputs": a.outputs, "inputs": inputs, "rate_bps": a.rate.0, "simulate": a.simulate });
    let sim: Option<ResultDoc> = a.simulate.then(|| {
        let max = inputs.iter().copied().max().unwrap_or(1) as usize;
        if !json_out {
            eprintln!(
                "simulating 1..={max} inputs x {} outputs, {} slots each ...",
                a.outputs, a.slots
            );
        }
        weft_sim::experiments::contention(
            max,
            a.outputs as usize,
            a.slots,
            a.rate.as_mbps_f64(),
            a.seed,
            |_| {},
        )
    });
    let sim_at = |m: u32| -> Option<f64> {
        sim.as_ref()?
            .samples
            .iter()
            .find(|s| s.get("inputs").and_then(Value::as_u64) == Some(m as u64))?
            .get("efficiency")?
            .as_f64()
    };
    let mut text = format!(
        "E = (N/M)(1-(1-1/N)^M), N = {} outputs, at {} per uncontended port; FIFO E is the exact \
         saturation throughput of FIFO inputs (Markov chain)\n{:>6} {:>10} {:>12} {:>10} {:>12}{}\n",
        a.outputs,
        a.rate,
        "M",
        "E",
        "rate Mbit/s",
        "FIFO E",
        "FIFO Mbit/s",
        if a.simulate {
            format!(" {:>10} {:>12} {:>8}", "sim E", "sim Mbit/s", "E - sim")
        } else {
            String::new()
        }
    );
    let mbps = a.rate.as_mbps_f64();
    for r in &rows {
        let mut line = format!(
            "{:>6} {:>10.4} {:>12.2} {:>10} {:>12}",
            r.inputs,
            r.efficiency,
            r.rate_bps / 1e6,
            r.fifo_exact.map_or("-".into(), |x| format!("{x:.4}")),
            r.fifo_exact
                .map_or("-".into(), |x| format!("{:.2}", x * mbps)),
        );
        let mut sample = json!(r);
        if let Some(e) = sim_at(r.inputs) {
            line.push_str(&format!(
                " {:>10.4} {:>12.2} {:>8.4}",
                e,
                e * mbps,
                r.efficiency - e
            ));
            sample["sim_efficiency"] = json!(e);
        }
        text.push_str(&line);
        text.push('\n');
        doc.samples.push(sample);
    }
    if a.simulate {
        text.push_str(
            "The formula ignores that a blocked packet stays at the head of its queue; the \
             simulated FIFO keeps it, so it sits below the formula (E - sim) and on the exact \
             FIFO chain.\n",
        );
    }
    text.push_str(&format!(
        "N x N FIFO saturation tends to 2 - sqrt(2) = {:.4} as N grows.\n",
        hol::SATURATION_LIMIT
    ));
    doc.summary = json!({ "limit": hol::SATURATION_LIMIT, "sim": sim.map(|d| d.samples) });
    Ok((doc, text))
}

fn queue(a: &QueueArgs) -> anyhow::Result<(ResultDoc, String)> {
    if a.ports == 0 {
        return Err(usage("--ports must be at least 1"));
    }
    let slot = a.slot;
    let mut doc = ResultDoc::new("calc.queue", Engine::Model);
    doc.params = json!({ "ports": a.ports, "loads": a.load, "slot_ns": slot.map(|d| d.0) });
    let mut text = format!(
        "output-queued {n}x{n}, Bernoulli arrivals: mean wait ((N-1)/N) p/(2(1-p)) slots; M/D/1 beside it\n{:>6} {:>12} {:>12} {:>12}{}\n",
        "load",
        "OQ wait",
        "M/D/1 wait",
        "M/D/1 Lq",
        if slot.is_some() {
            format!(" {:>12}", "OQ wait time")
        } else {
            String::new()
        },
        n = a.ports,
    );
    for &p in &a.load {
        let oq = calc::output_queued_wait(a.ports, p)
            .ok_or_else(|| usage(format!("load {p} is not between 0 and 1")))?;
        let md1 = Md1::new(p);
        let mut line = format!(
            "{:>6} {:>12.4} {:>12} {:>12}",
            p,
            oq,
            md1.map_or("inf".into(), |q| format!("{:.4}", q.wait)),
            md1.map_or("inf".into(), |q| format!("{:.4}", q.queue_len)),
        );
        if let Some(d) = slot {
            line.push_str(&format!(
                " {:>12}",
                Duration::from_secs_f64(oq * d.as_secs_f64()).to_string()
            ));
        }
        text.push_str(&line);
        text.push('\n');
        doc.samples
            .push(json!({ "load": p, "mean_wait_slots": oq, "md1": md1 }));
    }
    Ok((doc, text))
}

fn mathis(a: &MathisArgs) -> anyhow::Result<(ResultDoc, String)> {
    let m = Mathis::new(a.mss.0, a.rtt.as_secs_f64(), a.loss, a.c)
        .ok_or_else(|| usage("need --mss > 0, --rtt > 0, 0 < --loss <= 1 and --c > 0"))?;
    let mut doc = ResultDoc::new("calc.mathis", Engine::Model);
    doc.params = json!({ "mss": a.mss.0, "rtt_ns": a.rtt.0, "loss": a.loss, "c": a.c });
    doc.summary = json!(m);
    let text = format!(
        "rate <= (MSS/RTT) * C/sqrt(p) = ({} B / {}) * {:.4}/sqrt({}) = {}\n\
         (C = sqrt(3/2) = 1.2247 gives MSS/(RTT sqrt(2p/3)); sqrt(3/4) = 0.866 with delayed ACKs)\n",
        a.mss.0,
        a.rtt,
        a.c,
        a.loss,
        Rate(m.rate_bps.min(u64::MAX as f64) as u64)
    );
    Ok((doc, text))
}

fn techs() -> (ResultDoc, String) {
    let mut doc = ResultDoc::new("calc.techs", Engine::Model);
    let mut text = String::new();
    for p in PRESETS {
        let t = p.tech();
        text.push_str(&format!("{:<14} {}\n{:<14} {}\n", p.name, p.about, "", t));
        doc.samples
            .push(json!({ "name": p.name, "aliases": p.aliases, "about": p.about, "tech": t }));
    }
    (doc, text)
}

/// `weft calc host`: each preset's costs and fitted parameters, then the predictions of the
/// fit (every figure the fitted hosts bear on that no parameter was fitted to), with the miss.
fn host(a: &HostArgs) -> anyhow::Result<(ResultDoc, String)> {
    let all = presets::all();
    let chosen: Vec<&HostCosts> = all
        .iter()
        .filter(|h| a.name.as_deref().is_none_or(|n| n == h.name))
        .collect();
    if chosen.is_empty() {
        let names: Vec<&str> = all.iter().map(|h| h.name).collect();
        return Err(usage(format!(
            "no host preset {:?}: the presets are {}",
            a.name.as_deref().unwrap_or_default(),
            names.join(", ")
        )));
    }
    let figures = read_figures(a.figures.as_deref())?;
    let report = fit::fit(&Published::from_figures(&figures)?);
    let mut doc = ResultDoc::new("calc.host", Engine::Model);
    let mut text = String::new();
    let opt = |r: Option<Rate>| r.map_or("-".to_string(), |r| r.to_string());
    for h in chosen {
        let fitted: Vec<&fit::Fitted> = report.fitted.iter().filter(|f| f.host == h.name).collect();
        text.push_str(&format!(
            "{}\n  per call      send {:.1} us, receive {:.1} us\n  per packet    send {:.1} us, \
             receive {:.1} us\n  per byte      copy {:.3} ns x {} sent, x {} received; checksum \
             {:.3} ns; other send {:.3} ns, receive {:.3} ns\n  limits        nic {}, bus {}, \
             disk {}\n",
            h.name,
            h.send_call_ns / 1e3,
            h.recv_call_ns / 1e3,
            h.send_packet_ns / 1e3,
            h.recv_packet_ns / 1e3,
            h.copy_ns_per_byte,
            h.send_copies,
            h.recv_copies,
            h.checksum_ns_per_byte,
            h.send_other_ns_per_byte,
            h.recv_other_ns_per_byte,
            opt(h.nic),
            opt(h.bus),
            opt(h.disk),
        ));
        for f in &fitted {
            text.push_str(&format!(
                "  fitted        {} = {:.3} {} from {}\n",
                f.parameter,
                f.value,
                f.unit,
                f.from.join(", ")
            ));
        }
        doc.samples.push(json!({
            "name": h.name,
            "send_call_ns": h.send_call_ns,
            "recv_call_ns": h.recv_call_ns,
            "send_packet_ns": h.send_packet_ns,
            "recv_packet_ns": h.recv_packet_ns,
            "copy_ns_per_byte": h.copy_ns_per_byte,
            "send_copies": h.send_copies,
            "recv_copies": h.recv_copies,
            "checksum_ns_per_byte": h.checksum_ns_per_byte,
            "send_other_ns_per_byte": h.send_other_ns_per_byte,
            "recv_other_ns_per_byte": h.recv_other_ns_per_byte,
            "nic_bps": h.nic.map(|r| r.0),
            "bus_bps": h.bus.map(|r| r.0),
            "disk_bps": h.disk.map(|r| r.0),
            "fitted": fitted.iter().map(|f| json!({
                "parameter": f.parameter, "value": f.value, "unit": f.unit, "from": f.from,
            })).collect::<Vec<_>>(),
        }));
    }
    text.push_str(&format!(
        "\nfigures the fit was made to (fit:) and the others it predicts\n{:<58} {:>9} {:>9} {:<7} {:>7}  what\n",
        "figure", "published", "model", "unit", "miss"
    ));
    let mut predictions = Vec::new();
    for p in &report.predicted {
        text.push_str(&format!(
            "{:<58} {:>9.4} {:>9.4} {:<7} {:>+6.1}%  {}\n",
            p.figure,
            p.published,
            p.predicted,
            p.unit,
            100.0 * p.miss(),
            p.what
        ));
        predictions.push(json!({
            "figure": p.figure, "what": p.what, "published": p.published,
            "predicted": p.predicted, "unit": p.unit, "miss": p.miss(),
        }));
    }
    doc.summary = json!({ "predictions": predictions });
    Ok((doc, text))
}
