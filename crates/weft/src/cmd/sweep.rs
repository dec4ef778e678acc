//! `weft sweep PLAN --out DIR`: a grid of runs on this machine's cores or as a Slurm job array,
//! resumable, collected into a table, a CSV file and (with `weft plot DIR`) a chart. The work is
//! in `weft-sweep`; this file parses arguments, checks plans against this command line, and
//! prints.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::CommandFactory;
use weft_sweep::local::{self, LocalOptions};
use weft_sweep::slurm::{self, SlurmOptions};
use weft_sweep::store::{self, Appender};
use weft_sweep::{Commands, Flag, Plan, Run, RunList, SweepDir, Table};

use crate::cli::usage;

/// Arguments of `weft sweep`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// The plan (TOML): a scenario or a command, a [grid] of parameters, and seeds.
    pub plan: Option<PathBuf>,
    /// The sweep directory: plan.json, results.jsonl, results.csv, Slurm files (default
    /// weft-out/sweep-PLANNAME).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Runs at a time on this machine (default: one per core).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Also run again the runs recorded as failed (by default a recorded failure is kept).
    #[arg(long)]
    pub retry_failed: bool,
    /// List the runs (id, seed, parameters) and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Never draw a progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Submit the pending runs to Slurm as a job array instead of running them here.
    #[arg(long)]
    pub slurm: bool,
    /// Runs per array task (default: about a minute of work, from the plan's seconds_per_run or
    /// from timing the first run here).
    #[arg(long, value_name = "N")]
    pub batch: Option<usize>,
    /// Slurm partition (sbatch --partition).
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit of each array task (sbatch --time: 10, 1:00:00, 1-0).
    #[arg(long)]
    pub time: Option<String>,
    /// Memory of each array task (sbatch --mem: 500M, 2G).
    #[arg(long)]
    pub mem: Option<String>,
    /// CPUs of each array task (sbatch --cpus-per-task); a task runs this many runs at a time.
    #[arg(long, value_name = "N")]
    pub cpus_per_task: Option<usize>,
    /// A further sbatch argument, repeatable: --sbatch-arg=--account=abc.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub sbatch_arg: Vec<String>,
    /// The weft binary the array tasks run (default: this one; the nodes must see its path).
    #[arg(long, value_name = "PATH")]
    pub weft: Option<PathBuf>,
    /// Print how far the sweep in DIR is, and its Slurm job's tasks.
    #[arg(long)]
    pub status: bool,
    /// Gather the results (the Slurm tasks' too) into results.jsonl and results.csv, and print
    /// the table.
    #[arg(long)]
    pub collect: bool,
    /// Wait until the sweep's Slurm job has left the queue, then collect.
    #[arg(long)]
    pub wait: bool,
    /// Run one array task of this submission (what a Slurm task does).
    #[arg(long, hide = true, value_name = "JOB_JSON")]
    pub job: Option<PathBuf>,
    /// The array task to run with --job (default: $SLURM_ARRAY_TASK_ID).
    #[arg(long, hide = true, value_name = "K")]
    pub task: Option<usize>,
}

