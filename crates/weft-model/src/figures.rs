//! The published figures (`reference/figures.toml`), looked up by dotted key.
//!
//! A key walks tables by name and arrays by index (`dhpc_ebn.runs.1.paper_mbps`); a name applied
//! to an array of tables collects that field from every table that has it
//! (`dhpc_ebn.runs.payload_kib_s` is the five measured rates). Numeric keys of inline tables work
//! as names (`classic_models.karol_hol_saturation.4`).

use toml::{Table, Value};

/// The figures file could not be read, or a key does not lead to numbers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FigureError {
    /// The text is not valid TOML.
    #[error("{file}: not valid TOML: {message}")]
    Syntax {
        /// File name as given.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// No value at this key.
    #[error("{file}: no figure at {key:?}")]
    Missing {
        /// File name as given.
        file: String,
        /// The dotted key.
        key: String,
    },
    /// The value is there but is not a number or a list of numbers.
    #[error("{file}: {key:?} is {found}, not a number or a list of numbers")]
    NotNumeric {
        /// File name as given.
        file: String,
        /// The dotted key.
        key: String,
        /// What was found.
        found: String,
    },
}

/// The figures file, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    file: String,
    root: Table,
}

/// The text of the figures file that ships with weft (`data/figures.toml` in the repository),
/// compiled in so that `weft run` and `weft calc` need no file at run time.
pub const BUNDLED_TEXT: &str = include_str!("../../../data/figures.toml");

/// How the bundled figures are named in errors.
pub const BUNDLED_NAME: &str = "figures.toml (built into weft)";

impl Figures {
    /// The figures that ship with weft ([`BUNDLED_TEXT`]). A test parses them, so the error
    /// is for a build from an edited copy.
    pub fn bundled() -> Result<Figures, FigureError> {
        Figures::parse(BUNDLED_TEXT, BUNDLED_NAME)
    }

    /// Parses the text of a figures file; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Figures, FigureError> {
        let root: Table = toml::from_str(text).map_err(|e| FigureError::Syntax {
            file: file.to_string(),
            message: e.message().to_string(),
        })?;
        Ok(Figures {
            file: file.to_string(),
            root,
        })
    }

    /// The value at a dotted key, if any (collecting across arrays of tables as described above).
    pub fn get(&self, key: &str) -> Option<Value> {
        let mut at = Value::Table(self.root.clone());
        for seg in key.split('.') {
            at = step(&at, seg)?;
        }
        Some(at)
    }

    /// The numbers at `key`: a number gives one, a list of numbers gives them all in order, and a
    /// table with numbered keys gives its numbered values in key order (`inf` and other names
    /// left out).
    pub fn numbers(&self, key: &str) -> Result<Vec<f64>, FigureError> {
        let v = self.get(key).ok_or_else(|| FigureError::Missing {
            file: self.file.clone(),
            key: key.to_string(),
        })?;
        let bad = |found: &Value| FigureError::NotNumeric {
            file: self.file.clone(),
            key: key.to_string(),
            found: found.type_str().to_string(),
        };
        match &v {
            Value::Array(items) => items
                .iter()
                .map(|x| as_number(x).ok_or_else(|| bad(x)))
                .collect(),
            Value::Table(t) => {
                // A table of numbered entries ({ 1 = .., 2 = .., inf = .. }): the numbered ones
                // in numeric order.
                let mut numbered: Vec<(u64, f64)> = t
                    .iter()
                    .filter_map(|(k, v)| Some((k.parse::<u64>().ok()?, as_number(v)?)))
                    .collect();
                if numbered.is_empty() {
                    return Err(bad(&v));
                }
                numbered.sort_by_key(|(k, _)| *k);
                Ok(numbered.into_iter().map(|(_, x)| x).collect())
            }
            other => as_number(other).map(|x| vec![x]).ok_or_else(|| bad(other)),
        }
    }

    /// The single number at `key`.
    pub fn number(&self, key: &str) -> Result<f64, FigureError> {
        let v = self.numbers(key)?;
        match v.as_slice() {
            [x] => Ok(*x),
            _ => Err(FigureError::NotNumeric {
                file: self.file.clone(),
                key: key.to_string(),
                found: format!("a list of {}", v.len()),
            }),
        }
    }

    /// The text at `key` (a `note`), if it is a string.
    pub fn text(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

fn step(at: &Value, seg: &str) -> Option<Value> {
    match at {
        Value::Table(t) => t.get(seg).cloned(),
        Value::Array(items) => {
            if let Ok(i) = seg.parse::<usize>() {
                return items.get(i).cloned();
            }
            let picked: Vec<Value> = items
                .iter()
                .filter_map(|item| match item {
                    Value::Table(t) => t.get(seg).cloned(),
                    _ => None,
                })
                .collect();
            (!picked.is_empty()).then_some(Value::Array(picked))
        }
        _ => None,
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
[g]
list = [94.92, 84.58]
n = 5
eff = { 4 = 73.8, 5 = 67.2 }
note = "words"
runs = [ { w = 1, r = 2.5 }, { w = 2 }, { w = 3, r = 4.5 } ]
"#;

    #[test]
    fn walks_tables_arrays_and_collects_across_tables() {
        let f = Figures::parse(TEXT, "f.toml").unwrap();
        assert_eq!(f.numbers("g.list").unwrap(), vec![94.92, 84.58]);
        assert_eq!(f.number("g.n").unwrap(), 5.0);
        assert_eq!(f.number("g.eff.4").unwrap(), 73.8);
        assert_eq!(f.numbers("g.eff").unwrap(), vec![73.8, 67.2]);
        assert_eq!(f.number("g.list.1").unwrap(), 84.58);
        assert_eq!(f.numbers("g.runs.r").unwrap(), vec![2.5, 4.5]);
        assert_eq!(f.number("g.runs.1.w").unwrap(), 2.0);
        assert_eq!(f.text("g.note").as_deref(), Some("words"));
        assert!(matches!(
            f.numbers("g.note"),
            Err(FigureError::NotNumeric { .. })
        ));
        assert!(matches!(
            f.numbers("g.none"),
            Err(FigureError::Missing { .. })
        ));
        assert!(f.number("g.list").is_err());
        assert!(Figures::parse("x = ", "bad.toml").is_err());
    }
}
