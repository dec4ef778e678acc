//! What a request/response run is asked to do: peer, transport, sizes, stop rule, time-outs.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde::Serialize;

use super::RrError;

/// Largest UDP payload over IPv4 (65,535 minus the IP and UDP headers), bytes.
pub const MAX_UDP_PAYLOAD_V4: u32 = 65_507;

/// Largest UDP payload over IPv6 without jumbograms (65,535 minus the UDP header), bytes.
pub const MAX_UDP_PAYLOAD_V6: u32 = 65_527;

/// Largest request or response a TCP run accepts, bytes (64 MiB).
pub const MAX_TCP_MESSAGE: u32 = 64 << 20;

/// The well-known port of the RFC 862 echo service.
pub const ECHO_PORT: u16 = 7;

/// Transport of the data path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// TCP with `TCP_NODELAY`; requests and responses are byte counts on the stream.
    Tcp,
    /// UDP, one datagram per request and per response.
    Udp,
}

impl std::fmt::Display for Proto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
        })
    }
}

/// Who answers the requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    /// A `weft serve` agent at this control address: it opens a data endpoint per size.
    Agent(SocketAddr),
    /// An RFC 862 echo service at this address: the response is the request, byte for byte.
    Echo(SocketAddr),
}

/// When to stop measuring one size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "rule")]
pub enum StopRule {
    /// After exactly this many measured transactions (lost ones included).
    Count {
        /// Measured transactions.
        count: u64,
    },
    /// When the 95% CI half-width of the mean falls below `rel` of the mean, or after `max_count`.
    Converge {
        /// Target relative half-width, a fraction (0.01 for 1%).
        rel: f64,
        /// Cap on measured transactions.
        max_count: u64,
    },
    /// For this long of measured transactions (netperf's -l; `weft pattern` runs latency
    /// sessions beside bulk ones this way).
    Time {
        /// Measuring time per size, ns.
        duration_ns: u64,
    },
}

impl StopRule {
    /// The most measured transactions this rule allows.
    pub fn cap(&self) -> u64 {
        match *self {
            StopRule::Count { count } => count,
            StopRule::Converge { max_count, .. } => max_count,
            StopRule::Time { .. } => u64::MAX,
        }
    }
}

/// A complete description of a request/response run.
#[derive(Clone, Debug)]
pub struct RrConfig {
    /// Who answers.
    pub peer: Peer,
    /// Transport.
    pub proto: Proto,
    /// Connect, transact and close for every transaction (netperf TCP_CRR, the NASA cold start)
    /// instead of one persistent connection. For UDP: a fresh socket per transaction.
    pub cold: bool,
    /// Request sizes to measure, bytes, in order.
    pub sizes: Vec<u32>,
    /// Response size, bytes; `None` answers with as many bytes as the request (an echo).
    /// Only an agent can answer with a different size.
    pub response_size: Option<u32>,
    /// Transactions per size run first and left out of the statistics.
    pub warmup: u64,
    /// When to stop each size.
    pub stop: StopRule,
    /// Transactions kept in flight at once (netperf's -b); 1 is strict ping-pong.
    pub burst: u32,
    /// How long to wait for each reply before counting it lost; over TCP the size is then
    /// aborted (a stream cannot skip an answer), and a connect may block this long.
    pub timeout: Duration,
    /// Abort a size after this many consecutive losses (0: never).
    pub abort_after_losses: u64,
    /// Stop each size after this long, whatever its stop rule asks, and mark it aborted (an
    /// agent relaying the test bounds it by its `--max-duration` this way); `None`: no limit.
    pub time_limit: Option<Duration>,
    /// Wait for messages by spinning on a non-blocking socket (and `SO_BUSY_POLL`) instead of
    /// sleeping, at the client and, through the request, at the agent (`--busy-poll`; warm
    /// tests with one transaction in flight). See [`super::busy`].
    pub busy_poll: bool,
    /// Pin the client's thread to this CPU for the run (`--affinity N`).
    pub client_cpu: Option<u32>,
    /// Ask the agent to pin its serving thread to this CPU (`--affinity N,M`; agents only).
    pub agent_cpu: Option<u32>,
    /// The pre-shared key to prove to an agent (`--key-file`); unused for an echo service.
    pub key: Option<crate::auth::Key>,
}

impl RrConfig {
    /// A warm TCP ping-pong of `sizes` against `peer` with 2000 measured transactions each, 100
    /// warm-up transactions, and a 1 s time-out.
    pub fn new(peer: Peer, sizes: Vec<u32>) -> Self {
        RrConfig {
            peer,
            proto: Proto::Tcp,
            cold: false,
            sizes,
            response_size: None,
            warmup: 100,
            stop: StopRule::Count { count: 2000 },
            burst: 1,
            timeout: Duration::from_secs(1),
            abort_after_losses: 32,
            time_limit: None,
            busy_poll: false,
            client_cpu: None,
            agent_cpu: None,
            key: None,
        }
    }