const AFTER_HELP: &str = "\
Plans (see plans/README.md):
  scenario = \"scenarios/ebn-vp26.toml\"   engine = \"model\"   # grid keys: dotted paths
  command = [\"sim\", \"hol\"]                                  # grid keys: the command's flags
  seeds = [1, 2, 3] or { from = 1, to = 5 }
  [grid] key = 1, or [1, 2], or { from = 2, to = 32, step = 2 }, or { from = 1, to = 64, factor = 2 }

A sweep is resumable: runs already recorded in DIR are skipped, an interrupted sweep loses at most
the runs in flight. `weft plot DIR` draws a metric against a parameter.";

/// Runs `weft sweep`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(job) = &args.job {
        return task(job, args.task);
    }
    let out = match (&args.out, &args.plan) {
        (Some(o), _) => o.clone(),
        (None, Some(p)) => default_out(p),
        (None, None) => {
            return Err(usage(
                "give a plan file, or --out DIR for --status, --collect or --wait",
            ));
        }
    };
    let dir = SweepDir::new(out);
    if args.status {
        return status(&dir);
    }
    let Some(plan_path) = &args.plan else {
        if args.wait {
            return wait_and_collect(&dir);
        }
        if args.collect {
            return collect(&dir, None).map(|_| ());
        }
        return Err(usage(
            "give a plan file (or --status, --collect or --wait with --out DIR)",
        ));
    };
    let plan = Plan::load(plan_path, &CliCommands).map_err(|e| usage(e.to_string()))?;
    let list = plan.expand();
    if args.dry_run {
        dry_run(&list);
        return Ok(());
    }
    if args.collect {
        return collect(&dir, Some(&list)).map(|_| ());
    }
    dir.create()?;
    let lock = dir.lock()?;
    dir.write_plan(&list)?;
    let (mut appender, parsed) = Appender::open(&dir.results())?;
    dir.merge_tasks(&mut appender, &parsed.records)?;
    let records = store::read(&dir.results())?.records;
    let pending = list.pending(&records, args.retry_failed);
    let done = list.runs.len() - pending.len();
    eprintln!(
        "sweep: {} runs of {} ({}), {done} already done, {} to run -> {}",
        list.runs.len(),
        list.target.describe(),
        plan.shape(),
        pending.len(),
        dir.root().display()
    );
    if args.slurm {
        if args.jobs.is_some() {
            return Err(usage(
                "--jobs is for runs here; with --slurm give --cpus-per-task",
            ));
        }
        submit(&args, &plan, &dir, &list, pending, &mut appender)?;
        drop(appender);
        drop(lock);
        if args.wait {
            return wait_and_collect(&dir);
        }
        return Ok(());
    }
    if args.wait {
        return Err(usage(
            "--wait waits for a Slurm job: give it with --slurm, or alone with --out DIR",
        ));
    }
    weft_emu::signals::install();
    let opts = LocalOptions {
        exe: self_exe()?,
        jobs: args.jobs.unwrap_or_else(local::all_cores).max(1),
        progress: !args.quiet && std::io::stderr().is_terminal(),
        stopping: &weft_emu::signals::interrupted,
    };
    let outcome = local::run_pending(
        &list.target,
        &pending,
        &mut appender,
        done,
        list.runs.len(),
        &opts,
    )?;
    drop(appender);
    drop(lock);
    eprintln!(
        "sweep: ran {} runs in {:.1} s ({} ok, {} failed)",
        outcome.ok + outcome.failed,
        outcome.elapsed_s,
        outcome.ok,
        outcome.failed
    );
    if outcome.interrupted {
        return Err(anyhow::anyhow!(
            "interrupted: the finished runs are recorded in {}; the same command goes on from there",
            dir.results().display()
        ));
    }
    let table = collect(&dir, Some(&list))?;
    outcome_of(&table, &dir)
}

/// `1 task`, `5 tasks`.
fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn default_out(plan: &Path) -> PathBuf {
    let stem = plan
        .file_stem()
        .map_or("plan".into(), |s| s.to_string_lossy().into_owned());
    Path::new("weft-out").join(format!("sweep-{stem}"))
}

fn self_exe() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("cannot find this weft binary to run the runs with")
}

fn dry_run(list: &RunList) {
    let mut text = format!("{} runs of {}\n", list.runs.len(), list.target.describe());
    for r in &list.runs {
        let params: Vec<String> = list
            .keys
            .iter()
            .map(|k| {
                let v = r.params.get(k).map(weft_sweep::table::param_text);
                format!("{k}={}", v.unwrap_or_default())
            })
            .collect();
        let seed = r.seed.map(|s| format!("seed={s} ")).unwrap_or_default();
        text.push_str(&format!("{}  {seed}{}\n", r.id, params.join(" ")));
    }
    print_out(&text);
}

/// Prints to stdout; a reader that went away (`| head`) is not an error worth a panic.
fn print_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

