//! The agents (`weft serve`, `weft recv`) as an unfriendly neighbour finds them: hundreds of
//! connections that never say hello, clients without the key, more clients than test slots.
//! Real processes on loopback; each check is what a user would see.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Agent, Recv, weft};

/// Connections that are held open and never send a byte.
const IDLE: usize = 300;

/// File descriptors `pid` has open now.
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Waits (at most 10 s) until `pid` has `want` descriptors open again; returns how many it has.
fn settle_fds(pid: u32, want: usize) -> usize {
    let t = Instant::now();
    loop {
        let n = fds(pid);
        if n == want || t.elapsed() > Duration::from_secs(10) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (at most 10 s) until `pid` has at most `max` descriptors open (the threads of closed
/// connections let theirs go when they next run); returns how many it has.
fn settle_at_most(pid: u32, max: usize) -> usize {
    let t = Instant::now();
    loop {
        let n = fds(pid);
        if n <= max || t.elapsed() > Duration::from_secs(10) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Opens `n` connections to `port` that send nothing (some may be closed by the agent at once:
/// the client side still holds them).
fn idle_connections(port: u16, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The descriptors of an agent once it has settled after start-up.
fn baseline(pid: u32) -> usize {
    std::thread::sleep(Duration::from_millis(200));
    fds(pid)
}

#[test]
fn serve_runs_a_test_while_300_idle_connections_are_held_and_gives_their_descriptors_back() {
    let agent = Agent::start(&["-q"]);
    let pid = agent.child.id();
    let before = baseline(pid);
    let idle = idle_connections(agent.port, IDLE);
    // Bounded by the lobby: at most 64 waiting from one address (each with a duplicate held by
    // the lobby), not 300.
    let during = settle_at_most(pid, before + 2 * 64 + 8);
    assert!(
        during <= before + 2 * 64 + 8,
        "{before} -> {during} descriptors"
    );
    let t = Instant::now();
    let out = weft()
        .args([
            "tput",
            &format!("127.0.0.1:{}", agent.port),
            "-t",
            "2s",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["summary"]["goodput_bps"].as_f64().unwrap_or(0.0) > 0.0,
        "{doc}"
    );
    // The test ran while the idle connections were still within their hello time-out, or
    // were being replaced by newer ones: they did not stop it.
    assert!(t.elapsed() < Duration::from_secs(15));
    drop(idle);
    assert_eq!(
        settle_fds(pid, before),
        before,
        "descriptors did not come back"
    );
}

#[test]
fn recv_takes_a_file_while_300_idle_connections_are_held_and_gives_their_descriptors_back() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..5_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let f = src.path().join("five.bin");
    std::fs::write(&f, &data).unwrap();
    let recv = Recv::start(dst.path(), &[]);
    let pid = recv.child.id();
    let before = baseline(pid);
    let idle = idle_connections(recv.port, IDLE);
    let during = settle_at_most(pid, before + 2 * 64 + 8);
    assert!(
        during <= before + 2 * 64 + 8,
        "{before} -> {during} descriptors"
    );
    let out = weft()
        .arg("send")
        .arg(&f)
        .args([
            "127.0.0.1",
            "--port",
            &recv.port.to_string(),
            "--no-progress",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stderr(&out), recv.log());
    assert!(std::fs::read(dst.path().join("five.bin")).unwrap() == data);
    drop(idle);
    assert_eq!(
        settle_fds(pid, before),
        before,
        "descriptors did not come back"
    );
    // The idle ones were not sessions: nothing reported them as failed.
    assert!(!recv.log().contains("session failed"), "{}", recv.log());
}

fn write_key(dir: &Path, name: &str, secret: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, secret).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn short_keys_are_refused_and_key_files_others_can_read_are_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let short = write_key(dir.path(), "short", "fifteen bytes!!\n");
    for args in [
        &["serve", "--key-file", &short][..],
        &["serve", "--key", "x"],
        &["recv", "--dir", ".", "--key", "fifteen bytes!!"],
        &["tput", "127.0.0.1:9", "--key-file", &short],
    ] {
        let out = weft().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("at least 16"), "{}", stderr(&out));
    }
    let key = write_key(dir.path(), "key", "sixteen bytes or more\n");
    let quiet = tput(9, &["--key-file", &key]);
    assert!(!stderr(&quiet).contains("warning"), "{}", stderr(&quiet));
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = tput(9, &["--key-file", &key]);
    assert!(
        stderr(&out).contains("warning: key file") && stderr(&out).contains("chmod 600"),
        "{}",
        stderr(&out)
    );
}

fn tput(port: u16, extra: &[&str]) -> Output {
    weft()
        .args(["tput", &format!("127.0.0.1:{port}"), "-n", "1M"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_keyed_agent_serves_only_clients_that_prove_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = write_key(dir.path(), "key", "lab secret of the team\n");
    let wrong = write_key(dir.path(), "wrong", "a wrong guess of the key");
    let agent = Agent::start(&["--key-file", &key]);
    // Without a key, with the wrong key: refused, saying why.
    for extra in [&[][..], &["--key-file", &wrong][..]] {
        let out = tput(agent.port, extra);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("authentication failed"),
            "{}",
            stderr(&out)
        );
    }
    // With it: served, by tput and by rr.
    let out = tput(agent.port, &["--key-file", &key]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = weft()
        .args(["rr", &format!("127.0.0.1:{}", agent.port), "--count", "50"])
        .args(["--key-file", &key])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // A keyless agent tells a client with a key what is wrong.
    let open = Agent::start(&[]);
    let out = tput(open.port, &["--key-file", &key]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("has no key"), "{}", stderr(&out));
    // --key works as --key-file does.
    let by_value = Agent::start(&["--key", "lab secret of the team"]);
    assert!(tput(by_value.port, &["--key-file", &key]).status.success());
}

#[test]
fn a_relayed_pattern_authenticates_at_both_agents() {
    let dir = tempfile::tempdir().unwrap();
    let key = write_key(dir.path(), "key", "shared by the agents");
    let other = write_key(dir.path(), "other", "not shared with anyone");
    // A relays toward loopback agents: open (protected mode would refuse).
    let a = Agent::start(&["--key-file", &key, "--open"]);
    let b = Agent::start(&["--key-file", &key]);
    let c = Agent::start(&["--key-file", &other]);
    let pair = |from: &Agent, to: &Agent, key: &str| {
        weft()
            .args(["pattern", "--pairs"])
            .arg(format!("127.0.0.1:{}:127.0.0.1:{}", from.port, to.port))
            .args(["-t", "300ms", "--key-file", key])
            .output()
            .unwrap()
    };
    let out = pair(&a, &b, &key);
    assert!(out.status.success(), "{}", stderr(&out));
    // A proves its key to C, whose key differs: the relayed test fails, saying why.
    let out = pair(&a, &c, &key);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &stderr(&out);
    assert!(text.contains("authentication failed"), "{text}");
    // The client's own key must be A's.
    let out = pair(&a, &b, &other);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &stderr(&out);
    assert!(text.contains("authentication failed"), "{text}");
}

#[test]
fn twelve_clients_against_eight_test_slots_eight_served_four_told_busy() {
    let agent = Agent::start(&["--max-tests", "8", "-q"]);
    let clients: Vec<Child> = (0..12)
        .map(|_| {
            weft()
                .args(["tput", &format!("127.0.0.1:{}", agent.port), "-t", "4s"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = clients
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let served = outs.iter().filter(|o| o.status.success()).count();
    let busy = outs
        .iter()
        .filter(|o| !o.status.success() && stderr(o).contains("busy"))
        .count();
    let all: Vec<String> = outs.iter().map(stderr).collect();
    assert_eq!((served, busy), (8, 4), "{all:#?}");
}

#[test]
fn a_sender_is_bounded_in_the_files_it_holds_open_and_the_hashes_kept_for_it() {
    use weft_xfer::net::client_handshake;
    use weft_xfer::net::ctl::CtlConn;
    use weft_xfer::wire::{Control, Mode, RefuseCode};
    let dst = tempfile::tempdir().unwrap();
    let recv = Recv::start(dst.path(), &["--max-open-files", "2"]);
    let mut conn = CtlConn::new(TcpStream::connect(("127.0.0.1", recv.port)).unwrap()).unwrap();
    client_handshake(&mut conn, Mode::Reliable, 1, None).unwrap();
    // Without a key the receiver's Welcome comes after the handshake.
    assert!(matches!(conn.recv_wait(5000), Ok(Control::Welcome { .. })));
    // Offers files and never sends them: the third waits for one of the first two to end.
    for file in 0..3u32 {
        conn.queue(&Control::FileOffer {
            file,
            size: 1000,
            buffer_size: 1000,
            packet_size: 1000,
            resume: false,
            hash: [0; 32],
            name: format!("f{file}"),
        });
        conn.flush_all(2000).unwrap();
        match (file, conn.recv_wait(5000).unwrap()) {
            (0 | 1, Control::FileAccept { .. }) => {}
            (2, Control::FileReject { code, msg, .. }) => {
                assert_eq!(code, RefuseCode::TooLarge);
                assert!(msg.contains("--max-open-files"), "{msg}");
            }
            (f, m) => panic!("file {f}: {m:?}"),
        }
    }
    drop(conn);
    // With --discard, a file whose buffer hashes were not all kept cannot be verified: it
    // fails, saying which bound to raise.
    let sink = tempfile::tempdir().unwrap();
    let recv = Recv::start(sink.path(), &["--discard", "--max-known-hashes", "2"]);
    let out = weft()
        .args([
            "send",
            "--mem",
            "64KiB",
            "--buffer-size",
            "4KiB",
            "127.0.0.1",
        ])
        .args(["--port", &recv.port.to_string(), "--no-progress"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &stderr(&out);
    assert!(text.contains("--max-known-hashes"), "{text}");
}

#[test]
fn a_broken_control_connection_is_reported_once() {
    use std::os::fd::AsRawFd;
    // A "server" that resets every connection as soon as it has accepted it.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let resetter = std::thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            let lin = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: a valid socket and a linger struct of the size given.
            unsafe {
                libc::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&lin as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
            std::thread::sleep(Duration::from_millis(100));
            drop(s);
        }
    });
    let out = tput(port, &[]);
    resetter.join().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("reset by peer").count(), 1, "{err}");
    // Nobody listening at all.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let err = stderr(&tput(port, &[]));
    assert_eq!(err.matches("Connection refused").count(), 1, "{err}");
}

/// The machine's own non-loopback address (the source of its default route), if it has one.
fn own_address() -> Option<std::net::IpAddr> {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").and_then(|()| s.local_addr()))
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
}

#[test]
fn a_keyless_receiver_serves_only_its_own_host_unless_open() {
    use std::io::{BufRead, BufReader};
    let Some(own) = own_address() else {
        weft_testutil::skip("this machine has no address but loopback");
        return;
    };
    let dst = tempfile::tempdir().unwrap();
    for (open, served) in [(&[][..], false), (&["--open"][..], true)] {
        let mut child = weft()
            .args(["recv", "--listen", "0.0.0.0:0", "--dir"])
            .arg(dst.path())
            .args(open)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let port = first
            .split("0.0.0.0:")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .unwrap()
            .to_string();
        if !served {
            let second = lines.next().unwrap().unwrap();
            assert!(second.contains("protected mode"), "{second}");
        }
        let out = weft()
            .args(["send", "--mem", "64KiB", &own.to_string(), "--port", &port])
            .arg("--no-progress")
            .output()
            .unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(out.status.success(), served, "{open:?}: {}", stderr(&out));
        if !served {
            assert!(stderr(&out).contains("protected mode"), "{}", stderr(&out));
        }
    }
}

#[test]
fn all_sessions_together_are_bounded_in_memory_and_stale_part_files_are_removed() {
    let dst = tempfile::tempdir().unwrap();
    // A part file and journal nobody resumed for 8 days, and a fresh one.
    let old = dst.path().join(".abandoned.bin.weft-part");
    let old_journal = dst.path().join(".abandoned.bin.weft-journal");
    let fresh = dst.path().join(".recent.bin.weft-part");
    for p in [&old, &old_journal, &fresh] {
        std::fs::write(p, b"x").unwrap();
    }
    let week_ago = std::time::SystemTime::now() - Duration::from_secs(8 * 24 * 3600);
    for p in [&old, &old_journal] {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(week_ago)
            .unwrap();
    }
    let recv = Recv::start(dst.path(), &["--max-total-memory", "3MiB"]);
    // The default window of 1 MiB buffers does not fit in 3 MiB for all sessions.
    let out = weft()
        .args([
            "send",
            "--mem",
            "2MiB",
            "127.0.0.1",
            "--port",
            &recv.port.to_string(),
        ])
        .args(["--buffer-size", "1MiB", "--no-progress"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--max-total-memory"),
        "{}",
        stderr(&out)
    );
    // Two buffers in flight fit.
    let out = weft()
        .args([
            "send",
            "--mem",
            "2MiB",
            "127.0.0.1",
            "--port",
            &recv.port.to_string(),
        ])
        .args(["--buffer-size", "1MiB", "--window", "2", "--no-progress"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stderr(&out), recv.log());
    assert!(!old.exists() && !old_journal.exists(), "{}", recv.log());
    assert!(fresh.exists());
    assert!(recv.log().contains("--part-max-age"), "{}", recv.log());
}

/// Connections from `n` loopback addresses (127.1.x.y) round robin, so that the lobby's cap per
/// source alone does not turn them away; non-blocking, never a byte sent.
fn connections_from_many_sources(port: u16, n: usize, from: usize) -> Vec<socket2::Socket> {
    use socket2::{Domain, Socket, Type};
    (from..from + n)
        .filter_map(|i| {
            let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            s.set_nonblocking(true).unwrap();
            let src: std::net::SocketAddr = format!("127.1.0.{}:0", 1 + i % 50).parse().unwrap();
            s.bind(&src.into()).ok()?;
            let dst: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let _ = s.connect(&dst.into()); // EINPROGRESS: the kernel completes it
            Some(s)
        })
        .collect()
}

/// VmRSS of `pid`, in kB.
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// One round of the flood of `bench/flood.sh` at a size for CI: 2,000 idle connections from 50
/// addresses, then 600 more over 3 s from a thread that stops by itself, while a real client's
/// `weft tput -t 1` runs. Checks that the test succeeds, that the agent's descriptors stay
/// bounded by its lobby and test slots, and that they all come back.
fn flood_round(agent: &Agent, before: usize) {
    let (pid, port) = (agent.child.id(), agent.port);
    let idle = connections_from_many_sources(port, 2000, 0);
    assert!(idle.len() >= 1900, "only {} connections opened", idle.len());
    let flood = std::thread::spawn(move || {
        let t = Instant::now();
        let mut churn = std::collections::VecDeque::new();
        let mut i = 2000;
        while t.elapsed() < Duration::from_secs(3) {
            churn.extend(connections_from_many_sources(port, 20, i));
            i += 20;
            while churn.len() > 200 {
                churn.pop_front();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        i - 2000
    });
    std::thread::sleep(Duration::from_millis(300));
    let out = weft()
        .args(["tput", &format!("127.0.0.1:{port}"), "-t", "1s", "--json"])
        .output()
        .unwrap();
    let flooded = flood.join().unwrap();
    // The lobby holds at most 256 waiting (each with a duplicate), the test a few more; the
    // threads of evicted connections close theirs when they next run, so give them that time
    // (the idle connections are still held).
    let during = settle_at_most(pid, before + 2 * 256 + 16);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["summary"]["goodput_bps"].as_f64().unwrap_or(0.0) > 0.0,
        "{doc}"
    );
    assert!(
        flooded >= 500,
        "the flood opened only {flooded} connections"
    );
    assert!(
        during <= before + 2 * 256 + 16,
        "{before} -> {during} descriptors during the flood"
    );
    drop(idle);
    assert_eq!(
        settle_fds(pid, before),
        before,
        "descriptors did not come back"
    );
}

/// Agents under a flood (issue 30), at CI size: a test runs through it, descriptors come back,
/// and memory does too. The first round leaves what the allocator keeps for reuse; two more
/// rounds of the same 2,600 connections each must leave less than 4 MB more in all, so a leak of
/// 800 bytes a connection fails it (measured: 1.5 MB more, which is not explained yet). The agent runs with one malloc arena (MALLOC_ARENA_MAX=1):
/// otherwise glibc makes a new arena for threads that meet contention, up to 8 per CPU, and how
/// many it makes (and keeps) depends on the machine's load, not on the agent.
#[test]
fn serve_runs_a_test_through_a_connection_flood_and_gives_everything_back() {
    let agent = Agent::start_with(&["-q"], &[("MALLOC_ARENA_MAX", "1")]);
    let pid = agent.child.id();
    let before = baseline(pid);
    flood_round(&agent, before);
    let rss_first = rss_kb(pid);
    flood_round(&agent, before);
    flood_round(&agent, before);
    let rss_third = rss_kb(pid);
    eprintln!("agent RSS after one flood {rss_first} kB, after three {rss_third} kB");
    assert!(
        rss_third <= rss_first + 4096,
        "RSS after one flood {rss_first} kB, after three {rss_third} kB"
    );
}
