//! The model beside a run: [`SharedHost`] fitted from a ping-pong's samples (one-way times and
//! the time in the calls that sent and received each message), and each sample's prediction.
//! The fit takes ping-pong samples only, never the collectives it is then held against.

use weft_model::calc::{PingPongPoint, SharedHost};
use weft_model::mp::Pattern;

use super::error::MpError;
use super::result::{MpResult, MpSample};

/// Fits the model to the ping-pong among `samples` (mean one-way times,
/// [`MpSample::send_us`] + [`MpSample::recv_us`] for the CPU, and
/// [`MpSample::reduce_kernel_us`] for the reduction) for a host of `cores` cores.
pub fn fit(samples: &[MpSample], cores: usize) -> Result<SharedHost, MpError> {
    let points: Vec<PingPongPoint> = samples
        .iter()
        .filter(|s| s.pattern.parse::<Pattern>() == Ok(Pattern::PingPong))
        .filter_map(|s| {
            Some(PingPongPoint {
                bytes: s.size as f64,
                one_way_s: s.mean_us * 1e-6,
                cpu_s: (s.send_us? + s.recv_us?) * 1e-6,
                reduce_s: s.reduce_kernel_us.map(|us| us * 1e-6),
            })
        })
        .collect();
    SharedHost::fit(&points, cores).ok_or_else(|| {
        MpError::Config(
            "the model needs ping-pong at two sizes or more, with the time in send and receive \
             calls and of the reduction kernel (a `weft mp --pattern pingpong --json` result of \
             this version)"
                .into(),
        )
    })
}

/// Sets each sample's [`MpSample::model_us`] to what `host` predicts for it among the run's
/// ranks (NPB skeletons: a time step).
pub fn attach(result: &mut MpResult, host: &SharedHost) {
    let ranks = result.spec.ranks as usize;
    for s in &mut result.samples {
        let Ok(pattern) = s.pattern.parse::<Pattern>() else {
            continue;
        };
        let t = host.pattern(&pattern, ranks, s.size as f64);
        s.model_us = t.is_finite().then_some(t * 1e6);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pp(size: u64, one_way_us: f64, cpu_us: f64, kernel_us: f64) -> MpSample {
        MpSample {
            pattern: "pingpong".into(),
            algorithm: None,
            size,
            mean_us: one_way_us,
            p50_us: one_way_us,
            p99_us: one_way_us,
            min_us: one_way_us,
            max_us: one_way_us,
            mbps: 0.0,
            iterations: 10,
            bytes_per_iter: size as f64,
            messages_per_iter: 1.0,
            total_ms: None,
            send_us: Some(cpu_us * 0.6),
            recv_us: Some(cpu_us * 0.4),
            reduce_us: None,
            cpu_us: None,
            reduce_kernel_us: Some(kernel_us),
            model_us: None,
        }
    }

    #[test]
    fn fits_from_ping_pong_and_predicts_the_other_samples() {
        // alpha 4 us, 8 Gbit/s one way; CPU 5 us + 1 ns per byte; a reduction 0.01 us +
        // 0.25 ns per byte.
        let mut samples = [
            pp(8, 4.0 + 8e-3, 5.0 + 8e-3, 0.01 + 2e-3),
            pp(1 << 20, 4.0 + 1048.576, 5.0 + 1048.576, 0.01 + 262.144),
        ];
        let host = fit(&samples, 2).unwrap();
        assert!((host.one_way.alpha - 4e-6).abs() < 1e-10, "{host:?}");
        assert!((host.cpu.alpha - 5e-6).abs() < 1e-10, "{host:?}");
        assert!((host.reduce.alpha - 1e-8).abs() < 1e-12, "{host:?}");
        assert!((host.reduce.beta - 0.25e-9).abs() < 1e-15, "{host:?}");
        assert!(fit(&samples[..1], 2).is_err());
        // A ping-pong that did not time the reduction kernel (an older result) fits no model.
        samples[1].reduce_kernel_us = None;
        assert!(fit(&samples, 2).is_err());
        let mut barrier = pp(0, 0.0, 0.0, 0.0);
        barrier.pattern = "barrier".into();
        let mut r = MpResult {
            spec: crate::mp::spec::tests::spec(),
            hosts: vec![],
            samples: vec![barrier],
            ranks: vec![],
        };
        attach(&mut r, &host);
        // 4 ranks on 2 cores: 8 empty messages of 5 us of CPU over 2 cores.
        let m = r.samples[0].model_us.unwrap();
        assert!((m - 20.0).abs() < 1e-6, "{m}");
    }
}
