//! The client side of a request/response test against a weft agent: one control session per
//! size (see [`crate::proto::rr_spec`] for the exchange).

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::control::{Control, not_an_agent};
use crate::error::ProbeError;
use crate::proto::rr_spec::RR_PORT_KEY;
use crate::proto::{DEFAULT_MAX_MESSAGE, Message, RrSpec, SenderDone, TestSpec, Transport};

use super::config::{Proto, RrConfig};
use super::meter::Meter;
use super::result::SizeResult;
use super::{RrError, run_leg};

/// How long the agent may take to answer a control message.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait for the agent's explanation after the data path broke.
const EXPLAIN_WAIT: Duration = Duration::from_millis(300);

fn agent_err(addr: SocketAddr, e: ProbeError) -> RrError {
    RrError::Agent(format!("agent {addr}: {e}"))
}

/// Runs one size against the agent at `addr`.
pub(super) fn run_size(
    cfg: &RrConfig,
    addr: SocketAddr,
    req: u32,
    resp: u32,
) -> Result<SizeResult, RrError> {
    let stream = TcpStream::connect_timeout(&addr, CONTROL_TIMEOUT)
        .map_err(|e| RrError::Agent(format!("cannot reach the agent at {addr}: {e}")))?;
    let mut control = Control::new(stream, DEFAULT_MAX_MESSAGE);
    control
        .set_read_timeout(Some(CONTROL_TIMEOUT))
        .map_err(|e| agent_err(addr, e))?;
    if let Some(k) = &cfg.key {
        crate::auth::client_hello(&mut control, k)
            .map_err(|e| agent_err(addr, not_an_agent(addr, e)))?;
    }
    let spec = RrSpec {
        transport: match cfg.proto {
            Proto::Tcp => Transport::Tcp,
            Proto::Udp => Transport::Udp,
        },
        cold: cfg.cold,
        request_size: req,
        response_size: resp,
        params: placement_params(cfg),
    };
    control
        .send(&Message::Request(TestSpec::Rr(spec)))
        .map_err(|e| agent_err(addr, e))?;
    control.recv_accept(addr).map_err(|e| agent_err(addr, e))?;
    let port = match control.recv().map_err(|e| agent_err(addr, e))? {
        Message::Ext(v) => v
            .get(RR_PORT_KEY)
            .and_then(serde_json::Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .filter(|&p| p != 0),
        _ => None,
    }
    .ok_or_else(|| {
        agent_err(
            addr,
            ProbeError::Protocol("the agent announced no rr data port".into()),
        )
    })?;

    let mut meter =
        Meter::new(cfg.warmup, cfg.stop, cfg.abort_after_losses).with_time_limit(cfg.time_limit);
    let data = SocketAddr::new(addr.ip(), port);
    let mut aborted = run_leg(cfg, data, req, resp, &mut meter)
        .err()
        .or_else(|| super::cut_off(cfg, &meter));

    // When the data path broke, the agent may have said why (a limit, an idle time-out) just
    // before closing: read that first, before a write to a closed connection resets it.
    if let Some(a) = &mut aborted {
        let _ = control.set_read_timeout(Some(EXPLAIN_WAIT));
        match control.recv() {
            Err(e @ ProbeError::Remote { .. }) => {
                a.push_str(&format!(" (agent {addr}: {e})"));
                let mut r = SizeResult::from_meter(req, resp, &meter, cfg.cold, aborted);
                r.agent_requests = None;
                return Ok(r);
            }
            _ => {
                let _ = control.set_read_timeout(Some(CONTROL_TIMEOUT));
            }
        }
    }
    // The agent answers SenderDone with its counts.
    let issued = meter.issued();
    let done = Message::SenderDone(SenderDone {
        bytes: vec![issued * u64::from(req)],
        packets: vec![issued],
    });
    let mut agent_requests = None;
    let mut placement = None;
    match control.send(&done).and_then(|()| control.recv()) {
        Ok(Message::Finished(f)) => {
            agent_requests = f.rx.first().map(|s| s.packets);
            placement = f.placement;
            let _ = control.send(&Message::Bye);
        }
        Ok(other) => {
            aborted.get_or_insert(format!(
                "the agent answered the end of the test with {:?}",
                other.msg_type()
            ));
        }
        Err(e) => {
            let why = format!("agent {addr}: {e}");
            aborted = Some(match aborted {
                Some(a) => format!("{a} ({why})"),
                None => why,
            });
        }
    }
    let mut r = SizeResult::from_meter(req, resp, &meter, cfg.cold, aborted);
    r.agent_requests = agent_requests;
    if let Some(p) = placement {
        r.agent_cpus = p
            .get("cpus")
            .and_then(|c| serde_json::from_value(c.clone()).ok());
        r.agent_busy_poll = p
            .get("busy_poll")
            .and_then(|c| serde_json::from_value(c.clone()).ok())
            .filter(|b: &super::busy::BusyPoll| b.spin);
    }
    Ok(r)
}

/// The request's placement keys: the agent's CPU (`--affinity N,M`) and busy-polling.
fn placement_params(cfg: &RrConfig) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    if let Some(c) = cfg.agent_cpu {
        m.insert(super::agent::AGENT_CPU_KEY.into(), c.into());
    }
    if cfg.busy_poll {
        m.insert(super::agent::BUSY_POLL_KEY.into(), true.into());
    }
    m
}
