//! `weft rr HOST`: request/response latency to a weft agent or an RFC 862 echo service.

use weft_model::{Duration as WDuration, Size};
use weft_probe::rr::{self, Peer, Proto, RrConfig, RrError, StopRule, config};
use weft_probe::server::DEFAULT_PORT;

use super::bounds;
use crate::progress::Progress;

/// Arguments of `weft rr`.
///
/// Times transactions (a request, then its response) like the studies' echo tests and the NASA
/// message-size sweeps: warm on one persistent connection or `--cold` with a connection per
/// transaction (netperf TCP_CRR; the set-up time is also reported apart), a fixed `--count` or
/// until the 95% confidence interval of the mean is within `--converge` of it. UDP requests
/// unanswered within `--timeout` count as lost. Latencies are round trips; the derived
/// throughput counts the bytes of both directions: (request + response) * 8 / mean RTT.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    weft rr agent.example --sweep 1..65536 --converge 1%\n  \
    weft rr host --echo --udp --sizes 64,128,256,512,1024 --count 10000 --timeout 10ms\n  \
    weft rr agent.example --cold --size 1 --count 2000 --json\n  \
    weft rr agent.example --sweep 1..64K --affinity 0,1 --busy-poll --floor\n  \
    weft rr --floor --affinity 0,1     # the host alone: what waking a thread costs here\n\n\
On a virtual machine a thread that sleeps between messages lets its virtual CPU halt, and waking \
it costs tens to hundreds of microseconds that belong to the host, not to the network: the \
round trips then jump from run to run and from one size to the next. --busy-poll spins on the \
socket at both ends instead (one busy CPU per end while the test runs), --affinity places the \
two ends on CPUs of your choosing, and --floor measures the host's own wake-up round trip so \
that the result says how much of the RTT is the machine.")]
pub struct Args {
    /// The options, boxed so that the command enum stays small.
    #[command(flatten)]
    pub opts: Box<Opts>,
}

/// The options of `weft rr` (see [`Args`]).
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("port", |a| a.help("The port when HOST names none (iperf3 -p) [default: 5301, or 7 with --echo]")),
    mut_arg("json", |a| a.help("Print the result document as JSON on stdout (and nothing else)")),
    mut_arg("output", |a| a.value_name("FILE"))
)]
pub struct Opts {
    /// HOST[:PORT] of a weft agent (default port 5301) or, with --echo, of an echo service
    /// (default port 7). IPv6 as [ADDR]:PORT. Optional with --floor.
    #[arg(required_unless_present = "floor")]
    pub host: Option<String>,

    #[command(flatten)]
    pub port: super::client_args::PortArg,

    /// Talk to a standard RFC 862 echo service instead of a weft agent.
    #[arg(long)]
    pub echo: bool,

    /// UDP instead of TCP.
    #[arg(short = 'u', long)]
    pub udp: bool,

    /// Connect, transact and close for every transaction (UDP: a fresh socket each time).
    #[arg(long)]
    pub cold: bool,

    /// Request size, e.g. 64 or 1K [default: 64].
    #[arg(long, value_name = "SIZE", conflicts_with_all = ["sizes", "sweep"], value_parser = size_list)]
    pub size: Option<SizeList>,

    /// Request sizes, comma-separated: 1,64,1K.
    #[arg(long, value_name = "LIST", conflicts_with = "sweep", value_parser = size_list)]
    pub sizes: Option<SizeList>,

    /// Powers of two from LO to HI, both ends included: 1..65536.
    #[arg(long, value_name = "LO..HI", value_parser = size_sweep)]
    pub sweep: Option<SizeList>,

    /// Response size (an agent only; like netperf -r) [default: the request size].
    #[arg(long, value_name = "SIZE", value_parser = bounds::size("0", "4GiB"))]
    pub response_size: Option<Size>,

    /// Transactions per size run first and left out of the statistics.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub warmup: u64,

    /// Measured transactions per size (lost ones included) [default: 2000].
    #[arg(short = 'n', long, value_name = "N", conflicts_with = "converge")]
    pub count: Option<u64>,

