//! `weft tput HOST[:PORT]`: ttcp/iperf3-style throughput to a `weft serve` agent.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};

use serde_json::json;
use weft_model::{Duration, Rate, Size};
use weft_probe::ProbeError;
use weft_probe::proto::{Amount, Direction, TputSpec, Transport};
use weft_probe::server::DEFAULT_PORT;
use weft_probe::tput::{TputConfig, TputEvent};

/// Arguments of `weft tput`.
///
/// The receiver's goodput is the headline; the sender's and the receiver's byte counts are both
/// reported and must agree (TCP: exactly; UDP: received + lost = sent). On Linux `--window N`
/// makes the kernel report buffers of 2N (bookkeeping overhead is counted in the buffer), of
/// which roughly N is advertised as window (tcp_adv_win_scale); see the README.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("port", |a| a.help("The agent's port when HOST names none (iperf3 -p) [default: 5301]")),
    mut_arg("connect_timeout", |a| a.help("Time-out for connecting and each set-up step"))
)]
pub struct Args {
    /// The agent: `HOST`, `HOST:PORT` or `[IPv6]:PORT` (default port 5301).
    pub host: String,
    #[command(flatten)]
    pub port: super::client_args::PortArg,
    /// Use UDP (paced by --rate) instead of TCP.
    #[arg(short, long)]
    pub udp: bool,
    /// Bytes per write, or per datagram with --udp (ttcp -l) [default: 128KiB TCP, 1400 UDP].
    #[arg(short, long, value_parser = crate::cmd::bounds::size("1", "1GiB"))]
    pub len: Option<Size>,
    /// Send this many bytes in total (over all streams), then stop.
    #[arg(short = 'n', long, conflicts_with_all = ["count", "time"], value_parser = crate::cmd::bounds::size("1", "1024TiB"))]
    pub bytes: Option<Size>,
    /// Send this many buffers of --len in total (ttcp -n), then stop.
    #[arg(short = 'k', long, conflicts_with = "time")]
    pub count: Option<u64>,
    /// Send for this long [default: 10s].
    #[arg(short, long, value_parser = crate::cmd::bounds::duration("1ms", "7d"))]
    pub time: Option<Duration>,
    /// SO_SNDBUF/SO_RCVBUF on every data socket at both ends (the kernel reports double).
    #[arg(short, long, value_parser = crate::cmd::bounds::size("1", "1GiB"))]
    pub window: Option<Size>,
    /// TCP maximum segment size (TCP_MAXSEG), set before connecting.
    #[arg(short = 'M', long)]
    pub mss: Option<u32>,
    /// TCP congestion control at both ends: reno, cubic, bbr, ... (as the kernel offers).
    #[arg(short = 'C', long)]
    pub cc: Option<String>,
    /// Disable Nagle's algorithm (TCP_NODELAY).
    #[arg(short = 'N', long)]
    pub nodelay: bool,
    /// Parallel streams per direction, each on its own thread at both ends.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub parallel: u16,
    /// The agent sends, this host receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// UDP send rate over all streams of a direction (e.g. `100Mbps`; 0 = unpaced) [default: 1Mbps].
    #[arg(short = 'b', long, value_parser = crate::cmd::bounds::rate("0", "10Tbps"))]
    pub rate: Option<Rate>,
    /// Report receiver-side throughput every interval (e.g. `1s`).
    #[arg(short, long, value_parser = crate::cmd::bounds::duration("1ms", "1h"))]
    pub interval: Option<Duration>,
    #[command(flatten)]
    pub connect: super::client_args::ConnectArg,
    /// CSV export of the intervals.
    #[command(flatten)]
    pub out: super::client_args::ResultArgs,
    /// Print one JSON event per line while running, the result document last.
    #[arg(long, conflicts_with = "json")]
    pub json_stream: bool,
    #[command(flatten)]
    pub key: super::gate::ClientKey,
}

