//! `weft rr` against an in-process weft agent on loopback: every mode, response sizes, the
//! agent's limits, and garbage on the data path.

#![allow(clippy::unwrap_used)]
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use weft_probe::control::Control;
use weft_probe::proto::rr_spec::RR_PORT_KEY;
use weft_probe::proto::{DEFAULT_MAX_MESSAGE, Message, RrSpec, SenderDone, TestSpec, Transport};
use weft_probe::rr::{self, Peer, Proto, RrConfig, StopRule};
use weft_probe::server::{Server, ServerConfig, ServerHandle};

fn agent(tweak: impl FnOnce(&mut ServerConfig)) -> ServerHandle {
    let mut c = ServerConfig::loopback();
    tweak(&mut c);
    Server::bind(c).unwrap().spawn()
}

fn cfg(addr: SocketAddr, proto: Proto, sizes: Vec<u32>, count: u64) -> RrConfig {
    let mut c = RrConfig::new(Peer::Agent(addr), sizes);
    c.proto = proto;
    c.warmup = 5;
    c.stop = StopRule::Count { count };
    c.timeout = Duration::from_secs(2);
    c
}

fn finish(h: ServerHandle) -> weft_probe::server::ServeSummary {
    h.shutdown();
    h.join().unwrap()
}

#[test]
fn agent_tcp_warm_cold_burst_and_udp() {
    let h = agent(|_| {});
    let a = h.local_addr();

    let r = rr::run(&cfg(a, Proto::Tcp, vec![1, 64, 65536], 100)).unwrap();
    assert!(!r.failed(), "{}", r.table());
    for s in &r.sizes {
        assert_eq!(s.count, 100);
        // Warm-up included: the agent saw every request the client sent.
        assert_eq!(s.agent_requests, Some(105));
    }

    let mut c = cfg(a, Proto::Tcp, vec![64], 30);
    c.cold = true;
    let r = rr::run(&c).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert_eq!(r.sizes[0].connect.as_ref().unwrap().count, 30);
    assert_eq!(r.sizes[0].agent_requests, Some(35));

    let mut c = cfg(a, Proto::Tcp, vec![100, 8192], 200);
    c.burst = 16;
    let r = rr::run(&c).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert!(r.sizes.iter().all(|s| s.count == 200));

    let mut c = cfg(a, Proto::Udp, vec![64, 1024, 65507], 100);
    c.burst = 2;
    let r = rr::run(&c).unwrap();
    assert!(!r.failed(), "{}", r.table());
    for s in &r.sizes {
        assert_eq!(s.count + s.lost, 100);
        assert_eq!(s.lost, 0, "{}", r.table());
        assert_eq!(s.agent_requests, Some(105));
    }

    let mut c = cfg(a, Proto::Udp, vec![32], 20);
    c.cold = true;
    let r = rr::run(&c).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert_eq!(r.sizes[0].count, 20);

    let s = finish(h);
    assert_eq!(s.tests_ok, 3 + 1 + 2 + 3 + 1);
    assert_eq!(s.tests_failed, 0);
}

#[test]
fn agent_answers_with_the_requested_response_size() {
    let h = agent(|_| {});
    for proto in [Proto::Tcp, Proto::Udp] {
        let mut c = cfg(h.local_addr(), proto, vec![1, 200], 50);
        c.response_size = Some(4000);
        let r = rr::run(&c).unwrap();
        assert!(!r.failed(), "{}", r.table());
        for s in &r.sizes {
            assert_eq!(s.response_bytes, 4000);
            assert_eq!(s.count, 50);
        }
        let doc = r.to_result_doc();
        assert_eq!(doc.samples[0]["response_bytes"], 4000);
    }
    finish(h);
}

#[test]
fn agent_limits_refuse_large_messages_and_end_idle_tests() {
    let h = agent(|c| {
        c.limits.max_len = 1000;
        c.limits.idle_timeout = Duration::from_millis(300);
    });
    let a = h.local_addr();
    let e = rr::run(&cfg(a, Proto::Tcp, vec![2000], 10)).unwrap_err();
    assert!(matches!(e, rr::RrError::Agent(_)), "{e}");
    assert!(e.to_string().contains("1000"), "{e}");

    // A client that asks for a test and then says nothing on the data path.
    let (mut c, _port) = open_test(a, Transport::Tcp, 64);
    let m = c.recv();
    let err = m.unwrap_err().to_string();
    assert!(err.contains("idle") || err.contains("timeout"), "{err}");

    // The agent still serves.
    let r = rr::run(&cfg(a, Proto::Tcp, vec![64], 20)).unwrap();
    assert!(!r.failed(), "{}", r.table());
    finish(h);
}

