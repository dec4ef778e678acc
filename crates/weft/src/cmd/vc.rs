//! `weft vc`: plan virtual circuits from a host database (`weft_model::vc`), check a plan, and
//! show how a full mesh grows with the hosts it joins.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use serde_json::json;
use weft_model::vc::{self, HostDb, Plan, Shape};
use weft_report::{Engine, ResultDoc, write_atomic};

/// Arguments of `weft vc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The actions of `weft vc`.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Plan PVCs from a host database: every circuit's hops, every switch's cross-connect table,
    /// every host's bindings; or check an existing plan against the database.
    #[command(after_help = PLAN_HELP)]
    Plan(PlanArgs),
    /// How a full mesh grows: circuits and table entries for the first n hosts, n = 2..N.
    Growth(GrowthArgs),
    /// The connection manager of a scenario's circuits for a running emulation (`weft emu up
    /// SCENARIO --vc-manager SOCKET`): pushes each switch its table whenever it comes back
    /// without it, and prints the time each restore took.
    Manager(super::vc_manager::ManagerArgs),
}

const PLAN_HELP: &str = "\
The database (TOML):
  [[switch]]
  name = \"asx1\"
  [[host]]
  name = \"methuselah\"
  switch = \"asx1\"
  port = 3
  vci = 138        # optional: the VCI naming this host on its peers' links
  site = \"adelaide\" # optional: for --mesh --across-sites
  [[trunk]]
  ends = [\"asx1\", \"asx2\"]
  ports = [1, 1]
  [[vp]]           # optional: a virtual path switched by VPI alone between its ends
  ends = [\"asx1\", \"asx3\"]
  vpi = 5
  pairs = [[\"methuselah\", \"dhpc04\"]]   # optional: the circuits of a bare --pairs

Examples:
  weft vc plan scenarios/hosts/sandia-esc.toml --mesh
  weft vc plan scenarios/hosts/dhpc-ebn.toml --mesh --across-sites --json -o ebn-plan.json
  weft vc plan scenarios/hosts/dhpc-ebn.toml --check ebn-plan.json";

/// Arguments of `weft vc plan`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("shape").args(["mesh", "star", "pairs", "check"]).required(true)))]
pub struct PlanArgs {
    /// The host database (TOML).
    pub hosts: PathBuf,
    /// Every host to every other.
    #[arg(long)]
    pub mesh: bool,
    /// With --mesh: only hosts at different sites (each host's `site`).
    #[arg(long, requires = "mesh")]
    pub across_sites: bool,
    /// Every host to the hub HUB.
    #[arg(long, value_name = "HUB")]
    pub star: Option<String>,
    /// The pairs given (`a-b,c-d`), or without a value the database's `pairs`.
    #[arg(long, value_name = "A-B,...", num_args = 0..=1, value_delimiter = ',', default_missing_value = "")]
    pub pairs: Option<Vec<String>>,
    /// Check the plan in PLAN (JSON from --json) against the database instead of planning.
    #[arg(long, value_name = "PLAN")]
    pub check: Option<PathBuf>,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write the plan as JSON to this file.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `weft vc growth`.
#[derive(Debug, clap::Args)]
pub struct GrowthArgs {
    /// The host database (TOML); without it, `--hosts` hosts round-robin on `--switches`
    /// switches in a line.
    pub hosts_file: Option<PathBuf>,
    /// Hosts of the generated database.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(2..=250), conflicts_with = "hosts_file")]
    pub hosts: u16,
    /// Switches of the generated database.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=64), conflicts_with = "hosts_file")]
    pub switches: u16,
    /// Print the result document as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write the result document to this file (`weft plot` draws it).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Draw the plot into this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// CSV export of the table.
    #[command(flatten)]
    pub csv: crate::output::CsvArg,
}

/// Runs `weft vc`.
pub fn run(args: Args) -> anyhow::Result<()> {
    match args.action {
        Action::Plan(a) => plan(a),
        Action::Growth(a) => growth(a),
        Action::Manager(a) => super::vc_manager::run(a),
    }
}

/// Reads a host database; a bad one is a usage error.
pub(crate) fn load_db(path: &Path) -> anyhow::Result<HostDb> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read host database {}", path.display()))?;
    HostDb::parse(&text, &path.display().to_string()).map_err(|e| crate::cli::usage(e.to_string()))
}

fn shape_of(a: &PlanArgs) -> anyhow::Result<Shape> {
    if let Some(hub) = &a.star {
        return Ok(Shape::Star(hub.clone()));
    }
    if let Some(list) = &a.pairs {
        let mut pairs = Vec::new();
        for p in list.iter().filter(|p| !p.is_empty()) {
            let (x, y) = p.split_once('-').ok_or_else(|| {
                crate::cli::usage(format!("--pairs {p:?}: expected A-B (two host names)"))
            })?;
            pairs.push([x.trim().to_string(), y.trim().to_string()]);
        }
        return Ok(Shape::Pairs(pairs));
    }
    Ok(if a.across_sites {
        Shape::Sites
    } else {
        Shape::Mesh
    })
}

fn plan(a: PlanArgs) -> anyhow::Result<()> {
    let db = load_db(&a.hosts)?;
    if let Some(path) = &a.check {
        return check(&db, path);
    }
    let shape = shape_of(&a)?;
    let p = vc::plan(&db, &shape).map_err(|e| crate::cli::usage(e.to_string()))?;
    let text = plan_json(&p);
    if let Some(out) = &a.output {
        write_atomic(out, text.as_bytes())
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    if a.json {
        super::write_stdout(text.as_bytes())?;
        super::write_stdout(b"\n")
    } else {
        super::write_stdout(plan_text(&p).as_bytes())
    }
}

/// The plan as `--json` prints it: the plan's fields, stamped with weft's version and a kind.
pub(crate) fn plan_json(p: &Plan) -> String {
    let mut v = serde_json::to_value(p).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        let mut head = serde_json::Map::new();
        head.insert("weft".into(), json!(env!("CARGO_PKG_VERSION")));
        head.insert("kind".into(), json!("vc.plan"));
        head.extend(std::mem::take(o));
        *o = head;
    }
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

fn plan_text(p: &Plan) -> String {
    let c = &p.counts;
    let mut s = String::new();
    let shape = match &p.hub {
        Some(h) => format!("star around {h}"),
        None => p.shape.clone(),
    };
    let _ = writeln!(
        s,
        "{shape} of {} hosts on {} switches: {} PVCs ({} one-way VCs), {} cross-connect entries ({} of them VP entries)",
        c.hosts, c.switches, c.pvcs, c.vcs, c.entries, c.vp_entries
    );
    let _ = writeln!(
        s,
        "\n{:<16} {:>10} {:>10}",
        "switch", "VC entries", "VP entries"
    );
    for sw in &c.per_switch {
        let _ = writeln!(
            s,
            "{:<16} {:>10} {:>10}",
            sw.switch, sw.vc_entries, sw.vp_entries
        );
    }
    for t in &p.tables {
        let _ = writeln!(
            s,
            "\ntable of {} (in port VPI/VCI -> out port VPI/VCI):",
            t.switch
        );
        for e in &t.entries {
            let label = |vpi: u8, vci: Option<u16>| match vci {
                Some(v) => format!("{vpi}/{v}"),
                None => format!("{vpi}/*"),
            };
            let _ = writeln!(
                s,
                "  {:>4} {:>9} -> {:>4} {:>9}",
                e.in_port,
                label(e.in_vpi, e.in_vci),
                e.out_port,
                label(e.out_vpi, e.out_vci)
            );
        }
    }
    let _ = writeln!(s, "\nhost bindings (peer VPI/VCI):");
    for h in &p.hosts {
        let peers: Vec<String> = h
            .peers
            .iter()
            .map(|b| format!("{} {}/{}", b.host, b.vpi, b.vci))
            .collect();
        let _ = writeln!(
            s,
            "  {} ({} port {}, named by VCI {}): {}",
            h.host,
            h.switch,
            h.port,
            h.vci,
            if peers.is_empty() {
                "none".to_string()
            } else {
                peers.join(", ")
            }
        );
    }
    s
}

fn check(db: &HostDb, path: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read plan {}", path.display()))?;
    let p: Plan = serde_json::from_str(&text).map_err(|e| {
        crate::cli::usage(format!(
            "{} is not a plan written by `weft vc plan --json`: {e}",
            path.display()
        ))
    })?;
    match p.verify(db) {
        Ok(v) => {
            println!(
                "{}: valid: {} VCs deliver end to end by the tables ({} switch crossings, at most {} per VC), no VPI/VCI is used twice on a link{}",
                path.display(),
                v.vcs,
                v.hops,
                v.longest,
                if v.unused_entries > 0 {
                    format!("; {} table entries are used by no VC", v.unused_entries)
                } else {
                    String::new()
                }
            );
            Ok(())
        }
        Err(problems) => {
            for pr in &problems {
                eprintln!("  {pr}");
            }
            Err(anyhow::anyhow!(
                "{}: {} problem(s) against {}",
                path.display(),
                problems.len(),
                "the database"
            ))
        }
    }
}

fn growth(a: GrowthArgs) -> anyhow::Result<()> {
    let (db, name) = match &a.hosts_file {
        Some(p) => (load_db(p)?, p.display().to_string()),
        None => (
            HostDb::line(usize::from(a.hosts), usize::from(a.switches)),
            format!("{} hosts on {} switches in a line", a.hosts, a.switches),
        ),
    };
    let rows = vc::growth(&db, None).map_err(|e| crate::cli::usage(e.to_string()))?;
    let mut doc = ResultDoc::new("vc.growth", Engine::Model);
    doc.params = json!({
        "database": name,
        "switches": db.switches.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        "shape": "mesh",
    });
    doc.samples = rows
        .iter()
        .map(|r| serde_json::to_value(r).unwrap_or_default())
        .collect();
    if let Some(last) = rows.last() {
        doc.summary =
            json!({ "n": last.n, "pvcs": last.pvcs, "vcs": last.vcs, "entries": last.entries });
    }
    if let Some(p) = &a.output {
        write_atomic(p, doc.to_json_pretty().as_bytes())
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &a.svg {
        let svg = weft_report::plot::svg_for(&doc).map_err(|e| anyhow::anyhow!("{e}"))?;
        write_atomic(p, svg.as_bytes()).with_context(|| format!("cannot write {}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    if a.json {
        println!("{}", doc.to_json_pretty());
    } else {
        let mut s = format!("full mesh of the first n hosts of {name}\n");
        let _ = write!(
            s,
            "{:>4} {:>6} {:>7} {:>8} {:>12}",
            "n", "PVCs", "VCs", "entries", "max/switch"
        );
        for sw in &db.switches {
            let _ = write!(s, " {:>8}", sw.name);
        }
        s.push('\n');
        for r in &rows {
            let _ = write!(
                s,
                "{:>4} {:>6} {:>7} {:>8} {:>12}",
                r.n, r.pvcs, r.vcs, r.entries, r.max_switch_entries
            );
            for e in &r.per_switch {
                let _ = write!(s, " {e:>8}");
            }
            s.push('\n');
        }
        super::write_stdout(s.as_bytes())?;
    }
    a.csv.write(&doc)
}
