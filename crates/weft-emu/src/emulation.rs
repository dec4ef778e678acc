//! Bringing a topology up as namespaces, veth links and a running switch thread; running code and
//! commands inside hosts; taking it all down again on every exit path.

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use weft_model::net::{Network, Recorder, Tap, Topology, capture_files};

use crate::driver::{self, DriverConfig, DriverReport};
use crate::error::EmuError;
use crate::netns::{self, Registry};
use crate::port_io::SwitchPort;
use crate::state::{HostRecord, RunRecord};

/// The interface name of a host's link, inside its namespace.
pub const HOST_IF: &str = "eth0";

/// How to bring an emulation up.
#[derive(Clone, Debug, Default)]
pub struct UpOptions {
    /// Write one capture per link here (`<host>.pcap`; SunATM for ATM links).
    pub capture_dir: Option<PathBuf>,
    /// Keep every frame that crosses a link, with its instant on the switch's clock, in this
    /// recorder (when there is no `capture_dir`).
    pub recorder: Option<Recorder<Vec<u8>>>,
    /// Driver tuning.
    pub driver: DriverConfig,
    /// What is being brought up, for `weft emu list`.
    pub source: String,
    /// The connection manager that installs the switches' circuit tables: they start empty
    /// and get their tables from it, again after a failure ([`crate::vc_agent`]).
    pub vc_manager: Option<crate::vc_agent::ManagerLink>,
}

/// A host as built.
#[derive(Clone, Debug)]
pub struct HostInfo {
    /// Name in the topology.
    pub name: String,
    /// Its network namespace.
    pub ns: String,
    /// Its address.
    pub addr: Ipv4Addr,
    /// Its interface's MAC address.
    pub mac: [u8; 6],
    /// Its interface's MTU.
    pub mtu: u32,
}

type SwitchJoin = JoinHandle<Result<DriverReport, String>>;

/// A running emulation. Dropping it stops the switch and removes every namespace and link.
#[derive(Debug)]
pub struct Emulation {
    run_id: String,
    switch_ns: String,
    hosts: Vec<HostInfo>,
    registry: Registry,
    stop: Arc<AtomicBool>,
    switch: Option<SwitchJoin>,
    agents: Option<crate::vc_agent::Agents>,
    topology: Topology,
    /// Set when offloads could not be turned off (ethtool missing).
    pub offload_warning: Option<String>,
}

/// 6 random hex digits from the kernel (getrandom); the caller retries on a clash with a
/// namespace that exists.
fn new_run_id() -> Result<String, EmuError> {
    let mut b = [0u8; 3];
    getrandom::fill(&mut b).map_err(|e| EmuError::io("reading random bytes")(e.into()))?;
    Ok(format!("{:02x}{:02x}{:02x}", b[0], b[1], b[2]))
}

fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Writes `value` to `/proc/sys/<key>` from a thread inside namespace `ns`.
fn sysctl_in(ns: &str, settings: &[(&str, &str)]) -> Result<(), EmuError> {
    let ns = ns.to_string();
    let settings: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    std::thread::spawn(move || -> Result<(), EmuError> {
        weft_sys::netns::enter_netns(&ns)
            .map_err(EmuError::io(format!("entering namespace {ns}")))?;
        for (k, v) in settings {
            let p = format!("/proc/sys/{}", k.replace('.', "/"));
            std::fs::write(&p, v).map_err(EmuError::io(format!("writing {p} in {ns}")))?;
        }
        Ok(())
    })
    .join()
    .map_err(|_| EmuError::Switch("sysctl thread panicked".into()))?
}

