//! End hosts: what sending and receiving cost a host, and a sans-IO CPU that charges it.
//!
//! [`HostCosts`] prices the two paths of a host's network stack (the send path from the
//! application's `write` to the NIC, the receive path from the NIC's interrupt to the
//! application's `read`): a cost per system call, per packet, and per byte (each memory-to-memory
//! copy, the checksum, the rest), plus the NIC, I/O bus and disk rates. [`HostCpu`] is one CPU as
//! a server with a busy-until time: the simulator charges it each send and receive and delays the
//! packet or the application until the work is done. The closed forms built on these costs
//! (the bulk-transfer bound, the request/response round trip) live in
//! [`crate::calc::host`] and [`crate::calc::rtt`].
//!
//! [`disk`] is a host's disk behind its buffer cache (rate, positioning, cache, write-behind).
//!
//! [`presets`] holds the studies' machines, each parameter with the published figure it was
//! fitted to; [`fit`] does the fitting, predicts the other figures and reports the misses.

pub mod disk;
pub mod fit;
pub mod presets;

use crate::time::{Duration, Instant};
use crate::units::Rate;

/// Which path of a host's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the application's write to the NIC.
    Send,
    /// From the NIC's interrupt to the application's read.
    Receive,
}

/// A host's cost of moving data through its network stack. Times in nanoseconds (as `f64`: these
/// are fitted model parameters, not event times), rates in bits per second.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCosts {
    /// A name for output.
    pub name: &'static str,
    /// Per `write`/`send` call, ns: the system call and, for a blocked writer, its wakeup.
    pub send_call_ns: f64,
    /// Per `read`/`recv` call, ns: the system call and the wakeup of a blocked reader.
    pub recv_call_ns: f64,
    /// Protocol and driver work per packet sent (TCP/UDP, IP, driver, DMA set-up), ns.
    pub send_packet_ns: f64,
    /// Per packet received, the interrupt included, ns.
    pub recv_packet_ns: f64,
    /// One memory-to-memory copy, ns per byte.
    pub copy_ns_per_byte: f64,
    /// Copies of each byte on the send path (Solaris 2.3: 3, Solaris 2.4: 1, per Sandia).
    pub send_copies: u32,
    /// Copies of each byte on the receive path.
    pub recv_copies: u32,
    /// The Internet checksum, ns per byte (0 when folded into a copy or done by the NIC).
    pub checksum_ns_per_byte: f64,
    /// Other per-byte work on the send path (what a fit cannot split further), ns per byte.
    pub send_other_ns_per_byte: f64,
    /// Other per-byte work on the receive path, ns per byte.
    pub recv_other_ns_per_byte: f64,
    /// The NIC's limit on frames (DMA, SAR engine), bits/s; `None` for the link's own rate.
    pub nic: Option<Rate>,
    /// The I/O bus's limit on data crossing it, bits/s.
    pub bus: Option<Rate>,
    /// The disk's rate, bits/s, for file-to-file transfers (`None`: memory to memory).
    pub disk: Option<Rate>,
}

impl HostCosts {
    /// A host that costs nothing and limits nothing (the network alone decides).
    pub const FREE: HostCosts = HostCosts {
        name: "free",
        send_call_ns: 0.0,
        recv_call_ns: 0.0,
        send_packet_ns: 0.0,
        recv_packet_ns: 0.0,
        copy_ns_per_byte: 0.0,
        send_copies: 0,
        recv_copies: 0,
        checksum_ns_per_byte: 0.0,
        send_other_ns_per_byte: 0.0,
        recv_other_ns_per_byte: 0.0,
        nic: None,
        bus: None,
        disk: None,
    };

    /// Cost of each byte on `dir`'s path, ns: copies, checksum and the rest.
    pub fn per_byte_ns(&self, dir: Direction) -> f64 {
        let (copies, other) = match dir {
            Direction::Send => (self.send_copies, self.send_other_ns_per_byte),
            Direction::Receive => (self.recv_copies, self.recv_other_ns_per_byte),
        };
        f64::from(copies) * self.copy_ns_per_byte + self.checksum_ns_per_byte + other
    }

    /// Cost of each packet on `dir`'s path, ns.
    pub fn per_packet_ns(&self, dir: Direction) -> f64 {
        match dir {
            Direction::Send => self.send_packet_ns,
            Direction::Receive => self.recv_packet_ns,
        }
    }

    /// Cost of each system call on `dir`'s path, ns.
    pub fn per_call_ns(&self, dir: Direction) -> f64 {
        match dir {
            Direction::Send => self.send_call_ns,
            Direction::Receive => self.recv_call_ns,
        }
    }

    /// CPU time to move `bytes` in `packets` packets and `calls` system calls along `dir`.
    pub fn cost(&self, dir: Direction, bytes: u64, packets: u64, calls: u64) -> Duration {
        let ns = bytes as f64 * self.per_byte_ns(dir)
            + packets as f64 * self.per_packet_ns(dir)
            + calls as f64 * self.per_call_ns(dir);
        Duration::from_secs_f64(ns / 1e9)
    }

