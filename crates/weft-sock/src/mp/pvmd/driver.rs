//! The daemon with real sockets: a thread that feeds [`DaemonCore`] from its rank's TCP
//! connection and its UDP socket, with the clock, and writes what the core says.
//!
//! Set-up: [`Daemon::bind`] opens the UDP socket (on the address other daemons reach) and a
//! loopback listener for the rank; the addresses go into the roster; [`Daemon::start`] gives it
//! the other daemons' addresses and runs it on a thread until its rank has said goodbye and
//! everything is acknowledged, or a peer is given up (then the rank gets an `abort` frame from
//! that peer, naming it).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use weft_model::{Duration, Instant};

use super::core::{CoreConfig, DaemonCore, DaemonStats};
use super::packet::PacketHeader;
use crate::mp::error::MpError;
use crate::mp::wire::{self, Header, Kind};

/// Bytes read from the rank per call.
const TASK_READ: usize = 256 * 1024;

/// UDP socket buffers requested, bytes.
const UDP_BUFFER: usize = 4 << 20;

/// How long a quiet daemon sleeps in `poll` at most.
const POLL_SLICE: StdDuration = StdDuration::from_millis(50);

/// How long the daemon lingers for acknowledgements after its rank left.
const LINGER: StdDuration = StdDuration::from_secs(2);

/// A bound daemon, not yet running.
#[derive(Debug)]
pub struct Daemon {
    cfg: CoreConfig,
    udp: UdpSocket,
    task: TcpListener,
    spin: StdDuration,
}

/// A running daemon.
#[derive(Debug)]
pub struct DaemonHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<DaemonStats, MpError>>>,
}

