//! The connection manager's decisions, sans-IO: it holds a plan's tables and, whenever a switch
//! (re)connects holding fewer entries than its plan gives it (it restarted, or lost its manager
//! and with it every PVC, Sandia's worst failure in `000` section VI), pushes the switch's whole
//! table back; the time from the switch's hello to its acknowledgement of the table is the
//! restore time. Time comes from the caller (ns); the driver carries pushes and hellos over its
//! control channel (the emulator) or applies them to the network directly (the simulator).

use super::plan::{Entry, Plan};
use crate::time::{Duration, Instant};

/// A table to send to a switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// The switch (plan order).
    pub switch: usize,
    /// Its whole table, in the database's port numbers.
    pub entries: Vec<Entry>,
}

/// One restore: a switch that came back without its table and got it again.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Restore {
    /// The switch.
    pub switch: String,
    /// When its connection was lost, if the manager saw it go.
    pub lost_at: Option<Instant>,
    /// When it said hello without its table.
    pub hello_at: Instant,
    /// When it acknowledged the whole table.
    pub restored_at: Instant,
}

impl Restore {
    /// From hello to the table's acknowledgement.
    pub fn restore_time(&self) -> Duration {
        self.restored_at.saturating_duration_since(self.hello_at)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not heard from since the manager started, or gone (since when, if seen to go).
    Away(Option<Instant>),
    /// Said hello without its table at `hello`: a push is due (`sent`: it is out).
    Restoring {
        lost: Option<Instant>,
        hello: Instant,
        sent: bool,
    },
    /// Holds its table.
    Installed,
}

/// The manager of a plan's switches.
#[derive(Clone, Debug)]
pub struct Manager {
    names: Vec<String>,
    tables: Vec<Vec<Entry>>,
    state: Vec<State>,
    /// Every restore so far, in order.
    pub restores: Vec<Restore>,
}

impl Manager {
    /// The manager of `plan`'s switches, none of them connected yet.
    pub fn new(plan: &Plan) -> Self {
        Manager {
            names: plan.tables.iter().map(|t| t.switch.clone()).collect(),
            tables: plan.tables.iter().map(|t| t.entries.clone()).collect(),
            state: vec![State::Away(None); plan.tables.len()],
            restores: Vec::new(),
        }
    }

    /// The manager of the switches `names` with these `tables` (database port numbers), none
    /// of them connected yet.
    pub fn from_tables(names: Vec<String>, tables: Vec<Vec<Entry>>) -> Self {
        Manager {
            state: vec![State::Away(None); tables.len()],
            names,
            tables,
            restores: Vec::new(),
        }
    }

    /// The index of switch `name`.
    pub fn switch_index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Switch `s` said hello at `now`, holding `held` entries: if that is not its whole table,
    /// a push of it is due.
    pub fn handle_hello(&mut self, now: Instant, s: usize, held: usize) {
        let (Some(st), Some(t)) = (self.state.get_mut(s), self.tables.get(s)) else {
            return;
        };
        let lost = match *st {
            State::Away(at) => at,
            State::Restoring { lost, .. } => lost,
            State::Installed => None,
        };
        *st = if held == t.len() {
            State::Installed
        } else {
            State::Restoring {
                lost,
                hello: now,
                sent: false,
            }
        };
    }

    /// The connection to switch `s` was lost at `now`.
    pub fn handle_lost(&mut self, now: Instant, s: usize) {
        if let Some(st) = self.state.get_mut(s) {
            *st = State::Away(Some(now));
        }
    }

    /// The next table to send: a switch that said hello without it.
    pub fn poll_push(&mut self) -> Option<Push> {
        let s = self
            .state
            .iter()
            .position(|st| matches!(st, State::Restoring { sent: false, .. }))?;
        if let State::Restoring { sent, .. } = &mut self.state[s] {
            *sent = true;
        }
        Some(Push {
            switch: s,
            entries: self.tables[s].clone(),
        })
    }

