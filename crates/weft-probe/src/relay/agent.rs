//! The relay's side of a relayed test: check the request against this agent's limits, run the
//! test toward the target as an ordinary client, and report both ends' counts.

use std::net::IpAddr;
use std::time::Duration;

use crate::auth::Key;
use crate::error::ProbeError;
use crate::proto::{
    Accept, DirCounts, Message, RELAY_VERSION, RelayReport, RelayRr, RelaySpec, RelayTest,
    RelayTput, Transport,
};
use crate::rr;
use crate::rr::config::{MAX_UDP_PAYLOAD_V4, MAX_UDP_PAYLOAD_V6};
use crate::server::{Limits, TestContext};
use crate::tput::{self, DirResult, TputConfig, TputResult};

/// Runs one relayed test on an accepted control connection (the server has reserved a test
/// slot for it). An `Err` is sent to the client as an `Error` message by the caller.
pub fn serve(ctx: &mut TestContext, spec: &RelaySpec) -> Result<(), ProbeError> {
    check(spec, &ctx.limits)?;
    if !ctx.open() {
        check_protected(spec.target.ip())?;
    }
    ctx.control.send(&Message::Accept(Accept {
        test_id: ctx.test_id,
        cookie: ctx.cookie_hex(),
        udp_ports: Vec::new(),
    }))?;
    let report = run(spec, &ctx.limits, ctx.agent_key()).map_err(|message| ProbeError::Relay {
        target: spec.target,
        message,
    })?;
    ctx.log(&format!("relayed test toward {} done", spec.target));
    ctx.control.send(&Message::Relayed(Box::new(report)))?;
    // Wait for the client's Bye so that closing does not reset a connection with unread data.
    let _ = ctx.control.recv_raw();
    Ok(())
}

/// Protected mode's rule for relays: no target this host alone can reach (loopback, link-local)
/// and none of its own addresses, so that a relay is not a way to probe ports behind the
/// agent's firewall or on its loopback services. Own addresses are those a UDP socket can be
/// bound to (the kernel's own list, whatever interfaces come and go).
pub fn check_protected(ip: IpAddr) -> Result<(), ProbeError> {
    let ip = ip.to_canonical();
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    let why = if ip.is_loopback() {
        "a loopback address"
    } else if link_local {
        "a link-local address"
    } else if std::net::UdpSocket::bind((ip, 0)).is_ok() {
        "one of this agent's own addresses"
    } else {
        return Ok(());
    };
    Err(ProbeError::Refused(format!(
        "{ip} is {why}: this agent relays no test toward its own host or link (protected mode); \
         start it with --open to allow that"
    )))
}

/// Refuses relay requests this agent does not know or that exceed its limits. A relayed test
/// must be bounded by time, within `--max-duration`.
pub fn check(spec: &RelaySpec, limits: &Limits) -> Result<(), ProbeError> {
    if spec.version != RELAY_VERSION {
        return Err(ProbeError::Unsupported(format!(
            "relay request version {} is not supported (this agent speaks version \
             {RELAY_VERSION}); use the same weft version on both ends",
            spec.version
        )));
    }
    let ip = spec.target.ip();
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    if ip.is_unspecified() || ip.is_multicast() || broadcast || spec.target.port() == 0 {
        return Err(ProbeError::Config(format!(
            "{} is not an agent's address: name one host and its port",
            spec.target
        )));
    }
    match &spec.test {
        RelayTest::Tput(t) => {
            tput::agent::validate(t, limits)?;
            if t.planned_ns().is_none() {
                return Err(ProbeError::Limit(
                    "a relayed throughput test must be bounded by time (--time), not by bytes \
                     or count"
                        .into(),
                ));
            }
            if t.interval_ns.is_some() {
                return Err(ProbeError::Config(
                    "interval reports are not relayed: leave out --interval".into(),
                ));
            }
        }
        RelayTest::Rr(r) => check_rr(r, spec.target.is_ipv6(), limits)?,
    }
    Ok(())
}

fn check_rr(r: &RelayRr, ipv6: bool, limits: &Limits) -> Result<(), ProbeError> {
    let max = match r.transport {
        Transport::Tcp => limits.max_len,
        Transport::Udp if ipv6 => MAX_UDP_PAYLOAD_V6.min(limits.max_len),
        Transport::Udp => MAX_UDP_PAYLOAD_V4.min(limits.max_len),
    };
    if r.size == 0 || r.size > max {
        return Err(ProbeError::Limit(format!(
            "message size {} is outside this agent's range of 1 to {max} bytes",
            r.size
        )));
    }
    match (r.time_ns, r.count) {
        (Some(0), _) | (None, None) | (None, Some(0)) => Err(ProbeError::Config(
            "a relayed request/response test needs a count or a time above zero".into(),
        )),
        (Some(t), _) if Duration::from_nanos(t) > limits.max_duration => {
            Err(ProbeError::Limit(format!(
                "a test of {:?} exceeds this agent's maximum of {:?} (--max-duration)",
                Duration::from_nanos(t),
                limits.max_duration
            )))
        }
        _ => Ok(()),
    }
}

