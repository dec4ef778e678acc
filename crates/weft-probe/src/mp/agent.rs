//! The agent's side of a message-passing run (`weft serve` running one rank): check the request,
//! join the other ranks (directly, or through this rank's daemon), run, report.
//!
//! The rank is bounded like any test: it holds one of the agent's test slots, sets up within the
//! idle time-out, and is cut off at `--max-duration` (a watchdog closes the control connection's
//! read side, which the executor watches, and the coordinator is told why).

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::conn::Conn;
use super::engine::{Engine, Waiting};
use super::error::MpError;
use super::msg::{MpMsg, Peer};
use super::place::Placed;
use super::pvmd::{CoreConfig, Daemon, DaemonHandle};
use super::spec::{MpSpec, Route};
use super::{mesh, rank};
use crate::error::ProbeError;
use crate::proto::data::cookie_from_hex;
use crate::proto::{Accept, Hello, Message};
use crate::server::TestContext;

/// Runs rank `spec.rank` on an accepted control connection (the server has reserved a test
/// slot). An `Err` goes to the coordinator as an `Error` message.
pub fn serve(ctx: &mut TestContext, spec: &MpSpec) -> Result<(), ProbeError> {
    let me = spec.rank as usize;
    spec.check(u64::from(ctx.limits.max_len))
        .map_err(|e| super::into_probe(e, me))?;
    let expired = Arc::new(AtomicBool::new(false));
    let watchdog = watchdog(ctx, expired.clone())?;
    let r = run(ctx, spec);
    watchdog.store(true, Ordering::Relaxed);
    match r {
        Err(_) if expired.load(Ordering::Relaxed) => Err(ProbeError::Limit(format!(
            "rank {me}: the run exceeded this agent's maximum of {:?} (weft serve \
             --max-duration)",
            ctx.limits.max_duration
        ))),
        Err(e) => Err(super::into_probe(e, me)),
        Ok(()) => Ok(()),
    }
}

