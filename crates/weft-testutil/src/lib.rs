//! Test support shared by weft's crates (a dev-dependency only).
//!
//! A test that needs root, a capability or a tool it cannot find does not pass silently: it calls
//! [`skip`], which prints `skipped: <reason>` (so that a reader of the test log sees it) and lets
//! the test return, or, when the environment variable `WEFT_TEST_STRICT=1` is set (CI sets it in
//! `.ci/run`), panics with the reason so that the run fails. Every skip in the workspace goes
//! through here, so there is one rule and one place to change it.
//!
//! ```no_run
//! # fn t() {
//! if let Some(why) = weft_testutil::missing_tool("tcpdump") {
//!     weft_testutil::skip(&why);
//!     return;
//! }
//! # }
//! ```

use std::process::{Command, Stdio};

/// The environment variable that turns every skip into a failure.
pub const STRICT_VAR: &str = "WEFT_TEST_STRICT";

/// Whether skips must fail the test (`WEFT_TEST_STRICT=1`).
pub fn strict() -> bool {
    std::env::var(STRICT_VAR).is_ok_and(|v| v == "1")
}

/// Reports that the calling test cannot run here: prints `skipped: <reason>` on stdout and
/// stderr and returns, so that the caller returns next; under `WEFT_TEST_STRICT=1`, panics with
/// the reason instead.
///
/// # Panics
/// When `WEFT_TEST_STRICT=1` is set.
#[track_caller]
pub fn skip(reason: &str) {
    if strict() {
        panic!("{STRICT_VAR}=1 and this test cannot run here: {reason}");
    }
    // Both streams: cargo test shows stdout of failing tests only, and a reader of `--nocapture`
    // output or of CI logs looks for the line on either.
    println!("skipped: {reason}");
    eprintln!("skipped: {reason}");
}

/// Whether the process runs as root (effective user id 0).
pub fn is_root() -> bool {
    weft_sys::process::is_root()
}

/// `Some(reason)` when the process is not root; the reason names what needs root.
pub fn missing_root(what: &str) -> Option<String> {
    (!is_root()).then(|| format!("{what} needs root"))
}

/// Runs `f` on a thread of its own in a new network namespace with its loopback up, so that no
/// other traffic reaches the interfaces it opens; panics (failing the test) if `f` does. Needs
/// root.
pub fn in_private_netns(f: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        weft_sys::netns::unshare_netns().expect("a network namespace of the test's own");
        let up = Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .expect("ip runs");
        assert!(up.success(), "ip link set lo up");
        f()
    })
    .join()
    .expect("the test's thread in its namespace");
}

/// Whether `tool` can be started (it is run once with `--version`, output discarded).
pub fn have_tool(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// `Some(reason)` when `tool` cannot be started; the reason says how to install it.
pub fn missing_tool(tool: &str) -> Option<String> {
    (!have_tool(tool)).then(|| {
        format!("{tool} is not installed (apt-get install {tool}; .ci/apt-packages lists it)")
    })
}

/// Skips the calling test (see [`skip`]) and returns from it when `reason` is `Some`.
///
/// ```no_run
/// # fn t() {
/// weft_testutil::skip_if!(weft_testutil::missing_tool("socat"));
/// # }
/// ```
#[macro_export]
macro_rules! skip_if {
    ($reason:expr) => {
        if let Some(reason) = $reason {
            $crate::skip(&reason);
            return;
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_tool_that_exists_and_not_one_that_does_not() {
        // `sh` is on every machine that can run cargo; the other name is never a tool.
        assert!(have_tool("sh") || have_tool("true"));
        assert!(missing_tool("weft-no-such-tool-7f3a").is_some());
    }
}
