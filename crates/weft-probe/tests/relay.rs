//! Relayed tests over loopback: one agent runs a test toward another on a client's request.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weft_probe::ProbeError;
use weft_probe::proto::{Direction, Message, RelayRr, TestSpec, Transport};
use weft_probe::relay::{self, RelayConfig};
use weft_probe::server::{Limits, Server, ServerConfig, ServerHandle};

fn cfg(relay: &ServerHandle, target: SocketAddr) -> RelayConfig {
    RelayConfig {
        relay: relay.local_addr(),
        target,
        connect_timeout: Duration::from_secs(5),
        key: None,
    }
}

#[test]
fn reverse_and_udp_relays_reconcile_both_ends() {
    let (a, b) = (
        common::agent(Duration::from_secs(3)),
        common::agent(Duration::from_secs(3)),
    );
    // The target sends to the relay.
    let r = relay::client::tput(
        &cfg(&a, b.local_addr()),
        &common::spec(Transport::Tcp, Direction::Reverse, 300),
    )
    .unwrap();
    assert_eq!(r.relay, Some(a.local_addr()));
    assert_eq!(r.server, b.local_addr());
    assert!(r.up.is_none());
    let d = r.down.as_ref().unwrap();
    assert!(d.sender_bytes > 0 && d.sender_bytes == d.receiver_bytes);
    // UDP, paced, both ways: datagram counts are reconciled too.
    let mut spec = common::spec(Transport::Udp, Direction::Bidir, 300);
    spec.rate_bps = Some(20_000_000);
    let r = relay::client::tput(&cfg(&a, b.local_addr()), &spec).unwrap();
    for d in [r.up.as_ref().unwrap(), r.down.as_ref().unwrap()] {
        let u = d.udp.as_ref().unwrap();
        assert_eq!(u.expected, d.sender_packets);
        assert!(u.received > 0);
    }
    // Request/response over UDP, counted.
    let rr = relay::client::rr(
        &cfg(&a, b.local_addr()),
        &RelayRr {
            transport: Transport::Udp,
            size: 200,
            warmup: 5,
            count: Some(50),
            time_ns: None,
        },
    )
    .unwrap();
    assert_eq!(rr.relay, Some(a.local_addr().to_string()));
    assert_eq!(rr.sizes[0].sent, 50);
    assert_eq!(rr.sizes[0].agent_requests, Some(55));
}

/// A TCP listener that is not a weft agent: records every connection's bytes.
fn impostor() -> (SocketAddr, Arc<Mutex<Vec<Vec<u8>>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let seen = s2.clone();
            std::thread::spawn(move || {
                let _ = c.set_read_timeout(Some(Duration::from_millis(500)));
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                // Answer like a web server once something arrived, then read on.
                let mut answered = false;
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                    if !answered {
                        let _ = c.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n");
                        answered = true;
                    }
                }
                seen.lock().unwrap().push(got);
            });
        }
    });
    (addr, seen)
}

#[test]
fn a_target_that_is_not_a_weft_agent_gets_one_request_and_no_data() {
    let a = common::agent(Duration::from_secs(3));
    let (target, seen) = impostor();
    let e = relay::client::tput(
        &cfg(&a, target),
        &common::spec(Transport::Tcp, Direction::Forward, 300),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("relay") && text.contains("not a weft"),
        "{text}"
    );
    std::thread::sleep(Duration::from_millis(800));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "only the control connection was opened");
    let msg = Message::parse_bytes(&seen[0], 1 << 20).unwrap();
    assert!(
        matches!(msg, Message::Request(TestSpec::Tput(_))),
        "{msg:?}"
    );
    assert_eq!(
        seen[0].len(),
        msg.to_bytes().len(),
        "nothing but the request"
    );
    drop(seen);
    // The relay keeps serving.
    let r = common::run(&a, common::spec(Transport::Tcp, Direction::Forward, 200)).unwrap();
    assert!(r.up.unwrap().receiver_bytes > 0);
}