fn run(ctx: &mut TestContext, spec: &MpSpec) -> Result<(), MpError> {
    let me = spec.rank as usize;
    let ranks = spec.ranks as usize;
    // Before the daemon's thread starts, which then runs where the rank does.
    let _placed = Placed::enter(me, spec.place)?;
    let idle = ctx.limits.idle_timeout;
    let waiting = Waiting {
        timeout: Duration::from_millis(spec.timeout_ms),
        spin: Duration::from_micros(u64::from(spec.spin_us)),
    };
    let daemon = match spec.route {
        Route::Direct => None,
        Route::Daemon => Some(Daemon::bind(
            ctx.local_ip(),
            CoreConfig {
                me,
                ranks,
                fragment: spec.daemon.fragment as usize,
                window: spec.daemon.window as usize,
                give_up: super::pvmd::driver::give_up(waiting.timeout),
                token: 0,
            },
            waiting.spin,
        )?),
    };
    let udp_ports = match &daemon {
        Some(d) => vec![d.udp_addr()?.port()],
        None => Vec::new(),
    };
    ctx.control.send(&Message::Accept(Accept {
        test_id: ctx.test_id,
        cookie: ctx.cookie_hex(),
        udp_ports,
    }))?;
    ctx.control.set_read_timeout(Some(idle))?;
    let peers = match recv_mp(ctx)? {
        MpMsg::Roster { peers } if peers.len() == ranks => peers,
        other => {
            return Err(MpError::Config(format!(
                "expected the roster of {ranks} ranks, got {other:?}"
            )));
        }
    };
    let digest = spec.digest();
    let deadline = Instant::now() + idle;
    let mut daemon_handle: Option<DaemonHandle> = None;
    let mut engine = match (spec.route, daemon) {
        (Route::Daemon, Some(d)) => {
            let task = d.task_addr()?;
            let udp: Vec<SocketAddr> = peers
                .iter()
                .enumerate()
                .map(|(r, p)| {
                    p.daemon.ok_or_else(|| {
                        MpError::Config(format!("the roster gives no daemon for rank {r}"))
                    })
                })
                .collect::<Result<_, _>>()?;
            // The run's token, from the secret cookies of every rank's test in the roster.
            let cookies = peers
                .iter()
                .map(|p| {
                    cookie_from_hex(&p.cookie).ok_or_else(|| {
                        MpError::Config("a cookie in the roster is not 32 hex digits".into())
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let token = super::pvmd::driver::run_token(&cookies);
            daemon_handle = Some(d.start(udp, idle, token)?);
            let s =
                TcpStream::connect(task).map_err(|e| MpError::io("connecting to the daemon", e))?;
            let conn = Conn::new(s).map_err(|e| MpError::io("connecting to the daemon", e))?;
            let mut e = Engine::via_daemon(me, ranks, conn, waiting);
            e.handshake(digest)?;
            e
        }
        _ => {
            let dialled = dial_lower(me, &peers, idle)?;
            let accepted = ctx.accept_tcp_streams(ranks - me - 1)?;
            let conns = mesh::handshake(me, ranks, digest, dialled, accepted, deadline)?;
            Engine::direct(me, conns, waiting)?
        }
    };
    send_mp(ctx, &MpMsg::Ready)?;
    match recv_mp(ctx)? {
        MpMsg::Go => {}
        other => return Err(MpError::Config(format!("expected go, got {other:?}"))),
    }
    engine.set_watch(Some(ctx.control.stream().as_raw_fd()));
    let stats = rank::run_to_end(engine, spec, daemon_handle, &mut |s| {
        send_mp(ctx, &MpMsg::Sample(s))
    })?;
    send_mp(ctx, &MpMsg::Done { stats })?;
    // Wait for the coordinator's Bye so that closing does not reset unread data.
    let _ = ctx.control.recv_raw();
    Ok(())
}

/// Dials every lower rank's agent with a data hello for that rank's test: stream index
/// `me - peer - 1`, so that the peer's `accept_tcp_streams` sees streams `0..` in any order.
fn dial_lower(
    me: usize,
    peers: &[Peer],
    timeout: Duration,
) -> Result<Vec<(usize, TcpStream)>, MpError> {
    (0..me)
        .map(|p| {
            let cookie = cookie_from_hex(&peers[p].cookie).ok_or_else(|| {
                MpError::Config(format!(
                    "the roster's cookie for rank {p} is not 32 hex digits"
                ))
            })?;
            let hello = Hello {
                udp: false,
                stream: (me - p - 1) as u16,
                cookie,
            }
            .emit();
            Ok((p, mesh::dial(peers[p].addr, Some(&hello), timeout)?))
        })
        .collect()
}

fn send_mp(ctx: &mut TestContext, m: &MpMsg) -> Result<(), MpError> {
    ctx.control.send(&Message::Ext(m.to_value()))?;
    Ok(())
}

fn recv_mp(ctx: &mut TestContext) -> Result<MpMsg, MpError> {
    match ctx.control.recv()? {
        Message::Ext(v) => MpMsg::from_value(v).ok_or_else(|| {
            MpError::Config("the coordinator sent an Ext message that is not mp".into())
        }),
        other => Err(MpError::Config(format!(
            "expected an mp message, got {:?}",
            other.msg_type()
        ))),
    }
}

/// Closes the control connection's read side when the run outlasts `--max-duration` plus a
/// grace period; the returned flag stops the watchdog.
fn watchdog(ctx: &TestContext, expired: Arc<AtomicBool>) -> Result<Arc<AtomicBool>, ProbeError> {
    let done = Arc::new(AtomicBool::new(false));
    let done2 = done.clone();
    let stream = ctx
        .control
        .stream()
        .try_clone()
        .map_err(|e| ProbeError::io("watching the run's duration", e))?;
    let until = ctx.hard_deadline();
    std::thread::Builder::new()
        .name("weft-mp-watchdog".into())
        .spawn(move || {
            while !done2.load(Ordering::Relaxed) {
                if Instant::now() >= until {
                    expired.store(true, Ordering::Relaxed);
                    let _ = stream.shutdown(std::net::Shutdown::Read);
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
        .map_err(|e| ProbeError::io("starting the run's watchdog", e))?;
    Ok(done)
}
