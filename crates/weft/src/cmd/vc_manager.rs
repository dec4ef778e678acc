//! `weft vc manager SCENARIO --listen SOCKET --key-file KEY`: the connection manager of a
//! scenario's circuits (its `[vc]` database and `forward` shape) for an emulation brought up with
//! `weft emu up SCENARIO --vc-manager SOCKET --key-file KEY`. It pushes each switch its table
//! and its traffic contracts (`[[vc.contract]]`) when the switch says hello without them (at start,
//! after `weft emu fail`, after a restart) and prints each restore with its time, until
//! interrupted.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use weft_model::vc::{Held, Restore};

/// Arguments of `weft vc manager`.
#[derive(Debug, clap::Args)]
pub struct ManagerArgs {
    /// The scenario (TOML) whose `[vc]` circuits the switches forward by.
    pub scenario: PathBuf,
    /// The Unix socket to listen on (the emulation's `--vc-manager`).
    #[arg(long, value_name = "SOCKET")]
    pub listen: PathBuf,
    /// The pre-shared key (at least 16 bytes), the same as the emulation's.
    #[arg(long, value_name = "FILE")]
    pub key_file: PathBuf,
}

/// The `--vc-manager` options of `weft emu up`.
#[derive(Debug, Clone, clap::Args)]
pub struct ManagedArgs {
    /// Take the switches' circuit tables from the connection manager on this Unix socket
    /// (`weft vc manager`): they start empty, and get their tables back after `weft emu fail`.
    #[arg(long, value_name = "SOCKET", requires = "key_file")]
    pub vc_manager: Option<PathBuf>,
    /// The manager's pre-shared key.
    #[arg(long, value_name = "FILE", requires = "vc_manager")]
    pub key_file: Option<PathBuf>,
}

impl ManagedArgs {
    /// The manager to connect to, if any.
    pub fn link(&self) -> anyhow::Result<Option<weft_emu::vc_agent::ManagerLink>> {
        let Some(socket) = &self.vc_manager else {
            return Ok(None);
        };
        let key = super::send::load_key(&None, &self.key_file)?
            .ok_or_else(|| crate::cli::usage("--vc-manager needs --key-file"))?;
        Ok(Some(weft_emu::vc_agent::ManagerLink {
            socket: socket.clone(),
            key,
        }))
    }
}

/// Runs `weft vc manager`.
pub fn run(a: ManagerArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&a.scenario)
        .with_context(|| format!("cannot read scenario {}", a.scenario.display()))?;
    let s = weft_model::Scenario::parse(&text, &a.scenario.display().to_string())
        .map_err(|e| crate::cli::usage(e.to_string()))?;
    let (Some(db), Some(shape)) = (&s.vc, &s.vc_forward) else {
        return Err(crate::cli::usage(format!(
            "{}: no [vc] database with `forward` to manage",
            a.scenario.display()
        )));
    };
    let plan = weft_model::vc::plan(db, shape).map_err(|e| crate::cli::usage(e.to_string()))?;
    let contracts = weft_model::vc::resolve_all(&s.vc_contracts, &plan)
        .map_err(|e| crate::cli::usage(format!("{}: [vc]: {e}", a.scenario.display())))?;
    let key = super::send::load_key(&None, &Some(a.key_file.clone()))?
        .ok_or_else(|| crate::cli::usage("a key is needed"))?;
    let _ = std::fs::remove_file(&a.listen);
    let listener = std::os::unix::net::UnixListener::bind(&a.listen)
        .with_context(|| format!("listening on {}", a.listen.display()))?;
    weft_emu::signals::install();
    eprintln!(
        "weft vc manager: {} switches, {} entries of the {} plan, {} contracts, on {}",
        plan.tables.len(),
        plan.counts.entries,
        plan.shape,
        contracts.len(),
        a.listen.display()
    );
    let stop = AtomicBool::new(false);
    let restores = std::thread::scope(|sc| {
        sc.spawn(|| {
            while !weft_emu::signals::interrupted() {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            stop.store(true, Ordering::Relaxed);
        });
        weft_emu::vc_manager::serve(&listener, &plan, &contracts, &key, &stop, &print_restore)
    });
    let _ = std::fs::remove_file(&a.listen);
    let restores = restores.context("serving the switches")?;
    eprintln!("weft vc manager: stopped after {} restores", restores.len());
    Ok(())
}

/// One line per restore: the switch, its entries and contracts and the time from its hello to
/// its acknowledgement.
fn print_restore(r: &Restore, held: Held) {
    let lost = r.lost_at.map_or(String::from("at start"), |l| {
        format!(
            "{:.1} ms after it was lost",
            r.hello_at.saturating_duration_since(l).as_nanos() as f64 / 1e6
        )
    });
    eprintln!(
        "weft vc manager: {} holds its {} entries and {} contracts again, restored {:.3} ms after its hello ({lost})",
        r.switch,
        held.entries,
        held.contracts,
        r.restore_time().as_nanos() as f64 / 1e6
    );
}
