//! The lobby: connections that have been accepted but have not yet said who they are (a control
//! connection's first message, with its proof of the key where one is required; a data
//! connection's hello). Sans-IO: the caller passes the time and closes what the lobby returns.
//!
//! Bounds, so that idle or slow connections cannot crowd out real clients:
//! - each connection has [`LobbyLimits::hello_timeout`] to identify itself;
//! - at most [`LobbyLimits::max_waiting`] wait at once, and at most
//!   [`LobbyLimits::max_per_source`] from one source; when a new connection would exceed
//!   either, a waiting one is dropped to make room: for the per-source cap, that source's
//!   oldest; for the total cap, the oldest of the source that has the most waiting (the
//!   newcomer's own included). A newcomer always gets its chance, and the lobby is fair
//!   between sources: a real client identifies itself within a round trip, an idle one never
//!   does, so the oldest is the one to drop, but taken from whoever holds the most places, so
//!   that a few busy sources cannot push out everyone else's connections (dropping the oldest
//!   overall let five sources of 64 starve all the others).
//! - a source is an IPv4 address, or the /64 prefix of an IPv6 address (one host commonly
//!   holds a whole /64, so counting its addresses one by one would give it 2^64 quotas).
//!
//! Connections that have identified themselves (running tests and sessions) are not in the
//! lobby and are never dropped by it.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use weft_model::{Duration, Instant};

/// The lobby's bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LobbyLimits {
    /// Time a connection has, from its acceptance, to identify itself (`--hello-timeout`).
    pub hello_timeout: Duration,
    /// Connections waiting at once, over all sources (`--max-unidentified`).
    pub max_waiting: usize,
    /// Connections waiting at once from one source address (`--max-unidentified-per-source`).
    pub max_per_source: usize,
}

impl Default for LobbyLimits {
    fn default() -> Self {
        LobbyLimits {
            hello_timeout: Duration::from_secs(2),
            max_waiting: 256,
            max_per_source: 64,
        }
    }
}

/// What the lobby has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LobbyStats {
    /// Connections waiting now.
    pub waiting: usize,
    /// Connections admitted in all.
    pub admitted: u64,
    /// Connections that identified themselves in time.
    pub identified: u64,
    /// Connections dropped for not identifying themselves within the hello time-out.
    pub timed_out: u64,
    /// Connections dropped to make room for newer ones.
    pub evicted: u64,
}

struct Waiting<H> {
    ticket: u64,
    source: IpAddr,
    since: Instant,
    handle: H,
}

/// Connections waiting to identify themselves, oldest first. `H` is whatever the caller needs
/// to close one (a clone of its socket).
pub struct Lobby<H> {
    limits: LobbyLimits,
    waiting: VecDeque<Waiting<H>>,
    per_source: HashMap<IpAddr, usize>,
    next_ticket: u64,
    stats: LobbyStats,
}

impl<H> Lobby<H> {
    /// An empty lobby. Caps of zero are taken as one.
    pub fn new(limits: LobbyLimits) -> Self {
        Lobby {
            limits: LobbyLimits {
                max_waiting: limits.max_waiting.max(1),
                max_per_source: limits.max_per_source.max(1),
                ..limits
            },
            waiting: VecDeque::new(),
            per_source: HashMap::new(),
            next_ticket: 1,
            stats: LobbyStats::default(),
        }
    }

    /// The bounds in force.
    pub fn limits(&self) -> LobbyLimits {
        self.limits
    }

    /// Admits a connection from `source` at `now`. Returns its ticket (for
    /// [`Lobby::identified`] or [`Lobby::left`]) and the handles of the connections dropped to
    /// make room for it, which the caller must close.
    pub fn admit(&mut self, now: Instant, source: IpAddr, handle: H) -> (u64, Vec<H>) {
        let source = source_of(source);
        let mut dropped = Vec::new();
        if self.per_source.get(&source).copied().unwrap_or(0) >= self.limits.max_per_source
            && let Some(w) = self.remove_oldest_of(source)
        {
            self.stats.evicted += 1;
            dropped.push(w.handle);
        }
        while self.waiting.len() >= self.limits.max_waiting {
            // The source with the most waiting, counting the newcomer; ties go to the one whose
            // oldest waits longest. Only a source with no connection waiting is spared any loss
            // on arrival when the lobby is full of others' connections.
            let mine = self.per_source.get(&source).copied().unwrap_or(0) + 1;
            let greedy = self
                .per_source
                .iter()
                .map(|(s, n)| (if *s == source { mine } else { *n }, *s))
                .max_by_key(|(n, _)| *n)
                .map(|(n, s)| if n <= mine { source } else { s });
            let victim = match greedy {
                // The newcomer's own source holds the most: its oldest goes, or, if it has none
                // waiting, the oldest of all (every source then has a single place).
                Some(s) if self.per_source.contains_key(&s) => self.remove_oldest_of(s),
                _ => self.remove_at(0),
            };
            let Some(w) = victim else { break };
            self.stats.evicted += 1;
            dropped.push(w.handle);
        }
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        *self.per_source.entry(source).or_insert(0) += 1;
        self.waiting.push_back(Waiting {
            ticket,
            source,
            since: now,
            handle,
        });
        self.stats.admitted += 1;
        (ticket, dropped)
    }

