//! Test-only: weft's TCP against the Linux kernel's. A TAP device in a network namespace this
//! test creates carries Ethernet frames between a [`ByteConnection`] (the client, driven by the
//! wall clock, its segments wrapped in IPv4 and Ethernet by [`super::ipv4`] and [`super::wire`])
//! and a `std::net::TcpListener` bound inside the namespace. ARP is avoided with a permanent
//! neighbour entry. One megabyte goes each way and must arrive byte for byte; the options of the
//! handshake must be agreed as RFC 7323 and RFC 2018 say.
//!
//! Needs root (namespaces, TAP) and `ip`; otherwise it prints `skipped: <reason>` and passes,
//! unless `WEFT_TEST_STRICT=1`, when it fails with the reason.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use super::ipv4::{Ipv4Repr, PROTO_TCP};
use super::{ByteConnection, CcAlgorithm, Config, Connection, Flags, Segment, SeqNum, State};
use crate::rng::Rng;
use crate::time::Instant;
use weft_sys::netns::enter_netns;
use weft_sys::process::is_root;
use weft_sys::{TapDevice, readable};

const LINUX_IP: [u8; 4] = [10, 213, 0, 1];
const WEFT_IP: [u8; 4] = [10, 213, 0, 2];
const WEFT_MAC: [u8; 6] = [0x02, 0x77, 0x65, 0x66, 0x74, 0x02];
const PORT: u16 = 5001;
const LEN: usize = 1 << 20;

/// Skips (or, under WEFT_TEST_STRICT=1, fails) with `reason`.
fn skip(reason: &str) {
    if std::env::var("WEFT_TEST_STRICT").as_deref() == Ok("1") {
        panic!("cannot run the Linux interoperability test: {reason}");
    }
    println!("skipped: {reason}");
}

fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The namespace, deleted (with the TAP device moved into it) when dropped, also on panic.
struct Namespace(String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.0]);
    }
}

/// Sets up the namespace and the TAP device in it; returns them and the kernel side's MAC.
fn setup(ns: &str, tap: &str) -> Result<(Namespace, TapDevice, [u8; 6]), String> {
    ip(&["netns", "add", ns])?;
    let guard = Namespace(ns.to_string());
    let fd = TapDevice::create(tap).map_err(|e| format!("TAP device {tap}: {e}"))?;
    ip(&["link", "set", tap, "netns", ns])?;
    let netns = |args: &[&str]| {
        let mut a = vec!["netns", "exec", ns, "ip"];
        a.extend_from_slice(args);
        ip(&a)
    };
    netns(&["link", "set", "lo", "up"])?;
    netns(&["addr", "add", "10.213.0.1/24", "dev", tap])?;
    netns(&["link", "set", tap, "up"])?;
    let mac = WEFT_MAC
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":");
    netns(&[
        "neigh",
        "replace",
        "10.213.0.2",
        "lladdr",
        &mac,
        "dev",
        tap,
        "nud",
        "permanent",
    ])?;
    // Segmentation and checksum offloads would hand us 64 kB frames or partial checksums.
    let _ = Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-K", tap])
        .args(["tx", "off", "tso", "off", "gso", "off", "gro", "off"])
        .output();
    let addr = netns(&["-br", "link", "show", tap])?;
    let kernel_mac = addr
        .split_whitespace()
        .find_map(parse_mac)
        .ok_or(format!("no MAC in {addr:?}"))?;
    Ok((guard, fd, kernel_mac))
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<u8> = s
        .split(':')
        .map(|p| u8::from_str_radix(p, 16))
        .collect::<Result<_, _>>()
        .ok()?;
    parts.try_into().ok()
}

/// The kernel's side: accept one connection, read `LEN` bytes, write `LEN` bytes back, read to
/// the end. Runs in a thread that has entered the namespace.
fn linux_server(ns: &str, ready: mpsc::Sender<Result<(), String>>) -> Result<Vec<u8>, String> {
    enter_netns(ns).map_err(|e| format!("setns {ns}: {e}"))?;
    let listener = TcpListener::bind(("10.213.0.1", PORT)).map_err(|e| e.to_string())?;
    let _ = ready.send(Ok(()));
    let (mut s, _) = listener.accept().map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(StdDuration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let mut got = vec![0u8; LEN];
    s.read_exact(&mut got).map_err(|e| format!("read: {e}"))?;
    s.write_all(&pattern(LEN, 0xb5))
        .map_err(|e| format!("write: {e}"))?;
    s.shutdown(Shutdown::Write).map_err(|e| e.to_string())?;
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).map_err(|e| e.to_string())?;
    got.extend(rest);
    Ok(got)
}

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8 ^ salt)
        .collect()
}