    /// Measure each size for this long instead of a count (netperf -l): 10s.
    #[arg(long, value_name = "DURATION", conflicts_with_all = ["count", "converge"],
          value_parser = bounds::duration("1ns", "30d"))]
    pub time: Option<WDuration>,

    /// Stop a size when the 95% CI half-width of the mean is below this fraction of it: 1%.
    #[arg(long, value_name = "PCT", value_parser = |s: &str| config::parse_fraction(s).map_err(|e| e.to_string()))]
    pub converge: Option<f64>,

    /// With --converge: most measured transactions per size.
    #[arg(
        long,
        default_value_t = 100_000,
        value_name = "N",
        requires = "converge"
    )]
    pub max_count: u64,

    /// UDP: wait this long for each reply, then count it lost. TCP: longest a connect, read or
    /// write may block before the size is aborted.
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = bounds::duration("1ns", "1d"))]
    pub timeout: WDuration,

    /// Transactions in flight at once (netperf -b); not with --cold.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub burst: u32,

    /// Abort a size after this many consecutive losses (0: never).
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub abort_after: u64,

    /// Pin the client to CPU N and ask the agent to serve from CPU M (iperf3 -A N,M).
    #[arg(short = 'A', long, value_name = "N[,M]", value_parser = Affinity::parse)]
    pub affinity: Option<Affinity>,

    /// Spin on non-blocking sockets at both ends instead of sleeping between messages (and set
    /// SO_BUSY_POLL where the kernel takes it); warm tests with --burst 1.
    #[arg(long)]
    pub busy_poll: bool,

    /// Measure the host's own wake-up latency first (two threads ping-ponging over eventfds,
    /// blocking and spinning, and a 50 us sleep's overshoot), placed as --affinity says; alone
    /// (no HOST), only that.
    #[arg(long)]
    pub floor: bool,

    /// CSV export of the sizes.
    #[command(flatten)]
    pub out: super::client_args::ResultArgs,
    #[command(flatten)]
    pub key: super::gate::ClientKey,
}

/// Runs `weft rr`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let args = *args.opts;
    let affinity = args.affinity.map(|a| (a.client, a.agent));
    let floor = if args.floor {
        let cpus = affinity.map_or((None, None), |(c, a)| (Some(c), a));
        let f = rr::floor::measure(FLOOR_ROUNDS, cpus).map_err(|e| anyhow::anyhow!("{e}"))?;
        Some(f)
    } else {
        None
    };
    let Some(host) = args.host.as_deref() else {
        return floor_only(&args, floor);
    };
    let mut cfg = config_from(&args, host).map_err(to_anyhow)?;
    if let Some((client, agent)) = affinity {
        cfg.client_cpu = Some(client);
        cfg.agent_cpu = agent;
    }
    cfg.busy_poll = args.busy_poll;
    cfg.key = args.key.load()?;
    if cfg.key.is_some() && args.echo {
        return Err(crate::cli::usage(
            "--key-file proves a key to a weft agent; an echo service (--echo) takes none",
        ));
    }
    cfg.validate().map_err(to_anyhow)?;
    let bar = Progress::bar("rr", cfg.sizes.len() as u64, "sizes");
    let result = rr::run_with_progress(&cfg, |s| {
        bar.inc(1);
        bar.message(format!(
            "{} B: p50 {:.1} us",
            s.request_bytes,
            s.rtt.p50_ns as f64 / 1e3
        ));
        tracing::info!(
            size = s.request_bytes,
            answered = s.count,
            lost = s.lost,
            p50_ns = s.rtt.p50_ns,
            "rr size done"
        );
    });
    bar.finish();
    let mut result = result.map_err(to_anyhow)?;
    result.floor = floor;
    let doc = result.to_result_doc();
    args.out.csv.write(&doc)?;
    if let Some(path) = &args.out.output {
        let text = doc.to_json_pretty() + "\n";
        weft_report::write_atomic(path, text.as_bytes())
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        if !args.out.json {
            eprintln!("wrote {}", path.display());
        }
    }
    let text = if args.out.json {
        doc.to_json_pretty() + "\n"
    } else {
        result.table()
    };
    print_stdout(&text)?;
    let aborted: Vec<String> = result
        .sizes
        .iter()
        .filter_map(|s| {
            s.aborted
                .as_ref()
                .map(|a| format!("{} bytes: {a}", s.request_bytes))
        })
        .collect();
    if aborted.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "{} of {} sizes aborted:\n  {}",
            aborted.len(),
            result.sizes.len(),
            aborted.join("\n  ")
        ))
    }
}

/// Writes to stdout; a reader that went away (`| head`) is not an error.
fn print_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("writing to stdout: {e}"))
        }
        _ => Ok(()),
    }
}