/// Runs the test toward the target. Every set-up step may take the idle time-out; a
/// request/response test stops at `--max-duration` whatever its count.
/// The relay proves its own key to the target, if it has one (relayed tests are authenticated
/// at both agents: the client proved the key to the relay).
fn run(spec: &RelaySpec, limits: &Limits, key: Option<&Key>) -> Result<RelayReport, String> {
    match &spec.test {
        RelayTest::Tput(t) => {
            let cfg = TputConfig {
                server: spec.target,
                spec: t.clone(),
                connect_timeout: limits.idle_timeout,
                key: key.cloned(),
            };
            let r = tput::run(&cfg, &mut |_| {}).map_err(|e| e.to_string())?;
            Ok(RelayReport::Tput(tput_report(&r)))
        }
        RelayTest::Rr(r) => {
            let mut rc = super::rr_config(spec.target, r);
            rc.time_limit = Some(limits.max_duration);
            rc.key = key.cloned();
            let res = rr::run(&rc).map_err(|e| e.to_string())?;
            let size = res
                .sizes
                .into_iter()
                .next()
                .ok_or_else(|| "the request/response test measured nothing".to_string())?;
            Ok(RelayReport::Rr(size))
        }
    }
}

/// The raw counts of a throughput test, as the relay's client reconciles them again.
fn tput_report(r: &TputResult) -> RelayTput {
    let counts = |d: &Option<DirResult>| {
        d.as_ref().map(|d| DirCounts {
            sender: d.streams.iter().map(|(s, _)| s.clone()).collect(),
            receiver: d.streams.iter().map(|(_, r)| r.clone()).collect(),
        })
    };
    RelayTput {
        target_test_id: r.test_id,
        up: counts(&r.up),
        down: counts(&r.down),
        relay_sockets: r.local_sockets.clone(),
        target_sockets: r.remote_sockets.clone(),
        relay_sockets_end: r.local_sockets_end.clone(),
        target_sockets_end: r.remote_sockets_end.clone(),
        relay_cpu: r.local_cpu,
        target_cpu: r.remote_cpu,
        wall_ns: r.wall_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Amount, TputSpec};

    fn tput_spec(amount: Amount) -> TputSpec {
        TputSpec::tcp(1000, amount)
    }

    fn relay(target: &str, test: RelayTest) -> RelaySpec {
        RelaySpec {
            version: RELAY_VERSION,
            target: target.parse().unwrap(),
            test,
        }
    }

    #[test]
    fn relays_are_bounded_like_tests() {
        let l = Limits {
            max_duration: Duration::from_secs(2),
            max_streams: 2,
            ..Limits::default()
        };
        let ok = relay("127.0.0.1:9", RelayTest::Tput(tput_spec(Amount::TimeNs(1))));
        assert!(check(&ok, &l).is_ok());
        let long = relay(
            "127.0.0.1:9",
            RelayTest::Tput(tput_spec(Amount::TimeNs(3_000_000_000))),
        );
        assert!(matches!(check(&long, &l), Err(ProbeError::Limit(_))));
        let bytes = relay("127.0.0.1:9", RelayTest::Tput(tput_spec(Amount::Bytes(1))));
        assert!(matches!(check(&bytes, &l), Err(ProbeError::Limit(_))));
        let mut wide = tput_spec(Amount::TimeNs(1));
        wide.streams = 3;
        let wide = relay("127.0.0.1:9", RelayTest::Tput(wide));
        assert!(matches!(check(&wide, &l), Err(ProbeError::Limit(_))));
        for bad in [
            "0.0.0.0:9",
            "224.0.0.1:9",
            "255.255.255.255:9",
            "127.0.0.1:0",
        ] {
            let s = relay(bad, RelayTest::Tput(tput_spec(Amount::TimeNs(1))));
            assert!(matches!(check(&s, &l), Err(ProbeError::Config(_))), "{bad}");
        }
        let mut v2 = ok.clone();
        v2.version = 2;
        assert!(matches!(check(&v2, &l), Err(ProbeError::Unsupported(_))));
    }

    #[test]
    fn relayed_rr_needs_a_bound_within_the_limits() {
        let l = Limits {
            max_duration: Duration::from_secs(2),
            ..Limits::default()
        };
        let rr = |count, time_ns, size, transport| {
            relay(
                "127.0.0.1:9",
                RelayTest::Rr(RelayRr {
                    transport,
                    size,
                    warmup: 0,
                    count,
                    time_ns,
                }),
            )
        };
        assert!(check(&rr(Some(10), None, 64, Transport::Tcp), &l).is_ok());
        assert!(check(&rr(None, Some(1_000_000_000), 64, Transport::Udp), &l).is_ok());
        assert!(check(&rr(None, None, 64, Transport::Tcp), &l).is_err());
        assert!(check(&rr(Some(0), None, 64, Transport::Tcp), &l).is_err());
        assert!(matches!(
            check(&rr(None, Some(3_000_000_000), 64, Transport::Tcp), &l),
            Err(ProbeError::Limit(_))
        ));
        assert!(matches!(
            check(&rr(Some(1), None, 70_000, Transport::Udp), &l),
            Err(ProbeError::Limit(_))
        ));
    }
}