    /// The same host with every CPU time multiplied by `factor` (a clock ratio, for another
    /// model of the same processor family); rates unchanged.
    pub fn scaled(&self, factor: f64, name: &'static str) -> HostCosts {
        HostCosts {
            name,
            send_call_ns: self.send_call_ns * factor,
            recv_call_ns: self.recv_call_ns * factor,
            send_packet_ns: self.send_packet_ns * factor,
            recv_packet_ns: self.recv_packet_ns * factor,
            copy_ns_per_byte: self.copy_ns_per_byte * factor,
            checksum_ns_per_byte: self.checksum_ns_per_byte * factor,
            send_other_ns_per_byte: self.send_other_ns_per_byte * factor,
            recv_other_ns_per_byte: self.recv_other_ns_per_byte * factor,
            ..self.clone()
        }
    }
}

/// One CPU that does a host's protocol work in order: a server with a busy-until time. Work
/// asked for at `now` starts when the CPU is free and the caller learns when it ends (the
/// instant to deliver the packet to the NIC, or the data to the application).
///
/// How a simulated host with a [`crate::tcp::Connection`] charges it, so that each cost is paid
/// once and where the stack pays it:
/// - the application writes `n` bytes in one call: `send(now, n, 0, 1)` (the call and the copies
///   into the kernel; the data joins the socket buffer when it returns);
/// - each segment `poll_transmit` gives: `send(now, 0, 1, 0)`, and the NIC gets it when that
///   returns;
/// - each segment from the NIC: `receive(now, 0, 1, 0)`, then `handle_segment` at that instant;
/// - the application reads `n` bytes in one call: `receive(now, n, 0, 1)`.
///
/// The fitted presets fold per-packet work into the per-byte costs (see [`presets`]), so with
/// them the per-packet calls cost nothing and the copies carry it.
#[derive(Clone, Debug)]
pub struct HostCpu {
    costs: HostCosts,
    busy_until: Instant,
    busy: Duration,
}

impl HostCpu {
    /// An idle CPU with `costs`.
    pub fn new(costs: HostCosts) -> Self {
        HostCpu {
            costs,
            busy_until: Instant::ZERO,
            busy: Duration::ZERO,
        }
    }

    /// The costs charged.
    pub fn costs(&self) -> &HostCosts {
        &self.costs
    }

    /// Runs `work` asked for at `now`; returns when it is done.
    pub fn run(&mut self, now: Instant, work: Duration) -> Instant {
        let start = self.busy_until.max(now);
        self.busy_until = start + work;
        self.busy += work;
        self.busy_until
    }

    /// Sends `bytes` in `packets` packets written with `calls` system calls; returns when the
    /// last is ready for the NIC.
    pub fn send(&mut self, now: Instant, bytes: u64, packets: u64, calls: u64) -> Instant {
        let work = self.costs.cost(Direction::Send, bytes, packets, calls);
        self.run(now, work)
    }

    /// Receives `bytes` in `packets` packets read with `calls` system calls; returns when the
    /// application has them.
    pub fn receive(&mut self, now: Instant, bytes: u64, packets: u64, calls: u64) -> Instant {
        let work = self.costs.cost(Direction::Receive, bytes, packets, calls);
        self.run(now, work)
    }

    /// When the CPU is next free.
    pub fn busy_until(&self) -> Instant {
        self.busy_until
    }

    /// Total work done so far.
    pub fn busy_time(&self) -> Duration {
        self.busy
    }

    /// Share of the time from the epoch to `now` the CPU was busy (work queued past `now` not
    /// counted).
    pub fn utilisation(&self, now: Instant) -> f64 {
        if now.as_nanos() == 0 {
            return 0.0;
        }
        let ahead = self.busy_until.saturating_duration_since(now);
        (self.busy.as_nanos().saturating_sub(ahead.as_nanos())) as f64 / now.as_nanos() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostCosts {
        HostCosts {
            name: "t",
            send_call_ns: 1000.0,
            recv_call_ns: 2000.0,
            send_packet_ns: 100.0,
            recv_packet_ns: 300.0,
            copy_ns_per_byte: 10.0,
            send_copies: 3,
            recv_copies: 1,
            checksum_ns_per_byte: 2.0,
            send_other_ns_per_byte: 1.0,
            recv_other_ns_per_byte: 0.0,
            ..HostCosts::FREE
        }
    }

    #[test]
    fn costs_add_per_call_packet_and_byte() {
        let h = host();
        assert_eq!(h.per_byte_ns(Direction::Send), 33.0);
        assert_eq!(h.per_byte_ns(Direction::Receive), 12.0);
        // One 1000-byte write in one packet: 1000 + 100 + 33,000 ns.
        assert_eq!(h.cost(Direction::Send, 1000, 1, 1), Duration(34_100));
        assert_eq!(h.cost(Direction::Receive, 1000, 2, 1), Duration(14_600));
        let slow = h.scaled(1.25, "slow");
        assert_eq!(slow.cost(Direction::Send, 1000, 1, 1), Duration(42_625));
        assert_eq!(slow.send_copies, 3);
    }

    #[test]
    fn the_cpu_serves_work_in_order() {
        let mut cpu = HostCpu::new(host());
        // Two sends asked for at once queue behind each other.
        let a = cpu.send(Instant(0), 1000, 1, 1);
        let b = cpu.send(Instant(0), 1000, 1, 0);
        assert_eq!(a, Instant(34_100));
        assert_eq!(b, Instant(34_100 + 33_100));
        // Work asked for after an idle gap starts at once.
        let c = cpu.receive(Instant(100_000), 0, 1, 0);
        assert_eq!(c, Instant(100_300));
        assert_eq!(cpu.busy_time(), Duration(34_100 + 33_100 + 300));
        assert!((cpu.utilisation(Instant(100_300)) - 67_500.0 / 100_300.0).abs() < 1e-12);
    }
}
