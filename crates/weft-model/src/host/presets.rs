//! The studies' machines as [`HostCosts`]. Every number here is the output of a fit in
//! [`crate::calc::fit`] to figures named by their key in `reference/figures.toml`; the test
//! `presets_are_the_fitted_hosts` holds them equal to what the fit gives from the file. Where a
//! parameter could not be separated from another by the figures available, it is folded into
//! the one named (and says so); what no figure constrains is zero.
//!
//! Machines of the studies without a preset, and why:
//! - the EBN study's DEC Alphas (Digital UNIX 3.2c): its five runs are window- or link-limited,
//!   so no figure bears on their host costs;
//! - the GIGAswitch study's DECstation 5000/133, HP 735, RS/6000 and Sparc 10 on their bulk
//!   path: one ttcp figure each (Table 4; none for the HP 735), whose cost per byte the echo
//!   slope does not give (the Sparc 10's ttcp asks 340 ns per byte a path, its echo 26): their
//!   echo presets (`ds5000_133_echo` and the others) are not for ttcp;
//! - the SGI Challenge of Sandia's trial: its ttcp figures are taken as limited by the Sparc 20
//!   at the other end.

use super::{HostCosts, path};

/// Cost of one system call on a SuperSPARC at 50 MHz with Solaris 2.3, with the wakeup of the
/// process that waits on it, ns. Fitted (with the three below) to
/// `sandia_atm_trial.ttcp_computeserver_to_sparc20_mbps` (45),
/// `sandia_atm_trial.ttcp_computeserver_solaris24_mbps` (55),
/// `sandia_atm_trial.ttcp_sgi_to_sparc20_mbps` (82) and the 64-byte ATM row of
/// `sandia_atm_trial.echo_rtt_ms` (1.75 ms); send and receive taken equal.
const SS50_CALL_NS: f64 = 427_154.646;
/// One memory-to-memory copy on a SuperSPARC at 50 MHz, ns per byte (61.9 MB/s): half the
/// difference between Solaris 2.3's three copies (45 Mbit/s) and 2.4's one (55 Mbit/s).
const SS50_COPY_NS: f64 = 16.161_616;
/// The rest of the Solaris 2.3 send path per byte at 50 MHz (checksum, STREAMS, TCP/IP and the
/// driver per packet, spread over 9,140-byte segments), ns.
const SS50_SEND_OTHER_NS: f64 = 77.150_203;
/// The rest of the receive path per byte at 50 MHz (one copy assumed), ns.
const SS50_RECV_OTHER_NS: f64 = 48.769_080;

/// A Sun Sparc 20 model 50 (50 MHz SuperSPARC) with Solaris 2.3: three copies on the send path
/// (Sandia 000: "Solaris 2.3 performs 3 memory to memory copies"). The SparcCenter 2000 compute
/// server's model 50 processors are the same CPU and use this preset.
pub fn sparc20_m50_solaris23() -> HostCosts {
    HostCosts {
        name: "sparc20-m50-solaris2.3",
        send_call_ns: SS50_CALL_NS,
        recv_call_ns: SS50_CALL_NS,
        copy_ns_per_byte: SS50_COPY_NS,
        send_copies: 3,
        recv_copies: 1,
        send_other_ns_per_byte: SS50_SEND_OTHER_NS,
        recv_other_ns_per_byte: SS50_RECV_OTHER_NS,
        ..HostCosts::FREE
    }
}

/// The same machine with Solaris 2.4: one copy on the send path ("while 2.4 only performs 1
/// copy"); the receive path is left as 2.3's, which no figure measures.
pub fn sparc20_m50_solaris24() -> HostCosts {
    HostCosts {
        name: "sparc20-m50-solaris2.4",
        send_copies: 1,
        ..sparc20_m50_solaris23()
    }
}

/// The SparcCenter 2000 file server's model 41 (40 MHz) processors with Solaris 2.3: the
/// model 50 costs times 50/40 (clock scaling, a prediction checked against
/// `sandia_atm_trial.ttcp_fileserver_to_sparc20_mbps`).
pub fn sparccenter2000_m41_solaris23() -> HostCosts {
    sparc20_m50_solaris23().scaled(50.0 / 40.0, "sparccenter2000-m41-solaris2.3")
}

