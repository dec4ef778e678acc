//! The one event engine: a loop that moves frames between a sans-IO network (switches and links,
//! [`crate::net::Network`]) and the hosts plugged into it, on a [`Clock`].
//!
//! The same loop runs in both engines (STYLE.md: nexosim's `Clock`, s2n-quic's event loop):
//! - the simulator plugs in simulated hosts and a [`VirtualClock`], which jumps to the earliest
//!   deadline, so a run is a pure function of its inputs and seed;
//! - the emulator plugs in AF_PACKET sockets of namespaced Linux hosts and a wall clock
//!   (`weft-emu`), which busy-polls or sleeps until the deadline and records how late each frame
//!   left.
//!
//! Each turn, at `now`: every frame the hosts hand over is given to the network
//! ([`Hosts::poll_send`] -> [`Element::handle_input`]), every frame the network has due is given
//! to its host ([`Element::poll_output_due`] -> [`Hosts::deliver`]), and the clock waits until
//! the earlier of the two sides' next deadlines. [`EventQueue`] is the heap every timed part of
//! weft keeps its pending work in.

mod deadlines;
mod event_queue;

pub use deadlines::Deadlines;
pub use event_queue::EventQueue;

use crate::element::{Element, PortId};
use crate::time::Instant;

/// Where time comes from: virtual (jump to the deadline) or the wall clock (wait for it).
pub trait Clock {
    /// The current instant.
    fn now(&self) -> Instant;

    /// Waits until `deadline` (`None`: until outside input, or forever) and returns the new
    /// current instant. `active` says whether the last turn moved anything, for clocks that
    /// busy-poll for a while after activity.
    fn wait_until(&mut self, deadline: Option<Instant>, active: bool) -> Instant;

    /// True if time stands still while the engine works (virtual time): a turn may then go back
    /// to the hosts at the same instant, for what the frames just delivered made them do,
    /// without asking the clock. A wall clock says false: its instant would be stale.
    fn stands_still(&self) -> bool {
        false
    }
}

/// Virtual time: waiting is a jump to the deadline. Time never passes `end`.
#[derive(Clone, Copy, Debug)]
pub struct VirtualClock {
    now: Instant,
    end: Instant,
}

impl VirtualClock {
    /// A clock at zero that stops at `end`.
    pub fn until(end: Instant) -> Self {
        VirtualClock {
            now: Instant::ZERO,
            end,
        }
    }

    /// The instant the clock stops at.
    pub fn end(&self) -> Instant {
        self.end
    }

    /// True once the clock has reached its end.
    pub fn finished(&self) -> bool {
        self.now >= self.end
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Instant {
        self.now
    }

    fn stands_still(&self) -> bool {
        true
    }

    fn wait_until(&mut self, deadline: Option<Instant>, _active: bool) -> Instant {
        // Nothing pending: nothing will ever happen again before the end.
        let next = deadline.unwrap_or(self.end).min(self.end);
        self.now = self.now.max(next);
        self.now
    }
}

/// The hosts plugged into a network's host ports: simulated applications, or real namespaced
/// Linux hosts behind sockets.
pub trait Hosts<T> {
    /// The next frame a host hands to the network by `now`: its port, the instant it left the
    /// host (at or before `now`) and the frame.
    fn poll_send(&mut self, now: Instant) -> Option<(PortId, Instant, T)>;

    /// A frame reaches the host on `port` at `now`; it was due at `due` (at or before `now`).
    fn deliver(&mut self, now: Instant, port: PortId, due: Instant, frame: T);

    /// The next instant a host has something to hand over without new input (`None`: only
    /// input, or outside events the clock watches, can change that).
    fn poll_timeout(&self) -> Option<Instant>;
}

/// What a run of [`run`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Turns of the loop.
    pub turns: u64,
    /// Frames the hosts handed to the network.
    pub sent: u64,
    /// Frames the network delivered to hosts.
    pub delivered: u64,
}

