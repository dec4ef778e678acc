//! The client's side of a relayed test: ask the relay, wait for its report, and turn the report
//! into the result a direct test gives.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::auth::Key;
use crate::control::Control;
use crate::error::ProbeError;
use crate::proto::{
    DEFAULT_MAX_MESSAGE, DirCounts, Message, RELAY_VERSION, RelayReport, RelayRr, RelaySpec,
    RelayTest, RelayTput, TputSpec,
};
use crate::rr::RrResult;
use crate::tput::{DirResult, TputResult};

/// How much longer than the test itself the client waits for the relay's report: the relay's
/// set-up steps toward the target (each up to its idle time-out, 10 s by default) and the drain.
const REPORT_SLACK: Duration = Duration::from_secs(30);

/// How long a request/response test bounded by count may take before the client gives up on the
/// report (the relay itself stops it at its `--max-duration`, 60 s by default).
const RR_COUNT_WAIT: Duration = Duration::from_secs(600);

/// Who runs a relayed test: `relay` is the client of a test toward `target`.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// The control address of the agent that runs the client side (`A` of `A:B`).
    pub relay: SocketAddr,
    /// The control address of the agent it runs the test toward (`B` of `A:B`).
    pub target: SocketAddr,
    /// Time-out for connecting to the relay and for its first answer.
    pub connect_timeout: Duration,
    /// The pre-shared key to prove to the relay (which proves its own to the target).
    pub key: Option<Key>,
}

/// Runs a throughput test from the relay to the target (`forward`), or the other way
/// (`reverse`), and returns it as a [`TputResult`] whose "client" is the relay
/// ([`TputResult::relay`]). The spec must be bounded by time. The byte counts of both ends are
/// reconciled here, as for a direct test.
pub fn tput(cfg: &RelayConfig, spec: &TputSpec) -> Result<TputResult, ProbeError> {
    let planned = spec.planned_ns().ok_or_else(|| {
        ProbeError::Config("a relayed throughput test must be bounded by time".into())
    })?;
    let report = exchange(
        cfg,
        RelayTest::Tput(spec.clone()),
        Duration::from_nanos(planned),
    )?;
    let RelayReport::Tput(t) = report else {
        return Err(ProbeError::Protocol(
            "the relay answered a throughput test with a request/response report".into(),
        ));
    };
    tput_result(cfg, spec, t)
}

/// Runs a request/response test from the relay to the target and returns it as an
/// [`RrResult`] of one size ([`RrResult::relay`] names the relay).
pub fn rr(cfg: &RelayConfig, test: &RelayRr) -> Result<RrResult, ProbeError> {
    let wait = test.time_ns.map_or(RR_COUNT_WAIT, Duration::from_nanos);
    let report = exchange(cfg, RelayTest::Rr(*test), wait)?;
    let RelayReport::Rr(size) = report else {
        return Err(ProbeError::Protocol(
            "the relay answered a request/response test with a throughput report".into(),
        ));
    };
    let mut r = RrResult::new(&super::rr_config(cfg.target, test));
    r.sizes.push(size);
    r.relay = Some(cfg.relay.to_string());
    Ok(r)
}

/// Sends the relay request, waits for `Accept` and then for the report (at most `run` plus
/// [`REPORT_SLACK`]), and says goodbye.
fn exchange(cfg: &RelayConfig, test: RelayTest, run: Duration) -> Result<RelayReport, ProbeError> {
    let stream = TcpStream::connect_timeout(&cfg.relay, cfg.connect_timeout).map_err(|e| {
        ProbeError::io(format!("connecting to the relay agent at {}", cfg.relay), e)
    })?;
    let mut control = Control::new(stream, DEFAULT_MAX_MESSAGE.max(1 << 20));
    control.set_read_timeout(Some(cfg.connect_timeout))?;
    if let Some(k) = &cfg.key {
        crate::auth::client_hello(&mut control, k)?;
    }
    control.send(&Message::Relay(RelaySpec {
        version: RELAY_VERSION,
        target: cfg.target,
        test,
    }))?;
    match control.recv().map_err(|e| explain(cfg, e))? {
        Message::Accept(_) => {}
        other => return Err(unexpected("Accept", &other)),
    }
    control.set_read_timeout(Some(run + cfg.connect_timeout + REPORT_SLACK))?;
    let report = match control.recv().map_err(|e| explain(cfg, e))? {
        Message::Relayed(r) => *r,
        other => return Err(unexpected("Relayed", &other)),
    };
    let _ = control.send(&Message::Bye);
    control.shutdown();
    Ok(report)
}

