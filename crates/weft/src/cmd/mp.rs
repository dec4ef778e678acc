//! `weft mp`: message passing among N ranks (local processes or `weft serve` agents).

use std::path::PathBuf;

use weft_model::calc::SharedHost;
use weft_model::mp::Pattern;
use weft_model::net::{HostSpec, LinkSpec, Topology};
use weft_model::{Duration, Rate, Size};
use weft_probe::mp::local::LocalAgents;
use weft_probe::mp::rank::{RankSample, sample};
use weft_probe::mp::spec::{MAX_RANKS, MAX_SIZE, default_spin_us};
use weft_probe::mp::{
    self, DaemonParams, Launch, MP_VERSION, MpError, MpResult, MpSample, MpSpec, Route,
};
use weft_probe::server::DEFAULT_PORT;
use weft_report::{Engine, write_atomic};
use weft_sim::net::mp_workload::run_ranks;

use crate::cli::usage;
use crate::progress::Progress;

/// Arguments of `weft mp`.
///
/// Ranks are `weft serve` agents (`--hosts`, one rank each, in order) or, with `--local N`, N
/// agents of this binary started on loopback. Every pattern runs at every size behind a barrier,
/// after warm-up iterations; ping-pong follows OSU's osu_latency (latency = half the round trip)
/// and osu_bw (a window of 64 messages), collectives are timed per call at every rank, NPB
/// skeletons (bt.S, lu.A, sp.S, ...) per time step. Percentiles come from an HDR histogram.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Patterns: pingpong, exchange (sendrecv ring), alltoall, allreduce \
(recursive doubling below 2 KiB, ring above), allreduce-ring, allreduce-rd, barrier, `all` for \
all of these, and the NPB skeletons bt.S, bt.A, sp.S, sp.A, lu.S, lu.A (4 or 9 ranks; W, B, C \
too).