/// Resolves `HOST`, `HOST:PORT` or `[V6]:PORT` with `default_port`.
pub fn resolve(host: &str, default_port: u16) -> anyhow::Result<SocketAddr> {
    let with_port = if host.parse::<std::net::IpAddr>().is_ok() {
        // A bare IPv6 address contains colons but no port.
        SocketAddr::new(host.parse()?, default_port).to_string()
    } else if host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        host.to_string()
    } else {
        format!("{host}:{default_port}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("cannot resolve {host:?}: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{host:?} has no address"))
}

fn spec_from(args: &Args) -> anyhow::Result<TputSpec> {
    let transport = if args.udp {
        Transport::Udp
    } else {
        Transport::Tcp
    };
    let len = args
        .len
        .map_or(if args.udp { 1400 } else { 128 * 1024 }, |s| s.as_bytes());
    let len = u32::try_from(len)
        .ok()
        .filter(|&l| l > 0)
        .ok_or_else(|| crate::cli::usage("--len must be between 1 byte and 4GiB"))?;
    if args.udp && !(16..=65507).contains(&len) {
        return Err(crate::cli::usage(
            "with --udp, --len must be between 16 and 65507 bytes",
        ));
    }
    let amount = if let Some(b) = args.bytes {
        Amount::Bytes(b.as_bytes())
    } else if let Some(c) = args.count {
        Amount::Count(c)
    } else {
        Amount::TimeNs(args.time.map_or(10_000_000_000, |t| t.as_nanos()))
    };
    if matches!(
        amount,
        Amount::Bytes(0) | Amount::Count(0) | Amount::TimeNs(0)
    ) {
        return Err(crate::cli::usage(
            "--bytes, --count and --time must be positive",
        ));
    }
    if args.parallel == 0 {
        return Err(crate::cli::usage("--parallel must be at least 1"));
    }
    if !args.udp && args.rate.is_some() {
        return Err(crate::cli::usage("--rate paces UDP only; add --udp"));
    }
    if args.udp && (args.mss.is_some() || args.cc.is_some() || args.nodelay) {
        return Err(crate::cli::usage(
            "--mss, --cc and --nodelay are TCP options",
        ));
    }
    let direction = if args.bidir {
        Direction::Bidir
    } else if args.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    Ok(TputSpec {
        transport,
        direction,
        streams: args.parallel,
        len,
        amount,
        window: args.window.map(|w| w.as_bytes()),
        mss: args.mss,
        cc: args.cc.clone(),
        nodelay: args.nodelay,
        rate_bps: args
            .udp
            .then(|| args.rate.map_or(1_000_000, |r| r.as_bps())),
        interval_ns: args.interval.map(|i| i.as_nanos()),
    })
}

/// Runs `weft tput`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let spec = spec_from(&args)?;
    let server = resolve(&args.host, args.port.or(DEFAULT_PORT))?;
    let cfg = TputConfig {
        server,
        spec,
        connect_timeout: args.connect.connect_timeout.into(),
        key: args.key.load()?,
    };
    let stream = args.json_stream;
    let table = !args.out.json && !args.json_stream;
    let mut out = std::io::stdout().lock();
    let mut observe = |ev: &TputEvent| {
        let line = match ev {
            TputEvent::Accepted { test_id } if stream => {
                Some(json!({ "event": "accepted", "test_id": test_id }).to_string())
            }
            TputEvent::Started if stream => Some(json!({ "event": "started" }).to_string()),
            TputEvent::Interval(s) if stream => {
                Some(json!({ "event": "interval", "sample": s }).to_string())
            }
            TputEvent::Interval(s) if table => Some(format!(
                "[{:>6.2}-{:>6.2} s] {:<4} {:>12} {:>12}{}",
                s.start_s,
                s.end_s,
                s.direction,
                Size(s.bytes).to_string(),
                Rate(s.bps.round() as u64).to_string(),
                s.lost.map_or(String::new(), |l| format!(
                    "  {} dgrams, lost {l}",
                    s.packets
                ))
            )),
            _ => None,
        };
        if let Some(l) = line {
            let _ = writeln!(out, "{l}");
            let _ = out.flush();
        }
    };
    // Interval lines on stdout already show progress; a bar would only repeat them.
    let progress = match cfg.spec.amount {
        _ if !table || args.interval.is_some() => None,
        Amount::TimeNs(t) => Some(crate::progress::Progress::timed(
            "tput",
            std::time::Duration::from_nanos(t),
        )),
        _ => Some(crate::progress::Progress::spinner("tput")),
    };
    let result = weft_probe::tput::run(&cfg, &mut observe);
    drop(progress);
    let result = match result {
        Ok(r) => r,
        Err(ProbeError::Config(m)) => return Err(crate::cli::usage(m)),
        Err(e) => return Err(e.into()),
    };
    let doc = result.to_result_doc();
    args.out.csv.write(&doc)?;
    if let Some(path) = &args.out.output {
        weft_report::write_atomic(path, doc.to_json_pretty().as_bytes())
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if args.out.json {
        writeln!(out, "{}", doc.to_json_pretty())?;
    } else if stream {
        writeln!(out, "{}", json!({ "event": "result", "result": doc }))?;
    } else {
        write!(out, "{}", result.to_table())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_host_forms() {
        assert_eq!(resolve("127.0.0.1", 5301).unwrap().port(), 5301);
        assert_eq!(resolve("127.0.0.1:7", 5301).unwrap().port(), 7);
        assert_eq!(resolve("::1", 5301).unwrap().port(), 5301);
        assert_eq!(resolve("[::1]:8", 5301).unwrap().port(), 8);
        assert_eq!(resolve("localhost:9", 5301).unwrap().port(), 9);
    }
}
