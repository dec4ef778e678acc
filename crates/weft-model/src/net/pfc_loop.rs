//! What a network of lossless switches keeps beside them for PFC ([`super::PfcSpec`]): the
//! pause frames on their way across links, the refreshes of XOFFs still wanted, and each
//! host's NIC, which obeys the pauses of its switch by holding its frames in order until its
//! class resumes. A NIC on a lossless link hands its line one frame at a time, as the line
//! frees (a frame handed to the line is on its way and no pause stops it). The network ([`super::Network`]) routes the pause frames its switches send
//! ([`super::PauseOut`]) through it; nothing here reads a clock.

use std::collections::VecDeque;

use super::frame::Frame;
use super::pfc::{PauseFrame, PfcEgress};
use super::switch::PauseOut;
use crate::element::PortId;
use crate::engine::EventQueue;
use crate::time::Instant;
use crate::units::Rate;

/// Something due at an instant.
#[derive(Clone, Copy, Debug)]
pub(super) enum Event {
    /// A pause frame reaches the output of port `port` of switch `s`.
    Pause {
        s: usize,
        port: PortId,
        frame: PauseFrame,
    },
    /// The lossless input of port `port` of switch `s` may have XOFFs to send again.
    Refresh { s: usize, port: PortId },
    /// A pause frame reaches host `host`'s NIC.
    Host { host: usize, frame: PauseFrame },
    /// Host `host`'s NIC may send what it holds.
    Release { host: usize },
}

/// A host's NIC under PFC: its pause state and the frames it holds.
#[derive(Debug)]
pub(super) struct Nic<F> {
    pub pause: PfcEgress,
    pub held: VecDeque<F>,
    /// Most frames it held at once.
    pub max_held: usize,
    /// The instant of its pending [`Event::Release`] (ns), if one is pending.
    next_release: Option<u64>,
}

/// The PFC state of a network beside its switches.
#[derive(Debug)]
pub(super) struct PfcLoop<F> {
    pub events: EventQueue<Event>,
    /// Each host's NIC (`None`: its link is lossy).
    pub nics: Vec<Option<Nic<F>>>,
    /// Pause frames drained from a switch (kept to reuse its allocation).
    pub out: Vec<PauseOut>,
    /// The switch ports (switch, port) with an [`Event::Refresh`] pending: one at a time each.
    pub refreshing: std::collections::HashSet<(usize, PortId)>,
}

impl<F: Frame> PfcLoop<F> {
    /// The loop for hosts whose links are lossless where `rates[h]` is `Some` (the line rate,
    /// which times the pause quanta).
    pub fn new(rates: &[Option<Rate>]) -> Self {
        PfcLoop {
            events: EventQueue::new(),
            nics: rates
                .iter()
                .map(|r| {
                    r.map(|r| Nic {
                        pause: PfcEgress::new(r),
                        held: VecDeque::new(),
                        max_held: 0,
                        next_release: None,
                    })
                })
                .collect(),
            out: Vec::new(),
            refreshing: std::collections::HashSet::new(),
        }
    }

    /// Host `host`'s NIC takes `frame` at `now` (ns): `Err` gives it back to go on the line at
    /// once; `Ok` if the NIC holds it (behind others, while its class is paused, or while the
    /// line is busy until `line_free`, ns), its release then scheduled.
    pub fn hold(&mut self, now: u64, host: usize, frame: F, line_free: u64) -> Result<(), F> {
        let Some(nic) = self.nics.get_mut(host).and_then(Option::as_mut) else {
            return Err(frame);
        };
        let class = frame.priority();
        let paused = nic.pause.is_paused(now, class);
        if nic.held.is_empty() && !paused && line_free <= now {
            return Err(frame);
        }
        nic.held.push_back(frame);
        nic.max_held = nic.max_held.max(nic.held.len());
        let at = match nic.pause.paused_until(class).filter(|_| paused) {
            Some(end) => end,
            None => line_free.max(now),
        };
        self.schedule(host, at);
        Ok(())
    }

    /// Schedules host `host`'s NIC to send what it holds at `at` (ns), unless it is to earlier.
    pub fn schedule(&mut self, host: usize, at: u64) {
        let Some(nic) = self.nics.get_mut(host).and_then(Option::as_mut) else {
            return;
        };
        if nic.next_release.is_some_and(|r| r <= at) {
            return;
        }
        nic.next_release = Some(at);
        self.events.push(Instant(at), Event::Release { host });
    }

    /// True if the release of host `host`'s NIC due at `at` (ns) is the one pending (not one an
    /// earlier release replaced); it is no longer pending.
    pub fn take_release(&mut self, host: usize, at: u64) -> bool {
        let Some(nic) = self.nics.get_mut(host).and_then(Option::as_mut) else {
            return false;
        };
        if nic.next_release != Some(at) {
            return false;
        }
        nic.next_release = None;
        true
    }

    /// A pause frame reaches host `host`'s NIC at `now` (ns); its release is scheduled for when
    /// the pause ends (at once for a resume).
    pub fn pause_host(&mut self, now: u64, host: usize, frame: PauseFrame) {
        let Some(nic) = self.nics.get_mut(host).and_then(Option::as_mut) else {
            return;
        };
        nic.pause.handle_pause(now, frame);
        let at = nic.pause.paused_until(frame.class).unwrap_or(now);
        if !nic.held.is_empty() {
            self.schedule(host, at);
        }
    }

    /// The next frame host `host`'s NIC may send at `now` (ns), if its head is not paused.
    pub fn next_frame(&mut self, now: u64, host: usize) -> Option<F> {
        let nic = self.nics.get_mut(host)?.as_mut()?;
        let head = nic.held.front()?;
        if nic.pause.is_paused(now, head.priority()) {
            return None;
        }
        nic.held.pop_front()
    }

    /// True if host `host`'s NIC holds frames.
    pub fn holds(&self, host: usize) -> bool {
        self.nics
            .get(host)
            .and_then(Option::as_ref)
            .is_some_and(|n| !n.held.is_empty())
    }

    /// Nanoseconds host `host`'s NIC has been paused up to `now` (ns).
    pub fn host_paused_ns(&self, now: u64, host: usize) -> u64 {
        self.nics
            .get(host)
            .and_then(Option::as_ref)
            .map_or(0, |n| n.pause.total_paused_ns(now))
    }
}
