//! Real bytes on a [`Connection`]: the unacknowledged part of the sent stream and a receive
//! ring, filled and emptied exactly where the connection says (see [`super`] on why the
//! connection itself only counts). Used by byte-exact tests, captures and the interoperability
//! test against Linux; it allocates per segment and is not meant for bulk simulation.

use std::collections::VecDeque;

use super::conn::Connection;
use super::segment::Segment;
use crate::time::Instant;

/// A connection that carries bytes.
#[derive(Clone, Debug)]
pub struct ByteConnection {
    conn: Connection,
    /// Bytes queued and not yet acknowledged; `tx[0]` is at stream offset `tx_base`.
    tx: VecDeque<u8>,
    tx_base: u64,
    /// Receive ring of the buffer's size: stream offset `o` lives at `o % len`.
    rx: Vec<u8>,
}

impl ByteConnection {
    /// Wraps `conn`, which must not have sent or received data yet.
    pub fn new(conn: Connection) -> Self {
        let cap = conn.config().recv_buffer as usize;
        ByteConnection {
            conn,
            tx: VecDeque::new(),
            tx_base: 0,
            rx: vec![0; cap],
        }
    }

    /// The connection underneath (state, counters).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Queues as much of `data` as the send buffer takes; returns how many bytes.
    pub fn send(&mut self, data: &[u8]) -> usize {
        let n = self.conn.send(data.len());
        self.tx.extend(&data[..n]);
        n
    }

    /// Reads received bytes into `buf`; returns how many.
    pub fn recv(&mut self, buf: &mut [u8]) -> usize {
        let n = (buf.len() as u64).min(self.conn.readable()) as usize;
        if n == 0 || self.rx.is_empty() {
            return 0;
        }
        let cap = self.rx.len();
        let at = (self.conn.read_offset() % cap as u64) as usize;
        let first = n.min(cap - at);
        buf[..first].copy_from_slice(&self.rx[at..at + first]);
        buf[first..n].copy_from_slice(&self.rx[..n - first]);
        self.conn.recv(n)
    }

    /// Closes the sending direction.
    pub fn close(&mut self) {
        self.conn.close();
    }

    /// A segment arrived with `payload`. A payload whose length disagrees with the header is
    /// ignored (as a corrupted segment would be).
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment, payload: &[u8]) {
        if payload.len() != seg.len as usize {
            return;
        }
        if let Some(r) = self.conn.handle_segment(now, seg)
            && !self.rx.is_empty()
        {
            let cap = self.rx.len();
            let src = &payload[r.skip as usize..(r.skip + r.len) as usize];
            let at = (r.offset % cap as u64) as usize;
            let first = src.len().min(cap - at);
            self.rx[at..at + first].copy_from_slice(&src[..first]);
            self.rx[..src.len() - first].copy_from_slice(&src[first..]);
        }
        let acked = self.conn.acked_offset();
        let drop = (acked.saturating_sub(self.tx_base) as usize).min(self.tx.len());
        self.tx.drain(..drop);
        self.tx_base += drop as u64;
    }

    /// Runs due timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.conn.handle_timeout(now);
    }

    /// The next segment to send, its payload written into `payload` (cleared first).
    pub fn poll_transmit(&mut self, now: Instant, payload: &mut Vec<u8>) -> Option<Segment> {
        let seg = self.conn.poll_transmit(now)?;
        payload.clear();
        if seg.len > 0 {
            let from = (self.conn.send_offset(&seg) - self.tx_base) as usize;
            payload.extend(self.tx.range(from..from + seg.len as usize));
        }
        Some(seg)
    }

    /// When to call [`ByteConnection::handle_timeout`] next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.conn.poll_timeout()
    }
}