#[test]
fn a_relay_counts_toward_the_relays_limits() {
    let mut c = ServerConfig::loopback();
    c.open = true;
    c.limits = Limits {
        max_tests: 1,
        max_streams: 2,
        idle_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let a = Server::bind(c).unwrap().spawn();
    let b = common::agent(Duration::from_secs(3));
    // More streams than the relay allows.
    let mut wide = common::spec(Transport::Tcp, Direction::Forward, 200);
    wide.streams = 3;
    let e = relay::client::tput(&cfg(&a, b.local_addr()), &wide).unwrap_err();
    assert!(
        matches!(&e, ProbeError::Remote { code, .. } if code == "limit"),
        "{e}"
    );
    // Bounded by time only.
    let mut bytes = common::spec(Transport::Tcp, Direction::Forward, 200);
    bytes.amount = weft_probe::proto::Amount::Bytes(1 << 20);
    assert!(relay::client::tput(&cfg(&a, b.local_addr()), &bytes).is_err());
    // A test that holds the relay's only slot (it waits for data connections that never come)
    // makes the relay busy.
    let mut hold = TcpStream::connect(a.local_addr()).unwrap();
    let req = Message::Request(TestSpec::Tput(common::spec(
        Transport::Tcp,
        Direction::Forward,
        200,
    )));
    hold.write_all(&req.to_bytes()).unwrap();
    // The agent accepts only once the slot is reserved.
    let accept = weft_probe::proto::io::read_message(&mut hold, &mut Vec::new(), 1 << 20).unwrap();
    assert!(matches!(accept, Message::Accept(_)), "{accept:?}");
    let e = relay::client::tput(
        &cfg(&a, b.local_addr()),
        &common::spec(Transport::Tcp, Direction::Forward, 200),
    )
    .unwrap_err();
    assert!(
        matches!(&e, ProbeError::Remote { code, .. } if code == "busy"),
        "{e}"
    );
    drop(hold);
    // Once the slot is free again (the held test notices its client is gone, at the latest at
    // the 2 s idle time-out), the relay runs.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let r = loop {
        match relay::client::tput(
            &cfg(&a, b.local_addr()),
            &common::spec(Transport::Tcp, Direction::Forward, 200),
        ) {
            Err(ProbeError::Remote { code, .. })
                if code == "busy" && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            other => break other.unwrap(),
        }
    };
    assert!(r.up.unwrap().receiver_bytes > 0);
}

/// Protected mode (no --open): a relay is no way to reach what only the agent's host can reach,
/// and a keyless agent serves only its own host's clients (issue 32).
#[test]
fn a_protected_agent_relays_nowhere_near_itself_and_serves_only_its_host() {
    let a = Server::bind(ServerConfig::loopback()).unwrap().spawn();
    let b = common::agent(Duration::from_secs(3));
    let spec = common::spec(Transport::Tcp, Direction::Forward, 200);
    for target in [
        b.local_addr(),
        "127.1.2.3:5301".parse().unwrap(),
        "169.254.1.1:5301".parse().unwrap(),
        "[::1]:5301".parse().unwrap(),
        "[fe80::1]:5301".parse().unwrap(),
    ] {
        let e = relay::client::tput(&cfg(&a, target), &spec).unwrap_err();
        assert!(
            matches!(&e, ProbeError::Remote { code, message } if code == "refused"
                && message.contains("protected mode")),
            "{target}: {e}"
        );
    }
    // The machine's own address (the source of its default route), if it has one.
    let own = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").and_then(|()| s.local_addr()))
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
    let Some(own) = own else {
        weft_testutil::skip("this machine has no address but loopback");
        return;
    };
    let e = relay::client::tput(&cfg(&a, SocketAddr::new(own, 5301)), &spec).unwrap_err();
    assert!(e.to_string().contains("own addresses"), "{e}");
    // A client from that (non-loopback) address is refused by a keyless agent on 0.0.0.0.
    let mut any = ServerConfig::loopback();
    any.bind = "0.0.0.0:0".parse().unwrap();
    let wide = Server::bind(any).unwrap().spawn();
    let to = SocketAddr::new(own, wide.local_addr().port());
    let cfg = weft_probe::tput::TputConfig {
        server: to,
        spec: spec.clone(),
        connect_timeout: Duration::from_secs(5),
        key: None,
    };
    let e = weft_probe::tput::run(&cfg, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("protected mode"), "{e}");
    // From loopback it serves.
    let mut lo = cfg.clone();
    lo.server = SocketAddr::new("127.0.0.1".parse().unwrap(), wide.local_addr().port());
    assert!(weft_probe::tput::run(&lo, &mut |_| {}).is_ok());
}
