//! Traffic contracts on planned circuits (`[[vc.contract]]` of a scenario's `[vc]`): a peak,
//! sustainable rate and burst ([`VcContract`]) on one circuit (`from` -> `to`) or on a whole
//! virtual path (`vpi`, every circuit inside it sharing one contract: EBN's 26-33 Mbit/s VP),
//! enforced at one switch on the cells arriving there, policed (counted, and dropped or tagged)
//! or shaped (delayed until they conform). Resolving a contract against a plan names the entry
//! it applies to: the switch, the input port (the database's number) and the label there.
//!
//! ```toml
//! [[vc.contract]]
//! from = "methuselah"   # a circuit; enforced at its first switch unless `switch` is given
//! to = "dhpc04"
//! pcr = "26Mbps"
//! police = true        # or "ppd" (the rest of a broken frame dropped too), "tag", "shape"
//!
//! [[vc.contract]]
//! switch = "ebn"        # a path: every entry of `switch` that switches VPI `vpi` as a path
//! vpi = 5
//! pcr = "26Mbps"
//! ```

use serde::{Deserialize, Serialize};

use super::{Plan, Vc};
use crate::shaper::VcContract;

/// What a contract is on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContractTarget {
    /// The one-way circuit from host `from` to host `to`.
    Circuit {
        /// The sending host.
        from: String,
        /// The receiving host.
        to: String,
    },
    /// Every circuit inside virtual path `vpi`, as one stream of cells (each direction its own).
    Path {
        /// The path's VPI where the contract is enforced.
        vpi: u8,
    },
}

/// A contract as a scenario gives it: on what, where, and its terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CircuitContract {
    /// The switch that enforces it; `None` (circuits only): the circuit's first switch, where
    /// the sending host's cells enter the network (usage parameter control at the edge).
    pub switch: Option<String>,
    /// The circuit or path.
    pub target: ContractTarget,
    /// Its terms, and whether it polices or shapes.
    pub contract: VcContract,
}

/// Where a contract is enforced: on the cells arriving at `switch` on database port `in_port`
/// labelled `label` (VCI 0: every channel of path `label.vpi` on that port).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractAt {
    /// The switch.
    pub switch: String,
    /// The port (the database's number) the cells arrive on.
    pub in_port: u32,
    /// Their label there; VCI 0 stands for the whole path.
    pub label: Vc,
    /// The contract.
    pub contract: VcContract,
}

/// A contract as a switch holds it: on the cells arriving on database port `in_port` labelled
/// `label` (VCI 0: every channel of path `label.vpi` on that port). What the connection manager
/// pushes to a switch with its table ([`super::Push`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortContract {
    /// The port (the database's number) the cells arrive on.
    pub in_port: u32,
    /// Their label there; VCI 0 stands for the whole path.
    pub label: Vc,
    /// The contract.
    pub contract: VcContract,
}

impl ContractAt {
    /// The contract as its switch holds it.
    pub fn at_port(&self) -> PortContract {
        PortContract {
            in_port: self.in_port,
            label: self.label,
            contract: self.contract,
        }
    }
}

/// Where each of `contracts` is enforced in `plan` ([`CircuitContract::resolve`]), in order.
pub fn resolve_all(contracts: &[CircuitContract], plan: &Plan) -> Result<Vec<ContractAt>, String> {
    let mut at = Vec::new();
    for c in contracts {
        at.extend(c.resolve(plan)?);
    }
    Ok(at)
}

impl CircuitContract {
    /// The entries of `plan` this contract applies to: one for a circuit, one per input of the
    /// path at the switch for a path (each direction policed on its own). An error names a
    /// circuit, switch or path the plan does not have.
    pub fn resolve(&self, plan: &Plan) -> Result<Vec<ContractAt>, String> {
        match &self.target {
            ContractTarget::Circuit { from, to } => {
                let vc = plan
                    .vcs
                    .iter()
                    .find(|v| v.from == *from && v.to == *to)
                    .ok_or_else(|| format!("contract: the plan has no circuit {from} -> {to}"))?;
                let hop = match &self.switch {
                    None => vc.hops.first(),
                    Some(s) => vc.hops.iter().find(|h| h.switch == *s),
                }
                .ok_or_else(|| {
                    format!(
                        "contract: the circuit {from} -> {to} does not cross switch {}",
                        self.switch.as_deref().unwrap_or("?")
                    )
                })?;
                Ok(vec![ContractAt {
                    switch: hop.switch.clone(),
                    in_port: hop.in_port,
                    label: Vc::new(hop.in_vpi, hop.in_vci),
                    contract: self.contract,
                }])
            }
            ContractTarget::Path { vpi } => {
                let Some(switch) = &self.switch else {
                    return Err("contract: a path's contract (vpi) needs `switch`".into());
                };
                let table = plan
                    .tables
                    .iter()
                    .find(|t| t.switch == *switch)
                    .ok_or_else(|| format!("contract: the plan has no switch {switch}"))?;
                let at: Vec<ContractAt> = table
                    .entries
                    .iter()
                    .filter(|e| e.in_vci.is_none() && e.in_vpi == *vpi)
                    .map(|e| ContractAt {
                        switch: switch.clone(),
                        in_port: e.in_port,
                        label: Vc::new(*vpi, 0),
                        contract: self.contract,
                    })
                    .collect();
                if at.is_empty() {
                    return Err(format!(
                        "contract: switch {switch} switches no path of VPI {vpi} (a [[vc.vp]] through it)"
                    ));
                }
                Ok(at)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;
    use crate::vc::{HostDb, Shape, plan};

    const DB: &str = r#"
        [[switch]]
        name = "a"
        [[switch]]
        name = "net"
        [[switch]]
        name = "b"
        [[host]]
        name = "x"
        switch = "a"
        port = 1
        [[host]]
        name = "y"
        switch = "b"
        port = 1
        [[trunk]]
        ends = ["a", "net"]
        ports = [9, 1]
        [[trunk]]
        ends = ["net", "b"]
        ports = [2, 9]
        [[vp]]
        ends = ["a", "b"]
        vpi = 5
    "#;

    fn terms() -> VcContract {
        VcContract {
            police: true,
            ..VcContract::peak(Rate::mbps(26))
        }
    }

    #[test]
    fn a_circuit_is_policed_where_it_enters_and_a_path_at_each_input_of_its_switch() {
        let db = HostDb::parse(DB, "db.toml").unwrap();
        let p = plan(&db, &Shape::Mesh).unwrap();
        let c = CircuitContract {
            switch: None,
            target: ContractTarget::Circuit {
                from: "x".into(),
                to: "y".into(),
            },
            contract: terms(),
        };
        let at = c.resolve(&p).unwrap();
        let first = &p.vcs.iter().find(|v| v.from == "x").unwrap().hops[0];
        assert_eq!(at.len(), 1);
        assert_eq!((at[0].switch.as_str(), at[0].in_port), ("a", 1));
        assert_eq!(at[0].label, Vc::new(first.in_vpi, first.in_vci));
        let vp = CircuitContract {
            switch: Some("net".into()),
            target: ContractTarget::Path { vpi: 5 },
            contract: terms(),
        };
        let at = vp.resolve(&p).unwrap();
        let mut ports: Vec<u32> = at.iter().map(|a| a.in_port).collect();
        ports.sort();
        assert_eq!(ports, [1, 2]);
        assert!(at.iter().all(|a| a.label == Vc::new(5, 0)));
        // Named wrong: errors, not an empty list.
        let none = CircuitContract {
            switch: Some("a".into()),
            ..vp
        };
        assert!(none.resolve(&p).is_err());
    }
}
