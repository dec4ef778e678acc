//! `weft emu`: bring a scenario up as namespaced hosts around weft's userspace switch, run commands
//! or workloads in it, and take it down (needs root; without it, exit 2).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use serde_json::json;
use weft_emu::scenario::{self, ScenarioOptions};
use weft_emu::{EmuError, Emulation, UpOptions, netns, signals, state};
use weft_model::Scenario;
use weft_report::{Engine, ResultDoc, write_atomic};

/// Arguments of `weft emu`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The actions of `weft emu`.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Bring a scenario's hosts up and run the switch until interrupted (Ctrl-C tears down).
    Up {
        /// Scenario file (TOML).
        file: PathBuf,
        /// Write a capture per link into this directory (pcap; SunATM for ATM links).
        #[arg(long)]
        capture: Option<PathBuf>,
        /// Save CPU for a long-lived emulation: the switch sleeps between frames instead of
        /// busy-polling, and the CPUs may halt. Emulated timing then carries the machine's
        /// wake-up latency (0.1-1 ms on a virtual machine).
        #[arg(long)]
        low_cpu: bool,
        /// Return once the emulation is up and print its run id on stdout; the switch keeps
        /// running in the background until `weft emu down ID` (`weft emu wait ID` blocks until
        /// then). Its messages go to /run/weft/emu/ID.log.
        #[arg(long)]
        detach: bool,
        /// Internal: set on the background process of --detach (print the run id on stdout
        /// once up).
        #[arg(long, hide = true)]
        detached_child: bool,
        /// The connection manager of the switches' circuit tables.
        #[command(flatten)]
        managed: crate::cmd::vc_manager::ManagedArgs,
    },
    /// Fail a switch of a running emulation whose tables come from a connection manager
    /// (`weft emu up --vc-manager`): its table is cleared and it stays away from the manager for
    /// the time given, then comes back empty; waits until the manager has restored its table
    /// and prints the restore time.
    Fail {
        /// The switch's name.
        switch: String,
        /// How long it stays down.
        #[arg(long = "for", default_value = "1s", value_parser = crate::cmd::bounds::duration("0s", "1h"))]
        down: weft_model::Duration,
        /// Run id; needed only when several runs are up.
        #[arg(long)]
        run: Option<String>,
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a command inside a host of a running emulation (`ip netns exec`).
    Exec {
        /// Host name.
        host: String,
        /// Run id (from `weft emu list`); needed only when several runs are up.
        #[arg(long)]
        run: Option<String>,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        cmd: Vec<String>,
    },
    /// Bring a scenario up, run its workloads (or the given commands), collect results, tear down.
    Run {
        /// Scenario file (TOML).
        file: PathBuf,
        /// Cap every workload at this duration (e.g. "3s"); real time is spent.
        #[arg(long, value_parser = crate::cmd::bounds::duration("1ms", "30d"))]
        time: Option<weft_model::Duration>,
        /// Instead of the scenario's workloads, run `HOST:COMMAND` (repeatable, in order; a
        /// command ending in `&` runs in the background until the others finish).
        #[arg(long = "exec", value_name = "HOST:COMMAND")]
        exec: Vec<String>,
        /// Write a capture per link into this directory.
        #[arg(long)]
        capture: Option<PathBuf>,
        /// Print the result document as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Write the result document to this file.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// CSV export of the workloads' samples.
        #[command(flatten)]
        csv: crate::output::CsvArg,
    },
    /// Stop a running emulation, or with --all stop every running emulation of this machine
    /// and remove the leftovers of crashed runs.
    Down {
        /// Run id; needed only when several runs are up.
        #[arg(conflicts_with = "run")]
        id: Option<String>,
        /// Run id (the same as the positional ID).
        #[arg(long)]
        run: Option<String>,
        /// Stop every running emulation (saying which), then remove every namespace of runs
        /// whose owner has died.
        #[arg(long)]
        all: bool,
    },
    /// Block until a running emulation ends (after `weft emu up --detach`): exit 0 once it has
    /// torn down, 1 if its owner died and left namespaces behind.
    Wait {
        /// Run id; needed only when several runs are up.
        #[arg(conflicts_with = "run")]
        id: Option<String>,
        /// Run id (the same as the positional ID).
        #[arg(long)]
        run: Option<String>,
    },
    /// List running emulations and leftovers.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `weft emu`.
pub fn run(args: Args) -> anyhow::Result<()> {
    match args.action {
        Action::List { json } => list(json),
        action => {
            if let Err(EmuError::Unsupported(why)) = netns::preflight() {
                return Err(crate::cli::usage(format!("weft emu: {why}")));
            }
            match action {
                Action::Up {
                    file,
                    capture,
                    low_cpu,
                    detach,
                    detached_child,
                    managed,
                } => {
                    if detach {
                        up_detached(&file, capture.as_deref(), low_cpu, &managed)
                    } else {
                        up(&file, capture, low_cpu, detached_child, &managed)
                    }
                }
                Action::Fail {
                    switch,
                    down,
                    run,
                    json,
                } => fail(&switch, down, run.as_deref(), json),
                Action::Exec { host, run, cmd } => exec(&host, run.as_deref(), &cmd),
                Action::Run {
                    file,
                    time,
                    exec,
                    capture,
                    json,
                    output,
                    csv,
                } => {
                    let doc = run_file(&file, time, &exec, capture, json, output.as_deref())?;
                    csv.write(&doc)
                }
                Action::Down { id, run, all } => down(id.or(run).as_deref(), all),
                Action::Wait { id, run } => wait(id.or(run).as_deref()),
                Action::List { .. } => Ok(()),
            }
        }
    }
}

fn load(file: &Path) -> anyhow::Result<Scenario> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read scenario {}", file.display()))?;
    Scenario::parse(&text, &file.display().to_string())
        .map_err(|e| crate::cli::usage(e.to_string()))
}

