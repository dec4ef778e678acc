//! The receiving side: admits files, grants buffer slots, reassembles datagrams, and at each
//! round's end either reports what is missing (reliable mode) or counts and zero-fills the gaps
//! (SBTP/MBTP), then hands the buffer to the driver to write.

use std::collections::{HashMap, VecDeque};

use weft_model::{Duration, Instant};

use super::span::RoundSpan;
use super::stall::{Stalled, Watchdog};
use super::{Bitmap, ProtoError, buffer_len, buffers_in, packets_in};
use crate::wire::control::Control;
use crate::wire::{DataPacket, DataRepr, Mode, RefuseCode};

/// Receiver parameters and limits.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// Transfer mode of the session.
    pub mode: Mode,
    /// Session id the data datagrams must carry.
    pub session: u64,
    /// Buffer slots (buffers held in memory at once, being received or written).
    pub window: u32,
    /// Largest buffer accepted, bytes.
    pub max_buffer: u32,
    /// Largest datagram payload accepted, bytes.
    pub max_packet: u32,
    /// Largest file accepted, bytes.
    pub max_file: u64,
    /// How long after `End` to wait for datagrams still in flight before judging a round.
    pub settle: Duration,
    /// The sender speaks protocol 5 or later: `Nack` and `Done` carry the rate at which the
    /// round reached this host, timed by the arrival instants the driver passes to
    /// [`Receiver::handle_datagram_at`] (0 where it passed none).
    pub arrival_reports: bool,
}

/// Something the driver must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiverEvent {
    /// The sender offers a file: check the name and call [`Receiver::accept_file`] or
    /// [`Receiver::reject_file`].
    Offer {
        /// File number.
        file: u32,
        /// Relative name as sent (untrusted).
        name: String,
        /// Size, bytes.
        size: u64,
        /// Buffer size, bytes.
        buffer_size: u32,
        /// Continue from a journal.
        resume: bool,
        /// BLAKE3 of the whole file (zero in unreliable modes).
        hash: [u8; 32],
    },
    /// Write a finished buffer, then call [`Receiver::buffer_written`] with `seq`. In reliable
    /// mode `verify` holds the sender's BLAKE3 of the buffer: check it first (off the network
    /// thread), and if it differs call [`Receiver::buffer_corrupt`] instead of writing.
    Write {
        /// Buffer sequence number.
        seq: u32,
        /// File number.
        file: u32,
        /// Buffer index in the file.
        index: u32,
        /// Byte offset in the file.
        offset: u64,
        /// The bytes (gaps zero-filled in unreliable modes).
        data: Vec<u8>,
        /// Byte ranges of `data` that were lost and zero-filled (unreliable modes).
        gaps: Vec<(u32, u32)>,
        /// The BLAKE3 `data` must have before it is written (reliable mode).
        verify: Option<[u8; 32]>,
    },
    /// All buffers of the file are written: verify it, put it in place, and call
    /// [`Receiver::file_result`].
    FileEnd {
        /// File number.
        file: u32,
        /// The sender's whole-file digest (see [`Control::FileEnd`]).
        digest: [u8; 32],
    },
    /// The sender said `Bye`.
    Finished,
}

/// Counters, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Distinct data packets kept.
    pub packets_received: u64,
    /// Duplicates of packets already held.
    pub packets_dup: u64,
    /// Datagrams for another session, an unknown or finished buffer (ignored).
    pub packets_stray: u64,
    /// Datagrams that do not parse or do not fit their buffer (ignored).
    pub packets_bad: u64,
    /// Packets lost for good and zero-filled (unreliable modes).
    pub packets_lost: u64,
    /// Missing packets reported in `Nack`s (reliable mode).
    pub packets_nacked: u64,
    /// Buffers whose BLAKE3 did not match and were received again.
    pub hash_failures: u64,
    /// Buffers handed to be written.
    pub buffers_done: u64,
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Pending,
    Receiving,
    Settling(Instant),
    Writing,
}