/// Ethernet + IPv4 + TCP around `seg` and its payload.
fn frame(seg: &Segment, payload: &[u8], dst_mac: [u8; 6], ident: u16) -> Vec<u8> {
    let tcp_len = seg.header_len() + payload.len();
    let mut f = vec![0u8; 14 + 20 + tcp_len];
    f[0..6].copy_from_slice(&dst_mac);
    f[6..12].copy_from_slice(&WEFT_MAC);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let repr = Ipv4Repr {
        src: WEFT_IP,
        dst: LINUX_IP,
        protocol: PROTO_TCP,
        ttl: 64,
        ident,
        dont_fragment: true,
        payload_len: tcp_len,
    };
    repr.emit(&mut f[14..]).expect("room for the IP header");
    seg.emit(payload, (WEFT_IP, LINUX_IP), &mut f[34..])
        .expect("room for the segment");
    f
}

/// The TAP device with seeded random loss applied to frames in both directions.
struct LossyTap<'a> {
    tap: &'a TapDevice,
    rng: &'a mut Rng,
    loss: f64,
    dropped: u64,
}

/// Writes every segment the connection has to send (or drops it).
fn flush(
    c: &mut ByteConnection,
    tap: &mut LossyTap,
    payload: &mut Vec<u8>,
    ident: &mut u16,
    kernel_mac: [u8; 6],
    now: Instant,
) {
    while let Some(seg) = c.poll_transmit(now, payload) {
        *ident = ident.wrapping_add(1);
        if tap.rng.chance(tap.loss) {
            tap.dropped += 1;
            continue;
        }
        tap.tap
            .send(&frame(&seg, payload, kernel_mac, *ident))
            .expect("write to the TAP device");
    }
}

/// What the client saw, for the assertions.
#[derive(Default)]
struct Seen {
    syn_ack: Option<Segment>,
    bad_checksums: u64,
    segments: u64,
    /// The largest payload Linux sent.
    largest: u32,
    /// Frames the test dropped, both ways.
    dropped: u64,
}

/// Runs the exchange with weft configured as `cfg`, dropping each frame either way with
/// probability `loss`; `None` if it was skipped. `tag` keeps the namespaces of tests running at
/// once apart.
fn exchange(cfg: Config, tag: char, loss: f64) -> Option<(Seen, Connection)> {
    // SAFETY: geteuid has no preconditions.
    if !is_root() {
        skip("needs root for a network namespace and a TAP device");
        return None;
    }
    if ip(&["-V"]).is_err() {
        skip("iproute2's ip is not installed");
        return None;
    }
    let id = std::process::id();
    let (ns, tap) = (format!("wefttcp{tag}{id}"), format!("wtcp{tag}{id}"));
    let (_guard, fd, kernel_mac) = match setup(&ns, &tap) {
        Ok(x) => x,
        Err(e) => {
            skip(&e);
            return None;
        }
    };
    let (ready_tx, ready_rx) = mpsc::channel();
    let ns2 = ns.clone();
    let server = std::thread::spawn(move || {
        let r = linux_server(&ns2, ready_tx.clone());
        if let Err(e) = &r {
            let _ = ready_tx.send(Err(e.clone()));
        }
        r
    });
    ready_rx
        .recv_timeout(StdDuration::from_secs(10))
        .expect("server thread answers")
        .expect("server listening");

    let start = StdInstant::now();
    let now = || Instant(start.elapsed().as_nanos() as u64);
    let conn = Connection::connect(cfg, 40_000, PORT, SeqNum(0xfff0_0000), now());
    let mut c = ByteConnection::new(conn);
    let data = pattern(LEN, 0x3c);
    let (mut written, mut received) = (0, Vec::with_capacity(LEN));
    let mut seen = Seen::default();
    let mut buf = vec![0u8; 65_536];
    let mut payload = Vec::new();
    let mut ident = 0u16;
    let mut rng = Rng::new(u64::from(id));
    let mut lossy = LossyTap {
        tap: &fd,
        rng: &mut rng,
        loss,
        dropped: 0,
    };
    let deadline = start + StdDuration::from_secs(30);
    while StdInstant::now() < deadline {
        let t = now();
        if c.poll_timeout().is_some_and(|d| d <= t) {
            c.handle_timeout(t);
        }
        if c.connection().state().is_synchronized() && written < LEN {
            written += c.send(&data[written..]);
        }
        loop {
            let n = c.recv(&mut buf);
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
        }
        if written == LEN && c.connection().state() == State::CloseWait {
            c.close();
        }
        flush(
            &mut c,
            &mut lossy,
            &mut payload,
            &mut ident,
            kernel_mac,
            now(),
        );
        if matches!(c.connection().state(), State::TimeWait | State::Closed) {
            break;
        }
        // Wait for a frame or the connection's next timer, at most 10 ms.
        let wait = c
            .poll_timeout()
            .map_or(10_000_000, |d| d.0.saturating_sub(now().0).min(10_000_000));
        readable(&[lossy.tap.raw_fd()], Some(wait)).expect("poll the TAP device");
        loop {
            let n = match lossy.tap.recv(&mut buf) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(e) => panic!("read from the TAP device: {e}"),
            };
            if lossy.rng.chance(lossy.loss) {
                lossy.dropped += 1;
                continue;
            }
            let f = &buf[..n];
            if n < 14 || f[12..14] != [0x08, 0x00] || f[0..6] != WEFT_MAC {
                continue;
            }
            let Ok((ipr, body)) = Ipv4Repr::parse(&f[14..]) else {
                continue;
            };
            if ipr.protocol != PROTO_TCP || ipr.dst != WEFT_IP {
                continue;
            }
            match Segment::parse(body, Some((ipr.src, ipr.dst))) {
                Ok((seg, p)) => {
                    seen.segments += 1;
                    seen.largest = seen.largest.max(seg.len);
                    if seg.has(Flags::SYN) && seg.has(Flags::ACK) {
                        seen.syn_ack.get_or_insert(seg);
                    }
                    let p = p.to_vec();
                    c.handle_segment(now(), &seg, &p);
                    // Output after every segment, so ACKs go as a stack without GRO sends them.
                    flush(
                        &mut c,
                        &mut lossy,
                        &mut payload,
                        &mut ident,
                        kernel_mac,
                        now(),
                    );
                }
                Err(_) => seen.bad_checksums += 1,
            }
        }
    }
    let dropped = lossy.dropped;
    let got = server.join().expect("server thread").expect("server side");
    let conn = c.connection().clone();
    seen.dropped = dropped;
    println!(
        "{} segments from Linux, the largest {} bytes, {} frames dropped; weft: {:?}, srtt {:?}",
        seen.segments,
        seen.largest,
        dropped,
        conn.stats(),
        conn.srtt()
    );
    assert_eq!(got.len(), LEN, "Linux received everything, then the FIN");
    assert!(got == data, "Linux received the bytes weft sent");
    assert_eq!(received.len(), LEN);
    assert!(
        received == pattern(LEN, 0xb5),
        "weft received Linux's bytes"
    );
    assert_eq!(seen.bad_checksums, 0, "every segment from Linux checks");
    assert!(conn.error().is_none());
    assert!(matches!(conn.state(), State::TimeWait | State::Closed));
    if loss == 0.0 {
        // Every second full segment of Linux's megabyte is acknowledged (RFC 1122).
        let segments = LEN as u64 / u64::from(conn.mss());
        assert!(
            conn.stats().pure_acks_sent >= segments * 9 / 20,
            "{} ACKs for {segments} segments",
            conn.stats().pure_acks_sent
        );
    }
    Some((seen, conn))
}