impl Daemon {
    /// Binds the UDP socket on `ip` (port 0) and the rank's listener on loopback.
    pub fn bind(ip: IpAddr, cfg: CoreConfig, spin: StdDuration) -> Result<Daemon, MpError> {
        let udp = UdpSocket::bind(SocketAddr::new(ip, 0))
            .map_err(|e| MpError::io("binding the daemon's UDP socket", e))?;
        let r = socket2::SockRef::from(&udp);
        let _ = r.set_recv_buffer_size(UDP_BUFFER);
        let _ = r.set_send_buffer_size(UDP_BUFFER);
        let task = TcpListener::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))
            .map_err(|e| MpError::io("binding the daemon's rank listener", e))?;
        Ok(Daemon {
            cfg,
            udp,
            task,
            spin,
        })
    }

    /// The UDP address other daemons send to.
    pub fn udp_addr(&self) -> Result<SocketAddr, MpError> {
        self.udp
            .local_addr()
            .map_err(|e| MpError::io("reading the daemon's address", e))
    }

    /// The address the rank connects to.
    pub fn task_addr(&self) -> Result<SocketAddr, MpError> {
        self.task
            .local_addr()
            .map_err(|e| MpError::io("reading the daemon's address", e))
    }

    /// Runs the daemon on a thread, with `peers[r]` the UDP address of rank `r`'s daemon, in the
    /// run of `token` ([`run_token`]). The rank must connect within `accept_within`.
    pub fn start(
        mut self,
        peers: Vec<SocketAddr>,
        accept_within: StdDuration,
        token: u64,
    ) -> Result<DaemonHandle, MpError> {
        self.cfg.token = token;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("weft-pvmd-{}", self.cfg.me))
            .spawn(move || self.run(&peers, accept_within, &stop2))
            .map_err(|e| MpError::io("starting the daemon thread", e))?;
        Ok(DaemonHandle {
            stop,
            thread: Some(thread),
        })
    }

    fn run(
        self,
        peers: &[SocketAddr],
        accept_within: StdDuration,
        stop: &AtomicBool,
    ) -> Result<DaemonStats, MpError> {
        let mut task = accept(&self.task, accept_within, stop)?;
        task.set_nonblocking(true)
            .and_then(|()| task.set_nodelay(true))
            .and_then(|()| self.udp.set_nonblocking(true))
            .map_err(|e| MpError::io("preparing the daemon's sockets", e))?;
        let start = StdInstant::now();
        let clock = || Instant(start.elapsed().as_nanos() as u64);
        let mut core = DaemonCore::new(self.cfg);
        let mut inbuf = vec![0u8; TASK_READ];
        let (mut in_lo, mut in_hi) = (0usize, 0usize);
        let mut dgram = vec![0u8; 65_536];
        let mut task_open = true;
        let mut left_at: Option<StdInstant> = None;
        let mut idle_since: Option<StdInstant> = None;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let mut moved = false;
            // Rank -> core.
            if task_open {
                if in_hi == inbuf.len() && in_lo > 0 {
                    inbuf.copy_within(in_lo..in_hi, 0);
                    in_hi -= in_lo;
                    in_lo = 0;
                }
                if in_hi < inbuf.len() {
                    match task.read(&mut inbuf[in_hi..]) {
                        Ok(0) => {
                            task_open = false;
                            left_at = Some(StdInstant::now());
                        }
                        Ok(n) => {
                            in_hi += n;
                            moved = true;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => {
                            task_open = false;
                            left_at = Some(StdInstant::now());
                        }
                    }
                }
                let used = core
                    .task_input(&inbuf[in_lo..in_hi])
                    .map_err(|e| MpError::Mismatch(format!("daemon {}: {e}", self.cfg.me)))?;
                in_lo += used;
                if in_lo == in_hi {
                    in_lo = 0;
                    in_hi = 0;
                }
                moved |= used > 0;
            }
            // Peers -> core.
            loop {
                match self.udp.recv_from(&mut dgram) {
                    Ok((n, from)) => {
                        // The roster: rank r's packets come from rank r's daemon, nowhere else
                        // (the token keeps other runs out, this a forger who learnt it).
                        let from_roster = PacketHeader::parse(&dgram[..n]).is_ok_and(|(h, _)| {
                            peers.get(usize::from(h.src)).is_some_and(|p| {
                                p.ip().to_canonical() == from.ip().to_canonical()
                                    && p.port() == from.port()
                            })
                        });
                        if from_roster {
                            let _ = core.handle_datagram(clock(), &dgram[..n]);
                        }
                        moved = true;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let now = clock();
            core.handle_timeout(now);
            // Core -> peers.
            while let Some((peer, pkt)) = core.poll_transmit(now) {
                if let Some(addr) = peers.get(peer) {
                    // A datagram the kernel refuses (buffer full) is lost like any other and
                    // comes again after the retransmission time-out.
                    let _ = self.udp.send_to(&pkt, addr);
                }
                moved = true;
            }
            // Core -> rank.
            if task_open && !core.task_output().is_empty() {
                match task.write(core.task_output()) {
                    Ok(n) => {
                        core.task_written(n);
                        moved |= n > 0;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => task_open = false,
                }
            }
            if let Some((peer, why)) = core.failed().cloned() {
                let reason: Vec<u8> = why.bytes().take(wire::MAX_CONTROL as usize).collect();
                let mut f = Header::control(
                    Kind::Abort,
                    peer as u16,
                    self.cfg.me as u16,
                    reason.len() as u32,
                )
                .emit()
                .to_vec();
                f.extend_from_slice(&reason);
                let _ = task.set_nonblocking(false);
                let _ = task.set_write_timeout(Some(StdDuration::from_secs(1)));
                let _ = task.write_all(core.task_output());
                let _ = task.write_all(&f);
                return Err(MpError::Interrupted(why));
            }
            if !task_open && (core.quiet() || left_at.is_some_and(|t| t.elapsed() > LINGER)) {
                break;
            }
            if moved {
                idle_since = None;
                continue;
            }
            let idle = *idle_since.get_or_insert_with(StdInstant::now);
            if idle.elapsed() < self.spin {
                std::hint::spin_loop();
                continue;
            }
            let wake = core
                .poll_timeout()
                .map(|t| StdDuration::from_nanos(t.saturating_duration_since(clock()).as_nanos()))
                .unwrap_or(POLL_SLICE)
                .min(POLL_SLICE);
            sleep(
                &task,
                &self.udp,
                !core.task_output().is_empty(),
                task_open,
                wake,
            );
        }
        Ok(core.stats())
    }
}

impl DaemonHandle {
    /// Stops the daemon (if it still runs) and returns what it did.
    pub fn join(mut self) -> Result<DaemonStats, MpError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(MpError::Interrupted("the daemon thread panicked".into())),
            None => Ok(DaemonStats::default()),
        }
    }

    /// Waits for the daemon to end by itself, at most `t`, then stops it.
    pub fn wait(self, t: StdDuration) -> Result<DaemonStats, MpError> {
        let until = StdInstant::now() + t;
        while self.thread.as_ref().is_some_and(|h| !h.is_finished()) && StdInstant::now() < until {
            std::thread::sleep(StdDuration::from_millis(2));
        }
        self.join()
    }
}

impl Drop for DaemonHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The token of a run: 64 bits mixed from the secret cookies of all its ranks' tests (random,
/// drawn by their agents, known only to the run's coordinator and ranks), the same at every
/// rank.
pub fn run_token(cookies: &[[u8; 16]]) -> u64 {
    // FNV-1a over the cookies, then a final mix (splitmix64): no cryptographic strength is
    // needed, only that the token is as unpredictable as the cookies it comes from.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in cookies.iter().flatten() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

fn accept(l: &TcpListener, within: StdDuration, stop: &AtomicBool) -> Result<TcpStream, MpError> {
    l.set_nonblocking(true)
        .map_err(|e| MpError::io("preparing the daemon listener", e))?;
    let until = StdInstant::now() + within;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)
                    .map_err(|e| MpError::io("accepting the rank", e))?;
                return Ok(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if StdInstant::now() >= until || stop.load(Ordering::Relaxed) {
                    return Err(MpError::Timeout {
                        secs: within.as_secs_f64(),
                        waiting: " while the daemon waited for its rank".into(),
                    });
                }
                std::thread::sleep(StdDuration::from_millis(1));
            }
            Err(e) => return Err(MpError::io("accepting the rank", e)),
        }
    }
}

