//! `weft trace`: capture analysis (utilisation, flows, two-point latency) and live sampling.
//!
//! Result documents (for `weft plot` and `weft report`):
//! - `trace.util`: `samples` are bins `{t_ns, t_s, wire_bytes, packets, util, util_smooth}`
//!   (utilisation as a fraction; Figure 2 of the Sandia study is `util_smooth` against `t_s`);
//!   `summary` has `mean_util`, `histogram` / `histogram_frac` / `histogram_smooth_frac` over
//!   `histogram_bins_pct` (Figure 3), `above[]` (`threshold_pct`, `frac_time_raw`,
//!   `frac_time_smooth`, `longest_runs`), `mix`, `talkers`, and `partial` / `error`.
//! - `trace.latency`: `samples` are exchanges `{size, a_ns, b_ns, c_ns, d_ns, fwd_ns, ret_ns}`;
//!   `summary.per_size[]` holds statistics of each part and `clock_offset_ns`.
//! - `trace.flows`: `samples` are flows (5-tuple, bytes, packets, duration, rate, RTTs).
//! - `weft trace live` writes JSON lines instead: `{"type":"bin",...}` per bin, then one
//!   `{"type":"summary",...}`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use serde_json::{Value, json};
use weft_model::{Duration, Rate};
use weft_report::{Engine, ResultDoc, write_atomic, write_atomic_with};
use weft_trace::flows::{FlowLimits, FlowTable, SortBy};
use weft_trace::latency;
use weft_trace::live::{self, Direction, LiveConfig};
use weft_trace::tech::Framing;
use weft_trace::util::{UtilConfig, UtilReport};
use weft_trace::{CaptureError, CaptureReader, Outcome};

use crate::progress::Progress;

/// Prints a line to stdout, ignoring a closed pipe (`weft trace util f | head`) rather than
/// panicking.
macro_rules! out {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// Arguments of `weft trace`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to analyse.
    #[command(subcommand)]
    pub cmd: TraceCmd,
}

/// The `weft trace` subcommands.
#[derive(Debug, Subcommand)]
pub enum TraceCmd {
    /// Wire utilisation over time (the Sandia Sniffer method): series, smoothing, histogram in
    /// 10% bins, time above thresholds, protocol/port mix, top talkers.
    Util(UtilArgs),
    /// Sample an interface's utilisation live, one JSON line per bin, until --duration or Ctrl-C.
    Live(LiveArgs),
    /// Two captures of the same echo traffic (near the client, near the server): split the round
    /// trip into client, switch (forward, return) and server parts per packet size.
    Latency(LatencyArgs),
    /// Per-flow summary: 5-tuple, bytes, packets, duration, rate, retransmissions, RTT.
    Flows(FlowsArgs),
    /// Write a synthetic pcap (Ethernet/IPv4/UDP frames at a constant rate), for tests and benches.
    Synth(SynthArgs),
}

