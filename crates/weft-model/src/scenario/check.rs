//! Qualitative checks (`[[check]]`): a stated relation among the engines' results, such as an
//! ordering, a ratio within a range or a value above or below a bound, named after the catalogue
//! item it reproduces (`data/README.md`).
//!
//! ```toml
//! [[check]]
//! item = "000.rf.order"                       # the catalogue item this check holds
//! what = "EPD > PPD > plain cell drop"        # optional: the claim in words
//! decreasing = ["effective_throughput @ w2", "effective_throughput @ w1", "effective_throughput @ w0"]
//!
//! [[check]]
//! item = "003.t9.falls"
//! decreasing = "throughput_mbps @ w0"         # every point of workload 0, in order
//!
//! [[check]]
//! item = "002.s53.rpc"
//! ratio = ["rtt_p99_us @ w3", "rtt_p99_us @ w2"]   # the first over the second
//! within = [1.2, 10]                               # inclusive
//!
//! [[check]]
//! item = "000.two_to_one.loss"
//! value = "cell_loss @ w0 #0"                 # point 0 of workload 0
//! above = 0.01                                # and/or below = ...
//! ```
//!
//! A value is written `METRIC @ wW` (every point of workload W, in order) or `METRIC @ wW #P`
//! (its point P, from 0); METRIC is a sample key, dotted to reach into nested objects. A check
//! is evaluated on each engine separately: it holds on an engine when every value it names is
//! there and the relation is true, fails when they are there and it is false, and is not
//! evaluated (no verdict) when that engine reports one of the values not at all.

use serde::Serialize;
use serde_json::Value;

use super::{EngineSamples, Scenario};

/// A `[[check]]` of a scenario: which catalogue item it holds and the test.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    /// The catalogue item (`data/catalogue.toml`) this check reproduces.
    pub item: String,
    /// The claim in words, as the study states it (may be empty).
    pub what: String,
    /// The relation that must hold.
    pub test: CheckTest,
}

/// The relation a [`Check`] tests.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckTest {
    /// The values, in the order written (a reference to several points gives them in point
    /// order), each strictly above the one before.
    Increasing(Vec<ValueRef>),
    /// The values, in order, each strictly below the one before.
    Decreasing(Vec<ValueRef>),
    /// `num / den` lies in `lo..=hi`.
    Ratio {
        /// The numerator (one value).
        num: ValueRef,
        /// The denominator (one value).
        den: ValueRef,
        /// Smallest ratio that holds.
        lo: f64,
        /// Largest ratio that holds.
        hi: f64,
    },
    /// Every value of `value` lies above `above` and below `below` (each optional, strict).
    Bound {
        /// The value(s) tested.
        value: ValueRef,
        /// A strict lower bound, if any.
        above: Option<f64>,
        /// A strict upper bound, if any.
        below: Option<f64>,
    },
}

/// One or several values of the engines' samples: a metric at a workload's points.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ValueRef {
    /// The sample key (dotted to reach into nested objects).
    pub metric: String,
    /// The workload's index in the file, from 0.
    pub workload: usize,
    /// One point of the workload (from 0), or `None` for all of them in order.
    pub point: Option<usize>,
}

impl std::fmt::Display for ValueRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} @ w{}", self.metric, self.workload)?;
        if let Some(p) = self.point {
            write!(f, " #{p}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for ValueRef {
    type Err = String;

    /// Reads `METRIC @ wW` or `METRIC @ wW #P` (blanks around the parts are optional).
    fn from_str(text: &str) -> Result<ValueRef, String> {
        let form = "expected \"METRIC @ wW\" or \"METRIC @ wW #P\", such as \"rtt_p99_us @ w3\"";
        let (metric, at) = text.split_once('@').ok_or_else(|| form.to_string())?;
        let metric = metric.trim();
        let metric_ok = !metric.is_empty()
            && metric
                .split('.')
                .all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        if !metric_ok {
            return Err(format!("{form}: {metric:?} is not a sample key"));
        }
        let (w, p) = match at.split_once('#') {
            Some((w, p)) => (w.trim(), Some(p.trim())),
            None => (at.trim(), None),
        };
        let workload = w
            .strip_prefix('w')
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| format!("{form}: {w:?} is not a workload such as w0"))?;
        let point = match p {
            None => None,
            Some(p) => Some(
                p.parse::<usize>()
                    .map_err(|_| format!("{form}: {p:?} is not a point index such as 0"))?,
            ),
        };
        Ok(ValueRef {
            metric: metric.to_string(),
            workload,
            point,
        })
    }
}

