//! A reverse UDP test cannot be aimed at a third party: the agent sends only to the address that
//! holds the control connection, whatever source a UDP hello claims (issue 32).
#![allow(clippy::unwrap_used)]

mod common;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use weft_probe::control::Control;
use weft_probe::proto::data::cookie_from_hex;
use weft_probe::proto::{Direction, Hello, Message, TestSpec, Transport};

/// An IPv4 + UDP datagram from `src` to `dst` carrying `payload` (IP checksum and length are
/// filled in by the kernel for IP_HDRINCL sockets; a zero UDP checksum means "none" in IPv4).
fn forged(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let total = 20 + 8 + payload.len();
    let mut p = Vec::with_capacity(total);
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    p.extend_from_slice(&src.ip().octets());
    p.extend_from_slice(&dst.ip().octets());
    p.extend_from_slice(&src.port().to_be_bytes());
    p.extend_from_slice(&dst.port().to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}

/// Counts what reaches `sock` within `d`.
fn datagrams_within(sock: &UdpSocket, d: Duration) -> u64 {
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let until = Instant::now() + d;
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while Instant::now() < until {
        if sock.recv(&mut buf).is_ok() {
            n += 1;
        }
    }
    n
}

#[test]
fn a_forged_udp_hello_gets_the_victim_nothing() {
    weft_testutil::skip_if!(weft_testutil::missing_root(
        "forging a source address (a raw socket)"
    ));
    let agent = common::agent(Duration::from_secs(3));
    let SocketAddr::V4(agent_addr) = agent.local_addr() else {
        unreachable!("the test agent listens on 127.0.0.1")
    };
    // The victim: another loopback address, which the attacker's hello claims to come from.
    let victim = UdpSocket::bind("127.0.0.2:0").unwrap();
    let SocketAddr::V4(victim_addr) = victim.local_addr().unwrap() else {
        unreachable!()
    };

    // The attacker is an ordinary client: it asks for a reverse UDP test and learns the cookie.
    let mut ctl = Control::new(TcpStream::connect(agent_addr).unwrap(), 1 << 20);
    ctl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let spec = common::spec(Transport::Udp, Direction::Reverse, 1000);
    ctl.send(&Message::Request(TestSpec::Tput(spec))).unwrap();
    let Message::Accept(accept) = ctl.recv().unwrap() else {
        panic!("expected Accept")
    };
    let cookie = cookie_from_hex(&accept.cookie).unwrap();
    let hello = Hello {
        udp: true,
        stream: 0,
        cookie,
    }
    .emit();
    let port = accept.udp_ports[0];
    let dst = SocketAddrV4::new(*agent_addr.ip(), port);

    // Its hello claims the victim's address.
    let raw = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::UDP)).unwrap();
    raw.set_header_included_v4(true).unwrap();
    for _ in 0..3 {
        raw.send_to(
            &forged(victim_addr, dst, &hello),
            &SocketAddr::V4(dst).into(),
        )
        .unwrap();
    }
    let flooded = datagrams_within(&victim, Duration::from_millis(800));
    assert_eq!(
        flooded, 0,
        "the agent sent {flooded} datagrams to an address that only claimed to be the client"
    );

    // The test is still the client's: a hello from the control connection's address starts it.
    let me = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
    me.connect(dst).unwrap();
    me.send(&hello).unwrap();
    let Message::Ready(_) = ctl.recv().unwrap() else {
        panic!("expected Ready")
    };
    assert!(datagrams_within(&me, Duration::from_millis(300)) > 0);
    assert_eq!(datagrams_within(&victim, Duration::from_millis(100)), 0);
    agent.shutdown();
}

#[test]
fn a_reverse_udp_stream_stops_when_its_peer_refuses() {
    // A client that closes its socket mid-test: the agent's sender hears ICMP port unreachable
    // and stops, instead of sending until --max-duration.
    let agent = common::agent(Duration::from_secs(3));
    let mut ctl = Control::new(TcpStream::connect(agent.local_addr()).unwrap(), 1 << 20);
    ctl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let spec = common::spec(Transport::Udp, Direction::Reverse, 4000);
    ctl.send(&Message::Request(TestSpec::Tput(spec))).unwrap();
    let Message::Accept(accept) = ctl.recv().unwrap() else {
        panic!("expected Accept")
    };
    let hello = Hello {
        udp: true,
        stream: 0,
        cookie: cookie_from_hex(&accept.cookie).unwrap(),
    }
    .emit();
    let me = UdpSocket::bind("127.0.0.1:0").unwrap();
    me.connect(SocketAddr::new(
        agent.local_addr().ip(),
        accept.udp_ports[0],
    ))
    .unwrap();
    me.send(&hello).unwrap();
    let Message::Ready(_) = ctl.recv().unwrap() else {
        panic!("expected Ready")
    };
    assert!(datagrams_within(&me, Duration::from_millis(200)) > 0);
    let t0 = Instant::now();
    drop(me);
    // The agent's sender stops and reports; the test fails at the agent long before its 4 s.
    let mut why = None;
    while t0.elapsed() < Duration::from_secs(3) {
        match ctl.recv() {
            Ok(_) => {}
            Err(e) => {
                why = Some(e.to_string());
                break;
            }
        }
    }
    let why = why.expect("the agent kept the test running toward a closed socket");
    assert!(why.contains("refused"), "{why}");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    agent.shutdown();
}
