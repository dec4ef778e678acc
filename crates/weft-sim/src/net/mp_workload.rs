//! Message passing on the simulated network: ranks ([`Rank`]) on hosts of a topology, each
//! walking its program over simulated TCP, run until all have finished; and the `mp` workload
//! of a scenario file on top of it, with the metrics the emulator reports (time per iteration,
//! NPB: communication time per time step and for the benchmark's steps).

use serde_json::{Map, Value, json};
use weft_model::host::HostCpu;
use weft_model::mp::program::{Counts, Program};
use weft_model::mp::{Pattern, Route};
use weft_model::net::Topology;
use weft_model::scenario::{Scenario, Workload};
use weft_model::{Duration, Instant};

use super::hosted::Hosted;
use super::hosts::{App, machines, thread_on};
use super::mp::{MAX_RANKS, Rank, RankTimes, rank_config, rank_on_host};
use super::run::{RunOptions, run};

/// Simulated time after which a run that has not finished is given up.
pub const MAX_TIME: Duration = Duration::from_secs(3600);

/// Timed iterations of a workload that gives none: as the emulator runs it (200 up to 8 KiB,
/// 20 above; NPB: the benchmark's own time steps), a tenth as warm-up.
pub fn default_counts(iterations: Option<u32>) -> Counts {
    Counts {
        iterations: iterations.unwrap_or(200),
        iterations_large: iterations.unwrap_or(20),
        large_above: 8 * 1024,
        warmup: iterations.map_or(10, |i| (i / 10).max(1)),
        npb_steps: iterations,
    }
}

/// A finished simulated run.
#[derive(Clone, Debug)]
pub struct MpRun {
    /// Each rank's program, in rank order.
    pub programs: Vec<Program>,
    /// Each rank's times, in rank order.
    pub times: Vec<RankTimes>,
    /// When the last rank finished.
    pub end: Instant,
    /// The counters of the switches' circuits, when they forward by VPI/VCI.
    pub vc: Option<weft_model::net::VcStats>,
    /// The failed switch's restore by its manager (`[vc] fail`).
    pub vc_restore: Option<weft_model::vc::Restore>,
}

/// Runs `patterns` at `sizes` among ranks on the hosts `hosts` (indices in `topo`, rank 0
/// first) over TCP with segments for a path MTU of `mtu` bytes, on hosts that cost nothing.
pub fn run_ranks(
    topo: &Topology,
    hosts: &[usize],
    patterns: &[Pattern],
    sizes: &[usize],
    counts: Counts,
    mtu: u32,
) -> Result<MpRun, String> {
    run_ranks_on(topo, hosts, &[], patterns, sizes, counts, mtu)
}

/// [`run_ranks`] on hosts with machines: each rank's calls, copies and packets are charged to
/// its host's CPU (`machines[h]`, by host index, as [`machines`] gives them; `None` or absent:
/// the host costs nothing), as a real rank's `write`s and `read`s on its sockets are.
pub fn run_ranks_on(
    topo: &Topology,
    hosts: &[usize],
    machines: &[Option<HostCpu>],
    patterns: &[Pattern],
    sizes: &[usize],
    counts: Counts,
    mtu: u32,
) -> Result<MpRun, String> {
    let n = hosts.len();
    if !(2..=MAX_RANKS).contains(&n) {
        return Err(format!("a run needs 2 to {MAX_RANKS} ranks, not {n}"));
    }
    if hosts.iter().any(|&h| h >= topo.hosts.len()) {
        return Err("a rank's host is not in the topology".into());
    }
    let mut distinct = hosts.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() != n {
        return Err("the simulator runs one rank per host".into());
    }
    let cfg = rank_config(mtu);
    let mut apps: Vec<(usize, Box<dyn App>)> = Vec::new();
    for me in 0..n {
        let prog = Program::new(me, n, patterns, sizes, counts)?;
        let link = topo.hosts[hosts[me]].link.clone();
        let rank =
            rank_on_host(me, hosts, prog, &cfg, link).with_cpu(thread_on(machines, hosts[me]));
        apps.push((hosts[me], Box::new(rank)));
    }
    let opts = RunOptions {
        duration: MAX_TIME,
        ..RunOptions::default()
    };
    let r = run(topo, apps, opts, |_| {}).map_err(|e| e.to_string())?;
    let mut ranks: Vec<&Rank> = r
        .hosts
        .apps_of::<Hosted<Rank>>()
        .map(|(_, a)| a.app())
        .collect();
    ranks.sort_by_key(|a| a.rank());
    let mut end = Instant::ZERO;
    for a in &ranks {
        match a.finished() {
            Some(t) => end = end.max(t),
            None => {
                return Err(format!(
                    "rank {} did not finish within {} s of simulated time",
                    a.rank(),
                    MAX_TIME.as_secs_f64()
                ));
            }
        }
    }
    Ok(MpRun {
        programs: ranks.iter().map(|a| a.program().clone()).collect(),
        times: ranks.iter().map(|a| a.times().clone()).collect(),
        end,
        vc: r.network.vc_stats(),
        vc_restore: r.vc_restore,
    })
}

