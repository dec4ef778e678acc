//! The agent side of a throughput test.

use std::time::{Duration, Instant};

use super::opts;
use super::session::{DataSock, Ev, Session};
use crate::error::ProbeError;
use crate::proto::data::UDP_HEADER_LEN;
use crate::proto::{Accept, Finished, Message, Ready, SockInfo, TputSpec, Transport};
use crate::server::{Limits, TestContext};

/// Largest UDP payload over IPv4, in bytes.
pub const MAX_UDP_LEN: u32 = 65507;

/// Checks a request against the agent's limits and against sense.
pub fn validate(spec: &TputSpec, limits: &Limits) -> Result<(), ProbeError> {
    if spec.streams == 0 {
        return Err(ProbeError::Config(
            "a test needs at least one stream".into(),
        ));
    }
    if spec.streams > limits.max_streams {
        return Err(ProbeError::Limit(format!(
            "{} streams requested; this agent allows at most {} (--max-streams)",
            spec.streams, limits.max_streams
        )));
    }
    if spec.len == 0 || spec.len > limits.max_len {
        return Err(ProbeError::Limit(format!(
            "buffer length {} is outside 1..={} bytes",
            spec.len, limits.max_len
        )));
    }
    if spec.transport == Transport::Udp
        && !(UDP_HEADER_LEN as u32..=MAX_UDP_LEN).contains(&spec.len)
    {
        return Err(ProbeError::Config(format!(
            "UDP datagram length {} is outside {UDP_HEADER_LEN}..={MAX_UDP_LEN} bytes",
            spec.len
        )));
    }
    if let Some(t) = spec.planned_ns() {
        if Duration::from_nanos(t) > limits.max_duration {
            return Err(ProbeError::Limit(format!(
                "a test of {:?} exceeds this agent's maximum of {:?} (--max-duration)",
                Duration::from_nanos(t),
                limits.max_duration
            )));
        }
    }
    if let Some(i) = spec.interval_ns {
        if i < 1_000_000 {
            return Err(ProbeError::Config(
                "interval reports must be at least 1 ms apart".into(),
            ));
        }
    }
    Ok(())
}

/// Runs the agent side of one throughput test: accept, attach streams, run, report.
pub fn serve(ctx: &mut TestContext, spec: &TputSpec) -> Result<(), ProbeError> {
    validate(spec, &ctx.limits)?;
    let n = usize::from(spec.streams);
    let n_up = if spec.direction.client_sends() { n } else { 0 };
    let n_down = if spec.direction.server_sends() { n } else { 0 };
    let total = n_up + n_down;

    let mut udp = Vec::new();
    if spec.transport == Transport::Udp {
        for _ in 0..total {
            let s = ctx.bind_udp()?;
            opts::apply_udp(&s, spec)?;
            udp.push(s);
        }
    }
    let udp_ports = udp
        .iter()
        .map(|s| s.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ProbeError::io("reading a UDP port", e))?;
    ctx.control.send(&Message::Accept(Accept {
        test_id: ctx.test_id,
        cookie: ctx.cookie_hex(),
        udp_ports,
    }))?;

    let mut socks = Vec::with_capacity(total);
    let mut infos = Vec::with_capacity(total);
    match spec.transport {
        Transport::Tcp => {
            for s in ctx.accept_tcp_streams(total)? {
                opts::apply_tcp(&s, spec)?;
                infos.push(opts::tcp_info(&s));
                socks.push(DataSock::Tcp(s));
            }
        }
        Transport::Udp => {
            for (i, s) in udp.into_iter().enumerate() {
                ctx.await_udp_hello(&s, i as u16)?;
                infos.push(opts::udp_info(&s));
                socks.push(DataSock::Udp(s));
            }
        }
    }
    let rx: Vec<DataSock> = socks.drain(..n_up).collect();
    let tx = socks;
    run(ctx, spec, tx, rx, infos)
}

