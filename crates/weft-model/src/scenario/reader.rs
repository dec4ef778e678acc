//! A typed reader over a `toml::de::DeTable` that remembers where every key is, so that each
//! error names the file, line, column and key path (`link[2].delay`) and what was expected.

use std::ops::Range;
use std::str::FromStr;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Param, ScenarioError};
use crate::time::Duration;
use crate::units::{Rate, Size};

pub(super) type Result<T> = std::result::Result<T, ScenarioError>;

pub(super) const DURATION: &str = "a duration such as \"17ms\"";
pub(super) const RATE: &str = "a rate such as \"26Mbps\"";
pub(super) const SIZE: &str = "a size such as \"9180\" or \"64KiB\"";

#[derive(Clone, Copy)]
pub(super) enum Kind {
    Count,
    Number,
    Size,
    Rate,
    Duration,
}

pub(super) enum Given {
    One(Param),
    Many(Vec<Param>),
}

pub(super) struct Cx<'a> {
    pub(super) text: &'a str,
    pub(super) file: &'a str,
}

impl Cx<'_> {
    pub(super) fn err(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        let at = span.start.min(self.text.len());
        let before = self.text.get(..at).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let column = before.rfind('\n').map_or(before.chars().count(), |i| {
            before.get(i + 1..).map_or(0, |s| s.chars().count())
        }) + 1;
        ScenarioError {
            file: self.file.to_string(),
            line,
            column,
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// A table being read, with its path for error messages.
pub(super) struct Tbl<'a, 'i> {
    pub(super) cx: &'a Cx<'a>,
    pub(super) path: String,
    pub(super) t: &'a DeTable<'i>,
    pub(super) span: Range<usize>,
}

impl<'a, 'i> Tbl<'a, 'i> {
    pub(super) fn key(&self, k: &str) -> String {
        // Keys that would not read back as a bare TOML key (empty, dotted, spaced) are quoted.
        let bare = !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let k = if bare {
            k.to_string()
        } else {
            format!("{k:?}")
        };
        if self.path.is_empty() {
            k
        } else {
            format!("{}.{k}", self.path)
        }
    }

    pub(super) fn get(&self, k: &str) -> Option<&'a Spanned<DeValue<'i>>> {
        self.t.get(k)
    }

    pub(super) fn err(&self, k: &str, msg: impl Into<String>) -> ScenarioError {
        let span = self.get(k).map_or(self.span.clone(), Spanned::span);
        self.cx.err(span, &self.key(k), msg)
    }

    pub(super) fn err_at(
        &self,
        span: Range<usize>,
        k: &str,
        msg: impl Into<String>,
    ) -> ScenarioError {
        self.cx.err(span, &self.key(k), msg)
    }

    pub(super) fn err_table(&self, msg: impl Into<String>) -> ScenarioError {
        let key = if self.path.is_empty() {
            "(document)".to_string()
        } else {
            self.path.clone()
        };
        self.cx.err(self.span.clone(), &key, msg)
    }

    pub(super) fn child(&self, k: &str, t: &'a DeTable<'i>, span: Range<usize>) -> Tbl<'a, 'i> {
        Tbl {
            cx: self.cx,
            path: self.key(k),
            t,
            span,
        }
    }

    pub(super) fn check_keys(&self, allowed: &[&str]) -> Result<()> {
        for (k, _) in self.t.iter() {
            if !allowed.contains(&k.get_ref().as_ref()) {
                return Err(self.cx.err(
                    k.span(),
                    &self.key(k.get_ref()),
                    format!("unknown key; expected one of: {}", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn unique(&self, names: &mut Vec<String>, name: &str) -> Result<()> {
        if names.iter().any(|n| n == name) {
            return Err(self.err(
                "name",
                format!("{name:?} is already the name of another node"),
            ));
        }
        names.push(name.to_string());
        Ok(())
    }

    /// An array of tables (`[[host]]`), or a single table (`[expect]`), as a list.
    pub(super) fn tables(&self, k: &str) -> Result<Vec<Tbl<'a, 'i>>> {
        let Some(v) = self.get(k) else {
            return Ok(Vec::new());
        };
        match v.get_ref() {
            DeValue::Table(t) => Ok(vec![self.child(k, t, v.span())]),
            DeValue::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, item)| match item.get_ref() {
                    DeValue::Table(t) => Ok(Tbl {
                        cx: self.cx,
                        path: format!("{}[{i}]", self.key(k)),
                        t,
                        span: item.span(),
                    }),
                    _ => Err(self.err_at(item.span(), k, format!("expected [[{k}]] tables"))),
                })
                .collect(),
            _ => Err(self.err(k, format!("expected [[{k}]] tables"))),
        }
    }

    pub(super) fn string(&self, k: &str) -> Result<Option<String>> {
        match self.get(k).map(Spanned::get_ref) {
            None => Ok(None),
            Some(DeValue::String(s)) => Ok(Some(s.to_string())),
            Some(other) => {
                Err(self.err(k, format!("expected a string, found {}", other.type_str())))
            }
        }
    }

    pub(super) fn req_string(&self, k: &str) -> Result<String> {
        self.string(k)?
            .ok_or_else(|| self.err_table(format!("missing `{k}` (a string)")))
    }

    pub(super) fn names(&self, k: &str, hosts: &[&str]) -> Result<Vec<String>> {
        let Some(v) = self.get(k) else {
            return Ok(Vec::new());
        };
        let items: Vec<&Spanned<DeValue<'i>>> = match v.get_ref() {
            DeValue::String(_) => vec![v],
            DeValue::Array(a) => a.iter().collect(),
            _ => return Err(self.err(k, "expected a host name or a list of host names")),
        };
        items
            .into_iter()
            .map(|item| match item.get_ref() {
                DeValue::String(s) if hosts.contains(&s.as_ref()) => Ok(s.to_string()),
                DeValue::String(s) => {
                    Err(self.err_at(item.span(), k, format!("no host is called {s:?}")))
                }
                _ => Err(self.err_at(item.span(), k, "expected host names (strings)")),
            })
            .collect()
    }

    pub(super) fn count(&self, k: &str) -> Result<Option<u64>> {
        self.get(k)
            .map(|v| {
                count_of(v.get_ref()).ok_or_else(|| self.err(k, "expected a whole number >= 0"))
            })
            .transpose()
    }

    pub(super) fn small(&self, n: u64, k: &str) -> Result<u32> {
        u32::try_from(n).map_err(|_| self.err(k, "expected a number below 2^32"))
    }

    pub(super) fn number(&self, k: &str) -> Result<Option<f64>> {
        self.get(k)
            .map(|v| number_of(v.get_ref()).ok_or_else(|| self.err(k, "expected a number")))
            .transpose()
    }

    /// A value with a unit: a string parsed by `T::from_str`, or a bare number in the base unit.
    pub(super) fn unit<T: FromStr>(&self, k: &str, expected: &str) -> Result<Option<T>> {
        self.get(k)
            .map(|v| {
                unit_of::<T>(v.get_ref()).ok_or_else(|| self.err(k, format!("expected {expected}")))
            })
            .transpose()
    }

    pub(super) fn parse_with<T>(
        &self,
        k: &str,
        expected: &str,
        f: fn(&str) -> Option<T>,
    ) -> Result<Option<T>> {
        match self.get(k).map(Spanned::get_ref) {
            None => Ok(None),
            Some(DeValue::String(s)) => f(s)
                .map(Some)
                .ok_or_else(|| self.err(k, format!("expected {expected}"))),
            Some(_) => Err(self.err(k, format!("expected {expected}"))),
        }
    }

    pub(super) fn param(&self, k: &str, kind: Kind) -> Result<Option<Given>> {
        let Some(v) = self.get(k) else {
            return Ok(None);
        };
        let expected = match kind {
            Kind::Count => "a whole number",
            Kind::Number => "a number",
            Kind::Size => SIZE,
            Kind::Rate => RATE,
            Kind::Duration => DURATION,
        };
        let one = |v: &Spanned<DeValue<'_>>| -> Result<Param> {
            let value = v.get_ref();
            let p = match kind {
                Kind::Count => count_of(value).map(Param::Count),
                Kind::Number => number_of(value).map(Param::Number),
                Kind::Size => unit_of::<Size>(value).map(Param::Size),
                Kind::Rate => unit_of::<Rate>(value).map(Param::Rate),
                Kind::Duration => unit_of::<Duration>(value).map(Param::Duration),
            };
            p.ok_or_else(|| {
                self.err_at(
                    v.span(),
                    k,
                    format!("expected {expected} or a list of them"),
                )
            })
        };
        match v.get_ref() {
            DeValue::Array(a) if a.is_empty() => {
                Err(self.err(k, "an empty list sweeps nothing; give at least one value"))
            }
            DeValue::Array(a) => Ok(Some(Given::Many(a.iter().map(one).collect::<Result<_>>()?))),
            _ => Ok(Some(Given::One(one(v)?))),
        }
    }
}

pub(super) fn count_of(v: &DeValue<'_>) -> Option<u64> {
    match v {
        DeValue::Integer(i) => u64::from_str_radix(&i.as_str().replace('_', ""), i.radix()).ok(),
        // `slots = 1e6` is a natural way to write a count.
        DeValue::Float(f) => f
            .as_str()
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0 && x.fract() == 0.0 && *x < 2f64.powi(63))
            .map(|x| x as u64),
        _ => None,
    }
}

pub(super) fn number_of(v: &DeValue<'_>) -> Option<f64> {
    match v {
        DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
            .ok()
            .map(|n| n as f64),
        DeValue::Float(f) => f
            .as_str()
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite()),
        _ => None,
    }
}

pub(super) fn unit_of<T: FromStr>(v: &DeValue<'_>) -> Option<T> {
    match v {
        DeValue::String(s) => s.parse().ok(),
        DeValue::Integer(i) => i.as_str().replace('_', "").parse().ok(),
        DeValue::Float(f) => f.as_str().replace('_', "").parse().ok(),
        _ => None,
    }
}