/// Output options shared by the analyses.
#[derive(Debug, clap::Args)]
pub struct Output {
    /// Print the JSON result document on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON result document to this file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `weft trace util`.
#[derive(Debug, clap::Args)]
pub struct UtilArgs {
    /// Capture file (pcap or pcapng, optionally gzipped); "-" reads standard input.
    pub file: PathBuf,
    /// Link rate the utilisation is relative to (e.g. 10Mbps); defaults to the --tech rate.
    #[arg(long, value_name = "RATE", value_parser = crate::cmd::bounds::rate("1", "10Tbps"))]
    pub link_rate: Option<Rate>,
    /// Technology preset of `weft calc techs` whose framing is charged per packet (ethernet10,
    /// fddi, oc3c, ...); without it the recorded lengths are used.
    #[arg(long, value_name = "TECH")]
    pub tech: Option<String>,
    /// Sample bin.
    #[arg(long, default_value = "10s", value_parser = crate::cmd::bounds::duration("1us", "1d"))]
    pub bin: Duration,
    /// Smoothing window (trailing moving average), rounded to whole bins.
    #[arg(long, default_value = "5m", value_parser = crate::cmd::bounds::duration("0", "30d"))]
    pub smooth: Duration,
    /// Thresholds in percent, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "30,50")]
    pub above: Vec<f64>,
    /// How many top ports, talkers and runs to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Leave the per-bin samples out of the JSON document.
    #[arg(long)]
    pub no_samples: bool,
    /// Only packets of this pcapng interface (numbered from 0 in the file).
    #[arg(long, value_name = "N")]
    pub iface: Option<u32>,
    /// Also write the series as CSV (t_s, util, util_smooth, wire_bytes, packets).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Hosts tracked for the talker table at most; the bytes of the others are counted apart
    /// (`hosts_untracked_bytes`).
    #[arg(long, default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    pub max_hosts: u64,
    #[command(flatten)]
    pub frags: FragArgs,
    #[command(flatten)]
    pub out: Output,
}

/// The bound of the IP fragment table (its key comes from the capture).
#[derive(Debug, clap::Args)]
pub struct FragArgs {
    /// IP datagrams whose first fragment's ports are remembered for their later fragments; past
    /// it the table is emptied, and what that forgot is counted (`fragment_table`).
    #[arg(long, default_value_t = weft_trace::mix::FRAG_TABLE_MAX as u64, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    pub max_fragments: u64,
}

/// Arguments of `weft trace live`.
#[derive(Debug, clap::Args)]
pub struct LiveArgs {
    /// Interface (e.g. eth0, lo).
    pub iface: String,
    /// Link rate; defaults to the interface's reported speed.
    #[arg(long, value_name = "RATE", value_parser = crate::cmd::bounds::rate("1", "10Tbps"))]
    pub link_rate: Option<Rate>,
    /// Sample bin.
    #[arg(long, default_value = "10s", value_parser = crate::cmd::bounds::duration("1us", "1d"))]
    pub bin: Duration,
    /// Smoothing window.
    #[arg(long, default_value = "5m", value_parser = crate::cmd::bounds::duration("0", "30d"))]
    pub smooth: Duration,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(long, value_parser = crate::cmd::bounds::duration("1ms", "366d"))]
    pub duration: Option<Duration>,
    /// Directions counted: rx, tx or both.
    #[arg(long, default_value = "both", value_parser = ["rx", "tx", "both"])]
    pub direction: String,
    /// Also count packets from an AF_PACKET socket (needs CAP_NET_RAW).
    #[arg(long)]
    pub capture: bool,
    /// Thresholds for the closing summary, percent.
    #[arg(long, value_delimiter = ',', default_value = "30,50")]
    pub above: Vec<f64>,
    /// Append the JSON lines to this file instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `weft trace latency`.
#[derive(Debug, clap::Args)]
pub struct LatencyArgs {
    /// Capture taken near the echo client.
    pub a: PathBuf,
    /// Capture taken near the echo server.
    pub b: PathBuf,
    /// Only echo traffic to or from this port.
    #[arg(long)]
    pub port: Option<u16>,
    /// Leave the per-exchange samples out of the JSON document.
    #[arg(long)]
    pub no_samples: bool,
    /// CSV export of the exchanges.
    #[command(flatten)]
    pub csv: crate::output::CsvArg,
    /// Requests waiting for their reply at once, per capture; past it they are given up as
    /// unanswered.
    #[arg(long, default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    pub max_pending: u64,
    /// Exchanges kept per capture for the breakdown; later ones are counted as left out.
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    pub max_exchanges: u64,
    #[command(flatten)]
    pub out: Output,
}

/// Arguments of `weft trace flows`.
#[derive(Debug, clap::Args)]
pub struct FlowsArgs {
    /// Capture file; "-" reads standard input.
    pub file: PathBuf,
    /// Sort by bytes, packets, duration or rate (largest first).
    #[arg(long, default_value = "bytes", value_parser = ["bytes", "packets", "duration", "rate"])]
    pub sort: String,
    /// Rows in the table (all rows go to JSON and CSV).
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Write the flows as CSV to this file ("-" for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Flows tracked at most (some 130 bytes each, 450 for TCP); the packets and bytes of the
    /// others are counted apart (`untracked_packets`, `untracked_bytes`).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 32))]
    pub max_flows: usize,
    #[command(flatten)]
    pub frags: FragArgs,
    #[command(flatten)]
    pub out: Output,
}

/// Arguments of `weft trace synth`.
#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    /// Output file ("-" for stdout).
    pub file: PathBuf,
    /// Approximate size of the capture (e.g. 1GB, as bytes with units).
    #[arg(long, default_value = "100MB", value_parser = crate::cmd::bounds::size("0", "1024TiB"))]
    pub size: weft_model::Size,
    /// Frame length in bytes.
    #[arg(long, default_value_t = 1000)]
    pub frame: usize,
    /// Offered load on --link-rate, percent (sets the gap between frames).
    #[arg(long, default_value_t = 40.0)]
    pub load: f64,
    /// Link rate the load refers to.
    #[arg(long, default_value = "10Mbps", value_parser = crate::cmd::bounds::rate("1", "10Tbps"))]
    pub link_rate: Rate,
    /// Distinct source hosts.
    #[arg(long, default_value_t = 16)]
    pub hosts: u8,
    /// Give every packet a UDP flow of its own (distinct source address and port), for the flow
    /// table's benchmark: a capture of N one-packet flows.
    #[arg(long)]
    pub flows: bool,
}

/// Runs `weft trace`.
pub fn run(args: Args) -> anyhow::Result<()> {
    match args.cmd {
        TraceCmd::Util(a) => util(a),
        TraceCmd::Live(a) => live_cmd(a),
        TraceCmd::Latency(a) => latency_cmd(a),
        TraceCmd::Flows(a) => flows(a),
        TraceCmd::Synth(a) => synth(a),
    }
}

/// Opens a capture file, or standard input for "-". A file large enough to take a while
/// (64 MiB and more) gets a progress bar over its bytes, kept as long as the second value lives.
fn open(path: &Path) -> anyhow::Result<(CaptureReader, Option<Progress>)> {
    if path.as_os_str() == "-" {
        let r = CaptureReader::new(std::io::stdin()).context("reading standard input")?;
        return Ok((r, None));
    }
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    if crate::progress::enabled() && len >= 64 << 20 {
        let f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into());
        let bar = Progress::bytes("trace", len);
        bar.message(name);
        let r = CaptureReader::new(bar.wrap_read(f))
            .with_context(|| format!("reading {}", path.display()))?;
        return Ok((r, Some(bar)));
    }
    let r = CaptureReader::open(path).with_context(|| format!("reading {}", path.display()))?;
    Ok((r, None))
}

