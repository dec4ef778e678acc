//! Run records in `/run/weft/emu/<id>.json`: which process owns which namespaces, so that
//! `weft emu list` can show runs, `weft emu exec` can find a host, and `weft emu down --all` can
//! tell leftovers of crashed runs (owner gone) from live ones.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::EmuError;
use crate::netns;

/// Directory of run records.
pub const STATE_DIR: &str = "/run/weft/emu";

/// The environment variable that puts run records elsewhere than [`STATE_DIR`] (tests: a
/// `weft emu down --all` that sees only the runs it was told about).
pub const STATE_DIR_ENV: &str = "WEFT_EMU_STATE_DIR";

/// The directory of run records: `$WEFT_EMU_STATE_DIR`, else [`STATE_DIR`].
pub fn state_dir() -> PathBuf {
    std::env::var_os(STATE_DIR_ENV)
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from(STATE_DIR), PathBuf::from)
}

/// Whether records are kept elsewhere than [`STATE_DIR`]: then namespaces no record of that
/// directory names are another's, never leftovers.
fn state_dir_overridden() -> bool {
    state_dir() != Path::new(STATE_DIR)
}

/// One host of a recorded run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct HostRecord {
    /// Host name in the topology.
    pub name: String,
    /// Its namespace.
    pub ns: String,
    /// Its address.
    pub addr: String,
}

/// A recorded run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    /// Run id (6 hex digits).
    pub run_id: String,
    /// Process that owns the run (the switch runs in it).
    pub pid: u32,
    /// When that process started (clock ticks since boot, `weft_sys::process::start_time`):
    /// with `pid`, names the owner even after its id is reused. `None` in records of older
    /// builds.
    #[serde(default)]
    pub pid_start: Option<u64>,
    /// The guard that removes the run's namespaces if the owner dies ([`crate::guard`]);
    /// `None` if none could be started, and in records of older builds.
    #[serde(default)]
    pub guard_pid: Option<u32>,
    /// The switch's namespace.
    pub switch_ns: String,
    /// Hosts.
    pub hosts: Vec<HostRecord>,
    /// What was brought up (a scenario path, or a description).
    pub source: String,
}

impl RunRecord {
    /// Where this record lives.
    pub fn path(run_id: &str) -> PathBuf {
        state_dir().join(format!("{run_id}.json"))
    }

    /// Where a detached run (`weft emu up --detach`) writes its messages; `weft emu wait` and
    /// `weft emu down` print and remove it once the run has ended.
    pub fn log_path(run_id: &str) -> PathBuf {
        state_dir().join(format!("{run_id}.log"))
    }

    /// Writes the record.
    pub fn save(&self) -> Result<(), EmuError> {
        let dir = state_dir();
        std::fs::create_dir_all(&dir)
            .map_err(EmuError::io(format!("creating {}", dir.display())))?;
        let text = serde_json::to_vec_pretty(self).unwrap_or_default();
        let p = Self::path(&self.run_id);
        weft_report::write_atomic(&p, &text)
            .map_err(EmuError::io(format!("writing {}", p.display())))
    }

    /// True if the owning process still exists: its id is in use, by the process that started
    /// at `pid_start` (a record of a crashed run whose id went to another process is dead).
    pub fn alive(&self) -> bool {
        match self.pid_start {
            Some(start) => weft_sys::process::start_time(self.pid) == Some(start),
            None => weft_sys::process::pid_alive(self.pid),
        }
    }

    /// Asks the owning process to stop (SIGTERM), only if it is the run's own: an id whose
    /// process has ended may be another's by now. `Ok(false)` if the owner is gone. A record
    /// of an older build, without a start time, is refused: the id alone proves nothing.
    pub fn terminate(&self) -> Result<bool, EmuError> {
        let Some(start) = self.pid_start else {
            return Err(EmuError::NoRun(format!(
                "{} (its record, from an older weft, names process {} without its start time, \
                 so weft cannot tell it is the run's; stop it by hand, then `weft emu down --all`)",
                self.run_id, self.pid
            )));
        };
        weft_sys::process::signal_if_same(self.pid, start, libc::SIGTERM)
            .map_err(EmuError::io(format!("signalling process {}", self.pid)))
    }

