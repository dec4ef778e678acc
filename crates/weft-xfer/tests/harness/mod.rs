//! The protocol core over a deterministic simulated network in virtual time: weft's one event
//! engine (`weft_model::engine`) running the same network of switches the simulator and the
//! emulator run (`weft_model::net`). The senders sit behind one switch, the receivers behind
//! another; the trunk between them is the path: its delay, its loss, duplication and reordering
//! (fault injection), and optionally a drop-tail bottleneck (its rate and a queue in bytes).
//! Around the network: an in-order control channel with a fixed delay (and, optionally, losses
//! that TCP recovers a time-out later), and a "disk" that takes a fixed time per buffer
//! written, both kept in the engine's event queue. Shared by the test files of this directory.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions
#![allow(dead_code)] // each test file uses part of the harness

use std::collections::{HashMap, VecDeque};

use weft_model::engine::{self, EventQueue, Hosts, VirtualClock};
use weft_model::fabric::Rng;
use weft_model::net::{
    FabricSpec, HostSpec, IDEAL_ETHERNET, LinkSpec, Network, SwitchSpec, Topology, TrunkSpec,
    host_mac,
};
use weft_model::queue::Buffer;
use weft_model::tech::{FrameFormat, Framing};
use weft_model::{Duration, Instant, Rate};
use weft_xfer::proto::{
    FileMeta, RateMode, Receiver, ReceiverConfig, ReceiverEvent, Sender, SenderConfig, SenderEvent,
    buffer_len, buffers_in, file_digest,
};
use weft_xfer::wire::{Control, Mode};

/// The simulated path; `Default` is a perfect one (no delay, loss or bottleneck), which each
/// test changes where it matters.
#[derive(Clone, Copy, Default)]
pub struct ChannelCfg {
    /// Datagrams lost on the path, per million.
    pub loss_ppm: u64,
    /// Datagrams duplicated, per million.
    pub dup_ppm: u64,
    /// One-way delay of the data path.
    pub delay: Duration,
    /// Half the datagrams are held back by this much (reordering).
    pub jitter: Duration,
    /// One-way delay of the control channel.
    pub ctl_delay: Duration,
    /// Time the disk takes per buffer written.
    pub disk: Duration,
    /// A drop-tail bottleneck before the delay: its rate and queue capacity in bytes.
    pub bottleneck: Option<(Rate, u64)>,
    /// The receiver's wait after `End` for datagrams still in flight (`None`: the delay and
    /// twice the jitter, enough for any datagram of the round to arrive).
    pub settle: Option<Duration>,
    /// Control messages lost per million, each recovered by TCP a retransmission time-out
    /// later (`ctl_rto`, again for each further loss); later messages wait behind it, in order,
    /// as on one TCP connection.
    pub ctl_loss_ppm: u64,
    /// TCP's retransmission time-out for a lost control message.
    pub ctl_rto: Duration,
    /// The random loss is on the bottleneck's link, after its queue (as the emulator loses
    /// frames on a host's line after its interface queue), rather than before it: traffic the
    /// path loses has still taken the bottleneck's time.
    pub loss_after_queue: bool,
    /// The receiver is descheduled once for a while (every session's, each on its own).
    pub rx_stall: Option<RxStall>,
}

/// A receiver descheduled for `pause` after it has read `after` datagrams: what arrives
/// meanwhile (data, control messages, the disk's completions) waits until it runs again, and is
/// then read all at once, data first.
#[derive(Clone, Copy)]
pub struct RxStall {
    /// Datagrams read before the stall.
    pub after: u32,
    /// How long the receiver does not run.
    pub pause: Duration,
    /// Whether each datagram carries the instant it arrived (the kernel's receive timestamp)
    /// to [`Receiver::handle_datagram_at`], as `weft recv` passes it; without, the receiver
    /// knows only when it read them.
    pub stamps: bool,
}

