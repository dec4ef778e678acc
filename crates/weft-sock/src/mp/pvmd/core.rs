//! The daemon's protocol, sans IO: it takes its rank's frames (from the task connection) and
//! datagrams (from other daemons) with the current time, and says what to send, what to hand to
//! its rank, and when it next needs the clock.
//!
//! As PVM's pvmd did (PVM 3 book, section 7.5.2): messages are cut into fragments of at most
//! [`CoreConfig::fragment`] bytes per datagram; each peer link numbers its data packets, keeps at
//! most [`CoreConfig::window`] of them unacknowledged (PVM's `nopax`), retransmits the oldest
//! after `3 × srtt` (doubling per retry, capped at 18 s) and gives up on the peer when a packet
//! stays unacknowledged for the run's time-out (PVM: three minutes). Received packets are
//! handed to the rank in order; a few out-of-order ones (up to the window) wait.
//!
//! Buffers are bounded: a link queues at most [`TXQ_MAX`] packets before the daemon stops
//! reading its rank's connection (TCP then holds the rank back), and at most [`TO_TASK_MAX`]
//! bytes wait for the rank to read them; a data packet that finds that full is dropped unacked
//! and comes again.
//!
//! Call order per turn: [`DaemonCore::task_input`] and [`DaemonCore::handle_datagram`] with what
//! arrived, [`DaemonCore::handle_timeout`], then [`DaemonCore::poll_transmit`] until `None`,
//! [`DaemonCore::task_output`] / [`DaemonCore::task_written`], and sleep until
//! [`DaemonCore::poll_timeout`].

use std::collections::{BTreeMap, VecDeque};

use weft_model::{Duration, Instant};

use super::packet::{ACK, DAT, HEADER_LEN, PacketError, PacketHeader};
use crate::mp::wire::{self, Header, Kind};

/// Packets a link queues before the daemon stops reading its rank's connection.
pub const TXQ_MAX: usize = 256;

/// Bytes waiting for the rank to read before data packets are dropped.
pub const TO_TASK_MAX: usize = 4 << 20;

/// Smallest retransmission time-out.
const RTO_MIN: Duration = Duration::from_millis(1);

/// Retransmission time-out before the first round-trip sample.
const RTO_INIT: Duration = Duration::from_millis(10);

/// Largest retransmission time-out (PVM's 18 s).
const RTO_MAX: Duration = Duration::from_secs(18);

/// How a daemon runs.
#[derive(Clone, Copy, Debug)]
pub struct CoreConfig {
    /// This daemon's rank.
    pub me: usize,
    /// Ranks (daemons) in the run.
    pub ranks: usize,
    /// Largest datagram, bytes.
    pub fragment: usize,
    /// Unacknowledged packets per link.
    pub window: usize,
    /// Give up on a peer whose daemon leaves a packet unacknowledged this long.
    pub give_up: Duration,
    /// The run's token ([`super::packet`]): packets without it are not the run's.
    pub token: u64,
}

/// What a daemon did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DaemonStats {
    /// Data packets sent (first transmissions).
    pub packets_sent: u64,
    /// Data packets sent again.
    pub retransmits: u64,
    /// Data packets handed to the rank.
    pub packets_delivered: u64,
    /// Datagrams that were not daemon packets for this run.
    pub ignored: u64,
    /// Data packets dropped because the rank was not reading.
    pub dropped_full: u64,
}

#[derive(Debug)]
struct Sent {
    seq: u32,
    pkt: Vec<u8>,
    first_sent: Instant,
    retransmitted: bool,
}

#[derive(Debug)]
struct Link {
    next_seq: u32,
    txq: VecDeque<Vec<u8>>,
    unacked: VecDeque<Sent>,
    resend: bool,
    rx_next: u32,
    ooo: BTreeMap<u32, Vec<u8>>,
    ack_due: bool,
    srtt: Option<u64>,
    rto: Duration,
    deadline: Option<Instant>,
}