/// Emits the document as asked, then turns a read error into the command's error (exit 1)
/// after the partial result has been shown.
fn emit(
    doc: &ResultDoc,
    out: &Output,
    table: impl FnOnce(),
    error: Option<&CaptureError>,
    path: &Path,
) -> anyhow::Result<()> {
    if let Some(p) = &out.output {
        write_atomic(p, doc.to_json_pretty().as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if out.json {
        out!("{}", doc.to_json_pretty());
    } else {
        table();
    }
    match error {
        Some(e) => Err(anyhow::anyhow!(
            "{}: {e} (the results above cover the packets before it and are partial)",
            path.display()
        )),
        None => Ok(()),
    }
}

fn partial_fields<T>(o: &Outcome<T>) -> Value {
    json!({
        "partial": o.partial(),
        "error": o.error.as_ref().map(|e| e.to_string()),
        "error_offset": o.error.as_ref().map(|e| e.offset),
        "packets_read": o.packets,
        "bytes_read": o.bytes_read,
    })
}

fn merge(a: &mut Value, b: Value) {
    if let (Value::Object(a), Value::Object(b)) = (a, b) {
        a.extend(b);
    }
}

fn util(a: UtilArgs) -> anyhow::Result<()> {
    let framing = match &a.tech {
        Some(name) => Framing::preset(name).map_err(|e| crate::cli::usage(e.to_string()))?,
        None => Framing::Captured,
    };
    let link_rate = match (a.link_rate, &framing) {
        (Some(r), _) => r,
        (None, Framing::Tech(t)) => t.rate,
        (None, Framing::Captured) => {
            return Err(crate::cli::usage(
                "give --link-rate (e.g. 10Mbps) or --tech (e.g. ethernet10)",
            ));
        }
    };
    if link_rate.0 == 0 || a.bin.as_nanos() == 0 {
        return Err(crate::cli::usage("--link-rate and --bin must be positive"));
    }
    let cfg = UtilConfig {
        link_rate,
        framing: framing.clone(),
        bin: a.bin,
        smooth: a.smooth,
        above: a.above.clone(),
        top: a.top,
        max_hosts: a.max_hosts as usize,
        max_fragments: a.frags.max_fragments as usize,
        ..UtilConfig::sandia(link_rate, Framing::Captured)
    };
    let (mut reader, _bar) = open(&a.file)?;
    let o = match a.iface {
        None => weft_trace::analyse_util(&mut reader, cfg),
        Some(n) => {
            let mut an = weft_trace::util::UtilAnalyzer::new(cfg);
            let error = weft_trace::for_each_packet(&mut reader, |p, info| {
                if p.iface == n {
                    an.add(p.ts_ns, p.orig_len, p.linktype, info);
                }
            });
            Outcome {
                result: an.finish(),
                packets: reader.packets(),
                bytes_read: reader.offset(),
                error,
            }
        }
    };
    if let Some(p) = &a.csv {
        let rows: Vec<Value> = o
            .result
            .samples
            .iter()
            .map(|x| {
                json!({"t_s": x.t_ns as f64 / 1e9, "util": x.util, "util_smooth": x.util_smooth,
                       "wire_bytes": x.wire_bytes, "packets": x.packets})
            })
            .collect();
        let cols = ["t_s", "util", "util_smooth", "wire_bytes", "packets"];
        let text = weft_report::csv::rows_to_csv(&rows, &cols)?;
        weft_report::csv::write_csv(p, &text)?;
    }
    let r = &o.result;
    let span_ns = r.samples.len() as u64 * r.bin_ns;
    if a.smooth.as_nanos() > span_ns && !r.samples.is_empty() {
        eprintln!(
            "weft trace util: warning: the smoothing window ({}) is longer than the capture \
             ({:.1}s): every smoothed bin averages the whole capture; give --smooth shorter \
             than the capture (e.g. --smooth {}s)",
            a.smooth,
            span_ns as f64 / 1e9,
            (span_ns / 4 / 1_000_000_000).max(1)
        );
    }
    let mut doc = ResultDoc::new("trace.util", Engine::Real);
    doc.params = json!({
        "file": a.file.display().to_string(),
        "format": reader.format(),
        "gzip": reader.gzip(),
        "link_rate_bps": link_rate.0,
        "tech": a.tech,
        "framing": framing.name(),
        "bin_ns": r.bin_ns,
        "smooth_ns": a.smooth.as_nanos(),
        "smooth_bins": r.smooth_bins,
        "above_pct": a.above,
        "iface": a.iface,
    });
    if !a.no_samples {
        doc.samples = r
            .samples
            .iter()
            .map(|s| json!({"t_ns": s.t_ns, "t_s": s.t_ns as f64 / 1e9, "wire_bytes": s.wire_bytes, "packets": s.packets, "util": s.util, "util_smooth": s.util_smooth}))
            .collect();
    }
    let mut summary = serde_json::to_value(r)?;
    if let Value::Object(m) = &mut summary {
        m.remove("samples");
        m.insert(
            "histogram_bins_pct".into(),
            json!([0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]),
        );
    }
    merge(&mut summary, partial_fields(&o));
    doc.summary = summary;
    emit(
        &doc,
        &a.out,
        || print_util(r, &o),
        o.error.as_ref(),
        &a.file,
    )
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

fn print_util(r: &UtilReport, o: &Outcome<UtilReport>) {
    let span = r.samples.len() as u64 * r.bin_ns;
    out!(
        "{} packets, {} bytes ({} on the wire) in {} bins of {}s ({:.1}s) against {}{}",
        r.packets,
        r.bytes,
        r.wire_bytes,
        r.samples.len(),
        r.bin_ns as f64 / 1e9,
        span as f64 / 1e9,
        Rate(r.link_rate_bps),
        if o.partial() { " [PARTIAL]" } else { "" }
    );
    if r.out_of_range_packets > 0 {
        out!(
            "warning: {} packets had timestamps before the first bin or implausibly far after it and were not counted",
            r.out_of_range_packets
        );
    }
    out!(
        "mean utilisation {}   peak bin {}   peak smoothed ({} bins) {}",
        pct(r.mean_util),
        pct(r.peak_util),
        r.smooth_bins,
        pct(r.peak_util_smooth)
    );
    out!("histogram of bins (raw / smoothed):");
    for i in 0..10 {
        out!(
            "  {:>3}-{:<3}% {:>8} {:>8} {:>8}",
            i * 10,
            (i + 1) * 10,
            r.histogram[i],
            pct(r.histogram_frac[i]),
            pct(r.histogram_smooth_frac[i])
        );
    }
    for ab in &r.above {
        out!(
            "above {}%: {} of the time (raw), {} (smoothed); {} runs, longest {:.0}s",
            ab.threshold_pct,
            pct(ab.frac_time_raw),
            pct(ab.frac_time_smooth),
            ab.runs_count,
            ab.longest_runs
                .first()
                .map_or(0.0, |x| x.duration_ns as f64 / 1e9)
        );
    }
    let m = &r.mix;
    let share = |b: u64| {
        pct(if r.bytes == 0 {
            0.0
        } else {
            b as f64 / r.bytes as f64
        })
    };
    out!(
        "mix by bytes: tcp {} udp {} icmp {} other-ip {} non-ip {}; fragments {} packets",
        share(m.tcp.bytes),
        share(m.udp.bytes),
        share(m.icmp.bytes),
        share(m.other_ip.bytes),
        share(m.non_ip.bytes),
        m.fragments.packets
    );
    out!(
        "services: nfs {} x11 {} ftp-data {}",
        share(m.nfs.bytes),
        share(m.x11.bytes),
        share(m.ftp_data.bytes)
    );
    for p in &m.top_ports {
        out!(
            "  {}/{:<5} {:>12} bytes {:>9} packets",
            p.proto,
            p.port,
            p.count.bytes,
            p.count.packets
        );
    }
    out!("top talkers:");
    for t in &r.talkers {
        out!(
            "  {:<39} tx {:>12} rx {:>12} bytes",
            t.addr.to_string(),
            t.tx_bytes,
            t.rx_bytes
        );
    }
}

fn live_cmd(a: LiveArgs) -> anyhow::Result<()> {
    let link_rate = match a.link_rate.or_else(|| live::link_speed(&a.iface)) {
        Some(r) if r.0 > 0 => r,
        _ => {
            return Err(crate::cli::usage(format!(
                "{} reports no speed: give --link-rate (e.g. 10Gbps)",
                a.iface
            )));
        }
    };
    if a.bin.as_nanos() < 1_000_000 {
        return Err(crate::cli::usage("--bin must be at least 1ms"));
    }
    live::Counters::read(&a.iface)
        .with_context(|| format!("reading the counters of interface {}", a.iface))?;
    let cfg = LiveConfig {
        iface: a.iface.clone(),
        link_rate,
        bin: a.bin,
        smooth: a.smooth,
        duration: a.duration,
        direction: match a.direction.as_str() {
            "rx" => Direction::Rx,
            "tx" => Direction::Tx,
            _ => Direction::Both,
        },
        capture: a.capture,
        above: a.above.clone(),
    };
    live::install_sigint_handler();
    let mut sink: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("opening {}", p.display()))?,
        ),
        None => Box::new(std::io::stdout()),
    };
    let report = live::run(&cfg, &mut sink, &live::interrupted).context("live sampling")?;
    let mut summary = serde_json::to_value(&report)?;
    if let Value::Object(m) = &mut summary {
        for k in [
            "samples",
            "mix",
            "talkers",
            "hosts_seen",
            "hosts_untracked_bytes",
            "framing",
        ] {
            m.remove(k);
        }
        m.insert("type".into(), json!("summary"));
        m.insert("iface".into(), json!(a.iface));
        m.insert("interrupted".into(), json!(live::interrupted()));
    }
    writeln!(sink, "{}", serde_json::to_string(&summary)?)?;
    sink.flush()?;
    Ok(())
}

