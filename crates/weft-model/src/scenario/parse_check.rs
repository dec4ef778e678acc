//! The scenario's links to the catalogue of the studies' results (`data/README.md`): an
//! `[[expect]]`'s `items`, one catalogue id per row, and the `[[check]]` tables of qualitative
//! results, read with the same errors as the rest of the file (line, key, what was expected).

use toml::Spanned;
use toml::de::DeValue;

use super::Workload;
use super::check::{Check, CheckTest, ValueRef};
use super::compare::NO_ITEM;
use super::reader::{Result, Tbl, number_of};

/// What a catalogue id may be made of.
const ID_EXPECTED: &str =
    "a catalogue id such as \"003.t1.with_switch\" (letters, digits, '.', '_', '-')";

/// Whether `id` has the shape of a catalogue id.
fn is_id(id: &str) -> bool {
    id != NO_ITEM
        && !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// An `[[expect]]`'s `items`: one id (or `"-"`) per row. The rows are the workload's `points`
/// or the published values, whichever are more; with `select` the latter are `selected`, so
/// the count is checked exactly, and without it, at least one per point.
pub(super) fn items(
    e: &Tbl<'_, '_>,
    points: usize,
    selected: Option<usize>,
) -> Result<Vec<String>> {
    let Some(v) = e.get("items") else {
        return Ok(Vec::new());
    };
    let DeValue::Array(a) = v.get_ref() else {
        return Err(e.err(
            "items",
            format!("expected a list with {ID_EXPECTED}, or \"-\", per row"),
        ));
    };
    let mut out: Vec<String> = Vec::new();
    for item in a.iter() {
        let DeValue::String(id) = item.get_ref() else {
            return Err(e.err_at(item.span(), "items", format!("expected {ID_EXPECTED}")));
        };
        if id.as_ref() != NO_ITEM && !is_id(id) {
            return Err(e.err_at(
                item.span(),
                "items",
                format!(
                    "{:?} is not {ID_EXPECTED}, nor \"-\" (no item)",
                    id.as_ref()
                ),
            ));
        }
        if id.as_ref() != NO_ITEM && out.iter().any(|o| o == id.as_ref()) {
            return Err(e.err_at(
                item.span(),
                "items",
                format!(
                    "{:?} is named twice: each row reproduces its own item",
                    id.as_ref()
                ),
            ));
        }
        out.push(id.to_string());
    }
    let rows = selected.map(|n| n.max(points));
    let ok = match rows {
        Some(r) => out.len() == r,
        None => out.len() >= points,
    };
    if !ok {
        let want = match rows {
            Some(r) => format!(
                "{r} (one per row: the workload's {points} point(s) against the {} selected figure(s))",
                selected.unwrap_or(0)
            ),
            None => format!(
                "at least {points} (one per point of the workload, or per published value if there are more)"
            ),
        };
        return Err(e.err(
            "items",
            format!(
                "names {} item(s); expected {want}; \"-\" marks a row that is no catalogue item",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// The keys a `[[check]]` may have.
const CHECK_KEYS: &[&str] = &[
    "item",
    "what",
    "increasing",
    "decreasing",
    "ratio",
    "within",
    "value",
    "above",
    "below",
];

/// The forms of a check, exactly one of which a `[[check]]` gives.
const FORMS: &[&str] = &["increasing", "decreasing", "ratio", "value"];

/// One `[[check]]`.
pub(super) fn check(c: &Tbl<'_, '_>, workloads: &[Workload]) -> Result<Check> {
    c.check_keys(CHECK_KEYS)?;
    let item = c.req_string("item")?;
    // "-": a relation of weft's own scenario, no study's result.
    if item != NO_ITEM && !is_id(&item) {
        return Err(c.err("item", format!("expected {ID_EXPECTED}, or \"-\"")));
    }
    let what = c.string("what")?.unwrap_or_default();
    let given: Vec<&str> = FORMS
        .iter()
        .copied()
        .filter(|k| c.get(k).is_some())
        .collect();
    let form = match given.as_slice() {
        [one] => *one,
        [] => {
            return Err(c.err_table(
                "a check needs one of `increasing`, `decreasing` (values in order), `ratio` \
                 (two values, with `within = [lo, hi]`) or `value` (with `above` and/or `below`)",
            ));
        }
        [_, second, ..] => {
            return Err(c.err(
                second,
                format!(
                    "a check tests one relation; this one already has `{}`",
                    given[0]
                ),
            ));
        }
    };
    let only = |keys: &[&str]| -> Result<()> {
        for k in ["within", "above", "below"] {
            if !keys.contains(&k) && c.get(k).is_some() {
                return Err(c.err(k, format!("does not go with `{form}`")));
            }
        }
        Ok(())
    };
    let test = match form {
        "increasing" | "decreasing" => {
            only(&[])?;
            let refs = refs(c, form, workloads)?;
            let count: usize = refs.iter().map(|r| values_of(r, workloads)).sum();
            if count < 2 {
                return Err(c.err(
                    form,
                    "an ordering needs at least two values: several references, or one to a \
                     workload with several points",
                ));
            }
            if form == "increasing" {
                CheckTest::Increasing(refs)
            } else {
                CheckTest::Decreasing(refs)
            }
        }
        "ratio" => {
            only(&["within"])?;
            let refs = refs(c, form, workloads)?;
            let [num, den] = <[ValueRef; 2]>::try_from(refs).map_err(|_| {
                c.err(
                    "ratio",
                    "expected two values, [numerator, denominator], such as \
                     [\"rtt_p99_us @ w3\", \"rtt_p99_us @ w2\"]",
                )
            })?;
            for r in [&num, &den] {
                single(c, "ratio", r, workloads)?;
            }
            let (lo, hi) = within(c)?;
            CheckTest::Ratio { num, den, lo, hi }
        }
        _ => {
            only(&["above", "below"])?;
            let mut refs = refs(c, form, workloads)?;
            let value = match (refs.pop(), refs.is_empty()) {
                (Some(r), true) => r,
                _ => return Err(c.err("value", "expected one value such as \"cell_loss @ w0\"")),
            };
            let above = c.number("above", f64::MIN, f64::MAX)?;
            let below = c.number("below", f64::MIN, f64::MAX)?;
            match (above, below) {
                (None, None) => {
                    return Err(c.err_table("`value` needs `above` or `below` (or both)"));
                }
                (Some(a), Some(b)) if a >= b => {
                    return Err(c.err("below", format!("must be above `above` ({a})")));
                }
                _ => {}
            }
            CheckTest::Bound {
                value,
                above,
                below,
            }
        }
    };
    Ok(Check { item, what, test })
}

/// The value references of key `k`: one string or a list of them, each naming a workload and
/// point that exist.
fn refs(c: &Tbl<'_, '_>, k: &str, workloads: &[Workload]) -> Result<Vec<ValueRef>> {
    let Some(v) = c.get(k) else {
        return Ok(Vec::new());
    };
    let items: Vec<&Spanned<DeValue<'_>>> = match v.get_ref() {
        DeValue::String(_) => vec![v],
        DeValue::Array(a) => a.iter().collect(),
        _ => {
            return Err(c.err(
                k,
                "expected a value such as \"rtt_p99_us @ w3\" or a list of them",
            ));
        }
    };
    items
        .into_iter()
        .map(|item| {
            let DeValue::String(text) = item.get_ref() else {
                return Err(c.err_at(
                    item.span(),
                    k,
                    "expected a value such as \"rtt_p99_us @ w3\"",
                ));
            };
            let r: ValueRef = text
                .parse()
                .map_err(|m: String| c.err_at(item.span(), k, m))?;
            let Some(w) = workloads.get(r.workload) else {
                return Err(c.err_at(
                    item.span(),
                    k,
                    format!(
                        "there is no workload {} (the scenario has {})",
                        r.workload,
                        workloads.len()
                    ),
                ));
            };
            let points = w.expand().len();
            if let Some(p) = r.point
                && p >= points
            {
                return Err(c.err_at(
                    item.span(),
                    k,
                    format!(
                        "workload {} has {points} point(s): #{p} is past them",
                        r.workload
                    ),
                ));
            }
            Ok(r)
        })
        .collect()
}

/// How many values a reference reads.
fn values_of(r: &ValueRef, workloads: &[Workload]) -> usize {
    match r.point {
        Some(_) => 1,
        None => workloads.get(r.workload).map_or(0, |w| w.expand().len()),
    }
}

/// Refuses a reference to several values where one is meant.
fn single(c: &Tbl<'_, '_>, k: &str, r: &ValueRef, workloads: &[Workload]) -> Result<()> {
    if values_of(r, workloads) == 1 {
        return Ok(());
    }
    Err(c.err(
        k,
        format!(
            "\"{r}\" is several values (workload {} has several points): name one with #P",
            r.workload
        ),
    ))
}

/// `within = [lo, hi]`, two finite numbers with lo <= hi.
fn within(c: &Tbl<'_, '_>) -> Result<(f64, f64)> {
    let form = "expected [lo, hi], two numbers with lo <= hi, such as [1.2, 10]";
    let Some(v) = c.get("within") else {
        return Err(c.err_table(format!("`ratio` needs `within`: {form}")));
    };
    match v.get_ref() {
        DeValue::Array(a) => {
            let nums: Option<Vec<f64>> = a.iter().map(|x| number_of(x.get_ref())).collect();
            match nums.as_deref() {
                Some([lo, hi]) if lo <= hi => Ok((*lo, *hi)),
                _ => Err(c.err("within", form)),
            }
        }
        _ => Err(c.err("within", form)),
    }
}
