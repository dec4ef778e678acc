//! The values of a grid key and of `seeds`: one value, a list of values, or a range written as a
//! table, `{ from = 2, to = 32, step = 2 }` (arithmetic) or `{ from = 1024, to = 65536, factor = 2 }`
//! (geometric), both ends included. TOML has no range syntax; a table keeps the bounds typed and
//! spanned, so an error can point at the bound that is wrong.

use std::ops::Range;

use serde_json::{Number, Value};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// Most values one grid key or `seeds` may expand to.
pub const MAX_VALUES: usize = 100_000;

/// An error at a byte range of the plan text.
pub type Located = (Range<usize>, String);

/// The values of one grid entry. A scalar is one value; a list gives its elements; a table is a
/// range. `compound` allows lists and tables as values inside a list (scenario keys such as
/// `from = ["a", "b"]` or `tech = { preset = "e3" }`), which a command's flags cannot take.
pub fn grid_values(v: &Spanned<DeValue<'_>>, compound: bool) -> Result<Vec<Value>, Located> {
    match v.get_ref() {
        DeValue::Array(items) if items.is_empty() => Err((
            v.span(),
            "an empty list sweeps nothing; give at least one value".into(),
        )),
        DeValue::Array(items) => items.iter().map(|i| literal(i, compound)).collect(),
        DeValue::Table(t) => range(t, v.span()),
        _ => Ok(vec![literal(v, false)?]),
    }
}

/// The seeds: a whole number, a list of them, or an integer range. Each seed is below 2^63 (the
/// plan's numbers are signed 64-bit integers in TOML).
pub fn seeds(v: &Spanned<DeValue<'_>>) -> Result<Vec<u64>, Located> {
    let values = grid_values(v, false)?;
    if values.len() > MAX_VALUES {
        return Err((v.span(), format!("more than {MAX_VALUES} seeds")));
    }
    values
        .iter()
        .map(|x| {
            x.as_u64()
                .ok_or_else(|| (v.span(), format!("seeds are whole numbers >= 0, found {x}")))
        })
        .collect()
}

/// One value as JSON: a number, string or boolean; with `compound`, also a list or table of them.
pub fn literal(v: &Spanned<DeValue<'_>>, compound: bool) -> Result<Value, Located> {
    let bad = |what: &str| Err((v.span(), what.to_string()));
    match v.get_ref() {
        DeValue::String(s) => Ok(Value::String(s.to_string())),
        DeValue::Boolean(b) => Ok(Value::Bool(*b)),
        DeValue::Integer(_) | DeValue::Float(_) => number(v.get_ref())
            .ok_or_else(|| (v.span(), "expected a finite number below 2^63".to_string())),
        DeValue::Datetime(_) => bad("dates are not parameters; write the value as a string"),
        DeValue::Array(items) if compound => items
            .iter()
            .map(|i| literal(i, true))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        DeValue::Table(t) if compound => {
            let mut m = serde_json::Map::new();
            for (k, x) in t.iter() {
                m.insert(k.get_ref().to_string(), literal(x, true)?);
            }
            Ok(Value::Object(m))
        }
        DeValue::Array(_) => bad("a list inside a list: a flag takes one value per run"),
        DeValue::Table(_) => {
            bad("a table inside a list: a range is written on its own, key = { from = 1, to = 8 }")
        }
    }
}

/// A TOML integer or float as a JSON number (integers stay integers).
pub fn number(v: &DeValue<'_>) -> Option<Value> {
    match v {
        DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
            .ok()
            .map(Value::from),
        DeValue::Float(f) => f
            .as_str()
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number),
        _ => None,
    }
}

/// A range table: `{ from, to }` with `step` (default 1 for whole numbers) or `factor`.
fn range(t: &DeTable<'_>, span: Range<usize>) -> Result<Vec<Value>, Located> {
    for (k, _) in t.iter() {
        if !matches!(k.get_ref().as_ref(), "from" | "to" | "step" | "factor") {
            return Err((
                k.span(),
                "a range is { from, to, step } or { from, to, factor }; to set a table value, \
                 put it in a list: [ { ... } ]"
                    .into(),
            ));
        }
    }
    let get = |k: &str| -> Result<Option<(Value, Range<usize>)>, Located> {
        match t.get(k) {
            None => Ok(None),
            Some(x) => number(x.get_ref())
                .map(|n| Some((whole(n), x.span())))
                .ok_or_else(|| (x.span(), format!("`{k}` of a range must be a number"))),
        }
    };
    let (from, _) = get("from")?.ok_or_else(|| (span.clone(), "a range needs `from`".into()))?;
    let (to, _) = get("to")?.ok_or_else(|| (span.clone(), "a range needs `to`".into()))?;
    let step = get("step")?;
    let factor = get("factor")?;
    let is_int = |v: &Value| v.is_i64();
    let out = match (step, factor) {
        (Some(_), Some((_, s))) => {
            return Err((s, "give `step` or `factor`, not both".into()));
        }
        (None, Some((f, fspan))) => geometric(&from, &to, &f, fspan)?,
        (step, None) => {
            let (step, sspan) = match step {
                Some(s) => s,
                None if is_int(&from) && is_int(&to) => (Value::from(1), span.clone()),
                None => {
                    return Err((span, "a range of fractions needs a `step`".into()));
                }
            };
            arithmetic(&from, &to, &step, sspan)?
        }
    };
    if out.is_empty() {
        return Err((span, "this range holds no value".into()));
    }
    Ok(out)
}

