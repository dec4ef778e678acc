//! The `[emu]` table of a scenario file: how the emulator runs a file it cannot run as written.
//!
//! ```toml
//! [emu]
//! link_rate = "100Mbps"   # every link faster than this runs at it on the emulator
//! dctcp = "cubic"         # where the kernel has no tcp_dctcp: cubic with ECN (RFC 3168) stands in
//! ```
//!
//! The emulator's switch is one userspace thread: it keeps a k = 4 fat-tree at 100-200 Mbit/s
//! links, not at 10 Gbit/s. `link_rate` scales every faster link down to it, and each workload's
//! `time` up by as much (delays, buffers and ECN thresholds in frames stay as written);
//! `weft run --as-emu` runs every engine on the file as the emulator does, so that the
//! simulator can be held against the emulator at the same rate. Without `dctcp`, a dctcp
//! workload on a kernel without the module is skipped.

use serde::Serialize;

use super::Scenario;
use super::reader::{Result, Tbl};
use crate::tcp::CcAlgorithm;
use crate::units::Rate;

/// What a file's `[emu]` table asks of the emulator.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EmuSettings {
    /// Every link faster than this runs at it on the emulator (`link_rate`), bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_rate: Option<Rate>,
    /// The congestion control, with ECN, that stands in for dctcp where the kernel lacks it
    /// (`dctcp = "cubic"` or `"reno"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dctcp: Option<CcAlgorithm>,
}

/// The file's `[emu]` table, if any.
pub(super) fn parse(root: &Tbl<'_, '_>) -> Result<Option<EmuSettings>> {
    let Some(t) = root.table("emu", "expected one table: [emu] with link_rate = ...")? else {
        return Ok(None);
    };
    t.check_keys(&["link_rate", "dctcp"])?;
    let link_rate = t.rate("link_rate", Rate::bps(1_000), Rate::bps(u64::MAX))?;
    let dctcp = match t.string("dctcp")?.as_deref() {
        None => None,
        Some("cubic") => Some(CcAlgorithm::Cubic),
        Some("reno") => Some(CcAlgorithm::Reno),
        Some(_) => return Err(t.err("dctcp", "expected cubic or reno (with ECN)")),
    };
    Ok(Some(EmuSettings { link_rate, dctcp }))
}

impl Scenario {
    /// The scenario as the emulator runs it, with a note for each change: every link faster
    /// than `[emu] link_rate` at that rate, and where the kernel has no dctcp (`has_dctcp`
    /// false) `[emu] dctcp`'s congestion control with ECN in every dctcp workload. Unchanged
    /// without an `[emu]` table.
    pub fn as_emulated(&self, has_dctcp: bool) -> (Scenario, Vec<String>) {
        let mut s = self.clone();
        let mut notes = Vec::new();
        let Some(e) = self.emu.clone() else {
            return (s, notes);
        };
        if let Some(rate) = e.link_rate {
            let mut from: Vec<Rate> = Vec::new();
            let links = s.links.iter_mut();
            let tiers = s.fabric.iter_mut().flat_map(|f| f.tiers.iter_mut());
            for l in links.chain(tiers) {
                if l.tech.rate > rate {
                    if !from.contains(&l.tech.rate) {
                        from.push(l.tech.rate);
                    }
                    l.tech.rate = rate;
                    l.tech.line_rate = l.tech.line_rate.min(rate);
                }
            }
            if let Some(&fastest) = from.iter().max() {
                // Every workload's time stretched as its transfers are.
                let factor = fastest.as_bps() as f64 / rate.as_bps().max(1) as f64;
                for w in s.workloads.iter_mut() {
                    if let Some(t) = w.time.as_mut() {
                        t.0 = (t.0 as f64 * factor).min(u64::MAX as f64) as u64;
                    }
                }
                let was: Vec<String> = from.iter().map(ToString::to_string).collect();
                notes.push(format!(
                    "links at {rate} as the emulator runs them ([emu] link_rate), not the file's \
                     {}; each workload's time x {factor:.0}",
                    was.join(", ")
                ));
            }
        }
        if let Some(cc) = e.dctcp.filter(|_| !has_dctcp) {
            let mut changed = false;
            for w in s.workloads.iter_mut() {
                if w.cc == Some(CcAlgorithm::Dctcp) {
                    w.cc = Some(cc);
                    w.ecn = true;
                    changed = true;
                }
            }
            if changed {
                notes.push(format!(
                    "{} with ECN stands in for dctcp, which this kernel lacks ([emu] dctcp)",
                    cc.name()
                ));
            }
        }
        (s, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incast() -> Scenario {
        let text = include_str!("../../../../scenarios/fabric-incast.toml");
        Scenario::parse(text, "fabric-incast.toml").expect("a shipped scenario parses")
    }

    #[test]
    fn the_emulated_incast_runs_its_links_at_the_emu_rate_and_cubic_with_ecn_for_dctcp() {
        let s = incast();
        let e = s.emu.as_ref().expect("fabric-incast has an [emu] table");
        let rate = e.link_rate.expect("a link rate");
        let (x, notes) = s.as_emulated(false);
        assert!(x.links.iter().all(|l| l.tech.rate <= rate));
        assert!(
            s.links.iter().any(|l| l.tech.rate > rate),
            "the file's are faster"
        );
        let w = &x.workloads[1];
        assert_eq!((w.cc, w.ecn), (Some(CcAlgorithm::Cubic), true));
        assert!(w.tcp_config(1500).ecn, "the TCP asks for ECN");
        // 10 Gbit/s links at 100 Mbit/s: the time a hundred times longer.
        let (was, now) = (s.workloads[1].time, w.time);
        assert_eq!(now.map(|t| t.0), was.map(|t| t.0 * 100));
        assert_eq!(notes.len(), 2, "{notes:?}");
        // A kernel with dctcp keeps it.
        let (y, _) = s.as_emulated(true);
        assert_eq!(y.workloads[1].cc, Some(CcAlgorithm::Dctcp));
    }

    #[test]
    fn an_emu_array_is_refused() {
        let text = "name = \"x\"\n[[emu]]\nlink_rate = \"100Mbps\"\n";
        let e = Scenario::parse(text, "x.toml").expect_err("one [emu] table");
        assert!(e.to_string().contains("expected one table"), "{e}");
    }

    #[test]
    fn an_unknown_stand_in_is_refused() {
        let text = "name = \"x\"\n[emu]\ndctcp = \"bbr\"\n";
        let e = Scenario::parse(text, "x.toml").expect_err("bbr is not offered");
        assert!(e.to_string().contains("expected cubic or reno"), "{e}");
    }
}
