//! Tests of SBTP and MBTP on simulated hosts ([`super::xfer`]): the protocol core of
//! `weft-xfer` completes a file through the simulated network, and the hosts' disks and CPUs
//! move the time split and the rate as RIACS describes.

use weft_model::host::disk::{Disk, DiskSpec};
use weft_model::host::{HostCosts, HostCpu};
use weft_model::net::{HostSpec, LinkSpec, Topology};
use weft_model::{Duration, Rate};
use weft_xfer::wire::Mode;

use super::hosts::App;
use super::run::{RunOptions, run};
use super::xfer::{XferReceiver, XferSender, XferSpec, xfer_apps};

const MIB: u64 = 1 << 20;

/// Two hosts on an ATM switch, TAXI-rate links of 50 us.
fn pair() -> Topology {
    let host = |name: &str| HostSpec {
        name: name.into(),
        addr: None,
        link: LinkSpec::atm(Some(Rate::mbps(100)), Duration::from_micros(50), 0, 100),
        switch: 0,
    };
    Topology::star(vec![host("a"), host("b")], Default::default(), 3)
}

fn spec(mode: Mode, file: u64, sessions: u32, stripes: u32) -> XferSpec {
    XferSpec {
        mode,
        file,
        buffer: MIB as u32,
        packet: 9000,
        sessions,
        stripes,
        socket_buffer: 64 << 10,
        settle: Duration::from_millis(20),
    }
}

/// A host that sends a 9000-byte datagram in 1.8 ms (40 Mbit/s) and receives it in `rx_ns`
/// per byte.
fn costs(rx_ns: f64) -> HostCosts {
    HostCosts {
        name: "t",
        send_call_ns: 20_000.0,
        recv_call_ns: 20_000.0,
        send_other_ns_per_byte: 197.0,
        recv_other_ns_per_byte: rx_ns,
        copy_ns_per_byte: 20.0,
        ..HostCosts::FREE
    }
}

fn disk(read_mbps: u64, write_mbps: u64) -> Disk {
    Disk::new(DiskSpec {
        read_rate: Rate::mbps(read_mbps),
        write_rate: Rate::mbps(write_mbps),
        ..DiskSpec::plain("t", Rate::mbps(read_mbps), Duration::from_millis(16))
    })
}

struct Outcome {
    mbps: f64,
    sync: f64,
    disk: f64,
    transfer: f64,
    lost: u64,
    drops: u64,
    written: u64,
}

fn transfer(
    s: &XferSpec,
    cpus: (Option<HostCosts>, Option<HostCosts>),
    disks: (Option<Disk>, Option<Disk>),
) -> Outcome {
    let cpus = (cpus.0.map(HostCpu::new), cpus.1.map(HostCpu::new));
    let (tx, rx) = xfer_apps(s, 0, 1, cpus, disks, 1);
    let apps: Vec<(usize, Box<dyn App>)> = vec![(0, Box::new(tx)), (1, Box::new(rx))];
    let opts = RunOptions {
        duration: Duration::from_secs(60),
        ..RunOptions::default()
    };
    let r = run(&pair(), apps, opts, |_| {}).expect("runs");
    let tx = r.hosts.app::<XferSender>(0).expect("sender");
    let rx = r.hosts.app::<XferReceiver>(1).expect("receiver");
    assert!(tx.is_finished(), "the transfer did not finish");
    let sp = tx.split;
    Outcome {
        mbps: s.file as f64 * 8.0 / sp.elapsed.as_secs_f64() / 1e6,
        sync: sp.pct(sp.sync()),
        disk: sp.pct(sp.disk),
        transfer: sp.pct(sp.transfer),
        lost: rx.packets_lost(),
        drops: rx.socket_drops(),
        written: rx.bytes_written,
    }
}

#[test]
fn sbtp_moves_a_file_whole_through_the_simulated_network() {
    let o = transfer(&spec(Mode::Sbtp, 8 * MIB, 1, 4), (None, None), (None, None));
    assert_eq!(o.written, 8 * MIB);
    assert_eq!(o.lost, 0);
    // Hosts that cost nothing: the TAXI line's cells (9000 bytes of payload in 189 cells, 89.85
    // Mbit/s at most) less two control round trips per buffer.
    assert!((85.0..89.85).contains(&o.mbps), "{:.1} Mbit/s", o.mbps);
}

