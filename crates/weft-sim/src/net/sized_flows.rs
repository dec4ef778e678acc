//! The run of a `tput` workload over a transport of sized flows (NDP, DCQCN) on simulated hosts,
//! written once: build the transport's applications, run them, and report the flows' completion
//! times beside the ideal, the senders' retransmissions, NACKs and time-outs, and the fabric's
//! counters. Each transport adds its own counters from the returned run.

use std::path::Path;

use serde_json::{Map, Value, json};
use weft_model::app::traffic::fct_metrics;
use weft_model::calc::fct::PathIdeal;
use weft_model::ndp::{FlowDone, SenderStats};
use weft_model::net::Topology;
use weft_model::scenario::{Scenario, Workload};

use super::run::{NetRun, run_noted};
use super::tput::{DEFAULT_TIME, FlowApps, fabric_metrics};

/// The sending end of one sized flow: its counters.
pub trait FlowSender: 'static {
    /// The flow's retransmissions, NACKs and time-outs.
    fn stats(&self) -> &SenderStats;
}

/// The receiving end of a host's sized flows: the flows it finished.
pub trait FlowReceiver: 'static {
    /// Each finished flow's bytes and instant (ns).
    fn done(&self) -> &[FlowDone];
}

/// Builds a transport's applications for a workload's flows of a size (bytes).
pub type BuildApps = fn(&Scenario, &Topology, &Workload, u64) -> Result<FlowApps, String>;

/// Runs `w`'s sized flows over `transport` (its name in notes) with the applications `build`
/// makes, senders `S` and receivers `R`, into `m`; the run, for the transport's own counters,
/// or `None` (with a note) when there was nothing to run.
#[allow(clippy::too_many_arguments)]
pub fn run_sized_flows<S: FlowSender, R: FlowReceiver>(
    transport: &str,
    build: BuildApps,
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    capture: Option<&Path>,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> Option<NetRun> {
    let Some(size) = w.flow_size.map(|s| s.0) else {
        notes.push(format!(
            "transport = \"{}\" needs sized flows (`flow_size`)",
            transport.to_lowercase()
        ));
        return None;
    };
    let time = w.time.unwrap_or(DEFAULT_TIME);
    let (apps, (pairs, _, _)) = match build(s, topo, w, size) {
        Ok(x) => x,
        Err(e) => {
            notes.push(e);
            return None;
        }
    };
    let r = run_noted(topo, apps, time, capture, notes)?;
    let done: Vec<(u64, u64)> = r
        .hosts
        .apps_of::<R>()
        .flat_map(|(_, a)| a.done().iter().map(|d| (d.bytes, d.at)))
        .collect();
    // The first flow's own path: a permutation's first sender sends to its partner, not to
    // the first host of `to` (itself, in a permutation over every host).
    let ideal = pairs
        .first()
        .and_then(|&(f, t)| PathIdeal::between(s, w, &topo.hosts[f].name, &topo.hosts[t].name))
        .map_or(0.0, |p| p.alone_ns(size));
    m.extend(fct_metrics(&done, ideal));
    let senders: Vec<&SenderStats> = r.hosts.apps_of::<S>().map(|(_, a)| a.stats()).collect();
    let sum = |f: fn(&SenderStats) -> u64| senders.iter().map(|s| f(s)).sum::<u64>();
    m.insert("retransmits".into(), json!(sum(|s| s.retransmitted)));
    m.insert("nacks".into(), json!(sum(|s| s.nacks)));
    m.insert("timeouts".into(), json!(sum(|s| s.timeouts)));
    if done.len() < senders.len() {
        notes.push(format!(
            "{transport}: {} of {} flows completed in {} s",
            done.len(),
            senders.len(),
            time.as_secs_f64()
        ));
    }
    fabric_metrics(&r, m);
    m.insert("seconds".into(), json!(time.as_secs_f64()));
    Some(r)
}
