use super::*;
use std::net::{TcpListener, TcpStream};

use weft_model::mp::program::{Block, Timing};
use weft_model::mp::{Pattern, Plan};

const WAIT: Waiting = Waiting {
    timeout: Duration::from_secs(5),
    spin: Duration::from_micros(20),
};

/// `plan` run `repeat` times, untimed, as a program of one block.
fn program_of(plan: Plan, repeat: u32) -> Program {
    Program {
        plans: vec![plan],
        blocks: vec![Block {
            plan: 0,
            repeat,
            timing: Timing::Untimed,
            measure: 0,
        }],
        measures: Vec::new(),
    }
}

/// Runs `plan` once on `e` over `buf`.
fn run_plan(e: &mut Engine, plan: &Plan, buf: &mut [u8]) -> Result<(), MpError> {
    e.run_program(program_of(plan.clone(), 1), buf, |_, _| Ok(()))
}

/// A full mesh of `n` loopback connections, one `Vec` of peers per rank.
#[allow(clippy::needless_range_loop)] // each pair fills peers[i][j] and peers[j][i]
fn mesh(n: usize) -> Vec<Vec<Option<Conn>>> {
    let mut peers: Vec<Vec<Option<Conn>>> =
        (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
    for i in 0..n {
        for j in i + 1..n {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (b, _) = l.accept().unwrap();
            peers[i][j] = Some(Conn::new(a).unwrap());
            peers[j][i] = Some(Conn::new(b).unwrap());
        }
    }
    peers
}

/// Runs `plans` three times over a mesh of `n` ranks, each buffer filled by `init` first;
/// returns each rank's buffer and what its engine moved.
fn run_all(
    n: usize,
    plans: impl Fn(usize) -> Plan,
    init: impl Fn(usize, &mut [u8]) + Sync,
) -> Vec<(Vec<u8>, EngineStats)> {
    let plans: Vec<Plan> = (0..n).map(plans).collect();
    let handles: Vec<_> = mesh(n)
        .into_iter()
        .enumerate()
        .map(|(r, peers)| {
            let plan = plans[r].clone();
            let mut buf = vec![0u8; plan.buffer];
            init(r, &mut buf);
            std::thread::spawn(move || {
                let mut e = Engine::direct(r, peers, WAIT).unwrap();
                e.run_program(program_of(plan, ITERATIONS as u32), &mut buf, |_, _| Ok(()))
                    .unwrap();
                e.finish().unwrap();
                (buf, e.stats())
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// How often [`run_all`] runs each plan.
const ITERATIONS: u64 = 3;

#[test]
fn allreduce_over_sockets_sums() {
    for pat in ["allreduce-ring", "allreduce-rd"] {
        let p: Pattern = pat.parse().unwrap();
        let n = 5;
        let size = 300_000 * 8;
        let bufs = run_all(
            n,
            |r| p.plan(r, n, size).unwrap(),
            |r, b| {
                for (i, c) in b[..size].chunks_exact_mut(8).enumerate() {
                    c.copy_from_slice(&((r + i % 7) as f64).to_le_bytes());
                }
            },
        );
        // Three iterations: after the first every rank holds the sum S, then n S, n² S.
        for (b, _) in &bufs {
            for (i, c) in b[..size].chunks_exact(8).enumerate().step_by(9973) {
                let s: f64 = (0..n).map(|r| (r + i % 7) as f64).sum();
                let got = f64::from_le_bytes(c.try_into().unwrap());
                assert_eq!(got, s * (n * n) as f64, "{pat} lane {i}");
            }
        }
    }
}

#[test]
fn every_pattern_and_a_skeleton_run_over_sockets() {
    let n = 4;
    let bt: Pattern = "bt.S".parse().unwrap();
    let lu: Pattern = "lu.S".parse().unwrap();
    let runs = Pattern::ALL
        .iter()
        .map(|p| (*p, 70_000))
        .chain([(bt, 0), (lu, 0)]);
    for (p, size) in runs {
        let plan = |r| p.plan(r, n, size).unwrap();
        let ranks = run_all(n, plan, |_, _| {});
        // Each rank sent every message of its plan, every iteration, and nothing else: a
        // pattern whose ranks stopped early or sent twice fails here, not only one that hangs.
        let mut sent = 0;
        for (r, (_, stats)) in ranks.iter().enumerate() {
            let plan = plan(r);
            assert_eq!(
                (stats.messages_sent, stats.bytes_sent),
                (
                    ITERATIONS * plan.messages_sent() as u64,
                    ITERATIONS * plan.bytes_sent()
                ),
                "{p} rank {r}"
            );
            sent += stats.messages_sent;
        }
        assert!(sent > 0, "{p}: no rank sent anything");
    }
}

#[test]
fn a_closed_peer_fails_the_run_at_once() {
    let mut m = mesh(2);
    let p1 = m.pop().unwrap();
    let p0 = m.pop().unwrap();
    drop(p1);
    let mut e = Engine::direct(0, p0, WAIT).unwrap();
    let plan = Pattern::PingPong.plan(0, 2, 8).unwrap();
    let t = Instant::now();
    let err = run_plan(&mut e, &plan, &mut [0u8; 8]).unwrap_err();
    assert!(matches!(err, MpError::PeerClosed { rank: 1 }), "{err}");
    assert!(t.elapsed() < Duration::from_secs(1));
}

#[test]
fn a_control_frame_where_a_large_message_was_expected_is_read_whole() {
    // Rank 0 waits for 64 KiB from rank 1 and reads the start of it straight into its
    // buffer; rank 1 aborts instead: the abort's text, read into that buffer first, must
    // come back intact.
    let mut m = mesh(2);
    let p1 = m.pop().unwrap();
    let p0 = m.pop().unwrap();
    let reason = "rank 1: out of patience ".repeat(20);
    let text = reason.clone();
    let aborter = std::thread::spawn(move || {
        let mut e = Engine::direct(1, p1, WAIT).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        e.abort(&text);
        std::thread::sleep(Duration::from_millis(200));
    });
    let mut e = Engine::direct(0, p0, WAIT).unwrap();
    let plan = Pattern::Exchange.plan(0, 2, 65536).unwrap();
    let mut buf = vec![0u8; plan.buffer];
    let err = run_plan(&mut e, &plan, &mut buf).unwrap_err();
    aborter.join().unwrap();
    match err {
        MpError::PeerAborted { rank: 1, reason: r } => assert_eq!(r, reason),
        other => panic!("{other}"),
    }
}

#[test]
fn a_length_mismatch_is_refused() {
    let m = mesh(2);
    let hs: Vec<_> = m
        .into_iter()
        .enumerate()
        .map(|(r, peers)| {
            std::thread::spawn(move || {
                let size = if r == 0 { 8 } else { 16 };
                let plan = Pattern::Exchange.plan(r, 2, size).unwrap();
                let mut e = Engine::direct(r, peers, WAIT).unwrap();
                let mut buf = vec![0u8; plan.buffer];
                run_plan(&mut e, &plan, &mut buf)
            })
        })
        .collect();
    let errs: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(
        errs.iter()
            .any(|e| matches!(e, Err(MpError::Mismatch(m)) if m.contains("expected"))),
        "{errs:?}"
    );
}
