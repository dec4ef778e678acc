//! The sending side: offers files, announces buffers, paces datagrams, retransmits what the
//! receiver reports missing, and moves to the next buffer when the receiver has one.

use std::collections::{BTreeMap, VecDeque};

use weft_model::{Duration, Instant};

use super::rate::{Pacer, RateControl, Report};
pub use super::sender_api::{
    FileMeta, SenderConfig, SenderEvent, SenderStats, Transmit, TransmitRef,
};
use super::span::RoundSpan;
use super::stall::{Stalled, Watchdog};
use super::{IP_UDP_OVERHEAD, ProtoError, buffer_len, packets_in};
use crate::wire::control::Control;
use crate::wire::{DataRepr, Mode};

#[derive(Debug, PartialEq, Eq)]
enum BufState {
    WaitReady,
    Sending,
    WaitReport,
}

#[derive(Debug)]
struct Buf {
    file: u32,
    index: u32,
    data: Vec<u8>,
    npkts: u32,
    todo: VecDeque<(u32, u32)>,
    round: u32,
    sent_round: u32,
    /// When this round's first and last datagrams left, and its bytes: the rate actually sent,
    /// against which the receiver's arrival rate is judged.
    /// This round's datagrams against the session's running wire byte count.
    span: RoundSpan,
    state: BufState,
    /// Packets from this index on are held back from round 0 (the first buffer's probe round):
    /// they are first sent in round 1, and are neither loss nor retransmissions.
    withheld_from: u32,
    /// Sent before the receiver granted it (the early probe round): its `Ready` is still to
    /// come and changes nothing.
    early: bool,
}

impl Buf {
    /// The rate the session's datagrams actually left at during this round, bits/s on the
    /// wire (0: unknown).
    fn tx_rate(&self) -> u64 {
        self.span.rate()
    }

    /// Whether the round that just ended sent most of the buffer for the first time: its
    /// first round, or the second of the probe buffer (what the probe round held back).
    fn first_blast(&self) -> bool {
        self.round == 0 || (self.round == 1 && self.withheld_from < self.npkts)
    }
}

#[derive(Debug, PartialEq, Eq)]
enum FilePhase {
    Offered,
    Sending { exhausted: bool, asking: bool },
    Ending,
}

/// The sender state machine of one session.
#[derive(Debug)]
pub struct Sender {
    cfg: SenderConfig,
    session: u64,
    files: Vec<FileMeta>,
    cur: usize,
    phase: FilePhase,
    next_seq: u32,
    /// BLAKE3 of each buffer of the current file, for the whole-file digest (reliable mode).
    digests: Vec<Option<[u8; 32]>>,
    bufs: BTreeMap<u32, Buf>,
    active: VecDeque<u32>,
    control: VecDeque<Control>,
    events: VecDeque<SenderEvent>,
    pacer: Pacer,
    rate: RateControl,
    stats: SenderStats,
    finished: bool,
    /// Bytes of finished buffers, handed back to the driver for reuse.
    spent: Vec<Vec<u8>>,
    /// Whether the adaptive controller's probe round has been sent.
    probe_sent: bool,
    /// The current file's buffers were started before the receiver answered its offer.
    unanswered: bool,
    /// Wire bytes of every datagram sent so far (IP and UDP headers included).
    wire_sent: u64,
    /// The receiver's progress while this side waits on it.
    watchdog: Watchdog,
}

impl Sender {
    /// A sender for an authenticated session `session` that will send `files` in order.
    pub fn new(cfg: SenderConfig, session: u64, files: Vec<FileMeta>) -> Self {
        let mut s = Sender {
            pacer: Pacer::new(cfg.burst),
            rate: RateControl::new(cfg.rate),
            cfg,
            session,
            files,
            cur: 0,
            phase: FilePhase::Offered,
            next_seq: 0,
            digests: Vec::new(),
            bufs: BTreeMap::new(),
            active: VecDeque::new(),
            control: VecDeque::new(),
            events: VecDeque::new(),
            stats: SenderStats::default(),
            finished: false,
            spent: Vec::new(),
            probe_sent: false,
            unanswered: false,
            wire_sent: 0,
            watchdog: Watchdog::new(None),
        };
        s.offer_current();
        s
    }

