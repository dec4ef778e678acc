//! One host shared by many request/response sessions in closed form: a server answering `N`
//! clients, or one client host running `N` client processes (the GIGAswitch study's
//! many-to-one and one-to-many echo tests, Tables 10 and 11).
//!
//! Each session is a closed loop: a request spends `elsewhere` away from the shared host (the
//! other end's work, the network both ways) and `work` on it; the sessions wait for each other
//! at the shared host, which serves one request at a time. A host that finds no request
//! waiting blocks, and the next request pays `wakeup` on top of its work (the switch to the
//! blocked process, [`crate::host::HostCosts::wakeup_ns`]); a host kept busy reads the next
//! request without sleeping. With deterministic times the loop settles into one of two
//! regimes, and the cycle each session sees is the larger of them:
//!
//! - alone: `elsewhere + work + wakeup` (the host is idle when each request arrives);
//! - saturated: `N x (work + switch)` (the host never idles, so pays no wakeups, and serves
//!   each session once per cycle; `switch` is a context switch per request when the sessions
//!   are processes of their own on the shared host, as the one-to-many test's seven clients
//!   are, and zero when one process serves them all, as an echo server does).
//!
//! That is the asymptotic bound of a closed queueing network (Denning and Buzen 1978, the
//! "balanced job bounds"), exact for deterministic times at both ends; between the two (when a
//! request sometimes finds the host idle) the simulator gives the answer. The time a request
//! spends at the shared host (its queueing and its work: the study's "server latency", Tables
//! 12-19, elapsed time B) is the cycle less `elsewhere`.

use serde::Serialize;

/// A host shared by `sessions` closed request/response loops.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SharedServer {
    /// Sessions sharing the host.
    pub sessions: u32,
    /// The host's work per request when it is busy, ns.
    pub work_ns: f64,
    /// The extra work of a request that finds the host idle, ns.
    pub wakeup_ns: f64,
    /// The extra work of a request on a saturated host whose sessions are processes of their
    /// own (a context switch), ns; zero when one process serves them all.
    pub switch_ns: f64,
    /// Each request's time away from the shared host, ns.
    pub elsewhere_ns: f64,
}

/// What the sessions see.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SharedServerLoad {
    /// Time from one request of a session to its next, ns (its round trip as a tool that
    /// divides elapsed time by requests reports it).
    pub cycle_ns: f64,
    /// Time a request spends at the shared host, its wait included, ns.
    pub at_host_ns: f64,
    /// Time a request waits at the shared host for the others, ns.
    pub queueing_ns: f64,
    /// Share of the host's time spent on the sessions' requests.
    pub utilisation: f64,
    /// True if the host never idles (no request pays a wakeup).
    pub saturated: bool,
}

impl SharedServer {
    /// The cycle, the time at the host and its utilisation (see the module's documentation).
    pub fn load(&self) -> SharedServerLoad {
        let n = f64::from(self.sessions.max(1));
        let alone = self.elsewhere_ns + self.work_ns + self.wakeup_ns;
        let busy = n * (self.work_ns + self.switch_ns);
        let saturated = busy > alone;
        let cycle = busy.max(alone);
        let per_request = if saturated {
            self.work_ns + self.switch_ns
        } else {
            self.work_ns + self.wakeup_ns
        };
        let at_host = cycle - self.elsewhere_ns;
        SharedServerLoad {
            cycle_ns: cycle,
            at_host_ns: at_host,
            queueing_ns: (at_host - per_request).max(0.0),
            utilisation: if cycle > 0.0 {
                (n * per_request / cycle).min(1.0)
            } else {
                0.0
            },
            saturated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One session sees the host alone, wakeup and all; seven queue, and the host, never idle,
    /// pays no wakeups. Without the wakeup term the single session's cycle would be 1000 us and
    /// without the queueing term seven would see 1300 us.
    #[test]
    fn sessions_queue_at_a_saturated_host() {
        let one = SharedServer {
            sessions: 1,
            work_ns: 350_000.0,
            wakeup_ns: 300_000.0,
            switch_ns: 0.0,
            elsewhere_ns: 650_000.0,
        };
        let l = one.load();
        assert_eq!(l.cycle_ns, 1_300_000.0);
        assert!(!l.saturated);
        assert_eq!(l.queueing_ns, 0.0);
        assert!((l.utilisation - 0.5).abs() < 1e-12);
        let seven = SharedServer { sessions: 7, ..one };
        let l = seven.load();
        assert!(l.saturated);
        assert_eq!(l.cycle_ns, 2_450_000.0);
        assert_eq!(l.at_host_ns, 1_800_000.0);
        assert_eq!(l.queueing_ns, 1_450_000.0);
        assert_eq!(l.utilisation, 1.0);
        // Two sessions: still each alone at the host (2 x 350 < 1300).
        let two = SharedServer { sessions: 2, ..one };
        assert_eq!(two.load().cycle_ns, 1_300_000.0);
        // Seven processes of their own on the shared host: a switch per request.
        let processes = SharedServer {
            switch_ns: 50_000.0,
            ..seven
        };
        assert_eq!(processes.load().cycle_ns, 2_800_000.0);
    }
}
