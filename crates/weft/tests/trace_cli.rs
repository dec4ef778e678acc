//! `weft trace` end to end: synthetic captures, partial results, usage errors, captures written
//! by tcpdump and tshark from real loopback traffic (cross-checked against tshark's own reading),
//! two-point latency and flows (live sampling is in trace_live.rs).
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::weft;

fn run(args: &[&str]) -> Output {
    weft().args(args).output().expect("run weft")
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn util_on_a_synthetic_capture_and_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.pcap");
    let fs = f.to_str().unwrap();
    // 1000-byte frames at 40% of 10 Mbit/s: 500 per second, 2 ms apart.
    let o = run(&[
        "trace",
        "synth",
        fs,
        "--size",
        "10MB",
        "--frame",
        "1000",
        "--load",
        "40",
        "--link-rate",
        "10Mbps",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = dir.path().join("r.json");
    let o = run(&[
        "trace",
        "util",
        fs,
        "--link-rate",
        "10Mbps",
        "--bin",
        "1s",
        "--smooth",
        "5s",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = json_of(&o);
    assert_eq!(doc["kind"], "trace.util");
    let s = &doc["summary"];
    let packets = (10_000_000 - 24) / 1016;
    assert_eq!(s["packets"], packets);
    assert_eq!(s["partial"], false);
    // Whole bins are at exactly 40%.
    let samples = doc["samples"].as_array().unwrap();
    assert!(samples.len() >= 19);
    for x in &samples[..samples.len() - 1] {
        assert!((x["util"].as_f64().unwrap() - 0.4).abs() < 1e-12, "{x}");
    }
    assert_eq!(
        std::fs::read_to_string(&out).unwrap().trim(),
        String::from_utf8_lossy(&o.stdout).trim()
    );
    // With Ethernet framing, 1000 + 24 bytes per frame.
    let o = run(&[
        "trace",
        "util",
        fs,
        "--tech",
        "ethernet10",
        "--bin",
        "1s",
        "--json",
    ]);
    let doc = json_of(&o);
    assert_eq!(doc["summary"]["wire_bytes"], packets * 1024);
    assert_eq!(doc["params"]["tech"], "ethernet10");
    // The table mode prints the histogram.
    let o = run(&["trace", "util", fs, "--link-rate", "10Mbps", "--bin", "1s"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("40-50"), "{text}");
    assert!(text.contains("nfs 100.00%"), "{text}");
}

#[test]
fn truncated_capture_reports_offset_and_partial_result() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.pcap");
    let o = run(&[
        "trace",
        "synth",
        f.to_str().unwrap(),
        "--size",
        "100KB",
        "--frame",
        "100",
    ]);
    assert!(o.status.success());
    let mut b = std::fs::read(&f).unwrap();
    b.truncate(24 + 10 * 116 + 7);
    std::fs::write(&f, &b).unwrap();
    let o = run(&[
        "trace",
        "util",
        f.to_str().unwrap(),
        "--link-rate",
        "10Mbps",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("byte {}", 24 + 10 * 116)), "{err}");
    assert!(err.contains("partial"), "{err}");
    let doc = json_of(&o);
    assert_eq!(doc["summary"]["partial"], true);
    assert_eq!(doc["summary"]["packets"], 10);
    assert_eq!(doc["summary"]["error_offset"], 24 + 10 * 116);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&["trace", "util", "x.pcap"]).status.code(), Some(2));
    assert_eq!(
        run(&["trace", "util", "x.pcap", "--tech", "token-ring"])
            .status
            .code(),
        Some(2)
    );
    let o = run(&["trace", "util", "/nonexistent.pcap", "--link-rate", "1Gbps"]);
    assert_eq!(o.status.code(), Some(1));
}

/// Starts a capture tool and waits until it says it is listening.
fn start_capture(mut cmd: Command, ready: &str) -> Child {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn capture");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let ready = ready.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("capture tool: {line}");
            if line.contains(&ready) {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("capture tool did not start");
    // libpcap is attached once it prints; give the socket filter a moment.
    std::thread::sleep(Duration::from_millis(300));
    child
}

fn stop_capture(child: Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait_with_output();
}

/// Waits until the capture file has at least `min` bytes and has stopped growing for a while
/// (tcpdump -U writes each packet as it comes); gives up after 10 s.
fn wait_for_file(f: &Path, min: u64) {
    let t0 = Instant::now();
    let mut last = 0;
    let mut stable_since = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        let len = std::fs::metadata(f).map_or(0, |m| m.len());
        if len != last {
            last = len;
            stable_since = Instant::now();
        } else if len >= min && stable_since.elapsed() > Duration::from_millis(400) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends probes to `probe` until the capture file shows one (the tool is really capturing), then
/// `n` UDP datagrams of increasing size to `rx`, then waits for them to be written; returns the
/// payload sizes sent to `rx`.
fn send_udp(rx: &UdpSocket, probe: &UdpSocket, f: &Path, n: usize) -> Vec<usize> {
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let t0 = Instant::now();
    while std::fs::metadata(f).map_or(0, |m| m.len()) < 100
        && t0.elapsed() < Duration::from_secs(10)
    {
        tx.send_to(b"probe", probe.local_addr().unwrap()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_for_file(f, 100);
    let to = rx.local_addr().unwrap();
    let mut sizes = Vec::new();
    let mut buf = [0u8; 2000];
    for i in 0..n {
        let len = 100 + 17 * i;
        tx.send_to(&vec![i as u8; len], to).unwrap();
        let _ = rx.recv(&mut buf);
        sizes.push(len);
        // Paced: a burst can overrun the capture tool's ring and be dropped by the kernel.
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = std::fs::metadata(f).map_or(0, |m| m.len());
    wait_for_file(f, before);
    sizes
}

/// tshark's own reading of a capture: frame count and byte sum.
fn tshark_totals(f: &Path) -> (u64, u64) {
    let o = Command::new("tshark")
        .args(["-r", f.to_str().unwrap(), "-T", "fields", "-e", "frame.len"])
        .output()
        .unwrap();
    let lens: Vec<u64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    (lens.len() as u64, lens.iter().sum())
}

fn check_capture(f: &Path, sizes: &[usize], port: u16) {
    let fs = f.to_str().unwrap();
    let o = run(&[
        "trace",
        "util",
        fs,
        "--link-rate",
        "1Gbps",
        "--bin",
        "1s",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json_of(&o)["summary"].clone();
    let payload: u64 = sizes.iter().map(|&x| x as u64).sum();
    assert!(
        s["mix"]["udp"]["packets"].as_u64().unwrap() >= sizes.len() as u64,
        "{s}"
    );
    if let Some(why) = weft_testutil::missing_tool("tshark") {
        weft_testutil::skip(&format!("the cross-check against tshark: {why}"));
    } else {
        let (n, bytes) = tshark_totals(f);
        assert_eq!(
            s["packets"], n,
            "weft and tshark disagree on the packet count of {fs}"
        );
        assert_eq!(
            s["bytes"], bytes,
            "weft and tshark disagree on the bytes of {fs}"
        );
    }
    let o = run(&["trace", "flows", fs, "--json"]);
    assert!(o.status.success());
    let doc = json_of(&o);
    let flows = doc["samples"].as_array().unwrap();
    let ours: Vec<&Value> = flows.iter().filter(|x| x["dport"] == port).collect();
    assert_eq!(ours.len(), 1, "{flows:?}");
    let copies = ours[0]["packets"].as_u64().unwrap() / sizes.len() as u64;
    assert!(copies >= 1);
    assert_eq!(ours[0]["packets"], copies * sizes.len() as u64);
    assert_eq!(ours[0]["payload_bytes"], copies * payload);
    assert_eq!(ours[0]["proto"], "udp");
}

#[test]
fn tcpdump_captures_of_loopback_traffic() {
    weft_testutil::skip_if!(weft_testutil::missing_tool("tcpdump"));
    let dir = tempfile::tempdir().unwrap();
    // Nanosecond pcap on lo (Ethernet), and Linux cooked v1 and v2 on "any".
    let variants: [(&str, &[&str]); 3] = [
        ("lo.pcap", &["-i", "lo", "--time-stamp-precision", "nano"]),
        ("sll.pcap", &["-i", "any", "-y", "LINUX_SLL"]),
        ("sll2.pcap", &["-i", "any", "-y", "LINUX_SLL2"]),
    ];
    for (name, opts) in variants {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = rx.local_addr().unwrap().port();
        let pport = probe.local_addr().unwrap().port();
        let f: PathBuf = dir.path().join(name);
        let mut cmd = Command::new("tcpdump");
        // Immediate mode: without it packets wait in the ring buffer for up to a second.
        cmd.args(opts).args([
            "--immediate-mode",
            "-B",
            "8192",
            "-U",
            "-w",
            f.to_str().unwrap(),
            &format!("udp port {port} or udp port {pport}"),
        ]);
        let child = start_capture(cmd, "listening on");
        let sizes = send_udp(&rx, &probe, &f, 30);
        stop_capture(child);
        check_capture(&f, &sizes, port);
    }
}

#[test]
fn tshark_pcapng_capture_of_loopback_traffic_plain_and_gzipped() {
    weft_testutil::skip_if!(weft_testutil::missing_tool("tshark"));
    let dir = tempfile::tempdir().unwrap();
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = rx.local_addr().unwrap().port();
    let pport = probe.local_addr().unwrap().port();
    let f = dir.path().join("t.pcapng");
    let mut cmd = Command::new("tshark");
    cmd.args([
        "-i",
        "lo",
        "-w",
        f.to_str().unwrap(),
        "-f",
        &format!("udp port {port} or udp port {pport}"),
    ]);
    let child = start_capture(cmd, "Capturing on");
    let sizes = send_udp(&rx, &probe, &f, 25);
    stop_capture(child);
    assert_eq!(&std::fs::read(&f).unwrap()[..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
    check_capture(&f, &sizes, port);
    // The same file gzipped gives the same figures.
    let gz = dir.path().join("t.pcapng.gz");
    let st = Command::new("gzip")
        .args(["-c", f.to_str().unwrap()])
        .output()
        .unwrap();
    std::fs::write(&gz, st.stdout).unwrap();
    let a = json_of(&run(&[
        "trace",
        "util",
        f.to_str().unwrap(),
        "--link-rate",
        "1Gbps",
        "--json",
    ]));
    let b = json_of(&run(&[
        "trace",
        "util",
        gz.to_str().unwrap(),
        "--link-rate",
        "1Gbps",
        "--json",
    ]));
    assert_eq!(a["summary"]["packets"], b["summary"]["packets"]);
    assert_eq!(a["summary"]["mean_util"], b["summary"]["mean_util"]);
    assert_eq!(b["params"]["gzip"], true);
}

/// Writes a pcap of (ns, frame) records with nanosecond timestamps.
fn write_pcap(path: &Path, recs: &[(u64, Vec<u8>)]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w =
        weft_trace::synth::PcapWriter::new(std::io::BufWriter::new(f), 1, true, false).unwrap();
    for (t, fr) in recs {
        w.write(*t, fr.len() as u32, fr).unwrap();
    }
    use std::io::Write;
    w.into_inner().flush().unwrap();
}

fn echo_frame(request: bool, id: u16, size: usize) -> Vec<u8> {
    use std::net::Ipv4Addr;
    use weft_trace::synth::{L4, ethernet_frame, ipv4_packet};
    let (c, s) = (Ipv4Addr::new(10, 1, 0, 1), Ipv4Addr::new(10, 1, 0, 2));
    let ip = if request {
        ipv4_packet(c, s, id, L4::Udp(40_001, 7), &vec![0x42; size])
    } else {
        ipv4_packet(s, c, id, L4::Udp(7, 40_001), &vec![0x42; size])
    };
    ethernet_frame(&ip)
}

#[test]
fn latency_of_two_captures_per_size_with_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"));
    // Forward 30 µs, return 30 µs (20 µs more for 1024 bytes), server 500 µs, client 200 µs;
    // B's clock is 1 ms behind A's.
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    let mut t = 5_000_000_000u64;
    let mut id = 1;
    for &size in &[64usize, 1024] {
        for _ in 0..10 {
            let sw = if size == 1024 { 50_000 } else { 30_000 };
            ra.push((t, echo_frame(true, id, size)));
            rb.push((t + sw - 1_000_000, echo_frame(true, id, size)));
            rb.push((
                t + sw + 500_000 - 1_000_000,
                echo_frame(false, 30_000 + id, size),
            ));
            ra.push((t + 2 * sw + 500_000, echo_frame(false, 30_000 + id, size)));
            t += 2 * sw + 500_000 + 200_000;
            id += 1;
        }
    }
    write_pcap(&a, &ra);
    write_pcap(&b, &rb);
    let o = run(&[
        "trace",
        "latency",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--port",
        "7",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = json_of(&o);
    assert_eq!(doc["kind"], "trace.latency");
    let s = &doc["summary"];
    assert_eq!(s["matched"], 20);
    assert_eq!(s["clock_offset_ns"], -1_000_000);
    let rows = s["per_size"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["size"], 64);
    assert_eq!(rows[0]["server"]["median_ns"], 500_000.0);
    assert_eq!(rows[0]["client"]["median_ns"], 200_000.0);
    assert_eq!(rows[0]["switch_fwd"]["median_ns"], 30_000.0);
    assert_eq!(rows[1]["switch_rtt"]["median_ns"], 100_000.0);
    assert_eq!(rows[1]["switch_rtt_echo"]["median_ns"], 100_000.0);
    assert_eq!(doc["samples"].as_array().unwrap().len(), 20);
    assert_eq!(s["one_point"], false);
    // The table names the parts.
    let o = run(&["trace", "latency", a.to_str().unwrap(), b.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("clock offset B-A -1000.000 us"), "{text}");
}

#[test]
fn latency_of_one_point_captured_twice_says_the_split_is_meaningless() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.pcap");
    // One capture given as both A and B: the same instants at both "points" (as two
    // captures of one interface are), so any switch time printed would be noise around 0.
    let mut recs = Vec::new();
    let mut t = 5_000_000_000u64;
    for id in 1..=10u16 {
        recs.push((t, echo_frame(true, id, 64)));
        recs.push((
            t + 300_000 + u64::from(id) * 1_000,
            echo_frame(false, 30_000 + id, 64),
        ));
        t += 1_000_000;
    }
    write_pcap(&a, &recs);
    let a = a.to_str().unwrap();
    let o = run(&["trace", "latency", a, a, "--port", "7"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("taken at one point") && text.contains("split is meaningless"),
        "{text}"
    );
    assert!(!text.contains("A-B sw"), "no switch column: {text}");
    let o = run(&["trace", "latency", a, a, "--port", "7", "--json"]);
    assert_eq!(json_of(&o)["summary"]["one_point"], true);
}

#[test]
fn flows_as_csv_and_sorted_json() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.pcap");
    let mut recs = Vec::new();
    for k in 0..6u64 {
        recs.push((
            1_000_000_000 + k * 1_000_000,
            echo_frame(true, k as u16, 100),
        ));
    }
    recs.push((2_000_000_000, echo_frame(false, 99, 1400)));
    write_pcap(&f, &recs);
    let o = run(&["trace", "flows", f.to_str().unwrap(), "--csv", "-"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("proto,src,sport,dst,dport,packets,bytes"));
    assert!(
        lines[1].starts_with("udp,10.1.0.1,40001,10.1.0.2,7,7,"),
        "{}",
        lines[1]
    );
    let o = run(&[
        "trace",
        "flows",
        f.to_str().unwrap(),
        "--sort",
        "duration",
        "--json",
    ]);
    let doc = json_of(&o);
    assert_eq!(doc["kind"], "trace.flows");
    assert_eq!(doc["samples"][0]["duration_ns"], 1_000_000_000);
    assert_eq!(doc["samples"][0]["packets_rev"], 1);
    let o = run(&["trace", "flows", f.to_str().unwrap(), "--sort", "size"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn latency_of_real_udp_echo_captured_twice_by_tcpdump() {
    weft_testutil::skip_if!(weft_testutil::missing_tool("tcpdump"));
    let dir = tempfile::tempdir().unwrap();
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let pport = probe.local_addr().unwrap().port();
    let filter = format!("udp port {port} or udp port {pport}");
    let (a, b) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"));
    // Two taps: lo (Ethernet) and "any" (Linux cooked v2), both seeing the same packets.
    let mut ca = Command::new("tcpdump");
    ca.args([
        "-i",
        "lo",
        "--immediate-mode",
        "-B",
        "8192",
        "-U",
        "-w",
        a.to_str().unwrap(),
        &filter,
    ]);
    let mut cb = Command::new("tcpdump");
    cb.args([
        "-i",
        "any",
        "-y",
        "LINUX_SLL2",
        "--immediate-mode",
        "-B",
        "8192",
        "-U",
        "-w",
        b.to_str().unwrap(),
        &filter,
    ]);
    let ta = start_capture(ca, "listening on");
    let tb = start_capture(cb, "listening on");
    let _ = send_udp(&probe, &probe, &a, 0);
    wait_for_file(&b, 100);
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 2000];
        for _ in 0..20 {
            let (n, from) = server.recv_from(&mut buf).unwrap();
            server.send_to(&buf[..n], from).unwrap();
        }
    });
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 2000];
    for (i, size) in [64usize, 512]
        .iter()
        .flat_map(|&s| std::iter::repeat_n(s, 10))
        .enumerate()
    {
        client
            .send_to(&vec![i as u8; size], ("127.0.0.1", port))
            .unwrap();
        client.recv(&mut buf).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    echo.join().unwrap();
    let len_a = std::fs::metadata(&a).unwrap().len();
    wait_for_file(&a, len_a);
    wait_for_file(&b, 0);
    stop_capture(ta);
    stop_capture(tb);
    let o = run(&[
        "trace",
        "latency",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--port",
        &port.to_string(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json_of(&o)["summary"].clone();
    assert_eq!(s["matched"], 20, "{s}");
    assert_eq!(s["unmatched_a"], 0, "{s}");
    let rows = s["per_size"].as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["size"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![64, 512]
    );
    // Both taps are the same kernel: the offset is tiny, and the server's time is positive.
    assert!(
        s["clock_offset_ns"].as_i64().unwrap().abs() < 1_000_000,
        "{s}"
    );
    for r in rows {
        assert_eq!(r["server"]["n"], 10);
        assert!(r["server"]["min_ns"].as_i64().unwrap() > 0, "{r}");
        assert!(
            r["rtt_client_tap"]["min_ns"].as_i64().unwrap()
                >= r["server"]["min_ns"].as_i64().unwrap() - 1_000_000
        );
    }
}

#[test]
fn util_reads_a_capture_streamed_through_a_pipe() {
    let mut synth = weft()
        .args([
            "trace",
            "synth",
            "-",
            "--size",
            "20MB",
            "--frame",
            "500",
            "--load",
            "25",
            "--link-rate",
            "100Mbps",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let o = weft()
        .args([
            "trace",
            "util",
            "-",
            "--link-rate",
            "100Mbps",
            "--bin",
            "1s",
            "--json",
            "--no-samples",
        ])
        .stdin(synth.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(synth.wait().unwrap().success());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json_of(&o)["summary"].clone();
    assert_eq!(s["packets"], (20_000_000 - 24) / 516);
    assert!(
        (s["peak_util"].as_f64().unwrap() - 0.25).abs() < 1e-9,
        "{s}"
    );
}

#[test]
fn util_per_pcapng_interface_and_csv_series() {
    use weft_trace::synth::PcapngWriter;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("two.pcapng");
    let mut w = PcapngWriter::new(Vec::new(), false).unwrap();
    let i0 = w.add_interface(1, 9).unwrap();
    let i1 = w.add_interface(1, 6).unwrap();
    // Interface 0: 1250-byte frames, 100 per second (1 Mbit/s); interface 1: 300 per second.
    for k in 0..1000u64 {
        let t = 10_000_000_000 + k * 10_000_000;
        w.write_epb(i0, t, 1250, &echo_frame(true, k as u16, 1208))
            .unwrap();
        for j in 0..3 {
            w.write_epb(
                i1,
                t + j * 1_000_000,
                1250,
                &echo_frame(false, k as u16, 1208),
            )
            .unwrap();
        }
    }
    std::fs::write(&f, w.into_inner()).unwrap();
    let csv = dir.path().join("series.csv");
    for (iface, util) in [("0", 0.1), ("1", 0.3)] {
        let o = run(&[
            "trace",
            "util",
            f.to_str().unwrap(),
            "--link-rate",
            "10Mbps",
            "--bin",
            "1s",
            "--iface",
            iface,
            "--json",
            "--csv",
            csv.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let s = json_of(&o)["summary"].clone();
        assert!(
            (s["mean_util"].as_f64().unwrap() - util).abs() < 1e-12,
            "iface {iface}: {s}"
        );
        let text = std::fs::read_to_string(&csv).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows[0], "t_s,util,util_smooth,wire_bytes,packets");
        assert_eq!(rows.len(), 11);
        assert!(rows[1].starts_with(&format!("10,{util},")), "{}", rows[1]);
    }
}
