//! The frames the switch sends in one turn, held per output port and handed to the kernel
//! together when the turn ends ([`FrameTx::Batch`], the default): one `sendmmsg` per port and
//! turn instead of one `send` per frame ([`FrameTx::Send`], `WEFT_EMU_TX=send`, for comparing).
//!
//! Timing is the switch's: a turn delivers only frames due by its instant, so a frame held here
//! leaves in the same turn it was due, after the turn's other deliveries (a few microseconds at
//! most; the lag recorded is against the turn's instant, as before).

use crate::port_io::SwitchPort;

/// Environment variable that picks the send path (`batch` or `send`), for comparing them.
pub const FRAME_TX_ENV: &str = "WEFT_EMU_TX";

/// How the switch writes frames to its ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameTx {
    /// Frames of one turn leave together, one `sendmmsg` per port.
    Batch,
    /// One `send` per frame as it is delivered.
    Send,
}

impl FrameTx {
    /// `$WEFT_EMU_TX` (`batch` or `send`); `batch` when unset or unknown.
    pub fn from_env() -> Self {
        match std::env::var(FRAME_TX_ENV).as_deref() {
            Ok("send") => FrameTx::Send,
            _ => FrameTx::Batch,
        }
    }
}

/// Frames waiting for the end of the turn, per output port.
#[derive(Debug)]
pub struct TxBatches {
    mode: FrameTx,
    held: Vec<Vec<Vec<u8>>>,
    waiting: usize,
    refused: u64,
    calls: u64,
}

impl TxBatches {
    /// Batches for `ports` ports, sent the way `mode` says.
    pub fn new(ports: usize, mode: FrameTx) -> Self {
        TxBatches {
            mode,
            held: vec![Vec::new(); ports],
            waiting: 0,
            refused: 0,
            calls: 0,
        }
    }

    /// Sends `frame` out of `port` of `sockets`: now ([`FrameTx::Send`]) or at the next
    /// [`flush`](Self::flush). A port outside `sockets` drops it.
    pub fn push(&mut self, sockets: &[SwitchPort], port: usize, frame: Vec<u8>) {
        let Some(s) = sockets.get(port) else {
            return;
        };
        match self.mode {
            FrameTx::Send => {
                self.calls += 1;
                if s.send(&frame).is_err() {
                    self.refused += 1;
                }
            }
            FrameTx::Batch => {
                self.held[port].push(frame);
                self.waiting += 1;
            }
        }
    }

    /// Hands every held frame to the kernel, port by port, in the order they were pushed.
    pub fn flush(&mut self, sockets: &[SwitchPort]) {
        if self.waiting == 0 {
            return;
        }
        for (port, frames) in self.held.iter_mut().enumerate() {
            if frames.is_empty() {
                continue;
            }
            self.calls += frames.len().div_ceil(weft_sys::packet::SEND_BATCH_MAX) as u64;
            self.refused += sockets[port].send_many(frames) as u64;
            frames.clear();
        }
        self.waiting = 0;
    }

    /// Frames held for the next flush.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Frames the kernel refused (peer backlog full) so far.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Send calls made so far (`send` or `sendmmsg`; at least one per port and flush).
    pub fn calls(&self) -> u64 {
        self.calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{DriverConfig, WallClock};
    use crate::port_io::FrameRx;
    use std::cell::RefCell;
    use weft_model::engine::Clock;
    use weft_sys::{PacketOptions, PacketSocket};

    /// Numbered frames of a local experimental EtherType (0x88b5).
    fn frames(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut f = vec![0u8; 64];
                f[12..14].copy_from_slice(&[0x88, 0xb5]);
                f[14..16].copy_from_slice(&(i as u16).to_be_bytes());
                f
            })
            .collect()
    }

    /// The numbers of the test frames `rx` holds, in arrival order.
    fn arrived(rx: &PacketSocket) -> Vec<u16> {
        std::thread::sleep(std::time::Duration::from_millis(30));
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while let Some(_r) = rx.recv(&mut buf).unwrap() {
            if buf[12..14] == [0x88, 0xb5] {
                got.push(u16::from_be_bytes([buf[14], buf[15]]));
            }
        }
        got
    }

    /// A turn's frames to a port are held until the clock is asked to wait (the turn's end),
    /// then leave in order in one system call; `WEFT_EMU_TX=send` sends each at once, one call
    /// a frame. Needs root (skipped otherwise, failing under WEFT_TEST_STRICT=1).
    #[test]
    fn a_turns_frames_leave_together_when_the_clock_waits() {
        if let Some(r) = weft_testutil::missing_root("AF_PACKET") {
            weft_testutil::skip(&r);
            return;
        }
        weft_testutil::in_private_netns(|| {
            let ports = vec![SwitchPort::open("lo", 1518, FrameRx::Recvmsg, 1 << 20).unwrap()];
            let rx = PacketSocket::open("lo", PacketOptions::switch_port(1 << 22)).unwrap();
            let cfg = DriverConfig {
                busy_poll_ns: 1_000_000,
                ..DriverConfig::default()
            };
            let tx = RefCell::new(TxBatches::new(1, FrameTx::Batch));
            let mut clock = WallClock::new(&ports, &cfg, &tx);
            for f in frames(10) {
                tx.borrow_mut().push(&ports, 0, f);
            }
            assert_eq!(arrived(&rx), Vec::<u16>::new(), "held until the turn ends");
            assert_eq!(tx.borrow().waiting(), 10);
            clock.wait_until(None, true);
            assert_eq!(arrived(&rx), (0..10).collect::<Vec<u16>>());
            assert_eq!((tx.borrow().calls(), tx.borrow().waiting()), (1, 0));

            let tx = RefCell::new(TxBatches::new(1, FrameTx::Send));
            for f in frames(10) {
                tx.borrow_mut().push(&ports, 0, f);
            }
            assert_eq!(arrived(&rx), (0..10).collect::<Vec<u16>>());
            assert_eq!(tx.borrow().calls(), 10);
        });
    }
}
