//! A sweep as a Slurm job array. The pending runs are written to `DIR/slurm-N/job.json` and packed
//! `batch` to an array task, so that the scheduler sees a few tasks of about a minute each rather
//! than thousands of sub-second jobs; each task runs `weft sweep --job DIR/slurm-N/job.json --task
//! K` on its node, which executes its pack like a local sweep and appends to a file of its own
//! (`task-K.jsonl`: no two nodes ever append to one file). `--collect` merges those files into
//! `results.jsonl`. Everything lives in the sweep directory, which must therefore be on a file
//! system the nodes share, like the `weft` binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::SweepError;
use crate::dir::{SweepDir, read_json};
use crate::local::{self, LocalOptions, Outcome};
use crate::runs::{Run, RunList};
use crate::store::{Appender, Status};

/// The name of every array job a sweep submits.
pub const JOB_NAME: &str = "weft-sweep";

/// Wall time an array task should take when no batch size is given, seconds.
pub const TASK_SECONDS: f64 = 60.0;

/// Most tasks one submission makes (Slurm's default `MaxArraySize` is 1001); a bigger sweep gets
/// bigger packs.
pub const MAX_ARRAY_TASKS: usize = 1000;

/// A submission's runs and packing: `DIR/slurm-N/job.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// The runs it was given (those pending when it was submitted) and what they execute.
    pub list: RunList,
    /// Runs per array task.
    pub batch: usize,
}

impl Job {
    /// Array tasks it needs.
    pub fn tasks(&self) -> usize {
        self.list.runs.len().div_ceil(self.batch.max(1))
    }

    /// The runs of task `k`.
    pub fn pack(&self, k: usize) -> &[Run] {
        let b = self.batch.max(1);
        let start = k.saturating_mul(b).min(self.list.runs.len());
        let end = start.saturating_add(b).min(self.list.runs.len());
        self.list.runs.get(start..end).unwrap_or_default()
    }
}

/// What `sbatch` was told and answered: `DIR/slurm-N/submitted.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Submitted {
    /// The array job's id.
    pub job_id: String,
    /// Array tasks.
    pub tasks: usize,
    /// Runs per task.
    pub batch: usize,
    /// Runs in the submission.
    pub runs: usize,
}

