//! The few system calls std does not offer for bulk transfer: `sendmmsg`/`recvmmsg`, socket
//! buffer sizes, the path MTU, and UDP GSO (`ppoll` and integer socket options come from
//! `weft-sys`). Every `unsafe` block is a plain FFI call on a file descriptor we own, with
//! pointers to live, correctly sized local buffers.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use weft_sys::sockopt::{get_int as getsockopt_int, set_int as setsockopt_int};

/// Waits until one of `fds` is readable or `timeout_ms` passes (-1: forever). Returns which fds
/// are readable.
pub fn poll_readable(fds: &[RawFd], timeout_ms: i32) -> io::Result<Vec<bool>> {
    let ns = if timeout_ms < 0 {
        None
    } else {
        Some(timeout_ms as u64 * 1_000_000)
    };
    weft_sys::readable(fds, ns)
}

/// `TCP_RTO_MIN_US` and `TCP_DELACK_MAX_US` from the Linux UAPI (`linux/tcp.h`, Linux >= 6.15).
const TCP_RTO_MIN_US: i32 = 45;
const TCP_DELACK_MAX_US: i32 = 46;

/// Floor of a control connection's retransmission timeout, µs (Linux's default: 200 ms).
pub const CONTROL_RTO_MIN_US: i32 = 20_000;

/// Longest a control connection delays an ACK, µs (Linux's default: 200 ms).
pub const CONTROL_DELACK_MAX_US: i32 = 8_000;

/// Lets a thin TCP connection (a few small messages in flight) recover a lost segment in a few
/// round trips instead of 200 ms or more. Linux probes a lone unacknowledged segment after two
/// round trips plus the minimum RTO, which allows for the peer's delayed ACK: both are lowered
/// here, on both ends. Returns false where the kernel lacks the options (before 6.15), which
/// then keeps its defaults.
pub fn quick_tcp_recovery(sock: &std::net::TcpStream) -> bool {
    let fd = sock.as_raw_fd();
    let rto = setsockopt_int(fd, libc::IPPROTO_TCP, TCP_RTO_MIN_US, CONTROL_RTO_MIN_US);
    let ack = setsockopt_int(
        fd,
        libc::IPPROTO_TCP,
        TCP_DELACK_MAX_US,
        CONTROL_DELACK_MAX_US,
    );
    rto.is_ok() && ack.is_ok()
}

/// The shortest time a peer may stay silent before it is declared gone, ms (see
/// [`dead_peer_bound_ms`]).
pub const DEAD_PEER_FLOOR_MS: u64 = 2_000;

/// How long a control connection may go without an acknowledgement from the peer before the
/// peer is declared gone: three of the connection's current retransmission timeouts (as the
/// kernel measured them), and at least [`DEAD_PEER_FLOOR_MS`], so that one lost segment and its
/// retransmission never trip it.
pub fn dead_peer_bound_ms(rto_us: Option<u32>) -> u64 {
    (3 * rto_us.unwrap_or(0) as u64 / 1000).max(DEAD_PEER_FLOOR_MS)
}

/// The connection's current retransmission timeout, µs (`TCP_INFO`'s `tcpi_rto`).
pub fn tcp_rto_us(sock: &std::net::TcpStream) -> Option<u32> {
    tcp_info(sock).map(|i| i.tcpi_rto)
}

/// The connection's smoothed round trip, µs (`TCP_INFO`'s `tcpi_rtt`; after `connect` the
/// handshake's own sample).
pub fn tcp_rtt_us(sock: &std::net::TcpStream) -> Option<u32> {
    tcp_info(sock).map(|i| i.tcpi_rtt)
}

fn tcp_info(sock: &std::net::TcpStream) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain old data; zeroed is a valid value to be overwritten.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: passes a pointer to a local tcp_info and its size.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(info)
}

/// Makes the kernel abort the connection (reads and writes then fail with `ETIMEDOUT`) once the
/// peer has acknowledged nothing for `bound_ms`: `TCP_USER_TIMEOUT` covers data in flight, and
/// keepalive probes every second cover an idle connection (the user timeout then also decides
/// when unanswered probes end it). A peer that died with its host, or whose path went down,
/// sends no reset: without this the connection would wait for the application's own timeout
/// or the kernel's retries (about 15 minutes). Returns whether the kernel took every option.
pub fn abort_when_silent(sock: &std::net::TcpStream, bound_ms: u64) -> bool {
    let fd = sock.as_raw_fd();
    let ms = bound_ms.min(i32::MAX as u64) as i32;
    [
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, ms),
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 1),
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 1),
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3),
    ]
    .iter()
    .all(Result::is_ok)
}

