//! `weft sim`: discrete-event simulation of switch fabrics, from a scenario file or a quick form.

use std::path::PathBuf;

use weft_model::fabric::Contention;
use weft_model::queue::{Capacity, DropPolicy};
use weft_model::{Duration, Rate, Size};
use weft_report::ResultDoc;
use weft_sim::experiments::{self, FrameOverload};
use weft_sim::many_to_one::{Host, ManyToOne, Unit};

use super::bounds;
use crate::cli::usage;

/// Arguments of `weft sim`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// A scenario file (TOML) to simulate.
    pub scenario: Option<PathBuf>,
    /// A quick form instead of a scenario file.
    #[command(subcommand)]
    pub form: Option<Form>,
    /// Options shared by every form.
    #[command(flatten)]
    pub common: Common,
}

/// Options shared by every form.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// Seed of the run; equal seeds give equal results (default 1, or the scenario's).
    #[arg(long = "seed", global = true)]
    pub seed_given: Option<u64>,
    /// Print the result document as JSON on stdout (and nothing else).
    #[arg(long, global = true)]
    pub json: bool,
    /// Write the result document to this file.
    #[arg(short = 'o', long = "output", global = true)]
    pub output: Option<PathBuf>,
    /// CSV export of the samples.
    #[arg(long, value_name = "FILE", global = true)]
    pub csv: Option<PathBuf>,
}

/// Quick forms of `weft sim`.
#[derive(Debug, clap::Subcommand)]
pub enum Form {
    /// Saturated input-queued FIFO switch: throughput per port (head-of-line blocking).
    Hol {
        /// Port counts: `16`, `1-8`, or `1,2,4,64`.
        #[arg(long, default_value = "16", value_parser = parse_ports)]
        ports: PortCounts,
        /// Slots to simulate per port count (`1e6` is fine).
        #[arg(long, default_value = "1e6", value_parser = parse_count)]
        slots: u64,
        /// Contention resolution.
        #[arg(long, value_enum, default_value_t = ContentionArg::Random)]
        contention: ContentionArg,
    },
    /// GIGAswitch contention: 1..=inputs saturated inputs to `outputs` outputs, against the
    /// formula E = (N/M)(1-(1-1/N)^M).
    Contention {
        /// Largest number of contending inputs (M).
        #[arg(long, default_value_t = 5)]
        inputs: usize,
        /// Outputs (N).
        #[arg(long, default_value_t = 5)]
        outputs: usize,
        /// Slots per point.
        #[arg(long, default_value = "1e6", value_parser = parse_count)]
        slots: u64,
        /// Port rate that efficiency 1 stands for (the study's 95 Mbps of FDDI).
        #[arg(long, default_value = "95Mbps", value_parser = bounds::rate("1", "10Tbps"))]
        rate: Rate,
    },
    /// Output-queued switch: delay against load, with the formula.
    Oq {
        /// Ports.
        #[arg(long, default_value_t = 16)]
        ports: usize,
        /// Loads, comma-separated.
        #[arg(long, default_value = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95", value_parser = parse_loads)]
        loads: Loads,
        /// Slots per load.
        #[arg(long, default_value = "1e6", value_parser = parse_count)]
        slots: u64,
    },
    /// Virtual output queues with iSLIP: throughput and delay against load.
    Islip {
        /// Ports (at most 64).
        #[arg(long, default_value_t = 32)]
        ports: usize,
        /// iSLIP iterations per slot.
        #[arg(long, default_value_t = 4)]
        iterations: usize,
        /// Loads, comma-separated.
        #[arg(long, default_value = "0.5,0.8,0.9,0.95,0.99", value_parser = parse_loads)]
        loads: Loads,
        /// Slots per load.
        #[arg(long, default_value = "2e5", value_parser = parse_count)]
        slots: u64,
    },
    /// Frame overload of one output: tail drop, PPD and EPD compared on frame goodput.
    Epd {
        /// Inputs sending frames to the one output.
        #[arg(long, default_value_t = 4)]
        inputs: usize,
        /// Cells per frame (192 is a 9180-byte Classical IP frame).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=65_536))]
        frame_cells: u32,
        /// Cells per slot offered by each input.
        #[arg(long, default_value_t = 0.4)]
        load: f64,
        /// Output buffer in cells.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
        buffer: u64,
        /// EPD threshold in cells (default: 60% of the buffer).
        #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1 << 32))]
        threshold: Option<u64>,
        /// Slots to run.
        #[arg(long, default_value = "1e6", value_parser = parse_count)]
        slots: u64,
    },
    /// Event-driven many-to-one: hosts on their own links into one switch output port (the
    /// Sandia study's two hosts to one receiver over OC-3c).
    ManyToOne {
        /// Sending hosts.
        #[arg(long, default_value_t = 2)]
        hosts: usize,
        /// Each host's link rate (cell stream rate for cells).
        #[arg(long, default_value = "149.76Mbps", value_parser = bounds::rate("1", "10Tbps"))]
        rate: Rate,
        /// Fraction of its link each host offers.
        #[arg(long, default_value_t = 1.0)]
        load: f64,
        /// Output port rate.
        #[arg(long, default_value = "149.76Mbps", value_parser = bounds::rate("1", "10Tbps"))]
        out_rate: Rate,
        /// Frame (AAL5 payload or packet) length.
        #[arg(long, default_value = "9188", value_parser = parse_frame)]
        frame: Size,
        /// Move whole frames instead of cells.
        #[arg(long)]
        frames: bool,
        /// Output buffer in cells (or frames with --frames).
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
        buffer: u64,
        /// Drop policy: tail, ppd or epd:THRESHOLD.
        #[arg(long, default_value = "tail", value_parser = parse_policy)]
        policy: DropPolicy,
        /// Simulated time.
        #[arg(long, default_value = "1s", value_parser = bounds::duration("1ns", "30d"))]
        duration: Duration,
    },
}