Routes: `direct` connects every pair of ranks over TCP (PVM's Direct Route, MPI over TCP); \
`daemon` sends each message to the rank's own daemon over TCP, between daemons over UDP in \
fragments with acknowledgements (PVM 3's defaults: 4080-byte datagrams, one unacknowledged \
packet), and from the daemon to the receiving rank over TCP (PVM's default route).

Examples:
    weft mp --local 4 --pattern allreduce --sizes 8,1M
    weft mp --local 2 --pattern pingpong --sizes 1,64,1K,64K,1M,4M --json
    weft mp --local 4 --pattern pingpong --route daemon --sizes 8,64K
    weft mp --local 9 --pattern bt.S,lu.S,sp.S --steps 20
    weft mp --hosts node1,node2,node3,node4 --pattern all --sizes 8,64K,1M -o mp.json
    weft mp --hosts node1,node2 -p 5400 --key-file weft.key --csv mp.csv
    weft mp --engine sim --local 4 --pattern pingpong,allreduce --sizes 8,1M --link-rate 100Mbps"
)]
pub struct Args {
    /// Start N ranks on this host (agents of this binary on loopback).
    #[arg(long, value_name = "N", conflicts_with = "hosts")]
    pub local: Option<usize>,
    /// The agents of the ranks, HOST[:PORT] comma-separated, rank 0 first.
    #[arg(long, value_name = "HOSTS", value_delimiter = ',', num_args = 1..)]
    pub hosts: Vec<String>,
    /// Patterns, comma-separated (see below).
    #[arg(long, value_name = "LIST", default_value = "pingpong")]
    pub pattern: String,
    /// Message sizes, comma-separated, 1 byte to 16 MiB (e.g. 8,1K,64K,1M,4M).
    #[arg(
        long,
        value_name = "LIST",
        default_value = "1,8,64,512,4K,32K,256K,1M,4M"
    )]
    pub sizes: String,
    /// Timed iterations per pattern and size up to 8 KiB.
    #[arg(long, default_value_t = 1000)]
    pub iterations: u32,
    /// Timed iterations above 8 KiB.
    #[arg(long, default_value_t = 100)]
    pub iterations_large: u32,
    /// Untimed iterations first [default: a tenth of the timed ones].
    #[arg(long)]
    pub warmup: Option<u32>,
    /// Time steps of an NPB skeleton [default: the benchmark's own, e.g. 60 for BT class S].
    #[arg(long)]
    pub steps: Option<u32>,
    /// How messages travel: direct or daemon.
    #[arg(long, default_value = "direct", value_parser = ["direct", "daemon"])]
    pub route: String,
    /// Daemon route: largest datagram between daemons.
    #[arg(long, default_value = "4080")]
    pub daemon_fragment: Size,
    /// Daemon route: packets unacknowledged per pair of daemons.
    #[arg(long, default_value_t = 1)]
    pub daemon_window: u32,
    /// A rank that sees nothing move for this long while it waits fails the run, naming the
    /// rank it waited for: a rank that died, or one alive but stopped, frozen or stuck, whose
    /// kernel keeps its connections open.
    #[arg(long, default_value = "5s", value_parser = crate::cmd::bounds::duration("1ms", "1h"))]
    pub timeout: Duration,
    /// How long a waiting rank polls before it sleeps [default: 20ms when every rank (and
    /// daemon) of a host has a CPU to itself, 50us when they outnumber its CPUs].
    #[arg(long, value_parser = crate::cmd::bounds::duration("0", "1h"))]
    pub spin: Option<Duration>,
    /// Pin each rank to a CPU of its host for the run, round-robin over the ranks of that host
    /// (mpiexec's `-bind-to core`): `cores` or `none` [default: cores when --local ranks
    /// outnumber this host's CPUs, else none].
    #[arg(long, value_parser = ["none", "cores"])]
    pub bind: Option<String>,
    /// Run the ranks in the real-time class (SCHED_FIFO) so that other work on their hosts
    /// (compiles, other users) cannot delay them; needs root on every host. Measures the
    /// fabric and hosts without that interference, not what a shared machine gives.
    #[arg(long)]
    pub realtime: bool,
    /// Beside each sample, the model fitted from the ping-pong in FILE (a `weft mp --json`
    /// result of 2 ranks): alpha-beta, with the messages' CPU time shared by this host's cores
    /// where the ranks outnumber them (weft_model::calc::shared_host). --local runs only.
    #[arg(long, value_name = "FILE", requires = "local")]
    pub model_from: Option<PathBuf>,
    /// Where the ranks run: `real` (agents, or --local processes) or `sim` (--local N simulated
    /// hosts on one output-queued switch, over the simulator's TCP, direct route only).
    #[arg(long, default_value = "real", value_parser = ["real", "sim"])]
    pub engine: String,
    /// --engine sim: every host's link rate.
    #[arg(long, default_value = "1Gbps", value_parser = crate::cmd::bounds::rate("1Kbps", "1Tbps"))]
    pub link_rate: Rate,
    /// --engine sim: every link's one-way delay.
    #[arg(long, default_value = "25us", value_parser = crate::cmd::bounds::duration("0", "10s"))]
    pub link_delay: Duration,
    #[command(flatten)]
    pub port: super::client_args::PortArg,
    #[command(flatten)]
    pub connect: super::client_args::ConnectArg,
    /// CSV export of the samples.
    #[command(flatten)]
    pub out: super::client_args::ResultArgs,
    /// With --local, the agents started here take this key too.
    #[command(flatten)]
    pub key: super::gate::ClientKey,
}

/// What a run of `spec` over `ranks` ranks measures, in order, one sample each: the labels of
/// rank 0's measurements (every rank measures the same), e.g. `pingpong at 4194304 B`, `bt.S`.
fn steps(spec: &MpSpec, ranks: usize) -> Vec<String> {
    let Ok(program) = weft_probe::mp::rank::program(spec, 0, ranks) else {
        return Vec::new();
    };
    program
        .measures
        .iter()
        .map(|m| match m.pattern.sized() {
            true => format!("{} at {} B", m.pattern, m.size),
            false => m.pattern.to_string(),
        })
        .collect()
}