/// Bytes in front of each datagram in a frame: an Ethernet header the switches route by, and
/// 28 bytes standing for the IP and UDP headers (charged on the bottleneck, as on a real path).
const HEADERS: usize = 14 + 28;

/// Control messages and disk completions, due at their instants.
enum Item {
    ToRecv(usize, Control),
    ToSend(usize, Control),
    Written(usize, u32),
    /// A stalled receiver runs again.
    Wake(usize),
}

pub struct Outcome {
    /// The files as the receivers wrote them.
    pub files: Vec<Vec<u8>>,
    /// The receivers' verdicts, per file.
    pub oks: Vec<bool>,
    /// Datagrams of each session that the channel dropped with no copy delivered, by
    /// (session, buffer seq, offset).
    pub dropped: Vec<(usize, u32, u32)>,
    /// The senders' state machines at the end.
    pub senders: Vec<Sender>,
    /// The receivers' state machines at the end.
    pub receivers: Vec<Receiver>,
    /// Zero-filled gaps: (session, buffer offset in the file, start, end).
    pub gaps: Vec<(usize, u64, u32, u32)>,
    /// When the last sender had its last answer (the end of the transfer for its user).
    pub end: Instant,
    /// When each buffer's `Done` reached its sender: (session, file, index, instant, the
    /// sender's pacing rate then in bits/s).
    pub buffers_done: Vec<(usize, u32, u32, Instant, u64)>,
    /// When the first report on a round (`Nack` or `Done`) reached a sender.
    pub first_report: Option<Instant>,
    /// The pacing rate a sender took after each report on a round: (instant, bits/s).
    pub report_rates: Vec<(Instant, u64)>,
}

/// The path: the trunk between the two switches (sender side first) has the delay and the
/// faults; a bottleneck, if any, is each receiver's link from its switch (its queue is then
/// [`Network::host_queue`] of the receiver's host, which the control channel waits behind).
fn topology(sessions: usize, ch: ChannelCfg, seed: u64) -> Topology {
    // Charged the datagram and its 28 header bytes, as the network would.
    let framing = Framing::Frame(FrameFormat {
        header: 0,
        ..IDEAL_ETHERNET
    });
    let mut path = LinkSpec::ethernet(None, ch.delay);
    path.framing = framing;
    path.mtu = 65_000;
    path.buffer = Buffer::bytes(1 << 40);
    if !ch.loss_after_queue {
        path.faults.loss = ch.loss_ppm as f64 / 1e6;
    }
    path.faults.duplicate = ch.dup_ppm as f64 / 1e6;
    if ch.jitter > Duration::ZERO {
        path.faults.reorder = 0.5;
        path.faults.reorder_delay = ch.jitter;
    }
    let mut edge = LinkSpec::ethernet(None, Duration::ZERO);
    edge.mtu = 65_000;
    edge.buffer = Buffer::bytes(1 << 40);
    let mut narrow = LinkSpec::ethernet(ch.bottleneck.map(|(r, _)| r), Duration::ZERO);
    narrow.framing = framing;
    narrow.mtu = 65_000;
    narrow.buffer = Buffer::bytes(ch.bottleneck.map_or(1 << 40, |(_, cap)| cap));
    if ch.loss_after_queue {
        narrow.faults.loss = ch.loss_ppm as f64 / 1e6;
    }
    let host = |name: String, switch, link: &LinkSpec| HostSpec {
        name,
        addr: None,
        link: link.clone(),
        switch,
    };
    let hosts = (0..sessions)
        .map(|s| host(format!("s{s}"), 0, &edge))
        .chain((0..sessions).map(|s| host(format!("r{s}"), 1, &narrow)))
        .collect();
    Topology {
        hosts,
        switches: ["senders", "receivers"]
            .iter()
            .map(|n| SwitchSpec {
                forwarding: None,
                shared_buffer: None,
                name: n.to_string(),
                fabric: FabricSpec::default(),
                latency: Duration::ZERO,
                cut_through: false,
            })
            .collect(),
        trunks: vec![TrunkSpec {
            ends: [0, 1],
            links: [path.clone(), path],
        }],
        seed,
        multipath: Default::default(),
        circuits: None,
        rings: Vec::new(),
        failures: Vec::new(),
    }
}