#[derive(Debug)]
struct RBuf {
    file: u32,
    index: u32,
    size: u32,
    packet_size: u32,
    hash: [u8; 32],
    data: Vec<u8>,
    have: Bitmap,
    dup: u32,
    round: u32,
    state: State,
    /// This round's new datagrams against the session's running byte count, at the instants
    /// the receiver read them.
    span: RoundSpan,
    /// The same at the instants they reached this host (the kernel's receive timestamps).
    arrived: RoundSpan,
    /// Read and arrival rates of the last judged round, bits/s, for the deferred `Done`.
    rx_rate: u64,
    arrival_rate: Option<u64>,
}

impl RBuf {
    /// Moves the buffer's bytes into a `Write` event for the driver and waits for the write.
    fn hand_to_writer(
        &mut self,
        seq: u32,
        buffer_size: u32,
        gaps: Vec<(u32, u32)>,
        verify: Option<[u8; 32]>,
    ) -> ReceiverEvent {
        self.state = State::Writing;
        ReceiverEvent::Write {
            seq,
            file: self.file,
            index: self.index,
            offset: self.index as u64 * buffer_size as u64,
            data: std::mem::take(&mut self.data),
            gaps,
            verify,
        }
    }
}

/// The socket drops not yet reported, marking them reported.
fn take_unreported(total: u64, reported: &mut u64) -> u32 {
    let n = (total - *reported).min(u32::MAX as u64) as u32;
    *reported = total;
    n
}

#[derive(Debug)]
struct RFile {
    size: u64,
    buffer_size: u32,
    packet_size: u32,
    ending: bool,
    end_emitted: bool,
    digest: [u8; 32],
}

/// The receiver state machine of one session.
#[derive(Debug)]
pub struct Receiver {
    cfg: ReceiverConfig,
    files: HashMap<u32, RFile>,
    offered: Option<u32>,
    /// `Start`s and `FileEnd` the sender pipelined behind the offer awaiting the driver's
    /// answer: taken once the file is accepted, dropped if it is refused.
    held: Vec<Control>,
    /// The last file refused: what the sender pipelined for it is dropped.
    refused: Option<u32>,
    bufs: HashMap<u32, RBuf>,
    pending: VecDeque<u32>,
    /// Written buffers handed back for reuse (saves zeroing and page faults per buffer).
    pool: Vec<Vec<u8>>,
    slots: u32,
    control: VecDeque<Control>,
    events: VecDeque<ReceiverEvent>,
    stats: ReceiverStats,
    /// Kernel drops at the data sockets: the driver's running total, and how much of it the
    /// reports so far have carried.
    drops_total: u64,
    drops_reported: u64,
    /// Payload bytes of every valid datagram of the session received so far.
    bytes_in: u64,
    /// Datagrams of this session for buffers not started yet (their `Start` still on its way,
    /// or held until the file is accepted: a sender sends its probe round before `Ready`),
    /// oldest first with their arrival instants, bounded by [`EARLY_PACKETS`] and
    /// [`EARLY_BYTES`]; fed in when the buffer is granted, at the instants they arrived (the
    /// probe round's arrival rate is the first thing the sender's rate control learns).
    early: VecDeque<(u32, Instant, Option<Instant>, Vec<u8>)>,
    early_bytes: usize,
    /// The highest buffer sequence number started: datagrams for later ones are early, for
    /// earlier unknown ones stray.
    last_started: Option<u32>,
    /// Buffers whose `Start` was dropped with a refused file: their `End`s are dropped too.
    dropped: Vec<u32>,
    /// The sender's progress while this side waits on it.
    watchdog: Watchdog,
}

/// The most datagrams kept for buffers not started yet.
const EARLY_PACKETS: usize = 128;
/// The most bytes kept for buffers not started yet.
const EARLY_BYTES: usize = 2 << 20;