    /// Checks the combination of settings, with an error that says what to change.
    pub fn validate(&self) -> Result<(), RrError> {
        let bad = |m: String| Err(RrError::Config(m));
        if self.sizes.is_empty() {
            return bad("no request size given: use --size, --sizes or --sweep".into());
        }
        let ipv6 = match self.peer {
            Peer::Agent(a) | Peer::Echo(a) => a.is_ipv6(),
        };
        let max = match self.proto {
            Proto::Udp if ipv6 => MAX_UDP_PAYLOAD_V6,
            Proto::Udp => MAX_UDP_PAYLOAD_V4,
            Proto::Tcp => MAX_TCP_MESSAGE,
        };
        let all = self.sizes.iter().chain(self.response_size.iter());
        for &s in all {
            if s == 0 {
                return bad("a message size of 0 bytes cannot be timed: use 1 or more".into());
            }
            if s > max {
                return bad(match self.proto {
                    Proto::Udp => format!(
                        "a UDP datagram carries at most {max} bytes, and {s} was asked for: \
                         lower the size (a sweep to 32768) or use TCP"
                    ),
                    Proto::Tcp => format!("message size {s} is above the {max}-byte limit"),
                });
            }
        }
        if matches!(self.peer, Peer::Echo(_))
            && self
                .response_size
                .is_some_and(|r| self.sizes.iter().any(|&s| s != r))
        {
            return bad(
                "an echo service answers with the request itself: --response-size needs a \
                 weft agent"
                    .into(),
            );
        }
        if self.burst == 0 {
            return bad("--burst must be at least 1".into());
        }
        if self.burst > 1 && self.cold {
            return bad(
                "--burst needs a persistent connection: it cannot be used with --cold".into(),
            );
        }
        if self.burst > 256 {
            return bad(format!("--burst {} is above the limit of 256", self.burst));
        }
        match self.stop {
            StopRule::Count { count: 0 } => return bad("--count must be at least 1".into()),
            StopRule::Converge { rel, max_count } => {
                if !(rel > 0.0 && rel < 1.0) {
                    return bad(format!(
                        "--converge takes a fraction between 0 and 100%, not {rel}"
                    ));
                }
                if max_count == 0 {
                    return bad("--max-count must be at least 1".into());
                }
            }
            StopRule::Time { duration_ns: 0 } => return bad("--time must be longer than 0".into()),
            StopRule::Count { .. } | StopRule::Time { .. } => {}
        }
        if self.timeout.is_zero() {
            return bad("--timeout must be longer than 0".into());
        }
        if self.busy_poll && (self.cold || self.burst > 1) {
            return bad(
                "--busy-poll spins on one warm connection with one transaction in flight: \
                 not with --cold or --burst"
                    .into(),
            );
        }
        if self.agent_cpu.is_some() && matches!(self.peer, Peer::Echo(_)) {
            return bad(
                "--affinity N,M places the agent's thread on CPU M: an echo service cannot be \
                 asked; give only N"
                    .into(),
            );
        }
        Ok(())
    }

    /// The response size for request size `req`, bytes.
    pub fn response_for(&self, req: u32) -> u32 {
        self.response_size.unwrap_or(req)
    }
}

/// Parses `--sizes 1,64,1K` into byte counts.
pub fn parse_sizes(list: &str) -> Result<Vec<u32>, RrError> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse_one_size)
        .collect::<Result<Vec<_>, _>>()
        .and_then(|v| {
            if v.is_empty() {
                Err(RrError::Config(format!("--sizes {list:?} names no size")))
            } else {
                Ok(v)
            }
        })
}

/// Parses `--sweep 1..65536` into the powers of two from the lower to the upper bound; a bound
/// that is itself a power of two is included, one that is not is included too so that the sweep
/// covers exactly the range asked for (`3..20` gives 3, 4, 8, 16, 20).
pub fn parse_sweep(range: &str) -> Result<Vec<u32>, RrError> {
    let Some((lo, hi)) = range.split_once("..") else {
        return Err(RrError::Config(format!(
            "--sweep takes a range such as 1..65536, not {range:?}"
        )));
    };
    let lo = parse_one_size(lo.trim())?;
    let hi = parse_one_size(hi.trim_start_matches('=').trim())?;
    if lo == 0 || hi < lo {
        return Err(RrError::Config(format!(
            "--sweep {range:?}: the range must run upwards from at least 1 byte"
        )));
    }
    let mut out = vec![lo];
    let mut p = lo.checked_next_power_of_two().unwrap_or(hi);
    if p == lo {
        p = p.saturating_mul(2);
    }
    while p < hi {
        out.push(p);
        p = match p.checked_mul(2) {
            Some(n) => n,
            None => break,
        };
    }
    if hi != lo {
        out.push(hi);
    }
    Ok(out)
}