/// A Sparc 20 model 61 (60 MHz) with Solaris 2.3: the model 50 costs times 50/60 (clock
/// scaling, checked against `sandia_atm_trial.ttcp_sparc20_to_sgi_mbps`).
pub fn sparc20_m61_solaris23() -> HostCosts {
    sparc20_m50_solaris23().scaled(50.0 / 60.0, "sparc20-m61-solaris2.3")
}

/// An IBM SP-2 node (RS/6000 590, 67 MHz): 65.57 ns per byte on each path, fitted to
/// `sandia_atm_trial.ttcp_sp2_to_sp2_mbps` (122 Mbit/s over OC-3c, per-packet and per-call
/// costs folded in); predicts `sandia_atm_trial.ttcp_sp2_switch_mbps`.
pub fn sp2_node() -> HostCosts {
    HostCosts {
        name: "sp2-node",
        send_other_ns_per_byte: 65.573_770,
        recv_other_ns_per_byte: 65.573_770,
        ..HostCosts::FREE
    }
}

/// An SGI Indigo R4000 (GIGAswitch study, FDDI): 87.55 ns per byte on each path, fitted to the
/// mean of `gigaswitch.ttcp_without_switch_mbps` (91.37 Mbit/s with 63 KB buffers and window);
/// predicts `gigaswitch.ttcp_with_switch_mbps`. Its calls are folded into the cost per byte:
/// the simulator's TCP reader makes a call per segment where ttcp's 63 KB reads take several,
/// so a call cost would be charged there about fourteen times too often.
/// [`indigo_r4000_echo`] is the same machine with its calls and wakeups, for the echo tests.
pub fn indigo_r4000() -> HostCosts {
    HostCosts {
        name: "indigo-r4000",
        send_other_ns_per_byte: 87.551_363,
        recv_other_ns_per_byte: 87.551_363,
        ..HostCosts::FREE
    }
}

/// The Indigo of [`indigo_r4000`] with its calls, wakeups and context switches, for the UDP
/// echo tests (Tables 2, 5, 10, 11 and 19 of study 003). The client (the study's tool: a
/// `sendto`, then a `recvfrom` that blocks until the echo) and the server (inetd's own echo
/// service: a `select` over inetd's sockets, a `recvfrom` and a `sendto`) have their own paths;
/// five parameters fitted together ([`crate::calc::fit`]'s `indigo`):
/// - 86.99 ns per byte on each path (per-packet costs folded in), so that two Indigos writing
///   63 KB a call carry the mean of `gigaswitch.ttcp_without_switch_mbps` (91.37 Mbit/s);
/// - 36.1 µs per `sendto` or `recvfrom` call, from `gigaswitch.table19.client_us` at 64 bytes
///   (481 µs as the analyser stamped it, from the echo's first bit on the client's link: the
///   echo's 10.3 µs on the FDDI line, the client woken by it, its read and its next request's
///   write);
/// - 260.0 µs for the server's `select`, from `gigaswitch.table11.mean_us` at 128 bytes
///   (seven clients keep the one echo server busy: each round trip is seven of its echoes);
/// - 387.5 µs to wake a process blocked in a call on an idle host, from
///   `gigaswitch.table2.without_us` at 64 bytes (1222 µs between two directly connected
///   Indigos);
/// - 286.8 µs to switch to a client process woken while the host runs others, from
///   `gigaswitch.table10.mean_us` at 64 bytes (seven client processes on one Indigo: each
///   round trip is seven of its turns).
///
/// No source gives IRIX's select or context switch on an R4000 Indigo apart from these fits;
/// the select stands for everything inetd's loop does per request beyond its two socket calls.
/// Predicts the other echo round trips of Tables 2 and 5, the loaded ones of Tables 10 and 11
/// and the server's and client's turnarounds of Table 19.
pub fn indigo_r4000_echo() -> HostCosts {
    HostCosts {
        name: "indigo-r4000-echo",
        send_call_ns: INDIGO_CALL_NS,
        recv_call_ns: INDIGO_CALL_NS,
        wakeup_ns: INDIGO_WAKEUP_NS,
        switch_ns: INDIGO_SWITCH_NS,
        select_ns: INDIGO_SELECT_NS,
        send_other_ns_per_byte: INDIGO_BYTE_NS,
        recv_other_ns_per_byte: INDIGO_BYTE_NS,
        ..HostCosts::FREE
    }
}