/// Names an agent too old to know relay requests, which answers with an unknown type.
fn explain(cfg: &RelayConfig, e: ProbeError) -> ProbeError {
    match e {
        ProbeError::Remote { code, message }
            if code == "bad-message" && message.contains("unknown message type") =>
        {
            ProbeError::Unsupported(format!(
                "the agent at {} does not know relay requests (it runs an older weft: {message}); \
                 update it, or run weft on its host with local:{}",
                cfg.relay, cfg.target
            ))
        }
        other => other,
    }
}

fn unexpected(want: &str, got: &Message) -> ProbeError {
    ProbeError::Protocol(format!(
        "expected {want} from the relay, got {:?}",
        got.msg_type()
    ))
}

/// Checks the report's shape against the spec and reconciles each direction's counts.
fn tput_result(cfg: &RelayConfig, spec: &TputSpec, t: RelayTput) -> Result<TputResult, ProbeError> {
    let n = usize::from(spec.streams);
    let dir = |flows: bool, d: Option<DirCounts>, name: &str| match (flows, d) {
        (true, Some(d)) if d.sender.len() == n => {
            DirResult::reconcile(spec.transport, d.sender, d.receiver).map(Some)
        }
        (false, None) => Ok(None),
        (_, d) => Err(ProbeError::Protocol(format!(
            "the relay reported {} {name} streams, expected {}",
            d.map_or(0, |d| d.sender.len()),
            if flows { n } else { 0 }
        ))),
    };
    let up = dir(spec.direction.client_sends(), t.up, "relay-to-target")?;
    let down = dir(spec.direction.server_sends(), t.down, "target-to-relay")?;
    Ok(TputResult {
        server: cfg.target,
        spec: spec.clone(),
        test_id: t.target_test_id,
        up,
        down,
        local_sockets: t.relay_sockets,
        remote_sockets: t.target_sockets,
        local_sockets_end: t.relay_sockets_end,
        remote_sockets_end: t.target_sockets_end,
        local_cpu: t.relay_cpu,
        remote_cpu: t.target_cpu,
        intervals: Vec::new(),
        wall_ns: t.wall_ns,
        relay: Some(cfg.relay),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Amount, Direction, StreamEnd};

    fn cfg() -> RelayConfig {
        RelayConfig {
            relay: "127.0.0.1:1".parse().unwrap(),
            target: "127.0.0.1:2".parse().unwrap(),
            connect_timeout: Duration::from_secs(1),
            key: None,
        }
    }

    fn spec(direction: Direction) -> TputSpec {
        TputSpec {
            direction,
            ..TputSpec::tcp(1000, Amount::TimeNs(1))
        }
    }

    fn counts(sent: u64, got: u64) -> DirCounts {
        let end = |bytes| StreamEnd {
            bytes,
            packets: 1,
            elapsed_ns: 1_000_000,
            udp: None,
        };
        DirCounts {
            sender: vec![end(sent)],
            receiver: vec![end(got)],
        }
    }

    #[test]
    fn a_report_is_reconciled_by_the_client() {
        let t = RelayTput {
            up: Some(counts(1000, 1000)),
            ..RelayTput::default()
        };
        let r = tput_result(&cfg(), &spec(Direction::Forward), t).unwrap();
        assert_eq!(r.relay, Some(cfg().relay));
        assert_eq!(r.server, cfg().target);
        assert_eq!(r.up.as_ref().unwrap().receiver_bytes, 1000);
        assert_eq!(r.goodput_bps(), 8e6);
        assert!(
            r.to_table().contains("from 127.0.0.1:1"),
            "{}",
            r.to_table()
        );

        let short = RelayTput {
            up: Some(counts(1000, 999)),
            ..RelayTput::default()
        };
        let e = tput_result(&cfg(), &spec(Direction::Forward), short).unwrap_err();
        assert!(e.to_string().contains("999"), "{e}");
    }

    #[test]
    fn an_agent_without_relays_is_named_as_such() {
        let old = ProbeError::Remote {
            code: "bad-message".into(),
            message: "unknown message type 10".into(),
        };
        let e = explain(&cfg(), old).to_string();
        assert!(
            e.contains("127.0.0.1:1 does not know relay requests")
                && e.contains("local:127.0.0.1:2"),
            "{e}"
        );
        let busy = ProbeError::Remote {
            code: "busy".into(),
            message: "full".into(),
        };
        assert!(matches!(explain(&cfg(), busy), ProbeError::Remote { .. }));
    }

    #[test]
    fn a_report_of_the_wrong_shape_is_refused() {
        let t = RelayTput {
            up: Some(counts(1, 1)),
            ..RelayTput::default()
        };
        assert!(tput_result(&cfg(), &spec(Direction::Reverse), t.clone()).is_err());
        assert!(tput_result(&cfg(), &spec(Direction::Bidir), t).is_err());
        let none = RelayTput::default();
        assert!(tput_result(&cfg(), &spec(Direction::Forward), none).is_err());
    }
}
