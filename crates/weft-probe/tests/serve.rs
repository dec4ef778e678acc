//! The agent survives bad clients: garbage, oversize lengths, stalls, disconnects mid-test.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{agent, run, spec};
use weft_probe::control::Control;
use weft_probe::proto::frame::emit_header;
use weft_probe::proto::{Amount, Direction, Message, TestSpec, Transport};
use weft_probe::server::{Limits, Server, ServerConfig};

fn works(h: &weft_probe::server::ServerHandle) {
    let mut s = spec(Transport::Tcp, Direction::Forward, 0);
    s.amount = Amount::Bytes(100_000);
    let r = run(h, s).unwrap();
    assert_eq!(r.up.unwrap().receiver_bytes, 100_000);
}

/// Reads whatever the agent answers until it closes, with a bound.
fn answer(mut c: TcpStream) -> Vec<u8> {
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut v = Vec::new();
    let _ = c.read_to_end(&mut v);
    v
}

#[test]
fn garbage_gets_an_error_and_the_agent_keeps_serving() {
    let h = agent(Duration::from_secs(2));
    let mut c = TcpStream::connect(h.local_addr()).unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let a = answer(c);
    match Message::parse_bytes(&a, 1 << 20).unwrap() {
        Message::Error(e) => assert_eq!(e.code, "bad-message"),
        m => panic!("{m:?}"),
    }
    // A valid header with a body that is not JSON.
    let mut c = TcpStream::connect(h.local_addr()).unwrap();
    let mut b = emit_header(1, 4).to_vec();
    b.extend_from_slice(b"\xff\xfe{]");
    c.write_all(&b).unwrap();
    assert!(matches!(
        Message::parse_bytes(&answer(c), 1 << 20).unwrap(),
        Message::Error(_)
    ));
    works(&h);
    h.shutdown();
    assert!(h.join().unwrap().connections_dropped >= 2);
}

#[test]
fn oversize_length_is_refused_without_reading_it() {
    let h = agent(Duration::from_secs(2));
    let mut c = TcpStream::connect(h.local_addr()).unwrap();
    c.write_all(&emit_header(1, u32::MAX)).unwrap();
    match Message::parse_bytes(&answer(c), 1 << 20).unwrap() {
        Message::Error(e) => assert_eq!(e.code, "limit", "{e:?}"),
        m => panic!("{m:?}"),
    }
    works(&h);
}

#[test]
fn stalled_clients_are_dropped_after_the_idle_timeout() {
    let h = agent(Duration::from_millis(300));
    // Silent from the start.
    let silent = TcpStream::connect(h.local_addr()).unwrap();
    // Half a header, then nothing.
    let mut half = TcpStream::connect(h.local_addr()).unwrap();
    half.write_all(b"WEFT\x02").unwrap();
    // A test whose data connection never comes.
    let mut ctl = Control::new(TcpStream::connect(h.local_addr()).unwrap(), 1 << 20);
    ctl.send(&Message::Request(TestSpec::Tput(spec(
        Transport::Tcp,
        Direction::Forward,
        100,
    ))))
    .unwrap();
    assert!(matches!(ctl.recv().unwrap(), Message::Accept(_)));
    let t = Instant::now();
    let e = ctl.recv().unwrap_err().to_string();
    assert!(
        e.contains("timeout") || e.contains("data connections"),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(4));
    // While those were pending the agent served others, and it still does.
    works(&h);
    let a = answer(silent);
    assert!(a.is_empty() || matches!(Message::parse_bytes(&a, 1 << 20), Ok(Message::Error(_))));
    drop(half);
}

#[test]
fn a_client_vanishing_mid_test_does_not_stop_the_agent() {
    let h = agent(Duration::from_millis(500));
    for direction in [Direction::Forward, Direction::Reverse] {
        let mut ctl = Control::new(TcpStream::connect(h.local_addr()).unwrap(), 1 << 20);
        let mut s = spec(Transport::Tcp, direction, 2000);
        s.len = 16 * 1024;
        ctl.send(&Message::Request(TestSpec::Tput(s))).unwrap();
        let accept = match ctl.recv().unwrap() {
            Message::Accept(a) => a,
            m => panic!("{m:?}"),
        };
        let mut data = TcpStream::connect(h.local_addr()).unwrap();
        let cookie = weft_probe::proto::data::cookie_from_hex(&accept.cookie).unwrap();
        data.write_all(
            &weft_probe::proto::Hello {
                udp: false,
                stream: 0,
                cookie,
            }
            .emit(),
        )
        .unwrap();
        assert!(matches!(ctl.recv().unwrap(), Message::Ready(_)));
        if direction == Direction::Forward {
            data.write_all(&[0u8; 100_000]).unwrap();
        } else {
            let mut b = [0u8; 10_000];
            data.read_exact(&mut b).unwrap();
        }
        drop(data);
        drop(ctl);
    }
    let t = Instant::now();
    works(&h);
    assert!(t.elapsed() < Duration::from_secs(3));
    h.shutdown();
    let sum = h.join().unwrap();
    assert_eq!(sum.tests_failed, 2, "{sum:?}");
    assert_eq!(sum.tests_ok, 1, "{sum:?}");
}

