//! `weft serve`: the measurement agent that `weft tput` and `weft rr` talk to.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use weft_model::{Duration, Size};
use weft_probe::server::{DEFAULT_PORT, Limits, Server, ServerConfig};

/// Arguments of `weft serve`.
///
/// One TCP port carries control and TCP data connections; UDP tests use one ephemeral UDP port
/// per stream, announced to the client. Every bound below protects the agent from clients that
/// ask too much or misbehave; a client that breaks one gets an error message and is dropped.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Relaying: `weft pattern --pairs A:B` asks agent A to run a test toward agent B \
as its client. A relayed test takes one of A's test slots and must fit A's --max-duration, \
--max-streams and buffer limits; B is sent nothing but a weft request until it has accepted the \
test, so only weft agents receive relayed traffic. Relaying is on by default (an agent already \
sends up to --max-duration of traffic to any client that asks with --reverse); --no-relay \
refuses relay requests."
)]
pub struct Args {
    /// Address to listen on: `HOST:PORT`, `HOST` (port 5301) or `:PORT`; `[::]:5301` for IPv6.
    #[arg(long, default_value = "0.0.0.0:5301")]
    pub bind: String,
    /// Port to listen on (overrides the port of --bind), as iperf3 -p.
    #[arg(short, long)]
    pub port: Option<u16>,
    /// Most tests running at once; more are refused as busy.
    #[arg(long, default_value_t = 8)]
    pub max_tests: usize,
    /// Longest test allowed (e.g. `60s`); running tests are cut off shortly after it.
    #[arg(long, default_value = "60s", value_parser = crate::cmd::bounds::duration("1ms", "30d"))]
    pub max_duration: Duration,
    /// Most data streams per direction in one test.
    #[arg(long, default_value_t = 16)]
    pub max_streams: u16,
    /// Largest control message body (e.g. `64KiB`).
    #[arg(long, default_value = "64KiB", value_parser = crate::cmd::bounds::size("1KiB", "1GiB"))]
    pub max_message: Size,
    /// How long a connection may stay silent before it is dropped (e.g. `10s`).
    #[arg(long, default_value = "10s", value_parser = crate::cmd::bounds::duration("10ms", "1d"))]
    pub idle_timeout: Duration,
    /// Serve one test, then exit (exit code 1 if that test failed).
    #[arg(long)]
    pub once: bool,
    /// Refuse to run tests toward other agents on a client's request (`weft pattern A:B`).
    #[arg(long)]
    pub no_relay: bool,
    /// Leave protected mode: without a key, serve clients from any address (not only this
    /// host's), and relay tests toward loopback, link-local and this host's own addresses.
    #[arg(long)]
    pub open: bool,
    #[command(flatten)]
    pub key: super::gate::AgentKey,
    #[command(flatten)]
    pub lobby: super::gate::LobbyArgs,
}

/// Parses `HOST:PORT`, `HOST`, `:PORT` or `PORT` into a socket address (port 5301 if none).
pub fn parse_bind(s: &str) -> anyhow::Result<SocketAddr> {
    parse_bind_with(s, DEFAULT_PORT)
}

/// As [`parse_bind`], with `default_port` for a bare `HOST`.
pub fn parse_bind_with(s: &str, default_port: u16) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Some(p) = s.strip_prefix(':') {
        if let Ok(port) = p.parse::<u16>() {
            return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
        }
    }
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    if let Ok(ip) = s.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, default_port));
    }
    Err(crate::cli::usage(format!(
        "--bind {s:?}: expected HOST:PORT, an IP address, or :PORT (e.g. 0.0.0.0:{default_port})"
    )))
}

/// Runs `weft serve`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut bind = parse_bind(&args.bind)?;
    if let Some(p) = args.port {
        bind.set_port(p);
    }
    // The global -q/--quiet: no log of connections and tests.
    let quiet = crate::progress::quiet();
    if args.max_tests == 0 || args.max_streams == 0 {
        return Err(crate::cli::usage(
            "--max-tests and --max-streams must be at least 1",
        ));
    }
    if args.idle_timeout.as_nanos() == 0 || args.max_duration.as_nanos() == 0 {
        return Err(crate::cli::usage(
            "--idle-timeout and --max-duration must be positive",
        ));
    }
    let max_message = u32::try_from(args.max_message.as_bytes())
        .ok()
        .filter(|&m| m >= 1024)
        .ok_or_else(|| crate::cli::usage("--max-message must be between 1KiB and 4GiB"))?;
    let log: Option<weft_probe::server::LogFn> = if quiet {
        None
    } else {
        Some(Arc::new(|line: &str| eprintln!("weft serve: {line}")))
    };
    let config = ServerConfig {
        bind,
        limits: Limits {
            max_tests: args.max_tests,
            max_duration: args.max_duration.into(),
            max_streams: args.max_streams,
            max_message,
            idle_timeout: args.idle_timeout.into(),
            lobby: args.lobby.limits(),
            ..Limits::default()
        },
        once: args.once,
        relay: !args.no_relay,
        log,
        key: args.key.load()?,
        open: args.open,
    };
    let notice = config.protected_notice();
    let server = Server::bind(config)?;
    // Always say where we listen (scripts binding port 0 read this line), and protected mode;
    // the logger says them itself when on.
    // Written, not eprintln!: an agent whose stderr reader went away serves on (eprintln!
    // panics on a closed pipe).
    if quiet {
        let mut err = std::io::stderr();
        let _ = writeln!(err, "weft serve: listening on {}", server.local_addr());
        if let Some(n) = notice {
            let _ = writeln!(err, "weft serve: {n}");
        }
    }
    let summary = server.run()?;
    if args.once && summary.tests_ok == 0 {
        anyhow::bail!("the test failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_forms() {
        assert_eq!(parse_bind("127.0.0.1:9").unwrap().port(), 9);
        assert_eq!(parse_bind(":9").unwrap().port(), 9);
        assert_eq!(parse_bind("9").unwrap().port(), 9);
        assert_eq!(parse_bind("::1").unwrap().port(), DEFAULT_PORT);
        assert!(parse_bind("nope:x").is_err());
    }
}