/// Runs `weft sim`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let common = args.common.clone();
    let doc = match (args.form, args.scenario) {
        (Some(form), _) => run_form(form, &common)?,
        (None, Some(path)) => run_scenario(&path, &common)?,
        (None, None) => {
            return Err(usage(
                "give a scenario file or a quick form: hol, contention, oq, islip, epd, many-to-one \
                 (see `weft sim --help`)",
            ));
        }
    };
    emit(&doc, &common)
}

fn run_scenario(path: &std::path::Path, common: &Common) -> anyhow::Result<ResultDoc> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read scenario {}: {e}", path.display())))?;
    let scenario = weft_model::scenario::Scenario::parse(&text, &path.display().to_string())
        .map_err(|e| usage(e.to_string()))?;
    let seed = common.seed_given.unwrap_or(scenario.seed);
    Ok(weft_sim::scenario::run(&scenario, seed))
}

fn run_form(form: Form, c: &Common) -> anyhow::Result<ResultDoc> {
    Ok(match form {
        Form::Hol {
            ports,
            slots,
            contention,
        } => {
            let (ports, contention) = (ports.0, Contention::from(contention));
            let warm = |s: u64| s + (s / 20).min(10_000);
            let total = ports.len() as u64 * warm(slots);
            let bar = progress("hol", total);
            // Karol et al.'s column comes from the published figures weft ships.
            let figures = weft_model::scenario::Figures::bundled().ok();
            let doc =
                experiments::hol(&ports, slots, contention, c.seed(), figures.as_ref(), |d| {
                    bar.set(d)
                });
            bar.finish();
            doc
        }
        Form::Contention {
            inputs,
            outputs,
            slots,
            rate,
        } => {
            if inputs == 0 || outputs == 0 {
                return Err(usage("--inputs and --outputs must be at least 1"));
            }
            let total = 2 * inputs as u64 * (slots + (slots / 20).min(10_000));
            let bar = progress("contention", total);
            let doc = experiments::contention(
                inputs,
                outputs,
                slots,
                rate.as_mbps_f64(),
                c.seed(),
                |d| bar.set(d),
            );
            bar.finish();
            doc
        }
        Form::Oq {
            ports,
            loads,
            slots,
        } => {
            check_ports(ports, 1 << 16)?;
            let loads = loads.0;
            let bar = progress("oq", loads.len() as u64);
            let doc = experiments::oq(ports, &loads, slots, c.seed(), |d| bar.set(d));
            bar.finish();
            doc
        }
        Form::Islip {
            ports,
            iterations,
            loads,
            slots,
        } => {
            check_ports(ports, 64)?;
            if iterations == 0 {
                return Err(usage("--iterations must be at least 1"));
            }
            let loads = loads.0;
            let bar = progress("islip", loads.len() as u64);
            let doc =
                experiments::islip(ports, iterations, &loads, slots, c.seed(), |d| bar.set(d));
            bar.finish();
            doc
        }
        Form::Epd {
            inputs,
            frame_cells,
            load,
            buffer,
            threshold,
            slots,
        } => {
            check_ports(inputs, 1 << 16)?;
            if !(0.0..=1.0).contains(&load) || frame_cells == 0 {
                return Err(usage(
                    "--load must be in [0, 1] and --frame-cells at least 1",
                ));
            }
            let f = FrameOverload {
                inputs,
                frame_cells,
                load_each: load,
                buffer,
                slots,
                seed: c.seed(),
            };
            let threshold = threshold.unwrap_or(buffer * 6 / 10);
            if threshold > buffer {
                return Err(usage("--threshold cannot exceed --buffer"));
            }
            experiments::frame_overload(
                &f,
                &[
                    DropPolicy::Tail,
                    DropPolicy::Ppd,
                    DropPolicy::Epd { threshold },
                ],
            )
        }
        Form::ManyToOne {
            hosts,
            rate,
            load,
            out_rate,
            frame,
            frames,
            buffer,
            policy,
            duration,
        } => {
            check_ports(hosts, 1 << 16)?;
            if rate.as_bps() == 0 || out_rate.as_bps() == 0 || !(load > 0.0 && load <= 1.0) {
                return Err(usage("rates must be above zero and --load in (0, 1]"));
            }
            let p = ManyToOne {
                hosts: vec![Host { rate, load }; hosts],
                out_rate,
                frame_bytes: frame.as_bytes() as usize,
                unit: if frames { Unit::Frames } else { Unit::Cells },
                frame_cells: None,
                capacity: if frames {
                    Capacity::Frames(buffer)
                } else {
                    Capacity::Cells(buffer)
                },
                policy,
                duration,
                sample_every: Duration((duration.as_nanos() / 500).max(1)),
                seed: c.seed(),
            };
            let bar = progress("many-to-one", duration.as_nanos());
            let (doc, _) = experiments::many_to_one(&p, |t| bar.set(t.as_nanos()))?;
            bar.finish();
            doc
        }
    })
}

