//! The loss of a link or a switch at an instant of a run, and its return (issue 29): a
//! scenario's `[[fabric.fail]]` names a trunk (its two switches) or a switch, when it goes
//! down and for how long (absent: for the rest of the run). The [`super::Network`] applies
//! each change at its instant ([`super::Network::set_trunk_down`],
//! [`super::Network::set_switch_down`]), so both engines see the same failures.
//!
//! ```toml
//! [[fabric.fail]]
//! link = ["a0.0", "c0"]   # or switch = "c0"
//! at = "2ms"
//! for = "5ms"             # optional
//! ```

use serde::{Deserialize, Serialize};

use crate::time::Duration;

/// What fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailTarget {
    /// A trunk, by its index in the topology (both directions).
    Trunk(usize),
    /// A switch, by its index (every port of it, and its neighbours' ports towards it).
    Switch(usize),
}

/// One failure of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkFailure {
    /// What fails.
    pub target: FailTarget,
    /// When it goes down, from the start of the run.
    pub at: Duration,
    /// How long it stays down (`for`; `None`: to the end of the run).
    #[serde(rename = "for", default, skip_serializing_if = "Option::is_none")]
    pub down: Option<Duration>,
}

/// The changes the failures of a run make, latest first (the next one is the last).
pub(super) fn schedule(failures: &[LinkFailure]) -> Vec<(u64, FailTarget, bool)> {
    let mut out = Vec::new();
    for f in failures {
        out.push((f.at.as_nanos(), f.target, true));
        if let Some(d) = f.down {
            out.push((f.at.as_nanos() + d.as_nanos(), f.target, false));
        }
    }
    // Latest first; at one instant, what comes back before what goes down is popped last.
    out.sort_by_key(|&(t, _, down)| std::cmp::Reverse((t, !down)));
    out
}