fn submit(
    args: &Args,
    plan: &Plan,
    dir: &SweepDir,
    list: &RunList,
    mut pending: Vec<Run>,
    appender: &mut Appender,
) -> anyhow::Result<()> {
    if pending.is_empty() {
        eprintln!(
            "sweep: nothing to submit; `weft sweep --collect --out {}` gathers the table",
            dir.root().display()
        );
        return Ok(());
    }
    let exe = match &args.weft {
        Some(w) => std::fs::canonicalize(w).with_context(|| format!("--weft {}", w.display()))?,
        None => self_exe()?,
    };
    // Without a batch size or a hint, the first run is timed here (and its result kept).
    let seconds = match (args.batch, plan.seconds_per_run) {
        (Some(_), _) => 1.0,
        (None, Some(s)) => s,
        (None, None) => {
            let first: Vec<Run> = pending.drain(..1).collect();
            let opts = LocalOptions {
                exe: exe.clone(),
                jobs: 1,
                progress: false,
                stopping: &|| false,
            };
            let o = local::run_pending(&list.target, &first, appender, 0, 1, &opts)?;
            eprintln!("sweep: timed the first run here: {:.2} s", o.elapsed_s);
            o.elapsed_s
        }
    };
    if pending.is_empty() {
        return Ok(());
    }
    let batch = slurm::batch_size(pending.len(), args.batch, seconds);
    let opts = SlurmOptions {
        exe,
        partition: args.partition.clone(),
        time: args.time.clone(),
        mem: args.mem.clone(),
        cpus_per_task: args.cpus_per_task,
        extra: args.sbatch_arg.clone(),
    };
    let (n, sub) = slurm::submit(dir, list, pending, batch, &opts)?;
    eprintln!(
        "sweep: submitted array job {} ({} of up to {} runs, {} runs) from {}",
        sub.job_id,
        plural(sub.tasks, "task"),
        sub.batch,
        sub.runs,
        dir.root().join(format!("slurm-{n}")).display()
    );
    if !args.wait {
        eprintln!(
            "sweep: `weft sweep --status --out {0}` follows it, `weft sweep --wait --out {0}` waits and collects",
            dir.root().display()
        );
    }
    Ok(())
}

/// What one Slurm array task does.
fn task(job: &Path, task: Option<usize>) -> anyhow::Result<()> {
    let k = match task {
        Some(k) => k,
        None => std::env::var("SLURM_ARRAY_TASK_ID")
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| usage("--job needs --task K (or SLURM_ARRAY_TASK_ID)"))?,
    };
    let jobs = std::env::var("SLURM_CPUS_PER_TASK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize)
        .max(1);
    weft_emu::signals::install();
    let o = slurm::run_task(job, k, self_exe()?, jobs, &weft_emu::signals::interrupted)?;
    eprintln!(
        "sweep task {k}: {} ok, {} failed in {:.1} s",
        o.ok, o.failed, o.elapsed_s
    );
    if o.interrupted {
        return Err(anyhow::anyhow!(
            "interrupted; the runs left are run by the next submission"
        ));
    }
    Ok(())
}

fn status(dir: &SweepDir) -> anyhow::Result<()> {
    let list = dir.read_plan()?;
    let (records, warnings) = dir.records()?;
    for w in warnings {
        eprintln!("sweep: {w}");
    }
    let table = Table::new(&list, &records);
    let (ok, failed, pending) = table.counts();
    println!(
        "{}: {} runs of {}: {ok} ok, {failed} failed, {pending} pending",
        dir.root().display(),
        list.runs.len(),
        list.target.describe()
    );
    if let Some((n, sub)) = slurm::latest(dir)? {
        let q = slurm::queue_state(&sub.job_id);
        let queue = match q {
            Ok(q) if q.done() => "no task left in the queue".to_string(),
            Ok(q) => format!("{} tasks running, {} pending", q.running, q.pending),
            Err(e) => format!("queue unknown: {e}"),
        };
        println!(
            "slurm-{n}: array job {} ({} of up to {} runs): {queue}",
            sub.job_id,
            plural(sub.tasks, "task"),
            sub.batch
        );
    }
    Ok(())
}

