//! `--busy-poll`: waiting for the next message by spinning on a non-blocking socket instead of
//! sleeping in the kernel, and `SO_BUSY_POLL` where the kernel takes it.
//!
//! A thread that blocks in `read` lets its CPU halt; on a virtual machine the hypervisor then
//! deschedules the virtual CPU, and waking it for the answer costs tens to hundreds of
//! microseconds that belong to the host, not to the network. Spinning keeps both ends' CPUs
//! awake (at the price of one busy CPU per end while the test runs), so that the round trip is
//! the network's and the stacks'. `SO_BUSY_POLL` asks the kernel to poll the device queue in
//! `recv` (it needs a NIC queue with a NAPI id: loopback and veth have none, so there it changes
//! nothing); the result says which of the two were in effect.

use std::os::fd::AsRawFd;

use serde::{Deserialize, Serialize};

/// `SO_BUSY_POLL` (linux/asm-generic/socket.h; the `libc` crate exports it only for some
/// targets).
const SO_BUSY_POLL: libc::c_int = 46;

/// Microseconds of device polling asked for with `SO_BUSY_POLL` (the kernel documentation's
/// suggested value).
pub const BUSY_POLL_US: u32 = 50;

/// What busy-polling was in effect on one end of a test.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BusyPoll {
    /// The end spun on a non-blocking socket instead of sleeping.
    pub spin: bool,
    /// `SO_BUSY_POLL` microseconds the kernel accepted, if any.
    pub so_busy_poll_us: Option<u32>,
    /// Why the kernel refused `SO_BUSY_POLL`, if it did.
    pub so_busy_poll_error: Option<String>,
}

impl BusyPoll {
    /// Asks the kernel for `SO_BUSY_POLL` on `sock` and reports a spinning end (the caller
    /// spins: the socket driver with [`weft_sock::Options::spin_after`]).
    pub fn enable(sock: &impl AsRawFd) -> BusyPoll {
        let us = i32::try_from(BUSY_POLL_US).unwrap_or(50);
        let r = weft_sys::sockopt::set_int(sock.as_raw_fd(), libc::SOL_SOCKET, SO_BUSY_POLL, us);
        if r.is_ok() {
            BusyPoll {
                spin: true,
                so_busy_poll_us: Some(BUSY_POLL_US),
                so_busy_poll_error: None,
            }
        } else {
            BusyPoll {
                spin: true,
                so_busy_poll_us: None,
                so_busy_poll_error: r.err().map(|e| e.to_string()),
            }
        }
    }

    /// `spin + SO_BUSY_POLL 50us`, `spin (SO_BUSY_POLL: ...)` or `sleep`, for tables.
    pub fn label(&self) -> String {
        match (self.spin, self.so_busy_poll_us, &self.so_busy_poll_error) {
            (false, _, _) => "sleep".into(),
            (true, Some(us), _) => format!("spin + SO_BUSY_POLL {us}us"),
            (true, None, Some(e)) => format!("spin (SO_BUSY_POLL refused: {e})"),
            (true, None, None) => "spin".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_busy_polled_socket_reports_a_spinning_end() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let bp = BusyPoll::enable(&a);
        assert!(bp.spin);
        assert!(bp.label().starts_with("spin"), "{}", bp.label());
        assert_eq!(BusyPoll::default().label(), "sleep");
    }
}
