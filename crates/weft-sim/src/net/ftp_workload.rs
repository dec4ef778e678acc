//! FTP from disk to disk on the simulated network (a `tput` workload with `file`): the core's
//! FTP source and sink ([`weft_model::app::ftp`]) on the TCP flows `tput` runs ([`tcp_flow`]),
//! the source reading the file from its host's `disk` preset and the sink writing it to its own
//! (memory at an end without one), each host's CPU charged its calls, segments and bytes, and
//! a copy more per byte between its file cache and the process
//! ([`weft_model::host::HostCosts::moving_files`], as the model charges it).
//!
//! The file's rate is its bytes over the time from the start to the sink's last write's return,
//! as [`weft_model::calc::ftp`] gives it on the model engine; with several flows, their bytes
//! over the last flow's time.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};
use weft_model::app::bulk::goodput_metrics;
use weft_model::app::ftp::{FtpSink, FtpSource};
use weft_model::host::disk::Disk;
use weft_model::net::Topology;
use weft_model::scenario::{Host, Scenario, Workload};
use weft_model::{Duration, Instant};

use super::hosted::Hosted;
use super::hosts::{App, machines_with};
use super::run::run_noted;
use super::tput::{Ends, flow_pairs, tcp_flow};

/// Simulated time an FTP workload that gives no `time` may take: a 25 MB file at 1 Mbit/s.
pub const DEFAULT_TIME: Duration = Duration::from_secs(300);

/// Runs the FTP workload `w` (its `file`) of `s` on `topo`; metrics into `m`, what could not be
/// done into `notes`.
pub fn ftp(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    seed: u64,
    capture: Option<&Path>,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let Some(file) = w.file else { return };
    let (pairs, _, _) = match flow_pairs(s, topo, w) {
        Ok(x) => x,
        Err(e) => return notes.push(e),
    };
    let disk = |h: usize| {
        s.host(&topo.hosts[h].name)
            .and_then(Host::disk_preset)
            .map(Disk::new)
    };
    // The same paths as the model's: each host pays a copy more per byte, out of or into
    // its file cache.
    let machines = machines_with(s, topo, |c| c.moving_files());
    let mut mtus = HashMap::new();
    let mut apps: Vec<(usize, Box<dyn App>)> = Vec::new();
    for (k, &(f, t)) in pairs.iter().enumerate() {
        let ends = Ends {
            seed,
            k,
            pair: (f, t),
            machines: &machines,
        };
        let source = FtpSource::new(file.0, disk(f));
        let (tx, rx) = tcp_flow(s, topo, w, &ends, &mut mtus, source, FtpSink::new(disk(t)));
        apps.push((f, Box::new(tx)));
        apps.push((t, Box::new(rx)));
    }
    let time = w.time.unwrap_or(DEFAULT_TIME);
    let Some(r) = run_noted(topo, apps, time, capture, notes) else {
        return;
    };
    let sinks: Vec<&FtpSink> = r
        .hosts
        .apps_of::<Hosted<FtpSink>>()
        .map(|(_, h)| h.app())
        .collect();
    let bytes: u64 = sinks.iter().map(|k| k.written()).sum();
    let end = sinks
        .iter()
        .map(|k| k.finished().unwrap_or(Instant(time.as_nanos())))
        .max()
        .unwrap_or(Instant(time.as_nanos()));
    let unfinished = sinks.iter().filter(|k| k.finished().is_none()).count();
    if unfinished > 0 {
        notes.push(format!(
            "ftp: {unfinished} of {} files not all written within {time:?}: the rate is what \
             was written over the run",
            sinks.len()
        ));
    }
    let secs = (end.as_nanos() as f64 / 1e9).max(1e-12);
    m.extend(goodput_metrics(bytes as f64 * 8.0 / secs));
    m.insert("seconds".into(), json!(secs));
    let sources = r.hosts.apps_of::<Hosted<FtpSource>>();
    let read: Vec<&Disk> = sources.filter_map(|(_, h)| h.app().disk()).collect();
    if !read.is_empty() {
        let busy: u64 = read.iter().map(|d| d.stats.busy.as_nanos()).sum();
        m.insert("tx_disk_busy_s".into(), json!(busy as f64 / 1e9));
    }
    let written: Vec<&Disk> = sinks.iter().filter_map(|k| k.disk()).collect();
    if !written.is_empty() {
        let busy: u64 = written.iter().map(|d| d.stats.busy.as_nanos()).sum();
        let wait: u64 = written.iter().map(|d| d.stats.write_wait.as_nanos()).sum();
        m.insert("rx_disk_busy_s".into(), json!(busy as f64 / 1e9));
        m.insert("rx_disk_write_wait_s".into(), json!(wait as f64 / 1e9));
    }
}