/// The senders and receivers of every session on their hosts (session `s`: sender on host `s`,
/// receiver on host `sessions + s`).
struct Machines<'a> {
    mode: Mode,
    files: &'a [Vec<u8>],
    sc: &'a SenderConfig,
    ch: ChannelCfg,
    senders: Vec<Sender>,
    receivers: Vec<Receiver>,
    items: EventQueue<Item>,
    ready: VecDeque<(usize, Vec<u8>)>,
    out: Vec<Vec<u8>>,
    oks: Vec<bool>,
    next_index: Vec<u64>,
    /// Copies delivered per datagram, to know which were lost with no copy delivered.
    copies: HashMap<(usize, u32, u32), (u32, bool)>,
    gaps: Vec<(usize, u64, u32, u32)>,
    finished: Vec<bool>,
    /// When the last sender had its last answer (and queued its `Bye`): the end of the
    /// transfer as the sender's clock has it.
    done_at: Option<Instant>,
    dgram: Vec<u8>,
    buffers_done: Vec<(usize, u32, u32, Instant, u64)>,
    first_report: Option<Instant>,
    report_rates: Vec<(Instant, u64)>,
    /// Per session, the arrival of the last control message sent each way.
    ctl_last: Vec<[Instant; 2]>,
    ctl_rng: Rng,
    /// Per session, when the bottleneck will have sent what it was given (a copy of its
    /// drop-tail arithmetic, for the control channel's order only), and when the last datagram
    /// that got through it arrives.
    bottleneck_free: Vec<Instant>,
    last_data_due: Vec<Instant>,
    /// Per session: datagrams its receiver has read, whether it is stalled, and what waits for
    /// it to run again (data with the instants it arrived, then control and disk items).
    rx_read: Vec<u32>,
    rx_stalled: Vec<bool>,
    rx_held: Vec<Vec<(Instant, Vec<u8>)>>,
    rx_held_items: Vec<Vec<Item>>,
    /// Print every control message delivered between these instants
    /// (`WEFT_TRACE_CTL=FROM..TO`, seconds).
    trace: Option<(Instant, Instant)>,
}

/// A control message in a few words, for traces.
fn brief(c: &Control) -> String {
    match c {
        Control::Start { buf, index, .. } => format!("Start {buf} (index {index})"),
        Control::Ready { buf } => format!("Ready {buf}"),
        Control::End { buf, round, sent } => format!("End {buf} round {round} ({sent} sent)"),
        Control::Nack {
            buf,
            round,
            rx_rate,
            missing,
            ..
        } => format!(
            "Nack {buf} round {round}: {} missing, rx {:.1} Mbit/s",
            missing.iter().map(|(a, e)| e - a).sum::<u32>(),
            *rx_rate as f64 / 1e6
        ),
        Control::Done { buf, rx_rate, .. } => {
            format!("Done {buf}, rx {:.1} Mbit/s", *rx_rate as f64 / 1e6)
        }
        Control::FileOffer { file, .. } => format!("FileOffer {file}"),
        Control::FileAccept { file, .. } => format!("FileAccept {file}"),
        Control::FileEnd { file, .. } => format!("FileEnd {file}"),
        Control::FileDone { file, ok, .. } => format!("FileDone {file} {ok}"),
        other => format!("{other:?}").chars().take(40).collect(),
    }
}