/// One engine's answer to a check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckCell {
    /// Engine name.
    pub engine: String,
    /// Every value the check read, labelled (`throughput_mbps @ w0 inputs=2`), `None` where
    /// the engine did not report it.
    pub values: Vec<(String, Option<f64>)>,
    /// The number the relation is about where there is one: the ratio (ratio), the value (a
    /// bound on one value); `None` otherwise.
    pub measure: Option<f64>,
    /// Whether the relation holds; `None` when a value is missing.
    pub held: Option<bool>,
}

/// A check evaluated on every engine that ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckResult {
    /// The check.
    pub check: Check,
    /// One cell per engine, in the order given.
    pub cells: Vec<CheckCell>,
}

impl CheckResult {
    /// Evaluates `check` on each engine's samples of `scenario`.
    pub fn new(check: &Check, scenario: &Scenario, engines: &[EngineSamples<'_>]) -> CheckResult {
        let cells = engines
            .iter()
            .map(|e| check.evaluate(scenario, e))
            .collect();
        CheckResult {
            check: check.clone(),
            cells,
        }
    }

    /// Whether no engine that answered found the relation false.
    pub fn all_held(&self) -> bool {
        self.cells.iter().all(|c| c.held != Some(false))
    }

    /// The result as text: the claim, then per engine its verdict and the values.
    pub fn table(&self) -> String {
        let mut out = format!("check {}: {}", self.check.item, self.check.test);
        if !self.check.what.is_empty() {
            out.push_str(&format!(" ({})", self.check.what));
        }
        out.push('\n');
        for c in &self.cells {
            let verdict = match c.held {
                Some(true) => "held",
                Some(false) => "FAILED",
                None => "not evaluated",
            };
            let values: Vec<String> = c
                .values
                .iter()
                .map(|(l, v)| match v {
                    Some(v) => format!("{l} = {}", short(*v)),
                    None => format!("{l} = -"),
                })
                .collect();
            let measure = c
                .measure
                .filter(|_| matches!(self.check.test, CheckTest::Ratio { .. }))
                .map(|m| format!(" ratio {}", short(m)))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:<6} {verdict}{measure}: {}\n",
                c.engine,
                values.join(", ")
            ));
        }
        out
    }
}

impl std::fmt::Display for CheckTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |refs: &[ValueRef], sep: &str| {
            refs.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(sep)
        };
        match self {
            CheckTest::Increasing(r) if r.len() == 1 => write!(f, "{} increasing", list(r, "")),
            CheckTest::Decreasing(r) if r.len() == 1 => write!(f, "{} decreasing", list(r, "")),
            CheckTest::Increasing(r) => write!(f, "{}", list(r, " < ")),
            CheckTest::Decreasing(r) => write!(f, "{}", list(r, " > ")),
            CheckTest::Ratio { num, den, lo, hi } => {
                write!(f, "({num}) / ({den}) in [{lo}, {hi}]")
            }
            CheckTest::Bound {
                value,
                above,
                below,
            } => match (above, below) {
                (Some(a), Some(b)) => write!(f, "{a} < {value} < {b}"),
                (Some(a), None) => write!(f, "{value} > {a}"),
                (None, Some(b)) => write!(f, "{value} < {b}"),
                (None, None) => write!(f, "{value}"),
            },
        }
    }
}