#[test]
fn the_time_split_follows_the_disks_and_the_cpu() {
    let s = spec(Mode::Sbtp, 8 * MIB, 1, 4);
    let cpus = (Some(costs(50.0)), Some(costs(50.0)));
    // A sender that reads at 40 Mbit/s spends as long on its disk as on the network.
    let fast_rx = transfer(
        &s,
        cpus.clone(),
        (Some(disk(40, 400)), Some(disk(400, 400))),
    );
    assert!(
        (fast_rx.disk - fast_rx.transfer).abs() < 10.0,
        "disk {:.1}% against transfer {:.1}%",
        fast_rx.disk,
        fast_rx.transfer
    );
    assert!(fast_rx.sync < 10.0, "sync {:.1}%", fast_rx.sync);
    // A receiver that writes at 10 Mbit/s keeps the sender waiting: sync takes over.
    let slow_rx = transfer(&s, cpus, (Some(disk(40, 400)), Some(disk(400, 10))));
    assert!(
        slow_rx.sync > 40.0,
        "sync {:.1}% disk {:.1}% transfer {:.1}% {:.2} Mbit/s",
        slow_rx.sync,
        slow_rx.disk,
        slow_rx.transfer,
        slow_rx.mbps
    );
    assert!(slow_rx.mbps < fast_rx.mbps * 0.7);
    // The rest, as in RIACS's table, is the control messages between the three.
    let sum = slow_rx.sync + slow_rx.disk + slow_rx.transfer;
    assert!((85.0..=100.0).contains(&sum), "{sum}");
}

#[test]
fn mbtp_keeps_the_network_busy_while_receivers_write() {
    let cpus = (Some(costs(50.0)), Some(costs(50.0)));
    let disks = || (Some(disk(400, 400)), Some(disk(400, 20)));
    let one = transfer(&spec(Mode::Sbtp, 8 * MIB, 1, 4), cpus.clone(), disks());
    let five = transfer(&spec(Mode::Mbtp, 8 * MIB, 5, 4), cpus, disks());
    assert_eq!(five.written, 8 * MIB);
    // Five receivers write side by side on one disk: the disk still bounds the file, but the
    // sender no longer waits for each buffer's write before sending the next.
    assert!(
        five.mbps > one.mbps * 1.25,
        "MBTP {:.1} against SBTP {:.1}",
        five.mbps,
        one.mbps
    );
}

#[test]
fn mbtp_reads_a_buffer_while_another_is_on_the_network() {
    // A sender whose disk reads a 1 MiB buffer in 226 ms (40 Mbit/s and a seek) and whose CPU
    // copies it out of the cache (21 ms) and sends it (117 datagrams of 1.8 ms: 210 ms); a
    // receiver that keeps up. Read then send, in one process: 457 ms a buffer, 18.4 Mbit/s.
    // MBTP's sessions read while another sends: the first read, then the CPU's 231 ms a
    // buffer, 8 MiB in 2.07 s: 32.4 Mbit/s at most (less the control round trips).
    let cpus = (Some(costs(50.0)), Some(costs(50.0)));
    let disks = || (Some(disk(40, 400)), Some(disk(400, 400)));
    let one = transfer(&spec(Mode::Mbtp, 8 * MIB, 1, 4), cpus.clone(), disks());
    let five = transfer(&spec(Mode::Mbtp, 8 * MIB, 5, 4), cpus, disks());
    assert_eq!(five.written, 8 * MIB);
    assert!(
        (17.0..18.4).contains(&one.mbps),
        "one session {:.1}",
        one.mbps
    );
    assert!(
        (30.8..32.4).contains(&five.mbps),
        "five sessions {:.1}",
        five.mbps
    );
    // The process waits on its disk only for the first buffer (its read and copy, 247 ms of
    // 2.1 s).
    assert!((11.0..12.5).contains(&five.disk), "disk {:.1}%", five.disk);
    assert!(one.disk > 45.0, "disk {:.1}%", one.disk);
}

#[test]
fn a_slow_receiver_drops_datagrams_and_striping_over_more_sockets_drops_fewer() {
    // The receiver takes 1.45 us a byte (13 ms a datagram) against the sender's 1.8 ms: its
    // sockets overflow within each buffer.
    let cpus = (Some(costs(50.0)), Some(costs(250.0)));
    let one = transfer(&spec(Mode::Sbtp, 4 * MIB, 1, 1), cpus.clone(), (None, None));
    let eight = transfer(&spec(Mode::Sbtp, 4 * MIB, 1, 8), cpus, (None, None));
    assert!(one.drops > 0 && one.lost > 0, "{} drops", one.drops);
    assert!(
        eight.lost < one.lost / 2,
        "8 sockets lost {} against 1 socket's {}",
        eight.lost,
        one.lost
    );
}

