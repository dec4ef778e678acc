//! Test-only: a capture of simulated TCP, written with [`super::wire`] and [`super::ipv4`] into a
//! pcap file (raw IPv4 link type), must read in tshark as what it is: every checksum good, the
//! SYN's options decoded, SACK blocks decoded, nothing malformed. Skipped when tshark is not
//! installed (`apt-get install tshark`), unless WEFT_TEST_STRICT=1.

use std::io::Write;
use std::process::Command;

use super::harness::{Dir, PipeConfig};
use super::ipv4::{Ipv4Repr, PROTO_TCP};
use super::{Config, Connection, Segment, SeqNum};
use crate::time::{Duration, Instant};

const A: [u8; 4] = [10, 1, 0, 1];
const B: [u8; 4] = [10, 1, 0, 2];
/// pcap link type of raw IPv4/IPv6 packets.
const LINKTYPE_RAW: u32 = 101;

fn record(out: &mut Vec<u8>, t: Instant, seg: &Segment, dir: Dir) {
    let (src, dst) = match dir {
        Dir::AtoB => (A, B),
        Dir::BtoA => (B, A),
    };
    // The simulator carries no bytes: a payload of zeros, whose checksum is exact.
    let tcp_len = seg.header_len() + seg.len as usize;
    let mut pkt = vec![0u8; 20 + tcp_len];
    let ip = Ipv4Repr {
        src,
        dst,
        protocol: PROTO_TCP,
        ttl: 64,
        ident: 0,
        dont_fragment: true,
        payload_len: tcp_len,
    };
    ip.emit(&mut pkt).expect("room");
    seg.emit(&vec![0; seg.len as usize], (src, dst), &mut pkt[20..])
        .expect("room");
    let ns = t.as_nanos();
    for v in [
        (ns / 1_000_000_000) as u32,
        (ns % 1_000_000_000 / 1000) as u32,
        pkt.len() as u32,
        pkt.len() as u32,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&pkt);
}

#[test]
fn tshark_reads_simulated_tcp() {
    if Command::new("tshark").arg("-v").output().is_err() {
        if std::env::var("WEFT_TEST_STRICT").as_deref() == Ok("1") {
            panic!("tshark is not installed (apt-get install tshark)");
        }
        println!("skipped: tshark is not installed (apt-get install tshark)");
        return;
    }
    let cfg = Config {
        mss: 1460,
        ..Config::linux()
    };
    let pipe = || PipeConfig {
        loss: 0.03,
        ..PipeConfig::delay(Duration::from_millis(5))
    };
    let a = Connection::connect(
        cfg.clone(),
        40_000,
        5001,
        SeqNum(0xffff_0000),
        Instant::ZERO,
    );
    let b = Connection::listen(cfg, 5001, SeqNum(77));
    let mut s = super::harness::Sim::new(a, b, pipe(), pipe(), 3);
    let mut written = 0;
    s.run_until(Instant::ZERO + Duration::from_secs(5), |s| {
        if written < 300_000 {
            written += s.a.send(300_000 - written);
        } else if s.a.state().is_synchronized() {
            s.a.close();
        }
        let r = s.b.readable() as usize;
        s.b.recv(r);
        if s.b.is_recv_finished() {
            s.b.close();
        }
    });
    assert_eq!(s.b.stats().bytes_read, 300_000);
    let mut pcap = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65_535, LINKTYPE_RAW] {
        pcap.extend_from_slice(&v.to_le_bytes());
    }
    for (t, dir, seg) in &s.trace {
        record(&mut pcap, *t, seg, *dir);
    }
    // One more copy of the last segment with a bit flipped in its checksum, to show what
    // tshark says of a bad one (and that the good ones are not merely unverified).
    let (t, dir, seg) = s.trace[s.trace.len() - 1];
    record(&mut pcap, t, &seg, dir);
    let n = pcap.len();
    let tcp_checksum = n - (seg.header_len() + seg.len as usize) + 16;
    pcap[tcp_checksum] ^= 0x01;
    let path = std::env::temp_dir().join(format!("weft-tcp-{}.pcap", std::process::id()));
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&pcap))
        .expect("write the capture");
    let out = Command::new("tshark")
        .arg("-r")
        .arg(&path)
        .args([
            "-o",
            "tcp.check_checksum:TRUE",
            "-T",
            "fields",
            "-E",
            "separator=|",
        ])
        .args(["-e", "tcp.flags.syn", "-e", "tcp.options.mss_val"])
        .args([
            "-e",
            "tcp.options.wscale.shift",
            "-e",
            "tcp.options.sack_perm",
        ])
        .args(["-e", "tcp.options.sack_le", "-e", "tcp.checksum.status"])
        .args(["-e", "_ws.malformed"])
        .output()
        .expect("run tshark");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(
        rows.len(),
        s.trace.len() + 1,
        "one packet per segment, and the bad one"
    );
    let (bad, rows) = rows.split_last().expect("rows");
    assert_eq!(bad[5], "0", "the corrupted copy is bad (status 0)");
    // The SYN: MSS 1460, window scale 7, SACK permitted (shown as the option's bytes).
    assert_eq!(&rows[0][..4], &["1", "1460", "7", "0402"]);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(
            r[5],
            "1",
            "packet {}: checksum status {} (1 is good)",
            i + 1,
            r[5]
        );
        assert_eq!(r[6], "", "packet {} malformed", i + 1);
    }
    let with_sack = rows.iter().filter(|r| !r[4].is_empty()).count();
    assert!(with_sack > 0, "SACK blocks decoded");
}
