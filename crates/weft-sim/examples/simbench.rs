//! Speed of the simulator, for bench/sim.sh (not a test): prints one `key=value` line per run.
//!
//! `simbench fifo [SLOTS]`  saturated 16x16 input-queued FIFO: slot-port updates per CPU second
//! `simbench islip [SLOTS]` 32x32 VOQ + iSLIP (4 iterations) at Bernoulli load 0.9
//! `simbench oq [MS]`       event-driven output-queued port: 16 hosts of OC-3c cells into one
//! `simbench m2o HOSTS RATE LOAD SIZE QUEUE SECONDS` the ns-3 comparison's many-to-one run

use weft_model::queue::{Capacity, DropPolicy};
use weft_model::{Duration, Rate};
use weft_sim::experiments::islip_run;
use weft_sim::many_to_one::{Host, ManyToOne, Unit, run_many_to_one};
use weft_sim::slotted::SlottedConfig;
use weft_sim::{HolParams, run_saturated};

/// CPU seconds this process has used (user and system, all threads).
fn cpu_seconds() -> f64 {
    weft_sys::cpu::CpuTime::process().total_ns() as f64 / 1e9
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map(String::as_str).unwrap_or("fifo");
    match what {
        "fifo" => {
            let slots = arg(&args, 2, 20_000_000.0f64) as u64;
            let mut p = HolParams::square(16, slots, 1);
            p.warmup = 0;
            let t = cpu_seconds();
            let r = run_saturated(&p, |_| {});
            let cpu = cpu_seconds() - t;
            let updates = 16.0 * slots as f64;
            println!(
                "fifo16 slots={slots} throughput={:.4} cpu_s={cpu:.3} slot_port_updates_per_s={:.0}",
                r.input_efficiency(),
                updates / cpu
            );
        }
        "islip" => {
            let slots = arg(&args, 2, 2_000_000.0f64) as u64;
            let cfg = SlottedConfig {
                slots,
                warmup: 0,
                sample_every: 0,
            };
            let t = cpu_seconds();
            let r = islip_run(32, 4, 0.9, cfg, 1).expect("32 ports is within iSLIP's limit");
            let cpu = cpu_seconds() - t;
            println!(
                "islip32 slots={slots} throughput={:.4} cpu_s={cpu:.3} slot_port_updates_per_s={:.0}",
                r.throughput(32),
                32.0 * slots as f64 / cpu
            );
        }
        "oq" => {
            let ms = arg(&args, 2, 2000u64);
            let p = ManyToOne {
                hosts: vec![
                    Host {
                        rate: Rate(149_760_000),
                        load: 0.07,
                    };
                    16
                ],
                out_rate: Rate(149_760_000),
                frame_bytes: 9188,
                unit: Unit::Cells,
                frame_cells: None,
                capacity: Capacity::Cells(2000),
                policy: DropPolicy::Epd { threshold: 1500 },
                duration: Duration::from_millis(ms),
                sample_every: Duration::ZERO,
                seed: 1,
            };
            let t = cpu_seconds();
            let r = run_many_to_one(&p, |_| {}).expect("a valid many-to-one run");
            let cpu = cpu_seconds() - t;
            println!(
                "oq_events sim_ms={ms} events={} loss={:.4} cpu_s={cpu:.3} events_per_s={:.0}",
                r.events,
                r.loss(),
                r.events as f64 / cpu
            );
        }
        "m2o" => {
            let hosts = arg(&args, 2, 4usize);
            let rate: Rate = args
                .get(3)
                .and_then(|s| s.parse().ok())
                .unwrap_or(Rate::mbps(100));
            // As ns-3's OnOff application counts it: payload bits per second over the link rate.
            let payload_load = arg(&args, 4, 0.5f64);
            let payload = arg(&args, 5, 1472usize);
            // UDP payload plus UDP (8), IPv4 (20) and PPP (2) headers: what ns-3 puts on the wire,
            // so each host sends the same packets per second as ns-3's.
            let size = payload + 30;
            let load = (payload_load * size as f64 / payload as f64).min(1.0);
            let queue = arg(&args, 6, 100u64);
            let secs = arg(&args, 7, 5.0f64);
            let p = ManyToOne {
                hosts: vec![Host { rate, load }; hosts],
                out_rate: rate,
                frame_bytes: size,
                unit: Unit::Frames,
                frame_cells: None,
                capacity: Capacity::Frames(queue),
                policy: DropPolicy::Tail,
                duration: Duration::from_secs_f64(secs),
                sample_every: Duration::ZERO,
                seed: 1,
            };
            let t = cpu_seconds();
            let r = run_many_to_one(&p, |_| {}).expect("a valid many-to-one run");
            let cpu = cpu_seconds() - t;
            let sent: u64 = r.per_host_sent.iter().sum();
            println!(
                "weft sent={sent} received={} dropped={} events={} cpu_s={cpu:.6}",
                r.delivered, r.output.frames_dropped, r.events
            );
        }
        other => {
            eprintln!("simbench: unknown run {other:?}: fifo, islip, oq or m2o");
            std::process::exit(2);
        }
    }
}
