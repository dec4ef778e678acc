//! NFS (`kind = "nfs"`): a client reading or writing a file through a server over UDP RPC, as
//! NFS version 2 does (RFC 1094), and the server that answers.
//!
//! Each READ or WRITE moves one `transfer` of the file (NFS version 2's 8 KB; version 3 allows
//! 32 or 64 KB) in one datagram (the network fragments it). The client keeps at most `biods`
//! requests outstanding, as the client's block-I/O daemons (SunOS's `biod`, Solaris 2's async
//! threads) read ahead and write behind; with one, each request waits for the answer to the
//! last. A request not answered within `timeout` is sent again with the same transaction id
//! (RPC's `xid`), which every request carries in its first bytes ([`Tag`]) and its answer
//! carries back.
//!
//! The server answers a READ once the transfer is in memory and a WRITE once it is on the
//! platter: version 2's server puts the data and the file's attributes on stable storage before
//! it answers ([`Disk::write_sync`]). Its host's CPU (the calls, the copies, the packets) is the
//! driver's to charge, as for every application; the disk is the server's own.
//!
//! [`NfsResult`] turns what the client measured into the metrics every engine reports, under
//! the keys of [`keys`].

use std::collections::{BTreeMap, VecDeque};

use serde_json::{Map, Value, json};

use super::{Application, Input, Output, PeerId, Tag};
use crate::host::disk::Disk;
use crate::time::{Duration, Instant};

/// Bytes of an NFS version 2 call beyond its data: the RPC call header with AUTH_UNIX
/// credentials (about 100 bytes, RFC 1057) and the arguments (a 32-byte file handle, offsets
/// and counts: RFC 1094's `readargs` and `writeargs`).
pub const CALL_HEADER: u64 = 144;
/// Bytes of an answer beyond its data: the RPC reply header (24), the status and the file's
/// attributes (`fattr`, 68 bytes) and, for a READ, the data's length (RFC 1094).
pub const REPLY_HEADER: u64 = 100;
/// NFS version 2's largest READ or WRITE, bytes (RFC 1094's `MAXDATA`).
pub const V2_TRANSFER: u64 = 8192;
/// Bytes of the transaction id every request and answer carry first (the simulator carries 4).
pub const XID_BYTES: usize = 4;
/// The file the server reads and writes, as its disk knows it.
const FILE: u32 = 0x4e46;

/// Read or write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NfsOp {
    /// READ: a small call, the transfer in the answer.
    Read,
    /// WRITE: the transfer in the call, a small answer once the data are on the platter.
    #[default]
    Write,
}

impl NfsOp {
    /// Bytes of the call and of its answer for a transfer of `transfer` bytes.
    pub fn sizes(self, transfer: u64) -> (u64, u64) {
        match self {
            NfsOp::Read => (CALL_HEADER, REPLY_HEADER + transfer),
            NfsOp::Write => (CALL_HEADER + transfer, REPLY_HEADER),
        }
    }
}

/// What the client does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NfsSpec {
    /// Read or write.
    pub op: NfsOp,
    /// Bytes of the file each request moves.
    pub transfer: u64,
    /// Requests to make (the file is `count * transfer` bytes).
    pub count: u64,
    /// Requests outstanding at most (the client's biods; at least 1).
    pub biods: u32,
    /// How long the client waits for an answer before it sends the request again.
    pub timeout: Duration,
    /// The first request is not sent before this instant.
    pub start: Instant,
}

/// The metric keys of NFS results.
pub mod keys {
    /// Bytes of the file moved per second from the first call to the last answer, Mbit/s (the
    /// workload's default metric: the studies' wall-clock throughput).
    pub const NFS_MBPS: &str = "nfs_mbps";
    /// Mean time from a request's first sending to its answer, ms.
    pub const NFS_REQUEST_MS: &str = "nfs_request_ms";
    /// Requests sent again for want of an answer.
    pub const NFS_RETRANSMITS: &str = "nfs_retransmits";
    /// Requests answered.
    pub const NFS_ANSWERED: &str = "nfs_answered";
}

