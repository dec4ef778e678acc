//! The echo paths of the GIGAswitch study's other workstations (study 003, Table 5): the
//! DECstation 5000/133, HP 735, Sun Sparc 10 and IBM RS/6000, each echoing UDP to one of its own
//! kind through the switch, no other traffic.
//!
//! Each machine's round trip rises along a line from 128 to 1024 bytes, so two parameters
//! describe it, each fitted to one figure (the two solved together, as the round trip is linear
//! in both):
//! - the cost of a `sendto` or `recvfrom` call with the wakeup of the process blocked in it
//!   (`wakeup_ns` folded in, as nothing here separates them), to the 128-byte round trip;
//! - the cost per byte on each path (per-packet costs folded in), to the 1024-byte one.
//!
//! The 64-, 256- and 512-byte round trips are predictions. The path is the scenario's
//! (`scenarios/gigaswitch-table5-baseline.toml`): each host on an FDDI port of its own (the
//! concentrators' idle rings add a few microseconds of repeaters, left out), the switch's
//! 16.5 µs, and the switch cutting through, as Table 2 says it does: there the switch adds 27,
//! 16, 12, 0 and 28 µs from 64 to 1024 bytes, not the frame's second serialisation (82 µs at
//! 1024 bytes). Stored and forwarded, the Sparc 10's slope (0.26 µs a byte a round trip) would
//! be less than the four serialisations' 0.32.
//!
//! These are not the machines' bulk paths: the Sparc 10's Table 4 ttcp (23.56 Mbit/s) asks
//! 340 ns a byte, its echo slope about 25.

use crate::calc::fit::{Fitted, Predicted, Published, Report};
use crate::calc::rtt::{Hop, request_response};
use crate::host::HostCosts;
use crate::tech::{Tech, Transport};
use crate::time::Duration;

/// The Table 4 figures (ttcp between two like workstations) and the bulk preset fitted to each:
/// one cost per byte on each path, 8000 / the figure (no HP 735 row is legible).
pub const BULK: [(&[&str], &str); 3] = [
    (&["gigaswitch.table4.ds5000"], "ds5000-133"),
    (&["gigaswitch.table4.rs6000"], "rs6000-giga"),
    (&["gigaswitch.table4.sparc10"], "sparc10"),
];

/// The workstations' bulk presets, each fitted to its Table 4 figure.
pub fn bulk(p: &Published, r: &mut Report) {
    for (&(from, name), &mbps) in BULK.iter().zip(&p.giga_table4) {
        let host = super::fit::symmetric(name, mbps, from, r);
        r.hosts.push(host);
    }
}

/// The Table 5 rows: the machine's key in `gigaswitch.table5` and the preset fitted to it.
pub const MACHINES: [(&[&str], &str); 4] = [
    (&["gigaswitch.table5.ds5000"], "ds5000-133-echo"),
    (&["gigaswitch.table5.hp735"], "hp735-echo"),
    (&["gigaswitch.table5.sparc10"], "sparc10-echo"),
    (&["gigaswitch.table5.rs6000"], "rs6000-echo"),
];

/// The packet sizes whose round trips the two parameters are fitted to, bytes: the call cost
/// to the first, the cost per byte to the second.
pub const FITTED_SIZES: [f64; 2] = [128.0, 1024.0];

/// The round trip of `size` bytes echoed between two `host`s through the switch, µs.
fn rtt_us(fddi: &Tech, switch_latency_us: f64, size: f64, host: &HostCosts) -> f64 {
    let hops = [
        Hop {
            tech: fddi,
            propagation: Duration::from_micros(1),
            switch_latency: Duration::from_secs_f64(switch_latency_us / 1e6),
            cut_through: true,
        },
        Hop {
            tech: fddi,
            propagation: Duration::from_micros(1),
            switch_latency: Duration::ZERO,
            cut_through: false,
        },
    ];
    let s = size as u64;
    request_response(&hops, Transport::Udp, s, s, host, host)
        .total
        .as_nanos() as f64
        / 1e3
}