#[test]
fn a_data_stream_that_stalls_mid_test_fails_the_test_not_the_agent() {
    let h = agent(Duration::from_millis(300));
    let mut ctl = Control::new(TcpStream::connect(h.local_addr()).unwrap(), 1 << 20);
    let mut s = spec(Transport::Tcp, Direction::Forward, 0);
    s.amount = Amount::Bytes(10_000_000);
    ctl.send(&Message::Request(TestSpec::Tput(s))).unwrap();
    let accept = match ctl.recv().unwrap() {
        Message::Accept(a) => a,
        m => panic!("{m:?}"),
    };
    let cookie = weft_probe::proto::data::cookie_from_hex(&accept.cookie).unwrap();
    let mut data = TcpStream::connect(h.local_addr()).unwrap();
    let hello = weft_probe::proto::Hello {
        udp: false,
        stream: 0,
        cookie,
    };
    data.write_all(&hello.emit()).unwrap();
    assert!(matches!(ctl.recv().unwrap(), Message::Ready(_)));
    data.write_all(&[1u8; 1000]).unwrap();
    // Now stall with the connection open: the agent gives up after its idle time-out.
    let t = Instant::now();
    let e = loop {
        match ctl.recv() {
            Ok(Message::SenderDone(_)) => continue, // the agent has nothing to send
            Ok(m) => panic!("{m:?}"),
            Err(e) => break e.to_string(),
        }
    };
    assert!(e.contains("stalled"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
    works(&h);
    drop(data);
}

#[test]
fn udp_client_that_vanishes_is_cut_off() {
    let h = agent(Duration::from_millis(300));
    let mut ctl = Control::new(TcpStream::connect(h.local_addr()).unwrap(), 1 << 20);
    ctl.send(&Message::Request(TestSpec::Tput(spec(
        Transport::Udp,
        Direction::Forward,
        500,
    ))))
    .unwrap();
    assert!(matches!(ctl.recv().unwrap(), Message::Accept(_)));
    drop(ctl);
    works(&h);
}

#[test]
fn limits_refuse_too_many_streams_too_long_and_busy() {
    let mut cfg = ServerConfig::loopback();
    cfg.limits = Limits {
        max_tests: 1,
        max_streams: 2,
        max_duration: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let h = Server::bind(cfg).unwrap().spawn();
    let mut s = spec(Transport::Tcp, Direction::Forward, 100);
    s.streams = 3;
    let e = run(&h, s).unwrap_err().to_string();
    assert!(e.contains("max-streams"), "{e}");
    let e = run(&h, spec(Transport::Tcp, Direction::Forward, 5000))
        .unwrap_err()
        .to_string();
    assert!(e.contains("max-duration"), "{e}");
    // Hold the only slot with a test that waits for its data connection.
    let mut ctl = Control::new(TcpStream::connect(h.local_addr()).unwrap(), 1 << 20);
    ctl.send(&Message::Request(TestSpec::Tput(spec(
        Transport::Tcp,
        Direction::Forward,
        100,
    ))))
    .unwrap();
    assert!(matches!(ctl.recv().unwrap(), Message::Accept(_)));
    let e = run(&h, spec(Transport::Tcp, Direction::Forward, 100))
        .unwrap_err()
        .to_string();
    assert!(e.contains("busy") || e.contains("maximum of 1"), "{e}");
    drop(ctl);
}

#[test]
fn once_serves_one_test_and_stops() {
    let mut cfg = ServerConfig::loopback();
    cfg.once = true;
    let h = Server::bind(cfg).unwrap().spawn();
    // Garbage does not count as the one test.
    let mut c = TcpStream::connect(h.local_addr()).unwrap();
    c.write_all(&[0u8; 16]).unwrap();
    drop(answer(c));
    works(&h);
    let sum = h.join().unwrap();
    assert_eq!(sum.tests_ok, 1);
}

#[test]
fn rr_requests_reach_the_rr_agent() {
    let h = agent(Duration::from_secs(2));
    // A request of the defaults asks for 0-byte requests: the rr agent's own range check
    // refuses it, by name, and the agent keeps serving.
    let mut ctl = Control::new(TcpStream::connect(h.local_addr()).unwrap(), 1 << 20);
    let rr: TestSpec = serde_json::from_str(r#"{"kind":"rr"}"#).unwrap();
    ctl.send(&Message::Request(rr)).unwrap();
    match ctl.recv() {
        Err(weft_probe::ProbeError::Remote { code, message }) => {
            assert_eq!(code, "limit", "{message}");
            assert!(message.contains("request size 0"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    drop(ctl);
    // A request it can serve is accepted and told the data port.
    let mut ctl = Control::new(TcpStream::connect(h.local_addr()).unwrap(), 1 << 20);
    let rr: TestSpec =
        serde_json::from_str(r#"{"kind":"rr","request_size":64,"response_size":64}"#).unwrap();
    ctl.send(&Message::Request(rr)).unwrap();
    assert!(
        matches!(ctl.recv().unwrap(), Message::Accept(a) if a.udp_ports.is_empty()),
        "a TCP rr test is accepted"
    );
    match ctl.recv().unwrap() {
        Message::Ext(v) => assert!(
            v[weft_probe::proto::rr_spec::RR_PORT_KEY]
                .as_u64()
                .is_some_and(|p| p > 0),
            "{v}"
        ),
        m => panic!("{m:?}"),
    }
    drop(ctl);
    works(&h);
}
