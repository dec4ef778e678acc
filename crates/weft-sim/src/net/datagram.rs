//! A UDP socket on a simulated host: an application's datagrams cut into frames of the path MTU
//! (as IP fragments them) and put back together at the receiver (as IP reassembles them), with
//! the host's machine ([`HostCpu`]) charged what [`weft_model::calc::rtt`] charges a message:
//! one call, its packets and its bytes to send, the same to receive: each frame's receive work
//! when it arrives (in the interrupt context, crossing the host's bus and adapter), the call
//! and the bytes on the application's thread once the datagram is whole.
//!
//! A datagram's number ([`weft_model::app::Tag`]) travels in its frames' `seq`. Time comes only
//! from the caller's `now`.
//!
//! A socket may have a bounded receive buffer ([`DatagramSocket::set_recv_buffer`], SO_RCVBUF):
//! a whole datagram waits there until its reader has it, and one that does not fit beside the
//! datagrams still unread when its last frame arrives is dropped, as BSD's `sbappendaddr`
//! drops it (its frames' receive work done, no read charged). So a receiver whose reads fall
//! behind its sender loses what its buffer cannot hold ([`DatagramSocket::drops`]).
//!
//! The socket also measures what an analyser on the host's link sees (the GIGAswitch study's
//! elapsed times A to D, Table 19): its host's turnaround ([`DatagramSocket::turnarounds`]),
//! from a datagram's arrival to the next datagram back to its sender, and the time the host
//! waits for a peer ([`DatagramSocket::aways`]), from a datagram sent to that peer to the next
//! one from it. An echo server's turnaround is its latency with the requests that wait for it
//! (B); an echo client's the time from an answer to its next request (C); the client's wait is
//! the round trip on its link (A), the server's the time from an echo to that client's next
//! request (D). An analyser stamps every frame at the same edge: given the host's link
//! ([`DatagramSocket::set_line`]) a frame is stamped at its first bit on that link (an arriving
//! one its serialisation before its last bit reaches the host, a departing one as it reaches
//! the adapter, the line being free); without it, as it reaches the host or the adapter, so
//! that a turnaround leaves out one frame's time on the line that the analyser counts.

use std::collections::VecDeque;

use weft_model::host::HostCpu;
use weft_model::{Duration, Instant};

use weft_model::net::{ETH_HEADER, Frame, LinkSpec};

use super::frame::SimFrame;

/// Messages being put together at once, at most (the oldest is dropped, as IP's reassembly
/// queue drops fragments that time out).
const REASSEMBLY: usize = 64;
/// Datagrams received and not yet answered that the turnaround keeps, at most (the oldest is
/// forgotten).
const UNANSWERED: usize = 1024;
/// Bytes a datagram takes in a receive buffer beside its payload: the sender's address that
/// `sbappendaddr` queues with it (a `sockaddr_in`).
pub const SOCKADDR_BYTES: u64 = 16;

/// How a datagram of `size` bytes is cut into frames of at most `mtu` bytes: the IP length of
/// each (the closed forms' arithmetic, [`weft_model::calc::udp::ip_fragments`]).
pub use weft_model::calc::udp::ip_fragments as datagrams;

/// A whole datagram received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// The sending host.
    pub from: usize,
    /// Bytes of payload.
    pub len: u64,
    /// Its number.
    pub seq: u32,
}

/// One host's UDP socket.
#[derive(Debug)]
pub struct DatagramSocket {
    host: usize,
    mtu: u32,
    /// The only host it takes datagrams from, if connected.
    peer: Option<usize>,
    cpu: Option<HostCpu>,
    /// Its reader is a daemon that selects before each read ([`HostCpu::select_read_arrived`]).
    selects: bool,
    /// Frames ready, each with when the NIC gets it.
    outbox: VecDeque<(Instant, SimFrame)>,
    /// Datagrams being put together: sender, number, payload bytes and frames so far.
    partial: VecDeque<(usize, u32, u64, u64)>,
    /// Whole datagrams in order: each with when the application has it (its read done), or,
    /// not yet read, when it arrived and whether its host was idle then (see
    /// [`DatagramSocket::recv`]).
    inbox: VecDeque<(Instant, Received, Option<bool>)>,
    /// Frames that arrived corrupted or trimmed (dropped by the checksum).
    pub corrupted: u64,
    /// Receive buffer, bytes (`None`: unbounded).
    recv_buffer: Option<u64>,
    /// Whole datagrams dropped because the receive buffer was full.
    drops: u64,
    /// Datagrams received not yet answered: the sender and when the last frame arrived.
    unanswered: VecDeque<(usize, Instant)>,
    /// Turnarounds measured: their sum, ns, and their number.
    turnarounds: (u64, u64),
    /// The host's link, on which an analyser stamps frames at their first bit.
    line: Option<LinkSpec>,
    /// Datagrams sent and not yet followed by one from their peer: the peer and when it left.
    awaited: VecDeque<(usize, Instant)>,
    /// Waits for a peer measured: their sum, ns, and their number.
    aways: (u64, u64),
}

