//! Running a pattern: one thread per session, all released by one barrier.

use std::net::SocketAddr;
use std::sync::Barrier;
use std::time::Instant;

use super::result::{Outcome, PatternResult, SessionResult};
use super::spec::{Endpoint, Role, Route, Session, SessionTest};
use super::{PatternConfig, PatternError};
use crate::error::ProbeError;
use crate::proto::{Direction, RelayRr, Transport};
use crate::relay::{self, RelayConfig};
use crate::rr::{self, Peer, Proto, RrConfig, RrResult, StopRule};
use crate::tput::{self, TputConfig, TputResult};

/// Runs every session of `cfg` at once and collects what each measured.
///
/// Sessions start together (a barrier releases their threads; probes then wait
/// [`PatternConfig::probe_delay`]); a session that fails is reported with its error and the
/// others go on.
pub fn run(cfg: &PatternConfig) -> Result<PatternResult, PatternError> {
    cfg.validate()?;
    let n = cfg.sessions.len();
    let barrier = Barrier::new(n);
    let base = Instant::now();
    let sessions: Vec<SessionResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = cfg
            .sessions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    if s.role == Role::Probe {
                        std::thread::sleep(cfg.probe_delay);
                    }
                    let start = base.elapsed();
                    let outcome = run_session(s, cfg);
                    let end = base.elapsed();
                    SessionResult::new(i, s.clone(), start, end, outcome)
                })
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| {
                h.join().unwrap_or_else(|_| {
                    let s = cfg.sessions.get(i).cloned().unwrap_or_else(placeholder);
                    let t = base.elapsed();
                    SessionResult::new(i, s, t, t, Outcome::failed("the session's thread panicked"))
                })
            })
            .collect()
    });
    Ok(PatternResult {
        name: cfg.name.clone(),
        sessions,
        line_rate_bps: cfg.line_rate_bps,
        wall_s: base.elapsed().as_secs_f64(),
    })
}

fn placeholder() -> Session {
    Session {
        from: Endpoint::Local,
        to: Endpoint::Local,
        test: SessionTest::Rr(Default::default()),
        role: Role::Session,
    }
}

/// Runs one session to completion: directly against its agent, or relayed by the sending agent.
fn run_session(s: &Session, cfg: &PatternConfig) -> Outcome {
    let route = match s.route() {
        Ok(r) => r,
        Err(e) => return Outcome::failed(e.to_string()),
    };
    match (&s.test, route) {
        (SessionTest::Tput(spec), Route::Direct { agent, agent_sends }) => {
            let mut spec = spec.clone();
            spec.direction = if agent_sends {
                Direction::Reverse
            } else {
                Direction::Forward
            };
            let tc = TputConfig {
                server: agent,
                spec,
                connect_timeout: cfg.connect_timeout,
                key: cfg.key.clone(),
            };
            tput_outcome(tput::run(&tc, &mut |_| {}))
        }
        (SessionTest::Tput(spec), Route::Relay { from, to }) => {
            let mut spec = spec.clone();
            spec.direction = Direction::Forward;
            let rc = relay_config(from, to, cfg);
            tput_outcome(relay::client::tput(&rc, &spec))
        }
        (SessionTest::Rr(st), Route::Direct { agent, .. }) => {
            let mut rc = RrConfig::new(Peer::Agent(agent), vec![st.size]);
            rc.proto = st.proto;
            rc.warmup = st.warmup;
            rc.key = cfg.key.clone();
            rc.stop = match st.time_ns {
                Some(duration_ns) => StopRule::Time { duration_ns },
                None => StopRule::Count { count: st.count },
            };
            rr_outcome(rr::run(&rc).map_err(|e| e.to_string()))
        }
        (SessionTest::Rr(st), Route::Relay { from, to }) => {
            let test = RelayRr {
                transport: match st.proto {
                    Proto::Tcp => Transport::Tcp,
                    Proto::Udp => Transport::Udp,
                },
                size: st.size,
                warmup: st.warmup,
                count: Some(st.count),
                time_ns: st.time_ns,
            };
            let rc = relay_config(from, to, cfg);
            rr_outcome(relay::client::rr(&rc, &test).map_err(|e| e.to_string()))
        }
    }
}

fn relay_config(from: SocketAddr, to: SocketAddr, cfg: &PatternConfig) -> RelayConfig {
    RelayConfig {
        relay: from,
        target: to,
        connect_timeout: cfg.connect_timeout,
        key: cfg.key.clone(),
    }
}

fn tput_outcome(r: Result<TputResult, ProbeError>) -> Outcome {
    match r {
        Ok(r) => {
            let bytes =
                r.up.iter()
                    .chain(r.down.iter())
                    .map(|d| d.receiver_bytes)
                    .sum();
            Outcome {
                throughput_bps: Some(r.goodput_bps()),
                bytes: Some(bytes),
                detail: Some(r.to_result_doc().summary),
                ..Outcome::default()
            }
        }
        Err(e) => Outcome::failed(e.to_string()),
    }
}

fn rr_outcome(r: Result<RrResult, String>) -> Outcome {
    let r = match r {
        Ok(r) => r,
        Err(e) => return Outcome::failed(e),
    };
    let Some(size) = r.sizes.first() else {
        return Outcome::failed("the request/response test measured nothing");
    };
    Outcome {
        latency: (size.count > 0).then_some(size.rtt.clone()),
        transactions_per_s: Some(size.transactions_per_s),
        lost: Some(size.lost),
        error: size.aborted.clone(),
        detail: Some(r.to_result_doc().summary),
        ..Outcome::default()
    }
}
