//! PNG output: the SVG rasterised by `resvg`, with text in the system's fonts.

use std::sync::OnceLock;

use resvg::{tiny_skia, usvg};

use super::PlotError;

/// Families tried, in order, for the SVG's generic `sans-serif`.
const SANS: &[&str] = &[
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "FreeSans",
    "Arial",
];

/// Rasterises `svg` at `scale` device pixels per SVG pixel (1.0 keeps the SVG's size) and
/// encodes it as PNG.
pub fn render_png(svg: &str, scale: f32) -> Result<Vec<u8>, PlotError> {
    if !(scale.is_finite() && scale > 0.0 && scale <= 8.0) {
        return Err(PlotError::Png(format!("scale {scale} out of range (0, 8]")));
    }
    let mut opt = usvg::Options::default();
    *opt.fontdb_mut() = fonts()?.clone();
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| PlotError::Png(e.to_string()))?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(scale)
        .ok_or_else(|| PlotError::Png("image size out of range".into()))?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| PlotError::Png("cannot allocate the image".into()))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| PlotError::Png(e.to_string()))
}

/// The system fonts, loaded once per process.
fn fonts() -> Result<&'static usvg::fontdb::Database, PlotError> {
    static DB: OnceLock<usvg::fontdb::Database> = OnceLock::new();
    let db = DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_system_fonts();
        let names: Vec<String> = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(n, _)| n.clone()))
            .collect();
        if let Some(fam) = SANS.iter().find(|s| names.iter().any(|n| n == *s)) {
            db.set_sans_serif_family(*fam);
        } else if let Some(first) = names.first() {
            db.set_sans_serif_family(first.clone());
        }
        db
    });
    if db.is_empty() {
        Err(PlotError::NoFonts)
    } else {
        Ok(db)
    }
}
