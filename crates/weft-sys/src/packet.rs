//! AF_PACKET sockets: whole Ethernet frames in and out of one interface, with the kernel's
//! receive time of each.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `PACKET_IGNORE_OUTGOING` (linux/if_packet.h, Linux >= 4.20); libc does not export it.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// Frames [`PacketSocket::send_many`] hands to one `sendmmsg` call at most (the arrays it
/// fills live on the stack: 64 headers of 64 bytes and 64 iovecs).
pub const SEND_BATCH_MAX: usize = 64;

/// How a [`PacketSocket`] is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketOptions {
    /// Kernel buffer each way, bytes, forced above the system limit (root); `None`: the default.
    pub buf_bytes: Option<usize>,
    /// Skip the frames this host sends out of the interface (a switch port wants only arrivals;
    /// a traffic counter wants both directions).
    pub ignore_outgoing: bool,
    /// Ask for the kernel's receive time of each frame (`SO_TIMESTAMPNS`).
    pub timestamps: bool,
}

impl PacketOptions {
    /// A switch port: arrivals only, time-stamped, `buf_bytes` of buffer each way.
    pub fn switch_port(buf_bytes: usize) -> Self {
        PacketOptions {
            buf_bytes: Some(buf_bytes),
            ignore_outgoing: true,
            timestamps: true,
        }
    }

    /// A traffic counter: both directions, no time stamps, default buffers.
    pub fn counter() -> Self {
        PacketOptions {
            buf_bytes: None,
            ignore_outgoing: false,
            timestamps: false,
        }
    }
}

/// One frame received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// The frame's length on the wire, bytes (it may exceed the buffer).
    pub len: usize,
    /// Bytes stored in the buffer (`len`, truncated to the buffer's size).
    pub stored: usize,
    /// Kernel receive time, ns since the Unix epoch (CLOCK_REALTIME); 0 without time stamps.
    pub stamp_ns: u64,
    /// The host sent this frame out of the interface (only without `ignore_outgoing`).
    pub outgoing: bool,
}

/// A raw, non-blocking AF_PACKET socket bound to one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ignore_outgoing: bool,
}