    /// The table due to switch `s`, if a push to it is due (a driver with one connection per
    /// switch asks for its own).
    pub fn poll_push_for(&mut self, s: usize) -> Option<Push> {
        match self.state.get_mut(s)? {
            State::Restoring { sent, .. } if !*sent => *sent = true,
            _ => return None,
        }
        Some(Push {
            switch: s,
            entries: self.tables[s].clone(),
        })
    }

    /// Entries in switch `s`'s table as planned.
    pub fn table_len(&self, s: usize) -> Option<usize> {
        self.tables.get(s).map(Vec::len)
    }

    /// Switch `s` acknowledged at `now` that it holds `held` entries: its whole table restores
    /// it (recorded in [`Manager::restores`]); fewer leaves the push due again.
    pub fn handle_ack(&mut self, now: Instant, s: usize, held: usize) {
        let (Some(st), Some(t)) = (self.state.get_mut(s), self.tables.get(s)) else {
            return;
        };
        let State::Restoring { lost, hello, .. } = *st else {
            return;
        };
        if held == t.len() {
            *st = State::Installed;
            self.restores.push(Restore {
                switch: self.names[s].clone(),
                lost_at: lost,
                hello_at: hello,
                restored_at: now,
            });
        } else {
            *st = State::Restoring {
                lost,
                hello,
                sent: false,
            };
        }
    }

    /// True when every switch holds its table.
    pub fn all_installed(&self) -> bool {
        self.state.iter().all(|s| *s == State::Installed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vc::{HostDb, Shape, plan};

    fn manager() -> Manager {
        Manager::new(&plan(&HostDb::line(6, 3), &Shape::Mesh).unwrap())
    }

    #[test]
    fn a_switch_that_comes_back_empty_gets_its_table_and_the_time_is_kept() {
        let mut m = manager();
        let full: Vec<usize> = m.tables.iter().map(Vec::len).collect();
        let mid = m.switch_index(&m.names[1].clone()).unwrap();
        for (s, &n) in full.iter().enumerate() {
            m.handle_hello(Instant(0), s, n);
        }
        assert!(m.all_installed());
        assert_eq!(m.poll_push(), None);
        // The middle switch loses its manager and every PVC, and says hello again empty.
        m.handle_lost(Instant(1_000), mid);
        m.handle_hello(Instant(5_000), mid, 0);
        let p = m.poll_push().unwrap();
        assert_eq!((p.switch, p.entries.len()), (mid, full[mid]));
        assert_eq!(m.poll_push(), None, "one push per hello");
        // A partial acknowledgement leaves it due again; the whole table restores it.
        m.handle_ack(Instant(6_000), mid, 1);
        assert_eq!(m.poll_push().map(|p| p.switch), Some(mid));
        m.handle_ack(Instant(7_500), mid, full[mid]);
        assert!(m.all_installed());
        let r = &m.restores[0];
        assert_eq!(r.lost_at, Some(Instant(1_000)));
        assert_eq!(r.restore_time(), Duration(2_500));
    }

    #[test]
    fn each_switch_polls_only_its_own_push() {
        let mut m = manager();
        m.handle_hello(Instant(0), 0, 0);
        m.handle_hello(Instant(0), 2, 0);
        assert_eq!(m.poll_push_for(1), None, "switch 1 has not said hello");
        assert_eq!(m.poll_push_for(2).map(|p| p.switch), Some(2));
        assert_eq!(m.poll_push_for(2), None, "one push per hello");
        assert_eq!(m.poll_push().map(|p| p.switch), Some(0));
    }

    #[test]
    fn a_switch_that_kept_its_table_needs_nothing() {
        let mut m = manager();
        let n = m.tables[0].len();
        m.handle_lost(Instant(10), 0);
        m.handle_hello(Instant(20), 0, n);
        assert_eq!(m.poll_push(), None);
        assert!(m.restores.is_empty());
    }
}
