//! A typed reader over a `toml::de::DeTable` that remembers where every key is, so that each
//! error names the file, line, column and key path (`link[2].delay`) and what was expected.
//! Every number is read with the range it may take ([`Range`]); a value outside it, or a
//! fraction where a count is meant, is refused with the range in the message.

use std::ops::Range as Span;
use std::str::FromStr;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Param, ScenarioError};
use crate::time::Duration;
use crate::units::{Rate, Size};

pub(super) type Result<T> = std::result::Result<T, ScenarioError>;

/// What a numeric field holds and the values it may take (inclusive).
#[derive(Clone, Copy)]
pub(super) enum Range {
    /// A whole number.
    Count(u64, u64),
    /// Any number (a fraction, a mean).
    Number(f64, f64),
    /// A size in bytes, written with units.
    Size(Size, Size),
    /// A rate in bits per second, written with units.
    Rate(Rate, Rate),
    /// A duration, written with units.
    Duration(Duration, Duration),
}

impl Range {
    /// "a whole number between 1 and 4096", "a size between 1B and 1GiB", ...
    pub(super) fn expected(&self) -> String {
        match self {
            Range::Count(lo, hi) => format!("a whole number between {lo} and {hi}"),
            Range::Number(lo, hi) => format!("a number between {lo} and {hi}"),
            Range::Size(lo, hi) => format!("a size such as \"64KiB\" between {lo} and {hi}"),
            Range::Rate(lo, hi) => format!("a rate such as \"26Mbps\" between {lo} and {hi}"),
            Range::Duration(lo, hi) => {
                format!("a duration such as \"17ms\" between {lo} and {hi}")
            }
        }
    }

    /// The value of `v` if it is of this kind and in range; else what is wrong with it. With
    /// `list`, the message says that a list of such values would do too (a sweep).
    pub(super) fn read(&self, v: &DeValue<'_>, list: bool) -> std::result::Result<Param, String> {
        let or_list = if list { " (or a list of them)" } else { "" };
        let wrong = |why: &str| {
            format!(
                "expected {}{or_list}, found {}{why}",
                self.expected(),
                text_of(v)
            )
        };
        let out = |ok: bool, p: Param| {
            if ok {
                Ok(p)
            } else {
                Err(wrong(": out of range"))
            }
        };
        match *self {
            Range::Count(lo, hi) => match count_of(v) {
                Some(n) => out((lo..=hi).contains(&n), Param::Count(n)),
                None if number_of(v).is_some_and(|x| x.fract() != 0.0) => {
                    Err(wrong(": a count cannot be a fraction"))
                }
                None => Err(wrong("")),
            },
            Range::Number(lo, hi) => match number_of(v) {
                Some(x) => out((lo..=hi).contains(&x), Param::Number(x)),
                None => Err(wrong("")),
            },
            Range::Size(lo, hi) => match unit_of::<Size>(v) {
                Ok(x) => out((lo..=hi).contains(&x), Param::Size(x)),
                Err(e) => Err(wrong(&unit_why(e))),
            },
            Range::Rate(lo, hi) => match unit_of::<Rate>(v) {
                Ok(x) => out((lo..=hi).contains(&x), Param::Rate(x)),
                Err(e) => Err(wrong(&unit_why(e))),
            },
            Range::Duration(lo, hi) => match unit_of::<Duration>(v) {
                Ok(x) => out((lo..=hi).contains(&x), Param::Duration(x)),
                Err(e) => Err(wrong(&unit_why(e))),
            },
        }
    }
}

/// The reason a unit parser gave, when it says more than "expected ...": a value past what the
/// type can hold says so ("between 0 and 584 years").
fn unit_why(e: Option<crate::units::UnitError>) -> String {
    match e {
        Some(e) if e.expected.contains("between") => format!(" ({})", e.expected),
        _ => String::new(),
    }
}