/// What the client measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NfsResult {
    /// Bytes of the file moved (answered transfers).
    pub bytes: u64,
    /// The first call sent and the last answer received.
    pub span: Option<(Instant, Instant)>,
    /// Each answered request's time from its first sending to its answer, ns.
    pub latency_ns: Vec<u64>,
    /// Requests sent again.
    pub retransmits: u64,
}

impl NfsResult {
    /// The file's bytes per second over the span, Mbit/s (`None` before an answer).
    pub fn mbps(&self) -> Option<f64> {
        let (a, b) = self.span?;
        let ns = b.saturating_duration_since(a).as_nanos();
        (ns > 0).then(|| self.bytes as f64 * 8.0 * 1e3 / ns as f64)
    }

    /// The metrics under [`keys`].
    pub fn metrics(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(mbps) = self.mbps() {
            m.insert(keys::NFS_MBPS.into(), json!(mbps));
        }
        let n = self.latency_ns.len();
        if n > 0 {
            let mean = self.latency_ns.iter().sum::<u64>() as f64 / n as f64;
            m.insert(keys::NFS_REQUEST_MS.into(), json!(mean / 1e6));
        }
        m.insert(keys::NFS_RETRANSMITS.into(), json!(self.retransmits));
        m.insert(keys::NFS_ANSWERED.into(), json!(n));
        m
    }
}

/// A request the client waits on: when it was first sent and when it is sent again.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    first: Instant,
    deadline: Instant,
}

/// The client: reads or writes the file a transfer at a time, `biods` at once, from its
/// server, datagram peer `server`.
#[derive(Clone, Debug)]
pub struct NfsClient {
    spec: NfsSpec,
    server: PeerId,
    /// The next request's number (its xid and its place in the file).
    next: u64,
    outstanding: BTreeMap<u64, Outstanding>,
    out: VecDeque<Output>,
    result: NfsResult,
}

impl NfsClient {
    /// A client doing `spec` against datagram peer `server`.
    pub fn new(spec: NfsSpec, server: PeerId) -> Self {
        NfsClient {
            spec: NfsSpec {
                biods: spec.biods.max(1),
                ..spec
            },
            server,
            next: 0,
            outstanding: BTreeMap::new(),
            out: VecDeque::new(),
            result: NfsResult::default(),
        }
    }

    /// What it measured so far.
    pub fn result(&self) -> &NfsResult {
        &self.result
    }

    fn send(&mut self, xid: u64) {
        let (call, _) = self.spec.op.sizes(self.spec.transfer);
        self.out.push_back(Output::Send {
            peer: self.server,
            len: call,
            tag: Some(Tag::new(xid, XID_BYTES)),
        });
    }

    /// Sends new requests while fewer than `biods` are outstanding.
    fn fill(&mut self, now: Instant) {
        while self.outstanding.len() < self.spec.biods as usize && self.next < self.spec.count {
            let xid = self.next;
            self.next += 1;
            self.outstanding.insert(
                xid,
                Outstanding {
                    first: now,
                    deadline: now + self.spec.timeout,
                },
            );
            if self.result.span.is_none() {
                self.result.span = Some((now, now));
            }
            self.send(xid);
        }
    }
}

