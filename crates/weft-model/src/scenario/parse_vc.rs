//! The circuit parts of a scenario: the `[vc]` host database (the format of `weft vc plan`'s
//! file, under one table) and the keys of a workload of kind `vc`.
//!
//! ```toml
//! [vc]
//! [[vc.switch]]
//! name = "asx1"
//! [[vc.host]]
//! name = "methuselah"
//! switch = "asx1"
//! port = 3
//! # optional: the switches forward cells by this plan's tables (not by MAC address), on the
//! # simulator and the emulator: mesh | sites | star (with hub = "HOST") | pairs (the database's)
//! forward = "mesh"
//! # optional, with `forward`: a traffic contract on a circuit (enforced at its first switch,
//! # or at `switch`) or on a path (`vpi`, at `switch`), policed or shaped there
//! [[vc.contract]]
//! from = "methuselah"
//! to = "dhpc04"
//! pcr = "26Mbps"           # and scr, mbs, cdvt, police: a link's contract keys
//! police = true
//!
//! [[workload]]
//! kind = "vc"
//! plan = "mesh"            # mesh | sites | star (with hub = "HOST") | pairs (the database's)
//! sites = ["adelaide"]     # optional: only the hosts at these sites, and the hub
//! hosts = [2, 3, 4, 5]     # optional, sweepable: only the first n of those hosts
//! ```

use toml::de::DeValue;

use super::reader::{Result, Tbl};
use super::{VcWorkload, Workload, WorkloadKind};
use crate::net::VcFailure;
use crate::time::Duration;
use crate::vc::{CircuitContract, ContractTarget, HostDb, Shape};

/// What a scenario's `[vc]` table gives: the host database, the plan the switches forward by,
/// a switch that fails, and the contracts on circuits and paths.
type VcParts = (
    Option<HostDb>,
    Option<Shape>,
    Option<VcFailure>,
    Vec<CircuitContract>,
);

/// The keys only a workload of kind `vc` takes (`hosts` is sweepable and listed there).
pub(super) const VC_KEYS: &[&str] = &["plan", "hub", "sites"];

/// The `[vc]` table of the document `text`, validated as a host database (`None`: absent),
/// and the plan its `forward` key names.
pub(super) fn db(root: &Tbl<'_, '_>, text: &str) -> Result<VcParts> {
    let Some(spanned) = root.get("vc") else {
        return Ok((None, None, None, Vec::new()));
    };
    // The document parsed once already; parse it again as plain TOML to hand the table to
    // the database's own (serde) reader.
    let doc: toml::Table =
        toml::from_str(text).map_err(|e| root.err("vc", format!("not valid TOML: {e}")))?;
    let Some(mut value) = doc.get("vc").cloned() else {
        return Ok((None, None, None, Vec::new()));
    };
    let Some(table) = value.as_table_mut() else {
        return Err(root.err(
            "vc",
            "expected a table: [vc] with [[vc.switch]], [[vc.host]]",
        ));
    };
    let forward = table.remove("forward");
    let hub = table.remove("hub");
    let fail = table.remove("fail");
    table.remove("contract");
    let db: HostDb = value.try_into().map_err(|e: toml::de::Error| {
        root.err("vc", format!("not a host database: {}", e.message().trim()))
    })?;
    db.validate().map_err(|e| root.err("vc", e.to_string()))?;
    let shape = forward_shape(forward, hub, &db).map_err(|m| root.err("vc", m))?;
    let failure = fail
        .map(|f| failure(f, &db, shape.is_some()))
        .transpose()
        .map_err(|m| root.err("vc", m))?;
    let contracts = match spanned.get_ref() {
        DeValue::Table(t) => contracts(&root.child("vc", t, spanned.span()), &db, shape.is_some())?,
        _ => Vec::new(),
    };
    Ok((Some(db), shape, failure, contracts))
}

