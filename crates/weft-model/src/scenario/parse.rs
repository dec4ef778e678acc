//! From TOML text to a validated [`Scenario`], with errors that carry file, line, key and what was
//! expected. Spans come from `toml::de::DeTable`, which keeps the byte range of every key and value.

use std::str::FromStr;

use toml::de::{DeTable, DeValue};

use super::{
    Buffer, BufferUnit, Contention, DropPolicy, Expect, Fabric, Host, Link, MpWorkload,
    PfcThresholds, Scenario, Sweep, Switch, TcpStack, Workload, WorkloadKind, XferMode,
    XferWorkload,
};
use crate::shaper::VcContract;
use crate::tcp::CcAlgorithm;
use crate::tech::{Encap, Framing, Tech, Transport};
use crate::time::Duration;
use crate::units::{Rate, Size};

use super::reader::{Cx, Given, Range, Result, Tbl};

// The values the scenario's numbers may take (inclusive): wide enough for the studies' fabrics
// and far beyond, narrow enough that no engine's arithmetic overflows on them. A value outside
// is refused with its range, at its line and column.
/// Ports of a switch; inputs and outputs of a workload.
const PORTS: (u32, u32) = (1, 4096);
/// iSLIP iterations per slot.
const ITERATIONS: (u32, u32) = (1, 64);
/// Timed iterations (NPB: time steps) of a message-passing workload (`weft mp`'s bound).
const MP_ITERATIONS: (u64, u64) = (1, 1_000_000);
/// A buffer counted in cells or frames.
const BUFFER_ITEMS: (u64, u64) = (1, 1 << 32);
/// A buffer counted in bytes.
const BUFFER_BYTES: (Size, Size) = (Size(1), Size(1 << 40));
/// The dynamic threshold of a shared buffer, a multiple of its free bytes (merchant silicon
/// offers 1/64 to 64 in powers of two).
const ALPHAS: (f64, f64) = (1.0 / 64.0, 64.0);
/// Link rates, line rates, contract rates and workload rates.
const RATES: (Rate, Rate) = (Rate(1), Rate(10_000_000_000_000));
/// Propagation delays, switch latencies, CDV tolerances and assumed round trips.
const DELAYS: (Duration, Duration) = (Duration::ZERO, Duration::from_secs(3600));
/// MTUs (IPv4's largest datagram).
const MTUS: (Size, Size) = (Size(41), Size(65_535));
/// Framing fields of a technology (preamble, header, trailer, gap, minimum frame), bytes.
const FRAME_BYTES: (u64, u64) = (0, 65_535);
/// A VC contract's maximum burst, cells.
const MBS: (u64, u64) = (1, 1 << 32);
/// Slots to simulate, and to warm up.
const SLOTS: (u64, u64) = (1, 1_000_000_000_000);
/// Mean burst of an on-off source, cells or frames.
const BURSTS: (f64, f64) = (1.0, 1e9);
/// A TCP window (TCP's largest, with window scaling).
const WINDOWS: (Size, Size) = (Size(1), Size(1 << 30));
/// A frame or message size.
const MESSAGES: (Size, Size) = (Size(1), Size(1 << 30));
/// How long a workload runs.
const RUN_TIMES: (Duration, Duration) = (Duration(1), Duration::from_secs(30 * 86_400));
/// A TCP maximum segment size (IPv4's largest datagram less 40 bytes of headers).
const MSSES: (Size, Size) = (Size(1), Size(65_495));
/// Requests of a request/response workload.
const REQUESTS: (u64, u64) = (1, 1_000_000_000);
/// A request's time-out.
const TIMEOUTS: (Duration, Duration) = (Duration(1), Duration::from_secs(3600));
/// A relative tolerance (10 = 1000%).
const TOLERANCES: (f64, f64) = (0.0, 10.0);

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
        "check",
        "vc",
        "fabric",
        "ring",
        "emu",
    ])?;
    let name = root.req_string("name")?;
    if name.trim().is_empty() {
        return Err(root.err("name", "must not be empty"));
    }
    let description = root.string("description")?.unwrap_or_default();
    let seed = root.count("seed", 0, u64::MAX)?.unwrap_or(1);

    let mut hosts = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for h in root.tables("host")? {
        h.check_keys(&["name", "addr", "costs", "disk", "abr", "lane_driver"])?;
        let name = h.req_string("name")?;
        h.unique(&mut names, &name)?;
        let costs = h.string("costs")?;
        if let Some(c) = &costs
            && crate::host::presets::by_name(c).is_none()
        {
            let known: Vec<&str> = crate::host::presets::all().iter().map(|p| p.name).collect();
            return Err(h.err(
                "costs",
                format!(
                    "no host preset is called {c:?}; known: {}",
                    known.join(", ")
                ),
            ));
        }
        let disk = h.string("disk")?;
        if let Some(d) = &disk
            && crate::host::disk::presets::by_name(d).is_none()
        {
            let known: Vec<&str> = crate::host::disk::presets::all()
                .iter()
                .map(|p| p.name)
                .collect();
            return Err(h.err(
                "disk",
                format!(
                    "no disk preset is called {d:?}; known: {}",
                    known.join(", ")
                ),
            ));
        }
        hosts.push(Host {
            name,
            addr: h.string("addr")?,
            costs,
            disk,
            abr: super::parse_abr::abr(&h)?,
            lane_driver: super::parse_lane::lane_driver(&h)?,
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
    let fabric =
        super::parse_fabric::expand(&root, &mut hosts, &mut switches, &mut links, &mut names)?;
    if let Some(h) = super::parse_lane::check_links(&hosts, &links) {
        return Err(root.err(
            "host",
            format!("host {h:?} has a `lane_driver` but no link with `encap = \"lane\"`"),
        ));
    }
    let host_names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    let rings = super::parse_segment::rings(&root, &host_names, &switches, &links)?;
    let (vc, vc_forward, vc_failure, vc_contracts) = super::parse_vc::db(&root, text)?;
    let mut workloads = Vec::new();
    for w in root.tables("workload")? {
        let out = workload(&w, &host_names, &switches, vc.as_ref())?;
        if let Some(b) = out.beside {
            let ok = out.kind == WorkloadKind::Rr
                && workloads
                    .get(b)
                    .is_some_and(|x: &Workload| x.kind == WorkloadKind::Tput);
            if !ok {
                return Err(w.err(
                    "beside",
                    "an rr workload runs beside an earlier tput workload: give its index (from 0)",
                ));
            }
        }
        workloads.push(out);
    }
    let mut expect = Vec::new();
    for e in root.tables("expect")? {
        expect.push(expectation(&e, &workloads)?);
    }
    let mut checks = Vec::new();
    for c in root.tables("check")? {
        checks.push(super::parse_check::check(&c, &workloads)?);
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
        checks,
        vc,
        fabric,
        vc_forward,
        vc_failure,
        vc_contracts,
        rings,
        emu: super::emu::parse(&root)?,
    })
}

/// The keys of a switch table but its name (also those of `[fabric.switch]`).
pub(super) const SWITCH_KEYS: &[&str] = &[
    "fabric",
    "ports",
    "buffer",
    "drop",
    "epd_threshold",
    "speedup",
    "iterations",
    "contention",
    "latency",
    "cut_through",
    "clp_threshold",
    "ecn_threshold",
    "ecn_red",
    "trim",
    "pfc",
    "pfc_xoff",
    "pfc_xon",
    "efci_threshold",
    "abr_er",
    "alpha",
    "forwarding",
];

fn switch(s: &Tbl<'_, '_>, names: &mut Vec<String>) -> Result<Switch> {
    let mut keys = vec!["name"];
    keys.extend(SWITCH_KEYS);
    s.check_keys(&keys)?;
    let name = s.req_string("name")?;
    s.unique(names, &name)?;
    switch_body(s, name)
}

/// The switch `name` from the keys of `s` but its name (checked by the caller).
pub(super) fn switch_body(s: &Tbl<'_, '_>, name: String) -> Result<Switch> {
    let fabric = match s.string("fabric")?.as_deref() {
        None | Some("output-queued" | "output" | "oq") => Fabric::OutputQueued,
        Some("input-fifo" | "input" | "fifo") => Fabric::InputFifo,
        Some("voq-islip" | "voq" | "islip") => Fabric::VoqIslip,
        Some(_) => {
            return Err(s.err("fabric", "expected output-queued, input-fifo or voq-islip"));
        }
    };
    let ports = s.count32("ports", PORTS.0, PORTS.1)?;
    let shared = match s.get("buffer").map(toml::Spanned::get_ref) {
        Some(DeValue::String(t)) if t.trim_start().starts_with("shared") => s.parse_with(
            "buffer",
            "a shared buffer in bytes, such as \"shared 2MB\"",
            parse_shared,
        )?,
        _ => None,
    };
    let buffer = match shared {
        Some(b) => Some(b),
        None => s.parse_with("buffer", BUFFER_EXPECTED, parse_buffer)?,
    };
    let alpha = s.number("alpha", ALPHAS.0, ALPHAS.1)?;
    if shared.is_none() && alpha.is_some() {
        return Err(s.err(
            "alpha",
            "only meaningful with a shared buffer (buffer = \"shared 2MB\")",
        ));
    }
    if let Some(b) = buffer {
        let ok = match b.unit {
            BufferUnit::Bytes => (BUFFER_BYTES.0.0..=BUFFER_BYTES.1.0).contains(&b.amount),
            _ => (BUFFER_ITEMS.0..=BUFFER_ITEMS.1).contains(&b.amount),
        };
        if !ok {
            return Err(s.err(
                "buffer",
                format!(
                    "expected between {} and {} cells or frames, or between {} and {}",
                    BUFFER_ITEMS.0, BUFFER_ITEMS.1, BUFFER_BYTES.0, BUFFER_BYTES.1
                ),
            ));
        }
    }
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
    let speedup = s.count32("speedup", PORTS.0, PORTS.1)?;
    let iterations = s
        .count32("iterations", ITERATIONS.0, ITERATIONS.1)?
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
        latency: s
            .duration("latency", DELAYS.0, DELAYS.1)?
            .unwrap_or_default(),
        cut_through: s.boolean("cut_through")?.unwrap_or(false),
        clp_threshold: s.number("clp_threshold", 0.0, 1.0)?,
        ecn_threshold: s.parse_with("ecn_threshold", BUFFER_EXPECTED, parse_buffer)?,
        ecn_red: match s.string("ecn_red")?.as_deref() {
            None => None,
            Some("dcqcn") => Some(crate::net::RedSpec::DCQCN),
            Some(_) => return Err(s.err("ecn_red", "expected dcqcn (the DCQCN paper's profile)")),
        },
        trim: s.boolean("trim")?.unwrap_or(false),
        pfc: pfc(s, buffer)?,
        efci_threshold: s.number("efci_threshold", 0.0, 1.0)?,
        abr_er: s.number("abr_er", 0.0, 1.0)?,
        shared: shared.map(|b| crate::net::SharedBufferSpec {
            bytes: b.amount,
            alpha: alpha.unwrap_or(1.0),
        }),
        forwarding: super::parse_forwarding::forwarding(s)?,
    })
}

