//! Running a pattern: one thread per session, all released by one barrier.

use std::sync::Barrier;
use std::time::Instant;

use super::result::{Outcome, PatternResult, SessionResult};
use super::spec::{Endpoint, Role, Session, SessionTest};
use super::{PatternConfig, PatternError};
use crate::proto::Direction;
use crate::rr::{self, Peer, RrConfig, StopRule};
use crate::tput::{self, TputConfig};

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

/// Runs one session to completion.
fn run_session(s: &Session, cfg: &PatternConfig) -> Outcome {
    let agent = match s.agent() {
        Ok(a) => a,
        Err(e) => return Outcome::failed(e.to_string()),
    };
    match &s.test {
        SessionTest::Tput(spec) => {
            let mut spec = spec.clone();
            spec.direction = if s.from == Endpoint::Local {
                Direction::Forward
            } else {
                Direction::Reverse
            };
            let tc = TputConfig {
                server: agent,
                spec,
                connect_timeout: cfg.connect_timeout,
            };
            match tput::run(&tc, &mut |_| {}) {
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
        SessionTest::Rr(st) => {
            let mut rc = RrConfig::new(Peer::Agent(agent), vec![st.size]);
            rc.proto = st.proto;
            rc.warmup = st.warmup;
            rc.stop = match st.time_ns {
                Some(duration_ns) => StopRule::Time { duration_ns },
                None => StopRule::Count { count: st.count },
            };
            match rr::run(&rc) {
                Ok(r) => {
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
                Err(e) => Outcome::failed(e.to_string()),
            }
        }
    }
}
