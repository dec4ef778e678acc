//! The switch's ends of the hosts' veth pairs: a packet socket each, read through a
//! `PACKET_MMAP` receive ring ([`FrameRx::Ring`], the default) or one `recvmsg` a frame
//! ([`FrameRx::Recvmsg`], `WEFT_EMU_RX=recvmsg`); frames leave a turn's worth per port in one
//! `sendmmsg` ([`crate::tx_batch`]).
//!
//! Why the ring: a busy-polling switch looks at every port each turn and mostly finds nothing;
//! with `recvmsg` each look is a system call (16 ports: 16 calls a turn), with the ring it is a
//! read of the next slot's status word. Measured with `bench/emu.sh` (both variants,
//! alternating): see its header.

use std::io;

use weft_sys::{PacketOptions, PacketRing, PacketSocket, Received};

/// Environment variable that picks the receive path (`ring` or `recvmsg`), for comparing them.
pub const FRAME_RX_ENV: &str = "WEFT_EMU_RX";

/// Receive rings of all ports together, bytes at most (each port at least
/// [`RING_MIN_BYTES`]).
pub const RINGS_BUDGET_BYTES: usize = 256 << 20;
/// Receive ring per port, bytes at most.
pub const RING_MAX_BYTES: usize = 64 << 20;
/// Receive ring per port, bytes at least.
pub const RING_MIN_BYTES: usize = 4 << 20;

/// The receive ring of each of `ports` ports, bytes. A ring holds fixed-size slots, one frame
/// each, so it holds fewer frames than a socket buffer of its size holds small frames: it must
/// be large enough to ride out the switch thread being descheduled (on a busy machine, for
/// milliseconds) without dropping frames.
pub fn ring_bytes(ports: usize) -> usize {
    (RINGS_BUDGET_BYTES / ports.max(1)).clamp(RING_MIN_BYTES, RING_MAX_BYTES)
}

/// Kernel buffer each way per port, bytes (the copy queue of over-long frames with a ring).
pub const PORT_BUF_BYTES: usize = 8 << 20;

/// How the switch reads frames from its ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameRx {
    /// A TPACKET_V2 receive ring per port: no system call to find a frame.
    Ring,
    /// One non-blocking `recvmsg` per frame (and per empty look).
    Recvmsg,
}

impl FrameRx {
    /// `$WEFT_EMU_RX` (`ring` or `recvmsg`); the ring when unset or unknown. On a quiet
    /// machine (`bench/emu.sh`, 2026-11-28, load 0.1) it carried 1.7x the TCP throughput of
    /// `recvmsg` (5.76 against 3.38 Gbit/s) at the same 64-byte frame rate (93 against 95 kpps)
    /// with a third of the lag p99 at 8 OC-3c hosts (66 against 209 us).
    pub fn from_env() -> Self {
        match std::env::var(FRAME_RX_ENV).as_deref() {
            Ok("recvmsg") => FrameRx::Recvmsg,
            _ => FrameRx::Ring,
        }
    }
}

/// One switch port.
#[derive(Debug)]
pub enum SwitchPort {
    /// Read with `recvmsg`.
    Socket(PacketSocket),
    /// Read from a receive ring.
    Ring(PacketRing),
}

impl SwitchPort {
    /// Opens the port on interface `ifname` of the calling thread's namespace, for frames up
    /// to `max_frame` bytes (longer ones still come whole, more slowly); `ring_bytes` sizes
    /// the receive ring (see [`ring_bytes`]).
    pub fn open(
        ifname: &str,
        max_frame: usize,
        rx: FrameRx,
        ring_bytes: usize,
    ) -> io::Result<Self> {
        let opts = PacketOptions::switch_port(PORT_BUF_BYTES);
        Ok(match rx {
            FrameRx::Recvmsg => SwitchPort::Socket(PacketSocket::open(ifname, opts)?),
            FrameRx::Ring => {
                SwitchPort::Ring(PacketRing::open(ifname, opts, max_frame, ring_bytes)?)
            }
        })
    }

    /// The next frame that arrived, into `buf`; `Ok(None)` when none waits.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        match self {
            SwitchPort::Socket(s) => s.recv(buf),
            SwitchPort::Ring(r) => r.recv(buf),
        }
    }

    /// Sends one whole frame to the host.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        match self {
            SwitchPort::Socket(s) => s.send(frame),
            SwitchPort::Ring(r) => r.send(frame),
        }
    }

    /// Sends whole frames in order, with as few system calls as it takes; returns how many
    /// the kernel refused ([`weft_sys::PacketSocket::send_many`]).
    pub fn send_many(&self, frames: &[Vec<u8>]) -> usize {
        match self {
            SwitchPort::Socket(s) => s.send_many(frames),
            SwitchPort::Ring(r) => r.send_many(frames),
        }
    }

    /// The descriptor, for polling.
    pub fn raw_fd(&self) -> i32 {
        match self {
            SwitchPort::Socket(s) => s.raw_fd(),
            SwitchPort::Ring(r) => r.raw_fd(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Few ports get large rings, many ports share the budget, down to the floor.
    #[test]
    fn rings_share_the_budget_within_their_bounds() {
        assert_eq!(ring_bytes(2), RING_MAX_BYTES);
        assert_eq!(ring_bytes(16), RINGS_BUDGET_BYTES / 16);
        assert!(16 * ring_bytes(16) <= RINGS_BUDGET_BYTES);
        assert_eq!(ring_bytes(1000), RING_MIN_BYTES);
    }
}