impl Receiver {
    /// A receiver for an authenticated session.
    pub fn new(cfg: ReceiverConfig) -> Self {
        Receiver {
            cfg,
            files: HashMap::new(),
            offered: None,
            held: Vec::new(),
            refused: None,
            bufs: HashMap::new(),
            pending: VecDeque::new(),
            pool: Vec::new(),
            slots: 0,
            control: VecDeque::new(),
            events: VecDeque::new(),
            stats: ReceiverStats::default(),
            drops_total: 0,
            drops_reported: 0,
            bytes_in: 0,
            early: VecDeque::new(),
            early_bytes: 0,
            last_started: None,
            dropped: Vec::new(),
            watchdog: Watchdog::new(None),
        }
    }

    /// From now on, a sender that makes no progress for longer than `bound` while this side
    /// waits on it is reported by [`Receiver::peer_stalled`] (`None`, the default: never).
    pub fn set_stall_bound(&mut self, bound: Option<Duration>) {
        self.watchdog = Watchdog::new(bound);
    }

    /// Whether the sender has made no progress for longer than the stall bound while this side
    /// waited on it: for the datagrams or the round's end of a buffer it started and was
    /// granted. Every control message and every new datagram from the sender is progress. Not
    /// counted: the time between buffers (the sender may be reading its disk) and this side's
    /// own work (writing, verifying). The driver calls it as it wakes; a stall ends the session.
    pub fn peer_stalled(&mut self, now: Instant) -> Option<Stalled> {
        let owed = self
            .bufs
            .values()
            .any(|b| b.state == State::Receiving)
            .then_some("the sender's datagrams or round end of a buffer in flight");
        self.watchdog.check(now, owed)
    }

    /// The driver's running total of datagrams its data sockets dropped because their receive
    /// queues were full (e.g. `SO_MEMINFO`'s drop counter). Each `Nack` or `Done` carries the
    /// drops since the previous one, so the sender can tell receiver overrun from network loss.
    pub fn set_socket_drops(&mut self, total: u64) {
        self.drops_total = self.drops_total.max(total);
    }

    fn take_drops(&mut self) -> u32 {
        let d = self.drops_total - self.drops_reported;
        self.drops_reported = self.drops_total;
        d.min(u32::MAX as u64) as u32
    }