/// `[[vc.contract]]`: each on a circuit (`from`, `to`, optionally `switch`) or a path (`vpi`
/// and `switch`), with a link's contract keys (`pcr`, `scr`, `mbs`, `cdvt`, `police`).
fn contracts(vc: &Tbl<'_, '_>, db: &HostDb, forwards: bool) -> Result<Vec<CircuitContract>> {
    let mut out = Vec::new();
    for c in vc.tables("contract")? {
        c.check_keys(&[
            "switch", "from", "to", "vpi", "pcr", "scr", "mbs", "cdvt", "police",
        ])?;
        if !forwards {
            return Err(c.err_table(
                "a contract is enforced by switches that forward by a plan: give [vc] `forward`",
            ));
        }
        let host = |k: &str| -> Result<Option<String>> {
            match c.string(k)? {
                Some(h) if db.host_index(&h).is_none() => {
                    Err(c.err(k, format!("no host of [vc] is called {h:?}")))
                }
                h => Ok(h),
            }
        };
        let switch = c.string("switch")?;
        if let Some(s) = &switch {
            if !db.switches.iter().any(|x| x.name == *s) {
                return Err(c.err("switch", format!("no switch of [vc] is called {s:?}")));
            }
        }
        let vpi = c.count("vpi", 1, 255)?;
        let target = match (host("from")?, host("to")?, vpi) {
            (Some(from), Some(to), None) => ContractTarget::Circuit { from, to },
            (None, None, Some(vpi)) if switch.is_some() => ContractTarget::Path { vpi: vpi as u8 },
            (None, None, Some(_)) => {
                return Err(c.err(
                    "vpi",
                    "a path's contract needs `switch`, where it is enforced",
                ));
            }
            _ => {
                return Err(c.err_table(
                    "expected a circuit (`from` and `to`) or a path (`vpi` and `switch`)",
                ));
            }
        };
        let Some(contract) = super::parse::contract(&c)? else {
            return Err(c.err_table("a contract needs `pcr`, its peak cell rate as a bit rate"));
        };
        out.push(CircuitContract {
            switch,
            target,
            contract,
        });
    }
    Ok(out)
}

/// `[vc]`'s `fail = { switch, at, for, control_delay }`: a switch of the database, which must
/// forward by a plan.
fn failure(v: toml::Value, db: &HostDb, forwards: bool) -> std::result::Result<VcFailure, String> {
    const FORM: &str = "fail: expected { switch = \"NAME\", at = \"2ms\", for = \"5ms\", control_delay = \"100us\" }";
    let toml::Value::Table(t) = v else {
        return Err(FORM.into());
    };
    if let Some(k) = t
        .keys()
        .find(|k| !["switch", "at", "for", "control_delay"].contains(&k.as_str()))
    {
        return Err(format!("fail: unknown key {k:?} ({FORM})"));
    }
    let duration = |k: &str| -> std::result::Result<Option<Duration>, String> {
        match t.get(k) {
            None => Ok(None),
            Some(toml::Value::String(x)) => x
                .parse::<Duration>()
                .map(Some)
                .map_err(|e| format!("fail: {k}: {e}")),
            Some(_) => Err(format!("fail: {k}: expected a duration such as \"5ms\"")),
        }
    };
    let (Some(toml::Value::String(switch)), Some(at), Some(down)) =
        (t.get("switch"), duration("at")?, duration("for")?)
    else {
        return Err(FORM.into());
    };
    if !forwards {
        return Err("fail: the switches forward by a plan only with `forward`".into());
    }
    if !db.switches.iter().any(|s| s.name == *switch) {
        return Err(format!("fail: no switch of [vc] is called {switch:?}"));
    }
    Ok(VcFailure {
        switch: switch.clone(),
        at,
        down,
        control_delay: duration("control_delay")?.unwrap_or_else(VcFailure::default_control_delay),
    })
}

/// The plan `[vc]`'s `forward` (and `hub`) name.
fn forward_shape(
    forward: Option<toml::Value>,
    hub: Option<toml::Value>,
    db: &HostDb,
) -> std::result::Result<Option<Shape>, String> {
    let hub = match hub {
        None => None,
        Some(toml::Value::String(h)) if db.host_index(&h).is_some() => Some(h),
        Some(toml::Value::String(h)) => {
            return Err(format!("hub: no host of [vc] is called {h:?}"));
        }
        Some(_) => return Err("hub: expected a host's name".into()),
    };
    let shape = match forward.as_ref().map(|v| v.as_str()) {
        None => None,
        Some(Some("mesh")) => Some(Shape::Mesh),
        Some(Some("sites")) => Some(Shape::Sites),
        Some(Some("pairs")) => Some(Shape::Pairs(db.pairs.clone())),
        Some(Some("star")) => match &hub {
            Some(h) => Some(Shape::Star(h.clone())),
            None => return Err("forward = \"star\" needs hub = \"HOST\", its centre".into()),
        },
        Some(_) => return Err("forward: expected mesh, sites, star or pairs".into()),
    };
    if hub.is_some() && !matches!(shape, Some(Shape::Star(_))) {
        return Err("hub: only forward = \"star\" takes a hub".into());
    }
    Ok(shape)
}