/// One measurement over all ranks, as `weft mp` defines it: ping-pong is half of rank 0's
/// round trips, anything else every rank's iterations together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Mean, µs.
    pub mean_us: f64,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Payload a rank sends per iteration (mean over ranks) over the mean time; ping-pong: the
    /// bandwidth loop's payload over its time. Mbit/s.
    pub mbps: f64,
    /// Timed iterations per rank.
    pub iterations: u64,
    /// Payload a rank sends per iteration, bytes (mean over ranks).
    pub bytes_per_iter: f64,
}

impl MpRun {
    /// The summary of measurement `k`.
    pub fn summary(&self, k: usize) -> Option<Summary> {
        let m = self.programs.first()?.measures.get(k)?;
        let pingpong = m.pattern == Pattern::PingPong;
        let mut v: Vec<u64> = if pingpong {
            self.times[0].each_ns[k].iter().map(|t| t / 2).collect()
        } else {
            self.times
                .iter()
                .flat_map(|t| t.each_ns[k].iter().copied())
                .collect()
        };
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let q = |p: f64| v[((p * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        let n = self.programs.len() as f64;
        let bytes = self
            .programs
            .iter()
            .map(|p| p.measures[k].bytes_per_iter as f64)
            .sum::<f64>()
            / n;
        let mbps = match (pingpong, m.bandwidth, self.times[0].whole_ns[k]) {
            (true, Some((_, b)), Some(ns)) if ns > 0 => b as f64 * 8.0 / ns as f64 * 1e3,
            (true, ..) => 0.0,
            _ if mean > 0.0 => bytes * 8.0 / mean * 1e3,
            _ => 0.0,
        };
        Some(Summary {
            mean_us: mean / 1e3,
            p50_us: q(0.5) as f64 / 1e3,
            p99_us: q(0.99) as f64 / 1e3,
            mbps,
            iterations: m.iterations.into(),
            bytes_per_iter: bytes,
        })
    }
}

/// Runs an `mp` workload of `s` on `topo`; metrics into `m`, what could not be done into
/// `notes`.
pub fn mp(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let Some(spec) = w.mp.as_ref() else {
        return notes.push("an mp workload needs `ranks` and `pattern`".into());
    };
    if spec.route == Route::Daemon {
        // A scenario's run never gets here: the engine skips the point (scenario::not_on_sim).
        return notes.push("the simulator runs the direct route only".into());
    }
    let index = |name: &String| topo.hosts.iter().position(|h| &h.name == name);
    let Some(hosts) = spec.ranks.iter().map(index).collect::<Option<Vec<usize>>>() else {
        return notes.push("an mp workload names a host that does not exist".into());
    };
    let size = w.size.map_or(0, |z| z.as_bytes() as usize);
    if spec.pattern.sized() && w.size.is_none() {
        return notes.push(format!("{} needs `size`", spec.pattern));
    }
    // The smallest MTU on any path between two ranks.
    let mtu = spec
        .ranks
        .iter()
        .flat_map(|a| spec.ranks.iter().map(move |b| (a, b)))
        .filter(|(a, b)| a != b)
        .filter_map(|(a, b)| s.path(a, b))
        .flat_map(|p| p.into_iter().map(|l| l.tech.mtu.0))
        .min()
        .map_or(1500, |x| x.min(65_535) as u32);
    let iterations = spec.iterations.map(|i| i.min(100_000) as u32);
    let r = match run_ranks_on(
        topo,
        &hosts,
        &machines(s, topo),
        &[spec.pattern],
        &[size],
        default_counts(iterations),
        mtu,
    ) {
        Ok(r) => r,
        Err(e) => return notes.push(e),
    };
    let Some(x) = r.summary(0) else {
        return notes.push("the run produced no sample".into());
    };
    m.insert("mean_us".into(), json!(x.mean_us));
    m.insert("p50_us".into(), json!(x.p50_us));
    m.insert("p99_us".into(), json!(x.p99_us));
    m.insert("mbps".into(), json!(x.mbps));
    m.insert(
        "size".into(),
        json!(if spec.pattern.sized() {
            size as f64
        } else {
            x.bytes_per_iter.round()
        }),
    );
    m.insert("iterations".into(), json!(x.iterations));
    m.insert("route".into(), json!(spec.route.name()));
    if let Pattern::Npb(b, c) = spec.pattern {
        let steps = weft_model::mp::npb::problem(b, c).1;
        m.insert("total_ms".into(), json!(x.mean_us * f64::from(steps) / 1e3));
    }
    m.insert("seconds".into(), json!(r.end.0 as f64 / 1e9));
    if let Some(v) = &r.vc {
        m.insert("vc".into(), json!(v));
    }
    if let Some(x) = &r.vc_restore {
        m.insert(
            "vc_restore_us".into(),
            json!(x.restore_time().as_nanos() as f64 / 1e3),
        );
    }
}
