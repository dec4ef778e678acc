//! The client side of a throughput test: `weft_probe::tput::run`.

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use super::opts;
use super::result::{DirResult, IntervalSample, TputResult};
use super::session::{DataSock, Session};
use crate::auth::Key;
use crate::control::Control;
use crate::error::ProbeError;
use crate::proto::data::cookie_from_hex;
use crate::proto::{
    Accept, CpuUse, DEFAULT_MAX_MESSAGE, Finished, Hello, Message, TestSpec, TputSpec, Transport,
};

/// How to run a throughput test.
#[derive(Clone, Debug)]
pub struct TputConfig {
    /// The agent's control address.
    pub server: SocketAddr,
    /// What to ask the agent for.
    pub spec: TputSpec,
    /// Time-out for connecting and for each step of the set-up.
    pub connect_timeout: Duration,
    /// The pre-shared key to prove to the agent (`--key-file`); `None` for a keyless agent.
    pub key: Option<Key>,
}

/// Progress of a running test, for `--json-stream`, interval tables and plots.
#[derive(Clone, Debug)]
pub enum TputEvent {
    /// The agent accepted the test.
    Accepted {
        /// The agent's test number.
        test_id: u64,
    },
    /// All streams attached; data starts flowing.
    Started,
    /// Receiver-side counts over one interval.
    Interval(IntervalSample),
}

/// Runs one throughput test against an agent. `observe` sees progress events as they happen.
pub fn run(
    cfg: &TputConfig,
    observe: &mut dyn FnMut(&TputEvent),
) -> Result<TputResult, ProbeError> {
    let spec = &cfg.spec;
    let t = cfg.connect_timeout;
    tracing::info!(agent = %cfg.server, transport = ?spec.transport, streams = spec.streams,
                   direction = ?spec.direction, "tput: connecting to the agent");
    let stream = TcpStream::connect_timeout(&cfg.server, t)
        .map_err(|e| ProbeError::io(format!("connecting to the agent at {}", cfg.server), e))?;
    let mut control = Control::new(stream, DEFAULT_MAX_MESSAGE.max(1 << 20));
    control.set_read_timeout(Some(t))?;
    let not_an_agent = |e| crate::control::not_an_agent(cfg.server, e);
    if let Some(k) = &cfg.key {
        crate::auth::client_hello(&mut control, k).map_err(not_an_agent)?;
    }
    control.send(&Message::Request(TestSpec::Tput(spec.clone())))?;
    let accept = control.recv_accept(cfg.server)?;
    tracing::info!(test_id = accept.test_id, udp_ports = ?accept.udp_ports, "tput: accepted");
    observe(&TputEvent::Accepted {
        test_id: accept.test_id,
    });
    let n = usize::from(spec.streams);
    let n_up = if spec.direction.client_sends() { n } else { 0 };
    let n_down = if spec.direction.server_sends() { n } else { 0 };
    let (socks, local_info) = attach(cfg, &accept, n_up + n_down)?;
    // UDP hellos may be lost; resend them every 100 ms until the agent says Ready. (A read
    // time-out in the middle of a message would break framing; Ready is one small segment.)
    let udp = spec.transport == Transport::Udp;
    if udp {
        control.set_read_timeout(Some(Duration::from_millis(100)))?;
    }
    let ready_by = Instant::now() + t.max(Duration::from_secs(10));
    let ready = loop {
        match control.recv() {
            Ok(Message::Ready(r)) => break r,
            Ok(other) => return Err(unexpected("Ready", &other)),
            Err(ProbeError::Proto(p)) if p.is_timeout() && udp && Instant::now() < ready_by => {
                resend_udp_hellos(&socks, &accept)?;
            }
            Err(e) => return Err(e),
        }
    };
    if ready.streams.len() != n_up + n_down {
        return Err(ProbeError::Protocol(format!(
            "agent reported {} streams, expected {}",
            ready.streams.len(),
            n_up + n_down
        )));
    }
    let start = Instant::now();
    observe(&TputEvent::Started);
    let mut socks = socks;
    let rx: Vec<DataSock> = socks.split_off(n_up);
    let tx = socks;
    let reader = control.try_clone()?;
    let idle = t.max(Duration::from_secs(10));
    let mut sess = Session::start(spec, tx, rx, reader, start, idle)?;

    let interval = spec.interval_ns.map(Duration::from_nanos);
    let mut next_tick = interval.map(|i| start + i);
    let planned = spec
        .planned_ns()
        .map_or(Duration::from_secs(3600), Duration::from_nanos);
    let deadline = start + planned + idle;
    let mut intervals = Vec::new();
    let mut sent_done = false;
    let mut finished: Option<Finished> = None;
    let mut peer_sd = None;
    loop {
        let now = Instant::now();
        if now >= deadline {
            sess.abort();
            return Err(ProbeError::Timeout(
                "the test did not finish in time".into(),
            ));
        }
        if let (Some(tk), Some(i)) = (next_tick, interval) {
            if now >= tk {
                let rep = sess.tick(now);
                if n_down > 0 {
                    let s = IntervalSample::from_report(&rep, "down", false, spec.transport);
                    observe(&TputEvent::Interval(s.clone()));
                    intervals.push(s);
                }
                next_tick = Some(tk + i);
            }
        }
        if !sent_done && sess.tx_done() {
            control.send(&Message::SenderDone(sess.sender_done()))?;
            sent_done = true;
        }
        if sent_done && sess.rx_done() && finished.is_some() {
            break;
        }
        let wait = next_tick
            .map_or(Duration::from_millis(100), |tk| {
                tk.saturating_duration_since(now)
            })
            .min(Duration::from_millis(100));
        let Some(ev) = sess.next(wait) else { continue };
        match sess.record(ev) {
            Ok(Some(Message::Interval(rep))) => {
                if n_up > 0 {
                    let s = IntervalSample::from_report(&rep, "up", true, spec.transport);
                    observe(&TputEvent::Interval(s.clone()));
                    intervals.push(s);
                }
            }
            Ok(Some(Message::SenderDone(sd))) => {
                sess.peer_sender_done(&sd, spec.transport)?;
                peer_sd = Some(sd);
            }
            Ok(Some(Message::Finished(f))) => finished = Some(f),
            Ok(None) => {}
            Ok(Some(other)) => {
                sess.abort();
                return Err(unexpected("a test message", &other));
            }
            Err(e) => {
                sess.abort();
                return Err(e);
            }
        }
    }
    let wall = start.elapsed();
    let local_end = [sess.tx_infos(), sess.rx_infos()].concat();
    let _ = control.send(&Message::Bye);
    control.shutdown();
    let remote = finished.unwrap_or_default();
    if n_down > 0 && peer_sd.is_none() {
        return Err(ProbeError::Protocol(
            "the agent never reported its sent counts".into(),
        ));
    }
    let up = (n_up > 0)
        .then(|| DirResult::reconcile(spec.transport, sess.tx_ends(), remote.rx.clone()))
        .transpose()?;
    let down = (n_down > 0)
        .then(|| DirResult::reconcile(spec.transport, remote.tx.clone(), sess.rx_ends()))
        .transpose()?;
    Ok(TputResult {
        server: cfg.server,
        spec: spec.clone(),
        test_id: accept.test_id,
        up,
        down,
        local_sockets: local_info,
        remote_sockets: ready.streams,
        local_sockets_end: local_end,
        remote_sockets_end: remote.sockets_end.clone(),
        local_cpu: sess.cpu(wall),
        remote_cpu: CpuUse { ..remote.cpu },
        intervals,
        wall_ns: wall.as_nanos() as u64,
        relay: None,
    })
}

