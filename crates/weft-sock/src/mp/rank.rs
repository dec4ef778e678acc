//! One rank's run: the blocks of its [`Program`] (every pattern at every size, each behind a
//! barrier, with warm-up iterations and timed ones), walked and timed by the core's rank on the
//! socket driver ([`Engine::run_program`]), each measurement's sample handed to a sink (the
//! coordinator) as it ends.
//!
//! Times follow OSU's benchmarks: ping-pong's latency loop times the round trip (rank 0's
//! samples are halved by the coordinator), its bandwidth loop times `iterations / 10` windows of
//! 64 messages as a whole (`osu_bw`); a collective's iteration is one call, timed at every rank.
//! An NPB skeleton's iteration is one time step.
//!
//! Beside the times, a rank reports where its timed iterations went (the time in its send and
//! receive calls and its reductions, and its thread's CPU time), and after a ping-pong the two
//! ranks that took part time their reduction kernel at that size on its own ([`super::kernel`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use weft_model::mp::program::{Measure, Program, Timing};
use weft_model::mp::{AllReduceAlgo, Pattern};

use weft_sys::cpu::CpuTime as ThreadCpu;

use super::engine::{Engine, EngineStats};
use super::error::MpError;
use super::kernel;
use super::msg::RankStats;
use super::pvmd::DaemonHandle;
use super::spec::MpSpec;

/// What one rank measured for one pattern at one size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankSample {
    /// The rank.
    pub rank: u32,
    /// The pattern as requested (`allreduce`, `bt.S`).
    pub pattern: String,
    /// For an all-reduce, the algorithm that ran (`ring`, `rd`).
    #[serde(default)]
    pub algorithm: Option<String>,
    /// Message size, bytes (0 for barrier and NPB skeletons).
    pub size: u64,
    /// Time of each timed iteration, ns (the round trip for ping-pong).
    pub times_ns: Vec<u64>,
    /// Ping-pong at rank 0: time of the whole bandwidth loop, ns.
    #[serde(default)]
    pub bw_ns: Option<u64>,
    /// Ping-pong at rank 0: payload bytes of the bandwidth loop.
    #[serde(default)]
    pub bw_bytes: Option<u64>,
    /// Payload bytes this rank sends per iteration.
    pub bytes_per_iter: u64,
    /// Messages this rank sends per iteration.
    pub messages_per_iter: u64,
    /// Time this rank spent in the calls that sent its timed iterations' messages, ns
    /// ([`super::engine::EngineStats::send_ns`]; 0 where not measured, as on the simulator).
    #[serde(default)]
    pub send_ns: u64,
    /// Time this rank spent in the calls that received them, ns.
    #[serde(default)]
    pub recv_ns: u64,
    /// Time this rank spent in its timed iterations' reductions, ns.
    #[serde(default)]
    pub reduce_ns: u64,
    /// CPU time (user and system) of this rank's thread over its timed iterations, ns.
    #[serde(default)]
    pub cpu_ns: u64,
    /// Ping-pong, at the two ranks that take part: the median time of this rank's reduction
    /// kernel over `size` bytes, timed on its own after the measurement ([`super::kernel`]).
    #[serde(default)]
    pub kernel_ns: Option<u64>,
}

/// Runs `engine`'s rank to its end ([`run`]): on a failure its peers are told why; then the
/// engine is closed, the rank's daemon (if it has one) waited for, and their counts returned.
/// The one ending of a rank, for `weft mp`'s agents and the in-process ranks alike.
pub fn run_to_end(
    mut engine: Engine,
    spec: &MpSpec,
    daemon: Option<DaemonHandle>,
    sink: &mut dyn FnMut(RankSample) -> Result<(), MpError>,
) -> Result<RankStats, MpError> {
    let result = run(&mut engine, spec, sink);
    if let Err(e) = &result {
        engine.abort(&format!("rank {}: {e}", engine.rank()));
    }
    let es = engine.stats();
    drop(engine);
    let ds = daemon.map(|h| h.wait(Duration::from_secs(3)));
    result?;
    let daemon = match ds {
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => return Err(e.during("the daemon")),
        None => None,
    };
    Ok(RankStats {
        messages_sent: es.messages_sent,
        bytes_sent: es.bytes_sent,
        unexpected: es.unexpected,
        daemon,
    })
}

