//! Fidelity of the emulator against closed-form expectations (ATM cell arithmetic, window/RTT).
//! Each test prints its measured figures; tolerances are those of the issue.
//! The switch busy-polls and keeps the CPUs from halting (see `driver` and `keep_awake`), which is
//! what lets wall-clock figures hold on a 2-core VM whose halted CPUs wake up late.

mod common;

use std::time::Duration as StdDuration;

use weft_emu::driver::DriverReport;
use weft_emu::{FabricKind, FabricSpec, HostSpec, LinkSpec, Topology, workload};
use weft_model::net::{ETH_HEADER, aal5_payload_bound};
use weft_model::queue::{Buffer, DropPolicy};
use weft_model::shaper::VcContract;
use weft_model::{Duration, Rate, Size};

/// OC-3c: 149.76 Mbit/s of SONET payload carries the cell stream.
const OC3C_CELLS: Rate = Rate::bps(149_760_000);
const VP: Rate = Rate::mbps(26);

fn atm(rate: Rate, delay_us: u64, mtu: u32, vci: u16) -> LinkSpec {
    let mut l = LinkSpec::atm(Some(rate), Duration::from_micros(delay_us), 0, vci);
    l.mtu = mtu;
    l
}

fn host(name: &str, link: LinkSpec) -> HostSpec {
    HostSpec {
        name: name.into(),
        addr: None,
        link,
        switch: 0,
    }
}

fn pair(a: LinkSpec, b: LinkSpec) -> Topology {
    Topology::star(vec![host("a", a), host("b", b)], FabricSpec::default(), 7)
}

/// Time a frame of `frame_len` bytes takes on a CLIP (LLC/SNAP) ATM line of cell rate `rate`.
fn atm_wire_time(frame_len: usize, rate: Rate) -> u64 {
    let l = LinkSpec::atm(Some(rate), Duration::ZERO, 0, 100);
    rate.time_to_send(Size(l.wire_bytes(frame_len))).as_nanos()
}

/// 30 Mbit/s of UDP datagrams of `payload` bytes from a to b for 1.5 s (the first 0.3 s not
/// counted in the steady rate).
fn udp_30mbps(topo: &Topology, payload: usize) -> (workload::UdpResult, DriverReport) {
    common::with_emulation(topo, |emu| {
        workload::udp_cbr(
            emu,
            "a",
            "b",
            Rate::mbps(30),
            payload,
            secs(1500),
            secs(300),
        )
    })
}

fn secs(ms: u64) -> StdDuration {
    StdDuration::from_millis(ms)
}

#[test]
fn udp_through_26mbps_vp_meets_aal5_payload_bound() {
    require_root!();
    let _g = common::serial();
    // The VP's queue discards whole frames (EPD) once half full, as the ASX-1000 could: with
    // plain cell drop an overloaded VP delivers almost no whole frames (see the two-to-one test).
    let mut vp = atm(VP, 0, 9180, 101);
    vp.drop = DropPolicy::Epd {
        threshold: Buffer::cells(2048),
    };
    let topo = pair(atm(OC3C_CELLS, 0, 9180, 100), vp);
    for payload in [1472usize, 8192] {
        let bound = aal5_payload_bound(VP, payload as u64, 28);
        let (r, rep) = udp_30mbps(&topo, payload);
        let ratio = r.steady_bps / bound;
        println!(
            "udp {payload} B over 26 Mbit/s VP: {:.3} Mbit/s received, AAL5 bound {:.3} -> {:.4} (sent {}, received {}, cells dropped {}, lag p99 {} us)",
            r.steady_bps / 1e6,
            bound / 1e6,
            ratio,
            r.sent,
            r.received,
            rep.ports[1].egress.cells_dropped,
            rep.lag.p99_ns / 1000
        );
        assert!(
            (ratio - 1.0).abs() <= 0.02,
            "payload {payload}: ratio {ratio}"
        );
    }
}

#[test]
fn rtt_over_17ms_path() {
    require_root!();
    let _g = common::serial();
    let topo = pair(
        atm(OC3C_CELLS, 0, 9180, 100),
        atm(OC3C_CELLS, 8500, 9180, 101),
    );
    let size = 64usize;
    let (r, rep) = common::with_emulation(&topo, |emu| {
        workload::udp_rr(emu, "a", "b", (size, size), 100, secs(1000), Some(secs(16)))
    });
    // Each way: the request's cells serialised on both links (store-and-forward by frame).
    let one_way = atm_wire_time(size + 28 + ETH_HEADER, OC3C_CELLS) * 2;
    let expected = 17_000_000 + 2 * one_way;
    let p50 = r.quantile(0.5);
    println!(
        "udp rr {size} B over 17 ms: p50 {:.3} ms, expected {:.3} ms, p99 {:.3} ms, lost {}, switch lag p50 {} us p99 {} us",
        p50 as f64 / 1e6,
        expected as f64 / 1e6,
        r.quantile(0.99) as f64 / 1e6,
        r.lost,
        rep.lag.p50_ns / 1000,
        rep.lag.p99_ns / 1000
    );
    assert!(r.lost <= 1, "{} requests lost", r.lost);
    assert!(
        p50.abs_diff(expected) <= 300_000,
        "p50 {p50} ns vs {expected} ns"
    );
}