impl DatagramSocket {
    /// A socket on host `host` sending frames of at most `mtu` bytes (IP).
    pub fn new(host: usize, mtu: u32) -> Self {
        DatagramSocket {
            host,
            mtu,
            peer: None,
            cpu: None,
            selects: false,
            outbox: VecDeque::new(),
            partial: VecDeque::new(),
            inbox: VecDeque::new(),
            corrupted: 0,
            recv_buffer: None,
            drops: 0,
            unanswered: VecDeque::new(),
            turnarounds: (0, 0),
            line: None,
            awaited: VecDeque::new(),
            aways: (0, 0),
        }
    }

    /// The host's link: an analyser on it stamps each frame at its first bit on the line
    /// (see the module's documentation).
    pub fn set_line(&mut self, link: LinkSpec) {
        self.line = Some(link);
    }

    /// When the first bit of frame `f`, whose last bit reached the host at `now`, was on the
    /// host's link: `now` less the frame's serialisation there (`now` without a line).
    fn first_bit(&self, now: Instant, f: &SimFrame) -> Instant {
        let Some(link) = &self.line else { return now };
        let on_line = link.rate.map_or(Duration::ZERO, |r| {
            r.time_to_send(weft_model::Size(link.wire_bytes(f.frame_len())))
        });
        Instant(now.0.saturating_sub(on_line.0))
    }

    /// Takes datagrams from host `peer` only, as a connected UDP socket does.
    pub fn connect(&mut self, peer: usize) {
        self.peer = Some(peer);
    }

    /// Its reader is a daemon that asks `select` which of its sockets is ready before each
    /// read (inetd's UDP echo): each datagram read pays [`weft_model::host::HostCosts::select_ns`].
    pub fn set_selects(&mut self) {
        self.selects = true;
    }

    /// Charges the host's work to `cpu` from now on.
    pub fn set_cpu(&mut self, cpu: HostCpu) {
        self.cpu = Some(cpu);
    }

    /// The host's CPU, if costs are charged.
    pub fn cpu(&self) -> Option<&HostCpu> {
        self.cpu.as_ref()
    }

    /// Bounds the receive buffer to `bytes` (SO_RCVBUF): each datagram takes its payload and
    /// [`SOCKADDR_BYTES`] there from its arrival until its reader has it.
    pub fn set_recv_buffer(&mut self, bytes: u64) {
        self.recv_buffer = Some(bytes);
    }

    /// Whole datagrams dropped because the receive buffer was full.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// A send call at `now` of a datagram of `len` bytes numbered `seq` to host `to`: its
    /// frames go to the NIC together once the call's work is done. Returns when the call
    /// returns (its work on the host's CPU done; `now` without costs).
    pub fn send(&mut self, now: Instant, to: usize, len: u64, seq: u32) -> Instant {
        let parts = datagrams(len, self.mtu);
        // The call and the bytes, then each frame's work and its way to the adapter; the frames
        // leave together, as IP hands a fragmented datagram's fragments to the driver at once.
        let (ready, returned) = match &mut self.cpu {
            Some(cpu) => {
                let mut t = cpu.write(now, len, true);
                for &ip_len in &parts {
                    t = cpu.transmit(t, u64::from(ip_len) + ETH_HEADER as u64);
                }
                (t, cpu.busy_until().max(now))
            }
            None => (now, now),
        };
        for ip_len in parts {
            let f = SimFrame::fragment(self.host, to, ip_len, seq, ready.0, len);
            self.outbox.push_back((ready, f));
        }
        // The earliest datagram from `to` not yet answered is answered by this one.
        if let Some(k) = self.unanswered.iter().position(|u| u.0 == to) {
            if let Some((_, at)) = self.unanswered.remove(k) {
                self.turnarounds.0 += ready.saturating_duration_since(at).as_nanos();
                self.turnarounds.1 += 1;
            }
        }
        // This host now waits for `to`: from this datagram's departure to the next from it.
        if !self.awaited.iter().any(|w| w.0 == to) {
            if self.awaited.len() == UNANSWERED {
                self.awaited.pop_front();
            }
            self.awaited.push_back((to, ready));
        }
        returned
    }

