//! `weft pattern`: concurrent sessions among several agents, started together.

use std::net::SocketAddr;

use weft_model::{Duration, Rate, Size};
use weft_probe::pattern::{self, Endpoint, PatternConfig, PatternError, RrSettings, SessionTest};
use weft_probe::proto::{Amount, Direction, TputSpec, Transport};
use weft_probe::rr::Proto;
use weft_probe::server::DEFAULT_PORT;
use weft_report::write_atomic;

/// What every session of a pattern measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Test {
    /// Bulk throughput (as `weft tput`).
    Tput,
    /// Request/response latency (as `weft rr`).
    Rr,
}

/// Arguments of `weft pattern`.
///
/// A session's data flows between this host (`local`) and an agent, with weft as the client, or
/// between two agents A:B, with A as the client on weft's request (a relayed test).
/// `--one-to-many A,B` sends from here to A and B at once; `--many-to-one A,B` makes A and B send
/// to this host at once (the contended receiver); `--pairs local:A,B:local,A:B` names each
/// session's direction.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "A session's data flows between this host (`local`) and an agent, with weft as \
the client, or between two agents A:B: then weft asks A to run the test toward B as its client \
and report both ends' counts (a relayed test; A must not run with `weft serve --no-relay`). \
--one-to-many sends from here to every agent at once; --many-to-one makes every agent send to \
this host at once (the contended receiver).

Examples:
    weft pattern --one-to-many hostA,hostB --time 10s --line-rate 100Mbps
    weft pattern --many-to-one hostA,hostB,hostC --line-rate 1Gbps -o contention.json
    weft pattern --pairs local:hostA,hostB:local
    weft pattern --pairs hostA:hostB,hostC:hostD --line-rate 100Mbps
    weft pattern --one-to-many hostA,hostB --test rr --size 64 --count 10000
    weft pattern --one-to-many hostA --repeat 4 --load tput --probe rr"
)]
pub struct Args {
    /// Sessions as FROM:TO (or FROM->TO) pairs, comma-separated; each side `local` or an agent
    /// HOST[:PORT]; with two agents, FROM runs the test toward TO.
    #[arg(long, value_name = "PAIRS", group = "shape")]
    pub pairs: Option<String>,
    /// This host sends to every listed agent at once.
    #[arg(long, value_name = "HOSTS", value_delimiter = ',', num_args = 1.., group = "shape")]
    pub one_to_many: Vec<String>,
    /// Every listed agent sends to this host at once.
    #[arg(long, value_name = "HOSTS", value_delimiter = ',', num_args = 1.., group = "shape")]
    pub many_to_one: Vec<String>,
    /// The receiver of --many-to-one: only `local` (this host) is possible.
    #[arg(long, value_name = "HOST", requires = "many_to_one")]
    pub to: Option<String>,
    /// What every session measures: bulk throughput or request/response latency.
    #[arg(long, value_name = "TEST", default_value = "tput")]
    pub test: Test,
    /// Same as --test, for the bulk sessions beside --probe.
    #[arg(long, value_name = "TEST", value_parser = ["tput"], requires = "probe")]
    pub load: Option<String>,
    /// Add a request/response probe to every agent, beside the sessions (latency under load).
    #[arg(long, value_name = "TEST", value_parser = ["rr"])]
    pub probe: Option<String>,
    /// Run every session this many times at once (stress).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: usize,
    /// Use UDP instead of TCP (tput: paced by --rate; rr: one datagram per message).
    #[arg(short, long)]
    pub udp: bool,
    /// tput: how long each session sends.
    #[arg(short, long, default_value = "5s", value_parser = crate::cmd::bounds::duration("1ms", "7d"))]
    pub time: Duration,
    /// tput: bytes per write or datagram [default: 128KiB TCP, 1400 UDP].
    #[arg(short, long, value_parser = crate::cmd::bounds::size("1", "1GiB"))]
    pub len: Option<Size>,
    /// tput: parallel streams per session.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub parallel: u16,
    /// tput: socket buffer size at both ends.
    #[arg(short, long, value_parser = crate::cmd::bounds::size("1", "1GiB"))]
    pub window: Option<Size>,
    /// tput --udp: send rate per session [default: 100Mbps].
    #[arg(short = 'b', long, value_parser = crate::cmd::bounds::rate("0", "10Tbps"))]
    pub rate: Option<Rate>,
    /// rr (sessions and probes): message size.
    #[arg(long, default_value = "64", value_parser = crate::cmd::bounds::size("1", "1GiB"))]
    pub size: Size,
    /// rr: measured transactions per session [default: 2000]. Probes without --count measure
    /// for the load's --time less twice --probe-delay, so that they run inside the load.
    #[arg(long)]
    pub count: Option<u64>,
    /// How long probes wait after the start, so that they measure the load in steady state.
    #[arg(long, default_value = "300ms", value_parser = crate::cmd::bounds::duration("0", "1h"))]
    pub probe_delay: Duration,
    /// Line rate for line efficiency = aggregate / line rate (e.g. `100Mbps`).
    #[arg(long, value_parser = crate::cmd::bounds::rate("1", "10Tbps"))]
    pub line_rate: Option<Rate>,
    #[command(flatten)]
    pub port: super::client_args::PortArg,
    #[command(flatten)]
    pub connect: super::client_args::ConnectArg,
    /// CSV export of the sessions.
    #[command(flatten)]
    pub out: super::client_args::ResultArgs,
    #[command(flatten)]
    pub key: super::gate::ClientKey,
}

