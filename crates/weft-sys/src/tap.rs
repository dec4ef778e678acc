//! TAP devices: whole Ethernet frames to and from the kernel through a descriptor.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A TAP device (`IFF_TAP | IFF_NO_PI`), non-blocking: each read is one frame the kernel sent
/// out of the interface, each write one frame it receives.
#[derive(Debug)]
pub struct TapDevice {
    fd: OwnedFd,
}

impl TapDevice {
    /// Creates TAP interface `name` in the calling thread's namespace (it stays down until
    /// configured; it may be moved to another namespace with `ip link set NAME netns NS`).
    pub fn create(name: &str) -> io::Result<Self> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("interface name {name:?} must be 1 to 15 bytes"),
            ));
        }
        // SAFETY: open(2) with a NUL-terminated path.
        let raw = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ifreq is plain old data; all-zero is a valid starting value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
            *d = s as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes the live ifreq we pass.
        let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TapDevice { fd })
    }

    /// Reads one frame into `buf`; `Ok(None)` when nothing is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: `buf` is a valid writable slice of the length passed.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(n as usize))
    }

    /// Writes one whole frame.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is a valid readable slice.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The descriptor, for polling.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_does_not_fit_is_refused_before_any_system_call() {
        let e = TapDevice::create("a-name-longer-than-fifteen").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            TapDevice::create("").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
