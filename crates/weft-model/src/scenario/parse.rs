//! From TOML text to a validated [`Scenario`], with errors that carry file, line, key and what was
//! expected. Spans come from `toml::de::DeTable`, which keeps the byte range of every key and value.

use std::ops::Range;
use std::str::FromStr;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{
    Buffer, BufferUnit, Contention, DropPolicy, Expect, Fabric, Host, Link, Param, Scenario,
    ScenarioError, Sweep, Switch, Workload, WorkloadKind,
};
use crate::tech::{Encap, Framing, Tech, Transport};
use crate::time::Duration;
use crate::units::{Rate, Size};

type Result<T> = std::result::Result<T, ScenarioError>;

pub(super) fn parse(text: &str, file: &str) -> Result<Scenario> {
    let cx = Cx { text, file };
    let doc = DeTable::parse(text).map_err(|e| {
        cx.err(
            e.span().unwrap_or(0..0),
            "(document)",
            format!("not valid TOML: {}", e.message().trim()),
        )
    })?;
    let root = Tbl {
        cx: &cx,
        path: String::new(),
        t: doc.get_ref(),
        span: 0..0,
    };
    root.check_keys(&[
        "name",
        "description",
        "seed",
        "host",
        "switch",
        "link",
        "workload",
        "expect",
    ])?;
    let name = root.req_string("name")?;
    if name.trim().is_empty() {
        return Err(root.err("name", "must not be empty"));
    }
    let description = root.string("description")?.unwrap_or_default();
    let seed = root.count("seed")?.unwrap_or(1);

    let mut hosts = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for h in root.tables("host")? {
        h.check_keys(&["name", "addr"])?;
        let name = h.req_string("name")?;
        h.unique(&mut names, &name)?;
        hosts.push(Host {
            name,
            addr: h.string("addr")?,
        });
    }
    let mut switches = Vec::new();
    for s in root.tables("switch")? {
        switches.push(switch(&s, &mut names)?);
    }
    let mut links = Vec::new();
    for l in root.tables("link")? {
        links.push(link(&l, &names)?);
    }
    let host_names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    let mut workloads = Vec::new();
    for w in root.tables("workload")? {
        workloads.push(workload(&w, &host_names, &switches)?);
    }
    let mut expect = Vec::new();
    for e in root.tables("expect")? {
        expect.push(expectation(&e, &workloads)?);
    }
    Ok(Scenario {
        name,
        description,
        seed,
        hosts,
        switches,
        links,
        workloads,
        expect,
    })
}

fn switch(s: &Tbl<'_, '_>, names: &mut Vec<String>) -> Result<Switch> {
    s.check_keys(&[
        "name",
        "fabric",
        "ports",
        "buffer",
        "drop",
        "epd_threshold",
        "speedup",
        "iterations",
        "contention",
        "latency",
    ])?;
    let name = s.req_string("name")?;
    s.unique(names, &name)?;
    let fabric = match s.string("fabric")?.as_deref() {
        None | Some("output-queued" | "output" | "oq") => Fabric::OutputQueued,
        Some("input-fifo" | "input" | "fifo") => Fabric::InputFifo,
        Some("voq-islip" | "voq" | "islip") => Fabric::VoqIslip,
        Some(_) => {
            return Err(s.err("fabric", "expected output-queued, input-fifo or voq-islip"));
        }
    };
    let ports = s.count("ports")?.map(|n| s.small(n, "ports")).transpose()?;
    if ports == Some(0) {
        return Err(s.err("ports", "a switch needs at least one port"));
    }
    let buffer = s.parse_with("buffer", BUFFER_EXPECTED, parse_buffer)?;
    let drop = match s.string("drop")?.as_deref() {
        None | Some("tail") => DropPolicy::Tail,
        Some("ppd") => DropPolicy::Ppd,
        Some("epd") => {
            let threshold = epd_threshold(s, buffer)?;
            DropPolicy::Epd { threshold }
        }
        Some(_) => return Err(s.err("drop", "expected tail, ppd or epd")),
    };
    if !matches!(drop, DropPolicy::Epd { .. }) && s.get("epd_threshold").is_some() {
        return Err(s.err("epd_threshold", "only meaningful with drop = \"epd\""));
    }
    let contention = match s.string("contention")?.as_deref() {
        None | Some("random") => Contention::Random,
        Some("round-robin" | "rr") => Contention::RoundRobin,
        Some(_) => return Err(s.err("contention", "expected random or round-robin")),
    };
    let speedup = s
        .count("speedup")?
        .map(|n| s.small(n, "speedup"))
        .transpose()?;
    let iterations = s
        .count("iterations")?
        .map(|n| s.small(n, "iterations"))
        .transpose()?
        .unwrap_or(1);
    Ok(Switch {
        name,
        fabric,
        ports,
        buffer,
        drop,
        speedup,
        iterations,
        contention,
        latency: s.unit::<Duration>("latency", DURATION)?.unwrap_or_default(),
    })
}