/// TCP payload per segment and its wire time on `f` at `rate` for an MTU (timestamps on: 52 bytes
/// of TCP/IP headers).
fn segment(mtu: u32, rate: Rate) -> (u64, u64) {
    let payload = mtu as u64 - 52;
    (payload, atm_wire_time(mtu as usize + ETH_HEADER, rate))
}

#[test]
fn tcp_window_35600_over_17ms() {
    require_root!();
    let _g = common::serial();
    let mtu = 4490;
    let topo = pair(
        atm(OC3C_CELLS, 0, mtu, 100),
        atm(OC3C_CELLS, 8500, mtu, 101),
    );
    let window = 35_600u32;
    let (r, _rep) = common::with_emulation(&topo, |emu| {
        workload::tcp_bulk(emu, "a", "b", Some(window), secs(3000), secs(600))
    });
    // One window per round trip: 17 ms plus a segment over both links and an ACK back.
    let (_, seg) = segment(mtu, OC3C_CELLS);
    let ack = atm_wire_time(52 + ETH_HEADER, OC3C_CELLS);
    let rtt = 17_000_000 + 2 * seg + 2 * ack;
    let bound = window as f64 * 8.0 / (rtt as f64 / 1e9);
    let ratio = r.steady_bps / bound;
    println!(
        "tcp window {window} B over 17 ms (MTU {mtu}): {:.3} Mbit/s, window/RTT {:.3} Mbit/s (RTT {:.3} ms) -> {:.3}",
        r.steady_bps / 1e6,
        bound / 1e6,
        rtt as f64 / 1e6,
        ratio
    );
    assert!((ratio - 1.0).abs() <= 0.10, "ratio {ratio}");
}

#[test]
fn tcp_128k_window_fills_26mbps_vp_at_mtu_4490() {
    require_root!();
    let _g = common::serial();
    let mtu = 4490;
    let topo = pair(atm(OC3C_CELLS, 0, mtu, 100), atm(VP, 8500, mtu, 101));
    let (r, rep) = common::with_emulation(&topo, |emu| {
        workload::tcp_bulk(emu, "a", "b", Some(128 * 1024), secs(3000), secs(1000))
    });
    let (payload, seg) = segment(mtu, VP);
    let bound = payload as f64 * 8.0 / (seg as f64 / 1e9);
    let ratio = r.steady_bps / bound;
    println!(
        "tcp 128 KiB window over 26 Mbit/s VP, MTU {mtu}: {:.3} Mbit/s, goodput bound {:.3} -> {:.3} (cells dropped {}, max queue {} cells)",
        r.steady_bps / 1e6,
        bound / 1e6,
        ratio,
        rep.ports[1].egress.cells_dropped,
        rep.ports[1].egress.max_occupancy
    );
    assert!(ratio >= 0.90, "ratio {ratio}");
    assert!(ratio <= 1.01, "faster than the line: {ratio}");
}

#[test]
fn two_to_one_oc3c_epd_beats_cell_drop() {
    require_root!();
    let _g = common::serial();
    let run = |drop: DropPolicy<Buffer>| {
        let mut out = atm(OC3C_CELLS, 0, 9180, 102);
        out.buffer = Buffer::cells(512);
        out.drop = drop;
        let topo = Topology::star(
            vec![
                host("a", atm(OC3C_CELLS, 0, 9180, 100)),
                host("b", atm(OC3C_CELLS, 0, 9180, 101)),
                host("c", out),
            ],
            FabricSpec::default(),
            11,
        );
        let ((ra, rb), rep) = common::with_emulation(&topo, |emu| {
            std::thread::scope(|s| {
                let a = s.spawn(|| {
                    workload::udp_cbr(emu, "a", "c", Rate::mbps(120), 9152, secs(1500), secs(300))
                });
                let b =
                    workload::udp_cbr(emu, "b", "c", Rate::mbps(120), 9152, secs(1500), secs(300));
                let a = a.join().map_err(|_| weft_emu::EmuError::Interrupted)?;
                Ok((a?, b?))
            })
        });
        let e = rep.ports[2].egress.clone();
        let goodput = ra.steady_bps + rb.steady_bps;
        println!(
            "two-to-one OC-3c, 512-cell buffer, {drop:?}: goodput {:.2} Mbit/s; cells in {} dropped {} ({:.1}%); frames in {} delivered {} corrupt {} refused(EPD) {}",
            goodput / 1e6,
            e.cells_in,
            e.cells_dropped,
            100.0 * e.cells_dropped as f64 / e.cells_in.max(1) as f64,
            e.frames_in,
            e.frames_out,
            e.frames_corrupt,
            e.frames_epd
        );
        (goodput, e)
    };
    let (tail, st) = run(DropPolicy::Tail);
    let (epd, se) = run(DropPolicy::Epd {
        threshold: Buffer::cells(256),
    });
    assert!(st.cells_dropped > 0 && st.frames_corrupt > 0, "{st:?}");
    assert!(se.frames_epd > 0, "{se:?}");
    assert!(epd > tail, "EPD {epd} vs tail drop {tail}");
}