fn latency_cmd(a: LatencyArgs) -> anyhow::Result<()> {
    let (mut ra, _bar_a) = open(&a.a)?;
    let (mut rb, _bar_b) = open(&a.b)?;
    let limits = latency::LatencyLimits {
        max_pending: a.max_pending as usize,
        max_exchanges: a.max_exchanges as usize,
    };
    let (pa, ea) = latency::pairs_within(&mut ra, a.port, limits);
    let (pb, eb) = latency::pairs_within(&mut rb, a.port, limits);
    let r = latency::breakdown(pa, pb);
    let one_point = taken_at_one_point(&r.exchanges);
    let mut doc = ResultDoc::new("trace.latency", Engine::Real);
    doc.params =
        json!({"a": a.a.display().to_string(), "b": a.b.display().to_string(), "port": a.port});
    if !a.no_samples {
        doc.samples = r
            .exchanges
            .iter()
            .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
            .collect();
    }
    let mut summary = serde_json::to_value(&r)?;
    if let Value::Object(m) = &mut summary {
        m.remove("exchanges");
        m.insert("partial".into(), json!(ea.is_some() || eb.is_some()));
        m.insert("one_point".into(), json!(one_point));
        m.insert("error_a".into(), json!(ea.as_ref().map(|e| e.to_string())));
        m.insert("error_b".into(), json!(eb.as_ref().map(|e| e.to_string())));
    }
    doc.summary = summary;
    a.csv.write(&doc)?;
    let err = ea
        .as_ref()
        .map(|e| (e, &a.a))
        .or(eb.as_ref().map(|e| (e, &a.b)));
    let us = |v: f64| v / 1e3;
    emit(
        &doc,
        &a.out,
        || {
            out!(
                "{} exchanges matched ({} only in A, {} only in B); clock offset B-A {:.3} us, estimated as {}",
                r.matched,
                r.unmatched_a,
                r.unmatched_b,
                r.clock_offset_ns as f64 / 1e3,
                r.clock_offset_method
            );
            if r.swapped_suspected && !one_point {
                out!("warning: round trips at A are shorter than at B: are the captures swapped?");
            }
            if one_point {
                out!(
                    "the round trips at A are no longer than at B (median A-B {:.2} us): both \
                     captures were taken at one point (two captures of one interface?), so \
                     there is no switch between them and the client / switch / server split \
                     is meaningless; capture A beside the client and B beside the server",
                    median_a_minus_b_ns(&r.exchanges) as f64 / 1e3
                );
                return;
            }
            out!("medians in microseconds (the GIGAswitch study's A, B, C, D):");
            out!(
                "{:>6} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
                "size",
                "n",
                "A rtt@cli",
                "B server",
                "C client",
                "D",
                "A-B sw",
                "D-C sw",
                "sw fwd",
                "sw ret"
            );
            for s in &r.per_size {
                out!(
                    "{:>6} {:>5} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2}",
                    s.size,
                    s.rtt_client_tap.n,
                    us(s.rtt_client_tap.median_ns),
                    us(s.server.median_ns),
                    us(s.client.median_ns),
                    us(s.d.median_ns),
                    us(s.switch_rtt.median_ns),
                    us(s.switch_rtt_echo.median_ns),
                    us(s.switch_fwd.median_ns),
                    us(s.switch_ret.median_ns)
                );
            }
        },
        err.map(|x| x.0),
        err.map_or(a.a.as_path(), |x| x.1.as_path()),
    )
}