/// The progress line once `done` of `steps` are done, `last` being the last one's result.
fn running(steps: &[String], done: usize, last: Option<&str>) -> String {
    let now = steps.get(done).map(|s| format!("running {s}"));
    let last = last.map(|l| format!("last: {l}"));
    [now, last]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs `weft mp`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let spec = spec_from(&args)?;
    let ranks = args.local.unwrap_or(args.hosts.len());
    if (2..=MAX_RANKS as usize).contains(&ranks) {
        // Refuse what cannot run before starting anything (BT on 3 ranks, sizes too large).
        let mut s = spec.clone();
        s.ranks = ranks as u32;
        s.check(u64::MAX).map_err(|e| usage(e.to_string()))?;
    }
    if args.engine == "sim" {
        return simulated(&args, spec);
    }
    let local;
    let mut spec = spec;
    let agents = match (args.local, args.hosts.is_empty()) {
        (Some(n), _) => {
            if !(2..=MAX_RANKS as usize).contains(&n) {
                return Err(usage(format!("--local takes 2 to {MAX_RANKS} ranks")));
            }
            let exe = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("cannot find the weft binary to start ranks: {e}"))?;
            let mut extra = vec![
                "--max-duration".to_string(),
                "24h".to_string(),
                "--idle-timeout".to_string(),
                format!(
                    "{}ms",
                    args.connect.connect_timeout.as_nanos() / 1_000_000 + 10_000
                ),
            ];
            if let Some(f) = &args.key.key_file {
                extra.extend(["--key-file".to_string(), f.display().to_string()]);
            }
            local = LocalAgents::spawn(&exe, n, &extra).map_err(|e| anyhow::anyhow!("{e}"))?;
            local.addrs.clone()
        }
        (None, false) => args
            .hosts
            .iter()
            .map(|h| {
                weft_probe::rr::config::resolve(h, args.port.or(DEFAULT_PORT))
                    .map_err(|e| usage(e.to_string()))
            })
            .collect::<anyhow::Result<Vec<_>>>()?,
        (None, true) => {
            return Err(usage(
                "give the ranks: --local N, or --hosts with a weft serve agent per rank",
            ));
        }
    };
    if agents.len() < 2 {
        return Err(usage("a run needs at least 2 ranks"));
    }
    let busiest = agents
        .iter()
        .map(|a| agents.iter().filter(|b| b.ip() == a.ip()).count())
        .max()
        .unwrap_or(1);
    let per_rank = if spec.route == Route::Daemon { 2 } else { 1 };
    if args.spin.is_none() {
        spec.spin_us = default_spin_us(busiest * per_rank);
    }
    let cpus = weft_sys::sched::allowed_cpus().len().max(1);
    let bind = match args.bind.as_deref() {
        Some(b) => b == "cores",
        None => args.local.is_some() && busiest * per_rank > cpus,
    };
    spec.place.realtime = args.realtime;
    let model = match &args.model_from {
        Some(path) => Some(model_from(
            path,
            if bind { busiest.min(cpus) } else { cpus },
        )?),
        None => None,
    };
    let slots = bind.then(|| host_slots(&agents));
    let launch = Launch {
        agents,
        slots,
        spec,
        connect_timeout: args.connect.connect_timeout.into(),
        key: args.key.load()?,
    };
    // A bar over the run's samples that names the one running: one sample (a large message
    // over the daemon route) can take seconds to tens of seconds.
    let steps = steps(&launch.spec, launch.agents.len());
    let progress = Progress::steps("mp", steps.len() as u64, "samples");
    progress.message(running(&steps, 0, None));
    let mut samples = 0;
    let result = mp::run(&launch, &mut |s| {
        samples += 1;
        progress.set(samples as u64);
        let last = format!("{} at {} B: p50 {:.2} us", s.pattern, s.size, s.p50_us);
        progress.message(running(&steps, samples, Some(&last)));
        tracing::info!(
            pattern = %s.pattern,
            size = s.size,
            p50_us = s.p50_us,
            "mp sample done"
        );
    });
    progress.finish();
    let mut result = result.map_err(|e| match e {
        MpError::Config(m) => usage(m),
        other => anyhow::anyhow!("{other}"),
    })?;
    if let Some(host) = &model {
        mp::model::attach(&mut result, host);
    }
    emit(&args, &result, Engine::Real)
}

/// Each rank's place among the ranks of its host (agents that share an address), in rank
/// order: the CPU slots of `--bind cores`.
fn host_slots(agents: &[std::net::SocketAddr]) -> Vec<u32> {
    agents
        .iter()
        .enumerate()
        .map(|(r, a)| agents[..r].iter().filter(|b| b.ip() == a.ip()).count() as u32)
        .collect()
}

/// The model of `--model-from`: fitted from the ping-pong samples of the result document at
/// `path`, for `cores` cores.
fn model_from(path: &std::path::Path, cores: usize) -> anyhow::Result<SharedHost> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("--model-from: cannot read {}: {e}", path.display())))?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| usage(format!("--model-from: {} is not JSON: {e}", path.display())))?;
    let samples: Vec<MpSample> = serde_json::from_value(doc["samples"].clone()).map_err(|e| {
        usage(format!(
            "--model-from: {} is not a `weft mp` result: {e}",
            path.display()
        ))
    })?;
    mp::model::fit(&samples, cores).map_err(|e| usage(format!("--model-from: {e}")))
}

