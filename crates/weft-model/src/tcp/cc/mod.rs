//! Congestion control: how the congestion window grows on acknowledgements and shrinks on loss
//! (and on congestion marks).
//!
//! The growth and decrease rules sit behind one trait, [`CongestionControl`], with three
//! implementations: [`Reno`] (slow start and additive increase, halving on loss; RFC 5681),
//! [`Cubic`] (RFC 9438) and [`Dctcp`] (RFC 8257: Reno's growth, a cut in proportion to the
//! marked fraction on ECN echoes). Reno and NewReno share that rule and differ only in how the
//! connection recovers from a loss (RFC 6582's partial acknowledgements), which lives in the
//! connection; [`CcAlgorithm`] names the four combinations a user chooses from.
//! The connection holds a [`Controller`], an enum over them, so the per-ACK call is a direct
//! match and not a virtual call.

mod cubic;
pub mod dctcp;
mod reno;

pub use cubic::Cubic;
pub use dctcp::Dctcp;
pub use reno::Reno;

use crate::time::{Duration, Instant};

/// The congestion-control algorithm of a connection, as a user names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CcAlgorithm {
    /// 4.3BSD-Reno: slow start, congestion avoidance, fast retransmit; fast recovery ends at the
    /// first new acknowledgement (RFC 5681).
    #[default]
    Reno,
    /// Reno's window rules with NewReno's recovery: partial acknowledgements retransmit the next
    /// hole and recovery lasts until everything sent before the loss is acknowledged (RFC 6582).
    NewReno,
    /// CUBIC window growth (RFC 9438) with NewReno's recovery (or SACK's, when negotiated).
    Cubic,
    /// DCTCP (RFC 8257): Reno's growth and NewReno's (or SACK's) recovery, and a window cut by
    /// alpha / 2 on ECN echoes, alpha the marked fraction's moving average. Needs ECN
    /// ([`crate::tcp::Config::ecn`]) and marking queues to be more than NewReno.
    Dctcp,
}

impl serde::Serialize for CcAlgorithm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl CcAlgorithm {
    /// The name used in scenario files and output: `reno`, `newreno`, `cubic`, `dctcp`.
    pub fn name(self) -> &'static str {
        match self {
            CcAlgorithm::Reno => "reno",
            CcAlgorithm::NewReno => "newreno",
            CcAlgorithm::Cubic => "cubic",
            CcAlgorithm::Dctcp => "dctcp",
        }
    }

    /// Parses a name given by [`CcAlgorithm::name`].
    pub fn from_name(s: &str) -> Option<CcAlgorithm> {
        match s.to_ascii_lowercase().as_str() {
            "reno" => Some(CcAlgorithm::Reno),
            "newreno" | "new-reno" => Some(CcAlgorithm::NewReno),
            "cubic" => Some(CcAlgorithm::Cubic),
            "dctcp" => Some(CcAlgorithm::Dctcp),
            _ => None,
        }
    }
}

/// The windows a controller adjusts, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// The sender's maximum segment size, bytes.
    pub mss: u64,
}

impl Window {
    /// True while below the slow-start threshold.
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// A congestion controller: the window's growth outside loss recovery and its decrease on loss.
pub trait CongestionControl {
    /// `acked` new bytes were cumulatively acknowledged at `now`, outside loss recovery; `srtt`
    /// is the smoothed round trip if known.
    fn on_ack(&mut self, w: &mut Window, now: Instant, acked: u64, srtt: Option<Duration>);

    /// A loss was detected by duplicate acknowledgements (or SACK) at `now` with `flight` bytes
    /// outstanding: set the slow-start threshold (the connection then sets the window for
    /// recovery).
    fn on_loss(&mut self, w: &mut Window, now: Instant, flight: u64);

    /// The retransmission timer expired: set the threshold; the window becomes one segment.
    fn on_timeout(&mut self, w: &mut Window, now: Instant, flight: u64) {
        self.on_loss(w, now, flight);
        w.cwnd = w.mss;
    }
}

/// The controller a connection holds: one of the implementations, matched directly.
#[derive(Clone, Debug)]
pub enum Controller {
    /// Reno's window rules (also NewReno's).
    Reno(Reno),
    /// CUBIC.
    Cubic(Cubic),
    /// DCTCP.
    Dctcp(Dctcp),
}

impl Controller {
    /// The controller for `algo`; `byte_counting` selects RFC 3465 growth for Reno's rules.
    pub fn new(algo: CcAlgorithm, byte_counting: bool) -> Self {
        match algo {
            CcAlgorithm::Reno | CcAlgorithm::NewReno => Controller::Reno(Reno::new(byte_counting)),
            CcAlgorithm::Cubic => Controller::Cubic(Cubic::new(byte_counting)),
            CcAlgorithm::Dctcp => Controller::Dctcp(Dctcp::new(byte_counting)),
        }
    }
}

impl CongestionControl for Controller {
    #[inline]
    fn on_ack(&mut self, w: &mut Window, now: Instant, acked: u64, srtt: Option<Duration>) {
        match self {
            Controller::Reno(c) => c.on_ack(w, now, acked, srtt),
            Controller::Cubic(c) => c.on_ack(w, now, acked, srtt),
            Controller::Dctcp(c) => c.on_ack(w, now, acked, srtt),
        }
    }

    fn on_loss(&mut self, w: &mut Window, now: Instant, flight: u64) {
        match self {
            Controller::Reno(c) => c.on_loss(w, now, flight),
            Controller::Cubic(c) => c.on_loss(w, now, flight),
            Controller::Dctcp(c) => c.on_loss(w, now, flight),
        }
    }

    fn on_timeout(&mut self, w: &mut Window, now: Instant, flight: u64) {
        match self {
            Controller::Reno(c) => c.on_timeout(w, now, flight),
            Controller::Cubic(c) => c.on_timeout(w, now, flight),
            Controller::Dctcp(c) => c.on_timeout(w, now, flight),
        }
    }
}

/// Slow start's growth for one acknowledgement of `acked` bytes: one segment per ACK (classic
/// BSD), or with byte counting the bytes acknowledged up to two segments (RFC 3465, L = 2).
#[inline]
pub(crate) fn slow_start_increase(w: &Window, acked: u64, byte_counting: bool) -> u64 {
    if byte_counting {
        acked.min(2 * w.mss)
    } else {
        w.mss
    }
}