impl Application for NfsClient {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        let Input::Datagram { peer, .. } = input else {
            return;
        };
        let Some(tag) = input.tag(XID_BYTES) else {
            return;
        };
        if peer != self.server {
            return;
        }
        // The answer to an outstanding request (a late answer to one answered already, or to
        // a retransmission of it, is dropped, as RPC drops a reply it no longer waits for).
        let Some(xid) = self.outstanding.keys().copied().find(|&x| tag.carries(x)) else {
            return;
        };
        if let Some(o) = self.outstanding.remove(&xid) {
            self.result.bytes += self.spec.transfer;
            self.result.latency_ns.push((now - o.first).as_nanos());
            if let Some(span) = &mut self.result.span {
                span.1 = now;
            }
        }
        self.fill(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.next == 0 && now >= self.spec.start {
            self.fill(now);
            return;
        }
        let late: Vec<u64> = self
            .outstanding
            .iter()
            .filter(|(_, o)| o.deadline <= now)
            .map(|(&x, _)| x)
            .collect();
        for xid in late {
            if let Some(o) = self.outstanding.get_mut(&xid) {
                o.deadline = now + self.spec.timeout;
            }
            self.result.retransmits += 1;
            self.send(xid);
        }
    }

    fn poll_output(&mut self, _now: Instant) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.next == 0 && self.spec.count > 0 {
            return Some(self.spec.start);
        }
        self.outstanding.values().map(|o| o.deadline).min()
    }

    fn is_done(&self) -> bool {
        self.next == self.spec.count && self.outstanding.is_empty()
    }
}

/// An answer waiting for its data: when it may leave, to whom, its size and xid.
#[derive(Clone, Copy, Debug)]
struct Pending {
    at: Instant,
    peer: PeerId,
    len: u64,
    xid: Tag,
}

/// The server: answers READs of `transfer` bytes and WRITEs of any size, from and to its disk
/// if it has one (else from memory, at once).
#[derive(Clone, Debug)]
pub struct NfsServer {
    transfer: u64,
    disk: Option<Disk>,
    pending: Vec<Pending>,
    answered: u64,
}

impl NfsServer {
    /// A server of a file on `disk` (`None`: in memory) for READs of `transfer` bytes.
    pub fn new(transfer: u64, disk: Option<Disk>) -> Self {
        NfsServer {
            transfer,
            disk,
            pending: Vec::new(),
            answered: 0,
        }
    }

    /// Requests answered.
    pub fn answered(&self) -> u64 {
        self.answered
    }

    /// The disk, for its counters.
    pub fn disk(&self) -> Option<&Disk> {
        self.disk.as_ref()
    }
}