/// `--engine sim`: the ranks on simulated hosts, the same programs over the simulator's TCP.
fn simulated(args: &Args, mut spec: MpSpec) -> anyhow::Result<()> {
    let Some(n) = args.local.filter(|n| (2..=MAX_RANKS as usize).contains(n)) else {
        return Err(usage(format!(
            "--engine sim takes the number of ranks from --local (2 to {MAX_RANKS})"
        )));
    };
    if spec.route == Route::Daemon {
        return Err(usage("--engine sim runs the direct route only"));
    }
    spec.ranks = n as u32;
    let hosts: Vec<HostSpec> = (0..n)
        .map(|i| HostSpec {
            name: format!("rank{i}"),
            addr: None,
            link: LinkSpec::ethernet(Some(args.link_rate), args.link_delay),
            switch: 0,
        })
        .collect();
    let topo = Topology::star(hosts, Default::default(), 1);
    let patterns = spec.parsed_patterns().map_err(|e| usage(e.to_string()))?;
    let all: Vec<usize> = (0..n).collect();
    let run = run_ranks(
        &topo,
        &all,
        &patterns,
        &spec.sizes_usize(),
        spec.counts(),
        1500,
    )
    .map_err(|e| anyhow::anyhow!("simulation: {e}"))?;
    let samples = (0..run.programs[0].measures.len())
        .filter_map(|k| {
            let parts: Vec<RankSample> = (0..n)
                .map(|r| {
                    let m = &run.programs[r].measures[k];
                    let t = &run.times[r];
                    sample(r, m, t.each_ns[k].clone(), t.whole_ns[k])
                })
                .collect();
            MpSample::from_ranks(&parts)
        })
        .collect();
    let result = MpResult {
        spec,
        hosts: topo.hosts.iter().map(|h| h.name.clone()).collect(),
        samples,
        ranks: vec![Default::default(); n],
    };
    emit(args, &result, Engine::Sim)
}

/// Writes and prints `result` as the flags ask.
fn emit(args: &Args, result: &MpResult, engine: Engine) -> anyhow::Result<()> {
    let doc = result.to_result_doc(engine);
    args.out.csv.write(&doc)?;
    if let Some(path) = &args.out.output {
        write_atomic(path, (doc.to_json_pretty() + "\n").as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if args.out.json {
        println!("{}", doc.to_json_pretty());
    } else {
        print!("{}", result.table());
    }
    Ok(())
}

fn spec_from(a: &Args) -> anyhow::Result<MpSpec> {
    let mut patterns = Vec::new();
    for p in a
        .pattern
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        if p == "all" {
            patterns.extend(Pattern::ALL.iter().map(ToString::to_string));
        } else {
            let parsed: Pattern = p.parse().map_err(usage)?;
            patterns.push(parsed.to_string());
        }
    }
    if patterns.is_empty() {
        return Err(usage("--pattern: name at least one pattern"));
    }
    let mut sizes = Vec::new();
    for s in a.sizes.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let size: Size = s
            .parse()
            .map_err(|e: weft_model::UnitError| usage(format!("--sizes: {e}")))?;
        if size.as_bytes() == 0 || size.as_bytes() > MAX_SIZE {
            return Err(usage(format!(
                "--sizes: {s} is outside 1 byte to {}",
                mp::result::size_text(MAX_SIZE)
            )));
        }
        sizes.push(size.as_bytes());
    }
    let route: Route = a.route.parse().map_err(usage)?;
    let warmup = a.warmup.unwrap_or((a.iterations / 10).max(1));
    let spec = MpSpec {
        version: MP_VERSION,
        rank: 0,
        ranks: 2,
        route,
        patterns,
        sizes,
        iterations: a.iterations,
        iterations_large: a.iterations_large,
        warmup,
        npb_steps: a.steps,
        timeout_ms: (a.timeout.as_nanos() / 1_000_000).max(1),
        spin_us: a.spin.map_or(0, |s| {
            u32::try_from(s.as_nanos() / 1_000).unwrap_or(u32::MAX)
        }),
        daemon: DaemonParams {
            fragment: u32::try_from(a.daemon_fragment.as_bytes()).unwrap_or(u32::MAX),
            window: a.daemon_window,
        },
        place: Default::default(),
    };
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn the_progress_names_each_sample_in_the_order_the_ranks_run_them() {
        let cli = Cli::parse_from([
            "mp",
            "--local",
            "4",
            "--pattern",
            "pingpong,bt.S",
            "--sizes",
            "8,64K",
        ]);
        let spec = spec_from(&cli.args).unwrap();
        let steps = steps(&spec, 4);
        assert_eq!(steps, ["pingpong at 8 B", "pingpong at 65536 B", "bt.S"]);
        assert_eq!(running(&steps, 0, None), "running pingpong at 8 B");
        assert_eq!(
            running(&steps, 2, Some("x")),
            "running bt.S; last: x",
            "the next one, and the last one's result"
        );
        assert_eq!(running(&steps, 3, Some("x")), "last: x");
    }
}