impl Common {
    fn seed(&self) -> u64 {
        self.seed_given.unwrap_or(1)
    }
}

fn emit(doc: &ResultDoc, c: &Common) -> anyhow::Result<()> {
    crate::output::write_csv(c.csv.as_deref(), doc)?;
    if let Some(path) = &c.output {
        weft_report::write_atomic(path, doc.to_json_pretty().as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if c.json {
        println!("{}", doc.to_json_pretty());
    } else {
        print_table(doc);
    }
    Ok(())
}

/// A compact human table of the samples; `many-to-one`'s summary as one line per value, then a
/// table per list in it (`per_sender`). Nested values are dotted columns (`delay.p99_ns`), as
/// in the CSV: a table never prints JSON.
fn print_table(doc: &ResultDoc) {
    println!("{} (engine sim)", doc.kind);
    if doc.kind != "sim.many_to_one" {
        print_rows(&doc.samples.iter().collect::<Vec<_>>(), None);
        return;
    }
    let Some(summary) = doc.summary.as_object() else {
        return;
    };
    let is_table = |v: &serde_json::Value| {
        v.as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(serde_json::Value::is_object))
    };
    let scalars: serde_json::Map<String, serde_json::Value> = summary
        .iter()
        .filter(|(_, v)| !is_table(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let scalars = serde_json::Value::Object(scalars);
    let flat = weft_report::csv::flatten_values(&scalars);
    let w = flat.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in &flat {
        println!("  {k:<w$}  {}", cell(v));
    }
    for (name, list) in summary.iter().filter(|(_, v)| is_table(v)) {
        println!("{name}:");
        let rows: Vec<&serde_json::Value> = list.as_array().into_iter().flatten().collect();
        print_rows(&rows, Some("#"));
    }
}

/// A flattened value as a table cell: fractions to four places, the rest as they are.
fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => format!("{:.4}", n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        v => v.to_string(),
    }
}

/// `rows` as a table with a column per flattened key (in order of first appearance), right
/// aligned; `index` names a leading column of row numbers.
fn print_rows(rows: &[&serde_json::Value], index: Option<&str>) {
    let flat: Vec<Vec<(String, &serde_json::Value)>> = rows
        .iter()
        .map(|r| weft_report::csv::flatten_values(r))
        .collect();
    let mut keys: Vec<String> = index.map(str::to_string).into_iter().collect();
    for r in &flat {
        for (k, _) in r {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let table: Vec<Vec<String>> = flat
        .iter()
        .enumerate()
        .map(|(i, r)| {
            keys.iter()
                .map(|k| match r.iter().find(|(c, _)| c == k) {
                    Some((_, v)) => cell(v),
                    None if Some(k.as_str()) == index => i.to_string(),
                    None => "-".into(),
                })
                .collect()
        })
        .collect();
    if table.is_empty() {
        return;
    }
    let widths: Vec<usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            table
                .iter()
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
                .max(k.len())
        })
        .collect();
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    println!("{}", line(&keys));
    for r in &table {
        println!("{}", line(r));
    }
}

fn check_ports(n: usize, max: usize) -> anyhow::Result<()> {
    if n == 0 || n > max {
        Err(usage(format!(
            "port counts must be between 1 and {max}, got {n}"
        )))
    } else {
        Ok(())
    }
}

/// Port counts of `--ports` (`16`, `1-8`, `1,2,4,64`), each between 1 and 65536.
#[derive(Clone, Debug, PartialEq)]
pub struct PortCounts(pub Vec<usize>);

/// Offered loads of `--loads` (comma-separated), each in [0, 1].
#[derive(Clone, Debug, PartialEq)]
pub struct Loads(pub Vec<f64>);

/// `--contention`: how an output picks among the inputs that want it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ContentionArg {
    /// A random winner each slot.
    Random,
    /// Round robin from the last winner.
    #[value(alias = "round-robin")]
    Rr,
}

impl From<ContentionArg> for Contention {
    fn from(c: ContentionArg) -> Self {
        match c {
            ContentionArg::Random => Contention::Random,
            ContentionArg::Rr => Contention::RoundRobin,
        }
    }
}

/// `"1e6"`, `"200000"`, `"2.5e5"`: a whole positive count (clap names the flag).
fn parse_count(s: &str) -> Result<u64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("expected a count such as 1e6, got {s:?}"))?;
    if !((1.0..=1e15).contains(&v) && v.fract() == 0.0) {
        return Err(format!("expected a whole count from 1 to 1e15, got {s:?}"));
    }
    Ok(v as u64)
}