impl Check {
    /// Every value reference of the check, in the order the test reads them.
    pub fn refs(&self) -> Vec<&ValueRef> {
        match &self.test {
            CheckTest::Increasing(r) | CheckTest::Decreasing(r) => r.iter().collect(),
            CheckTest::Ratio { num, den, .. } => vec![num, den],
            CheckTest::Bound { value, .. } => vec![value],
        }
    }

    /// The check on one engine's samples.
    pub fn evaluate(&self, scenario: &Scenario, engine: &EngineSamples<'_>) -> CheckCell {
        let read = |r: &ValueRef| -> Vec<Labelled> { lookup(scenario, engine, r) };
        let (values, measure, held): (Vec<Labelled>, Option<f64>, Option<bool>) = match &self.test {
            CheckTest::Increasing(refs) | CheckTest::Decreasing(refs) => {
                let values: Vec<_> = refs.iter().flat_map(read).collect();
                let rising = matches!(self.test, CheckTest::Increasing(_));
                let nums: Option<Vec<f64>> = values.iter().map(|(_, v)| *v).collect();
                let held = nums.map(|n| {
                    n.windows(2).all(|w| match w {
                        [a, b] if rising => b > a,
                        [a, b] => b < a,
                        _ => true,
                    })
                });
                (values, None, held)
            }
            CheckTest::Ratio { num, den, lo, hi } => {
                let mut values = read(num);
                values.extend(read(den));
                let ratio = match values.as_slice() {
                    [(_, Some(n)), (_, Some(d))] if *d != 0.0 => Some(n / d),
                    _ => None,
                };
                (values, ratio, ratio.map(|r| (*lo..=*hi).contains(&r)))
            }
            CheckTest::Bound {
                value,
                above,
                below,
            } => {
                let values = read(value);
                let nums: Option<Vec<f64>> = values.iter().map(|(_, v)| *v).collect();
                let held = nums.as_ref().map(|n| {
                    n.iter()
                        .all(|x| above.is_none_or(|a| *x > a) && below.is_none_or(|b| *x < b))
                });
                let measure = match nums.as_deref() {
                    Some([x]) => Some(*x),
                    _ => None,
                };
                (values, measure, held)
            }
        };
        // An empty list of values (a workload without points) decides nothing.
        let held = held.filter(|_| !values.is_empty());
        CheckCell {
            engine: engine.engine.to_string(),
            values,
            measure,
            held,
        }
    }
}

/// A value read for a check, with its label (`None`: the engine did not report it).
type Labelled = (String, Option<f64>);

/// The labelled values `r` names in one engine's samples: the samples of its workload in order,
/// the point-th of them or all.
fn lookup(scenario: &Scenario, engine: &EngineSamples<'_>, r: &ValueRef) -> Vec<Labelled> {
    let labels = super::compare::point_labels(scenario, r.workload);
    let samples: Vec<&Value> = engine
        .samples
        .iter()
        .filter(|s| s.get("workload").and_then(Value::as_u64) == Some(r.workload as u64))
        .collect();
    let value_at = |i: usize| samples.get(i).and_then(|s| metric(s, &r.metric));
    let label_at = |i: usize| {
        let at = labels.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
        format!("{} @ w{} {at}", r.metric, r.workload)
    };
    match r.point {
        Some(p) => vec![(label_at(p), value_at(p))],
        None => (0..labels.len())
            .map(|i| (label_at(i), value_at(i)))
            .collect(),
    }
}