/// The echo Indigo's cost per byte on each path, ns (see [`indigo_r4000_echo`]).
const INDIGO_BYTE_NS: f64 = 86.992_431;
/// The echo Indigo's cost of a `sendto` or `recvfrom` call, ns.
const INDIGO_CALL_NS: f64 = 36_057.857;
/// The echo Indigo's wakeup of a blocked process on an idle host, ns.
const INDIGO_WAKEUP_NS: f64 = 387_508.286;
/// The echo Indigo's switch to a woken process while it runs others, ns.
const INDIGO_SWITCH_NS: f64 = 286_792.857;
/// The echo server's (inetd's) select before each request, ns.
const INDIGO_SELECT_NS: f64 = 260_000.0;

// The GIGAswitch study's other workstations on their UDP echo path (Table 5 of study 003), each
// fitted in [`crate::calc::fit_workstations`]: a call (its wakeup folded in) to the 128-byte round trip
// through the switch, the cost per byte on each path to the 1024-byte one; the 64-, 256- and
// 512-byte round trips are predictions (`scenarios/gigaswitch-table5-baseline.toml`).

/// A DECstation 5000/133 (33 MHz R3000A, Ultrix, TURBOchannel FDDI) on its echo path: 655.3 µs a
/// call, 287.3 ns a byte on each path (see the note above).
pub fn ds5000_133_echo() -> HostCosts {
    echo_host("ds5000-133-echo", 655_297.143, 287.288)
}

/// An HP 9000/735 (99 MHz PA-7100, HP-UX) on its echo path: 362.8 µs a call,
/// 91.7 ns a byte on each path.
pub fn hp735_echo() -> HostCosts {
    echo_host("hp735-echo", 362_832.857, 91.696)
}

/// A Sun Sparc 10 (SuperSPARC, SunOS, SBus FDDI) on its echo path: 463.5 µs a call, 25.8 ns a
/// byte on each path.
pub fn sparc10_echo() -> HostCosts {
    echo_host("sparc10-echo", 463_511.429, 25.848)
}

/// An IBM RS/6000 of the GIGAswitch study (model not stated; Micro Channel FDDI) on its echo
/// path: 464.7 µs a call, 114.3 ns a byte on each path. Not [`rs6000_lace`], NASA's.
pub fn rs6000_echo() -> HostCosts {
    echo_host("rs6000-echo", 464_690.0, 114.297)
}

/// A host whose send and receive calls cost `call_ns` each (the wakeup folded in) and whose
/// paths cost `byte_ns` per byte each (per-packet costs folded in).
fn echo_host(name: &'static str, call_ns: f64, byte_ns: f64) -> HostCosts {
    HostCosts {
        name,
        send_call_ns: call_ns,
        recv_call_ns: call_ns,
        send_other_ns_per_byte: byte_ns,
        recv_other_ns_per_byte: byte_ns,
        ..HostCosts::FREE
    }
}

// The GIGAswitch study's workstations on their ttcp path (Table 4 of study 003), as
// [`indigo_r4000`] is the Indigo's: one cost per byte on each path, per-call and per-packet
// costs folded in. A host whose send and receive paths each cost `b` ns a byte moves 8000 / `b`
// Mbit/s of payload, so each `b` is 8000 over its Table 4 figure: those figures are `fitted`,
// the stress test's aggregates of Table 6 predictions (`scenarios/gigaswitch-table4-baseline.toml`).
// No HP 735 row of Table 4 is legible, so the HP 735 has no bulk preset.

/// A DECstation 5000/133 on its ttcp path: 534.76 ns a byte on each path, fitted to
/// `gigaswitch.table4.ds5000` (14.96 Mbit/s). Not its echo path ([`ds5000_133_echo`]).
pub fn ds5000_133() -> HostCosts {
    bulk_host("ds5000-133", 534.759_358)
}

