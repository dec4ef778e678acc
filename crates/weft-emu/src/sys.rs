//! Thin safe wrappers over the few Linux calls the emulator needs: AF_PACKET sockets, `setns`,
//! `ppoll`, the monotonic clock and timer slack. All `unsafe` in the crate lives here.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use weft_model::Instant;

/// Sets the congestion-control algorithm of TCP socket `fd` (`TCP_CONGESTION`: "reno",
/// "cubic", ...; the module must be available in the kernel).
pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: the option value is a live byte string of the given length.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr() as *const libc::c_void,
            name.len() as libc::socklen_t,
        )
    };
    if r != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Nanoseconds on CLOCK_MONOTONIC, as a model instant (epoch: boot).
pub fn monotonic_now() -> Instant {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Instant(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Moves the calling thread into the network namespace mounted at `/run/netns/NAME`.
/// Only this thread changes namespace; sockets it opens afterwards stay in that namespace.
pub fn enter_netns(name: &str) -> io::Result<()> {
    let f = File::open(format!("/run/netns/{name}"))?;
    // SAFETY: setns with a valid fd and a namespace type; affects only the calling thread.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Asks for precise timer wake-ups on the calling thread (default slack is 50 us).
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer; it cannot touch memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// True when the process runs with an effective user id of 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// True when a process with this id exists (signal 0 probe).
pub fn pid_alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends `sig` to process `pid`; errors (already gone) are ignored.
pub fn kill(pid: u32, sig: i32) {
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// Waits until one of `fds` is readable or `timeout` (ns; `None` = forever) passes.
/// Returns the number of ready descriptors (0 on time-out); EINTR counts as a time-out.
pub fn ppoll_readable(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> io::Result<usize> {
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a valid slice of pollfd; `tsp` is null or points at a live timespec.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// A raw AF_PACKET socket bound to one interface: whole Ethernet frames in and out.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    /// Opens a non-blocking packet socket on interface `ifname` of the calling thread's network
    /// namespace, ignoring the frames it sends itself, with `buf_bytes` of kernel buffer each way.
    pub fn open(ifname: &str, buf_bytes: usize) -> io::Result<Self> {
        let cname = std::ffi::CString::new(ifname)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has NUL"))?;
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::last_os_error());
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
        let s = PacketSocket { fd };
        s.setsockopt_int(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)?;
        s.setsockopt_int(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        let buf = buf_bytes.min(i32::MAX as usize) as libc::c_int;
        s.setsockopt_int(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, buf)?;
        s.setsockopt_int(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, buf)?;
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid starting value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll of the size we pass.
        let r = unsafe {
            libc::bind(
                s.fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(s)
    }

    fn setsockopt_int(&self, level: i32, name: i32, v: libc::c_int) -> io::Result<()> {
        // SAFETY: the option value is a live c_int of the size passed.
        let r = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                &v as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receives one frame into `buf`; `Ok(None)` when nothing is waiting. Frames the socket sent
    /// itself are skipped. Returns the frame's length (truncated to `buf`) and the kernel's
    /// receive time (CLOCK_REALTIME, ns since the Unix epoch; 0 if the kernel gave none).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, u64)>> {
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
            // SAFETY: every pointer in `msg` refers to a live buffer of the stated size.
            let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            if sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            let mut stamp = 0u64;
            // SAFETY: CMSG_* walk the control buffer the kernel filled, within msg_controllen.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET
                        && (*c).cmsg_type == libc::SCM_TIMESTAMPNS
                    {
                        let ts =
                            std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        stamp = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
            }
            return Ok(Some(((n as usize).min(buf.len()), stamp)));
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

    /// The descriptor, for polling.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A TCP listener on 0.0.0.0 port 0 of the calling thread's namespace, with the receive buffer
/// and window clamp (`TCP_WINDOW_CLAMP`, bytes) set before `listen` so that accepted connections
/// inherit them and never advertise more than `clamp`.
pub fn tcp_listener(rcvbuf: Option<u32>, clamp: Option<u32>) -> io::Result<std::net::TcpListener> {
    // SAFETY: plain socket(2) call.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let set = |level, name, v: libc::c_int| -> io::Result<()> {
        // SAFETY: option value is a live c_int of the given size.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                level,
                name,
                &v as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    set(libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if let Some(b) = rcvbuf {
        set(
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            b.min(i32::MAX as u32) as i32,
        )?;
    }
    if let Some(c) = clamp {
        set(
            libc::IPPROTO_TCP,
            libc::TCP_WINDOW_CLAMP,
            c.min(i32::MAX as u32) as i32,
        )?;
    }
    // SAFETY: zeroed sockaddr_in is valid (0.0.0.0:0).
    let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sin.sin_family = libc::AF_INET as libc::sa_family_t;
    // SAFETY: `sin` is a valid sockaddr_in of the size passed.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sin as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: listen on a bound socket.
    if unsafe { libc::listen(fd.as_raw_fd(), 16) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(std::net::TcpListener::from(fd))
}

/// Puts the calling thread in the SCHED_FIFO class at `priority` (1..99) so that compile jobs
/// and other busy processes do not delay its deadlines. Returns false if not permitted; the
/// kernel's RT throttling still leaves other tasks 5% of each CPU.
pub fn set_realtime(priority: i32) -> bool {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `p` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// Sets `TCP_WINDOW_CLAMP` (bytes) on a connected socket and returns the value the kernel keeps.
pub fn clamp_window(fd: RawFd, clamp: u32) -> io::Result<u32> {
    let v = clamp.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: option value is a live c_int of the given size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_WINDOW_CLAMP,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `out` and `len` are live and sized for a c_int.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_WINDOW_CLAMP,
            &mut out as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(out as u32)
}

/// Bytes in a TCP socket's send queue not yet acknowledged by the peer (`SIOCOUTQ`).
pub fn tcp_outq(fd: RawFd) -> io::Result<u32> {
    let mut v: libc::c_int = 0;
    // SAFETY: TIOCOUTQ writes one c_int to the pointer given.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut v as *mut libc::c_int) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v.max(0) as u32)
}

/// Sets a socket's receive buffer to `bytes`, above the system limit if need be (root).
pub fn set_rcvbuf(fd: RawFd, bytes: u32) -> io::Result<()> {
    let v = bytes.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: option value is a live c_int of the given size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Asks process `pid` to stop (SIGTERM); errors (already gone) are ignored.
pub fn terminate(pid: u32) {
    kill(pid, libc::SIGTERM);
}

/// Puts the calling thread in the SCHED_IDLE class: it runs only on a CPU with nothing else to
/// do and yields at once to any other task. For threads that busy-poll so that the virtual CPU
/// never halts (a halted one wakes up late on a hypervisor) without taking time from others.
pub fn set_idle_class() -> bool {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: `p` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) == 0 }
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 is the calling thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Vec::new();
    }
    // SAFETY: CPU_ISSET reads the set within its bounds (cpu < CPU_SETSIZE).
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Restricts the calling thread to one CPU; errors are ignored (the thread then floats).
pub fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes within the set for cpu < CPU_SETSIZE, which the caller's list holds.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
}

/// A TAP device (`IFF_TAP | IFF_NO_PI`): whole Ethernet frames read from and written to the
/// kernel through a file descriptor, non-blocking. Used to measure TAP against AF_PACKET
/// (`bench/emu-io.sh`); the emulator's switch uses AF_PACKET on veth ends.
#[derive(Debug)]
pub struct TapDevice {
    fd: OwnedFd,
}

impl TapDevice {
    /// Creates TAP interface `name` in the calling thread's namespace (it stays down until
    /// configured; it may be moved to another namespace with `ip link set NAME netns NS`).
    pub fn create(name: &str) -> io::Result<Self> {
        if name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "interface name too long",
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
}

/// The calling thread's kernel thread id.
pub fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Moves thread `tid` of this process to normal scheduling (SCHED_OTHER); errors (the thread has
/// ended) are ignored.
pub fn set_normal_class(tid: i32) {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: `p` is a valid sched_param; the call affects only thread `tid`.
    unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &p) };
}
