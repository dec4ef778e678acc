//! NFS over UDP RPC in closed form ([`crate::app::nfs`] on the `model` engine): a request's
//! round trip ([`super::rtt::request_response`]: the hosts' calls and bytes, the path's
//! serialisation, propagation and switches) plus the server's disk (a WRITE on the platter with
//! the file's metadata, a READ at the media rate), and with `biods` requests outstanding the
//! pace of the busiest resource: the server's disk, either host's CPU or the slowest link.

use serde::Serialize;

use super::engine::ModelPoint;
use super::rr_point::{host_costs, path_hops};
use super::rtt::{Hop, request_response};
use crate::app::nfs::{NfsOp, keys};
use crate::host::disk::DiskSpec;
use crate::host::{Direction, HostCosts};
use crate::scenario::{Scenario, Workload};
use crate::tech::Transport;
use crate::time::Duration;

/// What sets the pace of the requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NfsLimit {
    /// Each biod's round trip (too few requests outstanding to keep anything busy).
    RoundTrip,
    /// The server's disk.
    ServerDisk,
    /// The server's CPU.
    ServerCpu,
    /// The client's CPU.
    ClientCpu,
    /// The slowest link.
    Wire,
}

/// The estimate for one client and server.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NfsEstimate {
    /// One request's time from its call to its answer, alone.
    pub latency: Duration,
    /// Time between answers in the steady state.
    pub interval: Duration,
    /// What sets the interval.
    pub limit: NfsLimit,
    /// The file's bytes per second, Mbit/s.
    pub mbps: f64,
}

/// The server's disk time for one request of `transfer` bytes in a run of them: a WRITE's
/// data and metadata on the platter (positioning again after the metadata, if there is any), a
/// READ's data at the media rate (sequential, read ahead).
pub fn disk_time(op: NfsOp, transfer: u64, disk: &DiskSpec) -> Duration {
    let media = |rate: crate::units::Rate| rate.time_to_send(crate::units::Size(transfer));
    match op {
        NfsOp::Write if disk.sync_metadata > Duration::ZERO => {
            disk.seek + media(disk.write_rate) + disk.sync_metadata
        }
        NfsOp::Write => media(disk.write_rate),
        NfsOp::Read => media(disk.read_rate),
    }
}

/// NFS `op` of `transfer`-byte requests, `biods` outstanding, from `client` to `server` over
/// `hops`, the server's file on `disk` (`None`: in memory).
pub fn estimate(
    hops: &[Hop],
    op: NfsOp,
    transfer: u64,
    biods: u32,
    client: &HostCosts,
    server: &HostCosts,
    disk: Option<&DiskSpec>,
) -> NfsEstimate {
    let (call, reply) = op.sizes(transfer);
    let udp = Transport::Udp;
    let round_trip = request_response(hops, udp, call, reply, client, server).total;
    let disk = disk.map_or(Duration::ZERO, |d| disk_time(op, transfer, d));
    let latency = round_trip + disk;
    // Datagrams of the path MTU: each host's work per request, and each link's.
    let mtu = hops.iter().map(|h| h.tech.mtu.0).min().unwrap_or(1500);
    let per = mtu.saturating_sub(udp.header_bytes()).max(1);
    let frames = |b: u64| {
        let n = b.div_ceil(per).max(1);
        (0..n).map(move |i| (b - i * per).min(per) + udp.header_bytes())
    };
    let cpu = |h: &HostCosts, recv: u64, sent: u64| {
        h.cost(Direction::Receive, recv, frames(recv).count() as u64, 1)
            + h.cost(Direction::Send, sent, frames(sent).count() as u64, 1)
    };
    let wire = hops
        .iter()
        .map(|h| {
            let one = |b: u64| frames(b).fold(Duration::ZERO, |t, f| t + h.tech.wire_time(f));
            one(call).max(one(reply))
        })
        .max()
        .unwrap_or_default();
    let biods = u64::from(biods.max(1));
    let candidates = [
        (Duration(latency.as_nanos() / biods), NfsLimit::RoundTrip),
        (disk, NfsLimit::ServerDisk),
        (cpu(server, call, reply), NfsLimit::ServerCpu),
        (cpu(client, reply, call), NfsLimit::ClientCpu),
        (wire, NfsLimit::Wire),
    ];
    let (interval, limit) = candidates
        .into_iter()
        .fold(candidates[0], |a, b| if b.0 > a.0 { b } else { a });
    NfsEstimate {
        latency,
        interval,
        limit,
        mbps: transfer as f64 * 8.0 / interval.as_nanos().max(1) as f64 * 1e3,
    }
}

/// Fills `out` with the NFS workload `w` (its client `from`, its server `to`).
pub fn nfs(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(a), Some(b), Some(n)) = (w.from.first(), w.to.first(), w.nfs) else {
        return;
    };
    let Some(path) = s.path(a, b) else {
        out.notes.push(format!("no path from {a:?} to {b:?}"));
        return;
    };
    let hops = path_hops(s, a, &path);
    let disk = s.host(b).and_then(crate::scenario::Host::disk_preset);
    let transfer = w.size.map_or(crate::app::nfs::V2_TRANSFER, |x| x.0);
    let (client, server) = (host_costs(s, a), host_costs(s, b));
    let e = estimate(
        &hops,
        n.op,
        transfer,
        n.biods,
        &client,
        &server,
        disk.as_ref(),
    );
    let m = &mut out.metrics;
    m.insert(keys::NFS_MBPS.into(), e.mbps);
    m.insert(
        keys::NFS_REQUEST_MS.into(),
        e.latency.as_nanos() as f64 / 1e6,
    );
    m.insert(keys::NFS_RETRANSMITS.into(), 0.0);
    out.notes.push(format!(
        "closed form: {:?} of {transfer} bytes, {} biods, limited by the {:?}; hosts {} and {}, \
         disk {}",
        n.op,
        n.biods,
        e.limit,
        client.name,
        server.name,
        disk.map_or("none", |d| d.name)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tech::Tech;
    use crate::units::Rate;

    fn hop(tech: &Tech) -> [Hop<'_>; 1] {
        [Hop::direct(tech)]
    }

    /// One biod pays the round trip and the disk per request; enough biods leave only the
    /// busiest resource, here the disk's positioning, media and metadata.
    #[test]
    fn biods_leave_the_busiest_resource() {
        let eth = Tech::preset("ethernet10").unwrap();
        let free = HostCosts::FREE;
        let d = DiskSpec {
            sync_metadata: Duration::from_millis(5),
            ..DiskSpec::plain("d", Rate(65_536_000), Duration::from_millis(10))
        };
        let one = estimate(&hop(&eth), NfsOp::Write, 8192, 1, &free, &free, Some(&d));
        let rt = request_response(&hop(&eth), Transport::Udp, 8336, 100, &free, &free).total;
        assert_eq!(one.limit, NfsLimit::RoundTrip);
        assert_eq!(one.interval, rt + Duration::from_millis(16));
        let four = estimate(&hop(&eth), NfsOp::Write, 8192, 4, &free, &free, Some(&d));
        assert_eq!(four.limit, NfsLimit::ServerDisk);
        assert_eq!(four.interval, Duration::from_millis(16));
        assert!((four.mbps - 65_536.0 / 16e3).abs() < 1e-9);
        // Without a disk the Ethernet's six frames of 8 KB each request.
        let mem = estimate(&hop(&eth), NfsOp::Write, 8192, 4, &free, &free, None);
        assert_eq!(mem.limit, NfsLimit::Wire);
    }
}