/// An IBM RS/6000 of the GIGAswitch study on its ttcp path: 187.40 ns a byte on each path,
/// fitted to `gigaswitch.table4.rs6000` (42.69 Mbit/s). Not NASA's ([`rs6000_lace`]).
pub fn rs6000_giga() -> HostCosts {
    bulk_host("rs6000-giga", 187.397_517)
}

/// A Sun Sparc 10 on its ttcp path: 339.56 ns a byte on each path, fitted to
/// `gigaswitch.table4.sparc10` (23.56 Mbit/s).
pub fn sparc10() -> HostCosts {
    bulk_host("sparc10", 339.558_574)
}

/// A host whose send and receive paths each cost `byte_ns` per byte, and nothing else.
fn bulk_host(name: &'static str, byte_ns: f64) -> HostCosts {
    HostCosts {
        name,
        send_other_ns_per_byte: byte_ns,
        recv_other_ns_per_byte: byte_ns,
        ..HostCosts::FREE
    }
}

/// An RS/6000 of NASA's LACE cluster: 231 us for each of a send and a receive call, fitted to
/// `nasa_lace.single_1byte_udp_mbps.atm` (a 1-byte message, cold start: the fit includes what
/// the first message pays beyond the host, so it bounds the host's cost from above); predicts
/// the 1-byte TCP and FDDI figures.
pub fn rs6000_lace() -> HostCosts {
    HostCosts {
        name: "rs6000-lace",
        send_call_ns: 231_054.118,
        recv_call_ns: 231_054.118,
        ..HostCosts::FREE
    }
}

/// The RS/6000 of LACE over another of its networks: [`rs6000_lace`]'s calls with that network's
/// adapter and driver, `call_ns` for each of a send and a receive call.
fn rs6000_lace_over(name: &'static str, call_ns: f64) -> HostCosts {
    HostCosts {
        name,
        send_call_ns: call_ns,
        recv_call_ns: call_ns,
        ..HostCosts::FREE
    }
}

/// The RS/6000 of LACE over 10 Mbit/s Ethernet: 599 us a call, fitted to
/// `nasa_lace.single_1byte_udp_mbps.ethernet` (cold start, as [`rs6000_lace`]); predicts the
/// 1-byte TCP and 8 kB UDP figures over Ethernet.
pub fn rs6000_lace_ethernet() -> HostCosts {
    rs6000_lace_over("rs6000-lace-ethernet", 599_466.667)
}

/// The RS/6000 of LACE over FDDI: 328 us a call, fitted to
/// `nasa_lace.single_1byte_udp_mbps.fddi`; predicts the 1-byte TCP and 8 kB UDP figures over FDDI.
pub fn rs6000_lace_fddi() -> HostCosts {
    rs6000_lace_over("rs6000-lace-fddi", 328_173.333)
}

/// The RS/6000 of LACE over Fibre Channel (the adapter/266, `fc266`): 996 us a call, fitted to
/// `nasa_lace.single_1byte_udp_mbps.fibre_channel`; predicts the 1-byte TCP and 8 kB UDP figures
/// over Fibre Channel.
pub fn rs6000_lace_fc() -> HostCosts {
    rs6000_lace_over("rs6000-lace-fc", 995_764.0)
}

/// The RS/6000 of LACE with IP over the ALLNODE switch: 157 us a call, fitted to
/// `nasa_lace.single_1byte_udp_mbps.allnode`; predicts the 1-byte TCP figure over ALLNODE (the
/// 8 kB one waits for the switch's link rate, which the `allnode` preset lacks).
pub fn rs6000_lace_allnode() -> HostCosts {
    rs6000_lace_over("rs6000-lace-allnode", 157_080.0)
}

/// The FORE API's crossing on an RS/6000 of LACE (STREAMS and its context switch, each side of
/// a message), ns: fitted to `nasa_lace.pvm_api_latency_factor`, PVM over the API taking ten
/// times PVM over UDP for a 1-byte message (figure 13(b)). With [`path::MsgPath`]'s counts
/// a side of PVM's daemon route costs three of [`rs6000_lace`]'s calls, so the round trip of
/// scenarios/nasa-fig13-pvm-api.toml is 6 x 231.054 us and the wire's 17.0 us (`LACE_SIM_WIRE_NS`); the API's
/// two crossings make it ten times that: 2x = 9 (1386.3 us + W).
pub const LACE_FORE_API_NS: f64 = 4.5 * (6.0 * 231_054.118 + LACE_SIM_WIRE_NS);