    /// Counters so far.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// Handles one control message from the sender.
    pub fn handle_control(&mut self, now: Instant, msg: Control) -> Result<(), ProtoError> {
        self.watchdog.progress(now);
        // A sender offering a fresh file does not wait for the answer to start its buffers.
        if let Control::Start { file, .. } | Control::FileEnd { file, .. } = msg {
            if self.offered == Some(file) {
                // At most a window of buffers (and the file's end) can come before the answer.
                let starts = self
                    .held
                    .iter()
                    .filter(|c| matches!(c, Control::Start { .. }));
                if matches!(msg, Control::Start { .. })
                    && starts.count() >= self.cfg.window as usize
                {
                    return Err(ProtoError::Unexpected("more Starts than the window"));
                }
                self.hold(msg)?;
                return Ok(());
            }
            if self.refused == Some(file) {
                if let Control::Start { buf, .. } = msg {
                    self.drop_buffer(buf);
                }
                return Ok(());
            }
        }
        // The end of the probe round, sent before the answer, waits with its `Start`.
        if let Control::End { buf, .. } = msg {
            let held = |c: &Control| matches!(c, Control::Start { buf: b, .. } if *b == buf);
            if self.held.iter().any(held) {
                self.hold(msg)?;
                return Ok(());
            }
            if self.dropped.contains(&buf) {
                return Ok(());
            }
        }
        match msg {
            Control::FileOffer {
                file,
                size,
                buffer_size,
                packet_size,
                resume,
                hash,
                name,
            } => {
                if self.offered.is_some() || self.files.contains_key(&file) {
                    return Err(ProtoError::Unexpected("FileOffer"));
                }
                if buffer_size == 0 || packet_size == 0 || packet_size > buffer_size {
                    return Err(ProtoError::Invalid("buffer or packet size"));
                }
                if buffer_size > self.cfg.max_buffer
                    || packet_size > self.cfg.max_packet
                    || size > self.cfg.max_file
                {
                    self.refused = Some(file);
                    self.control.push_back(Control::FileReject {
                        file,
                        code: RefuseCode::TooLarge,
                        msg: format!(
                            "file of {size} bytes, buffers of {buffer_size}, packets of {packet_size} exceed this receiver's limits ({} bytes, {}, {})",
                            self.cfg.max_file, self.cfg.max_buffer, self.cfg.max_packet
                        ),
                    });
                    return Ok(());
                }
                self.offered = Some(file);
                self.files.insert(
                    file,
                    RFile {
                        size,
                        buffer_size,
                        packet_size,
                        ending: false,
                        end_emitted: false,
                        digest: [0; 32],
                    },
                );
                self.events.push_back(ReceiverEvent::Offer {
                    file,
                    name,
                    size,
                    buffer_size,
                    resume,
                    hash,
                });
            }
            Control::Start {
                buf,
                file,
                index,
                size,
                packet_size,
                hash,
            } => {
                let f = self
                    .files
                    .get(&file)
                    .filter(|f| !f.ending && self.offered != Some(file))
                    .ok_or(ProtoError::Unexpected("Start"))?;
                if self.bufs.contains_key(&buf) {
                    return Err(ProtoError::Unexpected("Start for a known buffer"));
                }
                self.last_started = Some(self.last_started.map_or(buf, |l| l.max(buf)));
                if (index as u64) >= buffers_in(f.size, f.buffer_size)
                    || size != buffer_len(f.size, f.buffer_size, index)
                    || packet_size != f.packet_size
                {
                    return Err(ProtoError::Invalid("Start"));
                }
                self.bufs.insert(
                    buf,
                    RBuf {
                        file,
                        index,
                        size,
                        packet_size,
                        hash,
                        data: Vec::new(),
                        have: Bitmap::new(0),
                        dup: 0,
                        round: 0,
                        state: State::Pending,
                        span: RoundSpan::EMPTY,
                        arrived: RoundSpan::EMPTY,
                        rx_rate: 0,
                        arrival_rate: None,
                    },
                );
                self.pending.push_back(buf);
                self.grant();
            }
            Control::End {
                buf,
                round,
                sent: _,
            } => {
                let b = self
                    .bufs
                    .get_mut(&buf)
                    .filter(|b| b.state == State::Receiving && b.round == round)
                    .ok_or(ProtoError::Unexpected("End"))?;
                if b.have.is_full() {
                    self.judge(buf);
                } else {
                    b.state = State::Settling(now + self.cfg.settle);
                }
            }
            Control::FileEnd { file, digest } => {
                let f = self
                    .files
                    .get_mut(&file)
                    .filter(|f| !f.ending)
                    .ok_or(ProtoError::Unexpected("FileEnd"))?;
                f.ending = true;
                f.digest = digest;
                self.maybe_file_end(file);
            }
            Control::Bye => self.events.push_back(ReceiverEvent::Finished),
            _ => return Err(ProtoError::Unexpected("message")),
        }
        Ok(())
    }