/// Fits the four machines' echo presets and predicts the rest of their rows.
pub(crate) fn workstations(p: &Published, r: &mut Report) {
    let fddi = Tech::preset("fddi").unwrap_or_else(|e| panic!("{e}"));
    let latency = p.giga_switch_latency_us;
    for (&(from, name), rows) in MACHINES.iter().zip(&p.giga_baseline) {
        let at = |size: f64| {
            rows.iter()
                .find(|(s, _)| *s == size)
                .map(|&(_, us)| us)
                .unwrap_or(f64::NAN)
        };
        let [small, large] = FITTED_SIZES;
        // The round trip is the wire's plus four calls and each byte through four paths.
        let free = HostCosts::FREE;
        let host_ns = |size: f64| (at(size) - rtt_us(&fddi, latency, size, &free)) * 1e3 / 4.0;
        let per_byte = (host_ns(large) - host_ns(small)) / (large - small);
        let call = host_ns(small) - small * per_byte;
        let host = HostCosts {
            name,
            send_call_ns: call,
            recv_call_ns: call,
            send_other_ns_per_byte: per_byte,
            recv_other_ns_per_byte: per_byte,
            ..HostCosts::FREE
        };
        r.fitted.push(Fitted {
            host: name,
            parameter: "send = recv call_ns (128 B row)",
            value: call,
            unit: "ns",
            from,
        });
        r.fitted.push(Fitted {
            host: name,
            parameter: "send = recv other_ns_per_byte (1024 B row)",
            value: per_byte,
            unit: "ns/B",
            from,
        });
        for &(size, us) in rows {
            r.predicted.push(Predicted {
                figure: from[0],
                what: what(size),
                published: us,
                predicted: rtt_us(&fddi, latency, size, &host),
                unit: "us",
            });
        }
        r.hosts.push(host);
    }
}

/// The description of a Table 5 prediction (`fit:` on the two fitted rows).
fn what(size: f64) -> &'static str {
    match size as u64 {
        64 => "64-byte echo through the switch",
        128 => "fit: 128-byte echo through the switch (call cost)",
        256 => "256-byte echo through the switch",
        512 => "512-byte echo through the switch",
        1024 => "fit: 1024-byte echo through the switch (cost per byte)",
        _ => "echo through the switch",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calc::fit::fit;
    use crate::scenario::Figures;

    fn report() -> Report {
        let f = Figures::bundled().unwrap_or_else(|e| panic!("{e}"));
        fit(&Published::from_figures(&f).unwrap_or_else(|e| panic!("{e}")))
    }

    /// Table 5's predictions miss by what they miss (to a tenth of a per cent), in row order
    /// (64, 256, 512 bytes): the DS5000's and HP 735's 64-byte round trips lie far below their
    /// rows' lines, the DS5000's 512 and the RS/6000's 256 off them.
    #[test]
    fn table5_predictions_miss_by_what_they_miss() {
        let r = report();
        let misses = |key: &str| -> Vec<f64> {
            r.predicted
                .iter()
                .filter(|p| p.figure == key && !p.what.starts_with("fit:"))
                .map(|p| (1000.0 * p.miss()).round() / 10.0)
                .collect()
        };
        assert_eq!(misses("gigaswitch.table5.ds5000"), [281.2, -0.9, -5.7]);
        assert_eq!(misses("gigaswitch.table5.hp735"), [181.7, -0.3, 0.1]);
        assert_eq!(misses("gigaswitch.table5.sparc10"), [3.9, -0.3, 1.8]);
        assert_eq!(misses("gigaswitch.table5.rs6000"), [-2.4, -7.2, -1.4]);
    }

    /// Through a switch that stored and forwarded each frame, the Sparc 10's row would ask less
    /// than nothing per byte: its slope is below the four serialisations'.
    #[test]
    fn the_sparc10_row_needs_the_switch_to_cut_through() {
        let fddi = Tech::preset("fddi").unwrap_or_else(|e| panic!("{e}"));
        let free = HostCosts::FREE;
        let wire_slope =
            (rtt_us(&fddi, 16.5, 1024.0, &free) - rtt_us(&fddi, 16.5, 128.0, &free)) / 896.0;
        // Cut through: two serialisations of 80 ns a byte a round trip; stored: four.
        assert!((wire_slope - 0.16).abs() < 0.001, "{wire_slope}");
        let sparc = (2171.0 - 1935.0) / 896.0;
        assert!(sparc > wire_slope && sparc < 2.0 * wire_slope, "{sparc}");
        let r = report();
        let h = r
            .host("sparc10-echo")
            .unwrap_or_else(|| panic!("not fitted"));
        assert!(h.send_other_ns_per_byte > 0.0);
    }
}
