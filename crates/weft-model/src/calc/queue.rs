//! Queueing formulas: the output-queued switch under Bernoulli arrivals, and M/D/1.

use serde::Serialize;

/// Mean wait in slots of a cell in an `n`-port output-queued switch with Bernoulli arrivals at
/// load `p` per input and uniform destinations (Karol, Hluchyj & Morgan 1987):
/// ((N-1)/N) * p / (2(1-p)). Infinite at p >= 1; `None` for p outside 0..=1 or n = 0.
pub fn output_queued_wait(n: u32, p: f64) -> Option<f64> {
    if n == 0 || !(0.0..=1.0).contains(&p) {
        return None;
    }
    if p >= 1.0 {
        return Some(f64::INFINITY);
    }
    Some((n as f64 - 1.0) / n as f64 * p / (2.0 * (1.0 - p)))
}

/// The M/D/1 queue at utilisation `rho`, times in units of the (deterministic) service time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Md1 {
    /// Utilisation, 0..1.
    pub rho: f64,
    /// Mean wait before service: rho / (2(1-rho)).
    pub wait: f64,
    /// Mean time in system: wait + 1.
    pub sojourn: f64,
    /// Mean number waiting (Little): rho * wait = rho^2 / (2(1-rho)).
    pub queue_len: f64,
    /// Mean number in system: queue_len + rho.
    pub in_system: f64,
}

impl Md1 {
    /// M/D/1 at utilisation `rho` (0 <= rho < 1), or `None`.
    pub fn new(rho: f64) -> Option<Md1> {
        if !(0.0..1.0).contains(&rho) {
            return None;
        }
        let wait = rho / (2.0 * (1.0 - rho));
        Some(Md1 {
            rho,
            wait,
            sojourn: wait + 1.0,
            queue_len: rho * wait,
            in_system: rho * wait + rho,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_queue_tends_to_md1() {
        assert_eq!(output_queued_wait(1, 0.5), Some(0.0));
        assert!((output_queued_wait(2, 0.5).unwrap() - 0.25).abs() < 1e-12);
        let big = output_queued_wait(1_000_000, 0.8).unwrap();
        assert!((big - Md1::new(0.8).unwrap().wait).abs() < 1e-5);
        assert_eq!(output_queued_wait(4, 1.0), Some(f64::INFINITY));
        assert_eq!(output_queued_wait(4, 1.5), None);
    }

    #[test]
    fn md1_littles_law() {
        let q = Md1::new(0.9).unwrap();
        assert!((q.wait - 4.5).abs() < 1e-12);
        assert!((q.queue_len - 0.81 / 0.2).abs() < 1e-12);
        assert!(Md1::new(1.0).is_none());
    }
}
