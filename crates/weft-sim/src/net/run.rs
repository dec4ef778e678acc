//! Runs a network with simulated hosts on virtual time: the one event engine
//! ([`weft_model::engine::run`]) over the same [`Network`] the emulator runs.

use std::path::Path;

use serde_json::{Map, Value, json};
use weft_model::engine::{self, RunStats, VirtualClock};
use weft_model::net::{
    Delivery, Network, NetworkError, RingStats, Ringed, Tap, Topology, VcManaged, capture_files,
};
use weft_model::{Duration, Instant};

use super::cbr::Sink;
use super::frame::SimFrame;
use super::hosts::{App, SimHosts};

/// A finished run: the network and hosts as they ended, for their counters.
pub struct NetRun {
    /// The network.
    pub network: Network<SimFrame>,
    /// The hosts and their applications.
    pub hosts: SimHosts,
    /// What the engine did.
    pub stats: RunStats,
    /// `(ns, occupancy)` samples of the queue towards the sampled host.
    pub occupancy: Vec<(u64, u64)>,
    /// Simulated time.
    pub duration: Duration,
    /// A capture file that could not be written completely.
    pub capture_error: Option<String>,
    /// The failed switch's restore by its manager (`[vc] fail`), if it completed in the run.
    pub vc_restore: Option<weft_model::vc::Restore>,
    /// Counters of the topology's rings, in its order.
    pub rings: Vec<RingStats>,
}

/// How to run.
#[derive(Default)]
pub struct RunOptions {
    /// Simulated time.
    pub duration: Duration,
    /// Sample the queue towards this host every this long.
    pub sample: Option<(usize, Duration)>,
    /// Write captures through this tap.
    pub tap: Option<Box<dyn Tap<SimFrame> + Send>>,
}

/// Runs `topo` with `apps` (each on a host, by index) for `opts.duration`; `progress(now)` is
/// called every 2^16 turns.
pub fn run(
    topo: &Topology,
    apps: Vec<(usize, Box<dyn App>)>,
    opts: RunOptions,
    mut progress: impl FnMut(Instant),
) -> Result<NetRun, NetworkError> {
    let mut network = Network::new(topo)?;
    if let Some(tap) = opts.tap {
        network.set_tap(tap);
    }
    // A switch that fails (`[vc] fail`) is cleared and restored by its manager on the way.
    let network = VcManaged::new(network, topo);
    // Hosts on a ring reach their switch port through it.
    let links = topo.hosts.iter().map(|h| h.link.clone()).collect();
    let mut network = Ringed::new(network, &topo.rings, links);
    let mut hosts = SimHosts::new(topo.hosts.len(), apps);
    let end = Instant(opts.duration.as_nanos());
    let mut clock = VirtualClock::until(end);
    let mut occupancy = Vec::new();
    let mut next_sample = 0u64;
    let mut turns = 0u64;
    let sample = opts.sample.filter(|(_, every)| every.as_nanos() > 0);
    let stats = engine::run(&mut network, &mut hosts, &mut clock, |now, net, _| {
        turns += 1;
        if turns & 0xffff == 0 {
            progress(now);
        }
        if let Some((host, every)) = sample {
            while next_sample <= now.0 && next_sample < end.0 {
                occupancy.push((next_sample, net.inner.net.host_queue(host)));
                next_sample += every.as_nanos();
            }
        }
        now < end
    });
    let rings = network.ring_stats();
    let network = network.inner;
    let vc_restore = network.restore().cloned();
    let mut network = network.into_network();
    let capture_error = network.take_tap().and_then(|mut tap| tap.finish().err());
    Ok(NetRun {
        network,
        vc_restore,
        rings,
        hosts,
        stats,
        occupancy,
        duration: opts.duration,
        capture_error,
    })
}

/// Adds a [`Sink`] on each distinct host of `receivers` to `apps`.
pub fn add_sinks(apps: &mut Vec<(usize, Box<dyn App>)>, receivers: &[usize]) {
    let mut hosts = receivers.to_vec();
    hosts.sort_unstable();
    hosts.dedup();
    apps.extend(
        hosts
            .into_iter()
            .map(|h| (h, Box::new(Sink::default()) as Box<dyn App>)),
    );
}

/// A workload's run, as the scenario engine does it: `apps` on `topo` for `time`, one capture
/// file per link under `capture` if given. What goes wrong (the network refused, a capture
/// could not be created or finished) is said in `notes`; `None` if there is no run to report.
pub fn run_noted(
    topo: &Topology,
    apps: Vec<(usize, Box<dyn App>)>,
    time: Duration,
    capture: Option<&Path>,
    notes: &mut Vec<String>,
) -> Option<NetRun> {
    let tap = match capture.map(|dir| capture_files(topo, dir, 0)) {
        None => None,
        Some(Ok(t)) => Some(Box::new(t) as Box<dyn Tap<SimFrame> + Send>),
        Some(Err(e)) => {
            notes.push(format!("capture: {e}"));
            return None;
        }
    };
    let opts = RunOptions {
        duration: time,
        sample: None,
        tap,
    };
    let r = match run(topo, apps, opts, |_| {}) {
        Ok(r) => r,
        Err(e) => {
            notes.push(e.to_string());
            return None;
        }
    };
    if let Some(e) = &r.capture_error {
        notes.push(format!("capture: {e}"));
    }
    Some(r)
}

/// Writes what the switch did with a workload's traffic into its metrics `m`: `per_sender`
/// (each sender's delivery) and `switch` (cells and frames in, dropped, out, corrupt, discarded
/// early).
pub fn insert_delivery(m: &mut Map<String, Value>, d: &Delivery) {
    m.insert("per_sender".into(), json!(d.per_sender));
    m.insert(
        "switch".into(),
        json!({
            "cells_in": d.cells_in, "cells_dropped": d.cells_dropped, "frames_in": d.frames_in,
            "frames_out": d.frames_out, "frames_corrupt": d.frames_corrupt, "frames_epd": d.frames_epd,
        }),
    );
}