    /// The connection with `ticket` has identified itself: it leaves the lobby for good.
    /// Returns its handle, or `None` if it had already been dropped (too late: the caller must
    /// then close it too).
    pub fn identified(&mut self, ticket: u64) -> Option<H> {
        let i = self.waiting.iter().position(|w| w.ticket == ticket)?;
        let w = self.remove_at(i)?;
        self.stats.identified += 1;
        Some(w.handle)
    }

    /// The connection with `ticket` went away (closed by its peer, or it sent garbage) without
    /// identifying itself; forgets it. Returns its handle if it was still waiting.
    pub fn left(&mut self, ticket: u64) -> Option<H> {
        let i = self.waiting.iter().position(|w| w.ticket == ticket)?;
        self.remove_at(i).map(|w| w.handle)
    }

    /// Drops every connection whose hello time-out has passed at `now`; returns their handles
    /// for the caller to close.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<H> {
        let mut out = Vec::new();
        while let Some(w) = self.waiting.front() {
            if now.saturating_duration_since(w.since) < self.limits.hello_timeout {
                break;
            }
            let Some(w) = self.remove_at(0) else { break };
            self.stats.timed_out += 1;
            out.push(w.handle);
        }
        out
    }

    /// When the oldest waiting connection's hello time-out passes, if any waits.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.waiting
            .front()
            .map(|w| w.since + self.limits.hello_timeout)
    }

    /// Drops the oldest waiting connection (to free a file descriptor when the process has run
    /// out of them); returns its handle.
    pub fn evict_oldest(&mut self) -> Option<H> {
        let w = self.remove_at(0)?;
        self.stats.evicted += 1;
        Some(w.handle)
    }

    /// Counters, with the number waiting now.
    pub fn stats(&self) -> LobbyStats {
        LobbyStats {
            waiting: self.waiting.len(),
            ..self.stats
        }
    }

    /// Takes the oldest waiting connection of `source` out.
    fn remove_oldest_of(&mut self, source: IpAddr) -> Option<Waiting<H>> {
        let i = self.waiting.iter().position(|w| w.source == source)?;
        self.remove_at(i)
    }

    /// Takes entry `i` out, with its source's count.
    fn remove_at(&mut self, i: usize) -> Option<Waiting<H>> {
        let w = self.waiting.remove(i)?;
        if let Some(n) = self.per_source.get_mut(&w.source) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&w.source);
            }
        }
        Some(w)
    }
}

