//! Parameter sweeps for `weft`: a plan names a scenario file (or a `weft sim` / `calc` form) and a
//! grid of parameters and seeds; it expands into runs, each with a stable id; each run is the
//! `weft` binary itself run as a subprocess, so that the same run happens on this machine's cores
//! (rayon) and inside a Slurm array task; results are appended as they finish to a JSON-lines
//! store that a resumed sweep reads to skip what is done, and collected into a table, a CSV file
//! and a plot.
//!
//! The pieces, in the order a sweep uses them:
//! - [`plan`]: the plan file, validated with `file:line:column` errors ([`values`] reads the lists
//!   and ranges of its grid);
//! - [`runs`]: the expansion of a plan into [`runs::Run`]s with ids ([`overrides`] applies a run's
//!   parameters to a scenario document);
//! - [`invoke`]: one run as a `weft` subprocess, giving a [`store::Record`];
//! - [`store`] and [`dir`]: the result files and the sweep directory;
//! - [`local`] and [`slurm`]: the two ways of running the pending runs;
//! - [`table`] and [`chart`]: the collected results as a table, CSV and a chart.

pub mod chart;
pub mod dir;
pub mod invoke;
pub mod local;
pub mod overrides;
pub mod plan;
pub mod runs;
pub mod slurm;
pub mod store;
pub mod table;
pub mod values;

pub use dir::SweepDir;
pub use plan::{Commands, Flag, Plan, PlanError, Target};
pub use runs::{Run, RunList};
pub use store::{Record, Status};
pub use table::Table;

/// What can go wrong in a sweep once its plan is valid.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A file of the sweep directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The error from the operating system.
        source: std::io::Error,
    },
    /// Another `weft sweep` holds the directory.
    #[error(
        "another weft sweep is writing {0} (it holds {0}/.lock); wait for it to finish or stop it"
    )]
    Busy(String),
    /// A file of the sweep directory holds something else than weft wrote.
    #[error("{path}: {message}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A Slurm command failed or is missing.
    #[error("slurm: {0}")]
    Slurm(String),
    /// The results hold nothing that can be drawn or tabulated as asked.
    #[error("{0}")]
    Nothing(String),
}

impl SweepError {
    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        SweepError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