impl Machines<'_> {
    fn sessions(&self) -> usize {
        self.senders.len()
    }

    /// Everything every machine has to say at `now`.
    fn drive(&mut self, now: Instant) {
        while let Some((_, it)) = self.items.pop_due(now) {
            if self.trace.is_some_and(|(a, b)| a <= now && now <= b) {
                let what = match &it {
                    Item::ToRecv(s, c) => format!("s{s} -> r: {}", brief(c)),
                    Item::ToSend(s, c) => format!("r{s} -> s: {}", brief(c)),
                    Item::Written(s, seq) => format!("r{s} wrote {seq}"),
                    Item::Wake(s) => format!("r{s} runs again"),
                };
                eprintln!("{:9.4} {what}", now.as_nanos() as f64 / 1e9);
            }
            match it {
                Item::ToRecv(s, _) | Item::Written(s, _) if self.rx_stalled[s] => {
                    self.rx_held_items[s].push(it);
                }
                Item::Wake(s) => self.wake_receiver(now, s),
                Item::ToRecv(s, c) => self.receivers[s].handle_control(now, c).unwrap(),
                Item::ToSend(s, c) => {
                    let report = matches!(c, Control::Nack { .. } | Control::Done { .. });
                    self.senders[s].handle_control(now, c).unwrap();
                    if report {
                        self.first_report.get_or_insert(now);
                        let rate = self.senders[s].rate().map_or(0, Rate::as_bps);
                        self.report_rates.push((now, rate));
                    }
                }
                Item::Written(s, seq) => self.receivers[s].buffer_written(seq),
            }
        }
        for s in 0..self.sessions() {
            self.senders[s].handle_timeout(now);
            if !self.rx_stalled[s] {
                self.receivers[s].handle_timeout(now);
            }
        }
        for s in 0..self.sessions() {
            self.drive_sender(now, s);
            self.drive_receiver(now, s);
        }
    }

    fn drive_sender(&mut self, now: Instant, s: usize) {
        self.flush_sender(now, s);
        while let Some(e) = self.senders[s].poll_event() {
            match e {
                SenderEvent::NeedBuffer { file } => {
                    let f = file as usize;
                    let idx = self.next_index[f];
                    let bs = self.sc.buffer_size;
                    let len = self.files[f].len() as u64;
                    let next = if idx < buffers_in(len, bs) {
                        self.next_index[f] += 1;
                        let n = buffer_len(len, bs, idx as u32) as usize;
                        let off = idx as usize * bs as usize;
                        Some((idx as u32, self.files[f][off..off + n].to_vec()))
                    } else {
                        None
                    };
                    self.senders[s].provide_buffer(file, next).unwrap();
                }
                SenderEvent::FileDone { file, ok, .. } => self.oks[file as usize] = ok,
                SenderEvent::BufferDone { file, index, .. } => {
                    let rate = self.senders[s].rate().map_or(0, Rate::as_bps);
                    self.buffers_done.push((s, file, index, now, rate));
                }
                SenderEvent::Finished => {
                    self.finished[s] = true;
                    self.done_at = Some(now);
                }
                _ => {}
            }
        }
        self.flush_sender(now, s);
        loop {
            self.dgram.clear();
            let Some(t) = self.senders[s].poll_transmit(now, &mut self.dgram) else {
                break;
            };
            assert_eq!(t.len, self.dgram.len());
            let key = {
                let p = weft_xfer::wire::DataPacket::new_checked(&self.dgram[..]).unwrap();
                (s, p.buffer(), p.offset())
            };
            self.copies.entry(key).or_insert((0, false));
            let mut frame = vec![0u8; HEADERS];
            frame[0..6].copy_from_slice(&host_mac(self.sessions() + s));
            frame[6..12].copy_from_slice(&host_mac(s));
            frame.extend_from_slice(&self.dgram);
            self.note_data(now, s, frame.len());
            self.ready.push_back((s, frame));
        }
        // The last datagram of a round queues its `End`.
        self.flush_sender(now, s);
    }

    /// A datagram of `len` bytes (frame) of session `s` leaves at `now`: when it arrives, if the
    /// bottleneck takes it (the control channel keeps behind it).
    fn note_data(&mut self, now: Instant, s: usize, len: usize) {
        let at = now + self.ch.delay;
        let Some((rate, cap)) = self.ch.bottleneck else {
            self.last_data_due[s] = self.last_data_due[s].max(at);
            return;
        };
        let start = at.max(self.bottleneck_free[s]);
        if start - at > rate.time_to_send(weft_model::Size(cap)) {
            return;
        }
        self.bottleneck_free[s] = start + rate.time_to_send(weft_model::Size(len as u64));
        self.last_data_due[s] = self.bottleneck_free[s];
    }

    /// Puts what sender `s` has to say on its control channel.
    fn flush_sender(&mut self, now: Instant, s: usize) {
        while let Some(c) = self.senders[s].poll_control() {
            let due = self.ctl_due(now, s, 0);
            self.items.push(due, Item::ToRecv(s, c));
        }
    }

    /// Puts what receiver `s` has to say on its control channel.
    fn flush_receiver(&mut self, now: Instant, s: usize) {
        while let Some(c) = self.receivers[s].poll_control() {
            let due = self.ctl_due(now, s, 1);
            self.items.push(due, Item::ToSend(s, c));
        }
    }

    /// When a control message sent at `now` on session `s`'s connection in direction `dir` (0:
    /// to the receiver) arrives: after the delay, a time-out per loss, and never before the
    /// message sent ahead of it (one TCP connection delivers in order).
    fn ctl_due(&mut self, now: Instant, s: usize, dir: usize) -> Instant {
        // Towards the receiver, the message is not delivered before the last datagram the
        // session sent ahead of it (one path: an `End` does not overtake its round's data).
        let behind = if dir == 0 {
            self.last_data_due[s]
        } else {
            Instant::ZERO
        };
        let mut due = (now + self.ch.ctl_delay).max(behind);
        while self.ch.ctl_loss_ppm > 0 && self.ctl_rng.chance(self.ch.ctl_loss_ppm as f64 / 1e6) {
            due += self.ch.ctl_rto;
        }
        let last = &mut self.ctl_last[s][dir];
        *last = (*last).max(due);
        *last
    }

    fn drive_receiver(&mut self, now: Instant, s: usize) {
        self.flush_receiver(now, s);
        while let Some(e) = self.receivers[s].poll_event() {
            match e {
                ReceiverEvent::Offer { file, .. } => self.receivers[s]
                    .accept_file(now, file, Vec::new())
                    .unwrap(),
                ReceiverEvent::Write {
                    seq,
                    file,
                    offset,
                    data,
                    gaps: g,
                    verify,
                    ..
                } => {
                    // The driver's pipeline: check the BLAKE3, then write.
                    if let Some(h) = verify
                        && *blake3::hash(&data).as_bytes() != h
                    {
                        self.receivers[s].buffer_corrupt(seq, data);
                        continue;
                    }
                    let o = offset as usize;
                    self.out[file as usize][o..o + data.len()].copy_from_slice(&data);
                    for (a, b) in g {
                        self.gaps.push((s, offset, a, b));
                    }
                    // Reused buffers: gaps must still come out zero.
                    self.receivers[s].recycle(data);
                    self.items.push(now + self.ch.disk, Item::Written(s, seq));
                }
                ReceiverEvent::FileEnd { file, digest } => {
                    let blocks: Vec<[u8; 32]> = self.out[file as usize]
                        .chunks(self.sc.buffer_size as usize)
                        .map(|c| *blake3::hash(c).as_bytes())
                        .collect();
                    let ok = !self.mode.is_reliable() || file_digest(&blocks) == digest;
                    self.receivers[s].file_result(file, ok, String::new());
                }
                ReceiverEvent::Finished => {}
            }
        }
        self.flush_receiver(now, s);
    }

    /// Receiver `s` runs again after a stall: it reads the datagrams that arrived meanwhile
    /// (stamped with their arrival, if the stall says so), then the control messages.
    fn wake_receiver(&mut self, now: Instant, s: usize) {
        self.rx_stalled[s] = false;
        let stamps = self.ch.rx_stall.is_some_and(|st| st.stamps);
        for (at, b) in std::mem::take(&mut self.rx_held[s]) {
            self.receivers[s].handle_datagram_at(now, stamps.then_some(at), &b);
        }
        for it in std::mem::take(&mut self.rx_held_items[s]) {
            match it {
                Item::ToRecv(_, c) => self.receivers[s].handle_control(now, c).unwrap(),
                Item::Written(_, seq) => self.receivers[s].buffer_written(seq),
                _ => {}
            }
        }
        self.receivers[s].handle_timeout(now);
        self.drive_receiver(now, s);
    }

    fn done(&self) -> bool {
        self.finished.iter().all(|f| *f) && self.items.is_empty() && self.ready.is_empty()
    }
}