    /// Waits for a peer measured so far and their sum: each the time from a datagram leaving
    /// for a peer (reaching the adapter) to the next datagram from that peer arriving, as the
    /// turnarounds stamp it.
    pub fn aways(&self) -> (u64, Duration) {
        (self.aways.1, Duration(self.aways.0))
    }

    /// Turnarounds measured so far and their sum: each the time from a datagram's arrival (its
    /// last frame reaching the host, or that frame's first bit on the host's link if the socket
    /// has one) to the next datagram back to its sender reaching the adapter.
    pub fn turnarounds(&self) -> (u64, Duration) {
        (self.turnarounds.1, Duration(self.turnarounds.0))
    }

    /// A frame reaches the host at `now`: a datagram whose last frame it is joins the inbox
    /// once its receive work is done. False if the frame is not for this socket.
    pub fn deliver(&mut self, now: Instant, f: &SimFrame) -> bool {
        if f.segment().is_some()
            || f.dst as usize != self.host
            || self.peer.is_some_and(|p| p != f.src as usize)
        {
            return false;
        }
        if !f.checksum_ok() {
            self.corrupted += 1;
            return true;
        }
        // The frame's receive work, whether or not its datagram will be whole; whether the
        // host had other work when it came in decides how its reader is woken.
        let (arrived, idle) = match &mut self.cpu {
            Some(cpu) => {
                let idle = cpu.idle(now);
                (cpu.arrive(now, u64::from(f.len)), idle)
            }
            None => (now, true),
        };
        let (from, seq) = (f.src as usize, f.seq);
        let k = self.partial.iter().position(|p| p.0 == from && p.1 == seq);
        let (mut got, mut parts) = k
            .and_then(|k| self.partial.remove(k))
            .map_or((0, 0), |p| (p.2, p.3));
        got += u64::from(f.payload());
        parts += 1;
        let len = u64::from(f.message);
        if got < len {
            if self.partial.len() == REASSEMBLY {
                self.partial.pop_front();
            }
            self.partial.push_back((from, seq, got, parts));
            return true;
        }
        // Held against the datagrams not yet read, or whose read has not ended, when its last
        // frame comes off the wire (the interrupt runs then, ahead of the reader's work).
        if let Some(cap) = self.recv_buffer {
            let held: u64 = self
                .inbox
                .iter()
                .filter(|(t, _, unread)| unread.is_some() || *t > now)
                .map(|(_, r, _)| r.len + SOCKADDR_BYTES)
                .sum();
            if held + len + SOCKADDR_BYTES > cap {
                self.drops += 1;
                return true;
            }
        }
        let received = Received { from, len, seq };
        match self.cpu {
            Some(_) => self.inbox.push_back((arrived, received, Some(idle))),
            None => self.inbox.push_back((now, received, None)),
        }
        let stamp = self.first_bit(now, f);
        if self.unanswered.len() == UNANSWERED {
            self.unanswered.pop_front();
        }
        self.unanswered.push_back((from, stamp));
        if let Some(k) = self.awaited.iter().position(|w| w.0 == from) {
            if let Some((_, left)) = self.awaited.remove(k) {
                self.aways.0 += stamp.saturating_duration_since(left).as_nanos();
                self.aways.1 += 1;
            }
        }
        true
    }

    /// The next whole datagram the application has by `now`, with when it had it. The
    /// application reads one datagram at a time: the read of the first not yet read is charged
    /// to the host once the datagram has arrived and the one before it has been taken (so that
    /// what the application does with that one, its answer, is charged before the next read,
    /// as a server reads a request, answers it and only then reads the next); it is charged as
    /// of the datagram's arrival, so a thread still busy then finds it waiting and is not
    /// woken.
    pub fn recv(&mut self, now: Instant) -> Option<(Instant, Received)> {
        let (t, r, unread) = *self.inbox.front()?;
        if t > now {
            return None;
        }
        if let (Some(idle), Some(cpu)) = (unread, &mut self.cpu) {
            let at = if self.selects {
                cpu.select_read_arrived(t, r.len, idle)
            } else {
                cpu.read_arrived(t, r.len, idle)
            };
            if let Some(front) = self.inbox.front_mut() {
                *front = (at, r, None);
            }
            if at > now {
                return None;
            }
        }
        self.inbox.pop_front().map(|(t, r, _)| (t, r))
    }

    /// The next frame for the NIC at `now`, with the instant the NIC got it.
    pub fn pop_frame(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        let &(t, _) = self.outbox.front()?;
        if t > now {
            return None;
        }
        self.outbox.pop_front()
    }

