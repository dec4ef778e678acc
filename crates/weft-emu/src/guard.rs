//! The orphan guard: a small process beside every emulation that removes its namespaces (and the
//! processes in them) when the emulation's owner dies without tearing it down (`kill -9`, an OOM
//! kill, a panic that aborts), so that an emulation whose parent died stops itself instead of
//! waiting for `weft emu down --all`.
//!
//! The owner feeds the guard over a pipe on its stdin, one line per event: `ns NAME` for each
//! namespace created, `file PATH` for each file to remove with them (the run record), and `down`
//! once it has torn everything down itself. The kernel closes the pipe when the owner exits, however
//! it exits: end of input without `down` means the owner died, and the guard then kills the
//! processes in the named namespaces, deletes them and their `/etc/netns` files, and removes the
//! files. The pipe is close-on-exec, so the commands an emulation runs in its hosts do not hold it
//! open.
//!
//! The guard is `sh` running [`SCRIPT`], not a weft subcommand: whatever process embeds this
//! library (the `weft` binary, a test binary) gets one without knowing where `weft` is. It is in a
//! process group of its own, so that the terminal's Ctrl-C (which the owner handles by tearing
//! down) does not reach it.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};

/// The guard's script. Namespace names must start with `weft-` and hold no `/`; anything else
/// is ignored, so a corrupted line cannot make the guard delete what is not the emulation's.
pub const SCRIPT: &str = r#"
ns_list=""
files=""
while IFS= read -r line; do
  case "$line" in
    down) exit 0 ;;
    "ns weft-"*) n=${line#ns }
      case "$n" in */*|*" "*) ;; *) ns_list="$ns_list $n" ;; esac ;;
    "file /"*) files="$files
${line#file }" ;;
  esac
done
for n in $ns_list; do
  for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  rm -rf "/etc/netns/$n"
  ip netns del "$n" 2>/dev/null
done
printf '%s\n' "$files" | while IFS= read -r f; do [ -n "$f" ] && rm -f "$f"; done
exit 0
"#;

/// The owner's end of a running guard.
#[derive(Debug)]
pub struct Guard {
    child: Child,
    input: Option<ChildStdin>,
}

impl Guard {
    /// Starts a guard (`sh -c SCRIPT`), its output discarded.
    pub fn start() -> std::io::Result<Self> {
        let mut child = Command::new("sh")
            .args(["-c", SCRIPT, "weft-emu-guard"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let input = child.stdin.take();
        Ok(Guard { child, input })
    }

    /// The guard's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Tells the guard about a namespace to remove if the owner dies.
    pub fn watch_namespace(&mut self, ns: &str) {
        self.send(&format!("ns {ns}"));
    }

    /// Tells the guard about a file (an absolute path) to remove if the owner dies.
    pub fn watch_file(&mut self, path: &std::path::Path) {
        self.send(&format!("file {}", path.display()));
    }

    /// Tells the guard that the owner has torn down, and waits for it to exit.
    pub fn release(&mut self) {
        self.send("down");
        self.input = None;
        let _ = self.child.wait();
    }

    /// Writes one line; a guard that has gone away only means there is no guard (best effort: the
    /// leftovers are then `weft emu down --all`'s, as before there were guards).
    fn send(&mut self, line: &str) {
        if let Some(input) = &mut self.input
            && writeln!(input, "{line}").is_err()
        {
            self.input = None;
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.input.is_some() {
            self.release();
        }
    }
}