const BUFFER_EXPECTED: &str = "a buffer such as \"512 frames\", \"1000 cells\" or \"64KiB\"";

fn parse_buffer(text: &str) -> Option<Buffer> {
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let unit = unit.trim();
    let amount: Option<u64> = num.parse().ok();
    match (amount, unit) {
        (Some(n), "cells" | "cell") => Some(Buffer {
            amount: n,
            unit: BufferUnit::Cells,
        }),
        (Some(n), "frames" | "frame" | "packets" | "packet") => Some(Buffer {
            amount: n,
            unit: BufferUnit::Frames,
        }),
        _ if !unit.is_empty() => Size::from_str(t).ok().map(|s| Buffer {
            amount: s.0,
            unit: BufferUnit::Bytes,
        }),
        _ => None,
    }
}

fn epd_threshold(s: &Tbl<'_, '_>, buffer: Option<Buffer>) -> Result<Buffer> {
    let Some(v) = s.get("epd_threshold") else {
        return Err(
            s.err_table("drop = \"epd\" needs `epd_threshold` (a fraction or a buffer size)")
        );
    };
    match v.get_ref() {
        DeValue::String(text) => parse_buffer(text)
            .filter(|b| buffer.is_none_or(|buf| b.unit == buf.unit && b.amount <= buf.amount))
            .ok_or_else(|| {
                s.err(
                    "epd_threshold",
                    "expected a size in the buffer's unit, no larger than the buffer",
                )
            }),
        _ => {
            let frac = s.number("epd_threshold")?.unwrap_or(0.0);
            let Some(buf) = buffer else {
                return Err(s.err(
                    "epd_threshold",
                    "a fractional threshold needs a `buffer` size to be a fraction of",
                ));
            };
            if !(0.0..=1.0).contains(&frac) {
                return Err(s.err("epd_threshold", "expected a fraction between 0 and 1"));
            }
            Ok(Buffer {
                amount: (buf.amount as f64 * frac).floor() as u64,
                unit: buf.unit,
            })
        }
    }
}