/// The PFC thresholds of a switch (`pfc = true`, `pfc_xoff`, `pfc_xon`): XOFF by default a
/// quarter of its buffer (a quarter of 100 frames without one), XON half of XOFF.
fn pfc(s: &Tbl<'_, '_>, buffer: Option<Buffer>) -> Result<Option<PfcThresholds>> {
    let on = s.boolean("pfc")?.unwrap_or(false);
    let xoff = s.parse_with("pfc_xoff", BUFFER_EXPECTED, parse_buffer)?;
    let xon = s.parse_with("pfc_xon", BUFFER_EXPECTED, parse_buffer)?;
    if !on {
        for k in ["pfc_xoff", "pfc_xon"] {
            if s.get(k).is_some() {
                return Err(s.err(k, "only meaningful with pfc = true"));
            }
        }
        return Ok(None);
    }
    let xoff = xoff.unwrap_or_else(|| {
        let b = buffer.unwrap_or(Buffer::frames(100));
        Buffer {
            amount: (b.amount / 4).max(1),
            unit: b.unit,
        }
    });
    let xon = xon.unwrap_or(Buffer {
        amount: xoff.amount / 2,
        unit: xoff.unit,
    });
    if xon.unit == xoff.unit && xon.amount > xoff.amount {
        return Err(s.err("pfc_xon", "expected at most pfc_xoff"));
    }
    Ok(Some(PfcThresholds { xoff, xon }))
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

/// A switch's shared buffer, `shared SIZE` in bytes.
fn parse_shared(text: &str) -> Option<Buffer> {
    parse_buffer(text.trim().strip_prefix("shared")?)
        .filter(|b| b.unit == BufferUnit::Bytes && b.amount >= BUFFER_BYTES.0.0)
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
            let frac = s.number("epd_threshold", 0.0, 1.0)?.unwrap_or(0.0);
            let Some(buf) = buffer else {
                return Err(s.err(
                    "epd_threshold",
                    "a fractional threshold needs a `buffer` size to be a fraction of",
                ));
            };
            Ok(Buffer {
                amount: (buf.amount as f64 * frac).floor() as u64,
                unit: buf.unit,
            })
        }
    }
}

