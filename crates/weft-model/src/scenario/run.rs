//! One loop over a scenario's points for every engine.
//!
//! An engine runs one point with a seed ([`PointEngine::run_point`]) and returns what it found
//! there: its metrics, under the keys of [`super::Metric`] and the applications' own, and its
//! notes. [`run_points`] walks the points in the order of [`Scenario::points`], gives each its
//! seed ([`point_seed`]) and labels its sample the same way on every engine (`workload`, the
//! workload's index in the file; `point`, the swept value in base units: bytes, bit/s, ns;
//! `notes`), so that `weft run` lines the engines' samples up by position. A point an engine
//! cannot run at all is still a sample, with `skipped` saying why ([`PointResult::skipped`]),
//! so that the file's other points run and the reader sees which did not.
//!
//! A point's seed comes from the run's seed and the point's index alone: adding a point does
//! not change the others, and every engine builds the same network for a point (its
//! topology's random streams, [`crate::net::Topology::from_scenario`], drawn from that seed).

use serde_json::{Map, Value, json};

use super::{Param, Point, Scenario};
use crate::rng::Rng;

/// One point of a scenario as an engine gets it.
#[derive(Clone, Copy, Debug)]
pub struct PointCtx<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The point's index in [`Scenario::points`].
    pub index: usize,
    /// The point: its workload with the swept value in place.
    pub point: &'a Point,
    /// The point's seed ([`point_seed`] of the run's).
    pub seed: u64,
}

/// What an engine found at one point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PointResult {
    /// Metrics by key.
    pub metrics: Map<String, Value>,
    /// What the engine assumed or could not do, for a reader.
    pub notes: Vec<String>,
    /// Why the engine did not run this point at all (`"not on emu: NDP is simulator-only"`);
    /// `None` for a point it ran. A skipped point has no metrics.
    pub skipped: Option<String>,
}

impl PointResult {
    /// A point the engine cannot run, and why (begin with `not on ENGINE:`).
    pub fn skipped(why: impl Into<String>) -> Self {
        PointResult {
            skipped: Some(why.into()),
            ..Default::default()
        }
    }
}

/// An engine: something that runs one point of a scenario.
pub trait PointEngine {
    /// Why a point could not run (and the run stops).
    type Error;