fn parse_ports(s: &str) -> Result<PortCounts, String> {
    let bad = || format!("expected 16, 1-8 or 1,2,4, got {s:?}");
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b {
                return Err(bad());
            }
            out.extend(a..=b);
        } else {
            out.push(part.parse().map_err(|_| bad())?);
        }
    }
    match out.iter().find(|&&n| n == 0 || n > 1 << 16) {
        Some(n) => Err(format!(
            "port counts must be between 1 and {}, got {n}",
            1 << 16
        )),
        None => Ok(PortCounts(out)),
    }
}

fn parse_loads(s: &str) -> Result<Loads, String> {
    s.split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| (0.0..=1.0).contains(v))
                .ok_or_else(|| format!("each load is a number in [0, 1], got {p:?}"))
        })
        .collect::<Result<_, _>>()
        .map(Loads)
}

/// A frame length from 1 to 65535 bytes (`9188`, `1KiB`).
fn parse_frame(s: &str) -> Result<Size, String> {
    let f: Size = s.parse().map_err(|e| format!("{e}"))?;
    if f.as_bytes() == 0 || f.as_bytes() > 65_535 {
        return Err(format!("{s} is out of range: a frame is 1 to 65535 bytes"));
    }
    Ok(f)
}

fn parse_policy(s: &str) -> Result<DropPolicy, String> {
    match s {
        "tail" => Ok(DropPolicy::Tail),
        "ppd" => Ok(DropPolicy::Ppd),
        _ => s
            .strip_prefix("epd:")
            .and_then(|t| t.parse().ok())
            .map(|threshold| DropPolicy::Epd { threshold })
            .ok_or_else(|| format!("expected tail, ppd or epd:THRESHOLD, got {s:?}")),
    }
}