fn wait_and_collect(dir: &SweepDir) -> anyhow::Result<()> {
    let Some((_, sub)) = slurm::latest(dir)? else {
        return Err(usage(format!(
            "{} has no Slurm submission to wait for",
            dir.root().display()
        )));
    };
    weft_emu::signals::install();
    let chatty = std::io::stderr().is_terminal();
    let mut last = None;
    let finished = slurm::wait(
        &sub.job_id,
        Duration::from_secs(2),
        &weft_emu::signals::interrupted,
        &mut |q| {
            let now = (q.running, q.pending);
            if chatty && last != Some(now) && !q.done() {
                eprintln!(
                    "sweep: array job {}: {} tasks running, {} pending",
                    sub.job_id, q.running, q.pending
                );
            }
            last = Some(now);
        },
    )?;
    if !finished {
        return Err(anyhow::anyhow!(
            "interrupted while waiting; the job goes on (`weft sweep --wait --out {}` waits again)",
            dir.root().display()
        ));
    }
    let list = dir.read_plan()?;
    let table = collect(dir, Some(&list))?;
    outcome_of(&table, dir)
}

/// Merges the Slurm tasks' records into results.jsonl, writes results.csv and prints the table.
fn collect(dir: &SweepDir, list: Option<&RunList>) -> anyhow::Result<Table> {
    let list = match list {
        Some(l) => l.clone(),
        None => dir.read_plan()?,
    };
    let _lock = dir.lock()?;
    let (mut appender, parsed) = Appender::open(&dir.results())?;
    let merged = dir.merge_tasks(&mut appender, &parsed.records)?;
    drop(appender);
    let (records, warnings) = dir.records()?;
    for w in warnings {
        eprintln!("sweep: {w}");
    }
    let table = Table::new(&list, &records);
    weft_report::write_atomic(&dir.csv(), table.to_csv().as_bytes())
        .with_context(|| format!("cannot write {}", dir.csv().display()))?;
    if merged > 0 {
        eprintln!(
            "sweep: collected {merged} results of Slurm tasks into {}",
            dir.results().display()
        );
    }
    if table.stray > 0 {
        eprintln!(
            "sweep: {} results in {} are of runs not in this plan; left out of the table",
            table.stray,
            dir.root().display()
        );
    }
    let (ok, failed, pending) = table.counts();
    print_out(&format!(
        "{}{ok} ok, {failed} failed, {pending} pending; one row per run in {}; `weft plot {}` draws it\n",
        table.summary(6),
        dir.csv().display(),
        dir.root().display()
    ));
    Ok(table)
}

/// Exit 1 when some run failed or has no result.
fn outcome_of(table: &Table, dir: &SweepDir) -> anyhow::Result<()> {
    let (_, failed, pending) = table.counts();
    let first_errors: Vec<String> = table
        .rows
        .iter()
        .filter_map(|r| {
            r.error
                .as_ref()
                .map(|e| format!("  {}: {}", r.id, e.lines().next().unwrap_or("")))
        })
        .take(3)
        .collect();
    for e in &first_errors {
        eprintln!("{e}");
    }
    match (failed, pending) {
        (0, 0) => Ok(()),
        (f, 0) => Err(anyhow::anyhow!(
            "{f} runs failed; their errors are in {}",
            dir.csv().display()
        )),
        (f, p) => Err(anyhow::anyhow!(
            "{p} runs have no result and {f} failed; `weft sweep PLAN --out {}` runs the rest",
            dir.root().display()
        )),
    }
}

/// Where `weft plot` reads a sweep from.
pub(crate) enum SweepSource {
    /// A sweep directory.
    Dir(SweepDir),
    /// A results file on its own.
    Jsonl(PathBuf),
}

/// The sweep `path` names for `weft plot`: a directory, or a `.jsonl` results file.
pub(crate) fn sweep_source(path: &Path) -> Option<SweepSource> {
    if path.is_dir() {
        Some(SweepSource::Dir(SweepDir::new(path)))
    } else if path.extension().is_some_and(|e| e == "jsonl") {
        Some(SweepSource::Jsonl(path.to_path_buf()))
    } else {
        None
    }
}

