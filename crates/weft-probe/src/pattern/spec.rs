//! What a pattern is made of: endpoints, sessions, and the parsing of `--pairs` lists.
//!
//! A session's data flows between the host that runs `weft pattern` (`local`) and one agent, or
//! between two agents, one of which is asked to act as the client (a relayed test; see the
//! module docs of [`super`]).

use std::fmt;
use std::net::SocketAddr;

use crate::proto::TputSpec;
use crate::rr::Proto;
use crate::rr::config::resolve;

use super::PatternError;

/// One side of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// The host that runs `weft pattern`.
    Local,
    /// A `weft serve` agent at this control address.
    Agent(SocketAddr),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Local => f.write_str("local"),
            Endpoint::Agent(a) => write!(f, "{a}"),
        }
    }
}

impl Endpoint {
    /// Parses `local` (also `-` or `@`), `HOST`, `HOST:PORT` or `[IPv6]:PORT` (`default_port`
    /// when none is given), resolving host names.
    pub fn parse(s: &str, default_port: u16) -> Result<Self, PatternError> {
        let t = s.trim();
        if is_local(t) {
            return Ok(Endpoint::Local);
        }
        resolve(t, default_port)
            .map(Endpoint::Agent)
            .map_err(|e| PatternError::Config(e.to_string()))
    }
}

fn is_local(t: &str) -> bool {
    matches!(t, "local" | "-" | "@")
}

/// What a session measures.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionTest {
    /// Bulk throughput; the spec's direction is set from the session's endpoints.
    Tput(TputSpec),
    /// Request/response latency at one message size.
    Rr(RrSettings),
}

impl SessionTest {
    /// `tput` or `rr`.
    pub fn name(&self) -> &'static str {
        match self {
            SessionTest::Tput(_) => "tput",
            SessionTest::Rr(_) => "rr",
        }
    }
}

/// Settings of a request/response session.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RrSettings {
    /// TCP or UDP.
    pub proto: Proto,
    /// Request (and echoed response) size, bytes.
    pub size: u32,
    /// Measured transactions (when `time_ns` is not given).
    pub count: u64,
    /// Measure for this long instead of `count` transactions, ns (probes beside bulk load).
    pub time_ns: Option<u64>,
    /// Unmeasured transactions first.
    pub warmup: u64,
}

impl Default for RrSettings {
    fn default() -> Self {
        RrSettings {
            proto: Proto::Tcp,
            size: 64,
            count: 1000,
            time_ns: None,
            warmup: 50,
        }
    }
}

/// A session's part in the pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// One of the pattern's own sessions.
    Session,
    /// Bulk traffic that request/response probes measure latency under.
    Load,
    /// A request/response probe running beside the load.
    Probe,
}

impl Role {
    /// `""`, `load` or `probe`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Session => "",
            Role::Load => "load",
            Role::Probe => "probe",
        }
    }
}

/// Who is the client of a session and who the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// This host is the client of `agent`; `agent_sends` when data flows agent -> local.
    Direct {
        /// The agent.
        agent: SocketAddr,
        /// Whether the agent is the sender (`A:local`).
        agent_sends: bool,
    },
    /// Agent `from` is the client of a test toward agent `to` (`A:B`), on this host's request.
    Relay {
        /// The agent that sends (and runs the client side).
        from: SocketAddr,
        /// The agent that receives.
        to: SocketAddr,
    },
}

/// One concurrent session: data flows `from` -> `to`; at least one of them is an agent.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    /// Where the data (or the requests) come from.
    pub from: Endpoint,
    /// Where they go.
    pub to: Endpoint,
    /// What is measured.
    pub test: SessionTest,
    /// Part in the pattern.
    pub role: Role,
}

impl Session {
    /// Who is the client and who the server, or why the session cannot run.
    pub fn route(&self) -> Result<Route, PatternError> {
        match (self.from, self.to) {
            (Endpoint::Local, Endpoint::Agent(agent)) => Ok(Route::Direct {
                agent,
                agent_sends: false,
            }),
            (Endpoint::Agent(agent), Endpoint::Local) => Ok(Route::Direct {
                agent,
                agent_sends: true,
            }),
            (Endpoint::Agent(from), Endpoint::Agent(to)) => Ok(Route::Relay { from, to }),
            (Endpoint::Local, Endpoint::Local) => Err(PatternError::Config(
                "a session from local to local measures nothing: name an agent on one side".into(),
            )),
        }
    }

    /// The agent this host connects to (for `A:B`, the relay `A`), or why the session cannot
    /// run.
    pub fn agent(&self) -> Result<SocketAddr, PatternError> {
        Ok(match self.route()? {
            Route::Direct { agent, .. } => agent,
            Route::Relay { from, .. } => from,
        })
    }

    /// `from→to`, with the role in brackets when there is one.
    pub fn label(&self) -> String {
        format!("{}→{}", self.from, self.to)
    }
}