/// Runs `ip -n NS -batch -` with the given lines.
fn ip_batch(ns: &str, lines: &[String]) -> Result<(), EmuError> {
    let mut child = Command::new("ip")
        .args(["-n", ns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(EmuError::io("running ip -batch"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(lines.join("\n").as_bytes())
            .map_err(EmuError::io("feeding ip -batch"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(EmuError::io("waiting for ip -batch"))?;
    if !out.status.success() {
        return Err(EmuError::Command {
            cmd: format!("ip -n {ns} -batch ({} lines)", lines.len()),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

impl Emulation {
    /// Builds `topo` and starts the switch. On any error everything created so far is removed.
    pub fn up(topo: &Topology, opts: &UpOptions) -> Result<Self, EmuError> {
        netns::preflight()?;
        topo.validate()?;
        let existing = netns::list_namespaces();
        let mut run_id = new_run_id()?;
        while existing
            .iter()
            .any(|n| netns::run_id_of(n) == Some(run_id.as_str()))
        {
            run_id = new_run_id()?;
        }
        let switch_ns = format!("{}{run_id}", netns::PREFIX);
        let mut emu = Emulation {
            run_id: run_id.clone(),
            switch_ns: switch_ns.clone(),
            hosts: Vec::new(),
            registry: Registry::new(),
            stop: Arc::new(AtomicBool::new(false)),
            switch: None,
            agents: None,
            topology: topo.clone(),
            offload_warning: None,
        };
        emu.registry.add_namespace(&switch_ns)?;
        let v6off = [
            ("net.ipv6.conf.all.disable_ipv6", "1"),
            ("net.ipv6.conf.default.disable_ipv6", "1"),
        ];
        // IPv6 off keeps neighbour discovery and MLD chatter off the links; best effort (a
        // read-only /proc/sys only means some extra frames).
        let _ = sysctl_in(&switch_ns, &v6off);
        let ethtool = netns::have_ethtool();
        if !ethtool {
            emu.offload_warning = Some(
                "ethtool is not installed: offloads stay on and frames may be larger than the MTU"
                    .into(),
            );
        }
        for (i, h) in topo.hosts.iter().enumerate() {
            let ns = format!("{switch_ns}-{}", h.name);
            emu.registry.add_namespace(&ns)?;
            let _ = sysctl_in(&ns, &v6off);
            let port = format!("p{i}");
            netns::ip(&[
                "link", "add", HOST_IF, "netns", &ns, "type", "veth", "peer", "name", &port,
                "netns", &switch_ns,
            ])?;
            let mac = Topology::mac_of(i);
            let addr = topo.addr_of(i);
            let mtu = h.link.mtu.to_string();
            netns::ip(&["-n", &switch_ns, "link", "set", &port, "mtu", "65535", "up"])?;
            let mut lines = vec![
                format!("link set {HOST_IF} address {} mtu {mtu} up", mac_str(&mac)),
                format!("addr add {addr}/16 dev {HOST_IF}"),
                format!("route add default dev {HOST_IF}"),
            ];
            for j in (0..topo.hosts.len()).filter(|&j| j != i) {
                lines.push(format!(
                    "neigh replace {} lladdr {} dev {HOST_IF} nud permanent",
                    topo.addr_of(j),
                    mac_str(&Topology::mac_of(j))
                ));
            }
            ip_batch(&ns, &lines)?;
            if ethtool {
                netns::offloads_off(&ns, HOST_IF)?;
                netns::offloads_off(&switch_ns, &port)?;
            }
            emu.hosts.push(HostInfo {
                name: h.name.clone(),
                ns,
                addr,
                mac,
                mtu: h.link.mtu,
            });
        }
        let hosts = netns::hosts_file_text(emu.hosts.iter().map(|h| (h.name.as_str(), h.addr)));
        for h in &emu.hosts {
            netns::write_hosts_file(&h.ns, &hosts)?;
        }
        let tap: Option<Box<dyn Tap<Vec<u8>> + Send>> = match (&opts.capture_dir, &opts.recorder) {
            (Some(dir), _) => Some(Box::new(
                capture_files(topo, dir, driver::realtime_offset())
                    .map_err(EmuError::io(format!("capturing into {}", dir.display())))?,
            )),
            (None, Some(r)) => Some(Box::new(r.clone())),
            (None, None) => None,
        };
        emu.start_switch(topo, tap, opts.driver.clone(), opts.vc_manager.as_ref())?;
        emu.registry.watch_file(&RunRecord::path(&run_id));
        RunRecord {
            run_id: run_id.clone(),
            pid: std::process::id(),
            pid_start: weft_sys::process::start_time(std::process::id()),
            guard_pid: emu.registry.guard_pid(),
            switch_ns,
            hosts: emu
                .hosts
                .iter()
                .map(|h| HostRecord {
                    name: h.name.clone(),
                    ns: h.ns.clone(),
                    addr: h.addr.to_string(),
                })
                .collect(),
            source: opts.source.clone(),
        }
        .save()?;
        Ok(emu)
    }

    fn start_switch(
        &mut self,
        topo: &Topology,
        tap: Option<Box<dyn Tap<Vec<u8>> + Send>>,
        cfg: DriverConfig,
        manager: Option<&crate::vc_agent::ManagerLink>,
    ) -> Result<(), EmuError> {
        let mut net = Network::new(topo).map_err(|e| EmuError::Switch(e.to_string()))?;
        if let Some(tap) = tap {
            net.set_tap(tap);
        }
        // Under a manager, the switches that forward by circuits start with no table and no
        // contract, and get both from it.
        let mut table_ops = None;
        if let (Some(link), Some(c)) = (manager, &topo.circuits) {
            let managed: Vec<(usize, String)> = (0..c.tables.len())
                .filter_map(|s| Some((s, topo.switches.get(s)?.name.clone())))
                .collect();
            for &(s, _) in &managed {
                if let Some(v) = net.switch_mut(s).and_then(|x| x.circuits_mut()) {
                    v.clear();
                }
            }
            let (tx, rx) = crate::vc_agent::table_ops()
                .map_err(EmuError::io("making the switch's table channel"))?;
            self.agents = Some(crate::vc_agent::Agents::start(
                &self.run_id,
                managed,
                link,
                tx,
                self.stop.clone(),
            )?);
            table_ops = Some(rx);
        }
        let ports = topo.hosts.len();
        // Ethernet header, an 802.1Q tag and the host's MTU.
        let max_frames: Vec<usize> = topo
            .hosts
            .iter()
            .map(|h| 18 + h.link.mtu as usize)
            .collect();
        let ns = self.switch_ns.clone();
        let stop = self.stop.clone();
        let (tx, rx) = mpsc::channel::<Result<(), String>>();
        let handle = std::thread::Builder::new()
            .name(format!("weft-switch-{}", self.run_id))
            .spawn(move || -> Result<DriverReport, String> {
                let opened = (|| -> std::io::Result<Vec<SwitchPort>> {
                    weft_sys::netns::enter_netns(&ns)?;
                    weft_sys::sched::set_timer_slack_ns(1);
                    (0..ports)
                        .map(|i| {
                            let ring = crate::port_io::ring_bytes(ports);
                            SwitchPort::open(&format!("p{i}"), max_frames[i], cfg.rx, ring)
                        })
                        .collect()
                })();
                let sockets = match opened {
                    Ok(s) => {
                        let _ = tx.send(Ok(()));
                        s
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return Err(e.to_string());
                    }
                };
                driver::run(net, &sockets, &cfg, &stop, table_ops.as_ref())
                    .map_err(|e| e.to_string())
            })
            .map_err(EmuError::io("starting the switch thread"))?;
        self.switch = Some(handle);
        match rx.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(EmuError::Switch(format!("opening packet sockets: {e}"))),
            Err(_) => Err(EmuError::Switch(
                "the switch thread died while starting".into(),
            )),
        }
    }

    /// This run's id (6 hex digits).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The topology this emulation was built from.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The switch's namespace.
    pub fn switch_ns(&self) -> &str {
        &self.switch_ns
    }

    /// The hosts, in topology order.
    pub fn hosts(&self) -> &[HostInfo] {
        &self.hosts
    }

    /// The host called `name`.
    pub fn host(&self, name: &str) -> Result<&HostInfo, EmuError> {
        self.hosts.iter().find(|h| h.name == name).ok_or_else(|| {
            EmuError::NoHost(
                name.to_string(),
                self.hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        })
    }

    /// A command that runs `program args...` inside host `name` (`ip netns exec`).
    pub fn command(&self, name: &str, program: &str, args: &[String]) -> Result<Command, EmuError> {
        let h = self.host(name)?;
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &h.ns, program]).args(args);
        Ok(c)
    }

    /// Runs `f` on a new thread inside host `name`'s namespace (sockets it opens live there).
    pub fn in_host<F, R>(
        &self,
        name: &str,
        f: F,
    ) -> Result<JoinHandle<Result<R, EmuError>>, EmuError>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let ns = self.host(name)?.ns.clone();
        std::thread::Builder::new()
            .name(format!("weft-host-{name}"))
            .spawn(move || {
                weft_sys::netns::enter_netns(&ns)
                    .map_err(EmuError::io(format!("entering namespace {ns}")))?;
                Ok(f())
            })
            .map_err(EmuError::io("starting a host thread"))
    }

    /// Writes `/proc/sys` settings (`("net.ipv4.tcp_ecn", "1")`) inside host `name`'s
    /// namespace: per-namespace keys only, the rest of the machine untouched.
    pub fn sysctl(&self, name: &str, settings: &[(&str, &str)]) -> Result<(), EmuError> {
        sysctl_in(&self.host(name)?.ns, settings)
    }

    /// True while the switch thread runs.
    pub fn switch_running(&self) -> bool {
        self.switch.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Stops the switch and returns what it saw; the namespaces stay until [`Emulation::down`] or
    /// drop.
    pub fn stop_switch(&mut self) -> Result<DriverReport, EmuError> {
        self.stop.store(true, Ordering::SeqCst);
        match self.switch.take() {
            None => Err(EmuError::Switch("the switch was already stopped".into())),
            Some(h) => match h.join() {
                Ok(Ok(r)) => Ok(r),
                Ok(Err(e)) => Err(EmuError::Switch(e)),
                Err(_) => Err(EmuError::Switch("the switch thread panicked".into())),
            },
        }
    }

    /// The process id of the guard that removes this emulation if its owner dies
    /// ([`crate::guard`]).
    pub fn guard_pid(&self) -> Option<u32> {
        self.registry.guard_pid()
    }

    /// Stops the switch, removes every namespace and link, and returns the switch's report.
    pub fn down(mut self) -> Result<DriverReport, EmuError> {
        let r = self.stop_switch();
        self.cleanup();
        r
    }

    fn cleanup(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.switch.take() {
            let _ = h.join();
        }
        if let Some(a) = self.agents.take() {
            a.join();
        }
        self.registry.teardown();
        let _ = std::fs::remove_file(RunRecord::path(&self.run_id));
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        self.cleanup();
    }
}
