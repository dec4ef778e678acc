//! The part of a running throughput test that both ends share: stream threads, a control
//! reader thread, counters for interval reports, abort, and CPU accounting.
//!
//! The controlling thread owns the control connection's writing half and waits on one channel
//! for everything else: control messages (from the reader thread) and stream outcomes.

use std::net::{Shutdown, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use super::stream::{self, Counter, Outcome, UdpDrain};
use crate::control::Control;
use crate::cpu::ThreadCpu;
use crate::error::ProbeError;
use crate::proto::{
    CpuUse, Interval, Message, SenderDone, SockInfo, StreamEnd, TputSpec, Transport,
};

/// A data socket of either transport.
#[derive(Debug)]
pub enum DataSock {
    /// A TCP data connection.
    Tcp(TcpStream),
    /// A connected UDP socket.
    Udp(UdpSocket),
}

/// Something the controlling thread must react to.
#[derive(Debug)]
pub enum Ev {
    /// A control message, or the control connection failed.
    Ctrl(Result<Message, ProbeError>),
    /// Sending stream `i` finished.
    Tx(usize, Result<Outcome, ProbeError>),
    /// Receiving stream `i` finished.
    Rx(usize, Result<Outcome, ProbeError>),
}

/// A running test at one end.
pub struct Session {
    events: Receiver<Ev>,
    abort: Arc<AtomicBool>,
    tx_counters: Vec<Arc<Counter>>,
    rx_counters: Vec<Arc<Counter>>,
    drains: Vec<Arc<UdpDrain>>,
    unblock: Vec<DataSock>,
    tx_out: Vec<Option<Outcome>>,
    rx_out: Vec<Option<Outcome>>,
    start: Instant,
    cpu0: ThreadCpu,
    tick: (u64, u64, u64, u64, u64),
}

impl Session {
    /// Starts stream threads for `tx` (this end sends) and `rx` (this end receives) and a reader
    /// thread on `reader`. `start` is the test's time zero.
    pub fn start(
        spec: &TputSpec,
        tx: Vec<DataSock>,
        rx: Vec<DataSock>,
        reader: Control,
        start: Instant,
        idle: Duration,
    ) -> Result<Session, ProbeError> {
        let cpu0 = ThreadCpu::thread();
        let (ev_tx, events) = channel();
        let abort = Arc::new(AtomicBool::new(false));
        let mut unblock = Vec::new();
        for s in tx.iter().chain(rx.iter()) {
            let c = match s {
                DataSock::Tcp(t) => t.try_clone().map(DataSock::Tcp),
                DataSock::Udp(u) => u.try_clone().map(DataSock::Udp),
            };
            unblock.push(c.map_err(|e| ProbeError::io("cloning a data socket", e))?);
        }
        let mut sess = Session {
            events,
            abort,
            tx_counters: Vec::new(),
            rx_counters: Vec::new(),
            drains: Vec::new(),
            unblock,
            tx_out: (0..tx.len()).map(|_| None).collect(),
            rx_out: (0..rx.len()).map(|_| None).collect(),
            start,
            cpu0,
            tick: (0, 0, 0, 0, 0),
        };
        let n_tx = tx.len().max(1) as u64;
        let rate = spec.rate_bps.unwrap_or(0);
        let per_stream_rate = if rate == 0 { 0 } else { (rate / n_tx).max(1) };
        for (i, s) in tx.into_iter().enumerate() {
            let counter = Arc::new(Counter::default());
            sess.tx_counters.push(counter.clone());
            let amount = spec.stream_amount(i as u16);
            let (len, abort, ev) = (spec.len as usize, sess.abort.clone(), ev_tx.clone());
            spawn("weft-tx", move || {
                let r = match s {
                    DataSock::Tcp(t) => {
                        stream::tcp_send(t, amount, len, start, idle, &counter, &abort)
                    }
                    DataSock::Udp(u) => {
                        stream::udp_send(u, amount, len, per_stream_rate, start, &counter, &abort)
                    }
                };
                let _ = ev.send(Ev::Tx(i, r));
            })?;
        }
        for (i, s) in rx.into_iter().enumerate() {
            let counter = Arc::new(Counter::default());
            let drain = Arc::new(UdpDrain::default());
            sess.rx_counters.push(counter.clone());
            sess.drains.push(drain.clone());
            let (len, abort, ev) = (spec.len as usize, sess.abort.clone(), ev_tx.clone());
            spawn("weft-rx", move || {
                let r = match s {
                    DataSock::Tcp(t) => stream::tcp_recv(t, len, start, idle, &counter, &abort),
                    DataSock::Udp(u) => stream::udp_recv(u, start, idle, &counter, &drain, &abort),
                };
                let _ = ev.send(Ev::Rx(i, r));
            })?;
        }
        spawn_reader(reader, ev_tx)?;
        Ok(sess)
    }

    /// The next event, or `None` after `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<Ev> {
        self.events.recv_timeout(timeout).ok()
    }

    /// Records a stream outcome; returns its error, if any.
    pub fn record(&mut self, ev: Ev) -> Result<Option<Message>, ProbeError> {
        match ev {
            Ev::Ctrl(m) => m.map(Some),
            Ev::Tx(i, r) => {
                if let Some(slot) = self.tx_out.get_mut(i) {
                    *slot = Some(r?);
                }
                Ok(None)
            }
            Ev::Rx(i, r) => {
                if let Some(slot) = self.rx_out.get_mut(i) {
                    *slot = Some(r?);
                }
                Ok(None)
            }
        }
    }

    /// Whether every sending stream has finished.
    pub fn tx_done(&self) -> bool {
        self.tx_out.iter().all(Option::is_some)
    }

    /// Whether every receiving stream has finished.
    pub fn rx_done(&self) -> bool {
        self.rx_out.iter().all(Option::is_some)
    }

    /// This end's sender totals, once [`Session::tx_done`].
    pub fn sender_done(&self) -> SenderDone {
        let ends = self.tx_ends();
        SenderDone {
            bytes: ends.iter().map(|e| e.bytes).collect(),
            packets: ends.iter().map(|e| e.packets).collect(),
        }
    }

    /// Passes the peer sender's datagram counts to the UDP receivers (see [`UdpDrain`]).
    pub fn peer_sender_done(
        &self,
        sd: &SenderDone,
        transport: Transport,
    ) -> Result<(), ProbeError> {
        if sd.packets.len() != self.drains.len() {
            return Err(ProbeError::Protocol(format!(
                "SenderDone for {} streams, expected {}",
                sd.packets.len(),
                self.drains.len()
            )));
        }
        if transport == Transport::Udp {
            for (d, &n) in self.drains.iter().zip(&sd.packets) {
                d.set_expected(n);
            }
        }
        Ok(())
    }

    /// Counters since the previous tick, as an interval report ending now.
    pub fn tick(&mut self, now: Instant) -> Interval {
        let sum = |cs: &[Arc<Counter>], f: fn(&Counter) -> u64| cs.iter().map(|c| f(c)).sum();
        let tx: u64 = sum(&self.tx_counters, |c| c.bytes.load(Ordering::Relaxed));
        let rx: u64 = sum(&self.rx_counters, |c| c.bytes.load(Ordering::Relaxed));
        let rxp: u64 = sum(&self.rx_counters, |c| c.packets.load(Ordering::Relaxed));
        let miss: u64 = sum(&self.rx_counters, |c| c.missing.load(Ordering::Relaxed));
        let end_ns = now.saturating_duration_since(self.start).as_nanos() as u64;
        let (t0, tx0, rx0, rxp0, miss0) = self.tick;
        self.tick = (end_ns, tx, rx, rxp, miss);
        Interval {
            start_ns: t0,
            end_ns,
            tx_bytes: tx.saturating_sub(tx0),
            rx_bytes: rx.saturating_sub(rx0),
            rx_packets: rxp.saturating_sub(rxp0),
            rx_lost: miss as i64 - miss0 as i64,
        }
    }

    /// Stops every stream: sets the abort flag and shuts the sockets down.
    pub fn abort(&self) {
        self.abort.store(true, Ordering::SeqCst);
        for s in &self.unblock {
            match s {
                DataSock::Tcp(t) => {
                    let _ = t.shutdown(Shutdown::Both);
                }
                // A UDP receiver wakes within its short read time-out and sees the flag.
                DataSock::Udp(_) => {}
            }
        }
    }

    /// This end's CPU use: every stream thread plus the controlling thread, over `wall`.
    pub fn cpu(&self, wall: Duration) -> CpuUse {
        let ctl = ThreadCpu::thread().since(self.cpu0);
        let all = self
            .tx_out
            .iter()
            .chain(self.rx_out.iter())
            .flatten()
            .fold(ctl, |acc, o| acc.plus(o.cpu));
        CpuUse {
            user_ns: all.user_ns,
            sys_ns: all.sys_ns,
            wall_ns: wall.as_nanos() as u64,
        }
    }

    /// Final counters of the sending streams (defaults for unfinished ones).
    pub fn tx_ends(&self) -> Vec<StreamEnd> {
        self.tx_out
            .iter()
            .map(|o| o.as_ref().map(|o| o.end.clone()).unwrap_or_default())
            .collect()
    }

    /// Final counters of the receiving streams.
    pub fn rx_ends(&self) -> Vec<StreamEnd> {
        self.rx_out
            .iter()
            .map(|o| o.as_ref().map(|o| o.end.clone()).unwrap_or_default())
            .collect()
    }

    /// Effective options of the sending sockets now (after any auto-tuning), in stream order.
    pub fn tx_infos(&self) -> Vec<SockInfo> {
        self.unblock[..self.tx_out.len()].iter().map(info).collect()
    }

    /// Effective options of the receiving sockets now, in stream order.
    pub fn rx_infos(&self) -> Vec<SockInfo> {
        self.unblock[self.tx_out.len()..].iter().map(info).collect()
    }

    /// Time zero of the test.
    pub fn start_instant(&self) -> Instant {
        self.start
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Stream threads never outlive a finished or failed test.
        if !(self.tx_done() && self.rx_done()) {
            self.abort();
        }
    }
}

fn info(s: &DataSock) -> SockInfo {
    match s {
        DataSock::Tcp(t) => super::opts::tcp_info(t),
        DataSock::Udp(u) => super::opts::udp_info(u),
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), ProbeError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(|_| ())
        .map_err(|e| ProbeError::io("starting a stream thread", e))
}

/// Forwards control messages until the connection fails or closes; blocking reads (the test's
/// own deadline bounds it, and the controlling thread shuts the connection down at the end).
fn spawn_reader(mut reader: Control, ev: Sender<Ev>) -> Result<(), ProbeError> {
    reader.set_read_timeout(None)?;
    spawn("weft-ctl", move || {
        loop {
            let m = reader.recv();
            let stop = m.is_err();
            if ev.send(Ev::Ctrl(m)).is_err() || stop {
                break;
            }
        }
    })
}
