//! The keys of a workload of kind `x11` (a renderer's frames shown on a remote X server,
//! [`crate::app::x11`]):
//!
//! ```toml
//! [[workload]]
//! kind = "x11"
//! from = "challenge"       # the renderer (the X client)
//! to = "ss20"              # the display (the X server)
//! width = 1152             # pixels per scan line (default 1152, a Sun 19-inch screen)
//! height = 900             # scan lines (default 900)
//! depth = 8                # bits per pixel of the visual: 8 or 24 (default 8)
//! render = "0ms"           # the renderer's CPU time per frame before it sends it (default 0)
//! frames = 20              # frames to show (default 20)
//! ```

use super::reader::{Result, Tbl};
use super::{WorkloadKind, X11Workload};
use crate::app::x11::{Frame, MAX_REQUEST, PUT_IMAGE_HEADER, bytes_per_pixel};
use crate::time::Duration;

/// The keys only a workload of kind `x11` takes.
pub(super) const X11_KEYS: &[&str] = &["width", "height", "depth", "render", "frames"];

/// Frames of a workload that gives none.
pub const DEFAULT_FRAMES: u64 = 20;
/// The largest width or height of a PutImage (a 16-bit CARD16 in the request).
const MAX_SIDE: u64 = 65_535;
/// The longest render time taken, per frame.
const MAX_RENDER: Duration = Duration::from_secs(60);

/// The `x11` keys of a workload; refused on other kinds.
pub(super) fn workload(w: &Tbl<'_, '_>, kind: WorkloadKind) -> Result<Option<X11Workload>> {
    if kind != WorkloadKind::X11 {
        w.refuse_keys(X11_KEYS.iter().copied(), "x11")?;
        return Ok(None);
    }
    let depth = w.count32("depth", 1, 32)?.unwrap_or(8);
    if bytes_per_pixel(depth).is_none() {
        return Err(w.err("depth", "expected 8 or 24 (bits per pixel of the visual)"));
    }
    let frame = Frame {
        width: w.count("width", 1, MAX_SIDE)?.unwrap_or(1152),
        height: w.count("height", 1, MAX_SIDE)?.unwrap_or(900),
        depth,
    };
    if frame.line_bytes() + PUT_IMAGE_HEADER > MAX_REQUEST {
        return Err(w.err(
            "width",
            format!(
                "a scan line of {} bytes does not fit one X11 request ({MAX_REQUEST} bytes)",
                frame.line_bytes()
            ),
        ));
    }
    Ok(Some(X11Workload {
        frame,
        render: w
            .duration("render", Duration::ZERO, MAX_RENDER)?
            .unwrap_or(Duration::ZERO),
        frames: w.count("frames", 1, 1_000_000)?.unwrap_or(DEFAULT_FRAMES),
    }))
}

#[cfg(test)]
mod tests {
    use crate::scenario::{Scenario, ScenarioError};

    fn scenario(kind: &str, keys: &str) -> Result<Scenario, ScenarioError> {
        let text = format!(
            "name = \"t\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[link]]\nends = [\"a\", \"b\"]\ntech = \"oc3c\"\n\
             [[workload]]\nkind = \"{kind}\"\nfrom = \"a\"\nto = \"b\"\n{keys}\n"
        );
        Scenario::parse(&text, "t.toml")
    }

    fn refused(kind: &str, keys: &str, key: &str, says: &str) {
        let e = scenario(kind, keys).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(says), "{e}");
    }

    #[test]
    fn an_x11_workload_takes_its_keys_with_defaults() {
        let s = scenario("x11", "depth = 24\nrender = \"50ms\"\nframes = 3").unwrap();
        let x = s.workloads[0].x11.unwrap();
        assert_eq!(
            (x.frame.width, x.frame.height, x.frame.depth),
            (1152, 900, 24)
        );
        assert_eq!(x.render, crate::time::Duration::from_millis(50));
        assert_eq!(x.frames, 3);
        let d = scenario("x11", "").unwrap().workloads[0].x11.unwrap();
        assert_eq!((d.frame.depth, d.frames), (8, super::DEFAULT_FRAMES));
    }

    #[test]
    fn bad_x11_keys_are_refused_with_what_was_expected() {
        refused("x11", "depth = 16", "depth", "expected 8 or 24");
        refused("x11", "width = 0", "width", "between 1 and 65535");
        refused("x11", "height = 70000", "height", "between 1 and 65535");
        refused("x11", "frames = 0", "frames", "expected");
        refused("x11", "render = \"-1ms\"", "render", "expected");
        refused(
            "x11",
            "depth = 24\nwidth = 65535",
            "width",
            "does not fit one X11 request",
        );
        refused(
            "tput",
            "width = 640",
            "width",
            "only a workload of kind = \"x11\"",
        );
    }
}