/// The median over matched exchanges of the round trip at A less that at B, ns (0 if none).
fn median_a_minus_b_ns(rows: &[latency::ExchangeRow]) -> i64 {
    let mut d: Vec<i64> = rows.iter().map(|e| e.a_ns - e.b_ns).collect();
    d.sort_unstable();
    d.get(d.len() / 2).copied().unwrap_or(0)
}

/// Whether two captures saw the exchanges at one point: the round trip at A (near the client)
/// is, at the median, no longer than at B (near the server), so nothing lies between them.
fn taken_at_one_point(rows: &[latency::ExchangeRow]) -> bool {
    !rows.is_empty() && median_a_minus_b_ns(rows) <= 0
}

fn flows(a: FlowsArgs) -> anyhow::Result<()> {
    let sort = match a.sort.as_str() {
        "packets" => SortBy::Packets,
        "duration" => SortBy::Duration,
        "rate" => SortBy::Rate,
        _ => SortBy::Bytes,
    };
    let (mut reader, _bar) = open(&a.file)?;
    let mut t = FlowTable::with_limits(FlowLimits {
        max_flows: a.max_flows,
        max_fragments: a.frags.max_fragments as usize,
    });
    if let Some(n) = plain_file_len(&a.file) {
        t.reserve(weft_trace::flows::max_flows_in(n));
    }
    let error =
        weft_trace::for_each_packet(&mut reader, |p, info| t.add(p.ts_ns, p.orig_len, info));
    let mut summary = json!({
        "untracked_packets": t.untracked_packets,
        "untracked_bytes": t.untracked_bytes,
        "non_ip_packets": t.non_ip_packets,
        "fragment_table": t.fragments(),
    });
    // A million flows are never expanded at once: they stay compact, are sorted (only the
    // table's rows when nothing else is asked for) and summarised one at a time as written.
    let mut flows = t.into_flows();
    let everything = a.csv.is_some() || a.out.json || a.out.output.is_some();
    flows.sort(sort, (!everything).then_some(a.top));
    let o = Outcome {
        result: (),
        packets: reader.packets(),
        bytes_read: reader.offset(),
        error,
    };
    if let Some(p) = &a.csv {
        let write = |w: &mut dyn Write| -> std::io::Result<()> {
            w.write_all(weft_trace::flows::csv_header().as_bytes())?;
            for f in flows.iter() {
                w.write_all(weft_trace::flows::csv_row(&f).as_bytes())?;
            }
            w.flush()
        };
        if p.as_os_str() == "-" {
            quiet_pipe(write(&mut std::io::BufWriter::new(
                std::io::stdout().lock(),
            )))?;
        } else {
            write_atomic_with(p, write).with_context(|| format!("writing {}", p.display()))?;
        }
    }
    let mut doc = ResultDoc::new("trace.flows", Engine::Real);
    doc.params = json!({"file": a.file.display().to_string(), "sort": a.sort, "max_flows": a.max_flows, "max_fragments": a.frags.max_fragments});
    merge(&mut summary, json!({"flows": flows.len()}));
    merge(&mut summary, partial_fields(&o));
    doc.summary = summary;
    if let Some(p) = &a.out.output {
        write_atomic_with(p, |w| doc.write_pretty_with(w, flows.iter()))
            .with_context(|| format!("writing {}", p.display()))?;
    }
    let csv_to_stdout = a.csv.as_ref().is_some_and(|p| p.as_os_str() == "-");
    if a.out.json {
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        quiet_pipe(
            doc.write_pretty_with(&mut w, flows.iter())
                .and_then(|()| writeln!(w))
                .and_then(|()| w.flush()),
        )?;
    } else if !csv_to_stdout {
        print_flows(&flows, a.top);
    }
    match o.error {
        Some(e) => Err(anyhow::anyhow!(
            "{}: {e} (the results above cover the packets before it and are partial)",
            a.file.display()
        )),
        None => Ok(()),
    }
}

