//! End hosts: what sending and receiving cost a host, and the sans-IO machine that charges it.
//!
//! [`HostCosts`] prices the two paths of a host's network stack (the send path from the
//! application's `write` to the NIC, the receive path from the NIC's interrupt to the
//! application's `read`): a cost per system call, per packet (the interrupt included), per byte
//! (each memory-to-memory copy, the checksum, the rest) and per wakeup of a blocked process,
//! plus the number of processors and the NIC, I/O bus and disk rates. [`HostCpu`] is the
//! host's machine as shared resources ([`cpu`]): every application on a host charges the same
//! processors and bus, so a busy server queues its clients and a host that sends and receives
//! at once slows both. The closed forms built on these costs (the bulk-transfer bound, the
//! request/response round trip, a server shared by many clients) live in [`crate::calc::host`],
//! [`crate::calc::rtt`] and [`crate::calc::server`].
//!
//! [`path`] is a message's path through its hosts' software (sockets, PVM's daemons, a vendor's API).
//!
//! [`lane`] is a LAN Emulation client's driver, its cost on top of a host's stack.
//!
//! [`disk`] is a host's disk behind its buffer cache (rate, positioning, cache, write-behind).
//!
//! [`presets`] holds the studies' machines, each parameter with the published figure it was
//! fitted to; [`crate::calc::fit`] does the fitting, predicts the other figures and reports the misses
//! ([`crate::calc::fit_workstations`]: the GIGAswitch study's DECstation, HP, Sparc 10 and
//! RS/6000 echo paths).

pub mod cpu;
pub mod disk;
pub mod lane;
pub mod path;
pub mod presets;

pub use cpu::HostCpu;

use crate::time::Duration;
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
    /// Processors that run the host's work (at least one).
    pub cpus: u32,
    /// Per `write`/`send` call, ns: the system call (and, in presets fitted with
    /// `wakeup_ns` = 0, the wakeup of a blocked writer).
    pub send_call_ns: f64,
    /// Per `read`/`recv` call, ns: the system call (and, with `wakeup_ns` = 0, the wakeup).
    pub recv_call_ns: f64,
    /// Waking a process blocked in a call when its data (or room) arrives on an idle host, ns:
    /// the way back from the idle loop, the scheduler and the switch to the process. Paid by a
    /// call only if its process was blocked and no processor had other work, not by one that
    /// finds its data waiting.
    pub wakeup_ns: f64,
    /// The switch to a blocked process made runnable while the host is busy with others, ns
    /// (lmbench's context switch, `lat_ctx`): what a host running many processes pays per
    /// wakeup instead of [`HostCosts::wakeup_ns`].
    pub switch_ns: f64,
    /// A daemon's `select` before each request it reads, ns: the UDP echo of the echo tests
    /// is inetd's own service, answered from inetd's one loop over all its sockets, which asks
    /// `select` which socket is ready, then reads it and writes the echo (a client blocked in
    /// `recvfrom` makes no such call). Charged to the server of a UDP request/response
    /// exchange on top of [`HostCosts::recv_call_ns`], busy or not.
    pub select_ns: f64,
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
        cpus: 1,
        send_call_ns: 0.0,
        recv_call_ns: 0.0,
        wakeup_ns: 0.0,
        switch_ns: 0.0,
        select_ns: 0.0,
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

    /// Waking a blocked process on an idle host ([`HostCosts::wakeup_ns`]).
    pub fn wakeup(&self) -> Duration {
        Duration::from_secs_f64(self.wakeup_ns / 1e9)
    }

    /// A daemon's `select` before a request ([`HostCosts::select_ns`]).
    pub fn select(&self) -> Duration {
        Duration::from_secs_f64(self.select_ns / 1e9)
    }

    /// The same host moving a file between its buffer cache and a stream (FTP's `read` from
    /// the file and `write` to the socket, or `read` from the socket and `write` to the file):
    /// each path pays one more copy per byte ([`HostCosts::copy_ns_per_byte`]), the sender's
    /// out of its file cache, the receiver's into its own. Both engines charge a file transfer
    /// with these costs.
    pub fn moving_files(&self) -> HostCosts {
        HostCosts {
            send_other_ns_per_byte: self.send_other_ns_per_byte + self.copy_ns_per_byte,
            recv_other_ns_per_byte: self.recv_other_ns_per_byte + self.copy_ns_per_byte,
            ..self.clone()
        }
    }

    /// The same host with every CPU time multiplied by `factor` (a clock ratio, for another
    /// model of the same processor family); rates unchanged.
    pub fn scaled(&self, factor: f64, name: &'static str) -> HostCosts {
        HostCosts {
            name,
            send_call_ns: self.send_call_ns * factor,
            recv_call_ns: self.recv_call_ns * factor,
            wakeup_ns: self.wakeup_ns * factor,
            switch_ns: self.switch_ns * factor,
            select_ns: self.select_ns * factor,
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn host() -> HostCosts {
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
        // Moving a file: a copy more on each path (10 ns a byte), nothing else.
        let f = h.moving_files();
        assert_eq!(f.per_byte_ns(Direction::Send), 43.0);
        assert_eq!(f.per_byte_ns(Direction::Receive), 22.0);
        assert_eq!(
            f.cost(Direction::Send, 0, 1, 1),
            h.cost(Direction::Send, 0, 1, 1)
        );
        let slow = h.scaled(1.25, "slow");
        assert_eq!(slow.cost(Direction::Send, 1000, 1, 1), Duration(42_625));
        assert_eq!(slow.send_copies, 3);
    }
}