    /// Runs point `p` with its seed. An engine that cannot run a point at all returns
    /// [`PointResult::skipped`]; one that ran it but could not give its metrics says why in the
    /// notes; an error stops the run.
    fn run_point(&mut self, p: &PointCtx<'_>) -> Result<PointResult, Self::Error>;
}

/// The seed of point `index` of a run with seed `seed`.
pub fn point_seed(seed: u64, index: usize) -> u64 {
    Rng::for_stream(seed, 0x5ce0 + index as u64).next_u64()
}

/// The label of a swept value: a count or a number as it is, a size in bytes, a rate in bit/s,
/// a duration in ns; `null` for a point without a sweep.
pub fn label(value: Option<Param>) -> Value {
    match value {
        None => Value::Null,
        Some(Param::Count(n)) => json!(n),
        Some(Param::Number(x)) => json!(x),
        Some(Param::Size(s)) => json!(s.as_bytes()),
        Some(Param::Rate(r)) => json!(r.as_bps()),
        Some(Param::Duration(d)) => json!(d.as_nanos()),
    }
}

/// Runs every point of `s` on `engine` with the run's seed `seed`: one sample per point, in
/// order, each `{ "workload", "point", "notes", metrics... }`, and `"skipped": why` for a point
/// the engine did not run ([`skipped`] lists them).
pub fn run_points<E: PointEngine + ?Sized>(
    s: &Scenario,
    seed: u64,
    engine: &mut E,
) -> Result<Vec<Value>, E::Error> {
    let points = s.points();
    let mut samples = Vec::with_capacity(points.len());
    for (index, point) in points.iter().enumerate() {
        let ctx = PointCtx {
            scenario: s,
            index,
            point,
            seed: point_seed(seed, index),
        };
        let r = engine.run_point(&ctx)?;
        let mut sample = json!({
            "workload": point.workload,
            "point": label(point.value),
            "notes": r.notes,
        });
        if let Some(why) = r.skipped {
            sample["skipped"] = json!(why);
        }
        for (key, v) in r.metrics {
            sample[key] = v;
        }
        samples.push(sample);
    }
    Ok(samples)
}

/// The points of a result document's samples that their engine skipped: (workload index,
/// why), in order.
pub fn skipped(samples: &[Value]) -> Vec<(usize, String)> {
    samples
        .iter()
        .filter_map(|x| {
            let why = x.get("skipped")?.as_str()?;
            let w = x.get("workload").and_then(Value::as_u64).unwrap_or(0);
            Some((w as usize, why.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the points it is given; fails at `fail_at`.
    struct Recorder {
        seen: Vec<(usize, u64)>,
        fail_at: Option<usize>,
        skip_at: Option<usize>,
    }

    impl PointEngine for Recorder {
        type Error = String;

        fn run_point(&mut self, p: &PointCtx<'_>) -> Result<PointResult, String> {
            if self.fail_at == Some(p.index) {
                return Err(format!("point {}", p.index));
            }
            if self.skip_at == Some(p.index) {
                return Ok(PointResult::skipped("not on recorder: point 1"));
            }
            self.seen.push((p.index, p.seed));
            let mut r = PointResult::default();
            r.metrics.insert("index".into(), json!(p.index));
            r.notes.push("noted".into());
            Ok(r)
        }
    }

    fn scenario() -> Scenario {
        let text = include_str!("../../../../scenarios/ebn-vp26.toml");
        Scenario::parse(text, "ebn-vp26.toml").expect("a shipped scenario parses")
    }

    #[test]
    fn every_point_in_order_with_its_seed_and_label() {
        let s = scenario();
        let mut e = Recorder {
            seen: Vec::new(),
            fail_at: None,
            skip_at: None,
        };
        let samples = run_points(&s, 7, &mut e).expect("no point fails");
        assert_eq!(samples.len(), s.points().len());
        // The sweep of the first workload: windows in bytes.
        assert_eq!(samples[0]["point"], json!(35600));
        assert_eq!(samples[1]["point"], json!(65536));
        assert_eq!(samples[2]["point"], Value::Null);
        assert_eq!(samples[2]["workload"], json!(1));
        assert_eq!(samples[2]["notes"], json!(["noted"]));
        assert_eq!(samples[2]["index"], json!(2));
        let seeds: Vec<u64> = e.seen.iter().map(|&(_, seed)| seed).collect();
        let expected: Vec<u64> = (0..seeds.len()).map(|k| point_seed(7, k)).collect();
        assert_eq!(seeds, expected);
        assert_ne!(seeds[0], seeds[1], "each point its own seed");
        assert_ne!(point_seed(8, 0), seeds[0], "and the run's seed decides it");
    }

    #[test]
    fn an_error_stops_the_run() {
        let mut e = Recorder {
            seen: Vec::new(),
            fail_at: Some(1),
            skip_at: None,
        };
        assert_eq!(run_points(&scenario(), 1, &mut e), Err("point 1".into()));
        assert_eq!(e.seen.len(), 1);
    }

    #[test]
    fn a_skipped_point_is_a_sample_that_says_why_and_the_run_goes_on() {
        let s = scenario();
        let mut e = Recorder {
            seen: Vec::new(),
            fail_at: None,
            skip_at: Some(1),
        };
        let samples = run_points(&s, 1, &mut e).expect("a skip is not an error");
        assert_eq!(
            samples.len(),
            s.points().len(),
            "every point has its sample"
        );
        assert_eq!(samples[1]["skipped"], json!("not on recorder: point 1"));
        assert!(
            samples[1].get("index").is_none(),
            "a skipped point has no metrics"
        );
        assert!(samples[0].get("skipped").is_none() && samples[2].get("skipped").is_none());
        assert_eq!(
            e.seen.len(),
            s.points().len() - 1,
            "the points after it ran"
        );
        assert_eq!(
            skipped(&samples),
            vec![(
                samples[1]["workload"].as_u64().unwrap() as usize,
                "not on recorder: point 1".into()
            )]
        );
    }
}