#[test]
fn agent_cuts_off_a_test_at_its_maximum_duration_and_says_why() {
    let h = agent(|c| c.limits.max_duration = Duration::from_millis(300));
    // Far more transactions than fit in the agent's 0.3 s (plus its 2 s grace).
    let r = rr::run(&cfg(h.local_addr(), Proto::Tcp, vec![64], 100_000_000)).unwrap();
    assert!(r.failed());
    let s = &r.sizes[0];
    let why = s.aborted.as_deref().unwrap();
    assert!(why.contains("maximum duration"), "{why}");
    assert!(s.count > 0, "the statistics so far are kept");
    let sum = finish(h);
    assert_eq!(sum.tests_failed, 1);
}

/// Opens an rr test by hand and returns the control connection and the data port.
fn open_test(a: SocketAddr, t: Transport, size: u32) -> (Control, u16) {
    let mut c = Control::new(TcpStream::connect(a).unwrap(), DEFAULT_MAX_MESSAGE);
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let spec = RrSpec {
        transport: t,
        cold: false,
        request_size: size,
        response_size: size,
        params: Default::default(),
    };
    c.send(&Message::Request(TestSpec::Rr(spec))).unwrap();
    assert!(matches!(c.recv().unwrap(), Message::Accept(_)));
    let Message::Ext(v) = c.recv().unwrap() else {
        panic!("no Ext")
    };
    let port = v[RR_PORT_KEY].as_u64().unwrap() as u16;
    (c, port)
}

#[test]
fn agent_survives_garbage_on_the_data_path() {
    let h = agent(|_| {});
    let a = h.local_addr();

    // TCP: a connection that sends half a request and vanishes, then one that sends a request
    // and a half and resets, then a proper request on a third.
    let (mut c, port) = open_test(a, Transport::Tcp, 16);
    let data = SocketAddr::new(a.ip(), port);
    {
        let mut s = TcpStream::connect(data).unwrap();
        s.write_all(&[0xff; 8]).unwrap();
    }
    {
        let mut s = TcpStream::connect(data).unwrap();
        s.write_all(&[0u8; 24]).unwrap();
        let mut back = [9u8; 16];
        s.read_exact(&mut back).unwrap();
        assert_eq!(back[..8], [0u8; 8], "the first request's prefix comes back");
    }
    let mut s = TcpStream::connect(data).unwrap();
    s.write_all(b"0123456789abcdef").unwrap();
    let mut back = [0u8; 16];
    s.read_exact(&mut back).unwrap();
    assert_eq!(
        &back[..8],
        b"01234567",
        "the sequence-number prefix comes back"
    );
    drop(s);
    c.send(&Message::SenderDone(SenderDone::default())).unwrap();
    let Message::Finished(f) = c.recv().unwrap() else {
        panic!("no Finished")
    };
    assert_eq!(
        f.rx[0].packets, 2,
        "the half request is not an answered request"
    );
    c.send(&Message::Bye).unwrap();

    // UDP: wrong sizes are dropped, the right size is answered.
    let (mut c, port) = open_test(a, Transport::Udp, 32);
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.connect(SocketAddr::new(a.ip(), port)).unwrap();
    u.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    u.send(&[1u8; 5]).unwrap();
    u.send(&[2u8; 33]).unwrap();
    u.send(&[3u8; 32]).unwrap();
    let mut buf = [0u8; 64];
    let n = u.recv(&mut buf).unwrap();
    assert_eq!(n, 32);
    assert_eq!(
        &buf[..8],
        &[3u8; 8],
        "the sequence-number prefix comes back"
    );
    c.send(&Message::SenderDone(SenderDone::default())).unwrap();
    let Message::Finished(f) = c.recv().unwrap() else {
        panic!("no Finished")
    };
    assert_eq!(f.rx[0].packets, 1);
    c.send(&Message::Bye).unwrap();

    // A real run afterwards.
    let r = rr::run(&cfg(a, Proto::Udp, vec![64], 50)).unwrap();
    assert!(!r.failed(), "{}", r.table());
    let s = finish(h);
    assert_eq!(s.tests_failed, 0);
}

#[test]
fn client_that_vanishes_mid_test_does_not_stop_the_agent() {
    let h = agent(|_| {});
    let a = h.local_addr();
    let (c, port) = open_test(a, Transport::Tcp, 64);
    let mut s = TcpStream::connect(SocketAddr::new(a.ip(), port)).unwrap();
    s.write_all(&[7u8; 64]).unwrap();
    let mut back = [0u8; 64];
    s.read_exact(&mut back).unwrap();
    drop(c);
    drop(s);
    let r = rr::run(&cfg(a, Proto::Tcp, vec![64], 20)).unwrap();
    assert!(!r.failed(), "{}", r.table());
    let sum = finish(h);
    assert_eq!(sum.tests_ok, 1);
    assert_eq!(sum.tests_failed, 1);
}
