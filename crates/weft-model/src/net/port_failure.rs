//! Ports taken down during a run (issue 29: the loss of a link or a switch): which of a
//! switch's ports are down, what each lost when it went down, and the live part of a group of
//! equal-cost ports, so that multipath forwarding rehashes over the paths that remain. Nothing
//! here reads a clock: the switch is told when a port goes down or comes back
//! ([`super::SwitchCore::set_port_down`]).

use crate::element::PortId;

/// The ports of one switch that are down, and what their failures cost.
#[derive(Clone, Debug, Default)]
pub struct DownPorts {
    /// Whether each port is down (empty while none ever was).
    down: Vec<bool>,
    /// Ports down now.
    count: usize,
    /// Frames each port's output held (queued or on its line) when it went down, lost.
    lost: Vec<u64>,
    /// The live ports of the last group asked for (kept to reuse its allocation).
    live: Vec<PortId>,
    /// Frames dropped because every port towards their destination was down.
    pub unrouted: u64,
}

impl DownPorts {
    /// Whether `port` is down.
    pub fn is_down(&self, port: PortId) -> bool {
        self.down.get(port).copied().unwrap_or(false)
    }

    /// Marks `port` down (or up again); returns whether it changed.
    pub fn set(&mut self, port: PortId, down: bool) -> bool {
        if self.down.len() <= port {
            self.down.resize(port + 1, false);
        }
        if self.down[port] == down {
            return false;
        }
        self.down[port] = down;
        if down {
            self.count += 1;
        } else {
            self.count -= 1;
        }
        true
    }

    /// Counts `frames` lost by `port` as it went down.
    pub fn add_lost(&mut self, port: PortId, frames: u64) {
        if self.lost.len() <= port {
            self.lost.resize(port + 1, 0);
        }
        self.lost[port] += frames;
    }

    /// Frames `port` lost to its failures (`fail_lost_frames`).
    pub fn lost(&self, port: PortId) -> u64 {
        self.lost.get(port).copied().unwrap_or(0)
    }

    /// The ports of `group` that are up, in order (all of them while none is down).
    pub fn live<'a>(&'a mut self, group: &'a [PortId]) -> &'a [PortId] {
        if self.count == 0 {
            return group;
        }
        self.live.clear();
        let down = &self.down;
        self.live.extend(
            group
                .iter()
                .copied()
                .filter(|&p| !down.get(p).copied().unwrap_or(false)),
        );
        &self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_loses_its_down_ports_and_gets_them_back() {
        let mut d = DownPorts::default();
        assert_eq!(d.live(&[4, 5, 6]), &[4, 5, 6]);
        assert!(d.set(5, true));
        assert!(!d.set(5, true), "already down");
        assert_eq!(d.live(&[4, 5, 6]), &[4, 6]);
        assert!(d.set(4, true) && d.set(6, true));
        assert!(d.live(&[4, 5, 6]).is_empty());
        assert!(d.set(5, false));
        assert_eq!(d.live(&[4, 5, 6]), &[5]);
        d.add_lost(5, 3);
        d.add_lost(6, 2);
        d.add_lost(5, 1);
        assert_eq!((d.lost(4), d.lost(5), d.lost(6)), (0, 4, 2));
    }
}