fn link(l: &Tbl<'_, '_>, names: &[String]) -> Result<Link> {
    l.check_keys(&[
        "ends",
        "tech",
        "delay",
        "loss",
        "mtu",
        "rate",
        "encap",
        "line_rate",
    ])?;
    let Some(ends_v) = l.get("ends") else {
        return Err(l.err_table("missing `ends`: the names of the two nodes it joins"));
    };
    let ends = match ends_v.get_ref() {
        DeValue::Array(a) if a.len() == 2 => {
            let mut out: [String; 2] = Default::default();
            for (slot, v) in out.iter_mut().zip(a.iter()) {
                let DeValue::String(name) = v.get_ref() else {
                    return Err(l.err_at(v.span(), "ends", "expected node names (strings)"));
                };
                if !names.iter().any(|n| n == name.as_ref()) {
                    return Err(l.err_at(
                        v.span(),
                        "ends",
                        format!("no host or switch is called {name:?}"),
                    ));
                }
                *slot = name.to_string();
            }
            if out[0] == out[1] {
                return Err(l.err("ends", "a link joins two different nodes"));
            }
            out
        }
        _ => return Err(l.err("ends", "expected two node names, such as [\"a\", \"sw\"]")),
    };
    let mut tech = match l.get("tech").map(|v| (v, v.get_ref())) {
        None => return Err(l.err_table("missing `tech`: a preset name such as \"oc3c\"")),
        Some((v, DeValue::String(name))) => {
            Tech::preset(name).map_err(|e| l.err_at(v.span(), "tech", e.to_string()))?
        }
        Some((v, DeValue::Table(t))) => {
            let sub = l.child("tech", t, v.span());
            tech_table(&sub)?
        }
        Some(_) => return Err(l.err("tech", "expected a preset name or a table")),
    };
    // Link-level shorthands override the preset too.
    override_tech(l, &mut tech)?;
    let loss = l.number("loss")?.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&loss) {
        return Err(l.err("loss", "expected a probability between 0 and 1"));
    }
    Ok(Link {
        ends,
        tech,
        delay: l.unit::<Duration>("delay", DURATION)?.unwrap_or_default(),
        loss,
    })
}

fn tech_table(t: &Tbl<'_, '_>) -> Result<Tech> {
    t.check_keys(&[
        "preset",
        "name",
        "rate",
        "line_rate",
        "encap",
        "mtu",
        "preamble",
        "header",
        "trailer",
        "gap",
        "min_frame",
    ])?;
    let preset = t.req_string("preset")?;
    let mut tech = Tech::preset(&preset).map_err(|e| t.err("preset", e.to_string()))?;
    if let Some(name) = t.string("name")? {
        tech.name = name;
    }
    override_tech(t, &mut tech)?;
    let frame_keys = ["preamble", "header", "trailer", "gap", "min_frame"];
    if let Framing::Frame(f) = &mut tech.framing {
        let fields: [&mut u64; 5] = [
            &mut f.preamble,
            &mut f.header,
            &mut f.trailer,
            &mut f.gap,
            &mut f.min_frame,
        ];
        for (key, field) in frame_keys.iter().zip(fields) {
            if let Some(n) = t.count(key)? {
                *field = n;
            }
        }
    } else if let Some(key) = frame_keys.iter().find(|k| t.get(k).is_some()) {
        return Err(t.err(
            key,
            "frame fields do not apply to a cell technology (a cell is always 53 bytes)",
        ));
    }
    Ok(tech)
}

fn override_tech(t: &Tbl<'_, '_>, tech: &mut Tech) -> Result<()> {
    if let Some(r) = t.unit::<Rate>("rate", RATE)? {
        tech.rate = r;
    }
    if let Some(r) = t.unit::<Rate>("line_rate", RATE)? {
        tech.line_rate = r;
    }
    if tech.rate.0 == 0 || tech.rate > tech.line_rate {
        let key = if t.get("rate").is_some() {
            "rate"
        } else {
            "line_rate"
        };
        return Err(t.err(key, "expected 0 < rate <= line_rate"));
    }
    if let Some(e) = t.string("encap")? {
        tech.encap = Encap::from_str(&e).map_err(|err| t.err("encap", err.to_string()))?;
    }
    if let Some(m) = t.unit::<Size>("mtu", SIZE)? {
        if m.0 <= 40 || (tech.is_cells() && tech.sdu_bytes(m.0) > crate::tech::AAL5_MAX_SDU_BYTES) {
            return Err(t.err("mtu", "expected an MTU above 40 bytes that fits one frame"));
        }
        tech.mtu = m;
    }
    Ok(())
}

/// The fields of a workload that may be given as an array to sweep them.
const SWEEPABLE: &[(&str, Kind)] = &[
    ("inputs", Kind::Count),
    ("outputs", Kind::Count),
    ("ports", Kind::Count),
    ("slots", Kind::Count),
    ("load", Kind::Number),
    ("burst", Kind::Number),
    ("hotspot", Kind::Number),
    ("window", Kind::Size),
    ("mtu", Kind::Size),
    ("size", Kind::Size),
    ("rate", Kind::Rate),
    ("time", Kind::Duration),
    ("rtt", Kind::Duration),
];

