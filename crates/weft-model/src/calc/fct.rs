//! The ideal a datacenter workload's flows are held against (issue 29): a flow alone on the
//! fabric completes in its bytes over the path's bottleneck goodput plus the base round trip
//! (the handshake's; propagation only), and the flows of a pattern, sharing the bottleneck
//! fairly, in the closed forms of [`pattern_fct`]. The simulator reports the same ideal beside
//! its measured completion times, so every result shows its distance from it.

use crate::app::traffic::Traffic;
use crate::scenario::{Link, Scenario, Workload};
use crate::tech::Transport;

/// A flow's path: its bottleneck's TCP goodput at the path MTU (bits/s) and its base round
/// trip (ns, twice the propagation delays).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathIdeal {
    /// Payload bits per second of the slowest link for full-sized segments.
    pub goodput_bps: f64,
    /// Twice the sum of the links' delays, ns.
    pub rtt_ns: f64,
}

impl PathIdeal {
    /// The ideal of `path` for `w`'s segments (its `mss`, else the path MTU less 40 bytes).
    pub fn of(path: &[&Link], w: &Workload) -> Option<Self> {
        let transport = Transport::Tcp { options: 0 };
        let path_mtu = path.iter().map(|l| l.tech.mtu.0).min()?;
        let mtu = w
            .mss
            .map_or(path_mtu, |m| (m.0 + transport.header_bytes()).min(path_mtu));
        let goodput = path
            .iter()
            .filter_map(|l| l.tech.goodput(mtu, transport).ok())
            .min()?;
        Some(PathIdeal {
            goodput_bps: goodput.as_bps() as f64,
            rtt_ns: 2.0 * path.iter().map(|l| l.delay.0 as f64).sum::<f64>(),
        })
    }

    /// The path from `a` to `b` in `s`.
    pub fn between(s: &Scenario, w: &Workload, a: &str, b: &str) -> Option<Self> {
        Self::of(&s.path(a, b)?, w)
    }

    /// A flow of `bytes` alone: bytes over the goodput plus the round trip, ns.
    pub fn alone_ns(&self, bytes: u64) -> f64 {
        bytes as f64 * 8.0 / self.goodput_bps * 1e9 + self.rtt_ns
    }
}

/// Ideal completion times (ns) of `flows` flows of `bytes` each in `traffic`, sharing fairly:
/// (median, last). An incast's flows share the receiver's link, so all finish together after
/// `flows * bytes` have crossed it; a permutation's flows each have a path of their own on a
/// non-blocking fabric, and share an oversubscribed one's uplinks `oversubscription` to one;
/// `share` is the mean share of its path a flow gets from the multipath ([`ecmp_share`]; 1
/// for spraying).
pub fn pattern_fct(
    traffic: Traffic,
    flows: u64,
    bytes: u64,
    path: &PathIdeal,
    oversubscription: f64,
    share: f64,
) -> (f64, f64) {
    let t = match traffic {
        Traffic::Incast => path.alone_ns(flows * bytes),
        Traffic::Permutation | Traffic::Pairs => {
            let serial = bytes as f64 * 8.0 / path.goodput_bps * 1e9;
            serial * oversubscription.max(1.0) / share.clamp(1e-9, 1.0) + path.rtt_ns
        }
    };
    (t, t)
}

/// The mean share of its uplink a flow gets when `flows` flows leaving a switch are hashed
/// onto `uplinks` equal-cost uplinks (per-flow ECMP) and colliding flows share a link: the
/// GIGAswitch formula ([`super::hol::gigaswitch_efficiency`]), `(n/m)(1 - (1 - 1/n)^m)`, the
/// same balls-in-bins count (k = 4 fat-tree: 0.75; k = 12: 0.665). One hashing stage only: a
/// fabric with more stages collides more, so this is an upper bound on ECMP's mean goodput.
pub fn ecmp_share(uplinks: u32, flows: u32) -> f64 {
    super::hol::gigaswitch_efficiency(uplinks, flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incast_takes_n_times_a_flow_and_a_permutation_one_on_a_full_fabric() {
        let p = PathIdeal {
            goodput_bps: 8e9,
            rtt_ns: 10_000.0,
        };
        // 1 MB at 8 Gbit/s: 1 ms, plus 10 us.
        assert_eq!(p.alone_ns(1_000_000), 1_010_000.0);
        assert_eq!(
            pattern_fct(Traffic::Incast, 8, 1_000_000, &p, 1.0, 1.0),
            (8_010_000.0, 8_010_000.0)
        );
        assert_eq!(
            pattern_fct(Traffic::Permutation, 8, 1_000_000, &p, 1.0, 1.0).1,
            1_010_000.0
        );
        assert_eq!(
            pattern_fct(Traffic::Permutation, 8, 1_000_000, &p, 3.0, 1.0).1,
            3_010_000.0
        );
        // Per-flow ECMP on a k = 4 fat-tree's edge: two flows on two uplinks, 3/4 each.
        assert_eq!(ecmp_share(2, 2), 0.75);
        assert_eq!(
            pattern_fct(Traffic::Permutation, 8, 1_000_000, &p, 1.0, 0.75).1,
            1_000_000.0 / 0.75 + 10_000.0
        );
    }
}