fn run(
    ctx: &mut TestContext,
    spec: &TputSpec,
    tx: Vec<DataSock>,
    rx: Vec<DataSock>,
    infos: Vec<SockInfo>,
) -> Result<(), ProbeError> {
    let deadline = ctx.hard_deadline();
    let reader = ctx.control.try_clone()?;
    ctx.control
        .send(&Message::Ready(Ready { streams: infos }))?;
    let start = Instant::now();
    let mut sess = Session::start(spec, tx, rx, reader, start, ctx.limits.idle_timeout)?;
    let interval = spec.interval_ns.map(Duration::from_nanos);
    let mut next_tick = interval.map(|i| start + i);
    let mut sent_done = false;
    let mut peer_done = !spec.direction.client_sends();
    loop {
        let now = Instant::now();
        if now >= deadline {
            sess.abort();
            return Err(ProbeError::Timeout(format!(
                "test exceeded the agent's maximum duration of {:?}",
                ctx.limits.max_duration
            )));
        }
        if ctx.stopping() {
            sess.abort();
            return Err(ProbeError::Unsupported("the agent is shutting down".into()));
        }
        if let (Some(t), Some(i)) = (next_tick, interval) {
            if now >= t {
                let rep = sess.tick(now);
                ctx.control.send(&Message::Interval(rep))?;
                next_tick = Some(t + i);
            }
        }
        if !sent_done && sess.tx_done() {
            ctx.control.send(&Message::SenderDone(sess.sender_done()))?;
            sent_done = true;
        }
        // The agent reports once its receivers reached end of stream (TCP) or drained (UDP),
        // so its counts include every byte that was in flight when the client stopped sending.
        if sent_done && sess.rx_done() && peer_done {
            break;
        }
        let wait = next_tick
            .map_or(Duration::from_millis(100), |t| {
                t.saturating_duration_since(now)
            })
            .min(Duration::from_millis(100));
        let Some(ev) = sess.next(wait) else { continue };
        match sess.record(ev) {
            Ok(Some(Message::SenderDone(sd))) => {
                sess.peer_sender_done(&sd, spec.transport)?;
                peer_done = true;
            }
            Ok(Some(Message::Interval(_))) | Ok(None) => {}
            Ok(Some(other)) => {
                sess.abort();
                return Err(ProbeError::Protocol(format!(
                    "unexpected {:?} during the test",
                    other.msg_type()
                )));
            }
            Err(e) => {
                sess.abort();
                return Err(e);
            }
        }
    }
    let wall = start.elapsed();
    let total = |v: Vec<crate::proto::StreamEnd>| v.iter().map(|e| e.bytes).sum::<u64>();
    ctx.log(&format!(
        "received {} bytes, sent {} bytes in {:.3} s",
        total(sess.rx_ends()),
        total(sess.tx_ends()),
        wall.as_secs_f64()
    ));
    ctx.control.send(&Message::Finished(Finished {
        tx: sess.tx_ends(),
        rx: sess.rx_ends(),
        cpu: sess.cpu(wall),
        sockets_end: [sess.rx_infos(), sess.tx_infos()].concat(),
        placement: None,
    }))?;
    // Wait for the client's Bye so that closing does not reset a connection with unread data.
    let until = Instant::now() + ctx.limits.idle_timeout;
    while Instant::now() < until {
        match sess.next(until.saturating_duration_since(Instant::now())) {
            Some(Ev::Ctrl(Ok(Message::Bye))) | Some(Ev::Ctrl(Err(_))) | None => break,
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Amount;

    fn spec() -> TputSpec {
        TputSpec::tcp(1000, Amount::TimeNs(1_000_000_000))
    }

    #[test]
    fn validation_enforces_limits() {
        let l = Limits::default();
        assert!(validate(&spec(), &l).is_ok());
        let s = TputSpec {
            streams: 0,
            ..spec()
        };
        assert!(matches!(validate(&s, &l), Err(ProbeError::Config(_))));
        let s = TputSpec {
            streams: 1000,
            ..spec()
        };
        assert!(matches!(validate(&s, &l), Err(ProbeError::Limit(_))));
        let s = TputSpec {
            amount: Amount::TimeNs(u64::MAX),
            ..spec()
        };
        assert!(matches!(validate(&s, &l), Err(ProbeError::Limit(_))));
        let s = TputSpec {
            transport: Transport::Udp,
            len: 8,
            ..spec()
        };
        assert!(matches!(validate(&s, &l), Err(ProbeError::Config(_))));
        let s = TputSpec {
            len: u32::MAX,
            ..spec()
        };
        assert!(matches!(validate(&s, &l), Err(ProbeError::Limit(_))));
    }
}
