//! The coordinator (`weft mp`): starts one rank on each agent, hands out the roster, says go,
//! and gathers the samples into an [`MpResult`]. It fails with the first rank's error, or as soon
//! as an agent's control connection ends (its process died), and then closes every connection,
//! which stops the ranks still running.

use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::error::MpError;
use super::msg::{MpMsg, Peer, RankStats};
use super::rank::RankSample;
use super::result::{MpResult, MpSample};
use super::spec::MpSpec;
use crate::control::Control;
use crate::error::ProbeError;
use crate::proto::{DEFAULT_MAX_MESSAGE, Message, TestSpec};

/// Largest message a rank may send the coordinator (a sample carries every iteration's time).
const MAX_REPORT: u32 = 64 << 20;

/// Who runs a message-passing run.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The agent of each rank, in rank order.
    pub agents: Vec<SocketAddr>,
    /// Each rank's place among the ranks of its host, for pinning ([`super::Placement`]);
    /// `None`: the ranks are left to their hosts' schedulers.
    pub slots: Option<Vec<u32>>,
    /// The request; `rank` (and the CPU slot) is set per agent, `ranks` to the number of agents.
    pub spec: MpSpec,
    /// Time-out for connecting to an agent and for each set-up step.
    pub connect_timeout: Duration,
    /// The agents' pre-shared key (`weft serve --key-file`), proven to each before its request;
    /// `None` for agents without one (an agent with a key then refuses the run at once).
    pub key: Option<crate::auth::Key>,
}

/// Runs the ranks and gathers the result; `progress` sees each sample as it completes.
pub fn run(l: &Launch, progress: &mut dyn FnMut(&MpSample)) -> Result<MpResult, MpError> {
    let ranks = l.agents.len();
    let mut spec = l.spec.clone();
    spec.ranks = ranks as u32;
    spec.check(u64::MAX)?;
    let mut controls = Vec::with_capacity(ranks);
    let mut peers = Vec::with_capacity(ranks);
    for (r, &addr) in l.agents.iter().enumerate() {
        let stream = TcpStream::connect_timeout(&addr, l.connect_timeout)
            .map_err(|e| MpError::io(format!("rank {r}: connecting to the agent at {addr}"), e))?;
        let mut c = Control::new(stream, DEFAULT_MAX_MESSAGE.max(MAX_REPORT));
        c.set_read_timeout(Some(l.connect_timeout))?;
        if let Some(key) = &l.key {
            crate::auth::client_hello(&mut c, key)
                .map_err(|e| remote(r, crate::control::not_an_agent(addr, e)))?;
        }
        let mut s = spec.clone();
        s.rank = r as u32;
        s.place.slot = l.slots.as_ref().and_then(|v| v.get(r).copied());
        c.send(&Message::Request(TestSpec::Mp(s)))
            .map_err(|e| remote(r, e))?;
        controls.push(c);
    }
    for (r, c) in controls.iter_mut().enumerate() {
        let accept = c.recv_accept(l.agents[r]).map_err(|e| remote(r, e))?;
        peers.push(Peer {
            addr: l.agents[r],
            cookie: accept.cookie,
            daemon: accept
                .udp_ports
                .first()
                .map(|&p| SocketAddr::new(l.agents[r].ip(), p)),
        });
    }
    let roster = Message::Ext(MpMsg::Roster { peers }.to_value());
    for (r, c) in controls.iter_mut().enumerate() {
        c.send(&roster).map_err(|e| remote(r, e))?;
        c.set_read_timeout(None)?;
    }
    let events = readers(&controls)?;
    let guard = CloseOnDrop(
        controls
            .iter()
            .filter_map(|c| c.stream().try_clone().ok())
            .collect(),
    );
    let setup = l.connect_timeout * 2 + Duration::from_secs(spec.timeout_ms / 1000 + 10);
    let mut ready = 0;
    while ready < ranks {
        match next(&events, Some(setup))? {
            (_, MpMsg::Ready) => ready += 1,
            (r, other) => return Err(unexpected_mp(r, "ready", &other)),
        }
    }
    for (r, c) in controls.iter_mut().enumerate() {
        c.send(&Message::Ext(MpMsg::Go.to_value()))
            .map_err(|e| remote(r, e))?;
    }
    let mut parts: Vec<Vec<RankSample>> = Vec::new();
    let mut samples = Vec::new();
    let mut stats = vec![RankStats::default(); ranks];
    let mut done = 0;
    while done < ranks {
        match next(&events, None)? {
            (r, MpMsg::Sample(s)) => {
                let k = s.rank as usize;
                if k != r {
                    return Err(MpError::Remote(format!("rank {r} reported for rank {k}")));
                }
                let i = parts
                    .iter()
                    .position(|p| p.iter().all(|x| same(x, &s) && x.rank as usize != r));
                let i = i.unwrap_or_else(|| {
                    parts.push(Vec::new());
                    parts.len() - 1
                });
                parts[i].push(s);
                if parts[i].len() == ranks {
                    if let Some(m) = MpSample::from_ranks(&parts[i]) {
                        progress(&m);
                        samples.push(m);
                    }
                }
            }
            (r, MpMsg::Done { stats: s }) => {
                stats[r] = s;
                done += 1;
            }
            (r, other) => return Err(unexpected_mp(r, "a sample", &other)),
        }
    }
    for c in controls.iter_mut() {
        let _ = c.send(&Message::Bye);
    }
    drop(guard);
    // The result's request is rank 0's.
    spec.place.slot = l.slots.as_ref().and_then(|v| v.first().copied());
    Ok(MpResult {
        spec,
        hosts: l.agents.iter().map(ToString::to_string).collect(),
        samples,
        ranks: stats,
    })
}