impl Hosts<Vec<u8>> for Machines<'_> {
    fn poll_send(&mut self, now: Instant) -> Option<(usize, Instant, Vec<u8>)> {
        if self.ready.is_empty() {
            self.drive(now);
        }
        let next = self.ready.pop_front();
        next.map(|(h, f)| (h, now, f))
    }

    fn deliver(&mut self, now: Instant, port: usize, _due: Instant, frame: Vec<u8>) {
        let s = port - self.sessions();
        let b = &frame[HEADERS..];
        let p = weft_xfer::wire::DataPacket::new_checked(b).unwrap();
        if let Some(e) = self.copies.get_mut(&(s, p.buffer(), p.offset())) {
            e.0 += 1;
            e.1 = true;
        }
        if self.rx_stalled[s] {
            self.rx_held[s].push((now, b.to_vec()));
            return;
        }
        let stamps = self.ch.rx_stall.is_none_or(|st| st.stamps);
        self.receivers[s].handle_datagram_at(now, stamps.then_some(now), b);
        self.rx_read[s] += 1;
        if let Some(st) = self.ch.rx_stall
            && self.rx_read[s] == st.after
        {
            self.rx_stalled[s] = true;
            self.items.push(now + st.pause, Item::Wake(s));
        }
        self.drive_receiver(now, s);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if !self.ready.is_empty() {
            return Some(Instant::ZERO);
        }
        let machines = self
            .senders
            .iter()
            .map(Sender::poll_timeout)
            .chain(self.receivers.iter().map(Receiver::poll_timeout));
        machines.chain([self.items.peek_time()]).flatten().min()
    }
}