#[test]
fn weft_and_linux_exchange_a_megabyte_each_way() {
    let cfg = Config {
        cc: CcAlgorithm::Cubic,
        ..Config::linux()
    };
    let Some((seen, conn)) = exchange(cfg, 'a', 0.0) else {
        return;
    };
    let syn_ack = seen.syn_ack.expect("a SYN-ACK");
    assert_eq!(syn_ack.mss, Some(1460), "Linux's MSS for a 1500-byte MTU");
    assert!(syn_ack.sack_permitted, "Linux agrees to SACK");
    assert!(syn_ack.window_scale.is_some(), "Linux agrees to scaling");
    assert!(syn_ack.timestamps.is_some(), "Linux agrees to timestamps");
    assert!(conn.timestamps_agreed());
    // Every segment carries the 12-byte timestamp option, both ways.
    assert_eq!(conn.mss(), 1448);
    assert_eq!(seen.largest, 1448);
    assert!(conn.sack_enabled());
    assert_eq!(conn.window_scales().0, syn_ack.window_scale.unwrap_or(0));
}

/// A 1995 stack: MSS 536, no scaling, no SACK, Reno. Linux must keep to 536-byte segments and
/// offer neither option back.
#[test]
fn linux_honours_a_1995_client() {
    let Some((seen, conn)) = exchange(Config::default(), 'b', 0.0) else {
        return;
    };
    let syn_ack = seen.syn_ack.expect("a SYN-ACK");
    assert_eq!(syn_ack.mss, Some(1460));
    assert_eq!(conn.mss(), 536, "weft sends no more than its own 536");
    assert_eq!(seen.largest, 536, "Linux sends no more than weft's 536");
    assert!(!syn_ack.sack_permitted && syn_ack.window_scale.is_none());
    assert_eq!(conn.window_scales(), (0, 0));
    assert!(!conn.sack_enabled());
}

/// Two per cent of the frames lost each way: weft's SACK recovery against Linux's, byte-exact.
#[test]
fn weft_and_linux_recover_from_loss() {
    let cfg = Config {
        cc: CcAlgorithm::Cubic,
        ..Config::linux()
    };
    let Some((seen, conn)) = exchange(cfg, 'c', 0.02) else {
        return;
    };
    assert!(seen.dropped > 20, "{} frames dropped", seen.dropped);
    assert!(conn.stats().segments_retransmitted > 0);
    assert!(conn.sack_enabled());
}