/// The wire's part of the 1-byte round trip between two RS/6000s of LACE through one ASX-200 on
/// TAXI in scenarios/nasa-fig13-pvm-api.toml, on the simulator, ns (read from its run).
const LACE_SIM_WIRE_NS: f64 = 16_959.0;

/// An RS/6000 of LACE sending through PVM's daemons over UDP ([`path::MsgPath::PvmDaemon`]).
pub fn rs6000_lace_pvm() -> HostCosts {
    path::MsgPath::PvmDaemon.costs(&rs6000_lace(), LACE_FORE_API_NS, "rs6000-lace-pvm")
}

/// An RS/6000 of LACE sending through FORE's ATM API ([`path::MsgPath::Api`]): figure 11's API
/// path, and PvmRouteAal's (PVM's Direct Route over the API).
pub fn rs6000_lace_api() -> HostCosts {
    path::MsgPath::Api.costs(&rs6000_lace(), LACE_FORE_API_NS, "rs6000-lace-api")
}

/// An RS/6000 of LACE sending through PVM's daemons over FORE's API ([`path::MsgPath::PvmApi`]),
/// NASA's port of PVM to the API.
pub fn rs6000_lace_pvm_api() -> HostCosts {
    path::MsgPath::PvmApi.costs(&rs6000_lace(), LACE_FORE_API_NS, "rs6000-lace-pvm-api")
}

/// The RS/6000 of LACE along the message paths of figures 11, 13 and 14 ([`path`]): a preset's
/// costs with a path's relays and API crossings, not a machine fitted by [`crate::calc::fit`].
pub fn lace_paths() -> Vec<HostCosts> {
    vec![rs6000_lace_pvm(), rs6000_lace_api(), rs6000_lace_pvm_api()]
}

// RIACS's machines (study 004, Table 1) on their UDP path, as SBTP and MBTP load it: 9000-byte
// datagrams, one `sendto` or `recvfrom` each, the call and per-packet work folded into the cost
// per byte. Each send cost is fitted to the "data transfer" share of one row of Table 2 (the
// time from `Ready` to `Done` per 1 MiB buffer, at the row's total throughput); what no row
// constrains is said where it is taken from.

/// psyche's send path, ns per byte (see [`riacs_psyche`]).
const RIACS_PSYCHE_NS: f64 = 353.5;
/// dufus's send path, fitted to Table 2's dufus/conan transfer share (47.0% of a buffer at
/// 11.0 Mbit/s: 23.5 Mbit/s while sending).
const RIACS_DUFUS_SEND_NS: f64 = 340.5;
/// conan's send path, fitted to Table 2's conan/dufus transfer share (49.3% at 14.9 Mbit/s:
/// 30.4 Mbit/s); the Sparc 10s' receive path is taken as this, the faster of the two Sparc 10
/// send paths, so that no row of the table loses datagrams (the paper: "sender and receiver
/// throughput are virtually the same").
const RIACS_CONAN_NS: f64 = 263.6;

/// RIACS's `psyche`: a Sun Sparc 2, SunOS 4.1.4, FORE TAXI adapter. Send path fitted to Table 2's
/// psyche/conan transfer share (55.0% at 12.4 Mbit/s: 22.6 Mbit/s while sending); the receive
/// path is taken as the same (no figure has psyche receive).
pub fn riacs_psyche() -> HostCosts {
    HostCosts {
        name: "riacs-psyche",
        send_other_ns_per_byte: RIACS_PSYCHE_NS,
        recv_other_ns_per_byte: RIACS_PSYCHE_NS,
        ..HostCosts::FREE
    }
}

