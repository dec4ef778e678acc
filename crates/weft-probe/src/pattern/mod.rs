//! Concurrent sessions among several agents (`weft pattern`): the GIGAswitch line-efficiency and
//! stress tests and the Sandia many-to-one experiment.
//!
//! A pattern is a list of [`Session`]s started together behind a barrier, each a throughput
//! (`tput`) or request/response (`rr`) test, and reported per session and in aggregate: the sum
//! of the sessions' receiver goodputs, its ratio to a given line rate (line efficiency, as the
//! GIGAswitch study computes it), Jain's fairness index over the sessions, and, when
//! request/response probes run beside bulk load, their latency under that load.
//!
//! **Who is the client.** A session's data flows between the host that runs `weft pattern`
//! (`local`) and one agent, forward (local -> agent, ttcp -t on this host) or reverse
//! (agent -> local), with weft as the client; or between two agents, `A:B`, with `A` as the
//! client of an ordinary test toward `B` on weft's request (a relayed test, see
//! [`crate::relay`]; `A` must allow relaying, which `weft serve` does unless `--no-relay`). So
//! - `one_to_many(A, B, C)`: this host sends to A, B and C at once (one output port, many
//!   destinations);
//! - `many_to_one(A, B, C)`: A, B and C send to this host at once: the contended output port is
//!   this host's link, the Sandia "two hosts ttcp-ing to one receiver" case;
//! - pairs `local:A`, `A:local`, `A:B`: one session each, in the direction given; `A:B` sessions
//!   report `A`'s and `B`'s byte counts, reconciled by weft as for a direct test.
//!
//! On loopback every agent is a `weft serve` on its own port.

mod result;
mod run;
mod spec;

pub use result::{PatternResult, SessionResult};
pub use run::run;
pub use spec::{Endpoint, Role, Route, RrSettings, Session, SessionTest, parse_pairs, split_pair};

use std::net::SocketAddr;
use std::time::Duration;

/// Why a pattern could not be run at all. A session that fails once running is not an error of
/// the pattern: it is reported in its [`SessionResult::error`].
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// The pattern is malformed (a usage error at the command line).
    #[error("{0}")]
    Config(String),
    /// The pattern asks for something weft cannot do.
    #[error("{0}")]
    Unsupported(String),
}

/// A pattern to run.
#[derive(Clone, Debug)]
pub struct PatternConfig {
    /// Name of the pattern for reports: `pairs`, `one-to-many`, `many-to-one`.
    pub name: String,
    /// The sessions, started together.
    pub sessions: Vec<Session>,
    /// Line rate in bits/s that the aggregate is compared with, if given.
    pub line_rate_bps: Option<f64>,
    /// Time-out for connecting to an agent and each set-up step.
    pub connect_timeout: Duration,
    /// How long probes wait after the start so that they measure the load in steady state.
    pub probe_delay: Duration,
    /// The pre-shared key to prove to every agent (`--key-file`).
    pub key: Option<crate::auth::Key>,
}

impl PatternConfig {
    /// A pattern of `sessions` with no line rate, a 5 s connect time-out and a 300 ms probe delay.
    pub fn new(name: impl Into<String>, sessions: Vec<Session>) -> Self {
        PatternConfig {
            name: name.into(),
            sessions,
            line_rate_bps: None,
            connect_timeout: Duration::from_secs(5),
            probe_delay: Duration::from_millis(300),
            key: None,
        }
    }

    /// Checks every session, with an error that says what to change.
    pub fn validate(&self) -> Result<(), PatternError> {
        if self.sessions.is_empty() {
            return Err(PatternError::Config("the pattern has no sessions".into()));
        }
        if let Some(r) = self.line_rate_bps {
            if !(r.is_finite() && r > 0.0) {
                return Err(PatternError::Config(
                    "the line rate must be above zero".into(),
                ));
            }
        }
        for s in &self.sessions {
            s.agent()?;
        }
        Ok(())
    }
}

/// Sessions from this host to each agent.
pub fn one_to_many(agents: &[SocketAddr], test: &SessionTest) -> Vec<Session> {
    agents
        .iter()
        .map(|&a| session(Endpoint::Local, Endpoint::Agent(a), test))
        .collect()
}

/// Sessions from each agent to this host.
pub fn many_to_one(agents: &[SocketAddr], test: &SessionTest) -> Vec<Session> {
    agents
        .iter()
        .map(|&a| session(Endpoint::Agent(a), Endpoint::Local, test))
        .collect()
}

/// One session per pair, in the pair's direction.
pub fn from_pairs(pairs: &[(Endpoint, Endpoint)], test: &SessionTest) -> Vec<Session> {
    pairs.iter().map(|&(a, b)| session(a, b, test)).collect()
}

/// Every session `n` times (the GIGAswitch 25-session stress test runs many sessions at once).
pub fn repeat(sessions: Vec<Session>, n: usize) -> Vec<Session> {
    let mut out = Vec::with_capacity(sessions.len() * n);
    for s in &sessions {
        for _ in 0..n {
            out.push(s.clone());
        }
    }
    out
}

/// Marks `sessions` as load and adds one request/response probe along every path they load
/// (latency under load): from this host to every agent of a direct session, and from `A` to `B`
/// (relayed) for every `A:B` session.
pub fn with_probes(sessions: Vec<Session>, probe: RrSettings) -> Vec<Session> {
    let mut paths: Vec<(Endpoint, Endpoint)> = Vec::new();
    for s in &sessions {
        let path = match s.route() {
            Ok(Route::Direct { agent, .. }) => (Endpoint::Local, Endpoint::Agent(agent)),
            Ok(Route::Relay { from, to }) => (Endpoint::Agent(from), Endpoint::Agent(to)),
            Err(_) => continue,
        };
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    let mut out: Vec<Session> = sessions
        .into_iter()
        .map(|mut s| {
            s.role = Role::Load;
            s
        })
        .collect();
    for (from, to) in paths {
        out.push(Session {
            from,
            to,
            test: SessionTest::Rr(probe),
            role: Role::Probe,
        });
    }
    out
}

fn session(from: Endpoint, to: Endpoint, test: &SessionTest) -> Session {
    Session {
        from,
        to,
        test: test.clone(),
        role: Role::Session,
    }
}

#[cfg(test)]
mod tests;
