//! One rank's run: every pattern at every size, each behind a barrier, with warm-up iterations
//! and timed ones, reporting each iteration's time to a sink (the coordinator).
//!
//! Times follow OSU's benchmarks: ping-pong's latency loop times the round trip (rank 0's
//! samples are halved by the coordinator), its bandwidth loop times `iterations / 10` windows of
//! 64 messages as a whole (`osu_bw`); a collective's iteration is one call, timed at every rank.
//! An NPB skeleton's iteration is one time step.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use weft_model::mp::pattern::{OSU_BW_WINDOW, barrier, pingpong_bandwidth};
use weft_model::mp::{AllReduceAlgo, Pattern, Plan, npb};

use super::engine::Engine;
use super::error::MpError;
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
}

/// Runs every pattern of `spec` on `engine`, handing each sample to `sink`, then a final
/// barrier and the goodbyes.
pub fn run(
    engine: &mut Engine,
    spec: &MpSpec,
    sink: &mut dyn FnMut(RankSample) -> Result<(), MpError>,
) -> Result<(), MpError> {
    let me = engine.rank();
    let n = engine.ranks();
    let sync = barrier(me, n);
    let mut buf: Vec<u8> = Vec::new();
    for pattern in spec.parsed_patterns()? {
        let sizes = if pattern.sized() {
            spec.sizes.clone()
        } else {
            vec![0]
        };
        for size in sizes {
            let what = if pattern.sized() {
                format!("{pattern} at {size} bytes")
            } else {
                pattern.to_string()
            };
            let s =
                one(engine, spec, pattern, size, &sync, &mut buf).map_err(|e| e.during(&what))?;
            sink(s)?;
        }
    }
    engine
        .run_plan(&sync, &mut [])
        .map_err(|e| e.during("the final barrier"))?;
    engine.finish().map_err(|e| e.during("the goodbyes"))
}

fn one(
    engine: &mut Engine,
    spec: &MpSpec,
    pattern: Pattern,
    size: u64,
    sync: &Plan,
    buf: &mut Vec<u8>,
) -> Result<RankSample, MpError> {
    let me = engine.rank();
    let n = engine.ranks();
    let plan = pattern
        .plan(me, n, size as usize)
        .map_err(MpError::Config)?;
    let iterations = match pattern {
        Pattern::Npb(b, c) => spec.npb_steps.unwrap_or(npb::problem(b, c).1),
        _ => spec.iterations_for(size),
    };
    let warmup = spec.warmup.min(iterations);
    if buf.len() < plan.buffer {
        buf.resize(plan.buffer, 0);
    }
    engine.run_plan(sync, &mut [])?;
    for _ in 0..warmup {
        engine.run_plan(&plan, buf)?;
    }
    engine.run_plan(sync, &mut [])?;
    let mut times_ns = Vec::with_capacity(iterations as usize);
    for _ in 0..iterations {
        let t = Instant::now();
        engine.run_plan(&plan, buf)?;
        times_ns.push(t.elapsed().as_nanos() as u64);
    }
    let (mut bw_ns, mut bw_bytes) = (None, None);
    if pattern == Pattern::PingPong {
        let bw = pingpong_bandwidth(me, n, size as usize, OSU_BW_WINDOW);
        if buf.len() < bw.buffer {
            buf.resize(bw.buffer, 0);
        }
        let loops = (iterations / 10).max(2);
        engine.run_plan(sync, &mut [])?;
        for _ in 0..(warmup / 10).max(1) {
            engine.run_plan(&bw, buf)?;
        }
        engine.run_plan(sync, &mut [])?;
        let t = Instant::now();
        for _ in 0..loops {
            engine.run_plan(&bw, buf)?;
        }
        if me == 0 {
            bw_ns = Some(t.elapsed().as_nanos() as u64);
            bw_bytes = Some(size * OSU_BW_WINDOW as u64 * u64::from(loops));
        }
    }
    let algorithm = match pattern {
        Pattern::AllReduce(a) => Some(
            a.unwrap_or(AllReduceAlgo::auto(size as usize))
                .name()
                .to_string(),
        ),
        _ => None,
    };
    Ok(RankSample {
        rank: me as u32,
        pattern: pattern.to_string(),
        algorithm,
        size,
        times_ns,
        bw_ns,
        bw_bytes,
        bytes_per_iter: plan.bytes_sent(),
        messages_per_iter: plan.messages_sent() as u64,
    })
}
