//! `weft plot`: draw the figure that fits a result file, as SVG and optionally PNG.

use std::path::{Path, PathBuf};

use anyhow::Context;
use weft_report::plot::{self, PlotError};
use weft_report::{ResultDoc, write_atomic};

/// Arguments of `weft plot`.
#[derive(Debug, clap::Args)]
#[command(after_help = after_help())]
pub struct Args {
    /// A weft result file (JSON written with --json or -o by any command), or a sweep directory
    /// (or its results.jsonl) written by `weft sweep`.
    pub file: PathBuf,
    /// Where to write the figure. Defaults to FILE with the extension .svg; a name ending in .png
    /// writes only a PNG.
    #[arg(short = 'o', long = "out", value_name = "OUT")]
    pub out: Option<PathBuf>,
    /// Also write a PNG beside the SVG (same name, extension .png).
    #[arg(long)]
    pub png: bool,
    /// PNG pixels per SVG pixel.
    #[arg(long, default_value_t = 1.5, value_name = "FACTOR")]
    pub png_scale: f32,
    /// Sweeps: the parameter along the x axis (default: the first numeric one that varies).
    #[arg(long, value_name = "PARAM")]
    pub x: Option<String>,
    /// Sweeps: the metric along the y axis (default: the first that varies between seeds).
    #[arg(long, value_name = "METRIC")]
    pub y: Option<String>,
    /// Sweeps: parameters whose values make one line each, comma-separated (default: the other
    /// parameters that vary; `--by ""` pools them all into one line).
    #[arg(long, value_name = "PARAMS", value_delimiter = ',')]
    pub by: Option<Vec<String>>,
}

fn after_help() -> String {
    let mut s = String::from("Figures by result kind:\n");
    for k in plot::FIGURES {
        s.push_str(&format!("  {:<9} {}\n", k.kind, k.about));
    }
    s.push_str("  (other)   any numeric sample field against another");
    s
}

/// Runs `weft plot`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if !(args.png_scale > 0.0 && args.png_scale <= 8.0) {
        return Err(crate::cli::usage("--png-scale must be in (0, 8]"));
    }
    let (svg, default_out) = if let Some(sweep) = super::sweep::sweep_source(&args.file) {
        let spec = weft_sweep::chart::ChartSpec {
            x: args.x.clone(),
            y: args.y.clone(),
            by: args
                .by
                .clone()
                .map(|b| b.into_iter().filter(|s| !s.is_empty()).collect()),
        };
        super::sweep::chart_svg(&sweep, &spec)?
    } else {
        if args.x.is_some() || args.y.is_some() || args.by.is_some() {
            return Err(crate::cli::usage(
                "--x, --y and --by are for sweeps: give a `weft sweep` directory",
            ));
        }
        let text = std::fs::read_to_string(&args.file)
            .with_context(|| format!("cannot read {}", args.file.display()))?;
        let doc = ResultDoc::from_json(&text).map_err(|e| {
            anyhow::anyhow!("{} is not a weft result document: {e}", args.file.display())
        })?;
        let svg = plot::svg_for(&doc).map_err(|e| plot_error(&args.file, e))?;
        (svg, args.file.with_extension("svg"))
    };
    let out = args.out.clone().unwrap_or(default_out);
    let png_only = out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if !png_only {
        write_atomic(&out, svg.as_bytes())
            .with_context(|| format!("cannot write {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    if png_only || args.png {
        let png_path = if png_only {
            out.clone()
        } else {
            out.with_extension("png")
        };
        write_png(&svg, args.png_scale, &png_path)?;
        println!("wrote {}", png_path.display());
    }
    Ok(())
}

fn write_png(svg: &str, scale: f32, path: &Path) -> anyhow::Result<()> {
    let png = plot::render_png(svg, scale)?;
    write_atomic(path, &png).with_context(|| format!("cannot write {}", path.display()))
}

fn plot_error(file: &Path, e: PlotError) -> anyhow::Error {
    anyhow::anyhow!("{}: {e}", file.display())
}