impl PacketSocket {
    /// Opens a packet socket on interface `ifname` of the calling thread's network namespace
    /// (needs CAP_NET_RAW).
    pub fn open(ifname: &str, opts: PacketOptions) -> io::Result<Self> {
        let cname = std::ffi::CString::new(ifname)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has NUL"))?;
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("interface {ifname}: {e}")));
        }
        // Protocol 0: receive nothing until bound to the interface, so no stray frames from others.
        // SAFETY: plain socket(2) call.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let s = PacketSocket {
            fd,
            ignore_outgoing: opts.ignore_outgoing,
        };
        let raw = s.fd.as_raw_fd();
        use crate::sockopt::set_int;
        if opts.ignore_outgoing {
            set_int(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)?;
        }
        if opts.timestamps {
            set_int(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        }
        if let Some(b) = opts.buf_bytes {
            let b = b.min(i32::MAX as usize) as i32;
            set_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, b)?;
            set_int(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, b)?;
        }
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid starting value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll of the size we pass.
        let r = unsafe {
            libc::bind(
                raw,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(s)
    }

    /// Receives one frame into `buf`; `Ok(None)` when nothing is waiting. With
    /// `ignore_outgoing`, frames this host sent are skipped.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        loop {
            // SAFETY: zeroed sockaddr_ll, msghdr and control buffer are valid starting values.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut ctrl = [0u64; 8];
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr() as *mut libc::c_void,
                iov_len: buf.len(),
            };
            // SAFETY: as above.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_name = &mut sll as *mut libc::sockaddr_ll as *mut libc::c_void;
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = ctrl.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = std::mem::size_of_val(&ctrl);
            let flags = libc::MSG_DONTWAIT | libc::MSG_TRUNC;
            // SAFETY: every pointer in `msg` refers to a live buffer of the stated size.
            let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, flags) };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            let outgoing = sll.sll_pkttype == libc::PACKET_OUTGOING;
            if outgoing && self.ignore_outgoing {
                continue;
            }
            let mut stamp_ns = 0u64;
            // SAFETY: CMSG_* walk the control buffer the kernel filled, within msg_controllen.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET
                        && (*c).cmsg_type == libc::SCM_TIMESTAMPNS
                    {
                        let ts =
                            std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        stamp_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
            }
            let len = n as usize;
            return Ok(Some(Received {
                len,
                stored: len.min(buf.len()),
                stamp_ns,
                outgoing,
            }));
        }
    }

    /// Sends one whole frame. Errors such as ENOBUFS (the peer's backlog is full) are returned to
    /// the caller, which counts them as drops.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is a valid readable slice.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sends whole frames in order with as few `sendmmsg` calls as it takes (one per
    /// [`SEND_BATCH_MAX`] frames when the kernel takes them all), and returns how many the
    /// kernel refused (ENOBUFS, EAGAIN: the peer's backlog or the socket's buffer is full; the
    /// caller counts them as drops, as it counts a failed [`send`](Self::send)). A refused
    /// frame is skipped and the rest still offered, as one `send` per frame would do.
    pub fn send_many<F: AsRef<[u8]>>(&self, frames: &[F]) -> usize {
        let mut refused = 0;
        for chunk in frames.chunks(SEND_BATCH_MAX) {
            // SAFETY: zeroed iovec and mmsghdr are valid starting values (null pointers, zero
            // lengths); the pointers set below refer to `chunk`'s frames, alive for the call.
            let mut iovs: [libc::iovec; SEND_BATCH_MAX] = unsafe { std::mem::zeroed() };
            let mut hdrs: [libc::mmsghdr; SEND_BATCH_MAX] = unsafe { std::mem::zeroed() };
            for (i, f) in chunk.iter().enumerate() {
                let f = f.as_ref();
                iovs[i].iov_base = f.as_ptr() as *mut libc::c_void;
                iovs[i].iov_len = f.len();
                hdrs[i].msg_hdr.msg_iov = &mut iovs[i];
                hdrs[i].msg_hdr.msg_iovlen = 1;
            }
            let mut at = 0;
            while at < chunk.len() {
                // SAFETY: hdrs[at..chunk.len()] are filled in above and point at live frames.
                let n = unsafe {
                    libc::sendmmsg(
                        self.fd.as_raw_fd(),
                        hdrs[at..].as_mut_ptr(),
                        (chunk.len() - at) as libc::c_uint,
                        libc::MSG_DONTWAIT,
                    )
                };
                if n < 0 {
                    if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    refused += 1;
                    at += 1;
                } else {
                    // The kernel stops at the first frame it refuses; the next call reports it.
                    at += n as usize;
                }
            }
        }
        refused
    }

    /// The descriptor, for polling.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the test may run (root); otherwise it is skipped (failing under
    /// WEFT_TEST_STRICT=1).
    fn root() -> bool {
        let why = weft_testutil::missing_root("AF_PACKET");
        if let Some(why) = &why {
            weft_testutil::skip(why);
        }
        why.is_none()
    }

    #[test]
    fn a_missing_interface_is_named_in_the_error() {
        let e = PacketSocket::open("weft-nonesuch0", PacketOptions::counter()).unwrap_err();
        assert!(e.to_string().contains("weft-nonesuch0"), "{e}");
    }

    /// On loopback every datagram passes the interface twice (out and in): a counter sees both,
    /// a switch port only the arrival, with a receive time, and a short buffer keeps the wire
    /// length. Needs CAP_NET_RAW; otherwise skipped (failing under WEFT_TEST_STRICT=1).
    #[test]
    fn loopback_frames_are_seen_in_the_directions_asked_for() {
        if !root() {
            return;
        }
        let counter = PacketSocket::open("lo", PacketOptions::counter()).unwrap();
        let port = PacketSocket::open("lo", PacketOptions::switch_port(1 << 20)).unwrap();
        let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let payload = [0x5a; 1000];
        a.send_to(&payload, a.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mine = |r: &Received, buf: &[u8]| r.len == 14 + 20 + 8 + 1000 && buf[14] == 0x45;
        let mut small = [0u8; 64];
        let (mut out, mut inb) = (0, 0);
        while let Some(r) = counter.recv(&mut small).unwrap() {
            if mine(&r, &small) {
                assert_eq!(r.stored, 64);
                if r.outgoing { out += 1 } else { inb += 1 }
            }
        }
        assert_eq!((out, inb), (1, 1));
        let mut seen = 0;
        let mut big = [0u8; 2048];
        while let Some(r) = port.recv(&mut big).unwrap() {
            if mine(&r, &big) {
                assert!(!r.outgoing);
                assert!(r.stamp_ns > 1_600_000_000 * 1_000_000_000);
                seen += 1;
            }
        }
        assert_eq!(seen, 1);
    }

    /// `send_many` puts every frame on the wire once, whole and in order, across more than
    /// one `sendmmsg` call's worth ([`SEND_BATCH_MAX`]): on a private loopback, a switch port
    /// reads back exactly the frames sent. Needs CAP_NET_RAW (skipped otherwise, failing
    /// under WEFT_TEST_STRICT=1).
    #[test]
    fn send_many_sends_every_frame_once_in_order() {
        if !root() {
            return;
        }
        weft_testutil::in_private_netns(|| {
            let tx = PacketSocket::open("lo", PacketOptions::switch_port(1 << 20)).unwrap();
            let rx = PacketSocket::open("lo", PacketOptions::switch_port(1 << 22)).unwrap();
            let n = 2 * SEND_BATCH_MAX + 5;
            // Ethernet frames of a local experimental EtherType (0x88b5), numbered, of
            // varying length.
            let frames: Vec<Vec<u8>> = (0..n)
                .map(|i| {
                    let mut f = vec![0u8; 60 + i % 50];
                    f[12..14].copy_from_slice(&[0x88, 0xb5]);
                    f[14..16].copy_from_slice(&(i as u16).to_be_bytes());
                    f
                })
                .collect();
            assert_eq!(tx.send_many(&frames), 0);
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut got = Vec::new();
            let mut buf = [0u8; 256];
            while let Some(r) = rx.recv(&mut buf).unwrap() {
                if buf[12..14] == [0x88, 0xb5] {
                    got.push(buf[..r.stored].to_vec());
                }
            }
            assert_eq!(got.len(), n);
            assert!(got == frames, "frames differ or out of order");
        });
    }
}
