//! `weft report [RESULT.json...] -o report.html`: one self-contained HTML page from result
//! documents (`weft_report::html`): a `weft repro` result gives the per-study summary, the
//! figures and the tables of every item; any other result is drawn as `weft plot` draws it.

use std::path::{Path, PathBuf};

use anyhow::Context;
use weft_report::{ResultDoc, write_atomic};

/// Arguments of `weft report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Result files (JSON written with --json or -o by any command: `weft repro --json`, `weft
    /// rr -o`, `weft demo`'s demo.json, ...); a file may hold one document or a list of them.
    #[arg(value_name = "RESULT.json", required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write the page.
    #[arg(
        short = 'o',
        long = "out",
        value_name = "FILE",
        default_value = "report.html"
    )]
    pub out: PathBuf,
}

/// Runs `weft report`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut docs = Vec::new();
    for f in &args.files {
        docs.extend(read(f)?);
    }
    let html = page(&docs)?;
    write_atomic(&args.out, html.as_bytes())
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    println!("wrote {}", args.out.display());
    Ok(())
}

/// The page for `docs`.
pub(crate) fn page(docs: &[ResultDoc]) -> anyhow::Result<String> {
    Ok(weft_report::html::page(docs)?)
}

/// The documents of one file: a document, or a list of them (`weft run` with several engines).
fn read(path: &Path) -> anyhow::Result<Vec<ResultDoc>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::cli::usage(format!("cannot read {}: {e}", path.display())))?;
    let not_one = |e: serde_json::Error| {
        crate::cli::usage(format!(
            "{} is not a weft result document (nor a list of them): {e}",
            path.display()
        ))
    };
    if text.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<ResultDoc>>(&text).map_err(not_one)
    } else {
        ResultDoc::from_json(&text)
            .map(|d| vec![d])
            .map_err(not_one)
    }
}