impl Link {
    fn new() -> Link {
        Link {
            next_seq: 0,
            txq: VecDeque::new(),
            unacked: VecDeque::new(),
            resend: false,
            rx_next: 0,
            ooo: BTreeMap::new(),
            ack_due: false,
            srtt: None,
            rto: RTO_INIT,
            deadline: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum TaskIn {
    Header,
    Data { hdr: Header, done: usize },
}

/// The protocol state of one daemon.
#[derive(Debug)]
pub struct DaemonCore {
    cfg: CoreConfig,
    links: Vec<Link>,
    task: TaskIn,
    to_task: Vec<u8>,
    to_task_lo: usize,
    failed: Option<(usize, String)>,
    next_link: usize,
    stats: DaemonStats,
}

impl DaemonCore {
    /// A daemon with nothing queued.
    pub fn new(cfg: CoreConfig) -> DaemonCore {
        DaemonCore {
            cfg,
            links: (0..cfg.ranks).map(|_| Link::new()).collect(),
            task: TaskIn::Header,
            to_task: Vec::new(),
            to_task_lo: 0,
            failed: None,
            next_link: 0,
            stats: DaemonStats::default(),
        }
    }

    /// What the daemon did so far.
    pub fn stats(&self) -> DaemonStats {
        self.stats
    }

    /// The peer given up on, and why.
    pub fn failed(&self) -> Option<&(usize, String)> {
        self.failed.as_ref()
    }

    /// Whether nothing waits to be sent, acknowledged or read.
    pub fn quiet(&self) -> bool {
        self.to_task_lo == self.to_task.len()
            && self
                .links
                .iter()
                .all(|l| l.txq.is_empty() && l.unacked.is_empty() && !l.ack_due)
    }

    fn max_chunk(&self) -> usize {
        self.cfg
            .fragment
            .saturating_sub(HEADER_LEN + wire::HEADER_LEN)
            .max(1)
    }

    /// Takes frames from the rank's stream (`data`, whatever has arrived and was not consumed
    /// before) and cuts them into packets; returns how many bytes it consumed. It consumes
    /// whole fragments only, and nothing for a link whose queue is full. A frame that is not
    /// from this rank, or garbage, is an error: the rank's own connection broke the protocol.
    pub fn task_input(&mut self, data: &[u8]) -> Result<usize, String> {
        let mut used = 0;
        loop {
            match self.task {
                TaskIn::Header => {
                    let Some(head) = data.get(used..used + wire::HEADER_LEN) else {
                        return Ok(used);
                    };
                    let hdr = Header::parse(head).map_err(|e| e.to_string())?;
                    let dst = hdr.dst as usize;
                    if hdr.src as usize != self.cfg.me
                        || dst >= self.cfg.ranks
                        || dst == self.cfg.me
                    {
                        return Err(format!(
                            "rank {} sent its daemon a frame from {} to {}",
                            self.cfg.me, hdr.src, hdr.dst
                        ));
                    }
                    if self.links[dst].txq.len() >= TXQ_MAX {
                        return Ok(used);
                    }
                    if hdr.kind == Kind::Data {
                        used += wire::HEADER_LEN;
                        self.task = TaskIn::Data { hdr, done: 0 };
                        continue;
                    }
                    let end = used + wire::HEADER_LEN + hdr.len as usize;
                    let Some(frame) = data.get(used..end) else {
                        return Ok(used);
                    };
                    self.queue_packet(dst, frame);
                    used = end;
                }
                TaskIn::Data { hdr, done } => {
                    let dst = hdr.dst as usize;
                    let take = (hdr.len as usize - done).min(self.max_chunk());
                    if self.links[dst].txq.len() >= TXQ_MAX {
                        return Ok(used);
                    }
                    let Some(body) = data.get(used..used + take) else {
                        return Ok(used);
                    };
                    let chunk = Header {
                        offset: hdr.offset + done as u32,
                        len: take as u32,
                        ..hdr
                    };
                    let mut frame = Vec::with_capacity(wire::HEADER_LEN + take);
                    frame.extend_from_slice(&chunk.emit());
                    frame.extend_from_slice(body);
                    self.queue_packet(dst, &frame);
                    used += take;
                    let done = done + take;
                    self.task = if done == hdr.len as usize {
                        TaskIn::Header
                    } else {
                        TaskIn::Data { hdr, done }
                    };
                }
            }
        }
    }

    fn queue_packet(&mut self, dst: usize, frame: &[u8]) {
        let link = &mut self.links[dst];
        let mut pkt = vec![0u8; HEADER_LEN + frame.len()];
        PacketHeader {
            flags: DAT,
            src: self.cfg.me as u16,
            dst: dst as u16,
            seq: link.next_seq,
            ack: 0,
            token: self.cfg.token,
        }
        .emit_into(&mut pkt);
        pkt[HEADER_LEN..].copy_from_slice(frame);
        link.next_seq = link.next_seq.wrapping_add(1);
        link.txq.push_back(pkt);
    }

    /// Takes a datagram from another daemon. Anything that is not a packet of this run is
    /// counted and ignored (the UDP port is open to anyone).
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> Result<(), PacketError> {
        let parsed = PacketHeader::parse(bytes);
        let (h, payload) = match parsed {
            Ok((h, p))
                if h.token == self.cfg.token
                    && h.dst as usize == self.cfg.me
                    && (h.src as usize) < self.cfg.ranks
                    && h.src as usize != self.cfg.me =>
            {
                (h, p)
            }
            Ok(_) => {
                self.stats.ignored += 1;
                return Ok(());
            }
            Err(e) => {
                self.stats.ignored += 1;
                return Err(e);
            }
        };
        let src = h.src as usize;
        if h.flags & ACK != 0 {
            self.on_ack(src, now, h.ack);
        }
        if h.flags & DAT != 0 {
            let window = self.cfg.window as u32;
            let rx_next = self.links[src].rx_next;
            let ahead = h.seq.wrapping_sub(rx_next);
            if ahead == 0 {
                if self.deliver(src, payload) {
                    let link = &mut self.links[src];
                    link.rx_next = link.rx_next.wrapping_add(1);
                    loop {
                        let next = self.links[src].rx_next;
                        let Some(p) = self.links[src].ooo.remove(&next) else {
                            break;
                        };
                        if !self.deliver(src, &p) {
                            let link = &mut self.links[src];
                            link.ooo.insert(link.rx_next, p);
                            break;
                        }
                        let link = &mut self.links[src];
                        link.rx_next = link.rx_next.wrapping_add(1);
                    }
                }
            } else if ahead < window {
                self.links[src].ooo.insert(h.seq, payload.to_vec());
            }
            self.links[src].ack_due = true;
        }
        Ok(())
    }

    /// Hands a packet's frame to the rank if there is room; a malformed frame from a peer
    /// daemon fails the run.
    fn deliver(&mut self, src: usize, frame: &[u8]) -> bool {
        if self.to_task.len() - self.to_task_lo + frame.len() > TO_TASK_MAX {
            self.stats.dropped_full += 1;
            return false;
        }
        match Header::parse(frame) {
            Ok(h)
                if h.src as usize == src
                    && h.dst as usize == self.cfg.me
                    && frame.len() == wire::HEADER_LEN + h.len as usize => {}
            _ => {
                self.failed
                    .get_or_insert((src, format!("rank {src}'s daemon sent a malformed frame")));
                return false;
            }
        }
        if self.to_task_lo > 0 && self.to_task_lo == self.to_task.len() {
            self.to_task.clear();
            self.to_task_lo = 0;
        }
        self.to_task.extend_from_slice(frame);
        self.stats.packets_delivered += 1;
        true
    }

    fn on_ack(&mut self, src: usize, now: Instant, ack: u32) {
        let link = &mut self.links[src];
        let mut sample = None;
        while let Some(s) = link.unacked.front() {
            // `s.seq` is before `ack` (modulo 2^32, within a window).
            if ack.wrapping_sub(s.seq).wrapping_sub(1) >= u32::MAX / 2 {
                break;
            }
            if !s.retransmitted && sample.is_none() {
                sample = Some(now.saturating_duration_since(s.first_sent).as_nanos());
            }
            link.unacked.pop_front();
            link.resend = false;
        }
        if let Some(rtt) = sample {
            let srtt = link.srtt.map_or(rtt, |s| (7 * s + rtt) / 8);
            link.srtt = Some(srtt);
            link.rto = Duration(3 * srtt).max(RTO_MIN).min(RTO_MAX);
        }
        link.deadline = if link.unacked.is_empty() {
            None
        } else {
            Some(Instant(now.as_nanos() + link.rto.as_nanos()))
        };
    }

    /// Starts retransmissions that are due, and gives up on peers that stay silent.
    pub fn handle_timeout(&mut self, now: Instant) {
        for (peer, link) in self.links.iter_mut().enumerate() {
            let Some(d) = link.deadline else {
                continue;
            };
            if now < d {
                continue;
            }
            if let Some(s) = link.unacked.front() {
                if now.saturating_duration_since(s.first_sent) > self.cfg.give_up {
                    self.failed.get_or_insert((
                        peer,
                        format!(
                            "rank {peer}'s daemon stopped answering (a packet unacknowledged \
                             for {:.1} s)",
                            self.cfg.give_up.as_secs_f64()
                        ),
                    ));
                    link.deadline = None;
                    continue;
                }
                link.resend = true;
                link.rto = Duration(link.rto.as_nanos() * 2).min(RTO_MAX);
                link.deadline = Some(Instant(now.as_nanos() + link.rto.as_nanos()));
            } else {
                link.deadline = None;
            }
        }
    }

    /// The next datagram to send and the peer it is for: a retransmission, a new packet within
    /// the window, or a bare acknowledgement. Every data packet carries the link's current
    /// acknowledgement.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(usize, Vec<u8>)> {
        let n = self.links.len();
        for k in 0..n {
            let peer = (self.next_link + k) % n;
            let window = self.cfg.window;
            let me = self.cfg.me as u16;
            let link = &mut self.links[peer];
            let ack = link.rx_next;
            let with_ack = |mut pkt: Vec<u8>| {
                pkt[3] |= ACK;
                pkt[12..16].copy_from_slice(&ack.to_be_bytes());
                pkt
            };
            if link.resend {
                link.resend = false;
                if let Some(s) = link.unacked.front_mut() {
                    s.retransmitted = true;
                    link.ack_due = false;
                    self.stats.retransmits += 1;
                    self.next_link = peer + 1;
                    return Some((peer, with_ack(s.pkt.clone())));
                }
            }
            if link.unacked.len() < window {
                if let Some(pkt) = link.txq.pop_front() {
                    let seq = u32::from_be_bytes([pkt[8], pkt[9], pkt[10], pkt[11]]);
                    let pkt = with_ack(pkt);
                    link.unacked.push_back(Sent {
                        seq,
                        pkt: pkt.clone(),
                        first_sent: now,
                        retransmitted: false,
                    });
                    if link.deadline.is_none() {
                        link.deadline = Some(Instant(now.as_nanos() + link.rto.as_nanos()));
                    }
                    link.ack_due = false;
                    self.stats.packets_sent += 1;
                    self.next_link = peer + 1;
                    return Some((peer, pkt));
                }
            }
            if link.ack_due {
                link.ack_due = false;
                let mut pkt = vec![0u8; HEADER_LEN];
                PacketHeader {
                    flags: ACK,
                    src: me,
                    dst: peer as u16,
                    seq: 0,
                    ack,
                    token: self.cfg.token,
                }
                .emit_into(&mut pkt);
                self.next_link = peer + 1;
                return Some((peer, pkt));
            }
        }
        None
    }

    /// When [`DaemonCore::handle_timeout`] next has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.links.iter().filter_map(|l| l.deadline).min()
    }

    /// Bytes waiting for the rank (whole frames, in order per sender).
    pub fn task_output(&self) -> &[u8] {
        &self.to_task[self.to_task_lo..]
    }

    /// Marks `n` bytes of [`DaemonCore::task_output`] as written to the rank.
    pub fn task_written(&mut self, n: usize) {
        self.to_task_lo = (self.to_task_lo + n).min(self.to_task.len());
        if self.to_task_lo == self.to_task.len() {
            self.to_task.clear();
            self.to_task_lo = 0;
        } else if self.to_task_lo > TO_TASK_MAX {
            self.to_task.drain(..self.to_task_lo);
            self.to_task_lo = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(me: usize, window: usize) -> CoreConfig {
        CoreConfig {
            me,
            ranks: 2,
            fragment: 2048,
            window,
            give_up: Duration::from_secs(1),
            token: 77,
        }
    }

    #[test]
    fn packets_of_another_run_are_ignored() {
        // A forger who knows the ranks and the format but not the run's token: its data is not
        // delivered, and its cumulative acknowledgement does not open the window.
        let mut forger = DaemonCore::new(CoreConfig {
            token: 78,
            ..cfg(0, 4)
        });
        let mut victim = DaemonCore::new(cfg(1, 4));
        forger.task_input(&message(0, 1, 0, 100)).unwrap();
        let (_, pkt) = forger.poll_transmit(Instant(1)).unwrap();
        victim.handle_datagram(Instant(2), &pkt).unwrap();
        assert_eq!(victim.stats().ignored, 1);
        assert!(victim.task_output().is_empty());
        // The same packet with the run's token is delivered.
        let mut same = DaemonCore::new(cfg(0, 4));
        same.task_input(&message(0, 1, 0, 100)).unwrap();
        let (_, pkt) = same.poll_transmit(Instant(1)).unwrap();
        victim.handle_datagram(Instant(3), &pkt).unwrap();
        assert!(!victim.task_output().is_empty());
    }

    fn message(src: u16, dst: u16, seq: u32, len: usize) -> Vec<u8> {
        let mut f = Header::data(src, dst, seq, len as u32).emit().to_vec();
        f.extend((0..len).map(|i| (i % 251) as u8));
        f
    }

    /// Moves datagrams between two daemons until both are quiet, dropping those `drop` picks;
    /// returns what daemon 1 handed its rank.
    fn shuttle(a: &mut DaemonCore, b: &mut DaemonCore, drop: impl Fn(u64) -> bool) -> Vec<u8> {
        let mut t = 0u64;
        let mut k = 0u64;
        let mut out = Vec::new();
        for _ in 0..100_000 {
            t += 10_000;
            let now = Instant(t);
            a.handle_timeout(now);
            b.handle_timeout(now);
            let mut moved = false;
            while let Some((_, p)) = a.poll_transmit(now) {
                k += 1;
                moved = true;
                if !drop(k) {
                    b.handle_datagram(now, &p).unwrap();
                }
            }
            while let Some((_, p)) = b.poll_transmit(now) {
                k += 1;
                moved = true;
                if !drop(k) {
                    a.handle_datagram(now, &p).unwrap();
                }
            }
            let o = b.task_output().to_vec();
            b.task_written(o.len());
            out.extend(o);
            if !moved && a.quiet() && b.quiet() {
                break;
            }
        }
        out
    }

    #[test]
    fn messages_are_fragmented_acknowledged_and_reassembled_in_order() {
        for window in [1, 4] {
            let mut a = DaemonCore::new(cfg(0, window));
            let mut b = DaemonCore::new(cfg(1, window));
            let mut stream = message(0, 1, 0, 10_000);
            stream.extend(message(0, 1, 1, 0));
            stream.extend(message(0, 1, 2, 3));
            assert_eq!(a.task_input(&stream).unwrap(), stream.len());
            let out = shuttle(&mut a, &mut b, |k| k % 7 == 3);
            // Reassemble the chunks per message.
            let mut msgs: Vec<Vec<u8>> = vec![Vec::new(); 3];
            let mut at = 0;
            while at < out.len() {
                let h = Header::parse(&out[at..]).unwrap();
                assert!(h.len as usize <= 2048 - HEADER_LEN - wire::HEADER_LEN);
                assert_eq!(msgs[h.seq as usize].len(), h.offset as usize);
                let body = &out[at + wire::HEADER_LEN..at + wire::HEADER_LEN + h.len as usize];
                msgs[h.seq as usize].extend_from_slice(body);
                at += wire::HEADER_LEN + h.len as usize;
            }
            assert_eq!(msgs[0], message(0, 1, 0, 10_000)[wire::HEADER_LEN..]);
            assert!(msgs[1].is_empty());
            assert_eq!(msgs[2].len(), 3);
            assert!(a.stats().retransmits > 0, "window {window}");
            assert!(a.failed().is_none());
        }
    }

    #[test]
    fn a_silent_peer_is_given_up() {
        let mut a = DaemonCore::new(cfg(0, 1));
        a.task_input(&message(0, 1, 0, 10)).unwrap();
        let mut t = 0;
        while a.failed().is_none() && t < 5_000_000_000 {
            t += 1_000_000;
            a.handle_timeout(Instant(t));
            while a.poll_transmit(Instant(t)).is_some() {}
        }
        let (peer, why) = a.failed().unwrap();
        assert_eq!(*peer, 1);
        assert!(why.contains("stopped answering"), "{why}");
    }

    #[test]
    fn bad_input_is_refused_or_ignored() {
        let mut a = DaemonCore::new(cfg(0, 1));
        // A frame claiming another source on the rank's own connection.
        assert!(a.task_input(&message(1, 0, 0, 4)).is_err());
        assert!(a.task_input(b"garbage garbage garbage garbage").is_err());
        // Foreign datagrams are counted and ignored.
        assert!(a.handle_datagram(Instant(0), b"hello").is_err());
        assert_eq!(a.stats().ignored, 1);
        // Backpressure: a full link stops consuming the rank's stream.
        let mut b = DaemonCore::new(cfg(0, 1));
        let big = message(0, 1, 0, 4 << 20);
        let used = b.task_input(&big).unwrap();
        assert!(used < big.len());
        assert_eq!(b.links[1].txq.len(), TXQ_MAX);
    }
}