    /// Handles one UDP datagram read at `now`, its arrival instant unknown. Anything that does
    /// not belong is counted and ignored.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) {
        self.handle_datagram_at(now, None, bytes);
    }

    /// Handles one UDP datagram read at `now` that reached this host at `arrived` (the kernel's
    /// receive timestamp, on the driver's clock): a receiver that was late to read a round
    /// makes it look slow by `now`, not by `arrived`, and the report says both.
    pub fn handle_datagram_at(&mut self, now: Instant, arrived: Option<Instant>, bytes: &[u8]) {
        let Ok(p) = DataPacket::new_checked(bytes) else {
            self.stats.packets_bad += 1;
            return;
        };
        let h = DataRepr::parse(&p);
        if h.session != self.cfg.session {
            self.stats.packets_stray += 1;
            return;
        }
        let Some(b) = self
            .bufs
            .get_mut(&h.buffer)
            .filter(|b| matches!(b.state, State::Receiving | State::Settling(_)))
        else {
            let future = self.last_started.is_none_or(|l| h.buffer > l);
            if future && !self.bufs.contains_key(&h.buffer) && !self.dropped.contains(&h.buffer) {
                self.keep_early(h.buffer, now, arrived, bytes);
            } else {
                self.stats.packets_stray += 1;
            }
            return;
        };
        let payload = p.payload();
        let off = h.offset as usize;
        if h.offset % b.packet_size != 0
            || off >= b.size as usize
            || payload.len() != (b.size as usize - off).min(b.packet_size as usize)
        {
            self.stats.packets_bad += 1;
            return;
        }
        // Every datagram the path delivered counts toward the session's rate, duplicates too.
        self.bytes_in += payload.len() as u64;
        if !b.have.insert(h.offset / b.packet_size) {
            b.dup += 1;
            self.stats.packets_dup += 1;
            return;
        }
        if let Some(dst) = b.data.get_mut(off..off + payload.len()) {
            dst.copy_from_slice(payload);
        }
        self.stats.packets_received += 1;
        self.watchdog.progress(now);
        b.span.note(now, self.bytes_in);
        if let Some(t) = arrived {
            b.arrived.note(t.min(now), self.bytes_in);
        }
        if b.have.is_full() && matches!(b.state, State::Settling(_)) {
            self.judge(h.buffer);
        }
    }

    /// Judges rounds whose settling time has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<u32> = self
            .bufs
            .iter()
            .filter(|(_, b)| matches!(b.state, State::Settling(t) if t <= now))
            .map(|(s, _)| *s)
            .collect();
        for s in due {
            self.judge(s);
        }
    }

    /// The driver's answer to [`ReceiverEvent::Offer`]: take the file, already holding the
    /// buffer indices in `have` (from a journal).
    pub fn accept_file(
        &mut self,
        now: Instant,
        file: u32,
        have: Vec<(u32, u32)>,
    ) -> Result<(), ProtoError> {
        if self.offered == Some(file) {
            self.offered = None;
            self.control.push_back(Control::FileAccept { file, have });
            for msg in std::mem::take(&mut self.held) {
                self.handle_control(now, msg)?;
            }
        }
        Ok(())
    }

    /// The driver's answer to [`ReceiverEvent::Offer`]: refuse the file.
    pub fn reject_file(&mut self, file: u32, code: RefuseCode, msg: String) {
        if self.offered == Some(file) {
            self.offered = None;
            for c in std::mem::take(&mut self.held) {
                if let Control::Start { buf, .. } = c {
                    self.drop_buffer(buf);
                }
            }
            self.refused = Some(file);
            self.files.remove(&file);
            self.control
                .push_back(Control::FileReject { file, code, msg });
        }
    }

    /// Hands back the bytes of a written buffer for reuse (optional; keeps at most `window`).
    /// Its old contents stay: every byte of a reused buffer is either received again or, in the
    /// unreliable modes, zero-filled as a gap.
    pub fn recycle(&mut self, data: Vec<u8>) {
        if self.pool.len() < self.cfg.window as usize {
            self.pool.push(data);
        }
    }

    /// The driver has written buffer `seq` (after checking its BLAKE3 in reliable mode): its
    /// slot is free again, and in reliable mode the sender hears `Done` now.
    pub fn buffer_written(&mut self, seq: u32) {
        if let Some(b) = self.bufs.get(&seq)
            && b.state == State::Writing
        {
            let file = b.file;
            if self.cfg.mode.is_reliable() {
                let (received, dup, rx_rate, arrival_rate) =
                    (b.have.count(), b.dup, b.rx_rate, b.arrival_rate);
                let drops = self.take_drops();
                self.stats.buffers_done += 1;
                self.control.push_back(Control::Done {
                    buf: seq,
                    received,
                    lost: 0,
                    dup,
                    rx_rate,
                    drops,
                    arrival_rate,
                });
            }
            self.bufs.remove(&seq);
            self.slots -= 1;
            self.grant();
            self.maybe_file_end(file);
        }
    }

    /// The driver found that buffer `seq` (handed out by a reliable-mode `Write`) does not
    /// match the sender's BLAKE3: corrupted in a way the UDP checksum missed. The buffer is
    /// received again in full.
    pub fn buffer_corrupt(&mut self, seq: u32, data: Vec<u8>) {
        let drops = self.take_drops();
        let Some(b) = self
            .bufs
            .get_mut(&seq)
            .filter(|b| b.state == State::Writing && self.cfg.mode.is_reliable())
        else {
            return;
        };
        self.stats.hash_failures += 1;
        b.data = data;
        b.have.clear();
        let missing = b.have.missing();
        self.stats.packets_nacked += b.have.len_missing() as u64;
        self.control.push_back(Control::Nack {
            buf: seq,
            round: b.round,
            rx_rate: 0,
            drops,
            missing,
            arrival_rate: self.cfg.arrival_reports.then_some(0),
        });
        b.round += 1;
        b.state = State::Receiving;
    }

    /// The driver's answer to [`ReceiverEvent::FileEnd`].
    pub fn file_result(&mut self, file: u32, ok: bool, msg: String) {
        if self.files.remove(&file).is_some() {
            self.control.push_back(Control::FileDone { file, ok, msg });
        }
    }

    /// The next control message to write to TCP.
    pub fn poll_control(&mut self) -> Option<Control> {
        self.control.pop_front()
    }

    /// The next thing for the driver to do.
    pub fn poll_event(&mut self) -> Option<ReceiverEvent> {
        self.events.pop_front()
    }

    /// The earliest settling deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.bufs
            .values()
            .filter_map(|b| match b.state {
                State::Settling(t) => Some(t),
                _ => None,
            })
            .min()
    }

    /// Holds a message that came before the driver's answer to the offer: at most a window of
    /// `Start`s, an `End` for each and the file's end.
    fn hold(&mut self, msg: Control) -> Result<(), ProtoError> {
        if self.held.len() > 2 * self.cfg.window as usize {
            return Err(ProtoError::Unexpected(
                "too much before the answer to an offer",
            ));
        }
        self.held.push(msg);
        Ok(())
    }

    /// Keeps a datagram that came before its buffer's `Start` (the oldest kept goes, counted as
    /// stray, when the bounds are reached).
    fn keep_early(&mut self, seq: u32, now: Instant, arrived: Option<Instant>, bytes: &[u8]) {
        while self.early.len() >= EARLY_PACKETS || self.early_bytes + bytes.len() > EARLY_BYTES {
            let Some((_, _, _, d)) = self.early.pop_front() else {
                break;
            };
            self.early_bytes -= d.len();
            self.stats.packets_stray += 1;
        }
        if bytes.len() > EARLY_BYTES {
            self.stats.packets_stray += 1;
            return;
        }
        self.early_bytes += bytes.len();
        self.early.push_back((seq, now, arrived, bytes.to_vec()));
    }

    /// A buffer the sender started for a file that was refused: what came early for it is
    /// stray, and its `End` is dropped.
    fn drop_buffer(&mut self, seq: u32) {
        if self.dropped.len() > self.cfg.window as usize {
            self.dropped.remove(0);
        }
        self.dropped.push(seq);
        self.stats.packets_stray += self.take_early(seq).len() as u64;
    }

    /// Removes and returns the datagrams kept for buffer `seq`, with the instants they were
    /// read and arrived.
    fn take_early(&mut self, seq: u32) -> Vec<(Instant, Option<Instant>, Vec<u8>)> {
        if self.early.is_empty() {
            return Vec::new();
        }
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.early)
            .into_iter()
            .partition(|(s, _, _, _)| *s == seq);
        self.early = rest.into();
        self.early_bytes = self.early.iter().map(|(_, _, _, d)| d.len()).sum();
        mine.into_iter().map(|(_, t, a, d)| (t, a, d)).collect()
    }

    /// Grants `Ready` to pending buffers while slots are free.
    fn grant(&mut self) {
        while self.slots < self.cfg.window.max(1) {
            let Some(seq) = self.pending.pop_front() else {
                break;
            };
            let Some(b) = self.bufs.get_mut(&seq) else {
                continue;
            };
            // A recycled buffer saves the allocation, its zeroing and its page faults; stale
            // bytes in it are overwritten by data or zero-filled as gaps when judged.
            let mut data = self.pool.pop().unwrap_or_default();
            if data.len() >= b.size as usize {
                data.truncate(b.size as usize);
            } else {
                data.resize(b.size as usize, 0);
            }
            b.data = data;
            b.have = Bitmap::new(packets_in(b.size, b.packet_size));
            b.state = State::Receiving;
            self.slots += 1;
            self.control.push_back(Control::Ready { buf: seq });
            for (t, a, d) in self.take_early(seq) {
                self.handle_datagram_at(t, a, &d);
            }
        }
    }

    /// The end of a round: complete, missing packets to ask for, or gaps to accept.
    fn judge(&mut self, seq: u32) {
        let reliable = self.cfg.mode.is_reliable();
        let Some(b) = self.bufs.get_mut(&seq) else {
            return;
        };
        let rx_rate = b.span.rate();
        let arrival_rate = self.cfg.arrival_reports.then(|| b.arrived.rate());
        b.span = RoundSpan::EMPTY;
        b.arrived = RoundSpan::EMPTY;
        b.rx_rate = rx_rate;
        b.arrival_rate = arrival_rate;
        if reliable && !b.have.is_full() {
            let missing = b.have.missing();
            let n: u32 = missing.iter().map(|(a, e)| e - a).sum();
            self.stats.packets_nacked += n as u64;
            let drops = take_unreported(self.drops_total, &mut self.drops_reported);
            self.control.push_back(Control::Nack {
                buf: seq,
                round: b.round,
                rx_rate,
                drops,
                missing,
                arrival_rate,
            });
            b.round += 1;
            b.state = State::Receiving;
            return;
        }
        if reliable {
            // Complete: the driver checks the BLAKE3 off the network thread, writes, and then
            // `buffer_written` answers `Done` (or `buffer_corrupt` asks for it all again).
            let buffer_size = self.files.get(&b.file).map_or(0, |f| f.buffer_size);
            let verify = Some(b.hash);
            self.events
                .push_back(b.hand_to_writer(seq, buffer_size, Vec::new(), verify));
            return;
        }
        let lost = b.have.len_missing();
        let gaps: Vec<(u32, u32)> = if lost > 0 {
            b.have
                .missing()
                .into_iter()
                .map(|(a, e)| (a * b.packet_size, (e * b.packet_size).min(b.size)))
                .collect()
        } else {
            Vec::new()
        };
        for (a, e) in &gaps {
            if let Some(g) = b.data.get_mut(*a as usize..*e as usize) {
                g.fill(0);
            }
        }
        self.stats.packets_lost += lost as u64;
        self.stats.buffers_done += 1;
        let drops = take_unreported(self.drops_total, &mut self.drops_reported);
        self.control.push_back(Control::Done {
            buf: seq,
            received: b.have.count(),
            lost,
            dup: b.dup,
            rx_rate,
            drops,
            arrival_rate,
        });
        let buffer_size = self.files.get(&b.file).map_or(0, |f| f.buffer_size);
        self.events
            .push_back(b.hand_to_writer(seq, buffer_size, gaps, None));
    }

    fn maybe_file_end(&mut self, file: u32) {
        let idle = !self.bufs.values().any(|b| b.file == file);
        if let Some(f) = self.files.get_mut(&file)
            && f.ending
            && !f.end_emitted
            && idle
        {
            f.end_emitted = true;
            let digest = f.digest;
            self.events
                .push_back(ReceiverEvent::FileEnd { file, digest });
        }
    }
}