/// Runs `sessions` sessions sending `files` (MBTP: one file shared by all sessions through one
/// queue of buffer indices; otherwise one session sends all files).
pub fn run(
    mode: Mode,
    files: &[Vec<u8>],
    sessions: usize,
    sc: SenderConfig,
    ch: ChannelCfg,
    seed: u64,
) -> Outcome {
    let metas: Vec<FileMeta> = files
        .iter()
        .enumerate()
        .map(|(i, f)| FileMeta {
            name: format!("f{i}"),
            size: f.len() as u64,
            hash: [f.len() as u8; 32],
            resume: false,
        })
        .collect();
    let mut m = Machines {
        mode,
        files,
        sc: &sc,
        ch,
        senders: (0..sessions)
            .map(|s| Sender::new(sc.clone(), 1000 + s as u64, metas.clone()))
            .collect(),
        receivers: (0..sessions)
            .map(|s| {
                Receiver::new(ReceiverConfig {
                    mode,
                    session: 1000 + s as u64,
                    window: sc.window,
                    max_buffer: 1 << 24,
                    max_packet: 65_000,
                    max_file: 1 << 30,
                    settle: ch.settle.unwrap_or(ch.delay + ch.jitter + ch.jitter),
                    arrival_reports: true,
                })
            })
            .collect(),
        items: EventQueue::new(),
        ready: VecDeque::new(),
        out: files.iter().map(|f| vec![0xee; f.len()]).collect(),
        oks: vec![false; files.len()],
        next_index: vec![0; files.len()],
        copies: HashMap::new(),
        gaps: Vec::new(),
        finished: vec![false; sessions],
        done_at: None,
        dgram: Vec::with_capacity(70_000),
        buffers_done: Vec::new(),
        first_report: None,
        report_rates: Vec::new(),
        ctl_last: vec![[Instant::ZERO; 2]; sessions],
        rx_read: vec![0; sessions],
        rx_stalled: vec![false; sessions],
        rx_held: vec![Vec::new(); sessions],
        rx_held_items: (0..sessions).map(|_| Vec::new()).collect(),
        ctl_rng: Rng::for_stream(seed, 77),
        bottleneck_free: vec![Instant::ZERO; sessions],
        last_data_due: vec![Instant::ZERO; sessions],
        trace: std::env::var("WEFT_TRACE_CTL").ok().and_then(|s| {
            let (a, b) = s.split_once("..")?;
            let at = |x: &str| x.parse::<f64>().ok().map(|s| Instant((s * 1e9) as u64));
            Some((at(a)?, at(b)?))
        }),
    };
    let mut net: Network<Vec<u8>> = Network::new(&topology(sessions, ch, seed)).unwrap();
    // An hour of simulated time is far more than any of these transfers needs.
    let mut clock = VirtualClock::until(Instant(3_600_000_000_000));
    let end = clock.end();
    engine::run(&mut net, &mut m, &mut clock, |now, net, m| {
        now < end && !(m.done() && Network::poll_timeout(net).is_none())
    });
    assert!(m.finished.iter().all(|f| *f), "did not finish");
    let mut dropped: Vec<_> = m
        .copies
        .iter()
        .filter(|(_, (n, _))| *n == 0)
        .map(|(k, _)| *k)
        .collect();
    dropped.sort();
    Outcome {
        files: m.out,
        oks: m.oks,
        dropped,
        senders: m.senders,
        receivers: m.receivers,
        gaps: m.gaps,
        end: m.done_at.unwrap(),
        buffers_done: m.buffers_done,
        first_report: m.first_report,
        report_rates: m.report_rates,
    }
}