fn unexpected(want: &str, got: &Message) -> ProbeError {
    ProbeError::Protocol(format!("expected {want}, got {:?}", got.msg_type()))
}

/// Opens and attaches every data stream: up streams first, then down streams.
fn attach(
    cfg: &TputConfig,
    accept: &Accept,
    total: usize,
) -> Result<(Vec<DataSock>, Vec<crate::proto::SockInfo>), ProbeError> {
    let spec = &cfg.spec;
    let cookie = cookie_from_hex(&accept.cookie)
        .ok_or_else(|| ProbeError::Protocol("the agent sent a malformed cookie".into()))?;
    let mut socks = Vec::with_capacity(total);
    let mut infos = Vec::with_capacity(total);
    match spec.transport {
        Transport::Tcp => {
            for i in 0..total {
                let mut s = opts::connect_tcp(cfg.server, spec, cfg.connect_timeout)?;
                let hello = Hello {
                    udp: false,
                    stream: i as u16,
                    cookie,
                };
                std::io::Write::write_all(&mut s, &hello.emit())
                    .map_err(|e| ProbeError::io("sending a data hello", e))?;
                infos.push(opts::tcp_info(&s));
                socks.push(DataSock::Tcp(s));
            }
        }
        Transport::Udp => {
            if accept.udp_ports.len() != total {
                return Err(ProbeError::Protocol(format!(
                    "the agent offered {} UDP ports for {total} streams",
                    accept.udp_ports.len()
                )));
            }
            let any: SocketAddr = if cfg.server.is_ipv4() {
                ([0, 0, 0, 0], 0).into()
            } else {
                (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
            };
            for &port in &accept.udp_ports {
                let s = UdpSocket::bind(any).map_err(|e| ProbeError::io("binding UDP", e))?;
                opts::apply_udp(&s, spec)?;
                s.connect(SocketAddr::new(cfg.server.ip(), port))
                    .map_err(|e| ProbeError::io("connecting UDP", e))?;
                infos.push(opts::udp_info(&s));
                socks.push(DataSock::Udp(s));
            }
            resend_udp_hellos(&socks, accept)?;
        }
    }
    Ok((socks, infos))
}

fn resend_udp_hellos(socks: &[DataSock], accept: &Accept) -> Result<(), ProbeError> {
    tracing::debug!(
        test_id = accept.test_id,
        "tput: sending the UDP hellos again (retry)"
    );
    let cookie = cookie_from_hex(&accept.cookie)
        .ok_or_else(|| ProbeError::Protocol("the agent sent a malformed cookie".into()))?;
    for (i, s) in socks.iter().enumerate() {
        if let DataSock::Udp(u) = s {
            let h = Hello {
                udp: true,
                stream: i as u16,
                cookie,
            };
            // A lost or refused hello is retried on the next round.
            let _ = u.send(&h.emit());
        }
    }
    Ok(())
}
