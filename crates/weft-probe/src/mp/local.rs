//! `weft mp --local N`: N rank processes on this host, each a `weft serve --once` agent of the
//! running binary on a free loopback port, so that local ranks take exactly the path remote
//! ones do (and one can be killed like any process). The agents are killed when dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::error::MpError;

/// Agents started on loopback.
#[derive(Debug)]
pub struct LocalAgents {
    children: Vec<Child>,
    /// Their control addresses, in rank order.
    pub addrs: Vec<SocketAddr>,
}

impl LocalAgents {
    /// Starts `n` agents of the `weft` binary `exe` (`weft serve --bind 127.0.0.1:0 --once
    /// --quiet` and `extra` arguments) and waits for each to say where it listens.
    pub fn spawn(exe: &Path, n: usize, extra: &[String]) -> Result<LocalAgents, MpError> {
        let mut agents = LocalAgents {
            children: Vec::with_capacity(n),
            addrs: Vec::with_capacity(n),
        };
        for r in 0..n {
            let mut child = Command::new(exe)
                .args(["serve", "--bind", "127.0.0.1:0", "--once", "--quiet"])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| MpError::io(format!("starting rank {r} ({})", exe.display()), e))?;
            let stderr = child.stderr.take();
            agents.children.push(child);
            let Some(stderr) = stderr else {
                return Err(MpError::Config(format!("rank {r}: no stderr to read")));
            };
            let mut lines = BufReader::new(stderr).lines();
            let addr = loop {
                let Some(Ok(line)) = lines.next() else {
                    return Err(MpError::Config(format!(
                        "rank {r}: `{} serve` exited before it listened",
                        exe.display()
                    )));
                };
                if let Some(a) = line.split("listening on ").nth(1) {
                    break a.trim().parse::<SocketAddr>().map_err(|_| {
                        MpError::Config(format!("rank {r}: cannot read its address from {line:?}"))
                    })?;
                }
            };
            // Keep reading, so that the agent never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            agents.addrs.push(addr);
        }
        Ok(agents)
    }

    /// The agents' process ids, in rank order.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }
}

impl Drop for LocalAgents {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