fn arithmetic(
    from: &Value,
    to: &Value,
    step: &Value,
    at: Range<usize>,
) -> Result<Vec<Value>, Located> {
    if let (Some(a), Some(b), Some(s)) = (from.as_i64(), to.as_i64(), step.as_i64()) {
        if s == 0 || (i128::from(b) - i128::from(a)).signum() * i128::from(s.signum()) < 0 {
            return Err((
                at,
                "the step must be non-zero and lead from `from` to `to`".into(),
            ));
        }
        let n = (b.abs_diff(a) / s.unsigned_abs()).saturating_add(1);
        check_count(n, &at)?;
        // Every value lies between `from` and `to`, so it fits in an i64.
        return Ok((0..i128::from(n))
            .filter_map(|i| i64::try_from(i128::from(a) + i * i128::from(s)).ok())
            .map(Value::from)
            .collect());
    }
    let (a, b, s) = (f(from), f(to), f(step));
    if s == 0.0 || (b - a) * s < 0.0 {
        return Err((
            at,
            "the step must be non-zero and lead from `from` to `to`".into(),
        ));
    }
    // A little slack so that 0.1 + 8 x 0.1 still reaches `to = 0.9`.
    let n = ((b - a) / s + 1e-9).floor() + 1.0;
    check_count(n as u64, &at)?;
    Ok((0..n as u64)
        .filter_map(|i| float(a + i as f64 * s))
        .collect())
}

fn geometric(
    from: &Value,
    to: &Value,
    factor: &Value,
    at: Range<usize>,
) -> Result<Vec<Value>, Located> {
    let (a, b, k) = (f(from), f(to), f(factor));
    if !(a > 0.0 && b >= a && k > 1.0) {
        return Err((
            at,
            "a geometric range needs 0 < from <= to and factor > 1".into(),
        ));
    }
    let n = ((b / a).ln() / k.ln() + 1e-9).floor() as u64 + 1;
    check_count(n, &at)?;
    if let (Some(a), Some(k)) = (from.as_i64(), factor.as_i64()) {
        let mut out = Vec::new();
        let mut x = a;
        for _ in 0..n {
            out.push(Value::from(x));
            x = x.saturating_mul(k);
        }
        return Ok(out);
    }
    Ok((0..n).filter_map(|i| float(a * k.powi(i as i32))).collect())
}

/// `1e6` as a bound reads as the whole number it is, so that `{ from = 1, to = 1e6 }` counts.
fn whole(v: Value) -> Value {
    match v.as_f64() {
        Some(x) if !v.is_i64() && x.fract() == 0.0 && x.abs() < 9.0e15 => Value::from(x as i64),
        _ => v,
    }
}

fn check_count(n: u64, at: &Range<usize>) -> Result<(), Located> {
    if n > MAX_VALUES as u64 {
        Err((
            at.clone(),
            format!("this range holds more than {MAX_VALUES} values"),
        ))
    } else {
        Ok(())
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// A computed fraction rounded to 12 significant digits, so that `0.1 + 2 x 0.1` is stored and
/// passed on as `0.3`, not `0.30000000000000004`.
fn float(x: f64) -> Option<Value> {
    let rounded: f64 = format!("{x:.11e}").parse().ok()?;
    Number::from_f64(rounded).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Result<Vec<Value>, String> {
        let doc = DeTable::parse(text).map_err(|e| e.to_string())?;
        let v = doc.get_ref().get("k").ok_or("no k")?;
        grid_values(v, true).map_err(|(_, m)| m)
    }

    #[test]
    fn scalars_lists_and_ranges() {
        assert_eq!(values("k = 3").unwrap(), vec![Value::from(3)]);
        assert_eq!(values("k = [1, \"a\", true]").unwrap().len(), 3);
        assert_eq!(
            values("k = { from = 2, to = 8, step = 3 }").unwrap(),
            vec![Value::from(2), Value::from(5), Value::from(8)]
        );
        assert_eq!(
            values("k = { from = 3, to = 1, step = -1 }").unwrap().len(),
            3
        );
        let loads = values("k = { from = 0.1, to = 0.9, step = 0.1 }").unwrap();
        assert_eq!(loads.len(), 9);
        assert_eq!(loads[2], serde_json::json!(0.3));
        assert_eq!(
            values("k = { from = 1024, to = 8192, factor = 2 }").unwrap(),
            vec![1024, 2048, 4096, 8192]
                .into_iter()
                .map(Value::from)
                .collect::<Vec<_>>()
        );
        assert_eq!(values("k = [{ preset = \"e3\" }]").unwrap().len(), 1);
    }

    #[test]
    fn bad_ranges_say_why() {
        for (text, want) in [
            ("k = []", "empty list"),
            ("k = { from = 1, to = 5, step = 0 }", "non-zero"),
            ("k = { from = 1, to = 5, step = -1 }", "lead from"),
            ("k = { from = 0.5, to = 1.0 }", "needs a `step`"),
            ("k = { from = 1, to = 1e9 }", "more than"),
            ("k = { from = 0, to = 8, factor = 2 }", "geometric"),
            ("k = { from = 1, upto = 5 }", "{ from, to, step }"),
            ("k = { to = 5 }", "needs `from`"),
            ("k = { from = 1, to = 4, step = 1, factor = 2 }", "not both"),
        ] {
            let err = values(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn seeds_are_whole() {
        let doc = DeTable::parse("s = { from = 1, to = 5 }\nt = [1.5]").unwrap();
        let t = doc.get_ref();
        assert_eq!(seeds(t.get("s").unwrap()).unwrap(), vec![1, 2, 3, 4, 5]);
        assert!(seeds(t.get("t").unwrap()).is_err());
    }
}
