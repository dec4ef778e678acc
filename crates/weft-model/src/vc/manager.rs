//! The connection manager's decisions, sans-IO: it holds a plan's tables and the traffic
//! contracts its switches enforce and, whenever a switch (re)connects holding less than its plan
//! gives it (it restarted, or lost its manager and with it every PVC and contract, Sandia's worst
//! failure in `000` section VI), pushes the switch's whole table and its contracts back; the time
//! from the switch's hello to its acknowledgement of both is the restore time. Time comes from the caller (ns); the driver carries pushes and hellos over its
//! control channel (the emulator) or applies them to the network directly (the simulator).

use super::contract::{ContractAt, PortContract};
use super::plan::{Entry, Plan};
use crate::time::{Duration, Instant};

/// A table to send to a switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// The switch (plan order).
    pub switch: usize,
    /// Its whole table, in the database's port numbers.
    pub entries: Vec<Entry>,
    /// The contracts it enforces, in the database's port numbers.
    pub contracts: Vec<PortContract>,
}

/// What a switch says it holds: cross-connect entries and contracts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Entries in its table.
    pub entries: usize,
    /// Contracts it enforces.
    pub contracts: usize,
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
    contracts: Vec<Vec<PortContract>>,
    state: Vec<State>,
    /// Every restore so far, in order.
    pub restores: Vec<Restore>,
}

impl Manager {
    /// The manager of `plan`'s switches and the `contracts` they enforce (resolved against
    /// `plan`; one on a switch the plan does not have is left out), none of them connected yet.
    pub fn new(plan: &Plan, contracts: &[ContractAt]) -> Self {
        let names: Vec<String> = plan.tables.iter().map(|t| t.switch.clone()).collect();
        let mut held = vec![Vec::new(); names.len()];
        for c in contracts {
            if let Some(s) = names.iter().position(|n| *n == c.switch) {
                held[s].push(c.at_port());
            }
        }
        Manager::from_tables(
            names,
            plan.tables.iter().map(|t| t.entries.clone()).collect(),
            held,
        )
    }

    /// The manager of the switches `names` with these `tables` and `contracts` (database port
    /// numbers; a switch missing from `contracts` enforces none), none of them connected yet.
    pub fn from_tables(
        names: Vec<String>,
        tables: Vec<Vec<Entry>>,
        mut contracts: Vec<Vec<PortContract>>,
    ) -> Self {
        contracts.resize(tables.len(), Vec::new());
        Manager {
            state: vec![State::Away(None); tables.len()],
            names,
            tables,
            contracts,
            restores: Vec::new(),
        }
    }