pub fn cfg(mode: Mode, packet: u32, buffer: u32, window: u32, rate: RateMode) -> SenderConfig {
    SenderConfig {
        mode,
        packet_size: packet,
        buffer_size: buffer,
        window,
        rate,
        stripes: 3,
        burst: Duration::from_micros(20),
        early_probe: true,
    }
}

pub fn lossy(loss_ppm: u64) -> ChannelCfg {
    ChannelCfg {
        loss_ppm,
        dup_ppm: 20_000,
        delay: Duration::from_millis(5),
        jitter: Duration::from_millis(2),
        ctl_delay: Duration::from_millis(5),
        disk: Duration::from_micros(300),
        ..ChannelCfg::default()
    }
}

/// A fresh (not resumed) file of `size` bytes for the hand-made tests (the hash is not checked).
pub fn fresh_meta(name: &str, size: u64) -> FileMeta {
    FileMeta {
        name: name.into(),
        size,
        hash: [0; 32],
        resume: false,
    }
}

/// The adaptive controller as `weft send` starts it: at 1 Gbit/s, between 1 Mbit/s and 10
/// Gbit/s, with 5% loss in a round counted as congestion.
pub fn adaptive_from_1gbps() -> RateMode {
    RateMode::Adaptive {
        initial: Rate::mbps(1000),
        min: Rate::mbps(1),
        max: Rate::mbps(10_000),
        loss_threshold_ppm: 50_000,
    }
}

pub fn data(n: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    (0..n).map(|_| r.next_u64() as u8).collect()
}