fn up(
    file: &Path,
    capture: Option<PathBuf>,
    low_cpu: bool,
    detached_child: bool,
    managed: &crate::cmd::vc_manager::ManagedArgs,
) -> anyhow::Result<()> {
    let s = load(file)?;
    let (topo, notes) = scenario::topology(&s, s.seed)?;
    signals::install();
    if let Some(d) = &capture {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let mut opts = UpOptions {
        capture_dir: capture,
        source: file.display().to_string(),
        vc_manager: managed.link()?,
        ..Default::default()
    };
    if low_cpu {
        opts.driver.busy_poll_ns = 0;
        opts.driver.keep_awake = false;
    }
    let emu = Emulation::up(&topo, &opts)?;
    eprintln!(
        "weft emu: run {} is up (switch namespace {})",
        emu.run_id(),
        emu.switch_ns()
    );
    for n in &notes {
        eprintln!("  note: {n}");
    }
    if let Some(w) = &emu.offload_warning {
        eprintln!("  warning: {w}");
    }
    for h in emu.hosts() {
        eprintln!(
            "  {:<12} {:<15} mtu {:<6} netns {}",
            h.name, h.addr, h.mtu, h.ns
        );
    }
    eprintln!(
        "  weft emu exec HOST -- CMD...   runs a command in a host; Ctrl-C or `weft emu down` stops"
    );
    if detached_child {
        // The detaching parent reads this line, prints it and exits; nothing else is written
        // to stdout (the pipe is closed from then on).
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", emu.run_id())
            .and_then(|()| out.flush())
            .context("telling the detaching process the run id")?;
    }
    while !signals::interrupted() && emu.switch_running() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let report = emu.down()?;
    eprintln!(
        "weft emu: down; switch lag p50 {} us p99 {} us max {} us over {} frames",
        report.lag.p50_ns / 1000,
        report.lag.p99_ns / 1000,
        report.lag.max_ns / 1000,
        report.lag.count
    );
    Ok(())
}

/// Starts `weft emu up` again as a background process in its own process group (so that the
/// terminal's Ctrl-C does not reach it), waits until it prints its run id, prints that and
/// returns. If the background process fails first, its messages and exit status are reported.
fn up_detached(
    file: &Path,
    capture: Option<&Path>,
    low_cpu: bool,
    managed: &crate::cmd::vc_manager::ManagedArgs,
) -> anyhow::Result<()> {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let state_dir = state::state_dir();
    std::fs::create_dir_all(&state_dir)
        .with_context(|| format!("creating {}", state_dir.display()))?;
    let early_log = state_dir.join(format!("up-{}.log", std::process::id()));
    let log = std::fs::File::create(&early_log)
        .with_context(|| format!("creating {}", early_log.display()))?;
    let exe = std::env::current_exe().context("finding weft's own executable")?;
    let mut cmd = Command::new(exe);
    cmd.args(["emu", "up", "--detached-child"]).arg(file);
    if let Some(c) = capture {
        cmd.arg("--capture").arg(c);
    }
    if low_cpu {
        cmd.arg("--low-cpu");
    }
    if let (Some(m), Some(k)) = (&managed.vc_manager, &managed.key_file) {
        cmd.arg("--vc-manager").arg(m).arg("--key-file").arg(k);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("starting the background emulation")?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .context("reading the run id from the background emulation")?;
    }
    let id = line.trim();
    if id.is_empty() {
        let status = child
            .wait()
            .context("waiting for the background emulation")?;
        let messages = std::fs::read_to_string(&early_log).unwrap_or_default();
        let _ = std::fs::remove_file(&early_log);
        eprint!("{messages}");
        return Err(anyhow::anyhow!(
            "the background emulation stopped before it was up ({status})"
        ));
    }
    let log_path = state::RunRecord::log_path(id);
    std::fs::rename(&early_log, &log_path)
        .with_context(|| format!("renaming {} to {}", early_log.display(), log_path.display()))?;
    eprint!("{}", std::fs::read_to_string(&log_path).unwrap_or_default());
    eprintln!(
        "weft emu: run {id} runs in the background (pid {}); `weft emu down {id}` stops it, \
         `weft emu wait {id}` waits for it; messages in {}",
        child.id(),
        log_path.display()
    );
    println!("{id}");
    Ok(())
}

/// Prints and removes the log of a detached run that has ended (nothing for a foreground run).
fn print_final_log(run_id: &str) {
    let p = state::RunRecord::log_path(run_id);
    if let Ok(text) = std::fs::read_to_string(&p) {
        // The bring-up messages were printed by `up --detach`; what follows them is news.
        if let Some(last) = text.lines().rev().find(|l| l.starts_with("weft emu: down")) {
            eprintln!("{last}");
        }
        let _ = std::fs::remove_file(&p);
    }
}

fn wait(run: Option<&str>) -> anyhow::Result<()> {
    let rec = state::find_live(run).map_err(|e| crate::cli::usage(e.to_string()))?;
    let record = state::RunRecord::path(&rec.run_id);
    while record.exists() && rec.alive() {
        std::thread::sleep(Duration::from_millis(100));
    }
    if record.exists() {
        return Err(anyhow::anyhow!(
            "run {} ended without tearing down (pid {} died); `weft emu down --all` removes its \
             leftovers",
            rec.run_id,
            rec.pid
        ));
    }
    print_final_log(&rec.run_id);
    eprintln!("weft emu: run {} has ended", rec.run_id);
    Ok(())
}

/// `weft emu fail`: fails a switch under the manager and reports its restore.
fn fail(
    switch: &str,
    down: weft_model::Duration,
    run: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    let rec = state::find_live(run).map_err(|e| crate::cli::usage(e.to_string()))?;
    let r = weft_emu::vc_agent::fail(&rec.run_id, switch, down.as_nanos())?;
    if json {
        let text = serde_json::to_string(&r).unwrap_or_default();
        return super::write_stdout(format!("{text}\n").as_bytes());
    }
    eprintln!(
        "weft emu: {} was down {:.3} s; the manager restored its {} entries and {} contracts {:.3} ms after it came back",
        r.switch,
        r.down_ns as f64 / 1e9,
        r.entries,
        r.contracts,
        r.restore_ns as f64 / 1e6
    );
    Ok(())
}

fn exec(host: &str, run: Option<&str>, cmd: &[String]) -> anyhow::Result<()> {
    let rec = state::find_live(run).map_err(|e| crate::cli::usage(e.to_string()))?;
    let h = rec.hosts.iter().find(|h| h.name == host).ok_or_else(|| {
        let names: Vec<&str> = rec.hosts.iter().map(|h| h.name.as_str()).collect();
        crate::cli::usage(format!(
            "no host {host:?} in run {} (hosts: {})",
            rec.run_id,
            names.join(", ")
        ))
    })?;
    let status = Command::new("ip")
        .args(["netns", "exec", &h.ns])
        .args(cmd)
        .status()
        .context("running ip netns exec")?;
    match status.code() {
        Some(0) => Ok(()),
        Some(c) => Err(anyhow::anyhow!("{} exited with status {c}", cmd.join(" "))),
        None => Err(anyhow::anyhow!("{} was killed by a signal", cmd.join(" "))),
    }
}

fn run_file(
    file: &Path,
    time: Option<weft_model::Duration>,
    exec: &[String],
    capture: Option<PathBuf>,
    json_out: bool,
    output: Option<&Path>,
) -> anyhow::Result<ResultDoc> {
    let s = load(file)?;
    signals::install();
    let progress = crate::progress::Progress::spinner("emu run");
    progress.message(s.name.clone());
    let doc = if exec.is_empty() {
        let opts = ScenarioOptions {
            seed: None,
            max_time: time.map(Into::into),
            capture_dir: capture,
        };
        scenario::run(&s, &opts)?
    } else {
        run_commands(&s, file, exec, capture)?
    };
    progress.finish();
    if let Some(p) = output {
        write_atomic(p, doc.to_json_pretty().as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if json_out {
        println!("{}", doc.to_json_pretty());
    } else {
        println!("{}", human(&doc));
    }
    Ok(doc)
}

fn run_commands(
    s: &Scenario,
    file: &Path,
    exec: &[String],
    capture: Option<PathBuf>,
) -> anyhow::Result<ResultDoc> {
    let mut steps = Vec::new();
    for e in exec {
        let (host, cmd) = e
            .split_once(':')
            .ok_or_else(|| crate::cli::usage(format!("--exec {e:?}: expected HOST:COMMAND")))?;
        let cmd = cmd.trim();
        let (cmd, background) = match cmd.strip_suffix('&') {
            Some(c) => (c.trim(), true),
            None => (cmd, false),
        };
        steps.push((host.trim().to_string(), cmd.to_string(), background));
    }
    let (topo, notes) = scenario::topology(s, s.seed)?;
    if let Some(d) = &capture {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let opts = UpOptions {
        capture_dir: capture,
        source: file.display().to_string(),
        ..Default::default()
    };
    let emu = Emulation::up(&topo, &opts)?;
    let mut doc = ResultDoc::new("emu.exec", Engine::Emu);
    doc.params = json!({ "scenario": s.name, "topology": topo, "notes": notes });
    let mut background = Vec::new();
    let mut failure = None;
    for (host, cmd, bg) in &steps {
        if signals::interrupted() {
            failure = Some(anyhow::anyhow!("interrupted"));
            break;
        }
        let mut c = emu.command(host, "sh", &["-c".to_string(), cmd.clone()])?;
        if *bg {
            c.stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            background.push(c.spawn().with_context(|| format!("starting {cmd}"))?);
            std::thread::sleep(Duration::from_millis(300));
            continue;
        }
        let out = c.output().with_context(|| format!("running {cmd}"))?;
        doc.samples.push(json!({
            "host": host, "command": cmd, "status": out.status.code(),
            "stdout": String::from_utf8_lossy(&out.stdout), "stderr": String::from_utf8_lossy(&out.stderr),
        }));
        if !out.status.success() {
            failure = Some(anyhow::anyhow!("{host}: `{cmd}` failed"));
            break;
        }
    }
    for mut b in background {
        let _ = b.kill();
        let _ = b.wait();
    }
    let report = emu.down()?;
    doc.summary = json!({ "switch": report });
    match failure {
        Some(e) => Err(e),
        None => Ok(doc),
    }
}

fn human(doc: &ResultDoc) -> String {
    let mut out = String::new();
    if doc.kind == "emu.exec" {
        for s in &doc.samples {
            out.push_str(&format!(
                "== {} $ {}\n{}",
                s["host"].as_str().unwrap_or(""),
                s["command"].as_str().unwrap_or(""),
                s["stdout"].as_str().unwrap_or("")
            ));
        }
        return out;
    }
    out.push_str(&format!("{} (emu)\n", doc.kind));
    for n in doc.params["notes"].as_array().into_iter().flatten() {
        out.push_str(&format!("  note: {}\n", n.as_str().unwrap_or("")));
    }
    for s in &doc.samples {
        let mut line = format!("  workload {} point {}:", s["workload"], s["point"]);
        for k in [
            "goodput_mbps",
            "payload_kib_s",
            "cell_loss",
            "frame_goodput",
        ] {
            if let Some(v) = s[k].as_f64() {
                line.push_str(&format!(" {k}={v:.3}"));
            }
        }
        if let Some(sw) = s.get("switch") {
            line.push_str(&format!(" lag_p99_us={}", sw["lag_p99_us"]));
        }
        for n in s["notes"].as_array().into_iter().flatten() {
            line.push_str(&format!(" [{}]", n.as_str().unwrap_or("")));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn down(run: Option<&str>, all: bool) -> anyhow::Result<()> {
    if all {
        stop_all();
        let removed = state::remove_leftovers();
        eprintln!(
            "weft emu: removed {} leftover namespace(s){}",
            removed.len(),
            if removed.is_empty() {
                String::new()
            } else {
                format!(": {}", removed.join(", "))
            }
        );
        return Ok(());
    }
    let rec = state::find_live(run).map_err(|e| crate::cli::usage(e.to_string()))?;
    if !rec.terminate()? {
        return Err(anyhow::anyhow!(
            "run {} has ended (its process {} is gone); `weft emu down --all` removes what it left",
            rec.run_id,
            rec.pid
        ));
    }
    for _ in 0..100 {
        if !state::RunRecord::path(&rec.run_id).exists() {
            print_final_log(&rec.run_id);
            eprintln!("weft emu: run {} is down", rec.run_id);
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(anyhow::anyhow!(
        "run {} (pid {}) did not stop within 10 s; `weft emu down --all` after it exits removes its leftovers",
        rec.run_id,
        rec.pid
    ))
}

/// Stops every live run (SIGTERM to its own process, which tears its emulation down) and waits
/// up to 10 s for them all, saying what it stopped; a run that does not stop is killed, and its
/// leftovers are then removed with the others'.
fn stop_all() {
    let mut stopping = Vec::new();
    for rec in state::runs().into_iter().filter(state::RunRecord::alive) {
        match rec.terminate() {
            Ok(true) => stopping.push(rec),
            Ok(false) => {}
            Err(e) => eprintln!("weft emu: {e}"),
        }
    }
    let start = std::time::Instant::now();
    while !stopping.is_empty() {
        stopping.retain(|rec| {
            let gone = !state::RunRecord::path(&rec.run_id).exists() || !rec.alive();
            if gone {
                print_final_log(&rec.run_id);
                eprintln!(
                    "weft emu: stopped run {} (pid {}, {})",
                    rec.run_id, rec.pid, rec.source
                );
            }
            !gone
        });
        if start.elapsed() > Duration::from_secs(10) {
            for rec in &stopping {
                rec.kill();
                eprintln!(
                    "weft emu: run {} (pid {}) did not stop within 10 s: killed; its namespaces \
                     are removed as leftovers",
                    rec.run_id, rec.pid
                );
            }
            std::thread::sleep(Duration::from_millis(200));
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn list(json_out: bool) -> anyhow::Result<()> {
    let runs = state::runs();
    let namespaces = netns::list_namespaces();
    let leftovers: Vec<&String> = namespaces
        .iter()
        .filter(|n| {
            netns::run_id_of(n).is_some_and(|id| !runs.iter().any(|r| r.run_id == id && r.alive()))
        })
        .collect();
    if json_out {
        let v = json!({
            "runs": runs.iter().map(|r| json!({ "run_id": r.run_id, "pid": r.pid, "guard_pid": r.guard_pid, "alive": r.alive(), "source": r.source, "hosts": r.hosts })).collect::<Vec<_>>(),
            "leftovers": leftovers,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    if runs.is_empty() && leftovers.is_empty() {
        println!("no emulations");
    }
    for r in &runs {
        let hosts: Vec<String> = r
            .hosts
            .iter()
            .map(|h| format!("{}={}", h.name, h.addr))
            .collect();
        println!(
            "{}  pid {}{}  {}  {}",
            r.run_id,
            r.pid,
            if r.alive() { "" } else { " (dead)" },
            r.source,
            hosts.join(" ")
        );
    }
    for l in leftovers {
        println!("leftover namespace {l} (remove with `weft emu down --all`)");
    }
    Ok(())
}
