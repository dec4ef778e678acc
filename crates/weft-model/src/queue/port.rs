//! An output port: a [`Queue`] drained by a line of a given rate. An [`Element`] with one input
//! and one output (port 0).

use crate::element::{Element, PortId};
use crate::net::Serialiser;
use crate::queue::{Capacity, DropPolicy, Queue, QueueCounters, Queued};
use crate::time::Instant;
use crate::units::Rate;

/// A buffer in front of a line. Items leave in FIFO order, each when its last bit has been sent.
///
/// The line is a [`Serialiser`], so rounding to nanoseconds never accumulates over millions of
/// cells.
#[derive(Clone, Debug)]
pub struct Port<T> {
    queue: Queue<T>,
    rate: Rate,
    /// The item on the line and the instant its last bit leaves.
    sending: Option<(T, Instant)>,
    line: Serialiser,
}

impl<T: Queued> Port<T> {
    /// A port sending at `rate` from a buffer of `capacity` with `policy`.
    pub fn new(rate: Rate, capacity: Capacity, policy: DropPolicy) -> Self {
        Port {
            queue: Queue::new(capacity, policy),
            rate,
            sending: None,
            line: Serialiser::new(Some(rate)),
        }
    }

    /// The line rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The buffer (without the item on the line).
    pub fn queue(&self) -> &Queue<T> {
        &self.queue
    }

    /// Counters of the buffer.
    pub fn counters(&self) -> &QueueCounters {
        self.queue.counters()
    }

    /// Items held, including the one being sent.
    pub fn len(&self) -> usize {
        self.queue.len() + usize::from(self.sending.is_some())
    }

    /// True when nothing is held or being sent.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Puts the next queued item on the line: at `now` if the line was idle, else right behind
    /// the item that just left.
    fn start_next(&mut self, now: Option<Instant>) {
        if self.sending.is_some() {
            return;
        }
        if let Some(item) = self.queue.dequeue() {
            let bytes = item.wire_len() as u64;
            let done = match now {
                Some(now) => self.line.send(now.0, bytes),
                None => self.line.send_next(bytes),
            };
            self.sending = Some((item, Instant(done)));
        }
    }
}

impl<T: Queued> Element<T> for Port<T> {
    fn handle_input(&mut self, now: Instant, _port: PortId, item: T) {
        let _ = self.queue.offer(item);
        self.start_next(Some(now));
    }

    fn poll_output(&mut self, now: Instant) -> Option<(PortId, T)> {
        match &self.sending {
            Some((_, done)) if *done <= now => {
                let (item, _) = self.sending.take()?;
                self.start_next(None);
                Some((0, item))
            }
            _ => None,
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.sending.as_ref().map(|(_, done)| *done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_at_line_rate_without_drift() {
        // 53-byte frames at 149.76 Mbit/s: one every 2831.2 ns.
        let mut p = Port::new(
            Rate(149_760_000),
            Capacity::Cells(1_000_000),
            DropPolicy::Tail,
        );
        let n = 100_000u64;
        for _ in 0..n {
            p.handle_input(Instant::ZERO, 0, vec![0u8; 53]);
        }
        let mut last = Instant::ZERO;
        let mut count = 0;
        while let Some(t) = p.poll_timeout() {
            assert!(p.poll_output(Instant(t.0 - 1)).is_none());
            assert!(p.poll_output(t).is_some());
            last = t;
            count += 1;
        }
        assert_eq!(count, n);
        let exact = (n as u128 * 53 * 8 * 1_000_000_000).div_ceil(149_760_000);
        assert_eq!(last.0 as u128, exact);
    }
}