/// Parses a `--pairs` list: `FROM:TO` or `FROM->TO` items separated by commas, each side an
/// endpoint as [`Endpoint::parse`] reads it. With host:port on both sides, `A:1:B:2` is split
/// where both halves read as endpoints; an ambiguous item asks for `->`.
pub fn parse_pairs(
    list: &str,
    default_port: u16,
) -> Result<Vec<(Endpoint, Endpoint)>, PatternError> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (a, b) = split_pair(item)?;
        out.push((
            Endpoint::parse(a, default_port)?,
            Endpoint::parse(b, default_port)?,
        ));
    }
    if out.is_empty() {
        return Err(PatternError::Config(
            "--pairs needs at least one FROM:TO pair".into(),
        ));
    }
    Ok(out)
}

/// Splits one pair item into its two endpoint texts.
pub fn split_pair(item: &str) -> Result<(&str, &str), PatternError> {
    if let Some((a, b)) = item.split_once("->") {
        return Ok((a.trim(), b.trim()));
    }
    let splits: Vec<(&str, &str)> = item
        .match_indices(':')
        .map(|(i, _)| (&item[..i], &item[i + 1..]))
        .filter(|(a, b)| looks_like_endpoint(a) && looks_like_endpoint(b))
        .collect();
    match splits.as_slice() {
        [one] => Ok(*one),
        [] => Err(PatternError::Config(format!(
            "{item:?} is not a pair: write FROM:TO or FROM->TO, each side `local`, HOST or HOST:PORT"
        ))),
        _ => Err(PatternError::Config(format!(
            "{item:?} can be split in more than one way: write FROM->TO"
        ))),
    }
}

/// Whether `s` reads as an endpoint without resolving it.
fn looks_like_endpoint(s: &str) -> bool {
    let s = s.trim();
    if is_local(s) {
        return true;
    }
    if let Some(rest) = s.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((ip, "")) => ip.parse::<std::net::Ipv6Addr>().is_ok(),
            Some((ip, port)) => {
                ip.parse::<std::net::Ipv6Addr>().is_ok()
                    && port
                        .strip_prefix(':')
                        .is_some_and(|p| p.parse::<u16>().is_ok())
            }
            None => false,
        };
    }
    let host_ok = |h: &str| {
        !h.is_empty()
            && h.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
    };
    match s.split_once(':') {
        None => host_ok(s),
        Some((h, p)) => host_ok(h) && p.parse::<u16>().is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_split_at_the_only_sensible_colon() {
        assert_eq!(split_pair("a:b").unwrap(), ("a", "b"));
        assert_eq!(
            split_pair("127.0.0.1:5001:127.0.0.2:5002").unwrap(),
            ("127.0.0.1:5001", "127.0.0.2:5002")
        );
        assert_eq!(split_pair("local:h:9").unwrap(), ("local", "h:9"));
        assert_eq!(split_pair("[::1]:5:local").unwrap(), ("[::1]:5", "local"));
        assert_eq!(split_pair("a:1->b").unwrap(), ("a:1", "b"));
        assert!(
            split_pair("a:5001:5002")
                .unwrap_err()
                .to_string()
                .contains("->")
        );
        assert!(split_pair("justone").is_err());
    }

    #[test]
    fn parse_pairs_reads_local_and_addresses() {
        let p = parse_pairs("local:127.0.0.1:7000, 127.0.0.1->local", 5301).unwrap();
        assert_eq!(p[0].0, Endpoint::Local);
        assert_eq!(p[0].1, Endpoint::Agent("127.0.0.1:7000".parse().unwrap()));
        assert_eq!(p[1].0, Endpoint::Agent("127.0.0.1:5301".parse().unwrap()));
        assert!(parse_pairs(" , ", 1).is_err());
    }

    #[test]
    fn routes_name_the_client_and_local_to_local_is_refused() {
        let a = Endpoint::Agent("127.0.0.1:1".parse().unwrap());
        let b = Endpoint::Agent("127.0.0.1:2".parse().unwrap());
        let s = |from, to| Session {
            from,
            to,
            test: SessionTest::Rr(RrSettings::default()),
            role: Role::Session,
        };
        let addr = |e| match e {
            Endpoint::Agent(x) => x,
            Endpoint::Local => unreachable!(),
        };
        assert_eq!(
            s(Endpoint::Local, a).route().unwrap(),
            Route::Direct {
                agent: addr(a),
                agent_sends: false
            }
        );
        assert_eq!(
            s(a, Endpoint::Local).route().unwrap(),
            Route::Direct {
                agent: addr(a),
                agent_sends: true
            }
        );
        assert_eq!(
            s(a, b).route().unwrap(),
            Route::Relay {
                from: addr(a),
                to: addr(b)
            }
        );
        assert_eq!(s(a, b).agent().unwrap(), addr(a));
        let e = s(Endpoint::Local, Endpoint::Local).agent().unwrap_err();
        assert!(matches!(e, PatternError::Config(_)), "{e}");
    }
}