/// The length of `path` if it is a regular file whose content is the capture itself (not
/// standard input, not gzip).
fn plain_file_len(path: &Path) -> Option<u64> {
    if path.as_os_str() == "-" {
        return None;
    }
    let mut magic = [0u8; 2];
    let mut f = std::fs::File::open(path).ok()?;
    std::io::Read::read_exact(&mut f, &mut magic).ok()?;
    if magic == [0x1f, 0x8b] {
        return None;
    }
    f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len())
}

/// A closed pipe (`weft trace flows f --csv - | head`) ends the output, not the command.
fn quiet_pipe(r: std::io::Result<()>) -> anyhow::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

fn print_flows(flows: &weft_trace::flows::Flows, top: usize) {
    out!(
        "{:<5} {:>21} {:>21} {:>8} {:>12} {:>10} {:>12} {:>6} {:>10} {:>10}",
        "proto",
        "src",
        "dst",
        "packets",
        "bytes",
        "dur s",
        "rate bps",
        "retx",
        "rtt hs us",
        "rtt ts us"
    );
    let us = |v: Option<u64>| v.map_or("-".to_string(), |x| format!("{:.1}", x as f64 / 1e3));
    for f in flows.iter().take(top) {
        out!(
            "{:<5} {:>21} {:>21} {:>8} {:>12} {:>10.3} {:>12.0} {:>6} {:>10} {:>10}",
            f.proto,
            format!("{}:{}", f.src, f.sport),
            format!("{}:{}", f.dst, f.dport),
            f.packets,
            f.bytes,
            f.duration_ns as f64 / 1e9,
            f.mean_rate_bps,
            f.retransmissions,
            us(f.rtt_handshake_ns),
            us(f.rtt_ts_ns)
        );
    }
    if flows.len() > top {
        out!("... {} flows in all", flows.len());
    }
}

fn synth(a: SynthArgs) -> anyhow::Result<()> {
    if a.frame < 42 || a.frame > 65_535 || a.load <= 0.0 || a.link_rate.0 == 0 {
        return Err(crate::cli::usage(
            "--frame must be 42..65535 bytes, --load and --link-rate positive",
        ));
    }
    let per = 16 + a.frame as u64;
    let packets = a.size.as_bytes().saturating_sub(24) / per;
    let gap_ns =
        ((a.frame as f64 * 8.0) / (a.link_rate.0 as f64 * a.load / 100.0) * 1e9).round() as u64;
    let g = weft_trace::synth::SyntheticPcap::new(
        packets,
        a.frame,
        1_700_000_000_000_000_000,
        gap_ns.max(1),
        a.hosts,
    );
    let mut g = if a.flows { g.distinct_flows() } else { g };
    if a.file.as_os_str() == "-" {
        std::io::copy(&mut g, &mut std::io::stdout().lock())?;
    } else {
        let f = std::fs::File::create(&a.file)
            .with_context(|| format!("creating {}", a.file.display()))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        std::io::copy(&mut g, &mut w)?;
        w.flush()?;
    }
    Ok(())
}