/// The `vc` keys of a workload: `plan`, `hub`, `sites`; refused on other kinds, as is `hosts`.
pub(super) fn workload(
    w: &Tbl<'_, '_>,
    kind: WorkloadKind,
    db: Option<&HostDb>,
) -> Result<Option<VcWorkload>> {
    if kind != WorkloadKind::Vc {
        w.refuse_keys(VC_KEYS.iter().copied().chain(["hosts"]), "vc")?;
        return Ok(None);
    }
    let Some(db) = db else {
        return Err(w.err_table(
            "kind = \"vc\" needs the file's [vc] host database ([[vc.switch]], [[vc.host]])",
        ));
    };
    let hub = w.string("hub")?;
    let shape = match w.string("plan")?.as_deref() {
        None | Some("mesh") => Shape::Mesh,
        Some("sites") => Shape::Sites,
        Some("pairs") => Shape::Pairs(Vec::new()),
        Some("star") => match &hub {
            Some(h) => Shape::Star(h.clone()),
            None => return Err(w.err("plan", "a star needs `hub`, the host at its centre")),
        },
        Some(_) => return Err(w.err("plan", "expected mesh, sites, star or pairs")),
    };
    if let Some(h) = &hub {
        if !matches!(shape, Shape::Star(_)) {
            return Err(w.err("hub", "only plan = \"star\" takes a hub"));
        }
        if db.host_index(h).is_none() {
            return Err(w.err("hub", format!("no host of [vc] is called {h:?}")));
        }
    }
    let sites = site_list(w, db)?;
    Ok(Some(VcWorkload {
        shape,
        sites,
        hosts: None,
    }))
}

/// `sites`: a site name or a list of them, each the site of some host of the database.
fn site_list(w: &Tbl<'_, '_>, db: &HostDb) -> Result<Vec<String>> {
    let Some(v) = w.get("sites") else {
        return Ok(Vec::new());
    };
    let items: Vec<_> = match v.get_ref() {
        DeValue::String(_) => vec![v],
        DeValue::Array(a) => a.iter().collect(),
        _ => return Err(w.err("sites", "expected a site name or a list of site names")),
    };
    items
        .into_iter()
        .map(|item| match item.get_ref() {
            DeValue::String(s) if db.hosts.iter().any(|h| h.site.as_deref() == Some(s)) => {
                Ok(s.to_string())
            }
            DeValue::String(s) => Err(w.err_at(
                item.span(),
                "sites",
                format!("no host of [vc] is at site {s:?}"),
            )),
            _ => Err(w.err_at(item.span(), "sites", "expected site names (strings)")),
        })
        .collect()
}

/// Checks every point of a `vc` workload against its database: at least two hosts, no more
/// `hosts` than the sites give, the hub among the first `hosts`.
pub(super) fn check(w: &Tbl<'_, '_>, out: &Workload, db: Option<&HostDb>) -> Result<()> {
    let (Some(vc), Some(db)) = (&out.vc, db) else {
        return Ok(());
    };
    let hub = match &vc.shape {
        Shape::Star(h) => Some(h.as_str()),
        _ => None,
    };
    let there = db.at_sites(&vc.sites, hub).hosts.len();
    for (_, p) in out.expand() {
        let n =
            p.vc.as_ref()
                .and_then(|v| v.hosts)
                .map_or(there, |n| n as usize);
        if n < 2 || n > there {
            return Err(w.err(
                "hosts",
                format!("{n} hosts: the plan's hosts are 2 to the {there} the database gives"),
            ));
        }
        if let Some(h) = hub {
            let first = db.at_sites(&vc.sites, hub).first_hosts(n);
            if first.host_index(h).is_none() {
                return Err(w.err(
                    "hosts",
                    format!("the hub {h:?} is not among the first {n} hosts"),
                ));
            }
        }
    }
    Ok(())
}