    /// The index of switch `name`.
    pub fn switch_index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Switch `s` said hello at `now`, holding `held`: if that is not its whole table and
    /// every contract, a push of both is due.
    pub fn handle_hello(&mut self, now: Instant, s: usize, held: Held) {
        let Some(whole) = self.whole(s) else {
            return;
        };
        let Some(st) = self.state.get_mut(s) else {
            return;
        };
        let lost = match *st {
            State::Away(at) => at,
            State::Restoring { lost, .. } => lost,
            State::Installed => None,
        };
        *st = if held == whole {
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
        Some(self.push(s))
    }

    fn push(&self, s: usize) -> Push {
        Push {
            switch: s,
            entries: self.tables[s].clone(),
            contracts: self.contracts[s].clone(),
        }
    }

    /// The table due to switch `s`, if a push to it is due (a driver with one connection per
    /// switch asks for its own).
    pub fn poll_push_for(&mut self, s: usize) -> Option<Push> {
        match self.state.get_mut(s)? {
            State::Restoring { sent, .. } if !*sent => *sent = true,
            _ => return None,
        }
        Some(self.push(s))
    }

    /// What switch `s` holds when it has all the plan gives it.
    pub fn whole(&self, s: usize) -> Option<Held> {
        Some(Held {
            entries: self.tables.get(s)?.len(),
            contracts: self.contracts.get(s)?.len(),
        })
    }

    /// Switch `s` acknowledged at `now` that it holds `held`: its whole table and every contract
    /// restore it (recorded in [`Manager::restores`]); less leaves the push due again.
    pub fn handle_ack(&mut self, now: Instant, s: usize, held: Held) {
        let Some(whole) = self.whole(s) else {
            return;
        };
        let Some(st) = self.state.get_mut(s) else {
            return;
        };
        let State::Restoring { lost, hello, .. } = *st else {
            return;
        };
        if held == whole {
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
    use crate::shaper::VcContract;
    use crate::units::Rate;
    use crate::vc::{HostDb, Shape, Vc, plan};

    /// The manager of a mesh on three switches in a line, the middle one policing the circuit
    /// of its first entry.
    fn manager() -> Manager {
        let p = plan(&HostDb::line(6, 3), &Shape::Mesh).unwrap();
        let mid = &p.tables[1];
        let e = &mid.entries[0];
        let c = ContractAt {
            switch: mid.switch.clone(),
            in_port: e.in_port,
            label: Vc::new(e.in_vpi, e.in_vci.unwrap_or(0)),
            contract: VcContract {
                police: true,
                ..VcContract::peak(Rate::mbps(1))
            },
        };
        Manager::new(&p, &[c])
    }

    fn whole(m: &Manager, s: usize) -> Held {
        m.whole(s).unwrap()
    }

    #[test]
    fn a_switch_that_comes_back_empty_gets_its_table_and_contracts_and_the_time_is_kept() {
        let mut m = manager();
        let mid = m.switch_index(&m.names[1].clone()).unwrap();
        for s in 0..3 {
            m.handle_hello(Instant(0), s, whole(&m, s));
        }
        assert!(m.all_installed());
        assert_eq!(m.poll_push(), None);
        // The middle switch loses its manager, every PVC and its contract, and says hello
        // again empty.
        m.handle_lost(Instant(1_000), mid);
        m.handle_hello(Instant(5_000), mid, Held::default());
        let p = m.poll_push().unwrap();
        let full = whole(&m, mid);
        assert_eq!(full.contracts, 1);
        assert_eq!(
            (p.switch, p.entries.len(), p.contracts.len()),
            (mid, full.entries, 1)
        );
        assert_eq!(p.contracts[0].contract.pcr, Rate::mbps(1));
        assert_eq!(m.poll_push(), None, "one push per hello");
        // A partial acknowledgement leaves it due again: the table without its contract is
        // not a restore; the whole of both is.
        let no_contract = Held {
            contracts: 0,
            ..full
        };
        m.handle_ack(Instant(6_000), mid, no_contract);
        assert_eq!(m.poll_push().map(|p| p.switch), Some(mid));
        m.handle_ack(Instant(7_500), mid, full);
        assert!(m.all_installed());
        let r = &m.restores[0];
        assert_eq!(r.lost_at, Some(Instant(1_000)));
        assert_eq!(r.restore_time(), Duration(2_500));
    }

    #[test]
    fn a_switch_with_its_table_but_not_its_contract_gets_both() {
        let mut m = manager();
        let full = whole(&m, 1);
        m.handle_hello(
            Instant(0),
            1,
            Held {
                contracts: 0,
                ..full
            },
        );
        let p = m.poll_push_for(1).unwrap();
        assert_eq!((p.entries.len(), p.contracts.len()), (full.entries, 1));
        // The others enforce none.
        assert_eq!(whole(&m, 0).contracts, 0);
    }

    #[test]
    fn each_switch_polls_only_its_own_push() {
        let mut m = manager();
        m.handle_hello(Instant(0), 0, Held::default());
        m.handle_hello(Instant(0), 2, Held::default());
        assert_eq!(m.poll_push_for(1), None, "switch 1 has not said hello");
        assert_eq!(m.poll_push_for(2).map(|p| p.switch), Some(2));
        assert_eq!(m.poll_push_for(2), None, "one push per hello");
        assert_eq!(m.poll_push().map(|p| p.switch), Some(0));
    }

    #[test]
    fn a_switch_that_kept_its_table_needs_nothing() {
        let mut m = manager();
        let n = whole(&m, 1);
        m.handle_lost(Instant(10), 1);
        m.handle_hello(Instant(20), 1, n);
        assert_eq!(m.poll_push(), None);
        assert!(m.restores.is_empty());
    }
}
