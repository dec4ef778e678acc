//! The `nfs` workload of a scenario file on the simulated network: the core's NFS client and
//! server ([`weft_model::app::nfs`]) on UDP sockets of the `from` and `to` hosts ([`Hosted`]),
//! each host's CPU charged its calls, packets and bytes, the server's file on its host's `disk`
//! preset (in memory if it has none). Reports what the client measured
//! ([`weft_model::app::nfs::NfsResult::metrics`]) and the server's disk.

use serde_json::{Map, Value, json};
use weft_model::app::nfs::{NfsClient, NfsServer, NfsSpec, V2_TRANSFER};
use weft_model::host::disk::Disk;
use weft_model::net::Topology;
use weft_model::scenario::{Host, Scenario, Workload};
use weft_model::{Duration, Instant};

use super::hosted::Hosted;
use super::hosts::{App, machines, thread_on};
use super::run::{RunOptions, run};

/// Requests of an nfs workload that gives no `count`.
pub const DEFAULT_COUNT: u64 = 256;
/// How long the client waits before sending a request again: Sun's `timeo=11` (1.1 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1100);

/// Runs the `nfs` workload `w` of `s` on `topo`; metrics into `m`, problems into `notes`.
pub fn nfs(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let (Some(f), Some(t), Some(n)) = (w.from.first(), w.to.first(), w.nfs) else {
        return notes.push("an nfs workload needs `from` and `to`".into());
    };
    let index = |name: &String| topo.hosts.iter().position(|h| &h.name == name);
    let (Some(a), Some(b)) = (index(f), index(t)) else {
        return notes.push(format!("nfs: no host {f:?} or {t:?}"));
    };
    let mtu = s
        .path(f, t)
        .and_then(|p| p.iter().map(|l| l.tech.mtu.0).min())
        .map_or(topo.hosts[a].link.mtu, |m| m.min(65_535) as u32);
    let transfer = w.size.map_or(V2_TRANSFER, |x| x.0);
    let count = w.count.unwrap_or(DEFAULT_COUNT);
    let timeout = w.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let spec = NfsSpec {
        op: n.op,
        transfer,
        count,
        biods: n.biods,
        timeout,
        start: Instant::ZERO,
    };
    let disk = s.host(t).and_then(Host::disk_preset).map(Disk::new);
    let machines = machines(s, topo);
    let client = Hosted::udp(NfsClient::new(spec, b), a, mtu)
        .connected_to(b)
        .with_cpu(thread_on(&machines, a));
    let server =
        Hosted::udp(NfsServer::new(transfer, disk), b, mtu).with_cpu(thread_on(&machines, b));
    let apps: Vec<(usize, Box<dyn App>)> = vec![(a, Box::new(client)), (b, Box::new(server))];
    // Long enough for every request to be sent again a few times; the clock jumps over idle
    // time, and once the client is done nothing is left to happen.
    let opts = RunOptions {
        duration: Duration(timeout.as_nanos().saturating_mul(4 * count + 4)),
        ..RunOptions::default()
    };
    let r = match run(topo, apps, opts, |_| {}) {
        Ok(r) => r,
        Err(e) => return notes.push(e.to_string()),
    };
    let Some(c) = r.hosts.app::<Hosted<NfsClient>>(0) else {
        return;
    };
    m.extend(c.app().result().metrics());
    if !weft_model::app::Application::is_done(c.app()) {
        notes.push(format!(
            "nfs {f} -> {t}: {} of {count} requests answered",
            c.app().result().latency_ns.len()
        ));
    }
    if let Some(d) = r
        .hosts
        .app::<Hosted<NfsServer>>(1)
        .and_then(|s| s.app().disk())
    {
        m.insert("server_disk_seeks".into(), json!(d.stats.seeks));
        m.insert(
            "server_disk_busy_ms".into(),
            json!(d.stats.busy.as_nanos() as f64 / 1e6),
        );
    }
}
