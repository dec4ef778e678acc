//! Virtual circuits: the host database a network's circuits are planned from, the planner (a
//! full mesh, a star around a hub, or explicit pairs), the per-switch cross-connect tables it
//! produces, and the check that a plan's tables deliver every circuit end to end.
//!
//! This is the planning half of what Sandia's central connection-management system and EBN's
//! "common database" did (`000` section VI, `002` section 5.3): one database of hosts, the switch
//! and port each is on and the trunks between switches; every circuit entered once; the
//! cross-connect entry of every switch on its path derived from it. VCI numbering follows EBN:
//! the VCI on a host's link names the host at the far end (every host reaches `methuselah` on
//! VCI 138), so a host's bindings read the same everywhere.
//!
//! Circuits are duplex, as PVCs are: the VC from `a` to `b` and the one back use the same VPI/VCI
//! on every link, and a plan lists both ([`PlannedVc`]). Nothing here touches the network: the
//! fabric ([`crate::net`]) switches cells by the [`Table`]s a plan gives it.
//!
//! ```
//! use weft_model::vc::{HostDb, Shape, plan};
//! let db = HostDb::parse(r#"
//!     [[switch]]
//!     name = "asx1"
//!     [[host]]
//!     name = "methuselah"
//!     switch = "asx1"
//!     port = 3
//!     vci = 138
//!     [[host]]
//!     name = "dhpc04"
//!     switch = "asx1"
//!     port = 4
//!     vci = 131
//! "#, "hosts.toml").unwrap();
//! let p = plan(&db, &Shape::Mesh).unwrap();
//! assert_eq!(p.counts.vcs, 2);
//! assert_eq!(p.vcs[0].vci, 131); // methuselah reaches dhpc04 on VCI 131
//! p.verify(&db).unwrap();
//! ```

mod contract;
mod db;
mod growth;
mod manager;
mod plan;
mod table;
mod verify;
pub mod wire;

use serde::{Deserialize, Serialize};

pub use contract::{CircuitContract, ContractAt, ContractTarget, PortContract, resolve_all};
pub use db::{DbHost, DbSwitch, DbTrunk, DbVp, HostDb};
pub use growth::{GrowthRow, degree, growth};
pub use manager::{Held, Manager, Push, Restore};
pub use plan::{
    Binding, Counts, Entry, HOST_VCI_BASE, Hop, HostBindings, Plan, PlannedVc, Shape, SwitchCount,
    SwitchTable, TRUNK_VCI_BASE, plan,
};
pub use table::{Table, TableError};
pub use verify::{Problem, Verified};

/// An ATM virtual circuit's identifiers on one link: virtual path and virtual channel.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Vc {
    /// Virtual path identifier (8 bits at the user-network interface).
    pub vpi: u8,
    /// Virtual channel identifier.
    pub vci: u16,
}

impl Vc {
    /// VPI `vpi`, VCI `vci`.
    pub const fn new(vpi: u8, vci: u16) -> Self {
        Vc { vpi, vci }
    }
}

impl std::fmt::Display for Vc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.vpi, self.vci)
    }
}

/// VCIs below this are reserved (ITU-T I.361: 0-15; 16-31 for ILMI, signalling and the like).
pub const FIRST_USER_VCI: u16 = 32;

/// A database or plan that cannot be used, with what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VcError {
    /// The file is not TOML of the database's shape.
    #[error("{file}: {message}")]
    Syntax {
        /// The file name given to [`HostDb::parse`].
        file: String,
        /// The parser's message (line, column, key).
        message: String,
    },
    /// Two switches, or two hosts, share a name.
    #[error("two {kind}s are named {name:?}: names must be unique")]
    Duplicate {
        /// `switch` or `host`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A host or trunk names a switch that is not in the database.
    #[error("{what} names switch {name:?}, which is not in the database (switches: {known})")]
    NoSwitch {
        /// The host or trunk.
        what: String,
        /// The name it gave.
        name: String,
        /// The switches there are.
        known: String,
    },
    /// A name that is not a host of the database.
    #[error("{what}: no host is called {name:?}")]
    NoHost {
        /// Where the name was given.
        what: String,
        /// The name.
        name: String,
    },
    /// Two things are plugged into one port of a switch.
    #[error("port {port} of switch {switch} is given to both {first} and {second}")]
    PortInUse {
        /// The switch.
        switch: String,
        /// The port.
        port: u32,
        /// What was there first.
        first: String,
        /// What was given the same port.
        second: String,
    },
    /// A trunk from a switch to itself.
    #[error("trunk {index} joins switch {switch} to itself")]
    TrunkLoop {
        /// The trunk's index in the file.
        index: usize,
        /// The switch.
        switch: String,
    },
    /// A VCI in the reserved range, or a VPI of 0 for a virtual path.
    #[error("{what}: {message}")]
    Reserved {
        /// The host or virtual path.
        what: String,
        /// What is wrong and what to use instead.
        message: String,
    },
    /// Two hosts that must talk have no path of trunks between their switches.
    #[error(
        "host {from} cannot reach host {to}: no trunks join switch {from_switch} to {to_switch}"
    )]
    Unreachable {
        /// One host.
        from: String,
        /// The other.
        to: String,
        /// Its switch.
        from_switch: String,
        /// The other's switch.
        to_switch: String,
    },
    /// A plan shape that cannot be made from this database.
    #[error("{0}")]
    Shape(String),
    /// A link ran out of VCIs.
    #[error("no free VCI left on {link}")]
    Exhausted {
        /// The link.
        link: String,
    },
    /// Circuits that would share a VPI/VCI on a link.
    #[error("{} VCI conflict(s) on links: {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Conflicts(Vec<Conflict>),
}

/// Two circuits given the same VPI/VCI on the same link in the same direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    /// The link (`host methuselah`, `trunk asx1-asx2`).
    pub link: String,
    /// The direction (`methuselah->asx1`).
    pub direction: String,
    /// The label both circuits were given.
    pub vc: Vc,
    /// The two circuits (`a->b`).
    pub circuits: [String; 2],
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "VPI/VCI {} on {} ({}) is given to both {} and {}",
            self.vc, self.link, self.direction, self.circuits[0], self.circuits[1]
        )
    }
}