/// How much nicer than the thread that starts them the threads that hash, read and write
/// buffers run: below the network threads, so that a runnable sending or receiving loop (which
/// paces datagrams and drains the sockets) is not kept waiting behind bulk work. On two shared
/// cores this took loopback transfers from 10.4-11.6 to 11.7-12.3 Gbit/s. With autogroup
/// scheduling (the default on most kernels) a nice value ranks threads only against others of
/// the same session.
pub const BULK_NICENESS: i32 = 10;

pub use weft_sys::sched::thread_nice;

/// Makes the calling thread [`BULK_NICENESS`] nicer (at most 19); `setpriority` on a thread id
/// sets that thread alone. Returns whether the kernel took it.
pub fn lower_thread_priority() -> bool {
    thread_nice().is_some_and(|now| weft_sys::sched::set_thread_nice(now + BULK_NICENESS))
}

/// CPU time (user + system) of the whole process so far, all threads, zero if the kernel
/// refuses.
pub fn process_cpu() -> std::time::Duration {
    std::time::Duration::from_nanos(weft_sys::cpu::CpuTime::process().total_ns())
}

/// Asks for `bytes` of socket receive and send buffer; as root, past the sysctl limits
/// (`SO_*BUFFORCE`). Returns the receive buffer the kernel granted.
pub fn set_buffers(sock: &UdpSocket, bytes: usize) -> usize {
    let fd = sock.as_raw_fd();
    let b = bytes.min(i32::MAX as usize) as i32;
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, b).is_err() {
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, b);
    }
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, b).is_err() {
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, b);
    }
    getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap_or(0) as usize
}

/// The MTU of the route to `dest` (IPv4 `IP_MTU`, IPv6 `IPV6_MTU`), from a throwaway connected
/// UDP socket.
pub fn path_mtu(dest: SocketAddr) -> Option<usize> {
    let bind: SocketAddr = if dest.is_ipv4() {
        "0.0.0.0:0".parse().ok()?
    } else {
        "[::]:0".parse().ok()?
    };
    let s = UdpSocket::bind(bind).ok()?;
    s.connect(dest).ok()?;
    let (level, name) = if dest.is_ipv4() {
        (libc::IPPROTO_IP, libc::IP_MTU)
    } else {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    };
    getsockopt_int(s.as_raw_fd(), level, name)
        .ok()
        .map(|m| m as usize)
}

fn sockaddr_of(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// One datagram to send, gathered from pieces (e.g. a header and a payload still in its
/// buffer, so that the payload is not copied before the kernel copies it).
pub type Gather<'a> = [&'a [u8]; 2];

/// Total length of a gathered datagram, bytes.
pub fn gather_len(g: &Gather<'_>) -> usize {
    g[0].len() + g[1].len()
}

fn iovecs(g: &Gather<'_>) -> [libc::iovec; 2] {
    g.map(|b| libc::iovec {
        iov_base: b.as_ptr() as *mut libc::c_void,
        iov_len: b.len(),
    })
}