/// The keys of a link table but its ends (also those of a `[fabric]` tier's link).
pub(super) const LINK_KEYS: &[&str] = &[
    "tech",
    "delay",
    "loss",
    "mtu",
    "rate",
    "encap",
    "line_rate",
    "pcr",
    "scr",
    "mbs",
    "cdvt",
    "police",
    "corrupt",
    "duplicate",
    "reorder",
    "reorder_delay",
];

fn link(l: &Tbl<'_, '_>, names: &[String]) -> Result<Link> {
    let mut keys = vec!["ends"];
    keys.extend(LINK_KEYS);
    l.check_keys(&keys)?;
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
    link_body(l, ends)
}

/// The link between `ends` from the keys of `l` but its ends (checked by the caller).
pub(super) fn link_body(l: &Tbl<'_, '_>, ends: [String; 2]) -> Result<Link> {
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
    let probability = |k: &str| -> Result<f64> { Ok(l.number(k, 0.0, 1.0)?.unwrap_or(0.0)) };
    Ok(Link {
        ends,
        tech,
        delay: l.duration("delay", DELAYS.0, DELAYS.1)?.unwrap_or_default(),
        loss: probability("loss")?,
        corrupt: probability("corrupt")?,
        duplicate: probability("duplicate")?,
        reorder: probability("reorder")?,
        reorder_delay: l
            .duration("reorder_delay", DELAYS.0, DELAYS.1)?
            .unwrap_or(Duration::from_millis(1)),
        contract: contract(l)?,
    })
}

