//! The model engine's answer for a scenario workload of kind `mp`: the alpha-beta time of one
//! iteration, with `alpha` the one-way propagation delay between the farthest two ranks and
//! `beta` the inverse TCP goodput of the slowest link on any rank's path. Host overheads are
//! unknown here and left out, so the model is a floor on what an engine that runs real stacks
//! (emu) measures; `weft mp` fits both parameters from ping-pong instead.

use super::AlphaBeta;
use crate::scenario::{Scenario, Workload};
use crate::tech::Transport;

/// A prediction for one point of an `mp` workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// The machine the prediction assumes.
    pub machine: AlphaBeta,
    /// Time of one iteration (ping-pong: one way; NPB: one time step), seconds.
    pub iteration_s: f64,
}

/// Predicts one point of `w` (of kind `mp`) on the topology of `s`.
pub fn predict(s: &Scenario, w: &Workload) -> Result<Prediction, String> {
    let m = w.mp.as_ref().ok_or("not an mp workload")?;
    let tcp = Transport::Tcp { options: 0 };
    let (mut alpha, mut rate) = (0.0f64, f64::INFINITY);
    for (i, a) in m.ranks.iter().enumerate() {
        for b in &m.ranks[i + 1..] {
            let path = s
                .path(a, b)
                .ok_or_else(|| format!("no path from {a} to {b}"))?;
            let delay: u64 = path.iter().map(|l| l.delay.as_nanos()).sum();
            alpha = alpha.max(delay as f64 / 1e9);
            let mtu = path.iter().map(|l| l.tech.mtu.0).min().unwrap_or(1500);
            for l in &path {
                if let Ok(g) = l.tech.goodput(mtu, tcp) {
                    rate = rate.min(g.as_bps() as f64);
                }
            }
        }
    }
    let beta = if rate.is_finite() && rate > 0.0 {
        8.0 / rate
    } else {
        0.0
    };
    let machine = AlphaBeta { alpha, beta };
    let p = m.ranks.len();
    let size = w.size.map_or(0, |s| s.as_bytes()) as f64;
    let iteration_s = machine.pattern(&m.pattern, p, size);
    if iteration_s.is_nan() {
        return Err(format!("{} does not run on {p} ranks", m.pattern));
    }
    Ok(Prediction {
        machine,
        iteration_s,
    })
}
