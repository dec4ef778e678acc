//! A run's parameters applied to a scenario document: each grid key is a dotted path into the TOML
//! document (`workload.0.window`, `switch.0.buffer`, `link.1.tech.rate`), a number in the path
//! indexing a list such as the `[[workload]]` tables. Every part of the path but the last must
//! exist; the last may be new in an existing table (a key the scenario leaves at its default), and
//! the scenario's own validation then says whether it belongs there.

use serde_json::Value;

/// Why a path cannot be set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{path}`: {message}")]
pub struct OverrideError {
    /// The dotted path.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

/// Sets `path` in `doc` to `value`.
pub fn apply(doc: &mut toml::Table, path: &str, value: &Value) -> Result<(), OverrideError> {
    let err = |message: String| OverrideError {
        path: path.to_string(),
        message,
    };
    let parts: Vec<&str> = path.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(err(
            "a path is keys and list indexes joined by dots, none empty".into(),
        ));
    }
    let new = to_toml(value).ok_or_else(|| err("this value has no TOML form".into()))?;
    let Some((last, parents)) = parts.split_last() else {
        return Err(err("empty path".into()));
    };
    let mut root = toml::Value::Table(std::mem::take(doc));
    let result = (|| {
        let mut here = &mut root;
        let mut walked = String::new();
        for part in parents {
            here = step(here, part, &walked).map_err(&err)?;
            walked = join(&walked, part);
        }
        match here {
            toml::Value::Table(t) => {
                t.insert((*last).to_string(), new);
                Ok(())
            }
            toml::Value::Array(a) => {
                let slot = index(a.len(), last, &walked).map_err(&err)?;
                if let Some(x) = a.get_mut(slot) {
                    *x = new;
                }
                Ok(())
            }
            other => Err(err(format!(
                "{} is {}, which has no `{last}`",
                shown(&walked),
                kind(other)
            ))),
        }
    })();
    if let toml::Value::Table(t) = root {
        *doc = t;
    }
    result
}

fn step<'a>(
    here: &'a mut toml::Value,
    part: &str,
    walked: &str,
) -> Result<&'a mut toml::Value, String> {
    match here {
        toml::Value::Table(t) => {
            if !t.contains_key(part) {
                let keys: Vec<&str> = t.keys().map(String::as_str).collect();
                return Err(format!(
                    "{} has no `{part}`; it has: {}",
                    shown(walked),
                    if keys.is_empty() {
                        "nothing".into()
                    } else {
                        keys.join(", ")
                    }
                ));
            }
            t.get_mut(part).ok_or_else(String::new)
        }
        toml::Value::Array(a) => {
            let i = index(a.len(), part, walked)?;
            a.get_mut(i).ok_or_else(String::new)
        }
        other => Err(format!(
            "{} is {}, which has no `{part}`",
            shown(walked),
            kind(other)
        )),
    }
}

fn index(len: usize, part: &str, walked: &str) -> Result<usize, String> {
    let i: usize = part.parse().map_err(|_| {
        format!("{walked} is a list: the next part of the path is an index from 0, not `{part}`")
    })?;
    if i >= len {
        return Err(format!(
            "{walked} has {len} entr{} (0 to {}); there is no {walked}.{i}",
            if len == 1 { "y" } else { "ies" },
            len.saturating_sub(1)
        ));
    }
    Ok(i)
}

fn join(walked: &str, part: &str) -> String {
    if walked.is_empty() {
        part.to_string()
    } else {
        format!("{walked}.{part}")
    }
}

fn shown(walked: &str) -> String {
    if walked.is_empty() {
        "the scenario".into()
    } else {
        format!("`{walked}`")
    }
}

fn kind(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    }
}

/// The TOML form of a plan value (JSON has no dates; TOML has no null).
pub fn to_toml(v: &Value) -> Option<toml::Value> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(a) => toml::Value::Array(a.iter().map(to_toml).collect::<Option<_>>()?),
        Value::Object(m) => toml::Value::Table(
            m.iter()
                .map(|(k, v)| Some((k.clone(), to_toml(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DOC: &str = r#"
name = "x"
[[switch]]
name = "sw"
[[workload]]
kind = "tput"
window = [1, 2]
[[workload]]
kind = "tput"
"#;

    fn doc() -> toml::Table {
        toml::from_str(DOC).unwrap()
    }

    #[test]
    fn sets_existing_and_new_keys() {
        let mut d = doc();
        apply(&mut d, "workload.0.window", &json!(65536)).unwrap();
        apply(&mut d, "switch.0.buffer", &json!("512 frames")).unwrap();
        apply(&mut d, "workload.1.window", &json!([1, 2.5])).unwrap();
        let w = d["workload"].as_array().unwrap();
        assert_eq!(w[0]["window"].as_integer(), Some(65536));
        assert_eq!(w[1]["window"].as_array().unwrap()[1].as_float(), Some(2.5));
        assert_eq!(d["switch"][0]["buffer"].as_str(), Some("512 frames"));
    }

    #[test]
    fn missing_paths_say_what_exists() {
        for (path, want) in [
            ("workload.2.window", "has 2 entries (0 to 1)"),
            ("workload.x.window", "index from 0"),
            (
                "wrkload.0.window",
                "has no `wrkload`; it has: name, switch, workload",
            ),
            ("name.first", "is a string"),
            ("workload..window", "none empty"),
        ] {
            let e = apply(&mut doc(), path, &json!(1)).unwrap_err();
            assert!(e.to_string().contains(want), "{path}: {e}");
        }
    }
}