    /// Kills the owning process (SIGKILL) if it is the run's own (as [`RunRecord::terminate`]):
    /// for a run that did not stop when asked. Its namespaces are then leftovers.
    pub fn kill(&self) -> bool {
        self.pid_start.is_some_and(|start| {
            weft_sys::process::signal_if_same(self.pid, start, libc::SIGKILL).unwrap_or(false)
        })
    }
}

/// Every run record (unreadable files are skipped).
pub fn runs() -> Vec<RunRecord> {
    let Ok(dir) = std::fs::read_dir(state_dir()) else {
        return Vec::new();
    };
    let mut v: Vec<RunRecord> = dir
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect();
    v.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    v
}

/// The live run with id `run_id`, or the only live run when `None`.
pub fn find_live(run_id: Option<&str>) -> Result<RunRecord, EmuError> {
    let live: Vec<RunRecord> = runs().into_iter().filter(|r| r.alive()).collect();
    match run_id {
        Some(id) => live
            .into_iter()
            .find(|r| r.run_id == id)
            .ok_or_else(|| EmuError::NoRun(id.to_string())),
        None => match live.len() {
            0 => Err(EmuError::NoRun("(any)".into())),
            1 => Ok(live
                .into_iter()
                .next()
                .ok_or_else(|| EmuError::NoRun("(any)".into()))?),
            _ => Err(EmuError::Ambiguous(
                live.iter()
                    .map(|r| r.run_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            )),
        },
    }
}

/// Removes the leftovers of runs whose owner has died: their namespaces (with any processes in
/// them), namespaces of the emulator's naming pattern that no live run claims, and stale records.
/// Returns the namespaces removed.
pub fn remove_leftovers() -> Vec<String> {
    let all = runs();
    let live: Vec<&RunRecord> = all.iter().filter(|r| r.alive()).collect();
    // With records elsewhere, only the namespaces of that directory's dead runs are ours.
    let scoped = state_dir_overridden();
    let mine = |id: &str| !scoped || all.iter().any(|r| r.run_id == id);
    let mut removed = Vec::new();
    for ns in netns::list_namespaces() {
        let Some(id) = netns::run_id_of(&ns) else {
            continue;
        };
        if live.iter().any(|r| r.run_id == id) || !mine(id) {
            continue;
        }
        if netns::delete_namespace(&ns) {
            removed.push(ns);
        }
    }
    // Hosts files whose namespace is already gone (a crash between the two removals).
    for ns in netns::etc_netns_dirs() {
        let Some(id) = netns::run_id_of(&ns) else {
            continue;
        };
        if !live.iter().any(|r| r.run_id == id) && mine(id) {
            netns::remove_hosts_file(&ns);
        }
    }
    for r in all.iter().filter(|r| !r.alive()) {
        let _ = std::fs::remove_file(RunRecord::path(&r.run_id));
    }
    // Logs of detached runs that ended (or of a detaching `up` that died before its run was up).
    for e in std::fs::read_dir(state_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let p = e.path();
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let stale = match stem.strip_prefix("up-") {
            Some(pid) => pid
                .parse()
                .is_ok_and(|pid| !weft_sys::process::pid_alive(pid)),
            None => netns::run_id_of(&format!("{}{stem}", netns::PREFIX))
                .is_some_and(|id| !live.iter().any(|r| r.run_id == id)),
        };
        if stale && p.extension().is_some_and(|x| x == "log") {
            let _ = std::fs::remove_file(&p);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pid: u32, pid_start: Option<u64>) -> RunRecord {
        RunRecord {
            run_id: "abc123".into(),
            pid,
            pid_start,
            guard_pid: None,
            switch_ns: "weftabc123sw".into(),
            hosts: Vec::new(),
            source: "test".into(),
        }
    }

    #[test]
    fn a_reused_process_id_is_neither_alive_nor_signalled() {
        // The run's owner died and its id went to another process (here: a child of ours
        // standing in, with another start time than the record's).
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let start = weft_sys::process::start_time(other.id()).unwrap();
        let stale = record(other.id(), Some(start + 7));
        assert!(!stale.alive());
        assert!(!stale.terminate().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            other.try_wait().unwrap().is_none(),
            "another's process was signalled"
        );
        // An older build's record proves nothing: refused, not signalled.
        assert!(record(other.id(), None).terminate().is_err());
        // The run's own process is.
        let own = record(other.id(), Some(start));
        assert!(own.alive());
        assert!(own.terminate().unwrap());
        assert!(!other.wait().unwrap().success());
    }
}