/// The shared progress bar (see `crate::progress`: stderr, terminals only, not with -q) over
/// `total` steps of a simulation.
fn progress(label: &str, total: u64) -> crate::progress::Progress {
    crate::progress::Progress::bar(label, total, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_counts_ports_loads_and_policies() {
        assert_eq!(parse_count("1e6").unwrap(), 1_000_000);
        assert!(parse_count("0").is_err());
        assert!(parse_count("1.5").is_err());
        assert_eq!(parse_ports("1-3,8").unwrap().0, vec![1, 2, 3, 8]);
        assert!(parse_ports("3-1").is_err());
        assert!(parse_ports("0").is_err());
        assert_eq!(parse_loads("0.5, 0.9").unwrap().0, vec![0.5, 0.9]);
        assert!(parse_loads("1.2").is_err());
        assert_eq!(
            parse_policy("epd:40").unwrap(),
            DropPolicy::Epd { threshold: 40 }
        );
        assert!(parse_policy("red").is_err());
    }

    #[test]
    fn every_old_spelling_still_parses() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(subcommand)]
            form: Form,
        }
        for args in [
            &[
                "x",
                "hol",
                "--ports",
                "1,2-4",
                "--slots",
                "2.5e5",
                "--contention",
                "rr",
            ][..],
            &["x", "hol", "--contention", "round-robin"],
            &["x", "hol", "--contention", "random"],
            &["x", "contention", "--rate", "95Mbps", "--slots", "1000"],
            &["x", "oq", "--loads", "0.5, 0.9", "--slots", "1e4"],
            &["x", "islip", "--loads", "1", "--slots", "200000"],
            &["x", "epd", "--slots", "1e4"],
            &[
                "x",
                "many-to-one",
                "--rate",
                "149.76Mbps",
                "--out-rate",
                "100Mbps",
                "--frame",
                "9188",
                "--policy",
                "epd:40",
                "--duration",
                "10ms",
            ],
            &["x", "many-to-one", "--policy", "ppd", "--frame", "1KiB"],
        ] {
            assert!(Cli::try_parse_from(args).is_ok(), "{args:?}");
        }
        for args in [
            &["x", "hol", "--contention", "fifo"][..],
            &["x", "hol", "--ports", "0"],
            &["x", "oq", "--slots", "0"],
            &["x", "oq", "--loads", "1.5"],
            &["x", "many-to-one", "--frame", "65536"],
            &["x", "many-to-one", "--policy", "red"],
            &["x", "many-to-one", "--duration", "forever"],
        ] {
            assert!(Cli::try_parse_from(args).is_err(), "{args:?}");
        }
    }
}