    /// The earliest instant the socket has work: a frame for the NIC or a datagram for the
    /// application.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.outbox.front().map(|x| x.0),
            self.inbox.front().map(|x| x.0),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_is_whole_once_its_last_frame_arrives() {
        let mut a = DatagramSocket::new(0, 1500);
        let mut b = DatagramSocket::new(1, 1500);
        a.send(Instant(5), 1, 3000, 7);
        let frames: Vec<_> = std::iter::from_fn(|| a.pop_frame(Instant(5))).collect();
        assert_eq!(frames.len(), 3);
        for (i, (_, f)) in frames.iter().enumerate() {
            assert!(b.deliver(Instant(10 + i as u64), f));
            let whole = b.recv(Instant(100));
            assert_eq!(whole.is_some(), i == 2, "{i}");
            if let Some((t, r)) = whole {
                assert_eq!(
                    (t, r),
                    (
                        Instant(12),
                        Received {
                            from: 0,
                            len: 3000,
                            seq: 7
                        }
                    )
                );
            }
        }
        // Not for host 0.
        assert!(!a.deliver(Instant(20), &frames[0].1));
    }

    /// A socket read by a daemon charges its select before the read; a plain one does not.
    /// Without the flag both datagrams would be read at the same instant.
    #[test]
    fn a_selecting_reader_pays_its_select() {
        use weft_model::host::HostCosts;
        let costs = HostCosts {
            recv_call_ns: 1000.0,
            select_ns: 4000.0,
            ..HostCosts::FREE
        };
        let mut a = DatagramSocket::new(0, 1500);
        a.send(Instant(0), 1, 64, 1);
        let (_, f) = a.pop_frame(Instant(0)).unwrap();
        let mut plain = DatagramSocket::new(1, 1500);
        plain.set_cpu(HostCpu::new(costs.clone()));
        let mut daemon = DatagramSocket::new(1, 1500);
        daemon.set_cpu(HostCpu::new(costs));
        daemon.set_selects();
        assert!(plain.deliver(Instant(10_000), &f));
        assert!(daemon.deliver(Instant(10_000), &f));
        assert_eq!(plain.recv(Instant(99_000)).unwrap().0, Instant(11_000));
        assert_eq!(daemon.recv(Instant(99_000)).unwrap().0, Instant(15_000));
    }

    /// The application reads one datagram at a time: the second of two requests that arrive
    /// together is read after the answer to the first is written, as a server reads, answers
    /// and reads again. Charging each read when its datagram arrives (both reads before the
    /// answer) would hand the answer to the adapter at 12.5 us, not 11.5.
    #[test]
    fn a_datagram_is_read_after_the_answer_to_the_one_before() {
        use weft_model::host::HostCosts;
        let costs = HostCosts {
            recv_call_ns: 1000.0,
            send_call_ns: 500.0,
            ..HostCosts::FREE
        };
        let mut server = DatagramSocket::new(0, 1500);
        server.set_cpu(HostCpu::new(costs));
        for host in [1, 2] {
            let mut c = DatagramSocket::new(host, 1500);
            c.send(Instant(0), 0, 64, 1);
            let (_, f) = c.pop_frame(Instant(0)).unwrap();
            assert!(server.deliver(Instant(10_000), &f));
        }
        assert_eq!(server.recv(Instant(10_000)), None);
        assert_eq!(server.poll_timeout(), Some(Instant(11_000)));
        let (t, first) = server.recv(Instant(11_000)).unwrap();
        assert_eq!((t, first.from), (Instant(11_000), 1));
        server.send(Instant(11_000), 1, 64, 1);
        assert_eq!(server.recv(Instant(11_000)), None);
        assert_eq!(
            server.pop_frame(Instant(11_500)).unwrap().0,
            Instant(11_500)
        );
        let (t, second) = server.recv(Instant(12_500)).unwrap();
        assert_eq!((t, second.from), (Instant(12_500), 2));
    }

    /// A reader that takes 1 ms a datagram, sent one every 100 us: its 3,048-byte buffer holds
    /// three 1000-byte datagrams (each with its sender's address), so the fourth and the rest,
    /// arriving while those three are unread, are dropped. Without the bound (or with the
    /// check removed) all ten are kept, to be read over 10 ms.
    #[test]
    fn a_full_receive_buffer_drops_what_the_reader_has_not_made_room_for() {
        use weft_model::host::HostCosts;
        let slow = HostCosts {
            recv_call_ns: 1e6,
            ..HostCosts::FREE
        };
        let run = |bound: Option<u64>| {
            let mut tx = DatagramSocket::new(0, 1500);
            let mut rx = DatagramSocket::new(1, 1500);
            rx.set_cpu(HostCpu::new(slow.clone()));
            if let Some(b) = bound {
                rx.set_recv_buffer(b);
            }
            for k in 0..10u64 {
                let t = Instant(k * 100_000);
                tx.send(t, 1, 1000, k as u32);
                let (_, f) = tx.pop_frame(t).unwrap();
                assert!(rx.deliver(t, &f));
            }
            let read = std::iter::from_fn(|| rx.recv(Instant(u64::MAX))).count();
            (read, rx.drops())
        };
        assert_eq!(run(Some(3 * (1000 + SOCKADDR_BYTES))), (3, 7));
        assert_eq!(run(None), (10, 0));
    }

