//! Reading numbers and strings out of untrusted sample records by name.
//!
//! Samples are JSON objects written by other commands (and possibly by other versions or by hand).
//! A [`Record`] flattens nested objects into dotted keys (`latency.p50_ns`) and looks fields up by
//! a list of accepted names, so that a figure survives small layout differences: an exact key
//! wins, then a key whose last dotted component matches.

use serde_json::{Map, Value};

/// A flattened sample: dotted key -> value, in key order.
#[derive(Clone, Debug, Default)]
pub struct Record {
    entries: Vec<(String, Value)>,
}

/// Nesting deeper than this is ignored (untrusted input must not recurse without bound).
const MAX_DEPTH: usize = 4;

impl Record {
    /// Flattens `value`; anything but an object gives an empty record.
    pub fn new(value: &Value) -> Self {
        let mut entries = Vec::new();
        if let Value::Object(map) = value {
            flatten("", map, 0, &mut entries);
        }
        Record { entries }
    }

    /// The first of `names` present as a finite number (exact key first, then dotted suffix).
    pub fn num(&self, names: &[&str]) -> Option<f64> {
        self.find(names, |v| v.as_f64().filter(|x| x.is_finite()))
    }

    /// The first of `names` present as a string or number, as text.
    pub fn text(&self, names: &[&str]) -> Option<String> {
        self.find(names, |v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        })
    }

    /// The key actually found for the first of `names` that holds a finite number.
    pub fn num_key(&self, names: &[&str]) -> Option<&str> {
        for name in names {
            for exact in [true, false] {
                for (k, v) in &self.entries {
                    if matches(k, name, exact) && v.as_f64().is_some_and(f64::is_finite) {
                        return Some(k);
                    }
                }
            }
        }
        None
    }

    /// All keys holding finite numbers, in key order.
    pub fn numeric_keys(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter(|(_, v)| v.as_f64().is_some_and(f64::is_finite))
            .map(|(k, _)| k.as_str())
    }

    /// The raw value of the first of `names` found (arrays of per-stream records, ...).
    pub fn value(&self, names: &[&str]) -> Option<&Value> {
        self.find_ref(names)
    }

    fn find<T>(&self, names: &[&str], pick: impl Fn(&Value) -> Option<T>) -> Option<T> {
        for name in names {
            for exact in [true, false] {
                for (k, v) in &self.entries {
                    if matches(k, name, exact) {
                        if let Some(t) = pick(v) {
                            return Some(t);
                        }
                    }
                }
            }
        }
        None
    }

    fn find_ref(&self, names: &[&str]) -> Option<&Value> {
        for name in names {
            for exact in [true, false] {
                if let Some((_, v)) = self.entries.iter().find(|(k, _)| matches(k, name, exact)) {
                    return Some(v);
                }
            }
        }
        None
    }
}

fn matches(key: &str, name: &str, exact: bool) -> bool {
    if exact {
        key == name
    } else {
        key.rsplit('.').next() == Some(name) && key != name
    }
}

fn flatten(prefix: &str, map: &Map<String, Value>, depth: usize, out: &mut Vec<(String, Value)>) {
    for (k, v) in map {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) if depth < MAX_DEPTH => flatten(&key, inner, depth + 1, out),
            Value::Object(_) => {}
            _ => out.push((key, v.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exact_key_wins_over_nested_suffix() {
        let r = Record::new(&json!({"p50_ns": 1, "latency": {"p50_ns": 2, "p99_ns": 3}}));
        assert_eq!(r.num(&["p50_ns"]), Some(1.0));
        assert_eq!(r.num(&["p99_ns"]), Some(3.0));
        assert_eq!(r.num_key(&["p99_ns"]), Some("latency.p99_ns"));
    }

    #[test]
    fn names_are_tried_in_order_and_non_numbers_skipped() {
        let r = Record::new(&json!({"size": "big", "size_bytes": 64}));
        assert_eq!(r.num(&["size", "size_bytes"]), Some(64.0));
        assert_eq!(r.text(&["size"]).as_deref(), Some("big"));
        assert_eq!(r.num(&["nope"]), None);
    }

    #[test]
    fn non_objects_and_deep_nesting_are_harmless() {
        assert_eq!(Record::new(&json!([1, 2])).numeric_keys().count(), 0);
        let deep = json!({"a":{"b":{"c":{"d":{"e":{"f":1}}}}}});
        assert_eq!(Record::new(&deep).numeric_keys().count(), 0);
    }
}
