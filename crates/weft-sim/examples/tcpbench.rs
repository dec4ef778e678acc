//! Speed of simulated TCP, for bench/sim.sh (not a test): a dumbbell of FLOWS senders, each on
//! its own link into a left switch, a bottleneck trunk to a right switch and FLOWS receivers,
//! one bulk TCP flow per sender/receiver pair, run on the one event engine through the same
//! switch the emulator runs, with the sans-IO TCP of `weft_model::tcp` at both ends.
//!
//! `tcpbench FLOWS RATE DELAY QUEUE SECONDS` prints one `key=value` line: TCP segments the hosts
//! sent (data and ACKs, both directions), payload bytes read, engine events and the CPU seconds of
//! the run alone. The hosts run `stack = "linux"` with `cc = "newreno"` (SACK, delayed ACKs every
//! second segment, 4 MiB buffers), as bench/sim-ns3-tcp-dumbbell.cc configures ns-3.

use weft_model::app::bulk::{BulkSink, BulkSource};
use weft_model::net::Topology;
use weft_model::scenario::Scenario;
use weft_sim::net::tput::{self, DEFAULT_TIME};
use weft_sim::net::{Hosted, RunOptions, run};

/// CPU seconds this process has used (user and system, all threads).
fn cpu_seconds() -> f64 {
    weft_sys::cpu::CpuTime::process().total_ns() as f64 / 1e9
}

/// The dumbbell as a scenario file: one `tput` workload per pair, so that sender k talks only to
/// receiver k (a workload's `from` x `to` would pair every sender with every receiver).
fn dumbbell(flows: usize, rate: &str, delay: &str, queue: u64, seconds: f64) -> String {
    let tech = format!("{{ preset = \"gige\", rate = \"{rate}\" }}");
    let mut s = String::from("name = \"tcp-dumbbell\"\nseed = 1\n");
    for sw in ["left", "right"] {
        s += &format!(
            "[[switch]]\nname = \"{sw}\"\nfabric = \"output-queued\"\nbuffer = \"{queue} frames\"\n"
        );
    }
    s += &format!("[[link]]\nends = [\"left\", \"right\"]\ntech = {tech}\ndelay = \"{delay}\"\n");
    for k in 0..flows {
        for (h, sw) in [(format!("s{k}"), "left"), (format!("r{k}"), "right")] {
            s += &format!(
                "[[host]]\nname = \"{h}\"\n[[link]]\nends = [\"{h}\", \"{sw}\"]\ntech = {tech}\ndelay = \"{delay}\"\n"
            );
        }
    }
    for k in 0..flows {
        s += &format!(
            "[[workload]]\nkind = \"tput\"\nfrom = \"s{k}\"\nto = \"r{k}\"\nproto = \"tcp\"\n\
             stack = \"linux\"\ncc = \"newreno\"\ntime = \"{seconds}s\"\n"
        );
    }
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let flows: usize = arg(1, "16").parse().unwrap_or(16);
    let (rate, delay) = (arg(2, "1Gbps"), arg(3, "50us"));
    let queue: u64 = arg(4, "100").parse().unwrap_or(100);
    let seconds: f64 = arg(5, "10").parse().unwrap_or(10.0);
    let text = dumbbell(flows, &rate, &delay, queue, seconds);
    let s = match Scenario::parse(&text, "tcp-dumbbell") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tcpbench: {e}");
            std::process::exit(2);
        }
    };
    let topo = match Topology::from_scenario(&s, s.seed) {
        Ok((t, _)) => t,
        Err(e) => {
            eprintln!("tcpbench: {e}");
            std::process::exit(2);
        }
    };
    let mut apps = Vec::new();
    for w in &s.workloads {
        match tput::flow_apps(&s, &topo, w, s.seed) {
            Ok((a, _)) => apps.extend(a),
            Err(e) => {
                eprintln!("tcpbench: {e}");
                std::process::exit(2);
            }
        }
    }
    let time = s.workloads[0].time.unwrap_or(DEFAULT_TIME);
    let opts = RunOptions {
        duration: time,
        ..RunOptions::default()
    };
    let t = cpu_seconds();
    let r = match run(&topo, apps, opts, |_| {}) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tcpbench: {e}");
            std::process::exit(2);
        }
    };
    let cpu = cpu_seconds() - t;
    let (mut segments, mut read) = (0u64, 0u64);
    for (_, app) in r.hosts.apps_of::<Hosted<BulkSource>>() {
        segments += app.connection().map_or(0, |c| c.stats().segments_sent);
    }
    for (_, app) in r.hosts.apps_of::<Hosted<BulkSink>>() {
        segments += app.connection().map_or(0, |c| c.stats().segments_sent);
        read += app.app().bytes();
    }
    println!(
        "weft segments={segments} payload_bytes={read} goodput_mbps={:.2} events={} cpu_s={cpu:.6} \
         segments_per_cpu_s={:.0}",
        read as f64 * 8.0 / time.as_secs_f64() / 1e6,
        r.stats.sent + r.stats.delivered,
        segments as f64 / cpu.max(1e-9)
    );
}
