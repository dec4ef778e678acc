//! What a workload's keys make of the TCP its hosts run (`stack`, `cc`, `mss`, `mtu`, `window`,
//! `nodelay`, `echo`), for every engine that runs weft's own TCP or its closed forms.

use super::{TcpStack, Workload};
use crate::app::rr::Answer;
use crate::tcp::config::{MAX_UNSCALED_WINDOW, MAX_WINDOW_SCALE};
use crate::tcp::{CcAlgorithm, Config};

impl Workload {
    /// The TCP configuration of the workload's connections over a path of MTU `path_mtu`
    /// bytes: the `stack`'s defaults (the 1995 BSD stack unless `linux`), `cc`, the MSS (`mss`,
    /// else the path MTU or `mtu` less 40 bytes), `window`, and `nodelay` turning Nagle's
    /// algorithm off.
    ///
    /// `window` on the BSD stack is both socket buffers: a fixed advertised window, scaled only
    /// when it does not fit 16 bits (as a stack asked for such a buffer negotiates). On Linux it
    /// is what the emulator asks of Linux: the sender keeps at most `window` bytes in its socket
    /// (its send buffer here), and the receiver gets a buffer of four times `window` with
    /// `window` as its clamp, from which Linux takes only its window scale
    /// (`tcp_select_initial_window`: the shift that carries the clamp, 0 below 64 KiB) and the
    /// SYN's window; once connected it offers what its buffer has free (captured on the emulator:
    /// 35504, then up to 65535 bytes, at a clamp of 35600), so the sender's limit is the one that
    /// holds.
    pub fn tcp_config(&self, path_mtu: u64) -> Config {
        let stack = self.stack.unwrap_or_default();
        let mut cfg = match stack {
            TcpStack::Bsd => Config::default(),
            TcpStack::Linux => Config::linux(),
        };
        if let Some(cc) = self.cc {
            cfg.cc = cc;
        } else if stack == TcpStack::Bsd {
            cfg.cc = CcAlgorithm::Reno;
        }
        // As Linux's dctcp module asks for ECN on its sockets whatever net.ipv4.tcp_ecn says;
        // another cc asks for it where the workload says (net.ipv4.tcp_ecn = 1).
        cfg.ecn = cfg.cc == CcAlgorithm::Dctcp || self.ecn;
        let mtu = self.mtu.map_or(path_mtu, |m| m.0.min(path_mtu));
        let mss = self.mss.map_or(mtu.saturating_sub(40), |m| m.0);
        cfg.mss = mss.clamp(1, u64::from(u16::MAX)) as u16;
        if let Some(win) = self.window {
            let win = win.0.min(1 << 30) as u32;
            cfg.send_buffer = win;
            cfg.recv_buffer = win;
            match stack {
                TcpStack::Bsd => {
                    cfg.window_scale = (win > MAX_UNSCALED_WINDOW).then(|| {
                        (0u8..=14)
                            .find(|s| win >> s <= MAX_UNSCALED_WINDOW)
                            .unwrap_or(14)
                    });
                }
                TcpStack::Linux => {
                    cfg.recv_buffer = win.saturating_mul(4);
                    let shift = (win.max(1).ilog2() as u8).saturating_sub(15);
                    cfg.window_scale = Some(shift.min(MAX_WINDOW_SCALE));
                }
            }
        }
        if self.nodelay {
            cfg.nagle = false;
        }
        cfg
    }

    /// How the server of a request/response workload answers (`echo`).
    pub fn rr_answer(&self) -> Answer {
        if self.echo {
            Answer::Echo
        } else {
            Answer::Whole
        }
    }
}