/// Options passed through to `sbatch`, and the binary the tasks run.
#[derive(Clone, Debug, Default)]
pub struct SlurmOptions {
    /// The `weft` binary the tasks execute (on a path the nodes see).
    pub exe: PathBuf,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--time` (Slurm's forms: `10`, `1:00:00`, `1-0`).
    pub time: Option<String>,
    /// `--mem` (Slurm's forms: `1G`, `500M`).
    pub mem: Option<String>,
    /// `--cpus-per-task`: a task runs this many runs at a time.
    pub cpus_per_task: Option<usize>,
    /// Further `sbatch` arguments, as given.
    pub extra: Vec<String>,
}

/// Runs per task: `given`, else enough runs of `seconds_per_run` to fill [`TASK_SECONDS`], at
/// least 1; and raised so that `runs` fit in [`MAX_ARRAY_TASKS`] tasks.
pub fn batch_size(runs: usize, given: Option<usize>, seconds_per_run: f64) -> usize {
    let wanted = given.unwrap_or_else(|| {
        let s = if seconds_per_run.is_finite() && seconds_per_run > 0.0 {
            seconds_per_run
        } else {
            1.0
        };
        ((TASK_SECONDS / s).floor() as usize).max(1)
    });
    wanted.max(1).max(runs.div_ceil(MAX_ARRAY_TASKS))
}

/// Submits `pending` runs of `list` as a job array in a new `DIR/slurm-N`; returns N and what
/// was submitted.
pub fn submit(
    dir: &SweepDir,
    list: &RunList,
    pending: Vec<Run>,
    batch: usize,
    opts: &SlurmOptions,
) -> Result<(u32, Submitted), SweepError> {
    let root = std::fs::canonicalize(dir.root()).map_err(|e| SweepError::io(dir.root(), e))?;
    let number = dir.submissions().last().map_or(1, |(n, _)| n + 1);
    let sub = root.join(format!("slurm-{number}"));
    std::fs::create_dir_all(&sub).map_err(|e| SweepError::io(&sub, e))?;
    let job = Job {
        batch: batch.clamp(1, pending.len().max(1)),
        list: RunList {
            runs: pending,
            ..list.clone()
        },
    };
    let job_path = sub.join("job.json");
    write(
        &job_path,
        serde_json::to_string(&job).unwrap_or_default().as_bytes(),
    )?;
    let cwd = std::env::current_dir().map_err(|e| SweepError::io(Path::new("."), e))?;
    let script = format!(
        "#!/bin/sh\n\
         # Written by weft sweep: array task K runs the K-th pack of the runs in job.json.\n\
         cd {} || exit 1\n\
         exec {} sweep --job {} --task \"$SLURM_ARRAY_TASK_ID\"\n",
        sh_quote(&cwd.display().to_string()),
        sh_quote(&opts.exe.display().to_string()),
        sh_quote(&job_path.display().to_string()),
    );
    let script_path = sub.join("job.sh");
    write(&script_path, script.as_bytes())?;
    let tasks = job.tasks();
    let mut cmd = Command::new("sbatch");
    cmd.arg("--parsable")
        .arg(format!("--array=0-{}", tasks.saturating_sub(1)))
        .arg(format!("--job-name={JOB_NAME}"))
        .arg(format!("--output={}", sub.join("task-%a.log").display()));
    for (flag, v) in [
        ("--partition", &opts.partition),
        ("--time", &opts.time),
        ("--mem", &opts.mem),
    ] {
        if let Some(v) = v {
            cmd.arg(format!("{flag}={v}"));
        }
    }
    if let Some(c) = opts.cpus_per_task {
        cmd.arg(format!("--cpus-per-task={c}"));
    }
    cmd.args(&opts.extra).arg(&script_path);
    let out = output(&mut cmd, "sbatch")?;
    // `--parsable` prints `JOBID` or `JOBID;CLUSTER`.
    let job_id = out
        .split(';')
        .next()
        .map(str::trim)
        .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()))
        .ok_or_else(|| SweepError::Slurm(format!("sbatch answered {out:?}, not a job id")))?
        .to_string();
    let submitted = Submitted {
        job_id,
        tasks,
        batch: job.batch,
        runs: job.list.runs.len(),
    };
    write(
        &sub.join("submitted.json"),
        serde_json::to_string_pretty(&submitted)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok((number, submitted))
}

/// Runs array task `task` of the job at `job_path`: its pack of runs, `jobs` at a time, appended
/// to `task-K.jsonl` beside it. Runs already ok in that file (a requeued task) are skipped.
pub fn run_task(
    job_path: &Path,
    task: usize,
    exe: PathBuf,
    jobs: usize,
    stopping: &(dyn Fn() -> bool + Sync),
) -> Result<Outcome, SweepError> {
    let job: Job = read_json(job_path)?;
    if task >= job.tasks() {
        return Err(SweepError::Slurm(format!(
            "task {task} is beyond the {} tasks of {}",
            job.tasks(),
            job_path.display()
        )));
    }
    let file = job_path.with_file_name(format!("task-{task}.jsonl"));
    let (mut appender, have) = Appender::open(&file)?;
    let done: std::collections::HashSet<&str> = have
        .records
        .iter()
        .filter(|r| r.status == Status::Ok)
        .map(|r| r.id.as_str())
        .collect();
    let pack = job.pack(task);
    let pending: Vec<Run> = pack
        .iter()
        .filter(|r| !done.contains(r.id.as_str()))
        .cloned()
        .collect();
    let opts = LocalOptions {
        exe,
        jobs,
        progress: false,
        stopping,
    };
    local::run_pending(
        &job.list.target,
        &pending,
        &mut appender,
        pack.len() - pending.len(),
        pack.len(),
        &opts,
    )
}

/// The latest submission of a sweep directory: its number and what was submitted.
pub fn latest(dir: &SweepDir) -> Result<Option<(u32, Submitted)>, SweepError> {
    let Some((n, path)) = dir.submissions().pop() else {
        return Ok(None);
    };
    let file = path.join("submitted.json");
    if !file.exists() {
        return Ok(None);
    }
    Ok(Some((n, read_json(&file)?)))
}

/// Array tasks of a job still queued or running, by Slurm state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueState {
    /// Waiting for resources.
    pub pending: usize,
    /// Running or completing.
    pub running: usize,
}

impl QueueState {
    /// Whether no task is left in the queue.
    pub fn done(&self) -> bool {
        self.pending == 0 && self.running == 0
    }
}

/// The job's tasks still in the queue (`squeue`); none once the job has left it.
pub fn queue_state(job_id: &str) -> Result<QueueState, SweepError> {
    let out = Command::new("squeue")
        // By name too: a test cluster that was torn down starts its job ids again from 1.
        .args(["-h", "-r", "-j", job_id, "--name", JOB_NAME, "-o", "%T"])
        .output()
        .map_err(|e| missing("squeue", e))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // A job that finished a while ago is forgotten by the controller.
        if stderr.contains("Invalid job id") {
            return Ok(QueueState::default());
        }
        return Err(SweepError::Slurm(format!(
            "squeue failed: {}",
            stderr.trim()
        )));
    }
    let mut q = QueueState::default();
    for state in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        match state {
            "PENDING" | "CONFIGURING" | "REQUEUED" | "REQUEUE_HOLD" | "RESV_DEL_HOLD" => {
                q.pending += 1
            }
            "RUNNING" | "COMPLETING" | "SUSPENDED" | "STAGE_OUT" | "SIGNALING" | "RESIZING" => {
                q.running += 1
            }
            _ => {}
        }
    }
    Ok(q)
}

/// Waits until job `job_id` has left the queue, polling every `every`, calling `tick` after each
/// poll; gives up (Ok(false)) once `stopping()` is true.
pub fn wait(
    job_id: &str,
    every: Duration,
    stopping: &dyn Fn() -> bool,
    tick: &mut dyn FnMut(&QueueState),
) -> Result<bool, SweepError> {
    loop {
        let q = queue_state(job_id)?;
        tick(&q);
        if q.done() {
            return Ok(true);
        }
        let mut slept = Duration::ZERO;
        while slept < every {
            if stopping() {
                return Ok(false);
            }
            let step = Duration::from_millis(100);
            std::thread::sleep(step);
            slept += step;
        }
    }
}

fn output(cmd: &mut Command, name: &str) -> Result<String, SweepError> {
    let out = cmd.output().map_err(|e| missing(name, e))?;
    if !out.status.success() {
        return Err(SweepError::Slurm(format!(
            "{name} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn missing(name: &str, e: std::io::Error) -> SweepError {
    if e.kind() == std::io::ErrorKind::NotFound {
        SweepError::Slurm(format!(
            "{name} not found: this is not a Slurm submit host (scripts/slurm-local starts a \
             one-node Slurm on this machine)"
        ))
    } else {
        SweepError::Slurm(format!("cannot run {name}: {e}"))
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    weft_report::write_atomic(path, bytes).map_err(|e| SweepError::io(path, e))
}

/// `s` as one word for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Target;
    use serde_json::Map;

    #[test]
    fn batches_fill_a_minute_and_fit_the_array_limit() {
        assert_eq!(batch_size(200, None, 0.05), 1200);
        assert_eq!(batch_size(200, None, 120.0), 1);
        assert_eq!(batch_size(200, Some(40), 0.05), 40);
        assert_eq!(batch_size(1_000_000, Some(1), 1.0), 1000);
        assert_eq!(batch_size(10, None, f64::NAN), 60);
    }

    #[test]
    fn packs_cover_every_run_once() {
        let runs: Vec<Run> = (0..10)
            .map(|i| Run {
                id: format!("{i}"),
                params: Map::new(),
                seed: Some(i),
            })
            .collect();
        let job = Job {
            list: RunList {
                plan: "p".into(),
                target: Target::Command {
                    words: vec!["sim".into()],
                },
                keys: vec![],
                runs,
            },
            batch: 4,
        };
        assert_eq!(job.tasks(), 3);
        let all: Vec<&str> = (0..3)
            .flat_map(|k| job.pack(k))
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(all, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
        assert!(job.pack(3).is_empty());
    }

    #[test]
    fn quotes_for_the_shell() {
        assert_eq!(sh_quote("/a b/it's"), "'/a b/it'\\''s'");
    }
}