fn to_anyhow(e: RrError) -> anyhow::Error {
    match e {
        RrError::Config(m) => crate::cli::usage(m),
        other => anyhow::Error::new(other),
    }
}

/// Samples of each figure of `--floor`.
const FLOOR_ROUNDS: u64 = 2000;

/// `weft rr --floor` without a HOST: the host's figures alone, as an `rr.floor` document.
fn floor_only(args: &Opts, floor: Option<rr::floor::Floor>) -> anyhow::Result<()> {
    let Some(f) = floor else {
        return Err(crate::cli::usage(
            "give HOST, or --floor to measure the host alone",
        ));
    };
    let mut doc = weft_report::ResultDoc::new("rr.floor", weft_report::Engine::Real);
    doc.params = serde_json::json!({ "rounds": FLOOR_ROUNDS, "affinity": args.affinity.map(|a| a.to_string()),
                                     "timer_sleep_ns": rr::floor::TIMER_SLEEP.as_nanos() as u64 });
    doc.samples = ["wakeup_rtt", "spin_rtt", "timer_overshoot"]
        .iter()
        .zip([&f.wakeup_rtt, &f.spin_rtt, &f.timer_overshoot])
        .map(|(name, s)| serde_json::json!({ "figure": name, "stats": s }))
        .collect();
    doc.summary = serde_json::to_value(&f)?;
    args.out.csv.write(&doc)?;
    if let Some(path) = &args.out.output {
        weft_report::write_atomic(path, (doc.to_json_pretty() + "\n").as_bytes())
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    if args.out.json {
        print_stdout(&(doc.to_json_pretty() + "\n"))
    } else {
        print_stdout(&f.table())
    }
}

fn config_from(a: &Opts, host: &str) -> Result<RrConfig, RrError> {
    let port = a.port.or(if a.echo {
        config::ECHO_PORT
    } else {
        DEFAULT_PORT
    });
    let addr = config::resolve(host, port)?;
    let peer = if a.echo {
        Peer::Echo(addr)
    } else {
        Peer::Agent(addr)
    };
    let sizes = match (&a.size, &a.sizes, &a.sweep) {
        (_, _, Some(l)) | (_, Some(l), _) | (Some(l), _, _) => l.0.clone(),
        (None, None, None) => vec![64],
    };
    let mut c = RrConfig::new(peer, sizes);
    c.proto = if a.udp { Proto::Udp } else { Proto::Tcp };
    c.cold = a.cold;
    c.response_size = match a.response_size {
        Some(s) => Some(
            u32::try_from(s.as_bytes())
                .map_err(|_| RrError::Config("--response-size is too large".into()))?,
        ),
        None => None,
    };
    c.warmup = a.warmup;
    c.stop = match (&a.converge, &a.time) {
        (Some(f), _) => StopRule::Converge {
            rel: *f,
            max_count: a.max_count,
        },
        (None, Some(t)) => StopRule::Time { duration_ns: t.0 },
        (None, None) => StopRule::Count {
            count: a.count.unwrap_or(2000),
        },
    };
    c.burst = a.burst;
    c.timeout = std::time::Duration::from_nanos(a.timeout.0);
    c.abort_after_losses = a.abort_after;
    c.validate()?;
    Ok(c)
}

/// Request sizes given on the command line (bytes), in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeList(pub Vec<u32>);

/// `--size 64` or `--sizes 1,64,1K`.
fn size_list(s: &str) -> Result<SizeList, String> {
    config::parse_sizes(s)
        .map(SizeList)
        .map_err(|e| e.to_string())
}

/// `--sweep 1..64K`: the powers of two between the bounds, both bounds included.
fn size_sweep(s: &str) -> Result<SizeList, String> {
    config::parse_sweep(s)
        .map(SizeList)
        .map_err(|e| e.to_string())
}

/// `--affinity N[,M]`: the client's CPU and, optionally, the agent's (iperf3 -A).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Affinity {
    /// CPU the client runs on.
    pub client: u32,
    /// CPU the agent serves from, if asked.
    pub agent: Option<u32>,
}

impl Affinity {
    fn parse(s: &str) -> Result<Affinity, String> {
        let (client, agent) = rr::place::parse_affinity(s)?;
        Ok(Affinity { client, agent })
    }
}

impl std::fmt::Display for Affinity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.agent {
            Some(a) => write!(f, "{},{a}", self.client),
            None => write!(f, "{}", self.client),
        }
    }
}