/// The VC contract keys of a link: `pcr` is required once any of them is given.
pub(super) fn contract(l: &Tbl<'_, '_>) -> Result<Option<VcContract>> {
    let pcr = l.rate("pcr", RATES.0, RATES.1)?;
    let scr = l.rate("scr", RATES.0, RATES.1)?;
    let mbs = l.count("mbs", MBS.0, MBS.1)?;
    let cdvt = l.duration("cdvt", DELAYS.0, DELAYS.1)?;
    // `police`: true or "discard" (drop what breaks the contract), "ppd" (drop it and the rest
    // of its frame but the last cell), "tag" (mark it CLP = 1), false or "shape" (delay it
    // until it conforms). As (police, tag, ppd).
    let police = match l.get("police").map(|v| v.get_ref()) {
        None => None,
        Some(DeValue::Boolean(b)) => Some((*b, false, false)),
        Some(DeValue::String(s)) if s == "discard" => Some((true, false, false)),
        Some(DeValue::String(s)) if s == "ppd" => Some((true, false, true)),
        Some(DeValue::String(s)) if s == "tag" => Some((true, true, false)),
        Some(DeValue::String(s)) if s == "shape" => Some((false, false, false)),
        Some(_) => {
            return Err(l.err(
                "police",
                "expected true or \"discard\" (police, dropping), \"ppd\" (police, dropping the rest of the frame too), \"tag\" (police, marking CLP), or false or \"shape\"",
            ));
        }
    };
    let Some(pcr) = pcr else {
        if scr.is_some() || mbs.is_some() || cdvt.is_some() || police.is_some() {
            return Err(l.err_table("a VC contract needs `pcr`, its peak cell rate as a bit rate"));
        }
        return Ok(None);
    };
    if pcr.as_bps() < 424 {
        return Err(l.err("pcr", "expected at least one cell per second (424bps)"));
    }
    if let Some(scr) = scr {
        if scr > pcr {
            return Err(l.err("scr", "the sustainable rate cannot exceed `pcr`"));
        }
        if mbs.is_none() {
            return Err(l.err_table("a sustainable rate `scr` needs `mbs`, the burst in cells"));
        }
    }
    Ok(Some(VcContract {
        pcr,
        scr,
        mbs: mbs.unwrap_or(1).max(1),
        cdvt: cdvt.unwrap_or_default(),
        police: police.is_some_and(|p| p.0),
        tag: police.is_some_and(|p| p.1),
        ppd: police.is_some_and(|p| p.2),
    }))
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
            if let Some(n) = t.count(key, FRAME_BYTES.0, FRAME_BYTES.1)? {
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
    if let Some(r) = t.rate("rate", RATES.0, RATES.1)? {
        tech.rate = r;
    }
    if let Some(r) = t.rate("line_rate", RATES.0, RATES.1)? {
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
    if let Some(m) = t.size("mtu", MTUS.0, MTUS.1)? {
        if m.0 <= 40 || (tech.is_cells() && tech.sdu_bytes(m.0) > crate::tech::AAL5_MAX_SDU_BYTES) {
            return Err(t.err("mtu", "expected an MTU above 40 bytes that fits one frame"));
        }
        tech.mtu = m;
    }
    Ok(())
}

/// The fields of a workload that may be given as an array to sweep them.
const SWEEPABLE: &[(&str, Range)] = &[
    ("inputs", Range::Count(PORTS.0 as u64, PORTS.1 as u64)),
    ("outputs", Range::Count(PORTS.0 as u64, PORTS.1 as u64)),
    ("ports", Range::Count(PORTS.0 as u64, PORTS.1 as u64)),
    ("slots", Range::Count(SLOTS.0, SLOTS.1)),
    ("load", Range::Number(0.0, 1.0)),
    ("burst", Range::Number(BURSTS.0, BURSTS.1)),
    ("hotspot", Range::Number(0.0, 1.0)),
    ("window", Range::Size(WINDOWS.0, WINDOWS.1)),
    ("mss", Range::Size(MSSES.0, MSSES.1)),
    ("count", Range::Count(REQUESTS.0, REQUESTS.1)),
    ("timeout", Range::Duration(TIMEOUTS.0, TIMEOUTS.1)),
    ("mtu", Range::Size(MTUS.0, MTUS.1)),
    ("size", Range::Size(MESSAGES.0, MESSAGES.1)),
    ("response_size", Range::Size(MESSAGES.0, MESSAGES.1)),
    ("rate", Range::Rate(RATES.0, RATES.1)),
    ("time", Range::Duration(RUN_TIMES.0, RUN_TIMES.1)),
    ("rtt", Range::Duration(DELAYS.0, DELAYS.1)),
    ("hosts", Range::Count(2, PORTS.1 as u64)),
];

fn workload(
    w: &Tbl<'_, '_>,
    hosts: &[&str],
    switches: &[Switch],
    db: Option<&crate::vc::HostDb>,
) -> Result<Workload> {
    let mut allowed: Vec<&str> = SWEEPABLE.iter().map(|(k, _)| *k).collect();
    allowed.extend([
        "kind",
        "switch",
        "from",
        "to",
        "warmup",
        "proto",
        "cc",
        "stack",
        "beside",
        "nodelay",
        "echo",
        "together",
        "multipath",
        "flowlet_gap",
        "traffic",
        "flow_size",
        "senders",
        "transport",
    ]);
    allowed.extend(["ranks", "pattern", "iterations", "route"]);
    allowed.extend(XFER_KEYS);
    allowed.extend(super::parse_vc::VC_KEYS);
    allowed.extend(super::parse_ring::RING_KEYS);
    allowed.extend(super::parse_nfs::NFS_KEYS);
    allowed.extend(super::parse_x11::X11_KEYS);
    w.check_keys(&allowed)?;
    let kind = match w.req_string("kind")?.as_str() {
        "saturated" => WorkloadKind::Saturated,
        "bernoulli" => WorkloadKind::Bernoulli,
        "onoff" | "on-off" => WorkloadKind::Onoff,
        "hotspot" => WorkloadKind::Hotspot,
        "frames" => WorkloadKind::Frames,
        "tput" => WorkloadKind::Tput,
        "rr" => WorkloadKind::Rr,
        "mp" => WorkloadKind::Mp,
        "xfer" => WorkloadKind::Xfer,
        "vc" => WorkloadKind::Vc,
        "ring" => WorkloadKind::Ring,
        "nfs" => WorkloadKind::Nfs,
        "x11" => WorkloadKind::X11,
        _ => {
            return Err(w.err(
                "kind",
                "expected saturated, bernoulli, onoff, hotspot, frames, tput, rr, mp, xfer, vc, \
                 ring, nfs or x11",
            ));
        }
    };
    let switch = w.string("switch")?;
    if let Some(name) = &switch
        && !switches.iter().any(|s| &s.name == name)
    {
        return Err(w.err("switch", format!("no switch is called {name:?}")));
    }
    let mut from = w.names("from", hosts)?;
    let mut to = w.names("to", hosts)?;
    let traffic = super::parse_fabric::traffic(w, kind, hosts, &mut from, &mut to)?;
    let proto = match w.string("proto")? {
        Some(p) => Some(Transport::from_str(&p).map_err(|e| w.err("proto", e.to_string()))?),
        None if kind == WorkloadKind::Tput => Some(Transport::Tcp { options: 0 }),
        None if kind == WorkloadKind::Rr => Some(Transport::Udp),
        None => None,
    };
    let cc = match w.string("cc")? {
        Some(c) => Some(
            CcAlgorithm::from_name(&c)
                .ok_or_else(|| w.err("cc", "expected reno, newreno, cubic or dctcp"))?,
        ),
        None => None,
    };
    let stack = match w.string("stack")?.as_deref() {
        None => None,
        Some("bsd") => Some(TcpStack::Bsd),
        Some("linux") => Some(TcpStack::Linux),
        Some(_) => return Err(w.err("stack", "expected bsd or linux")),
    };
    let transport = match w.string("transport")?.as_deref() {
        None | Some("tcp") => None,
        Some("ndp") if kind == WorkloadKind::Tput => Some("ndp"),
        Some("dcqcn") if kind == WorkloadKind::Tput => Some("dcqcn"),
        Some(_) => {
            return Err(w.err(
                "transport",
                "expected tcp, or ndp or dcqcn on a tput workload",
            ));
        }
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
        warmup: w.count("warmup", 0, SLOTS.1)?,
        proto,
        window: None,
        mss: None,
        cc,
        stack,
        count: None,
        timeout: None,
        mtu: None,
        size: None,
        response_size: None,
        nodelay: w.boolean("nodelay")?.unwrap_or(false),
        ecn: false,
        echo: w.boolean("echo")?.unwrap_or(false),
        rate: None,
        time: None,
        rtt: None,
        sweep: None,
        mp: mp_workload(w, kind, hosts)?,
        xfer: xfer_workload(w, kind)?,
        file: match kind {
            WorkloadKind::Tput => w.size("file", Size(1), Size(1 << 40))?,
            _ => None,
        },
        vc: super::parse_vc::workload(w, kind, db)?,
        ring: super::parse_ring::workload(w, kind)?,
        nfs: super::parse_nfs::workload(w, kind)?,
        x11: super::parse_x11::workload(w, kind)?,
        beside: w.count("beside", 0, 1 << 16)?.map(|b| b as usize),
        together: w.boolean("together")?.unwrap_or(false),
        traffic,
        flow_size: w.size("flow_size", MESSAGES.0, Size(1 << 40))?,
        multipath: match w.get("multipath") {
            Some(_) => Some(super::parse_fabric::multipath(w)?),
            None if w.get("flowlet_gap").is_some() => {
                return Err(w.err(
                    "flowlet_gap",
                    "only meaningful with multipath = \"flowlet\"",
                ));
            }
            None => None,
        },
        ndp: transport == Some("ndp"),
        dcqcn: transport == Some("dcqcn"),
    };
    for (key, range) in SWEEPABLE {
        match w.param(key, *range)? {
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
    super::parse_vc::check(w, &out, db)?;
    Ok(out)
}

/// The `mp` keys of a workload: `ranks` (hosts, at least two), `pattern` (a `weft mp` pattern or
/// an NPB skeleton that exists for that many ranks), `iterations`, `route`; refused on other
/// kinds.
fn mp_workload(w: &Tbl<'_, '_>, kind: WorkloadKind, hosts: &[&str]) -> Result<Option<MpWorkload>> {
    if kind != WorkloadKind::Mp {
        w.refuse_keys(["ranks", "pattern", "iterations", "route"], "mp")?;
        return Ok(None);
    }
    let ranks = w.names("ranks", hosts)?;
    if ranks.len() < 2 {
        return Err(w.err_table("kind = \"mp\" needs `ranks`, at least two hosts (rank 0 first)"));
    }
    let pattern: crate::mp::Pattern = w
        .req_string("pattern")?
        .parse()
        .map_err(|e: String| w.err("pattern", e))?;
    pattern
        .plan(0, ranks.len(), 0)
        .map_err(|e| w.err("pattern", e))?;
    let route = match w.string("route")? {
        Some(r) => r.parse().map_err(|e: String| w.err("route", e))?,
        None => crate::mp::Route::Direct,
    };
    let iterations = w.count("iterations", MP_ITERATIONS.0, MP_ITERATIONS.1)?;
    Ok(Some(MpWorkload {
        ranks,
        pattern,
        iterations,
        route,
    }))
}

/// The keys of a workload of kind `xfer`.
const XFER_KEYS: [&str; 7] = [
    "mode",
    "file",
    "buffer",
    "packet",
    "receivers",
    "stripes",
    "socket_buffer",
];

/// The `xfer` keys of a workload: `mode` (sbtp, the default, or mbtp), `file` (required),
/// `buffer`, `packet`, `receivers` (MBTP only), `stripes`, `socket_buffer`; refused on other
/// kinds (but `file` on a `tput` workload: FTP from disk to disk).
fn xfer_workload(w: &Tbl<'_, '_>, kind: WorkloadKind) -> Result<Option<XferWorkload>> {
    if kind != WorkloadKind::Xfer {
        // `file` is also a `tput` workload's: FTP from disk to disk.
        let others = XFER_KEYS.iter().copied();
        w.refuse_keys(
            others.filter(|&k| !(kind == WorkloadKind::Tput && k == "file")),
            "xfer",
        )?;
        return Ok(None);
    }
    let mode = match w.string("mode")?.as_deref() {
        None | Some("sbtp") => XferMode::Sbtp,
        Some("mbtp") => XferMode::Mbtp,
        Some(_) => return Err(w.err("mode", "expected sbtp or mbtp")),
    };
    let Some(file) = w.size("file", Size(1), Size(1 << 40))? else {
        return Err(w.err_table("kind = \"xfer\" needs `file`, the bytes to move"));
    };
    let buffer = w
        .size("buffer", Size(1), Size(1 << 30))?
        .unwrap_or(Size(1 << 20));
    let packet = w
        .size("packet", Size(1), Size(65_000))?
        .unwrap_or(Size(9000));
    if packet > buffer {
        return Err(w.err("packet", "a datagram cannot be larger than its buffer"));
    }
    let receivers = w.count32("receivers", 1, 64)?;
    if mode == XferMode::Sbtp && receivers.is_some_and(|r| r != 1) {
        return Err(w.err("receivers", "SBTP has one receiver: use mode = \"mbtp\""));
    }
    Ok(Some(XferWorkload {
        mode,
        file,
        buffer,
        packet,
        receivers: receivers.unwrap_or(match mode {
            XferMode::Sbtp => 1,
            XferMode::Mbtp => 5,
        }),
        stripes: w.count32("stripes", 1, 64)?.unwrap_or(4),
        socket_buffer: w
            .size("socket_buffer", Size(1), Size(1 << 30))?
            .unwrap_or(Size(41_600)),
    }))
}

fn check_workload(w: &Tbl<'_, '_>, out: &Workload, switches: &[Switch]) -> Result<()> {
    if out.kind != WorkloadKind::Rr {
        w.refuse_keys(["response_size", "nodelay", "echo", "together"], "rr")?;
    }
    let points = out.expand();
    let sw = match &out.switch {
        Some(n) => switches.iter().find(|s| &s.name == n),
        None => switches.first().filter(|_| switches.len() == 1),
    };
    for (_, p) in &points {
        if let (Some(ports), Some(n)) = (sw.and_then(|s| s.ports), p.input_count())
            && n > ports
        {
            return Err(w.err_table(format!("{n} inputs do not fit a switch of {ports} ports")));
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
        WorkloadKind::Rr => {
            need(!out.from.is_empty(), "`from`, the clients")?;
            need(!out.to.is_empty(), "`to`, the echo servers")?;
            need(
                first.size.is_some(),
                "`size`, the bytes of each request and answer",
            )?;
            if out.echo {
                need(
                    matches!(out.proto, Some(Transport::Tcp { .. })),
                    "`proto = \"tcp\"` for `echo` (a UDP server answers each datagram anyway)",
                )?;
                for (_, p) in &points {
                    if p.response_size.is_some_and(|r| Some(r) != p.size) {
                        return Err(w.err(
                            "response_size",
                            "an echo service answers with the request's own bytes: leave \
                             `response_size` out or make it `size`",
                        ));
                    }
                }
            }
        }
        WorkloadKind::Mp => {
            let sized = out.mp.as_ref().is_some_and(|m| m.pattern.sized());
            need(!sized || first.size.is_some(), "`size` for this pattern")?;
        }
        WorkloadKind::Xfer => {
            need(out.from.len() == 1, "`from`, the one sending host")?;
            need(out.to.len() == 1, "`to`, the one receiving host")?;
        }
        WorkloadKind::Vc => {}
        WorkloadKind::Ring => need(
            first.size.is_some(),
            "`size`, the IP datagram of each frame",
        )?,
        WorkloadKind::Nfs => {
            need(out.from.len() == 1, "`from`, the one client")?;
            need(out.to.len() == 1, "`to`, the one server")?;
            need(
                out.from != out.to,
                "a client and a server on different hosts",
            )?;
        }
        WorkloadKind::X11 => {
            need(
                out.from.len() == 1,
                "`from`, the one renderer (the X client)",
            )?;
            need(out.to.len() == 1, "`to`, the one display (the X server)")?;
            need(
                out.from != out.to,
                "a renderer and a display on different hosts",
            )?;
        }
    }
    Ok(())
}

fn expectation(e: &Tbl<'_, '_>, workloads: &[Workload]) -> Result<Expect> {
    e.check_keys(&[
        "source",
        "select",
        "metric",
        "tolerance",
        "workload",
        "items",
    ])?;
    let source = e.req_string("source")?;
    if source.split('.').any(str::is_empty) {
        return Err(e.err(
            "source",
            "expected a dotted key such as \"gigaswitch.contention_observed_mbps\"",
        ));
    }
    let workload = e.count("workload", 0, u32::MAX.into())?.unwrap_or(0) as usize;
    let Some(w) = workloads.get(workload) else {
        return Err(e.err(
            "workload",
            format!(
                "there is no workload {workload} (the scenario has {})",
                workloads.len()
            ),
        ));
    };
    let tolerance = e
        .number("tolerance", TOLERANCES.0, TOLERANCES.1)?
        .unwrap_or(0.1);
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
    let items = super::parse_check::items(e, w.expand().len(), select.as_ref().map(Vec::len))?;
    Ok(Expect {
        source,
        select,
        metric: e
            .string("metric")?
            .unwrap_or_else(|| w.kind.default_metric().to_string()),
        tolerance,
        workload,
        items,
    })
}