/// TCP through each input-queued fabric (OC-3c ports, MTU 9180, 2 ms RTT): the cells cross the
/// emulated fabric, nothing is lost in it, and one flow, with no contention, still gets at least
/// 90% of the line's TCP goodput bound.
#[test]
fn tcp_through_input_queued_fabrics() {
    require_root!();
    let _g = common::serial();
    for kind in [
        FabricKind::InputFifo {
            contention: weft_model::fabric::Contention::Random,
        },
        FabricKind::VoqIslip { iterations: 2 },
    ] {
        let mut topo = pair(
            atm(OC3C_CELLS, 0, 9180, 100),
            atm(OC3C_CELLS, 1000, 9180, 101),
        );
        topo.switches[0].fabric = FabricSpec {
            kind,
            rate: OC3C_CELLS,
            buffer_cells: 4096,
            drop: DropPolicy::Tail,
        };
        let (r, rep) = common::with_emulation(&topo, |emu| {
            workload::tcp_bulk(emu, "a", "b", Some(256 * 1024), secs(1500), secs(500))
        });
        let (payload, seg) = segment(9180, OC3C_CELLS);
        let bound = payload as f64 * 8.0 / (seg as f64 / 1e9);
        let st = rep.fabric.expect("fabric counters");
        println!(
            "{kind:?}: tcp {:.2} Mbit/s of bound {:.2} ({:.3}); fabric {st:?}, lag p99 {} us",
            r.steady_bps / 1e6,
            bound / 1e6,
            r.steady_bps / bound,
            rep.lag.p99_ns / 1000
        );
        assert!(st.cells_out > 10_000 && st.frames_out > 1_000, "{st:?}");
        assert_eq!((st.cells_dropped, st.frames_corrupt), (0, 0));
        assert!(r.steady_bps / bound >= 0.90, "{kind:?}: {r:?}");
        assert!(r.steady_bps / bound <= 1.01, "faster than the line: {r:?}");
    }
}

/// A VC shaped to a 26 Mbit/s peak cell rate on an OC-3c line: a host offering 30 Mbit/s of UDP
/// gets the AAL5 payload bound of 26 Mbit/s of cells (within 2%), the excess waiting in the
/// host's queue and overflowing there; policed instead, the same VC loses most frames at the
/// policer.
#[test]
fn gcra_shapes_and_polices_a_vc() {
    require_root!();
    let _g = common::serial();
    let payload = 1472usize;
    let bound = aal5_payload_bound(VP, payload as u64, 28);
    for police in [false, true] {
        let mut src = atm(OC3C_CELLS, 0, 9180, 100);
        src.contract = Some(VcContract {
            cdvt: Duration(1_000),
            police,
            ..VcContract::peak(VP)
        });
        let topo = pair(src, atm(OC3C_CELLS, 0, 9180, 101));
        let (r, rep) = udp_30mbps(&topo, payload);
        let ratio = r.steady_bps / bound;
        let ing = &rep.ports[0].ingress;
        println!(
            "VC at PCR 26 Mbit/s, {}: {:.3} Mbit/s received of bound {:.3} -> {:.4} (sent {}, received {}, host overflow {}, policed frames {} cells {})",
            if police { "policed" } else { "shaped" },
            r.steady_bps / 1e6,
            bound / 1e6,
            ratio,
            r.sent,
            r.received,
            ing.overflow,
            ing.frames_policed,
            ing.cells_policed
        );
        if police {
            // Cells leave back to back at the line rate, 5.3 times the PCR: every frame of more
            // than one cell breaks the contract.
            assert!(ing.frames_policed > r.sent / 2, "{ing:?}");
            assert!(ratio < 0.5, "policed VC still carried {ratio}");
        } else {
            assert!((ratio - 1.0).abs() <= 0.02, "shaped: ratio {ratio}");
            assert_eq!(ing.frames_policed, 0);
        }
    }
}
