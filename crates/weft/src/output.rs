//! Result files every command writes the same way: `--csv FILE` beside `-o FILE` and `--json`.

use std::io::Write;
use std::path::{Path, PathBuf};

use weft_report::ResultDoc;

/// `--csv FILE`, flattened into the arguments of every command that produces a result document.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CsvArg {
    /// Also write the result's samples as CSV to FILE ("-" for stdout): one row per sample
    /// (the summary when there are none), nested values in dotted columns (`rtt.p50_ns`).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

impl CsvArg {
    /// Writes `doc` as CSV if `--csv` was given.
    pub fn write(&self, doc: &ResultDoc) -> anyhow::Result<()> {
        write_csv(self.csv.as_deref(), doc)
    }
}

/// Writes `doc`'s samples as CSV to `path` (atomically; `-` is stdout), if a path is given.
pub fn write_csv(path: Option<&Path>, doc: &ResultDoc) -> anyhow::Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let bytes = weft_report::csv::doc_to_csv(doc)?;
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        match out.write_all(&bytes).and_then(|()| out.flush()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err(anyhow::anyhow!("writing CSV to stdout: {e}"));
            }
            _ => return Ok(()),
        }
    }
    weft_report::csv::write_csv(path, &bytes)?;
    Ok(())
}