/// Runs `net` with `hosts` on `clock` for as long as `keep_going(now, net, hosts)` says so (it
/// is asked once per turn, before the turn's work, and may do periodic work such as sampling or
/// reporting). On a clock that [stands still](Clock::stands_still), a turn goes back and forth
/// between hosts and network at its instant for as long as frames delivered leave the hosts
/// something to do at once (a simulated host answering a segment): the calls on hosts and
/// network are those of separate turns at the same instant, without the clock and
/// `keep_going` between them.
pub fn run<T, N, H, C>(
    net: &mut N,
    hosts: &mut H,
    clock: &mut C,
    mut keep_going: impl FnMut(Instant, &mut N, &mut H) -> bool,
) -> RunStats
where
    N: Element<T> + ?Sized,
    H: Hosts<T> + ?Sized,
    C: Clock + ?Sized,
{
    let mut stats = RunStats::default();
    let mut now = clock.now();
    while keep_going(now, net, hosts) {
        stats.turns += 1;
        let mut active = false;
        loop {
            while let Some((port, at, frame)) = hosts.poll_send(now) {
                net.handle_input(at.min(now), port, frame);
                stats.sent += 1;
                active = true;
            }
            let mut delivered = false;
            while let Some((port, due, frame)) = net.poll_output_due(now) {
                hosts.deliver(now, port, due, frame);
                stats.delivered += 1;
                delivered = true;
            }
            active |= delivered;
            if !(delivered
                && clock.stands_still()
                && hosts.poll_timeout().is_some_and(|t| t <= now))
            {
                break;
            }
        }
        let next = match (net.poll_timeout(), hosts.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        now = clock.wait_until(next, active);
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wire of fixed delay between port 0 and port 1.
    struct Wire(EventQueue<(PortId, u32)>);
    impl Element<u32> for Wire {
        fn handle_input(&mut self, now: Instant, port: PortId, item: u32) {
            self.0.push(Instant(now.0 + 100), (1 - port, item));
        }
        fn poll_output(&mut self, now: Instant) -> Option<(PortId, u32)> {
            self.0.pop_due(now).map(|(_, x)| x)
        }
        fn poll_timeout(&self) -> Option<Instant> {
            self.0.peek_time()
        }
    }

    /// Port 0 sends a number every 1000 ns; port 1 echoes it back incremented.
    #[derive(Default)]
    struct Ping {
        next: u64,
        out: Vec<(PortId, u32)>,
        got: Vec<(u64, u32)>,
    }
    impl Hosts<u32> for Ping {
        fn poll_send(&mut self, now: Instant) -> Option<(PortId, Instant, u32)> {
            if let Some((p, x)) = self.out.pop() {
                return Some((p, now, x));
            }
            if now.0 >= self.next && self.next < 3000 {
                self.next += 1000;
                return Some((0, now, (self.next / 1000) as u32 * 10));
            }
            None
        }
        fn deliver(&mut self, now: Instant, port: PortId, due: Instant, x: u32) {
            assert_eq!(now, due, "virtual time delivers exactly when due");
            if port == 1 {
                self.out.push((1, x + 1));
            } else {
                self.got.push((now.0, x));
            }
        }
        fn poll_timeout(&self) -> Option<Instant> {
            if !self.out.is_empty() {
                // An echo to send: at once.
                return Some(Instant::ZERO);
            }
            (self.next < 3000).then_some(Instant(self.next))
        }
    }

    #[test]
    fn virtual_clock_jumps_between_deadlines() {
        let mut net = Wire(EventQueue::new());
        let mut hosts = Ping::default();
        let mut clock = VirtualClock::until(Instant(1_000_000));
        let stats = run(&mut net, &mut hosts, &mut clock, |now, _, _| {
            now < Instant(1_000_000)
        });
        assert_eq!((stats.sent, stats.delivered), (6, 6));
        assert_eq!(hosts.got, vec![(200, 11), (1200, 21), (2200, 31)]);
    }

    #[test]
    fn stops_at_the_end_with_nothing_pending() {
        let mut net = Wire(EventQueue::new());
        let mut hosts = Ping {
            next: 5000,
            ..Ping::default()
        };
        let mut clock = VirtualClock::until(Instant(10_000));
        let mut turns = 0;
        run(&mut net, &mut hosts, &mut clock, |now, _, _| {
            turns += 1;
            now < Instant(10_000)
        });
        assert_eq!(clock.now(), Instant(10_000));
        assert!(turns <= 3, "{turns}");
    }
}