    /// A send call returns once its work on the host's CPU is done: 1 ms for the call, 1 us a
    /// byte for 100 bytes.
    #[test]
    fn a_send_returns_when_its_work_is_done() {
        use weft_model::host::HostCosts;
        let mut tx = DatagramSocket::new(0, 1500);
        assert_eq!(tx.send(Instant(7), 1, 100, 0), Instant(7));
        tx.set_cpu(HostCpu::new(HostCosts {
            send_call_ns: 1e6,
            send_other_ns_per_byte: 1000.0,
            ..HostCosts::FREE
        }));
        assert_eq!(tx.send(Instant(0), 1, 100, 1), Instant(1_100_000));
    }

    /// A server's turnaround runs from a request's arrival to the answer to its sender: the
    /// answer's CPU work and its wait behind the other requests included, each answer paired
    /// with the earliest request of its own sender. Pairing it with the earliest request of
    /// any sender would give 2 us for the first answer here, and without the measure there is
    /// nothing to count.
    #[test]
    fn the_turnaround_pairs_each_answer_with_its_request() {
        let mut server = DatagramSocket::new(0, 1500);
        let mut one = DatagramSocket::new(1, 1500);
        let mut two = DatagramSocket::new(2, 1500);
        one.send(Instant(0), 0, 64, 1);
        two.send(Instant(0), 0, 64, 1);
        let (_, f1) = one.pop_frame(Instant(0)).unwrap();
        let (_, f2) = two.pop_frame(Instant(0)).unwrap();
        assert!(server.deliver(Instant(1000), &f1));
        assert!(server.deliver(Instant(2000), &f2));
        assert_eq!(server.turnarounds(), (0, Duration(0)));
        // Host 2 answered first, at 3 us: 1 us after its request.
        server.send(Instant(3000), 2, 64, 1);
        assert_eq!(server.turnarounds(), (1, Duration(1000)));
        // Then host 1 at 5 us: 4 us after its own.
        server.send(Instant(5000), 1, 64, 1);
        assert_eq!(server.turnarounds(), (2, Duration(5000)));
        // A datagram to a host that sent nothing answers nothing.
        server.send(Instant(6000), 3, 64, 1);
        assert_eq!(server.turnarounds().0, 2);
    }

    /// An analyser on the host's link stamps every frame at its first bit: given its line (8
    /// Mbit/s here, 1 us a byte), the client's wait (A) runs from its request leaving to the
    /// answer's first bit, its turnaround (C) from that first bit to its next request leaving.
    /// Without the line both are stamped as the answer's last bit reaches the host (600 us):
    /// the wait 600 us, the turnaround 100 us.
    #[test]
    fn an_analyser_on_the_line_stamps_frames_at_their_first_bit() {
        use weft_model::Rate;
        let link = LinkSpec::ethernet(Some(Rate(8_000_000)), Duration::ZERO);
        let run = |line: Option<&LinkSpec>| {
            let mut client = DatagramSocket::new(0, 1500);
            if let Some(l) = line {
                client.set_line(l.clone());
            }
            let mut server = DatagramSocket::new(1, 1500);
            client.send(Instant(0), 1, 64, 1);
            server.send(Instant(500_000), 0, 64, 1);
            let (_, answer) = server.pop_frame(Instant(500_000)).unwrap();
            assert!(client.deliver(Instant(600_000), &answer));
            assert_eq!(client.aways().0, 1);
            client.send(Instant(700_000), 1, 64, 2);
            (
                answer.frame_len(),
                client.aways().1.as_nanos(),
                client.turnarounds(),
            )
        };
        let (len, wait, turn) = run(Some(&link));
        let on_line = link.wire_bytes(len) * 1000;
        assert!(on_line > 64_000, "{on_line}");
        assert_eq!(wait, 600_000 - on_line);
        assert_eq!(turn, (1, Duration(100_000 + on_line)));
        let (_, wait, turn) = run(None);
        assert_eq!((wait, turn), (600_000, (1, Duration(100_000))));
    }
}