/// The number at a dotted key of a sample (objects by name, arrays by index).
pub(super) fn metric(sample: &Value, key: &str) -> Option<f64> {
    let mut at = sample;
    for seg in key.split('.') {
        at = match at {
            Value::Object(m) => m.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    at.as_f64()
}

fn short(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_read_back_as_written() {
        let r: ValueRef = "rtt_p99_us @ w3".parse().unwrap();
        assert_eq!(r.metric, "rtt_p99_us");
        assert_eq!((r.workload, r.point), (3, None));
        let r: ValueRef = " flows.0.goodput_mbps@w1#2 ".parse().unwrap();
        assert_eq!((r.workload, r.point), (1, Some(2)));
        assert_eq!(r.to_string(), "flows.0.goodput_mbps @ w1 #2");
        for bad in [
            "rtt",
            "@ w1",
            "rtt @ 1",
            "rtt @ w",
            "rtt @ w1 #x",
            "r t @ w0",
            "a..b @ w0",
        ] {
            assert!(bad.parse::<ValueRef>().is_err(), "{bad}");
        }
    }

    fn scenario() -> Scenario {
        Scenario::parse(
            "name = \"x\"\n[[workload]]\nkind = \"saturated\"\ninputs = [1, 2, 3]\noutputs = 5\n\
             [[workload]]\nkind = \"saturated\"\ninputs = 2\noutputs = 5\n",
            "x.toml",
        )
        .unwrap()
    }

    fn check(test: CheckTest) -> Check {
        Check {
            item: "x.1".into(),
            what: String::new(),
            test,
        }
    }

    #[test]
    fn orders_ratios_and_bounds_hold_or_fail_per_engine() {
        let s = scenario();
        let samples = [
            json!({"workload": 0, "e": 0.9}),
            json!({"workload": 0, "e": 0.7}),
            json!({"workload": 0, "e": 0.6}),
            json!({"workload": 1, "e": 0.75, "nested": {"x": [1.0, 2.0]}}),
        ];
        let engine = EngineSamples {
            engine: "sim",
            samples: &samples,
        };
        let all = |m: &str, w: usize| ValueRef {
            metric: m.into(),
            workload: w,
            point: None,
        };
        let one = |m: &str, w: usize, p: usize| ValueRef {
            point: Some(p),
            ..all(m, w)
        };
        let falls = check(CheckTest::Decreasing(vec![all("e", 0)]));
        let cell = falls.evaluate(&s, &engine);
        assert_eq!(cell.held, Some(true));
        assert_eq!(cell.values.len(), 3);
        assert_eq!(cell.values[1].0, "e @ w0 inputs=2");
        let rises = check(CheckTest::Increasing(vec![one("e", 0, 2), one("e", 1, 0)]));
        assert_eq!(rises.evaluate(&s, &engine).held, Some(true));
        let ratio = check(CheckTest::Ratio {
            num: one("e", 1, 0),
            den: one("e", 0, 0),
            lo: 0.8,
            hi: 0.9,
        });
        let cell = ratio.evaluate(&s, &engine);
        assert_eq!(cell.held, Some(true));
        assert!((cell.measure.unwrap() - 0.75 / 0.9).abs() < 1e-12);
        let bound = check(CheckTest::Bound {
            value: all("e", 0),
            above: Some(0.65),
            below: None,
        });
        assert_eq!(bound.evaluate(&s, &engine).held, Some(false));
        let nested = check(CheckTest::Bound {
            value: one("nested.x.1", 1, 0),
            above: Some(1.5),
            below: Some(2.5),
        });
        let cell = nested.evaluate(&s, &engine);
        assert_eq!((cell.held, cell.measure), (Some(true), Some(2.0)));
        // A value the engine does not report leaves the check without a verdict.
        let missing = check(CheckTest::Increasing(vec![all("nope", 0)]));
        let r = CheckResult::new(&missing, &s, &[engine]);
        assert_eq!(r.cells[0].held, None);
        assert!(r.all_held());
        assert!(r.table().contains("not evaluated"), "{}", r.table());
        let r = CheckResult::new(&bound, &s, &[engine]);
        assert!(!r.all_held());
        assert!(r.table().contains("FAILED"), "{}", r.table());
    }
}
