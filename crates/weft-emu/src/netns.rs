//! Namespaces and links through iproute2: this module shells out to `ip` and `ethtool` (simple,
//! and the commands are what an operator would type), and keeps a registry of what it created so
//! that everything is removed on every exit path.
//!
//! Naming: a run has an id of 6 hex digits; its switch namespace is `weft-<id>` and each host's is
//! `weft-<id>-<host>`. Veth pairs live only inside those namespaces (host end `eth0`, switch end
//! `p<N>`), so deleting the namespaces removes every link.
//!
//! Names: each host namespace gets `/etc/netns/<ns>/hosts` listing every host of the run, which
//! `ip netns exec` bind-mounts over `/etc/hosts`, so that `weft emu exec a -- ping b` resolves.
//! The file and its directory go with the namespace ([`delete_namespace`]).

use std::process::{Command, Stdio};

use crate::error::EmuError;
use crate::guard::Guard;

/// Prefix of every namespace the emulator creates.
pub const PREFIX: &str = "weft-";

/// Where `ip netns exec` looks for per-namespace files to bind-mount over `/etc`.
pub const ETC_NETNS: &str = "/etc/netns";

/// Runs a command, returning stdout, or an error carrying its stderr.
pub fn run_cmd(program: &str, args: &[&str]) -> Result<String, EmuError> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| EmuError::Command {
            cmd: format!("{program} {}", args.join(" ")),
            stderr: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(EmuError::Command {
            cmd: format!("{program} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `ip ARGS...`.
pub fn ip(args: &[&str]) -> Result<String, EmuError> {
    run_cmd("ip", args)
}

/// Checks that emulation can work here: root, `ip` present, namespaces creatable. The error says
/// what is missing.
pub fn preflight() -> Result<(), EmuError> {
    if !weft_sys::process::is_root() {
        return Err(EmuError::Unsupported(
            "it needs root (network namespaces and veth links); run as root or with sudo".into(),
        ));
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Err(EmuError::Unsupported(
            "`ip` (iproute2) is not installed".into(),
        ));
    }
    if !std::path::Path::new("/proc/self/ns/net").exists() {
        return Err(EmuError::Unsupported(
            "the kernel has no network namespaces".into(),
        ));
    }
    Ok(())
}

/// True if `ethtool` is installed (offloads can be turned off).
pub fn have_ethtool() -> bool {
    Command::new("ethtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Names of all network namespaces (`ip netns list`).
pub fn list_namespaces() -> Vec<String> {
    ip(&["netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The run id of an emulator namespace name (`weft-<6 hex>` or `weft-<6 hex>-host`).
pub fn run_id_of(ns: &str) -> Option<&str> {
    let rest = ns.strip_prefix(PREFIX)?;
    let id = rest.get(..6)?;
    let tail = &rest[6..];
    let hex = id
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    (hex && (tail.is_empty() || tail.starts_with('-'))).then_some(id)
}

/// Kills every process inside namespace `ns` (SIGKILL) and deletes it; errors are ignored when
/// the namespace is already gone. Returns true if it existed.
pub fn delete_namespace(ns: &str) -> bool {
    if let Ok(pids) = ip(&["netns", "pids", ns]) {
        for p in pids.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
            if p != std::process::id() {
                weft_sys::process::kill(p, libc::SIGKILL);
            }
        }
    }
    remove_hosts_file(ns);
    ip(&["netns", "del", ns]).is_ok()
}

/// The text of a hosts file naming `hosts` (name, address), with the usual loopback lines.
pub fn hosts_file_text<'a>(
    hosts: impl IntoIterator<Item = (&'a str, std::net::Ipv4Addr)>,
) -> String {
    let mut text = String::from("# written by weft emu; removed with the emulation\n");
    text.push_str("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    for (name, addr) in hosts {
        text.push_str(&format!("{addr}\t{name}\n"));
    }
    text
}

/// Writes `/etc/netns/<ns>/hosts` (atomically) with `text`.
pub fn write_hosts_file(ns: &str, text: &str) -> Result<(), EmuError> {
    let dir = std::path::Path::new(ETC_NETNS).join(ns);
    std::fs::create_dir_all(&dir).map_err(EmuError::io(format!("creating {}", dir.display())))?;
    let p = dir.join("hosts");
    weft_report::write_atomic(&p, text.as_bytes())
        .map_err(EmuError::io(format!("writing {}", p.display())))
}

/// Removes `/etc/netns/<ns>/hosts` and the directory if that leaves it empty (a directory an
/// operator put other files in stays). Returns true if the file existed.
pub fn remove_hosts_file(ns: &str) -> bool {
    let dir = std::path::Path::new(ETC_NETNS).join(ns);
    let existed = std::fs::remove_file(dir.join("hosts")).is_ok();
    let _ = std::fs::remove_dir(&dir);
    existed
}

/// Namespace names that have a directory under `/etc/netns` (whether or not the namespace
/// exists).
pub fn etc_netns_dirs() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(ETC_NETNS) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

/// What one emulation created, in creation order; removes it all on [`Registry::teardown`]
/// (also called from `Drop`, so errors and panics clean up too).
#[derive(Debug, Default)]
pub struct Registry {
    namespaces: Vec<String>,
    /// Removes the namespaces if this process dies before [`Registry::teardown`] (started with
    /// the first namespace; `None` if `sh` could not be started, which only loses that safety).
    guard: Option<Guard>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Creates namespace `name` and records it; loopback is brought up.
    pub fn add_namespace(&mut self, name: &str) -> Result<(), EmuError> {
        if self.guard.is_none() {
            self.guard = Guard::start().ok();
        }
        ip(&["netns", "add", name])?;
        self.namespaces.push(name.to_string());
        if let Some(g) = &mut self.guard {
            g.watch_namespace(name);
        }
        ip(&["-n", name, "link", "set", "lo", "up"])?;
        Ok(())
    }

    /// The namespaces created so far.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// Has the guard remove `path` too if this process dies before [`Registry::teardown`].
    pub fn watch_file(&mut self, path: &std::path::Path) {
        if let (Some(g), Ok(abs)) = (&mut self.guard, std::path::absolute(path)) {
            g.watch_file(&abs);
        }
    }

    /// The guard's process id, if one runs.
    pub fn guard_pid(&self) -> Option<u32> {
        self.guard.as_ref().map(Guard::pid)
    }

    /// Removes everything created, last first, then releases the guard. Idempotent.
    pub fn teardown(&mut self) {
        while let Some(ns) = self.namespaces.pop() {
            delete_namespace(&ns);
        }
        if let Some(mut g) = self.guard.take() {
            g.release();
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Turns segmentation/receive offloads and checksum offload off on `dev` in namespace `ns`, so
/// that the frames the switch sees are real-sized and carry real checksums.
pub fn offloads_off(ns: &str, dev: &str) -> Result<(), EmuError> {
    let args = [
        "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx",
        "off", "rx", "off",
    ];
    ip(&args).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_run_namespaces() {
        assert_eq!(run_id_of("weft-a1b2c3"), Some("a1b2c3"));
        assert_eq!(run_id_of("weft-a1b2c3-host1"), Some("a1b2c3"));
        assert_eq!(run_id_of("weft-a1b2c3x"), None);
        assert_eq!(run_id_of("weft-A1B2C3"), None);
        assert_eq!(run_id_of("weftx-a1b2c3"), None);
        assert_eq!(run_id_of("weft-xfer-test"), None);
        assert_eq!(run_id_of("other"), None);
    }

    #[test]
    fn hosts_file_names_every_host() {
        let t = hosts_file_text([
            ("adelaide", "10.77.0.1".parse().unwrap()),
            ("canberra", "10.77.0.2".parse().unwrap()),
        ]);
        let lines: Vec<&str> = t.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                "127.0.0.1\tlocalhost",
                "::1\tlocalhost ip6-localhost ip6-loopback",
                "10.77.0.1\tadelaide",
                "10.77.0.2\tcanberra",
            ]
        );
    }
}