/// Runs every pattern of `spec` on `engine` (the blocks of [`Program`], walked by the core's
/// rank, [`Engine::run_program`]), handing each sample to `sink` as its measurement ends, then
/// a final barrier and the goodbyes. A failure names the block it happened in.
pub fn run(
    engine: &mut Engine,
    spec: &MpSpec,
    sink: &mut dyn FnMut(RankSample) -> Result<(), MpError>,
) -> Result<(), MpError> {
    let me = engine.rank();
    let prog = program(spec, me, engine.ranks())?;
    let mut buf = vec![0u8; prog.buffer()];
    let mut used = EngineStats::default();
    let mut cpu_ns = 0;
    let mut before = engine.stats();
    let mut cpu = ThreadCpu::thread();
    // The sink's own failure, told apart from the run's (which is named by its block).
    let mut sunk: Result<(), MpError> = Ok(());
    let ran = engine.run_program(prog, &mut buf, |e, i| {
        let prog = e.state().program();
        let b = prog.blocks[i];
        if b.timing == Timing::Each {
            let after = e.stats();
            used.send_ns += after.send_ns - before.send_ns;
            used.recv_ns += after.recv_ns - before.recv_ns;
            used.reduce_ns += after.reduce_ns - before.reduce_ns;
            cpu_ns += ThreadCpu::thread().since(cpu).total_ns();
        }
        if prog.ends_measure(i) {
            let m = &prog.measures[b.measure];
            let times = e.state().times();
            let mut s = sample(
                me,
                m,
                times.each_ns[b.measure].clone(),
                times.whole_ns[b.measure],
            );
            let used = std::mem::take(&mut used);
            (s.send_ns, s.recv_ns, s.reduce_ns) = (used.send_ns, used.recv_ns, used.reduce_ns);
            s.cpu_ns = std::mem::take(&mut cpu_ns);
            if m.pattern == Pattern::PingPong && me < 2 {
                s.kernel_ns = Some(kernel::reduction_ns(m.size));
            }
            if let Err(err) = sink(s) {
                sunk = Err(err);
                return Err(MpError::Interrupted("the sink failed".into()));
            }
        }
        before = e.stats();
        cpu = ThreadCpu::thread();
        Ok(())
    });
    sunk?;
    ran.map_err(|err| {
        let st = engine.state();
        err.during(block_name(st.program(), st.block()))
    })?;
    engine.finish().map_err(|e| e.during("the goodbyes"))
}

/// What block `i` of `prog` runs, for an error: `allreduce at 64 bytes`, `the final barrier`.
fn block_name(prog: &Program, i: usize) -> String {
    let measure = prog.blocks.get(i).map(|b| b.measure);
    match measure.and_then(|k| prog.measures.get(k)) {
        Some(m) if m.pattern.sized() => format!("{} at {} bytes", m.pattern, m.size),
        Some(m) => m.pattern.to_string(),
        None => "the final barrier".to_string(),
    }
}

/// Rank `me` of `ranks`'s program for `spec`.
pub fn program(spec: &MpSpec, me: usize, ranks: usize) -> Result<Program, MpError> {
    let patterns = spec.parsed_patterns()?;
    Program::new(me, ranks, &patterns, &spec.sizes_usize(), spec.counts()).map_err(MpError::Config)
}

/// A rank's sample of measurement `m`: its iterations' times and, for ping-pong at rank 0, the
/// bandwidth loop's time `whole_ns`.
pub fn sample(me: usize, m: &Measure, times_ns: Vec<u64>, whole_ns: Option<u64>) -> RankSample {
    let (bw_ns, bw_bytes) = match (m.bandwidth, me) {
        (Some((_, bytes)), 0) => (whole_ns, Some(bytes)),
        _ => (None, None),
    };
    let algorithm = match m.pattern {
        Pattern::AllReduce(a) => Some(a.unwrap_or(AllReduceAlgo::auto(m.size)).name().to_string()),
        _ => None,
    };
    RankSample {
        rank: me as u32,
        pattern: m.pattern.to_string(),
        algorithm,
        size: m.size as u64,
        times_ns,
        bw_ns,
        bw_bytes,
        bytes_per_iter: m.bytes_per_iter,
        messages_per_iter: m.messages_per_iter,
        send_ns: 0,
        recv_ns: 0,
        reduce_ns: 0,
        cpu_ns: 0,
        kernel_ns: None,
    }
}