fn workload(w: &Tbl<'_, '_>, hosts: &[&str], switches: &[Switch]) -> Result<Workload> {
    let mut allowed: Vec<&str> = SWEEPABLE.iter().map(|(k, _)| *k).collect();
    allowed.extend(["kind", "switch", "from", "to", "warmup", "proto"]);
    w.check_keys(&allowed)?;
    let kind = match w.req_string("kind")?.as_str() {
        "saturated" => WorkloadKind::Saturated,
        "bernoulli" => WorkloadKind::Bernoulli,
        "onoff" | "on-off" => WorkloadKind::Onoff,
        "hotspot" => WorkloadKind::Hotspot,
        "frames" => WorkloadKind::Frames,
        "tput" => WorkloadKind::Tput,
        _ => {
            return Err(w.err(
                "kind",
                "expected saturated, bernoulli, onoff, hotspot, frames or tput",
            ));
        }
    };
    let switch = w.string("switch")?;
    if let Some(name) = &switch
        && !switches.iter().any(|s| &s.name == name)
    {
        return Err(w.err("switch", format!("no switch is called {name:?}")));
    }
    let from = w.names("from", hosts)?;
    let to = w.names("to", hosts)?;
    let proto = match w.string("proto")? {
        Some(p) => Some(Transport::from_str(&p).map_err(|e| w.err("proto", e.to_string()))?),
        None if kind == WorkloadKind::Tput => Some(Transport::Tcp { options: 0 }),
        None => None,
    };
    let mut out = Workload {
        kind,
        switch,
        from,
        to,
        inputs: None,
        outputs: None,
        ports: None,
        load: None,
        burst: None,
        hotspot: None,
        slots: None,
        warmup: w.count("warmup")?,
        proto,
        window: None,
        mtu: None,
        size: None,
        rate: None,
        time: None,
        rtt: None,
        sweep: None,
    };
    for (key, kind) in SWEEPABLE {
        match w.param(key, *kind)? {
            None => {}
            Some(Given::One(v)) => out.set(key, v),
            Some(Given::Many(values)) => {
                if let Some(prev) = &out.sweep {
                    return Err(w.err(
                        key,
                        format!(
                            "only one field of a workload may be a list, and `{}` already is; \
                             use another [[workload]] for a second sweep",
                            prev.field
                        ),
                    ));
                }
                out.sweep = Some(Sweep {
                    field: key.to_string(),
                    values,
                });
            }
        }
    }
    check_workload(w, &out, switches)?;
    Ok(out)
}

