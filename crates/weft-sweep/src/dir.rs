//! The sweep directory (`--out DIR`), which may be on a file system shared with a cluster:
//!
//! ```text
//! DIR/plan.json              every run of the plan (ids, parameters, seeds) and what they execute
//! DIR/results.jsonl          one record per finished run, appended by the local sweep and by
//!                            --collect (from the Slurm tasks' files)
//! DIR/results.csv            the table: one row per run, parameters and metrics as columns
//! DIR/.lock                  held by the one process writing results.jsonl
//! DIR/slurm-N/job.json       submission N: the runs it was given and how they are packed
//! DIR/slurm-N/job.sh         its batch script; submitted.json its job id
//! DIR/slurm-N/task-K.jsonl   records written by array task K (one writer per file)
//! DIR/slurm-N/task-K.log     that task's stdout and stderr
//! ```

use std::collections::HashSet;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::SweepError;
use crate::runs::RunList;
use crate::store::{self, Appender, Record, Status};

/// A sweep directory.
#[derive(Clone, Debug)]
pub struct SweepDir {
    root: PathBuf,
}

/// The directory's lock, held until dropped.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl SweepDir {
    /// The sweep directory at `root` (not created yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        SweepDir { root: root.into() }
    }

    /// Its path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates it if needed.
    pub fn create(&self) -> Result<(), SweepError> {
        std::fs::create_dir_all(&self.root).map_err(|e| SweepError::io(&self.root, e))
    }

    /// `results.jsonl`.
    pub fn results(&self) -> PathBuf {
        self.root.join("results.jsonl")
    }

    /// `results.csv`.
    pub fn csv(&self) -> PathBuf {
        self.root.join("results.csv")
    }

    /// `plan.json`.
    pub fn plan_path(&self) -> PathBuf {
        self.root.join("plan.json")
    }

    /// Writes `plan.json` (atomically).
    pub fn write_plan(&self, list: &RunList) -> Result<(), SweepError> {
        let path = self.plan_path();
        let text = serde_json::to_string(list).unwrap_or_default();
        weft_report::write_atomic(&path, text.as_bytes()).map_err(|e| SweepError::io(&path, e))
    }

    /// Reads `plan.json`.
    pub fn read_plan(&self) -> Result<RunList, SweepError> {
        read_json(&self.plan_path()).map_err(|e| match e {
            SweepError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                SweepError::Nothing(format!(
                    "{} holds no sweep (no plan.json): run `weft sweep PLAN --out {}` first",
                    self.root.display(),
                    self.root.display()
                ))
            }
            other => other,
        })
    }

    /// Takes the lock that makes this process the only writer of `results.jsonl`.
    pub fn lock(&self) -> Result<DirLock, SweepError> {
        let path = self.root.join(".lock");
        let file = File::create(&path).map_err(|e| SweepError::io(&path, e))?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            return Err(if err.kind() == std::io::ErrorKind::WouldBlock {
                SweepError::Busy(self.root.display().to_string())
            } else {
                SweepError::io(&path, err)
            });
        }
        Ok(DirLock { _file: file })
    }

    /// The Slurm submissions, `(number, directory)`, oldest first.
    pub fn submissions(&self) -> Vec<(u32, PathBuf)> {
        let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let n: u32 = name.strip_prefix("slurm-")?.parse().ok()?;
                e.path().is_dir().then(|| (n, e.path()))
            })
            .collect();
        out.sort_by_key(|(n, _)| *n);
        out
    }

    /// The record files of every Slurm task, in submission and task order.
    pub fn task_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (_, dir) in self.submissions() {
            let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let k = name
                        .strip_prefix("task-")?
                        .strip_suffix(".jsonl")?
                        .parse()
                        .ok()?;
                    Some((k, e.path()))
                })
                .collect();
            files.sort_by_key(|(k, _)| *k);
            out.extend(files.into_iter().map(|(_, p)| p));
        }
        out
    }

    /// Every record of the sweep: `results.jsonl`, then the Slurm tasks' files; and a warning
    /// for each line that is not a record.
    pub fn records(&self) -> Result<(Vec<Record>, Vec<String>), SweepError> {
        let mut records = Vec::new();
        let mut warnings = Vec::new();
        for path in std::iter::once(self.results()).chain(self.task_files()) {
            let parsed = store::read(&path)?;
            for n in parsed.bad_lines {
                warnings.push(format!(
                    "{} line {n} is not a result record; left out",
                    path.display()
                ));
            }
            records.extend(parsed.records);
        }
        Ok((records, warnings))
    }

    /// Appends to `results.jsonl` (through `appender`, which holds it) the records of the Slurm
    /// tasks that it lacks: those of ids it has no record of, and ok ones of ids it has only as
    /// failed. Returns how many were added.
    pub fn merge_tasks(
        &self,
        appender: &mut Appender,
        have: &[Record],
    ) -> Result<usize, SweepError> {
        let mut ok: HashSet<String> = have
            .iter()
            .filter(|r| r.status == Status::Ok)
            .map(|r| r.id.clone())
            .collect();
        let mut seen: HashSet<String> = have.iter().map(|r| r.id.clone()).collect();
        let mut added = 0;
        for path in self.task_files() {
            for r in store::read(&path)?.records {
                let wanted = match r.status {
                    Status::Ok => !ok.contains(&r.id),
                    Status::Failed => !seen.contains(&r.id),
                };
                if wanted {
                    appender.append(&r)?;
                    added += 1;
                    if r.status == Status::Ok {
                        ok.insert(r.id.clone());
                    }
                    seen.insert(r.id.clone());
                }
            }
        }
        Ok(added)
    }
}

/// Reads a JSON file written by the sweep.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, SweepError> {
    let text = std::fs::read_to_string(path).map_err(|e| SweepError::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| SweepError::Corrupt {
        path: path.display().to_string(),
        message: format!("not what weft sweep writes: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let d = SweepDir::new(tmp.path());
        let held = d.lock().unwrap();
        assert!(matches!(d.lock(), Err(SweepError::Busy(_))));
        drop(held);
        assert!(d.lock().is_ok());
    }

    #[test]
    fn no_plan_says_what_to_do() {
        let tmp = tempfile::tempdir().unwrap();
        let e = SweepDir::new(tmp.path()).read_plan().unwrap_err();
        assert!(e.to_string().contains("holds no sweep"), "{e}");
    }
}
