//! `weft demo`: a short measurement against an in-process agent on loopback, written as one JSON
//! result and one SVG figure, and the HTML report of it beside the studies' reproductions on
//! model and sim.

use std::path::PathBuf;

use anyhow::Context;
use weft_model::{Rate, Size};
use weft_probe::proto::{Amount, Direction, TputSpec, Transport};
use weft_probe::rr::{self, Peer, RrConfig, StopRule};
use weft_probe::server::{Server, ServerConfig};
use weft_probe::tput::{self, TputConfig};
use weft_report::{Engine, ResultDoc, plot, write_atomic};

/// Arguments of `weft demo`.
///
/// Starts an agent on 127.0.0.1 (a free port) inside this process, runs a TCP throughput test
/// and a request/response latency sweep against it, and writes `demo.json` (a `demo` document
/// holding both results) and `demo.svg` (their figures) into the output directory, then runs
/// the studies' catalogued results on model and sim (`weft repro --engine model,sim`, under a
/// minute) and writes `report.html`, one page with both.
///
/// The latency sweep places the client and the agent on two different CPUs and busy-polls at
/// both ends (`weft rr --affinity 0,1 --busy-poll`), so that a virtual machine's late wake-ups
/// do not turn the curve into a saw-tooth; `--no-busy-poll` measures as a plain `weft rr`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory to write demo.json and demo.svg into (created if missing).
    #[arg(long, default_value = "weft-out", value_name = "DIR")]
    pub out: PathBuf,
    /// Length of the throughput test.
    #[arg(long, default_value = "2s", value_parser = crate::cmd::bounds::duration("1ms", "1h"))]
    pub time: weft_model::Duration,
    /// Largest message of the latency sweep (powers of two from 1 byte).
    #[arg(long, default_value = "64KiB", value_parser = crate::cmd::bounds::size("1", "16MiB"))]
    pub max_size: Size,
    /// Measured transactions per message size.
    #[arg(long, default_value_t = 500)]
    pub count: u64,
    /// Also write demo.png.
    #[arg(long)]
    pub png: bool,
    /// Sweep with both ends sleeping between messages, unpinned (as a plain `weft rr`).
    #[arg(long)]
    pub no_busy_poll: bool,
    /// Leave the studies' reproductions (model and sim, under a minute) out of the report:
    /// report.html then holds the loopback measurement alone.
    #[arg(long)]
    pub no_repro: bool,
    /// CSV export of the demo's two results (flattened, one row each).
    #[command(flatten)]
    pub csv: crate::output::CsvArg,
}

/// Runs `weft demo`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let time_ns = args.time.as_nanos();
    if time_ns == 0 || args.count == 0 {
        return Err(crate::cli::usage("--time and --count must be positive"));
    }
    let max = u32::try_from(args.max_size.as_bytes())
        .ok()
        .filter(|m| (1..=(64 << 20)).contains(m))
        .ok_or_else(|| crate::cli::usage("--max-size must be between 1 byte and 64MiB"))?;
    let sizes: Vec<u32> = (0..32)
        .map(|e| 1u32 << e)
        .take_while(|s| *s <= max)
        .collect();

    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let server = Server::bind(ServerConfig::loopback()).context("cannot start the local agent")?;
    let addr = server.local_addr();
    let agent = server.spawn();
    eprintln!("demo: agent on {addr}; {} TCP throughput test", args.time);

    let measured = (|| -> anyhow::Result<(ResultDoc, ResultDoc)> {
        let cfg = TputConfig {
            server: addr,
            spec: TputSpec {
                transport: Transport::Tcp,
                direction: Direction::Forward,
                streams: 1,
                len: 128 * 1024,
                amount: Amount::TimeNs(time_ns),
                window: None,
                mss: None,
                cc: None,
                nodelay: false,
                rate_bps: None,
                interval_ns: Some((time_ns / 10).max(1_000_000)),
            },
            connect_timeout: std::time::Duration::from_secs(5),
            key: None,
        };
        let bar =
            crate::progress::Progress::timed("demo tput", std::time::Duration::from_nanos(time_ns));
        let t = tput::run(&cfg, &mut |_| {}).context("throughput test");
        bar.finish();
        let t = t?;
        println!("throughput: {}", Rate(t.goodput_bps().round() as u64));
        eprintln!(
            "demo: request/response sweep, {} sizes from 1 byte to {}",
            sizes.len(),
            Size(u64::from(max))
        );
        let mut rc = RrConfig::new(Peer::Agent(addr), sizes.clone());
        rc.stop = StopRule::Count { count: args.count };
        rc.warmup = 50;
        if !args.no_busy_poll {
            rc.busy_poll = true;
            if rr::place::online_cpus() >= 2 {
                rc.client_cpu = Some(0);
                rc.agent_cpu = Some(1);
            }
        }
        let bar = crate::progress::Progress::bar("demo rr", sizes.len() as u64, "sizes");
        let r = rr::run_with_progress(&rc, |_| bar.inc(1)).context("latency sweep");
        bar.finish();
        let r = r?;
        if r.failed() {
            anyhow::bail!("the latency sweep aborted a size:\n{}", r.table());
        }
        print!("{}", r.table());
        Ok((t.to_result_doc(), r.to_result_doc()))
    })();
    agent.shutdown();
    let _ = agent.join();
    let (tput_doc, rr_doc) = measured?;

    let mut doc = ResultDoc::new("demo", Engine::Real);
    doc.params = serde_json::json!({ "agent": addr.to_string(), "tput_time_ns": time_ns,
                                     "rr_sizes": sizes, "rr_count": args.count,
                                     "rr_busy_poll": !args.no_busy_poll });
    doc.summary = serde_json::json!({
        "goodput_bps": tput_doc.summary.get("goodput_bps"),
        "rr_min_rtt_ns": rr_doc.summary.get("min_rtt_ns"),
        "rr_smallest_size_p50_ns": rr_doc.summary.get("smallest_size_p50_ns"),
        "rr_max_throughput_bps": rr_doc.summary.get("max_throughput_bps"),
    });
    doc.samples = vec![
        serde_json::to_value(&tput_doc)?,
        serde_json::to_value(&rr_doc)?,
    ];

    args.csv.write(&doc)?;
    let json_path = args.out.join("demo.json");
    write_atomic(&json_path, (doc.to_json_pretty() + "\n").as_bytes())
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    let svg = plot::svg_for(&doc)?;
    let svg_path = args.out.join("demo.svg");
    write_atomic(&svg_path, svg.as_bytes())
        .with_context(|| format!("cannot write {}", svg_path.display()))?;
    println!("wrote {}", json_path.display());
    println!("wrote {}", svg_path.display());
    if args.png {
        let png_path = args.out.join("demo.png");
        write_atomic(&png_path, &plot::render_png(&svg, 1.5)?)
            .with_context(|| format!("cannot write {}", png_path.display()))?;
        println!("wrote {}", png_path.display());
    }
    // The report: the studies reproduced on model and sim, then this machine's measurement.
    let mut docs = Vec::new();
    if !args.no_repro {
        eprintln!("demo: the studies' catalogued results on model and sim (weft repro)");
        if let Some(repro) = super::repro::model_and_sim()? {
            docs.push(repro);
        }
    }
    docs.push(doc);
    let html_path = args.out.join("report.html");
    write_atomic(&html_path, super::report::page(&docs)?.as_bytes())
        .with_context(|| format!("cannot write {}", html_path.display()))?;
    println!(
        "wrote {}: open it in a browser (the studies beside the engines, and this measurement)",
        html_path.display()
    );
    Ok(())
}