/// RIACS's `dufus`: a Sun Sparc 10, SunOS 4.1.3, FORE TAXI adapter (see the constants).
pub fn riacs_dufus() -> HostCosts {
    HostCosts {
        name: "riacs-dufus",
        send_other_ns_per_byte: RIACS_DUFUS_SEND_NS,
        recv_other_ns_per_byte: RIACS_CONAN_NS,
        ..HostCosts::FREE
    }
}

/// RIACS's `conan` (at Sandia Livermore): a Sun Sparc 10, SunOS 4.1.3, FORE TAXI adapter.
pub fn riacs_conan() -> HostCosts {
    HostCosts {
        name: "riacs-conan",
        send_other_ns_per_byte: RIACS_CONAN_NS,
        recv_other_ns_per_byte: RIACS_CONAN_NS,
        ..HostCosts::FREE
    }
}

/// Every preset.
pub fn all() -> Vec<HostCosts> {
    vec![
        sparc20_m50_solaris23(),
        sparc20_m50_solaris24(),
        sparccenter2000_m41_solaris23(),
        sparc20_m61_solaris23(),
        sp2_node(),
        indigo_r4000(),
        indigo_r4000_echo(),
        rs6000_lace(),
        ds5000_133_echo(),
        hp735_echo(),
        sparc10_echo(),
        rs6000_echo(),
        ds5000_133(),
        rs6000_giga(),
        sparc10(),
        rs6000_lace_ethernet(),
        rs6000_lace_fddi(),
        rs6000_lace_fc(),
        rs6000_lace_allnode(),
    ]
}

/// RIACS's machines on their UDP path (fitted to Table 2 of study 004 in the simulator's terms,
/// not by [`crate::calc::fit`]; `riacs_presets_follow_table_2` holds them to the table).
pub fn riacs() -> Vec<HostCosts> {
    vec![riacs_psyche(), riacs_dufus(), riacs_conan()]
}

/// The preset named `name` (as in [`HostCosts::name`]).
pub fn by_name(name: &str) -> Option<HostCosts> {
    all()
        .into_iter()
        .chain(riacs())
        .chain(lace_paths())
        .find(|h| h.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Figures;

    /// The send cost per byte a row of RIACS's Table 2 gives: its transfer share of a 1 MiB
    /// buffer at its throughput, less a control round trip of 0.6 ms (the `End` out and the
    /// `Done` back on BAGNet), over the buffer's datagrams (117 of 9000 bytes and a 20-byte
    /// header each).
    fn send_ns(row: usize) -> f64 {
        let f = Figures::bundled().unwrap();
        let pct = f.numbers("riacs_transfer.sbtp.transfer_pct").unwrap()[row];
        let mbps = f.numbers("riacs_transfer.sbtp.mbps").unwrap()[row];
        let transfer_s = pct / 100.0 * 8.0 * 1_048_576.0 / (mbps * 1e6) - 0.6e-3;
        transfer_s * 1e9 / (1_048_576.0 + 117.0 * 20.0)
    }

    #[test]
    fn the_api_crossing_gives_figure_13s_factor_over_the_daemon_route() {
        let f = Figures::bundled().unwrap();
        let factor = f.numbers("nasa_lace.pvm_api_latency_factor").unwrap()[0];
        let trip = |h: HostCosts| h.send_call_ns + h.recv_call_ns + LACE_SIM_WIRE_NS;
        let got = trip(rs6000_lace_pvm_api()) / trip(rs6000_lace_pvm());
        assert!((got - factor).abs() < 1e-9 * factor, "{got}");
        // PvmRouteAal (the API alone) lies between the two.
        let aal = trip(rs6000_lace_api());
        assert!(trip(rs6000_lace_pvm()) < aal && aal < trip(rs6000_lace_pvm_api()));
        assert!(
            lace_paths()
                .iter()
                .all(|p| by_name(p.name) == Some(p.clone()))
        );
    }

    #[test]
    fn riacs_presets_follow_table_2() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-3 * b;
        // Rows: psyche/conan, psyche/dufus, dufus/conan, conan/dufus.
        assert!(close(riacs_psyche().send_other_ns_per_byte, send_ns(0)));
        assert!(close(riacs_dufus().send_other_ns_per_byte, send_ns(2)));
        assert!(close(riacs_conan().send_other_ns_per_byte, send_ns(3)));
    }
}