/// Sends several datagrams, each `(destination, bytes)`, with as few system calls as the kernel
/// allows (`sendmmsg`). Returns how many were sent; a full socket buffer stops early.
pub fn send_batch(sock: &UdpSocket, msgs: &[(SocketAddr, &[u8])]) -> io::Result<usize> {
    let g: Vec<(SocketAddr, Gather<'_>)> = msgs.iter().map(|(a, b)| (*a, [*b, &[][..]])).collect();
    send_batch_gather(sock, &g)
}

/// Like [`send_batch`], each datagram gathered from its pieces without copying them.
pub fn send_batch_gather(sock: &UdpSocket, msgs: &[(SocketAddr, Gather<'_>)]) -> io::Result<usize> {
    if msgs.is_empty() {
        return Ok(0);
    }
    let mut addrs: Vec<(libc::sockaddr_storage, libc::socklen_t)> =
        msgs.iter().map(|(a, _)| sockaddr_of(a)).collect();
    let mut iovs: Vec<[libc::iovec; 2]> = msgs.iter().map(|(_, g)| iovecs(g)).collect();
    let mut hdrs: Vec<libc::mmsghdr> = Vec::with_capacity(msgs.len());
    for i in 0..msgs.len() {
        // SAFETY: msghdr is plain old data; all-zero is a valid value, filled in below.
        let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
        h.msg_name = (&mut addrs[i].0 as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = addrs[i].1;
        h.msg_iov = iovs[i].as_mut_ptr();
        h.msg_iovlen = 2;
        hdrs.push(libc::mmsghdr {
            msg_hdr: h,
            msg_len: 0,
        });
    }
    // SAFETY: every header points into `addrs` and `iovs`, which outlive the call; the iovecs
    // point into the caller's slices.
    let n = unsafe {
        libc::sendmmsg(
            sock.as_raw_fd(),
            hdrs.as_mut_ptr(),
            hdrs.len() as libc::c_uint,
            0,
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}

/// Asks the kernel to stamp each datagram `sock` receives with the time it arrived
/// (`SO_TIMESTAMPNS`, `CLOCK_REALTIME`), read by [`recv_batch`]. Whether it took.
pub fn enable_rx_timestamps(sock: &UdpSocket) -> bool {
    setsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).is_ok()
}

/// Room for one `SCM_TIMESTAMPNS` control message (`CMSG_SPACE` of a `timespec`: 32 bytes on
/// 64-bit Linux), in u64s for its alignment.
const CMSG_WORDS: usize = 8;

/// Receives up to `bufs.len()` datagrams without blocking (`recvmmsg`); `lens[i]` is set to the
/// length of datagram `i` and `stamps[i]` to when it reached this host (the kernel's receive
/// timestamp, since the Unix epoch, where [`enable_rx_timestamps`] took; else `None`). Returns
/// how many arrived (0 if none was waiting).
pub fn recv_batch(
    sock: &UdpSocket,
    bufs: &mut [Vec<u8>],
    lens: &mut [usize],
    stamps: &mut [Option<std::time::Duration>],
) -> io::Result<usize> {
    let n = bufs.len().min(lens.len()).min(stamps.len());
    if n == 0 {
        return Ok(0);
    }
    let mut iovs: Vec<libc::iovec> = bufs[..n]
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect();
    let mut cmsgs = vec![[0u64; CMSG_WORDS]; n];
    let mut hdrs: Vec<libc::mmsghdr> = Vec::with_capacity(n);
    for (iov, c) in iovs.iter_mut().zip(cmsgs.iter_mut()) {
        // SAFETY: msghdr is plain old data; all-zero is a valid value, filled in below.
        let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
        h.msg_iov = iov;
        h.msg_iovlen = 1;
        h.msg_control = c.as_mut_ptr().cast();
        h.msg_controllen = std::mem::size_of_val(c);
        hdrs.push(libc::mmsghdr {
            msg_hdr: h,
            msg_len: 0,
        });
    }
    // SAFETY: headers point at iovecs over the caller's buffers and at the control buffers,
    // all live for the call.
    let r = unsafe {
        libc::recvmmsg(
            sock.as_raw_fd(),
            hdrs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    let r = r as usize;
    for i in 0..r {
        lens[i] = hdrs[i].msg_len as usize;
        stamps[i] = rx_timestamp(&hdrs[i].msg_hdr);
    }
    Ok(r)
}

/// The `SCM_TIMESTAMPNS` of a received message, if the kernel attached one.
fn rx_timestamp(h: &libc::msghdr) -> Option<std::time::Duration> {
    // SAFETY: the kernel filled `msg_control` up to `msg_controllen`; the CMSG macros walk
    // only within it, and a timestamp's data is a `timespec` (read unaligned to be safe).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return Some(std::time::Duration::new(
                    u64::try_from(ts.tv_sec).ok()?,
                    u32::try_from(ts.tv_nsec).ok()?,
                ));
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

/// `SO_MEMINFO` and the index of its drop counter (`SK_MEMINFO_DROPS`), Linux >= 4.4.
const SO_MEMINFO: i32 = 55;
const SK_MEMINFO_DROPS: usize = 8;

/// Datagrams the kernel dropped at `sock` because its receive queue was full, since the socket
/// was made (0 where the kernel does not say).
pub fn socket_drops(sock: &UdpSocket) -> u64 {
    let mut v = [0u32; 16];
    let mut len = std::mem::size_of_val(&v) as libc::socklen_t;
    // SAFETY: passes a pointer to a local array and its size; the kernel writes at most `len`.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MEMINFO,
            v.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r != 0 || (len as usize) < (SK_MEMINFO_DROPS + 1) * 4 {
        return 0;
    }
    v[SK_MEMINFO_DROPS] as u64
}

/// Whether `fd` is a terminal (for the progress bar).
pub fn is_tty(fd: RawFd) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}

/// Fills `out` with random bytes from the kernel (`getrandom`).
pub use weft_gate::auth::random_bytes;

/// `SOL_UDP` and `UDP_SEGMENT` from the Linux UAPI (`linux/udp.h`), for UDP GSO (Linux >= 4.18).
const SOL_UDP: i32 = 17;
const UDP_SEGMENT: i32 = 103;

/// Sends `segs` to `dest` as one UDP GSO super-datagram: the kernel (or the NIC) cuts it into
/// datagrams of `segs[0].len()` bytes. Every segment but the last must have that length; at most
/// 64 segments and 65000 bytes in all. Returns `Ok(false)` if the kernel does not do GSO here (the
/// caller then falls back to [`send_batch`]).
pub fn send_gso(sock: &UdpSocket, dest: SocketAddr, segs: &[&[u8]]) -> io::Result<bool> {
    let g: Vec<Gather<'_>> = segs.iter().map(|b| [*b, &[][..]]).collect();
    send_gso_gather(sock, dest, &g)
}

/// Like [`send_gso`], each segment gathered from its pieces without copying them.
pub fn send_gso_gather(
    sock: &UdpSocket,
    dest: SocketAddr,
    segs: &[Gather<'_>],
) -> io::Result<bool> {
    let Some(first) = segs.first() else {
        return Ok(true);
    };
    let seg = gather_len(first);
    let total: usize = segs.iter().map(gather_len).sum();
    if seg == 0
        || segs.len() > 64
        || total > 65_000
        || segs[..segs.len() - 1].iter().any(|s| gather_len(s) != seg)
        || segs.last().is_some_and(|s| gather_len(s) > seg)
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "segments unfit for GSO",
        ));
    }
    let (mut addr, addr_len) = sockaddr_of(&dest);
    let mut iovs: Vec<libc::iovec> = segs.iter().flat_map(iovecs).collect();
    // Room for one control message carrying a u16, 8-byte aligned.
    let mut cbuf = [0u64; 4];
    // SAFETY: msghdr is plain old data; all-zero is a valid value, filled in below.
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
    h.msg_namelen = addr_len;
    h.msg_iov = iovs.as_mut_ptr();
    h.msg_iovlen = iovs.len() as _;
    h.msg_control = cbuf.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is a pure size computation.
    h.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) } as _;
    // SAFETY: `h` points at `cbuf`, which is large enough for one u16 control message (32 bytes
    // against CMSG_SPACE(2) = 24); CMSG_FIRSTHDR returns a pointer into it, CMSG_DATA into it.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&h);
        if c.is_null() {
            return Ok(false);
        }
        (*c).cmsg_level = SOL_UDP;
        (*c).cmsg_type = UDP_SEGMENT;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg as u16);
    }
    // SAFETY: `h` and everything it points to (addr, iovs over the caller's slices, cbuf) live
    // across the call.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &h, 0) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EIO)
            | Some(libc::EINVAL)
            | Some(libc::ENOPROTOOPT)
            | Some(libc::EOPNOTSUPP) => Ok(false),
            _ => Err(e),
        };
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_connections_recover_quickly_where_the_kernel_allows() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let took = quick_tcp_recovery(&c);
        let rto = getsockopt_int(c.as_raw_fd(), libc::IPPROTO_TCP, TCP_RTO_MIN_US);
        let ack = getsockopt_int(c.as_raw_fd(), libc::IPPROTO_TCP, TCP_DELACK_MAX_US);
        eprintln!("options taken: {took}; read back {rto:?} {ack:?}");
        if took {
            // The kernel keeps them in jiffies (1-10 ms).
            let near = |got: i32, want: i32| (want..=want + 10_000).contains(&got);
            assert!(near(rto.unwrap(), CONTROL_RTO_MIN_US));
            assert!(near(ack.unwrap(), CONTROL_DELACK_MAX_US));
        } else {
            assert!(rto.is_err() || ack.is_err(), "refused, yet both read back");
        }
    }

    #[test]
    fn bulk_threads_run_below_the_network_thread() {
        let mine = thread_nice().unwrap();
        let bulk = std::thread::spawn(|| (lower_thread_priority(), thread_nice()))
            .join()
            .unwrap();
        assert_eq!(bulk, (true, Some((mine + BULK_NICENESS).min(19))));
        assert_eq!(thread_nice(), Some(mine), "only that thread");
    }

    #[test]
    fn received_datagrams_carry_the_kernels_arrival_time() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(enable_rx_timestamps(&rx));
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let wall = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
        };
        let mut bufs = vec![vec![0u8; 64]; 4];
        let (mut lens, mut stamps) = (vec![0; 4], vec![None; 4]);
        // The kernel turns arrival stamping on a moment after the first socket asks (deferred
        // work); until then a datagram is stamped when it is read. So: tries until one is
        // stamped when it arrived (on loopback, within the sender's call), not when it was
        // read 5 ms later.
        let stamped_on_arrival = (0..100).any(|_| {
            let before = wall();
            tx.send_to(b"stamped", rx.local_addr().unwrap()).unwrap();
            let sent = wall();
            std::thread::sleep(std::time::Duration::from_millis(5));
            assert_eq!(
                recv_batch(&rx, &mut bufs, &mut lens, &mut stamps).unwrap(),
                1
            );
            assert_eq!(&bufs[0][..lens[0]], b"stamped");
            let at = stamps[0].expect("every datagram carries a timestamp");
            at >= before && at <= sent
        });
        assert!(stamped_on_arrival);
    }

    #[test]
    fn socket_drops_counts_a_full_receive_queue() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        setsockopt_int(rx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, 4096).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(socket_drops(&rx), 0);
        let d = vec![0u8; 1000];
        for _ in 0..200 {
            let _ = tx.send_to(&d, rx.local_addr().unwrap());
        }
        assert!(socket_drops(&rx) > 0, "a 4 KiB queue cannot hold 200 KB");
    }

    #[test]
    fn gathered_datagrams_arrive_whole() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let dest = rx.local_addr().unwrap();
        let (h, p) = (b"head".as_slice(), vec![9u8; 996]);
        let g: Vec<Gather<'_>> = vec![[h, &p[..]], [h, &p[..]], [h, &p[..500]]];
        if !send_gso_gather(&tx, dest, &g).unwrap() {
            let m: Vec<(SocketAddr, Gather<'_>)> = g.iter().map(|x| (dest, *x)).collect();
            assert_eq!(send_batch_gather(&tx, &m).unwrap(), 3);
        }
        let m: Vec<(SocketAddr, Gather<'_>)> = vec![(dest, [h, &p[..7]])];
        assert_eq!(send_batch_gather(&tx, &m).unwrap(), 1);
        let mut buf = [0u8; 2000];
        for n in [996, 996, 500, 7] {
            let got = rx.recv(&mut buf).unwrap();
            assert_eq!(got, 4 + n);
            assert_eq!(&buf[..4], b"head");
            assert!(buf[4..got].iter().all(|b| *b == 9));
        }
    }

    #[test]
    fn gso_or_fallback_delivers_each_segment_as_a_datagram() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let dest = rx.local_addr().unwrap();
        let a = vec![1u8; 1000];
        let b = vec![2u8; 1000];
        let c = vec![3u8; 300];
        let segs: Vec<&[u8]> = vec![&a, &b, &c];
        let used_gso = send_gso(&tx, dest, &segs).unwrap();
        eprintln!("GSO used: {used_gso}");
        if !used_gso {
            let msgs: Vec<(SocketAddr, &[u8])> = segs.iter().map(|s| (dest, *s)).collect();
            assert_eq!(send_batch(&tx, &msgs).unwrap(), 3);
        }
        let mut buf = [0u8; 2000];
        for want in [&a, &b, &c] {
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &want[..]);
        }
        assert!(
            send_gso(&tx, dest, &[&c, &a]).is_err(),
            "a short segment before a long one"
        );
    }
}
