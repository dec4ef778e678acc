//! `weft rr --echo` against a real RFC 862-style echo service: socat echoing through a pipe, on
//! loopback, TCP and UDP. Skipped (with the reason printed) only when socat is not installed.

#![allow(clippy::unwrap_used)]
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use weft_probe::rr::{self, Peer, Proto, RrConfig, StopRule};

/// A socat echo service; killed when dropped.
struct Socat {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Socat {
    fn drop(&mut self) {
        // socat forks a child per UDP peer that outlives its parent: end the whole group.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill has no memory effects; -pid names the group socat leads.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `socat -d -d -b 65536 {TCP|UDP}-LISTEN:0,... PIPE` and reads the port it bound from its
/// "listening on" notice. `None` when socat is not installed.
fn socat(proto: Proto) -> Option<Socat> {
    let listen = match proto {
        Proto::Tcp => "TCP-LISTEN:0,bind=127.0.0.1,fork,reuseaddr",
        Proto::Udp => "UDP-LISTEN:0,bind=127.0.0.1,fork,reuseaddr",
    };
    let mut child = match Command::new("socat")
        .args(["-d", "-d", "-b", "65536", listen, "PIPE"])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            weft_testutil::skip(&format!(
                "socat is not available ({e}); apt-get install socat"
            ));
            return None;
        }
    };
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("socat exited before listening")
            .expect("reading socat's stderr");
        if let Some(rest) = line.split("listening on").nth(1) {
            let a = rest
                .split_whitespace()
                .last()
                .expect("address after 'listening on'");
            break a
                .parse::<SocketAddr>()
                .expect("socat printed a socket address");
        }
    };
    // Keep draining socat's notices so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Some(Socat { child, addr })
}

fn cfg(addr: SocketAddr, proto: Proto, sizes: Vec<u32>) -> RrConfig {
    let mut c = RrConfig::new(Peer::Echo(addr), sizes);
    c.proto = proto;
    c.warmup = 10;
    c.stop = StopRule::Count { count: 100 };
    c.timeout = Duration::from_secs(2);
    c
}

#[test]
fn echo_tcp_warm_and_cold_against_socat() {
    let Some(s) = socat(Proto::Tcp) else { return };
    let r = rr::run(&cfg(s.addr, Proto::Tcp, vec![1, 64, 1024, 65536])).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert!(r.sizes.iter().all(|x| x.count == 100 && x.lost == 0));

    assert_eq!(r.to_result_doc().params["peer"], "echo");

    let mut c = cfg(s.addr, Proto::Tcp, vec![64]);
    c.cold = true;
    c.stop = StopRule::Count { count: 30 };
    let r = rr::run(&c).unwrap();
    assert!(!r.failed(), "{}", r.table());
    assert_eq!(r.sizes[0].count, 30);
    assert_eq!(r.sizes[0].connect.as_ref().unwrap().count, 30);
}

#[test]
fn echo_udp_against_socat() {
    let Some(s) = socat(Proto::Udp) else { return };
    // The GIGAswitch sizes.
    let r = rr::run(&cfg(
        s.addr,
        Proto::Udp,
        vec![64, 128, 256, 512, 1024, 8192],
    ))
    .unwrap();
    assert!(!r.failed(), "{}", r.table());
    for x in &r.sizes {
        assert_eq!(x.sent, 100);
        assert_eq!(x.count, 100, "{}", r.table());
        assert_eq!(x.lost, 0);
    }
}