/// A value as written, for messages.
fn text_of(v: &DeValue<'_>) -> String {
    match v {
        DeValue::Integer(i) => i.as_str().to_string(),
        DeValue::Float(f) => f.as_str().to_string(),
        DeValue::String(s) => format!("{:?}", s.as_ref()),
        other => other.type_str().to_string(),
    }
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
        span: Span<usize>,
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
    pub(super) span: Span<usize>,
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

    /// Refuses the first of `keys` present in this table: only a workload of kind `kind` takes them.
    pub(super) fn refuse_keys<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
        kind: &str,
    ) -> Result<()> {
        match keys.into_iter().find(|k| self.get(k).is_some()) {
            Some(k) => Err(self.err(
                k,
                format!("only a workload of kind = \"{kind}\" takes this key"),
            )),
            None => Ok(()),
        }
    }

    pub(super) fn err(&self, k: &str, msg: impl Into<String>) -> ScenarioError {
        let span = self.get(k).map_or(self.span.clone(), Spanned::span);
        self.cx.err(span, &self.key(k), msg)
    }

    pub(super) fn err_at(
        &self,
        span: Span<usize>,
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

    pub(super) fn child(&self, k: &str, t: &'a DeTable<'i>, span: Span<usize>) -> Tbl<'a, 'i> {
        Tbl {
            cx: self.cx,
            path: self.key(k),
            t,
            span,
        }
    }

    /// The table under key `k` (`None` when the key is absent); anything else under it is
    /// refused with `expected`, which says what the key takes.
    pub(super) fn table(&self, k: &str, expected: &str) -> Result<Option<Tbl<'a, 'i>>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                DeValue::Table(t) => Ok(Some(self.child(k, t, v.span()))),
                _ => Err(self.err(k, expected)),
            },
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

    /// `true` or `false`.
    pub(super) fn boolean(&self, k: &str) -> Result<Option<bool>> {
        match self.get(k).map(Spanned::get_ref) {
            None => Ok(None),
            Some(DeValue::Boolean(b)) => Ok(Some(*b)),
            Some(other) => Err(self.err(
                k,
                format!("expected true or false, found {}", other.type_str()),
            )),
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

    /// The value of `k`, checked against `range`.
    fn ranged(&self, k: &str, range: Range) -> Result<Option<Param>> {
        self.get(k)
            .map(|v| range.read(v.get_ref(), false).map_err(|m| self.err(k, m)))
            .transpose()
    }

    /// A whole number in `lo..=hi`.
    pub(super) fn count(&self, k: &str, lo: u64, hi: u64) -> Result<Option<u64>> {
        Ok(match self.ranged(k, Range::Count(lo, hi))? {
            Some(Param::Count(n)) => Some(n),
            _ => None,
        })
    }

    /// A whole number in `lo..=hi` that fits 32 bits.
    pub(super) fn count32(&self, k: &str, lo: u32, hi: u32) -> Result<Option<u32>> {
        Ok(self
            .count(k, u64::from(lo), u64::from(hi))?
            .and_then(|n| u32::try_from(n).ok()))
    }

    /// A number in `lo..=hi`.
    pub(super) fn number(&self, k: &str, lo: f64, hi: f64) -> Result<Option<f64>> {
        Ok(match self.ranged(k, Range::Number(lo, hi))? {
            Some(Param::Number(x)) => Some(x),
            _ => None,
        })
    }

    /// A size with units in `lo..=hi`.
    pub(super) fn size(&self, k: &str, lo: Size, hi: Size) -> Result<Option<Size>> {
        Ok(match self.ranged(k, Range::Size(lo, hi))? {
            Some(Param::Size(x)) => Some(x),
            _ => None,
        })
    }

    /// A rate with units in `lo..=hi`.
    pub(super) fn rate(&self, k: &str, lo: Rate, hi: Rate) -> Result<Option<Rate>> {
        Ok(match self.ranged(k, Range::Rate(lo, hi))? {
            Some(Param::Rate(x)) => Some(x),
            _ => None,
        })
    }

    /// A duration with units in `lo..=hi`.
    pub(super) fn duration(&self, k: &str, lo: Duration, hi: Duration) -> Result<Option<Duration>> {
        Ok(match self.ranged(k, Range::Duration(lo, hi))? {
            Some(Param::Duration(x)) => Some(x),
            _ => None,
        })
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

    /// A workload field that may be one value or a list of them (a sweep), each in `range`.
    pub(super) fn param(&self, k: &str, range: Range) -> Result<Option<Given>> {
        let Some(v) = self.get(k) else {
            return Ok(None);
        };
        let one = |v: &Spanned<DeValue<'_>>| -> Result<Param> {
            range
                .read(v.get_ref(), true)
                .map_err(|m| self.err_at(v.span(), k, m))
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

/// A value with a unit: a string parsed by `T::from_str`, or a bare number in the base unit.
/// The error is the parser's (`None` for a value of another TOML type).
pub(super) fn unit_of<T: FromStr<Err = crate::units::UnitError>>(
    v: &DeValue<'_>,
) -> std::result::Result<T, Option<crate::units::UnitError>> {
    match v {
        DeValue::String(s) => s.parse().map_err(Some),
        DeValue::Integer(i) => i.as_str().replace('_', "").parse().map_err(Some),
        DeValue::Float(f) => f.as_str().replace('_', "").parse().map_err(Some),
        _ => Err(None),
    }
}