/// Fitting harness for RIACS's Table 2 (run by hand with `--ignored --nocapture`); reads the
/// parameters from the environment.
#[test]
#[ignore]
fn riacs_fit() {
    let env = |k: &str, d: f64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let cpu = |p: &str| HostCosts {
        name: "fit",
        send_call_ns: env(&format!("{p}_SCALL"), 0.0),
        recv_call_ns: env(&format!("{p}_RCALL"), 0.0),
        send_other_ns_per_byte: env(&format!("{p}_S"), 300.0),
        recv_other_ns_per_byte: env(&format!("{p}_R"), 300.0),
        copy_ns_per_byte: env(&format!("{p}_COPY"), 0.0),
        ..HostCosts::FREE
    };
    let dsk = |h: &str| {
        let h = h.to_uppercase();
        let r = env(&format!("{h}_READ"), 40.0);
        let w = env(&format!("{h}_WRITE"), 30.0);
        Disk::new(DiskSpec {
            name: "fit",
            read_rate: Rate((r * 1e6) as u64),
            write_rate: Rate((w * 1e6) as u64),
            seek: Duration::from_millis(16),
            block: 8192,
            cache: 32 << 20,
            dirty_limit: env("DIRTY", 393216.0) as u64,
            readahead: 57344,
            sync_metadata: Duration::ZERO,
        })
    };
    let kind = |h: &str| h.to_uppercase();
    let mode = if env("MBTP", 0.0) > 0.0 {
        Mode::Mbtp
    } else {
        Mode::Sbtp
    };
    let file = if mode == Mode::Mbtp {
        25 << 20
    } else {
        100_000_000
    };
    let pairs: Vec<(String, String)> = std::env::var("PAIRS")
        .unwrap_or("psyche/conan,psyche/dufus,dufus/conan,conan/dufus".into())
        .split(',')
        .map(|p| {
            let (a, b) = p.split_once('/').unwrap_or((p, p));
            (a.to_string(), b.to_string())
        })
        .collect();
    for (a, b) in pairs {
        let mut s = spec(
            mode,
            file,
            if mode == Mode::Mbtp { 5 } else { 1 },
            env("STRIPES", 4.0) as u32,
        );
        s.socket_buffer = env("SOCKBUF", 41600.0) as u64;
        let cpus = (
            Some(HostCpu::new(cpu(&kind(&a)))),
            Some(HostCpu::new(cpu(&kind(&b)))),
        );
        let (tx, rx) = xfer_apps(&s, 0, 1, cpus, (Some(dsk(&a)), Some(dsk(&b))), 1);
        let apps: Vec<(usize, Box<dyn App>)> = vec![(0, Box::new(tx)), (1, Box::new(rx))];
        let opts = RunOptions {
            duration: Duration::from_secs(600),
            ..RunOptions::default()
        };
        let r = run(&pair(), apps, opts, |_| {}).expect("runs");
        let tx = r.hosts.app::<XferSender>(0).expect("sender");
        let rxa = r.hosts.app::<XferReceiver>(1).expect("receiver");
        let sp = tx.split;
        println!(
            "{a}/{b}: sync {:.1} disk {:.1} transfer {:.1} -> {:.2} Mbit/s (lost {}, drops {})",
            sp.pct(sp.sync()),
            sp.pct(sp.disk),
            sp.pct(sp.transfer),
            file as f64 * 8.0 / sp.elapsed.as_secs_f64() / 1e6,
            rxa.packets_lost(),
            rxa.socket_drops()
        );
    }
}

/// Runs the scenario file `WEFT_SCENARIO` on the model and the simulator and prints both (by
/// hand, with `--ignored --nocapture`).
#[test]
#[ignore]
fn scenario_by_hand() {
    let Ok(path) = std::env::var("WEFT_SCENARIO") else {
        return;
    };
    let text = std::fs::read_to_string(&path).expect("reads");
    let s = weft_model::Scenario::parse(&text, &path).expect("parses");
    for p in weft_model::calc::engine::evaluate(&s) {
        println!("model w{} {:?} {:?}", p.workload, p.metrics, p.notes);
    }
    let doc = crate::scenario::run(&s, s.seed);
    for x in &doc.samples {
        println!("sim {x}");
    }
}
