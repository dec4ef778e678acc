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

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// `SO_BUSY_POLL` (linux/asm-generic/socket.h; the `libc` crate exports it only for some
/// targets).
const SO_BUSY_POLL: libc::c_int = 46;

/// Microseconds of device polling asked for with `SO_BUSY_POLL` (the kernel documentation's
/// suggested value).
pub const BUSY_POLL_US: u32 = 50;

/// Spins between two yields of the CPU: a spinning end that shares its CPU with the other end
/// (no `--affinity`) still lets it run.
const SPINS_PER_YIELD: u32 = 256;

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
    /// makes the socket non-blocking and spins with [`read_exact`], [`write_all`] or
    /// [`Spinner`]).
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

/// Counts spins and yields the CPU now and then.
#[derive(Default)]
pub struct Spinner(u32);

impl Spinner {
    /// One turn of a wait loop.
    pub fn spin(&mut self) {
        self.0 = self.0.wrapping_add(1);
        if self.0 % SPINS_PER_YIELD == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

fn timed_out() -> std::io::Error {
    std::io::Error::new(ErrorKind::TimedOut, "timed out while spinning")
}

/// Reads exactly `buf.len()` bytes from a non-blocking stream, spinning while there is nothing
/// to read; `TimedOut` past `deadline`.
pub fn read_exact(s: &mut impl Read, buf: &mut [u8], deadline: Instant) -> std::io::Result<()> {
    let mut got = 0;
    let mut spinner = Spinner::default();
    while got < buf.len() {
        let Some(rest) = buf.get_mut(got..) else {
            break;
        };
        match s.read(rest) {
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(timed_out());
                }
                spinner.spin();
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` to a non-blocking stream, spinning while its buffer is full; `TimedOut`
/// past `deadline`.
pub fn write_all(s: &mut impl Write, buf: &[u8], deadline: Instant) -> std::io::Result<()> {
    let mut sent = 0;
    let mut spinner = Spinner::default();
    while sent < buf.len() {
        let Some(rest) = buf.get(sent..) else {
            break;
        };
        match s.write(rest) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => sent += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(timed_out());
                }
                spinner.spin();
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    #[test]
    fn spinning_reads_and_writes_move_bytes_and_time_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        a.set_nonblocking(true).unwrap();
        let bp = BusyPoll::enable(&a);
        assert!(bp.spin);
        assert!(bp.label().starts_with("spin"), "{}", bp.label());
        b.set_nonblocking(true).unwrap();
        let soon = || Instant::now() + Duration::from_secs(5);
        let msg = vec![7u8; 300_000];
        std::thread::scope(|s| {
            s.spawn(|| write_all(&mut b, &msg, soon()).unwrap());
            let mut got = vec![0u8; msg.len()];
            read_exact(&mut a, &mut got, soon()).unwrap();
            assert_eq!(got, msg);
        });
        let mut one = [0u8; 1];
        let t0 = Instant::now();
        let e = read_exact(&mut a, &mut one, t0 + Duration::from_millis(20)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        assert!(t0.elapsed() >= Duration::from_millis(20));
    }
}