    /// Counters so far.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// The current pacing rate (`None`: unlimited).
    pub fn rate(&self) -> Option<weft_model::Rate> {
        self.rate.rate()
    }

    /// Whether `Bye` has been queued after the last file.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Whether a datagram is waiting for its pacing slot or for the receiver's `Ready`
    /// (a driver uses this to tell time on the network from time waiting on the receiver).
    pub fn has_data_to_send(&self) -> bool {
        self.active
            .iter()
            .any(|s| self.bufs.get(s).is_some_and(|b| !b.todo.is_empty()))
    }

    /// From now on, a receiver that makes no progress for longer than `bound` while this side
    /// waits on it is reported by [`Sender::peer_stalled`] (`None`, the default: never).
    pub fn set_stall_bound(&mut self, bound: Option<Duration>) {
        self.watchdog = Watchdog::new(bound);
    }

    /// Whether the receiver has made no progress for longer than the stall bound while this
    /// side waited on it: for its answer to an offer, a buffer slot (`Ready`) or a report on a
    /// buffer sent. Every message from the receiver is progress. Not counted: time this side
    /// spends on its own work (reading, pacing), and the wait for a file's verdict, during
    /// which the receiver checks the file on its own (a resumed file is read back from disk).
    /// The driver calls it as it wakes; a stall ends the session.
    pub fn peer_stalled(&mut self, now: Instant) -> Option<Stalled> {
        let owed = self.waiting_for();
        self.watchdog.check(now, owed)
    }

