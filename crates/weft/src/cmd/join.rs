//! `weft join`: put a file that an MBTP transfer striped over separate receivers back together
//! from its stripes (see `weft_xfer::net::stripe` for where they are and why).

use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;
use weft_report::{Engine, ResultDoc};
use weft_xfer::net::stripe::{find_manifests, join};

/// Arguments of `weft join`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file to put together, as DIR/NAME where DIR holds its stripes (NAME.mbtp-K-of-R and
    /// NAME.mbtp-K-of-R.manifest, gathered from the R receivers), or the manifests themselves.
    #[arg(required = true, value_name = "DIR/NAME | MANIFEST...")]
    paths: Vec<PathBuf>,
    /// Where to write the file (default: NAME beside the stripes).
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// Replace the output file if it exists.
    #[arg(long)]
    force: bool,
    /// Print the JSON summary on stdout (nothing else).
    #[arg(long)]
    json: bool,
}

/// Runs `weft join`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let manifests = match &a.paths[..] {
        [one] if !one.to_string_lossy().ends_with(".manifest") => find_manifests(one)?,
        many => many.to_vec(),
    };
    let output = match &a.output {
        Some(o) => o.clone(),
        None => {
            // NAME beside the first stripe: the manifest's name without its stripe suffix.
            let first = &manifests[0];
            let file = first
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or_default();
            let base = file.split(".mbtp-").next().unwrap_or(file);
            first.with_file_name(base)
        }
    };
    if output.exists() && !a.force {
        return Err(crate::cli::usage(format!(
            "{} exists (use --force to replace it)",
            output.display()
        )));
    }
    let j =
        join(&manifests, &output).with_context(|| format!("joining into {}", output.display()))?;
    let gap_bytes: u64 = j.gaps.iter().map(|g| g.1).sum();
    let mut doc = ResultDoc::new("xfer.join", Engine::Real);
    doc.params = json!({ "manifests": manifests.iter().map(|m| m.display().to_string()).collect::<Vec<_>>() });
    doc.summary = json!({
        "name": j.name,
        "path": j.path.display().to_string(),
        "size": j.size,
        "parts": j.parts,
        "buffers": j.buffers,
        "gaps": j.gaps.len(),
        "gap_bytes": gap_bytes,
    });
    doc.samples = j
        .gaps
        .iter()
        .map(|(off, len)| json!({ "offset": off, "len": len }))
        .collect();
    if a.json {
        println!("{}", doc.to_json_pretty());
    } else {
        println!(
            "joined {} into {}: {} bytes from {} stripes, {} buffers each checked; {} gaps ({} bytes zero-filled, lost in the transfer)",
            j.name,
            j.path.display(),
            j.size,
            j.parts,
            j.buffers,
            j.gaps.len(),
            gap_bytes
        );
    }
    Ok(())
}
