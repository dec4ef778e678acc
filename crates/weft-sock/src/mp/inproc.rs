//! A run whose ranks are threads of this process, each started by the caller (in an emulated
//! host's network namespace, say) and bound to its host's address; the bootstrap goes over
//! channels instead of agents' control connections, the rest (mesh or daemons, executor, rank
//! loop, result) is the same as for `weft mp`.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use super::conn::Conn;
use super::engine::{Engine, Waiting};
use super::error::MpError;
use super::mesh;
use super::msg::RankStats;
use super::pvmd::{CoreConfig, Daemon};
use super::rank::{self, RankSample};
use super::result::{MpResult, MpSample};
use super::spec::{MpSpec, Route};

/// How long ranks take to bind and to connect to each other.
const SETUP: Duration = Duration::from_secs(10);

/// A rank's job, run on a thread the caller starts.
pub type Job = Box<dyn FnOnce() + Send>;

/// Where a rank can be reached: its listener and, on the daemon route, its daemon.
#[derive(Clone, Copy, Debug)]
struct Where {
    listen: SocketAddr,
    daemon: Option<SocketAddr>,
}

type Outcome = Result<(Vec<RankSample>, RankStats), MpError>;

/// Runs `spec` with rank `r` listening on `ips[r]`; `spawn(r, job)` must run `job` on a thread
/// (in rank `r`'s host). `hosts` names the ranks in the result.
pub fn run_threads(
    ips: &[IpAddr],
    hosts: Vec<String>,
    spec: &MpSpec,
    spawn: &dyn Fn(usize, Job) -> Result<(), MpError>,
) -> Result<MpResult, MpError> {
    let n = ips.len();
    let mut spec = spec.clone();
    spec.ranks = n as u32;
    spec.check(u64::MAX)?;
    let (where_tx, where_rx) = mpsc::channel::<(usize, Result<Where, MpError>)>();
    let (out_tx, out_rx) = mpsc::channel::<(usize, Outcome)>();
    let mut roster_txs = Vec::with_capacity(n);
    for (r, &ip) in ips.iter().enumerate() {
        let (roster_tx, roster_rx) = mpsc::channel::<Vec<Where>>();
        roster_txs.push(roster_tx);
        let mut s = spec.clone();
        s.rank = r as u32;
        let (where_tx, out_tx) = (where_tx.clone(), out_tx.clone());
        spawn(
            r,
            Box::new(move || {
                let out = rank_job(r, ip, &s, &where_tx, &roster_rx);
                let _ = out_tx.send((r, out));
            }),
        )?;
    }
    drop(out_tx);
    let mut roster = vec![None; n];
    for _ in 0..n {
        let (r, w) = where_rx
            .recv_timeout(SETUP)
            .map_err(|_| MpError::Remote("a rank did not start".into()))?;
        roster[r] = Some(w.map_err(|e| e.during(format!("rank {r}")))?);
    }
    let roster: Vec<Where> = roster.into_iter().flatten().collect();
    for tx in &roster_txs {
        let _ = tx.send(roster.clone());
    }
    let mut parts: Vec<Vec<RankSample>> = Vec::new();
    let mut stats = vec![RankStats::default(); n];
    let mut first_err: Option<MpError> = None;
    for _ in 0..n {
        let Ok((r, out)) = out_rx.recv() else {
            break;
        };
        match out {
            Ok((samples, s)) => {
                stats[r] = s;
                parts.push(samples);
            }
            Err(e) => {
                first_err.get_or_insert(e.during(format!("rank {r}")));
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let count = parts.first().map_or(0, Vec::len);
    let samples = (0..count)
        .filter_map(|i| {
            let of_i: Vec<RankSample> = parts.iter().filter_map(|p| p.get(i).cloned()).collect();
            MpSample::from_ranks(&of_i)
        })
        .collect();
    Ok(MpResult {
        spec,
        hosts,
        samples,
        ranks: stats,
    })
}

fn rank_job(
    r: usize,
    ip: IpAddr,
    spec: &MpSpec,
    where_tx: &Sender<(usize, Result<Where, MpError>)>,
    roster_rx: &Receiver<Vec<Where>>,
) -> Outcome {
    let n = spec.ranks as usize;
    let waiting = Waiting {
        timeout: Duration::from_millis(spec.timeout_ms),
        spin: Duration::from_micros(u64::from(spec.spin_us)),
    };
    let bound = (|| {
        let l = TcpListener::bind(SocketAddr::new(ip, 0))
            .map_err(|e| MpError::io(format!("binding rank {r}'s listener"), e))?;
        let d = match spec.route {
            Route::Direct => None,
            Route::Daemon => Some(Daemon::bind(
                ip,
                CoreConfig {
                    me: r,
                    ranks: n,
                    fragment: spec.daemon.fragment as usize,
                    window: spec.daemon.window as usize,
                    give_up: super::pvmd::driver::give_up(waiting.timeout),
                    token: 0,
                },
                waiting.spin,
            )?),
        };
        Ok::<_, MpError>((l, d))
    })();
    let (listener, daemon) = match bound {
        Ok(x) => x,
        Err(e) => {
            let _ = where_tx.send((r, Err(MpError::Remote(e.to_string()))));
            return Err(e);
        }
    };
    let me_where = (|| -> Result<Where, MpError> {
        Ok(Where {
            listen: listener
                .local_addr()
                .map_err(|e| MpError::io("reading the listener's address", e))?,
            daemon: daemon.as_ref().map(Daemon::udp_addr).transpose()?,
        })
    })();
    let report = match &me_where {
        Ok(w) => Ok(*w),
        Err(e) => Err(MpError::Remote(e.to_string())),
    };
    let _ = where_tx.send((r, report));
    me_where?;
    let roster = roster_rx
        .recv_timeout(SETUP)
        .map_err(|_| MpError::Remote(format!("rank {r} got no roster")))?;
    let digest = spec.digest();
    let mut daemon_handle = None;
    let engine = match daemon {
        Some(d) => {
            let task = d.task_addr()?;
            let udp = roster
                .iter()
                .map(|w| {
                    w.daemon
                        .ok_or_else(|| MpError::Config("a rank has no daemon".into()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            // In one process there are no cookies: the token comes from the daemons' ports,
            // the same at every rank (the roster check keeps other sources out).
            let ports: Vec<[u8; 16]> = udp
                .iter()
                .map(|a| {
                    let mut b = [0u8; 16];
                    b[..2].copy_from_slice(&a.port().to_be_bytes());
                    b
                })
                .collect();
            let token = super::pvmd::driver::run_token(&ports);
            daemon_handle = Some(d.start(udp, SETUP, token)?);
            let s =
                TcpStream::connect(task).map_err(|e| MpError::io("connecting to the daemon", e))?;
            let conn = Conn::new(s).map_err(|e| MpError::io("connecting to the daemon", e))?;
            let mut e = Engine::via_daemon(r, n, conn, waiting);
            e.handshake(digest)?;
            e
        }
        None => {
            let deadline = Instant::now() + SETUP;
            let dialled = (0..r)
                .map(|p| Ok((p, mesh::dial(roster[p].listen, None, SETUP)?)))
                .collect::<Result<Vec<_>, MpError>>()?;
            let accepted = accept(&listener, n - r - 1, deadline)?;
            let conns = mesh::handshake(r, n, digest, dialled, accepted, deadline)?;
            Engine::direct(r, conns, waiting)?
        }
    };
    let mut samples = Vec::new();
    let stats = rank::run_to_end(engine, spec, daemon_handle, &mut |s| {
        samples.push(s);
        Ok(())
    })?;
    Ok((samples, stats))
}

fn accept(l: &TcpListener, k: usize, deadline: Instant) -> Result<Vec<TcpStream>, MpError> {
    l.set_nonblocking(true)
        .map_err(|e| MpError::io("preparing the listener", e))?;
    let mut out = Vec::with_capacity(k);
    while out.len() < k {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)
                    .map_err(|e| MpError::io("accepting a rank", e))?;
                out.push(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(MpError::Timeout {
                        secs: SETUP.as_secs_f64(),
                        waiting: format!(" while {} higher ranks connected", k - out.len()),
                    });
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(MpError::io("accepting a rank", e)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mp::spec::{DaemonParams, MP_VERSION};
    use std::net::Ipv4Addr;

    fn spec(route: Route, patterns: &[&str]) -> MpSpec {
        MpSpec {
            version: MP_VERSION,
            rank: 0,
            ranks: 0,
            route,
            patterns: patterns.iter().map(|p| p.to_string()).collect(),
            sizes: vec![8, 100_000],
            iterations: 20,
            iterations_large: 5,
            warmup: 2,
            npb_steps: Some(2),
            timeout_ms: 5000,
            spin_us: 20,
            daemon: DaemonParams {
                fragment: 4080,
                window: 4,
            },
            place: Default::default(),
        }
    }

    fn threads(r: usize, job: Job) -> Result<(), MpError> {
        std::thread::Builder::new()
            .name(format!("rank{r}"))
            .spawn(job)
            .map(|_| ())
            .map_err(|e| MpError::io("spawn", e))
    }

    #[test]
    fn four_threads_run_every_pattern_on_both_routes() {
        let ips = [IpAddr::V4(Ipv4Addr::LOCALHOST); 4];
        for route in [Route::Direct, Route::Daemon] {
            let s = spec(route, &["pingpong", "allreduce", "barrier", "lu.S"]);
            let r = run_threads(&ips, vec!["lo".into(); 4], &s, &threads).unwrap();
            assert_eq!(r.samples.len(), 2 + 2 + 1 + 1, "{route:?}");
            assert!(r.samples.iter().all(|s| s.mean_us > 0.0));
            let daemon_packets: u64 = r
                .ranks
                .iter()
                .filter_map(|x| x.daemon)
                .map(|d| d.packets_sent)
                .sum();
            assert_eq!(daemon_packets > 0, route == Route::Daemon);
        }
    }
}