/// Runs `weft pattern`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let cfg = config_from(&args)?;
    let progress = if args.test == Test::Tput {
        crate::progress::Progress::timed("pattern", args.time.into())
    } else {
        crate::progress::Progress::spinner("pattern")
    };
    let result = pattern::run(&cfg).map_err(pattern_error);
    progress.finish();
    let result = result?;
    let doc = result.to_result_doc();
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
    if result.failed() {
        anyhow::bail!(
            "{} of {} sessions failed",
            result.sessions.iter().filter(|s| s.error.is_some()).count(),
            result.sessions.len()
        );
    }
    Ok(())
}

fn config_from(a: &Args) -> anyhow::Result<PatternConfig> {
    let port = a.port.or(DEFAULT_PORT);
    let test = session_test(a)?;
    let (name, sessions) = if let Some(p) = &a.pairs {
        let pairs = pattern::parse_pairs(p, port).map_err(pattern_error)?;
        ("pairs", pattern::from_pairs(&pairs, &test))
    } else if !a.one_to_many.is_empty() {
        (
            "one-to-many",
            pattern::one_to_many(&agents(&a.one_to_many, port)?, &test),
        )
    } else if !a.many_to_one.is_empty() {
        if let Some(to) = &a.to {
            if Endpoint::parse(to, port).map_err(pattern_error)? != Endpoint::Local {
                return Err(crate::cli::usage(
                    "--to: the receiver of --many-to-one is this host (`local`); run weft \
                     pattern on the receiving host",
                ));
            }
        }
        (
            "many-to-one",
            pattern::many_to_one(&agents(&a.many_to_one, port)?, &test),
        )
    } else {
        return Err(crate::cli::usage(
            "give the sessions: --pairs, --one-to-many or --many-to-one",
        ));
    };
    if a.repeat == 0 {
        return Err(crate::cli::usage("--repeat must be at least 1"));
    }
    let mut sessions = pattern::repeat(sessions, a.repeat);
    if a.probe.is_some() {
        if a.test != Test::Tput {
            return Err(crate::cli::usage(
                "--probe measures latency beside bulk (tput) sessions",
            ));
        }
        let mut probe = rr_settings(a)?;
        let inside = a
            .time
            .as_nanos()
            .saturating_sub(2 * a.probe_delay.as_nanos());
        if a.count.is_none() && inside > 0 {
            probe.time_ns = Some(inside);
        }
        sessions = pattern::with_probes(sessions, probe);
    }
    let mut cfg = PatternConfig::new(name, sessions);
    cfg.line_rate_bps = a.line_rate.map(|r| r.as_bps() as f64);
    cfg.connect_timeout = a.connect.connect_timeout.into();
    cfg.key = a.key.load()?;
    cfg.probe_delay = a.probe_delay.into();
    cfg.validate().map_err(pattern_error)?;
    Ok(cfg)
}

fn agents(list: &[String], port: u16) -> anyhow::Result<Vec<SocketAddr>> {
    list.iter()
        .map(|h| match Endpoint::parse(h, port).map_err(pattern_error)? {
            Endpoint::Agent(a) => Ok(a),
            Endpoint::Local => Err(crate::cli::usage(
                "list agents here; this host is the other side of every session",
            )),
        })
        .collect()
}

fn session_test(a: &Args) -> anyhow::Result<SessionTest> {
    if a.test == Test::Rr {
        return Ok(SessionTest::Rr(rr_settings(a)?));
    }
    let len = a
        .len
        .map_or(if a.udp { 1400 } else { 128 * 1024 }, |s| s.as_bytes());
    let len = u32::try_from(len)
        .ok()
        .filter(|&l| l > 0 && (!a.udp || (16..=65507).contains(&l)))
        .ok_or_else(|| crate::cli::usage("--len out of range (UDP: 16 to 65507 bytes)"))?;
    if a.time.as_nanos() == 0 || a.parallel == 0 {
        return Err(crate::cli::usage("--time and --parallel must be positive"));
    }
    if !a.udp && a.rate.is_some() {
        return Err(crate::cli::usage("--rate paces UDP only; add --udp"));
    }
    Ok(SessionTest::Tput(TputSpec {
        transport: if a.udp {
            Transport::Udp
        } else {
            Transport::Tcp
        },
        direction: Direction::Forward,
        streams: a.parallel,
        len,
        amount: Amount::TimeNs(a.time.as_nanos()),
        window: a.window.map(|w| w.as_bytes()),
        mss: None,
        cc: None,
        nodelay: false,
        rate_bps: a.udp.then(|| a.rate.map_or(100_000_000, |r| r.as_bps())),
        interval_ns: None,
    }))
}

fn rr_settings(a: &Args) -> anyhow::Result<RrSettings> {
    let size = u32::try_from(a.size.as_bytes())
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| crate::cli::usage("--size must be between 1 byte and 4GiB"))?;
    if a.count == Some(0) {
        return Err(crate::cli::usage("--count must be at least 1"));
    }
    Ok(RrSettings {
        proto: if a.udp && a.probe.is_none() {
            Proto::Udp
        } else {
            Proto::Tcp
        },
        size,
        count: a.count.unwrap_or(2000),
        time_ns: None,
        warmup: 50,
    })
}

fn pattern_error(e: PatternError) -> anyhow::Error {
    match e {
        PatternError::Config(m) | PatternError::Unsupported(m) => crate::cli::usage(m),
    }
}