/// The SVG of a sweep's chart and where it goes by default (`DIR/results.svg`).
pub(crate) fn chart_svg(
    src: &SweepSource,
    spec: &weft_sweep::chart::ChartSpec,
) -> anyhow::Result<(String, PathBuf)> {
    let (table, about, out) = match src {
        SweepSource::Dir(dir) => {
            let (records, warnings) = dir.records()?;
            for w in warnings {
                eprintln!("plot: {w}");
            }
            let (table, about) = match dir.read_plan() {
                Ok(list) => (Table::new(&list, &records), list.target.describe()),
                Err(_) => (
                    Table::from_records(&records),
                    dir.root().display().to_string(),
                ),
            };
            (table, about, dir.root().join("results.svg"))
        }
        SweepSource::Jsonl(path) => {
            let parsed = store::read(path)?;
            let name = path.display().to_string();
            (
                Table::from_records(&parsed.records),
                name,
                path.with_extension("svg"),
            )
        }
    };
    let chart = weft_sweep::chart::chart(&table, spec, &about).map_err(|e| usage(e.to_string()))?;
    let figure = weft_report::plot::sweep::figure(&chart);
    Ok((weft_report::plot::render_svg(&figure), out))
}

/// Checks a command plan against this command line: the command must exist, and the grid's keys
/// must be its flags.
struct CliCommands;

impl Commands for CliCommands {
    fn flags(&self, words: &[String]) -> Result<Option<Vec<Flag>>, String> {
        let mut root = crate::cli::Cli::command();
        root.build();
        let mut here = &root;
        let mut path = vec!["weft".to_string()];
        let mut positional = false;
        for w in words {
            if let Some(sub) = here.find_subcommand(w) {
                here = sub;
                path.push(w.clone());
                continue;
            }
            let has_positional = here.get_positionals().next().is_some();
            let looks_like_file = w.contains('.') || w.contains('/');
            if has_positional && (looks_like_file || !here.has_subcommands()) {
                positional = true;
                break;
            }
            let subs: Vec<&str> = here.get_subcommands().map(|s| s.get_name()).collect();
            return Err(if subs.is_empty() {
                format!("`{}` takes no word {w:?}", path.join(" "))
            } else {
                format!(
                    "`{}` has no {w:?}; it has {}",
                    path.join(" "),
                    subs.join(", ")
                )
            });
        }
        if !positional && here.is_subcommand_required_set() {
            let subs: Vec<&str> = here.get_subcommands().map(|s| s.get_name()).collect();
            return Err(format!(
                "`{}` needs one of {}",
                path.join(" "),
                subs.join(", ")
            ));
        }
        Ok(Some(
            here.get_arguments()
                .filter_map(|a| {
                    Some(Flag {
                        long: a.get_long()?.to_string(),
                        takes_value: a.get_action().takes_values(),
                    })
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(words: &[&str]) -> Result<Vec<String>, String> {
        let w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        CliCommands
            .flags(&w)
            .map(|f| f.unwrap_or_default().into_iter().map(|f| f.long).collect())
    }

    #[test]
    fn commands_resolve_to_their_flags_with_the_global_ones() {
        let hol = flags(&["sim", "hol"]).unwrap();
        for f in ["ports", "slots", "contention", "seed", "json"] {
            assert!(hol.iter().any(|x| x == f), "{f} in {hol:?}");
        }
        let hol_calc = flags(&["calc", "hol"]).unwrap();
        assert!(hol_calc.iter().any(|x| x == "seed") && hol_calc.iter().any(|x| x == "json"));
        let window = flags(&["calc", "window"]).unwrap();
        assert!(!window.iter().any(|x| x == "seed"));
        let run = flags(&["run", "scenarios/ebn-vp26.toml"]).unwrap();
        assert!(run.iter().any(|x| x == "engine"));
        assert!(
            flags(&["sim", "hal"])
                .unwrap_err()
                .contains("has no \"hal\"; it has hol")
        );
        assert!(flags(&["simulate"]).is_err());
        assert!(flags(&["calc"]).unwrap_err().contains("needs one of"));
    }
}
