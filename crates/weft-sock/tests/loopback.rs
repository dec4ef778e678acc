//! The driver on loopback: request/response over UDP and TCP (an echo service too), and a bulk
//! transfer over TCP, each end a core application on its own thread.
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::io::Read;
use std::net::{TcpListener, TcpStream, UdpSocket};

use weft_model::app::bulk::{BulkSink, BulkSource};
use weft_model::app::rr::{Answer, RrClient, RrServer, RrSpec, Via};
use weft_model::{Duration, Instant};
use weft_sock::datagram::{self, Peers};
use weft_sock::stream::Observer;
use weft_sock::{Clock, Options, stream};

fn spec(request: u64, response: u64) -> RrSpec {
    RrSpec {
        request,
        response,
        count: 200,
        timeout: Duration::from_secs(2),
        start: Instant::ZERO,
        give_up: Some(Duration::from_secs(5)),
    }
}

/// A bound, hard stop for every run: a broken driver fails the test instead of hanging it.
fn bounded() -> Options {
    Options {
        until: Some(Instant(Duration::from_secs(20).0)),
        ..Options::default()
    }
}

#[test]
fn udp_request_response_answers_every_request() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut sv = RrServer::new(100, 1000, Answer::Whole, Via::Datagram(0));
            let clock = Clock::start();
            let done = |_: &RrServer, _| stop.load(std::sync::atomic::Ordering::Relaxed);
            datagram::drive(
                &mut sv,
                &server,
                &mut Peers::learning(),
                &clock,
                &bounded(),
                done,
            )
            .unwrap();
            assert_eq!(sv.answered(), 200);
        });
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut c = RrClient::new(spec(100, 1000), Via::Datagram(0));
        let clock = Clock::start();
        let r = datagram::drive(
            &mut c,
            &s,
            &mut Peers::fixed(vec![addr]),
            &clock,
            &bounded(),
            |_, _| false,
        )
        .unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let l = c.latencies();
        assert_eq!((l.rtt_ns.len(), l.lost, c.stray()), (200, 0, 0), "{r:?}");
        assert!(l.quantile(0.5) > 0);
    });
}

fn tcp_rr(answer: Answer, request: u64, response: u64) -> RrClient {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::scope(|sc| {
        sc.spawn(move || {
            let (s, _) = l.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let mut sv = RrServer::new(request, response, answer, Via::Stream);
            let r = stream::drive(&mut sv, &s, &Clock::start(), &bounded()).unwrap();
            assert!(r.eof, "the client closed: {r:?}");
        });
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let mut c = RrClient::new(spec(request, response), Via::Stream);
        stream::drive(&mut c, &s, &Clock::start(), &bounded()).unwrap();
        drop(s);
        c
    })
}

#[test]
fn tcp_request_response_carries_each_request_number_back() {
    // Large answers (several reads each) and tiny ones (the number cut to two bytes).
    for (req, resp) in [(64, 100_000), (2, 2), (300_000, 16)] {
        let c = tcp_rr(Answer::Whole, req, resp);
        let l = c.latencies();
        assert!(!c.unframed(), "{req} {resp}");
        assert_eq!((l.rtt_ns.len(), l.lost), (200, 0), "{req} {resp}");
    }
}

#[test]
fn an_echo_service_writes_back_each_read_and_the_numbers_come_back() {
    let c = tcp_rr(Answer::Echo, 5000, 5000);
    assert!(!c.unframed());
    assert_eq!(c.latencies().rtt_ns.len(), 200);
}

#[test]
fn a_bulk_transfer_moves_every_byte_and_closes() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let time = Duration::from_millis(300);
    let sink = std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut k = BulkSink::from_first(Duration::from_millis(50), time);
        let r = stream::drive(&mut k, &s, &Clock::start(), &bounded()).unwrap();
        (k, r)
    });
    let s = TcpStream::connect(addr).unwrap();
    let mut src = BulkSource::new(Via::Stream, 65_536, Instant(time.0), None);
    let sent = stream::drive(&mut src, &s, &Clock::start(), &bounded()).unwrap();
    drop(s);
    let (k, r) = sink.join().unwrap();
    assert!(r.eof);
    assert_eq!(k.bytes(), sent.written);
    assert!(
        k.measured() > 0 && k.measured() < k.bytes(),
        "{}",
        k.measured()
    );
}

/// Counts what the driver says it wrote, call by call.
#[derive(Default)]
struct Seen {
    bytes: u64,
    calls: u64,
}

impl Observer for Seen {
    fn wrote(&mut self, n: u64, _now: Instant) {
        self.bytes += n;
        self.calls += 1;
    }
}

#[test]
fn a_message_longer_than_the_drivers_buffer_is_the_filler_and_the_observer_sees_every_byte() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut v = Vec::new();
        s.read_to_end(&mut v).unwrap();
        v
    });
    let s = TcpStream::connect(addr).unwrap();
    // Longer than the driver's largest message buffer (4 MiB), so written from it twice over;
    // then a short second message.
    let len: u64 = (5 << 20) + 3;
    let total = len + 1000;
    let mut src = BulkSource::new(Via::Stream, len, Instant(u64::MAX), None).with_limit(total);
    let mut seen = Seen::default();
    let r = stream::drive_observed(
        &mut src,
        &s,
        &Clock::start(),
        &bounded(),
        &mut seen,
        |_, _| false,
    )
    .unwrap();
    drop(s);
    let v = reader.join().unwrap();
    assert_eq!(
        (v.len() as u64, r.written, seen.bytes),
        (total, total, total)
    );
    assert!(seen.calls >= 2, "{} calls", seen.calls);
    assert_eq!(r.error, None);
    let (first, second) = v.split_at(len as usize);
    for m in [first, second] {
        let wrong = m
            .iter()
            .enumerate()
            .position(|(i, &b)| b != (i % 251) as u8);
        assert_eq!(wrong, None, "a message's byte is not the filler");
    }
}