fn parse_one_size(s: &str) -> Result<u32, RrError> {
    let size: weft_model::Size = s
        .parse()
        .map_err(|e| RrError::Config(format!("bad message size: {e}")))?;
    u32::try_from(size.as_bytes())
        .map_err(|_| RrError::Config(format!("message size {s} is too large")))
}

/// Parses a `--converge` target such as `"1%"` or `"0.01"` into a fraction.
pub fn parse_fraction(s: &str) -> Result<f64, RrError> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| {
        RrError::Config(format!(
            "--converge takes a percentage such as 1%, not {s:?}"
        ))
    })?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(RrError::Config(format!(
            "--converge {s:?} must lie between 0 and 100%"
        )))
    }
}

/// Resolves `HOST`, `HOST:PORT`, `[V6]:PORT` or a bare IPv6 address, using `default_port` when
/// none is given. The first address the resolver returns is used.
pub fn resolve(target: &str, default_port: u16) -> Result<SocketAddr, RrError> {
    let t = target.trim();
    if let Ok(a) = t.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = t
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
    {
        return Ok(SocketAddr::new(ip, default_port));
    }
    let with_port = match t.rsplit_once(':') {
        Some((_, p)) if p.parse::<u16>().is_ok() => t.to_string(),
        Some(_) => {
            return Err(RrError::Config(format!(
                "{target:?}: the port after ':' must be a number from 0 to 65535"
            )));
        }
        None => format!("{t}:{default_port}"),
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| RrError::Config(format!("cannot resolve {target:?}: {e}")))?
        .next()
        .ok_or_else(|| RrError::Config(format!("{target:?} resolves to no address")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_cover_powers_of_two_inclusive() {
        let s = parse_sweep("1..65536").unwrap();
        assert_eq!(s.len(), 17);
        assert_eq!(s.first(), Some(&1));
        assert_eq!(s.last(), Some(&65536));
        assert!(s.windows(2).all(|w| w[1] == 2 * w[0]));
        assert_eq!(
            parse_sweep("64..1024").unwrap(),
            vec![64, 128, 256, 512, 1024]
        );
        assert_eq!(parse_sweep("3..20").unwrap(), vec![3, 4, 8, 16, 20]);
        assert_eq!(parse_sweep("8..8").unwrap(), vec![8]);
        assert_eq!(parse_sweep("1K..4K").unwrap(), vec![1024, 2048, 4096]);
        assert!(parse_sweep("8..4").is_err());
        assert!(parse_sweep("0..4").is_err());
        assert!(parse_sweep("1-4").is_err());
    }

    #[test]
    fn size_lists_and_fractions() {
        assert_eq!(parse_sizes("1, 64,1K").unwrap(), vec![1, 64, 1024]);
        assert!(parse_sizes("1,x").is_err());
        assert!(parse_sizes(",").is_err());
        assert_eq!(parse_fraction("1%").unwrap(), 0.01);
        assert_eq!(parse_fraction("0.05").unwrap(), 0.05);
        assert!(parse_fraction("0%").is_err());
        assert!(parse_fraction("150%").is_err());
        assert!(parse_fraction("abc").is_err());
    }

    #[test]
    fn resolves_hosts_with_and_without_ports() {
        assert_eq!(
            resolve("127.0.0.1", 7).unwrap(),
            "127.0.0.1:7".parse().unwrap()
        );
        assert_eq!(
            resolve("127.0.0.1:9", 7).unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert_eq!(resolve("[::1]:9", 7).unwrap(), "[::1]:9".parse().unwrap());
        assert_eq!(resolve("::1", 7).unwrap(), "[::1]:7".parse().unwrap());
        assert_eq!(resolve("localhost:9", 7).unwrap().port(), 9);
        assert!(resolve("localhost:x", 7).is_err());
    }

    #[test]
    fn validation_names_the_problem() {
        let echo = Peer::Echo("127.0.0.1:7".parse().unwrap());
        let mut c = RrConfig::new(echo.clone(), vec![65536]);
        c.proto = Proto::Udp;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("UDP") && e.contains("65507"), "{e}");
        c.proto = Proto::Tcp;
        assert!(c.validate().is_ok());
        c.response_size = Some(10);
        assert!(c.validate().unwrap_err().to_string().contains("agent"));
        let mut c = RrConfig::new(echo, vec![64]);
        c.burst = 4;
        c.cold = true;
        assert!(c.validate().is_err());
        c.cold = false;
        assert!(c.validate().is_ok());
        c.stop = StopRule::Converge {
            rel: 0.0,
            max_count: 10,
        };
        assert!(c.validate().is_err());
        c.sizes = vec![0];
        c.stop = StopRule::Count { count: 1 };
        assert!(c.validate().is_err());
    }
}