fn check_workload(w: &Tbl<'_, '_>, out: &Workload, switches: &[Switch]) -> Result<()> {
    let points = out.expand();
    let sw = match &out.switch {
        Some(n) => switches.iter().find(|s| &s.name == n),
        None => switches.first().filter(|_| switches.len() == 1),
    };
    for (_, p) in &points {
        if p.inputs == Some(0) || p.outputs == Some(0) || p.ports == Some(0) {
            return Err(w.err_table("inputs, outputs and ports must be at least 1"));
        }
        if let (Some(ports), Some(n)) = (sw.and_then(|s| s.ports), p.input_count())
            && n > ports
        {
            return Err(w.err_table(format!("{n} inputs do not fit a switch of {ports} ports")));
        }
        if let Some(load) = p.load
            && !(0.0..=1.0).contains(&load)
        {
            return Err(w.err("load", "expected a load between 0 and 1"));
        }
        if let Some(h) = p.hotspot
            && !(0.0..=1.0).contains(&h)
        {
            return Err(w.err("hotspot", "expected a fraction between 0 and 1"));
        }
        if let Some(b) = p.burst
            && b < 1.0
        {
            return Err(w.err("burst", "expected a mean burst of at least 1"));
        }
    }
    let Some((_, first)) = points.first() else {
        return Ok(());
    };
    let ported = sw.and_then(|s| s.ports).is_some();
    let need = |ok: bool, what: &str| -> Result<()> {
        if ok {
            Ok(())
        } else {
            Err(w.err_table(format!("kind = \"{}\" needs {what}", out.kind.name())))
        }
    };
    match out.kind {
        WorkloadKind::Saturated => {
            need(
                first.input_count().is_some() || ported,
                "`inputs` or `ports` (or a switch with `ports`)",
            )?;
            need(
                first.output_count().is_some() || ported,
                "`outputs` or `ports` (or a switch with `ports`)",
            )?;
        }
        WorkloadKind::Bernoulli | WorkloadKind::Onoff | WorkloadKind::Hotspot => {
            need(first.load.is_some(), "`load`")?;
            need(
                first.input_count().is_some() || ported,
                "`ports` (or a switch with `ports`)",
            )?;
            if out.kind == WorkloadKind::Onoff {
                need(first.burst.is_some(), "`burst`")?;
            }
            if out.kind == WorkloadKind::Hotspot {
                need(first.hotspot.is_some(), "`hotspot`")?;
            }
        }
        WorkloadKind::Frames => {
            need(first.rate.is_some(), "`rate`")?;
            need(first.size.is_some(), "`size`")?;
        }
        WorkloadKind::Tput => {
            need(!out.from.is_empty(), "`from`, the sending hosts")?;
            need(!out.to.is_empty(), "`to`, the receiving hosts")?;
        }
    }
    Ok(())
}

fn expectation(e: &Tbl<'_, '_>, workloads: &[Workload]) -> Result<Expect> {
    e.check_keys(&["source", "select", "metric", "tolerance", "workload"])?;
    let source = e.req_string("source")?;
    if source.split('.').any(str::is_empty) {
        return Err(e.err(
            "source",
            "expected a dotted key such as \"gigaswitch.contention_observed_mbps\"",
        ));
    }
    let workload = e.count("workload")?.unwrap_or(0) as usize;
    let Some(w) = workloads.get(workload) else {
        return Err(e.err(
            "workload",
            format!(
                "there is no workload {workload} (the scenario has {})",
                workloads.len()
            ),
        ));
    };
    let tolerance = e.number("tolerance")?.unwrap_or(0.1);
    if tolerance.is_nan() || tolerance < 0.0 {
        return Err(e.err("tolerance", "expected a relative tolerance >= 0"));
    }
    let select = match e.get("select") {
        None => None,
        Some(v) => match v.get_ref() {
            DeValue::Array(a) => {
                let mut out = Vec::new();
                for item in a.iter() {
                    match item.get_ref() {
                        DeValue::Integer(i) => match u64::from_str_radix(i.as_str(), i.radix()) {
                            Ok(n) => out.push(n as usize),
                            Err(_) => {
                                return Err(e.err_at(
                                    item.span(),
                                    "select",
                                    "expected indices >= 0",
                                ));
                            }
                        },
                        _ => {
                            return Err(e.err_at(
                                item.span(),
                                "select",
                                "expected integer indices",
                            ));
                        }
                    }
                }
                Some(out)
            }
            _ => return Err(e.err("select", "expected a list of indices such as [0, 1, 2]")),
        },
    };
    Ok(Expect {
        source,
        select,
        metric: e
            .string("metric")?
            .unwrap_or_else(|| w.kind.default_metric().to_string()),
        tolerance,
        workload,
    })
}

const DURATION: &str = "a duration such as \"17ms\"";
const RATE: &str = "a rate such as \"26Mbps\"";
const SIZE: &str = "a size such as \"9180\" or \"64KiB\"";

#[derive(Clone, Copy)]
enum Kind {
    Count,
    Number,
    Size,
    Rate,
    Duration,
}

enum Given {
    One(Param),
    Many(Vec<Param>),
}

struct Cx<'a> {
    text: &'a str,
    file: &'a str,
}