fn sleep(task: &TcpStream, udp: &UdpSocket, want_write: bool, task_open: bool, t: StdDuration) {
    let mut fds = vec![libc::pollfd {
        fd: udp.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    if task_open {
        fds.push(libc::pollfd {
            fd: task.as_raw_fd(),
            events: libc::POLLIN | if want_write { libc::POLLOUT } else { 0 },
            revents: 0,
        });
    }
    // 1 ms to 1 s; errors only mean an early wake-up, after which the loop looks again.
    let ns = t.as_nanos().clamp(1_000_000, 1_000_000_000) as u64;
    let _ = weft_sys::ppoll_readable(&mut fds, Some(ns));
}

/// Converts a run time-out into the daemon's give-up time.
pub fn give_up(timeout: StdDuration) -> Duration {
    Duration(timeout.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A datagram of the run (the right token, from rank 0, to rank 1) carrying one message.
    fn datagram(token: u64) -> Vec<u8> {
        let cfg = CoreConfig {
            me: 0,
            ranks: 2,
            fragment: 2048,
            window: 4,
            give_up: Duration::from_secs(5),
            token,
        };
        let mut core = DaemonCore::new(cfg);
        let mut m = Header::data(0, 1, 0, 100).emit().to_vec();
        m.extend((0..100u8).map(|i| i ^ 0x5a));
        core.task_input(&m).unwrap();
        core.poll_transmit(Instant(1)).unwrap().1
    }

    /// Bytes the rank reads within `t`.
    fn read_for(rank: &mut TcpStream, t: StdDuration) -> usize {
        rank.set_read_timeout(Some(t)).unwrap();
        let mut buf = [0u8; 4096];
        rank.read(&mut buf).unwrap_or(0)
    }

    #[test]
    fn a_forger_who_knows_the_token_but_is_not_in_the_roster_is_not_heard() {
        let token = run_token(&[[7; 16], [9; 16]]);
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        // Rank 0's daemon is played by `legit`; the forger sends the very same datagram from
        // another socket (another port of the same host).
        let legit = UdpSocket::bind((lo, 0)).unwrap();
        let forger = UdpSocket::bind((lo, 0)).unwrap();
        let cfg = CoreConfig {
            me: 1,
            ranks: 2,
            fragment: 2048,
            window: 4,
            give_up: Duration::from_secs(5),
            token: 0,
        };
        let d = Daemon::bind(lo, cfg, StdDuration::ZERO).unwrap();
        let (me, task) = (d.udp_addr().unwrap(), d.task_addr().unwrap());
        let peers = vec![legit.local_addr().unwrap(), me];
        let h = d.start(peers, StdDuration::from_secs(5), token).unwrap();
        let mut rank = TcpStream::connect(task).unwrap();
        let pkt = datagram(token);
        forger.send_to(&pkt, me).unwrap();
        assert_eq!(
            read_for(&mut rank, StdDuration::from_millis(300)),
            0,
            "a datagram from outside the roster reached the rank"
        );
        legit.send_to(&pkt, me).unwrap();
        assert!(
            read_for(&mut rank, StdDuration::from_secs(5)) > 0,
            "the same datagram from rank 0's daemon is delivered"
        );
        drop(rank);
        drop(h);
    }
}