fn same(a: &RankSample, b: &RankSample) -> bool {
    a.pattern == b.pattern && a.size == b.size
}

/// Shuts every control connection down when the coordinator leaves, so that the agents' ranks
/// stop (their executors watch the connection).
struct CloseOnDrop(Vec<TcpStream>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        for s in &self.0 {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

type Event = (usize, Result<Message, ProbeError>);

/// One reader thread per rank, all feeding one channel; each ends when its connection does.
fn readers(controls: &[Control]) -> Result<Receiver<Event>, MpError> {
    let (tx, rx) = mpsc::channel();
    for (r, c) in controls.iter().enumerate() {
        let mut c = c.try_clone()?;
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("weft-mp-rank{r}"))
            .spawn(move || {
                loop {
                    let m = c.recv();
                    let end = m.is_err();
                    if tx.send((r, m)).is_err() || end {
                        return;
                    }
                }
            })
            .map_err(|e| MpError::io("starting a reader thread", e))?;
    }
    Ok(rx)
}

/// The next mp message from any rank; a rank's error or closed connection fails the run.
fn next(events: &Receiver<Event>, within: Option<Duration>) -> Result<(usize, MpMsg), MpError> {
    let deadline = within.map(|w| Instant::now() + w);
    let ev = match deadline {
        Some(d) => events
            .recv_timeout(d.saturating_duration_since(Instant::now()))
            .map_err(|e| match e {
                RecvTimeoutError::Timeout => MpError::Timeout {
                    secs: within.unwrap_or_default().as_secs_f64(),
                    waiting: " while the ranks connected to each other".into(),
                },
                RecvTimeoutError::Disconnected => MpError::Remote("every agent left".into()),
            })?,
        None => events
            .recv()
            .map_err(|_| MpError::Remote("every agent left".into()))?,
    };
    match ev {
        (r, Ok(Message::Ext(v))) => match MpMsg::from_value(v) {
            Some(m) => Ok((r, m)),
            None => Err(MpError::Remote(format!(
                "rank {r}'s agent sent an Ext message that is not mp"
            ))),
        },
        (r, Ok(other)) => Err(unexpected(r, "an mp message", &other)),
        (r, Err(e)) => Err(remote(r, e)),
    }
}

/// A rank's failure as the coordinator reports it.
fn remote(r: usize, e: ProbeError) -> MpError {
    match e {
        ProbeError::Remote { code, message } => {
            let text = if message.starts_with("rank ") {
                message
            } else {
                format!("rank {r}: {message}")
            };
            if code == "bad-message" && text.contains("unknown") {
                MpError::Remote(format!(
                    "{text} (the agent may run an older weft without message passing)"
                ))
            } else {
                MpError::Remote(text)
            }
        }
        ProbeError::Proto(crate::proto::ProtoError::Closed) => MpError::Remote(format!(
            "rank {r}: its agent closed the control connection mid-run (it exited or died)"
        )),
        other => MpError::Remote(format!("rank {r}: {other}")),
    }
}

fn unexpected(r: usize, want: &str, got: &Message) -> MpError {
    MpError::Remote(format!(
        "rank {r}: expected {want} from its agent, got {:?}",
        got.msg_type()
    ))
}

fn unexpected_mp(r: usize, want: &str, got: &MpMsg) -> MpError {
    let name = match got {
        MpMsg::Roster { .. } => "roster",
        MpMsg::Ready => "ready",
        MpMsg::Go => "go",
        MpMsg::Sample(_) => "sample",
        MpMsg::Done { .. } => "done",
    };
    MpError::Remote(format!("rank {r}: expected {want}, got {name}"))
}
