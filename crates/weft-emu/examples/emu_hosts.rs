//! Benchmark (run by bench/emu.sh, not a test): the largest number of OC-3c hosts the userspace
//! switch carries at full rate with a lag p99 under a limit. Host i sends 9180-byte datagrams to
//! host i+1 (a ring, so every port is loaded both ways) at 98% of the AAL5 payload bound.
//!
//! Usage: emu_hosts [MAX_HOSTS] [LAG_LIMIT_US] [SECONDS] [FIRST]   (defaults 32, 50, 2, 2):
//! tries FIRST hosts, then 2 or 4 more at a time, until one fails or MAX_HOSTS is passed.

use std::time::Duration as StdDuration;

use weft_emu::{Emulation, HostSpec, LinkSpec, Topology, UpOptions, workload};
use weft_model::net::aal5_payload_bound;
use weft_model::{Duration, Rate};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let max: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(32);
    let limit_us: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(50);
    let secs: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(2);
    let cells = Rate::bps(149_760_000);
    let payload = 9152usize;
    let bound = aal5_payload_bound(cells, payload as u64, 28);
    let rate = Rate((bound * 0.98) as u64);
    let mut best = 0;
    let mut n: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(2).max(2);
    while n <= max {
        let link = LinkSpec::atm(Some(cells), Duration::ZERO, 0, 100);
        let topo = Topology::star(
            (0..n)
                .map(|i| HostSpec {
                    name: format!("h{i}"),
                    addr: None,
                    link: link.clone(),
                    switch: 0,
                })
                .collect(),
            Default::default(),
            1,
        );
        let emu = match Emulation::up(&topo, &UpOptions::default()) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("emu_hosts: {e}");
                std::process::exit(2);
            }
        };
        let time = StdDuration::from_secs(secs);
        let warm = StdDuration::from_millis(500);
        let got: f64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..n)
                .map(|i| {
                    let emu = &emu;
                    s.spawn(move || {
                        let (f, t) = (format!("h{i}"), format!("h{}", (i + 1) % n));
                        workload::udp_cbr(emu, &f, &t, rate, payload, time, warm)
                            .map(|r| r.steady_bps)
                            .unwrap_or(0.0)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or(0.0)).sum()
        });
        let rep = match emu.down() {
            Ok(r) => r,
            Err(e) => {
                eprintln!("emu_hosts: {e}");
                std::process::exit(1);
            }
        };
        let offered = rate.as_bps() as f64 * n as f64;
        let ok = rep.lag.p99_ns <= limit_us * 1000 && got >= 0.95 * offered;
        println!(
            "{n:>3} hosts: delivered {:.1} of {:.1} Mbit/s ({:.1}%), lag p50 {} us p99 {} us max {} us {}",
            got / 1e6,
            offered / 1e6,
            100.0 * got / offered,
            rep.lag.p50_ns / 1000,
            rep.lag.p99_ns / 1000,
            rep.lag.max_ns / 1000,
            if ok { "ok" } else { "FAIL" }
        );
        if !ok {
            break;
        }
        best = n;
        n += if n < 8 { 2 } else { 4 };
    }
    println!("largest OC-3c host count at full rate with lag p99 <= {limit_us} us: {best}");
}