impl Application for NfsServer {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        let Input::Datagram { peer, len, .. } = input else {
            return;
        };
        let Some(xid) = input.tag(XID_BYTES) else {
            return;
        };
        // A call longer than its header carries a WRITE's data; the request's number places it
        // in the file.
        let (op, bytes) = match len.checked_sub(CALL_HEADER) {
            Some(b) if b > 0 => (NfsOp::Write, b),
            _ => (NfsOp::Read, self.transfer),
        };
        let offset = xid.value * bytes;
        let at = match (&mut self.disk, op) {
            (None, _) => now,
            (Some(d), NfsOp::Write) => d.write_sync(now, FILE, offset, bytes),
            (Some(d), NfsOp::Read) => d.read(now, FILE, offset, bytes),
        };
        let (_, answer) = op.sizes(bytes);
        self.pending.push(Pending {
            at,
            peer,
            len: answer,
            xid,
        });
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self, now: Instant) -> Option<Output> {
        let k = (0..self.pending.len())
            .filter(|&k| self.pending[k].at <= now)
            .min_by_key(|&k| self.pending[k].at)?;
        let p = self.pending.remove(k);
        self.answered += 1;
        Some(Output::Send {
            peer: p.peer,
            len: p.len,
            tag: Some(p.xid),
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.pending.iter().map(|p| p.at).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{Link, Pair};
    use crate::host::disk::DiskSpec;
    use crate::units::Rate;

    fn spec(op: NfsOp, biods: u32) -> NfsSpec {
        NfsSpec {
            op,
            transfer: 8192,
            count: 20,
            biods,
            timeout: Duration::from_secs(1),
            start: Instant::ZERO,
        }
    }

    /// 8 KiB in 1 ms (65.536 Mbit/s), 10 ms positioning, no cache.
    fn disk(metadata: Duration) -> Disk {
        Disk::new(DiskSpec {
            sync_metadata: metadata,
            ..DiskSpec::plain("t", Rate(65_536_000), Duration::from_millis(10))
        })
    }

    fn run(op: NfsOp, biods: u32, server: NfsServer, link: Link) -> NfsClient {
        let mut p = Pair::datagrams(NfsClient::new(spec(op, biods), 1), server, link);
        p.run(Instant(Duration::from_secs(60).as_nanos()));
        assert!(p.client.is_done());
        p.client
    }

    fn ms(d: u64) -> Link {
        Link {
            delay: Duration::from_millis(d),
            lose_every: 0,
        }
    }

    /// One request at a time: each costs a round trip, so 8 KiB every 2 ms of a 1 ms link.
    #[test]
    fn one_biod_waits_a_round_trip_per_transfer() {
        let c = run(NfsOp::Read, 1, NfsServer::new(8192, None), ms(1));
        let r = c.result();
        assert_eq!(r.bytes, 20 * 8192);
        assert!(r.latency_ns.iter().all(|&l| l == 2_000_000));
        // The last answer 20 round trips after the first call.
        assert_eq!(r.span, Some((Instant::ZERO, Instant(40_000_000))));
        assert!((r.mbps().unwrap() - 20.0 * 65_536.0 / 40e-3 / 1e6).abs() < 1e-9);
    }

    /// Four outstanding requests on the same link move four transfers per round trip.
    #[test]
    fn biods_pipeline_the_requests() {
        let one = run(NfsOp::Read, 1, NfsServer::new(8192, None), ms(1));
        let four = run(NfsOp::Read, 4, NfsServer::new(8192, None), ms(1));
        assert_eq!(four.result().span.unwrap().1, Instant(10_000_000));
        assert!((four.result().mbps().unwrap() / one.result().mbps().unwrap() - 4.0).abs() < 1e-9);
    }

    /// A WRITE is answered once its data are on the platter: sequential writes without the
    /// file's metadata stream at the media rate after one positioning; with it, each write
    /// positions again and waits for the metadata. The biods then queue on the disk.
    #[test]
    fn writes_wait_for_the_platter_and_its_metadata() {
        let link = ms(0);
        let plain = run(
            NfsOp::Write,
            4,
            NfsServer::new(8192, Some(disk(Duration::ZERO))),
            link,
        );
        // 10 ms positioning, then 20 transfers of 1 ms each.
        assert_eq!(plain.result().span.unwrap().1, Instant(30_000_000));
        let meta = Duration::from_millis(5);
        let synced = run(
            NfsOp::Write,
            4,
            NfsServer::new(8192, Some(disk(meta))),
            link,
        );
        // Each write: 10 ms positioning, 1 ms of data, 5 ms of metadata.
        assert_eq!(synced.result().span.unwrap().1, Instant(20 * 16_000_000));
    }

    /// A lost call or answer is sent again after the time-out with the same xid, and the
    /// transfer completes.
    #[test]
    fn lost_requests_are_sent_again() {
        let link = Link {
            delay: Duration::from_millis(1),
            lose_every: 7,
        };
        let c = run(NfsOp::Write, 2, NfsServer::new(8192, None), link);
        assert_eq!(c.result().bytes, 20 * 8192);
        assert!(c.result().retransmits > 0);
    }

    #[test]
    fn metrics_have_their_keys() {
        let c = run(NfsOp::Read, 1, NfsServer::new(8192, None), ms(1));
        let m = c.result().metrics();
        assert_eq!(m[keys::NFS_REQUEST_MS], 2.0);
        assert_eq!(m[keys::NFS_ANSWERED], 20);
        assert_eq!(m[keys::NFS_RETRANSMITS], 0);
        assert!(m.contains_key(keys::NFS_MBPS));
    }
}