impl Cx<'_> {
    fn err(&self, span: Range<usize>, key: &str, message: impl Into<String>) -> ScenarioError {
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
struct Tbl<'a, 'i> {
    cx: &'a Cx<'a>,
    path: String,
    t: &'a DeTable<'i>,
    span: Range<usize>,
}

impl<'a, 'i> Tbl<'a, 'i> {
    fn key(&self, k: &str) -> String {
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

    fn get(&self, k: &str) -> Option<&'a Spanned<DeValue<'i>>> {
        self.t.get(k)
    }

    fn err(&self, k: &str, msg: impl Into<String>) -> ScenarioError {
        let span = self.get(k).map_or(self.span.clone(), Spanned::span);
        self.cx.err(span, &self.key(k), msg)
    }

    fn err_at(&self, span: Range<usize>, k: &str, msg: impl Into<String>) -> ScenarioError {
        self.cx.err(span, &self.key(k), msg)
    }

    fn err_table(&self, msg: impl Into<String>) -> ScenarioError {
        let key = if self.path.is_empty() {
            "(document)".to_string()
        } else {
            self.path.clone()
        };
        self.cx.err(self.span.clone(), &key, msg)
    }

    fn child(&self, k: &str, t: &'a DeTable<'i>, span: Range<usize>) -> Tbl<'a, 'i> {
        Tbl {
            cx: self.cx,
            path: self.key(k),
            t,
            span,
        }
    }

    fn check_keys(&self, allowed: &[&str]) -> Result<()> {
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

    fn unique(&self, names: &mut Vec<String>, name: &str) -> Result<()> {
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
    fn tables(&self, k: &str) -> Result<Vec<Tbl<'a, 'i>>> {
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

    fn string(&self, k: &str) -> Result<Option<String>> {
        match self.get(k).map(Spanned::get_ref) {
            None => Ok(None),
            Some(DeValue::String(s)) => Ok(Some(s.to_string())),
            Some(other) => {
                Err(self.err(k, format!("expected a string, found {}", other.type_str())))
            }
        }
    }

    fn req_string(&self, k: &str) -> Result<String> {
        self.string(k)?
            .ok_or_else(|| self.err_table(format!("missing `{k}` (a string)")))
    }

    fn names(&self, k: &str, hosts: &[&str]) -> Result<Vec<String>> {
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

    fn count(&self, k: &str) -> Result<Option<u64>> {
        self.get(k)
            .map(|v| {
                count_of(v.get_ref()).ok_or_else(|| self.err(k, "expected a whole number >= 0"))
            })
            .transpose()
    }

    fn small(&self, n: u64, k: &str) -> Result<u32> {
        u32::try_from(n).map_err(|_| self.err(k, "expected a number below 2^32"))
    }

    fn number(&self, k: &str) -> Result<Option<f64>> {
        self.get(k)
            .map(|v| number_of(v.get_ref()).ok_or_else(|| self.err(k, "expected a number")))
            .transpose()
    }

    /// A value with a unit: a string parsed by `T::from_str`, or a bare number in the base unit.
    fn unit<T: FromStr>(&self, k: &str, expected: &str) -> Result<Option<T>> {
        self.get(k)
            .map(|v| {
                unit_of::<T>(v.get_ref()).ok_or_else(|| self.err(k, format!("expected {expected}")))
            })
            .transpose()
    }

    fn parse_with<T>(
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

    fn param(&self, k: &str, kind: Kind) -> Result<Option<Given>> {
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

fn count_of(v: &DeValue<'_>) -> Option<u64> {
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

fn number_of(v: &DeValue<'_>) -> Option<f64> {
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

fn unit_of<T: FromStr>(v: &DeValue<'_>) -> Option<T> {
    match v {
        DeValue::String(s) => s.parse().ok(),
        DeValue::Integer(i) => i.as_str().replace('_', "").parse().ok(),
        DeValue::Float(f) => f.as_str().replace('_', "").parse().ok(),
        _ => None,
    }
}