/// The source a connection counts against: its IPv4 address (an IPv4-mapped IPv6 address is
/// one), or the /64 prefix of its IPv6 address.
fn source_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::from([s[0], s[1], s[2], s[3], 0, 0, 0, 0])
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    fn lobby(max_waiting: usize, max_per_source: usize) -> Lobby<u32> {
        Lobby::new(LobbyLimits {
            hello_timeout: Duration::from_secs(2),
            max_waiting,
            max_per_source,
        })
    }

    #[test]
    fn the_oldest_from_the_same_source_makes_room() {
        let mut l = lobby(10, 2);
        let t = Instant::ZERO;
        assert!(l.admit(t, ip(1), 1).1.is_empty());
        assert!(l.admit(t, ip(2), 2).1.is_empty());
        assert!(l.admit(t, ip(1), 3).1.is_empty());
        // A third from 10.0.0.1 drops the first from 10.0.0.1, not the one from 10.0.0.2.
        assert_eq!(l.admit(t, ip(1), 4).1, vec![1]);
        assert_eq!(l.stats().waiting, 3);
        assert_eq!(l.stats().evicted, 1);
    }

    #[test]
    fn at_the_total_cap_the_source_with_most_places_makes_room() {
        let mut l = lobby(3, 3);
        for i in 0..3 {
            assert!(l.admit(Instant(i), ip(i as u8), i as u32).1.is_empty());
        }
        // Every source holds one place: the oldest of all goes.
        assert_eq!(l.admit(Instant(9), ip(9), 9).1, vec![0]);
        // 10.0.0.9 would hold two: its own oldest goes, not another source's.
        assert_eq!(l.admit(Instant(10), ip(9), 10).1, vec![9]);
        assert_eq!(l.stats().waiting, 3);
    }

    #[test]
    fn identified_connections_leave_and_are_never_dropped() {
        let mut l = lobby(2, 2);
        let (a, _) = l.admit(Instant::ZERO, ip(1), 1);
        assert_eq!(l.identified(a), Some(1));
        // Its place is free again, and it is not dropped when the lobby fills.
        l.admit(Instant::ZERO, ip(1), 2);
        l.admit(Instant::ZERO, ip(1), 3);
        let (_, dropped) = l.admit(Instant::ZERO, ip(1), 4);
        assert_eq!(dropped, vec![2]);
        assert_eq!(l.identified(a), None);
        assert_eq!(l.stats().identified, 1);
    }

    #[test]
    fn silence_past_the_hello_time_out_is_dropped_in_order() {
        let mut l = lobby(10, 10);
        l.admit(Instant(0), ip(1), 1);
        let (b, _) = l.admit(Instant::ZERO + Duration::from_secs(1), ip(2), 2);
        assert_eq!(
            l.poll_timeout(),
            Some(Instant::ZERO + Duration::from_secs(2))
        );
        assert!(l.handle_timeout(Instant(1_999_999_999)).is_empty());
        assert_eq!(l.handle_timeout(Instant(2_000_000_000)), vec![1]);
        assert_eq!(
            l.poll_timeout(),
            Some(Instant::ZERO + Duration::from_secs(3))
        );
        assert_eq!(l.left(b), Some(2));
        assert_eq!(l.poll_timeout(), None);
        assert_eq!(l.stats().timed_out, 1);
        assert_eq!(l.stats().waiting, 0);
    }

    #[test]
    fn five_busy_sources_cannot_starve_a_sixth() {
        // Five sources at their per-source cap fill the lobby; they keep opening connections.
        // A client from a sixth source opens one and takes a round trip to say hello: its
        // connection must still be waiting then (dropping the oldest overall closed it).
        let mut l = lobby(256, 64);
        let mut t = 0u64;
        for i in 0..(5 * 64) {
            t += 1;
            l.admit(Instant(t), ip(1 + (i % 5) as u8), i as u32);
        }
        let (client, dropped) = l.admit(Instant(t), ip(100), 9999);
        assert_eq!(dropped.len(), 1);
        assert_ne!(dropped, vec![9999]);
        for i in 0..10_000u32 {
            t += 1;
            let dropped = l.admit(Instant(t), ip(1 + (i % 5) as u8), i).1;
            assert!(
                !dropped.contains(&9999),
                "the sixth source's connection was dropped"
            );
        }
        assert_eq!(l.identified(client), Some(9999));
        // Each busy source holds at most its fair share of the rest.
        assert_eq!(l.stats().waiting, 255);
    }

    #[test]
    fn an_ipv6_host_counts_as_one_source_per_64() {
        let mut l = lobby(1000, 2);
        let a = |last: u16| IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, last]);
        l.admit(Instant::ZERO, a(1), 1);
        l.admit(Instant::ZERO, a(2), 2);
        assert_eq!(l.admit(Instant::ZERO, a(3), 3).1, vec![1]);
        let other = IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]);
        assert!(l.admit(Instant::ZERO, other, 4).1.is_empty());
    }

    #[test]
    fn three_hundred_idle_connections_leave_room_for_a_client() {
        let mut l = lobby(256, 64);
        let mut closed = 0;
        for i in 0..300u32 {
            closed += l.admit(Instant(u64::from(i)), ip(1), i).1.len();
        }
        assert_eq!(closed, 300 - 64);
        let (t, dropped) = l.admit(Instant(400), ip(1), 1000);
        assert_eq!(dropped.len(), 1);
        assert_eq!(l.identified(t), Some(1000));
    }
}