    /// What this side waits on the receiver for, if anything.
    fn waiting_for(&self) -> Option<&'static str> {
        if self.finished {
            return None;
        }
        if self.unanswered || self.phase == FilePhase::Offered {
            return Some("the receiver's answer to a file offer");
        }
        if self.bufs.values().any(|b| b.state == BufState::WaitReport) {
            return Some("the receiver's report on a buffer sent");
        }
        if self.bufs.values().any(|b| b.state == BufState::WaitReady) {
            return Some("the receiver to take a buffer (Ready)");
        }
        None
    }

    /// Handles one control message from the receiver.
    pub fn handle_control(&mut self, now: Instant, msg: Control) -> Result<(), ProtoError> {
        self.watchdog.progress(now);
        match msg {
            Control::FileAccept { file, have } => {
                if file as usize != self.cur {
                    return Err(ProtoError::Unexpected("FileAccept"));
                }
                if std::mem::take(&mut self.unanswered) {
                    // Already sending: a fresh file, so the receiver can hold none of it.
                    if !have.is_empty() {
                        return Err(ProtoError::Invalid(
                            "FileAccept with buffers of a fresh file",
                        ));
                    }
                } else if self.phase == FilePhase::Offered {
                    self.phase = FilePhase::Sending {
                        exhausted: false,
                        asking: false,
                    };
                } else {
                    return Err(ProtoError::Unexpected("FileAccept"));
                }
                self.events
                    .push_back(SenderEvent::FileAccepted { file, have });
                self.ask_for_buffer();
            }
            Control::FileReject { file, code, msg } => {
                if file as usize != self.cur {
                    return Err(ProtoError::Unexpected("FileReject"));
                }
                if std::mem::take(&mut self.unanswered) {
                    // The receiver dropped what was pipelined behind the offer: so does this.
                    for (_, b) in std::mem::take(&mut self.bufs) {
                        self.spent.push(b.data);
                    }
                    self.spent.truncate(self.cfg.window.max(1) as usize);
                    self.active.clear();
                    if self.rate.probing() {
                        self.probe_sent = false;
                    }
                } else if self.phase != FilePhase::Offered {
                    return Err(ProtoError::Unexpected("FileReject"));
                }
                self.stats.files_failed += 1;
                self.events
                    .push_back(SenderEvent::FileRejected { file, code, msg });
                self.next_file();
            }
            Control::Ready { buf } => {
                if let Some(b) = self.bufs.get_mut(&buf).filter(|b| b.early) {
                    b.early = false;
                    return Ok(());
                }
                let b = self
                    .bufs
                    .get_mut(&buf)
                    .filter(|b| b.state == BufState::WaitReady)
                    .ok_or(ProtoError::Unexpected("Ready"))?;
                b.state = BufState::Sending;
                if self.active.is_empty() {
                    self.pacer.restart(now);
                }
                self.active.push_back(buf);
                self.maybe_end(buf);
            }
            Control::Nack {
                buf,
                round,
                rx_rate,
                drops,
                missing,
                arrival_rate,
            } => {
                if !self.cfg.mode.is_reliable() {
                    return Err(ProtoError::Unexpected("Nack in an unreliable mode"));
                }
                let repairs_only = self.only_repairs_left(buf);
                let b = self
                    .bufs
                    .get_mut(&buf)
                    .filter(|b| b.state == BufState::WaitReport && b.round == round)
                    .ok_or(ProtoError::Unexpected("Nack"))?;
                let mut n = 0u32;
                let mut todo = VecDeque::new();
                for (a, e) in missing {
                    if e > b.npkts {
                        return Err(ProtoError::Invalid("Nack range"));
                    }
                    n += e - a;
                    todo.push_back((a, e));
                }
                if n == 0 {
                    return Err(ProtoError::Invalid("empty Nack"));
                }
                // Packets held back from a probe round were never sent: not lost.
                if b.round == 0 && b.withheld_from < b.npkts {
                    let held: u32 = todo
                        .iter()
                        .map(|(a, e)| e.saturating_sub((*a).max(b.withheld_from)))
                        .sum();
                    n = n.saturating_sub(held);
                }
                self.stats.packets_nacked += n as u64;
                // Only a buffer's first blast, sent back to back, measures the path: the few
                // retransmissions of later rounds mingle with other buffers' data on the way.
                // (The probe buffer's second round is the first blast of most of it.)
                if b.first_blast() {
                    self.rate.on_report(&Report {
                        now,
                        round_start: b.span.start().unwrap_or(now),
                        sent: b.sent_round,
                        lost: n,
                        drops,
                        rx_rate: wire_rate(rx_rate, self.cfg.packet_size),
                        arrival_rate: wire_rate(arrival_rate.unwrap_or(0), self.cfg.packet_size),
                        tx_rate: b.tx_rate(),
                    });
                }
                // At a file's tail the link idles but for retransmissions: each missing packet
                // goes out more than once (spaced by the others), so that its loss does not
                // cost another round trip (at 5% loss most buffers' first retransmissions lose
                // one of theirs: a round of 300 ms on a long path).
                let probe_round = b.round == 0 && b.withheld_from < b.npkts;
                if !probe_round && repairs_only {
                    let once = todo.clone();
                    for _ in 1..self.rate.tail_copies(n) {
                        todo.extend(once.iter().copied());
                    }
                }
                b.todo = todo;
                b.round += 1;
                b.sent_round = 0;
                b.span = RoundSpan::EMPTY;
                b.state = BufState::Sending;
                if self.active.is_empty() {
                    self.pacer.restart(now);
                }
                // Retransmissions go before new data: they hold up a buffer's completion.
                self.active.push_front(buf);
                self.ask_for_buffer();
            }
            Control::Done {
                buf,
                received: _,
                lost,
                dup,
                rx_rate,
                drops,
                arrival_rate,
            } => {
                let b = self
                    .bufs
                    .get(&buf)
                    .filter(|b| b.state == BufState::WaitReport)
                    .ok_or(ProtoError::Unexpected("Done"))?;
                if lost > b.npkts || (lost > 0 && self.cfg.mode.is_reliable()) {
                    return Err(ProtoError::Invalid("Done loss count"));
                }
                if b.first_blast() {
                    self.rate.on_report(&Report {
                        now,
                        round_start: b.span.start().unwrap_or(now),
                        sent: b.sent_round,
                        lost,
                        drops,
                        rx_rate: wire_rate(rx_rate, self.cfg.packet_size),
                        arrival_rate: wire_rate(arrival_rate.unwrap_or(0), self.cfg.packet_size),
                        tx_rate: b.tx_rate(),
                    });
                }
                let (file, index, size) = (b.file, b.index, b.data.len() as u32);
                if let Some(b) = self.bufs.remove(&buf)
                    && self.spent.len() < self.cfg.window.max(1) as usize
                {
                    self.spent.push(b.data);
                }
                self.stats.packets_lost += lost as u64;
                self.stats.packets_dup += dup as u64;
                self.stats.buffers_done += 1;
                self.stats.bytes_done += size as u64;
                self.events.push_back(SenderEvent::BufferDone {
                    file,
                    index,
                    size,
                    lost,
                });
                self.ask_for_buffer();
                self.maybe_end_file();
            }
            Control::FileDone { file, ok, msg } => {
                if file as usize != self.cur || self.phase != FilePhase::Ending {
                    return Err(ProtoError::Unexpected("FileDone"));
                }
                if ok {
                    self.stats.files_ok += 1;
                } else {
                    self.stats.files_failed += 1;
                }
                self.events
                    .push_back(SenderEvent::FileDone { file, ok, msg });
                self.next_file();
            }
            _ => return Err(ProtoError::Unexpected("message")),
        }
        Ok(())
    }

    /// The driver's answer to [`SenderEvent::NeedBuffer`]: buffer `index` of `file` with its
    /// bytes, or `None` when this session has no more buffers of that file to send.
    pub fn provide_buffer(
        &mut self,
        file: u32,
        next: Option<(u32, Vec<u8>)>,
    ) -> Result<(), ProtoError> {
        let reliable = self.cfg.mode.is_reliable();
        self.provide_hashed_buffer(
            file,
            next.map(|(i, d)| {
                let h = if reliable {
                    *blake3::hash(&d).as_bytes()
                } else {
                    [0; 32]
                };
                (i, d, h)
            }),
        )
    }

    /// Like [`Sender::provide_buffer`], with the buffer's BLAKE3 already computed by the driver
    /// (on a reader thread, off the network path). In unreliable modes the hash is ignored.
    pub fn provide_hashed_buffer(
        &mut self,
        file: u32,
        next: Option<(u32, Vec<u8>, [u8; 32])>,
    ) -> Result<(), ProtoError> {
        let FilePhase::Sending { exhausted, asking } = &mut self.phase else {
            return Err(ProtoError::Unexpected("provide_buffer"));
        };
        if file as usize != self.cur || !*asking || *exhausted {
            return Err(ProtoError::Unexpected("provide_buffer"));
        }
        *asking = false;
        let Some((index, data, hash)) = next else {
            *exhausted = true;
            self.maybe_end_file();
            return Ok(());
        };
        let meta = &self.files[self.cur];
        if data.is_empty()
            || data.len() as u32 != buffer_len(meta.size, self.cfg.buffer_size, index)
        {
            return Err(ProtoError::Invalid("buffer length"));
        }
        let hash = if self.cfg.mode.is_reliable() {
            hash
        } else {
            [0; 32]
        };
        if let Some(d) = self.digests.get_mut(index as usize) {
            *d = Some(hash);
        }
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        let npkts = packets_in(data.len() as u32, self.cfg.packet_size);
        // The adaptive controller's first report comes from a short probe round: the first
        // datagrams of the first buffer at the starting rate, which may be far above the
        // path's; the rest follows in round 1 at the rate that report sets.
        let probe = probe_packets(self.cfg.packet_size);
        let withheld_from = if self.rate.probing() && !self.probe_sent && npkts > probe {
            self.probe_sent = true;
            probe
        } else {
            npkts
        };
        // The probe round goes at once, before the receiver's `Ready` (it holds what comes
        // early): the train is short, and its report is the first thing the sender waits for.
        let early = self.cfg.early_probe && withheld_from < npkts;
        self.control.push_back(Control::Start {
            buf: seq,
            file,
            index,
            size: data.len() as u32,
            packet_size: self.cfg.packet_size,
            hash,
        });
        self.bufs.insert(
            seq,
            Buf {
                file,
                index,
                data,
                npkts,
                todo: VecDeque::from([(0, withheld_from)]),
                round: 0,
                sent_round: 0,
                span: RoundSpan::EMPTY,
                state: if early {
                    BufState::Sending
                } else {
                    BufState::WaitReady
                },
                withheld_from,
                early,
            },
        );
        if early {
            self.active.push_back(seq);
        }
        self.ask_for_buffer();
        Ok(())
    }

    /// The BLAKE3 of buffer `index` of `file`, which this session does not send because the
    /// receiver already has it (resume): needed for the whole-file digest.
    pub fn provide_known_hash(&mut self, file: u32, index: u32, hash: [u8; 32]) {
        if file as usize == self.cur
            && let Some(d) = self.digests.get_mut(index as usize)
        {
            *d = Some(hash);
        }
    }

    /// No timers of its own besides pacing; present for the uniform driver loop.
    pub fn handle_timeout(&mut self, _now: Instant) {}

    /// The next control message to write to TCP.
    pub fn poll_control(&mut self) -> Option<Control> {
        self.control.pop_front()
    }

    /// The next thing for the driver to do.
    pub fn poll_event(&mut self) -> Option<SenderEvent> {
        self.events.pop_front()
    }

    /// The bytes of a finished buffer, for the driver to read the next one into (saves the
    /// allocation, zeroing and page faults of a fresh buffer).
    pub fn take_spent(&mut self) -> Option<Vec<u8>> {
        self.spent.pop()
    }

    /// Appends the next datagram to `out` if pacing allows one at `now`.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> Option<Transmit> {
        let t = self.poll_transmit_ref(now, out)?;
        let start = out.len();
        out.extend_from_slice(self.payload(t.buf, t.start, t.len));
        Some(Transmit {
            stripe: t.stripe,
            len: crate::wire::data::HEADER_LEN + (out.len() - start),
        })
    }

    /// The payload bytes a [`TransmitRef`] names (empty if the buffer is gone).
    pub fn payload(&self, buf: u32, start: usize, len: usize) -> &[u8] {
        self.bufs
            .get(&buf)
            .and_then(|b| b.data.get(start..start.saturating_add(len)))
            .unwrap_or(&[])
    }

    /// Like [`Sender::poll_transmit`], but appends only the datagram's header to `out`; the
    /// payload stays in the buffer (see [`TransmitRef`]).
    pub fn poll_transmit_ref(&mut self, now: Instant, out: &mut Vec<u8>) -> Option<TransmitRef> {
        let rate = self.rate.rate();
        if !self.pacer.ready(now, rate) {
            return None;
        }
        loop {
            let &seq = self.active.front()?;
            let Some(b) = self.bufs.get_mut(&seq) else {
                self.active.pop_front();
                continue;
            };
            let Some(range) = b.todo.front_mut() else {
                self.active.pop_front();
                continue;
            };
            let idx = range.0;
            range.0 += 1;
            if range.0 >= range.1 {
                b.todo.pop_front();
            }
            let off = idx as usize * self.cfg.packet_size as usize;
            let end = (off + self.cfg.packet_size as usize).min(b.data.len());
            let plen = end.saturating_sub(off);
            DataRepr {
                session: self.session,
                buffer: seq,
                offset: off as u32,
            }
            .emit(&[], out);
            let len = crate::wire::data::HEADER_LEN + plen;
            b.sent_round += 1;
            self.wire_sent += (len + IP_UDP_OVERHEAD) as u64;
            b.span.note(now, self.wire_sent);
            self.stats.packets_sent += 1;
            self.stats.payload_bytes_sent += plen as u64;
            if b.round > 0 && !(b.round == 1 && idx >= b.withheld_from) {
                self.stats.packets_retransmitted += 1;
            }
            self.pacer.on_send(now, len + IP_UDP_OVERHEAD, rate);
            self.maybe_end(seq);
            return Some(TransmitRef {
                stripe: idx % self.cfg.stripes.max(1),
                buf: seq,
                start: off,
                len: plen,
            });
        }
    }

    /// When `poll_transmit` may next return a datagram (`None`: nothing to send).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.has_data_to_send() {
            Some(match self.rate.rate() {
                Some(_) => self.pacer.next_send(),
                None => Instant::ZERO,
            })
        } else {
            None
        }
    }

    fn offer_current(&mut self) {
        match self.files.get(self.cur) {
            Some(f) => {
                self.phase = FilePhase::Offered;
                let n = if self.cfg.mode.is_reliable() {
                    super::buffers_in(f.size, self.cfg.buffer_size) as usize
                } else {
                    0
                };
                // A fresh file needs nothing from the answer: its buffers start right behind the
                // offer, and the receiver holds them until it accepts (a round trip saved). MBTP
                // sessions wait, as one may join a file another has already finished.
                let start_now = !f.resume && self.cfg.mode != Mode::Mbtp;
                self.digests = vec![None; n];
                self.control.push_back(Control::FileOffer {
                    file: self.cur as u32,
                    size: f.size,
                    buffer_size: self.cfg.buffer_size,
                    packet_size: self.cfg.packet_size,
                    resume: f.resume,
                    hash: f.hash,
                    name: f.name.clone(),
                });
                if start_now {
                    self.unanswered = true;
                    self.phase = FilePhase::Sending {
                        exhausted: false,
                        asking: false,
                    };
                    self.ask_for_buffer();
                }
            }
            None => {
                self.control.push_back(Control::Bye);
                self.events.push_back(SenderEvent::Finished);
                self.finished = true;
            }
        }
    }

    fn next_file(&mut self) {
        self.cur += 1;
        self.offer_current();
    }

    fn ask_for_buffer(&mut self) {
        if let FilePhase::Sending { exhausted, asking } = &mut self.phase
            && !*exhausted
            && !*asking
            && (self.bufs.len() as u32)
                < if self.rate.probing() {
                    1
                } else if self.rate.confirming() {
                    2.min(self.cfg.window.max(1))
                } else {
                    self.cfg.window.max(1)
                }
        {
            *asking = true;
            self.events.push_back(SenderEvent::NeedBuffer {
                file: self.cur as u32,
            });
        }
    }

    /// Whether the file's last buffer has been handed over and every buffer but `seq` has sent
    /// its first blast: nothing new is left to send, and the link carries only repairs.
    fn only_repairs_left(&self, seq: u32) -> bool {
        let handed_over = matches!(
            self.phase,
            FilePhase::Ending
                | FilePhase::Sending {
                    exhausted: true,
                    ..
                }
        );
        handed_over
            && self.bufs.iter().all(|(s, b)| {
                *s == seq
                    || b.state == BufState::WaitReport
                    || (!b.first_blast() && b.state == BufState::Sending)
            })
    }

    /// After the last datagram of a round, tell the receiver.
    fn maybe_end(&mut self, seq: u32) {
        if let Some(b) = self.bufs.get_mut(&seq)
            && b.state == BufState::Sending
            && b.todo.is_empty()
        {
            b.state = BufState::WaitReport;
            self.control.push_back(Control::End {
                buf: seq,
                round: b.round,
                sent: b.sent_round,
            });
            if self.active.front() == Some(&seq) {
                self.active.pop_front();
            } else {
                self.active.retain(|s| *s != seq);
            }
        }
    }

    /// Once every buffer of the file has been handed over, sends `FileEnd` with the whole-file
    /// digest, without waiting for the buffers still in flight: the receiver holds it until they
    /// are done, so the answer comes with the last buffer's instead of a round trip later.
    fn maybe_end_file(&mut self) {
        if self.phase
            == (FilePhase::Sending {
                exhausted: true,
                asking: false,
            })
        {
            self.phase = FilePhase::Ending;
            let digest = if self.cfg.mode.is_reliable() {
                // A buffer neither sent nor hashed by the driver counts as zeros: the digest will
                // not match and the receiver refuses the file rather than accept it unverified.
                let hashes: Vec<[u8; 32]> =
                    self.digests.iter().map(|d| d.unwrap_or([0; 32])).collect();
                super::file_digest(&hashes)
            } else {
                [0; 32]
            };
            self.control.push_back(Control::FileEnd {
                file: self.cur as u32,
                digest,
            });
        }
    }
}

/// Datagrams in the adaptive controller's probe round (see [`Sender::provide_hashed_buffer`]):
/// 64 of up to 9 KiB (576 KiB, 4.7 ms at a 1 Gbit/s starting rate), fewer of larger ones but at
/// least 16 to time, so that loopback's 64 KiB datagrams do not make a 4 MiB train (34 ms).
fn probe_packets(packet_size: u32) -> u32 {
    const PROBE_BYTES: u32 = 64 * 9 * 1024;
    (PROBE_BYTES / packet_size.max(1)).clamp(16, 64)
}

/// A receiver-measured payload rate as a rate on the wire (data header, UDP and IP added), so it
/// compares with the pacing rate, which counts those bytes too.
fn wire_rate(payload_bps: u64, packet_size: u32) -> u64 {
    let p = packet_size.max(1) as u128;
    let over = (crate::wire::data::HEADER_LEN + IP_UDP_OVERHEAD) as u128;
    (payload_bps as u128 * (p + over) / p).min(u64::MAX as u128) as u64
}
