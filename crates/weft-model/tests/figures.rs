//! The closed-form models held against the published figures (`data/figures.toml`, built into
//! weft and checked against the reference file by `figures_copy.rs`).

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use weft_model::calc::{self, Chain, TransferBound, hol, window};
use weft_model::scenario::Figures;
use weft_model::tech::{AAL5_TRAILER_BYTES, Encap, Tech, Transport};
use weft_model::{Duration, Rate, Size};

/// The figures weft ships (`data/figures.toml`; `figures_copy.rs` checks them against the
/// reference file).
fn figures() -> Figures {
    Figures::bundled().unwrap()
}

fn mbps(f: &Figures, key: &str) -> f64 {
    f.number(key).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn line_rates_and_framing_constants_match_the_figures() {
    let f = figures();
    let rate = |name: &str| Tech::preset(name).unwrap().rate.as_mbps_f64();
    assert_eq!(
        Tech::preset("oc3c").unwrap().line_rate.as_mbps_f64(),
        mbps(&f, "rates.oc3c_line_mbps")
    );
    assert_eq!(rate("oc3c"), mbps(&f, "rates.oc3c_sonet_payload_mbps"));
    assert_eq!(rate("taxi100"), mbps(&f, "rates.taxi_cell_rate_mbps"));
    assert_eq!(rate("ds3"), mbps(&f, "rates.ds3_plcp_cell_rate_mbps"));
    assert_eq!(rate("e3"), mbps(&f, "rates.e3_g832_cell_rate_mbps"));
    assert_eq!(rate("ethernet10"), mbps(&f, "rates.ethernet10_mbps"));
    assert_eq!(rate("fddi"), mbps(&f, "rates.fddi_mbps"));
    assert_eq!(
        Tech::preset("oc3c").unwrap().mtu.0 as f64,
        mbps(&f, "rates.clip_default_mtu_bytes")
    );
    assert_eq!(
        AAL5_TRAILER_BYTES as f64,
        mbps(&f, "rates.aal5_trailer_bytes")
    );
    assert_eq!(
        Encap::LlcSnap.header_bytes() as f64,
        mbps(&f, "rates.llc_snap_bytes")
    );
}

#[test]
fn oc3c_chain_gives_roughly_135_mbps_of_tcp() {
    let f = figures();
    let oc3 = Tech::preset("oc3c").unwrap();
    let chain = Chain::new(&oc3, oc3.mtu.0, Transport::Tcp { options: 0 }).unwrap();
    let cell_payload = chain.layer_bps("cell payload").unwrap() / 1e6;
    // figures.toml gives the cell payload rate to three decimals.
    assert!((cell_payload - mbps(&f, "rates.oc3c_cell_payload_mbps")).abs() < 0.0005);
    let tcp = chain.goodput_bps() / 1e6;
    let target = mbps(&f, "sandia_atm_trial.max_tcp_over_oc3c_mbps");
    assert!((tcp - target).abs() / target < 0.01, "{tcp} vs {target}");
    // The paper: AAL5 and TCP/IP overhead for maximum size packets is less than 2%.
    assert!(chain.upper_overhead() < 0.02);
    // Every measured ttcp rate over OC-3c is at or below the model's ceiling.
    for key in [
        "ttcp_sp2_to_sp2_mbps",
        "ttcp_sgi_to_sparc20_mbps",
        "ttcp_fileserver_to_sparc20_mbps",
    ] {
        assert!(mbps(&f, &format!("sandia_atm_trial.{key}")) <= tcp, "{key}");
    }
}

#[test]
fn sandia_figures_are_explained() {
    let f = figures();
    let note = f.text("rates.note").expect("rates.note");
    let paper_payload = calc::overhead::SANDIA_SONET_PAYLOAD_BPS / 1e6;
    let paper_usable = calc::overhead::SANDIA_USABLE_BPS / 1e6;
    // The constants are the figures the note quotes.
    assert!(note.contains(&format!("{paper_payload}")), "{note}");
    assert!(note.contains(&format!("{paper_usable}")), "{note}");
    let oc3 = Tech::preset("oc3c").unwrap();
    let chain = Chain::new(&oc3, 9180, Transport::Tcp { options: 0 }).unwrap();
    let s = calc::SandiaNote::new(
        &chain,
        calc::overhead::SANDIA_SONET_PAYLOAD_BPS,
        calc::overhead::SANDIA_USABLE_BPS,
    );
    // 151.488 Mbit/s is a whole number of 9-row columns (263), and 137.19 is it times 48/53.
    assert!((s.paper_payload_columns - 263.0).abs() < 1e-9);
    assert!((paper_payload * 48.0 / 53.0 - paper_usable).abs() < 0.01);
    // Both arithmetics land within 1% of the paper's 135.
    let target = mbps(&f, "sandia_atm_trial.max_tcp_over_oc3c_mbps");
    for tcp in [s.paper_tcp_bps / 1e6, s.standard_tcp_bps / 1e6] {
        assert!((tcp - target).abs() / target < 0.01, "{tcp}");
    }
    assert!(s.text().contains("263 of the 270 columns"));
}

#[test]
fn gigaswitch_formula_reproduces_tables_8_and_9() {
    let f = figures();
    let model = f.numbers("gigaswitch.contention_model_mbps").unwrap();
    let peak = model[0];
    for (i, printed) in model.iter().enumerate() {
        let m = i as u32 + 1;
        let rate = hol::gigaswitch_efficiency(5, m) * peak;
        // The table prints one decimal, rounded or (for 77.27 -> 77.2) truncated.
        let rounded = (rate * 10.0).round() / 10.0;
        let truncated = (rate * 10.0).floor() / 10.0;
        assert!(
            (printed - rounded).abs() < 1e-9 || (printed - truncated).abs() < 1e-9,
            "M = {m}: {rate} printed as {printed}"
        );
    }
    for m in [4u32, 5] {
        let pct = f
            .number(&format!("gigaswitch.contention_model_efficiency_pct.{m}"))
            .unwrap();
        let e = hol::gigaswitch_efficiency(5, m) * 100.0;
        assert!(
            ((e * 10.0).round() / 10.0 - pct).abs() < 1e-9,
            "M = {m}: {e} vs {pct}"
        );
    }
}

#[test]
fn exact_fifo_chain_reproduces_karols_table() {
    let f = figures();
    let table = f.numbers("classic_models.karol_hol_saturation").unwrap();
    assert_eq!(table.len(), 8);
    for (i, karol) in table.iter().enumerate() {
        let n = i as u32 + 1;
        let exact = hol::saturation_throughput(n).unwrap();
        // Karol's table has four decimals.
        assert!((exact - karol).abs() < 1e-4, "N = {n}: {exact} vs {karol}");
    }
    let inf = f.number("classic_models.karol_hol_saturation.inf").unwrap();
    assert!((hol::SATURATION_LIMIT - inf).abs() < 1e-4);
    // The chain is monotone in N and stays above the limit.
    let t10 = hol::saturation_throughput(10).unwrap();
    assert!(t10 < table[7] && t10 > hol::SATURATION_LIMIT);
}

#[test]
fn ebn_windows_and_rates() {
    let f = figures();
    let rtt = Duration::from_secs_f64(f.number("dhpc_ebn.rtt_ms_via_router").unwrap() / 1e3);
    let default_window = Size(f.number("dhpc_ebn.default_window_bytes").unwrap() as u64);
    let vp26 = Rate((f.number("dhpc_ebn.vp_cell_rate_mbps").unwrap() * 1e6) as u64);
    let vp33 = Rate((f.number("dhpc_ebn.unrestricted_cell_rate_mbps").unwrap() * 1e6) as u64);
    let mut e3 = Tech::preset("e3").unwrap();
    let tcp = Transport::Tcp { options: 0 };
    let mtu = f.number("dhpc_ebn.router_mtu_bytes").unwrap() as u64;

    // The default window cannot fill the 26 Mbit/s VP over 17 ms: it is the limit.
    e3.rate = vp26;
    let b = TransferBound::new(&e3, mtu, tcp, default_window, rtt).unwrap();
    assert_eq!(b.limit, window::Limit::Window);
    // 64 KiB covers the 26 Mbit/s path with room to spare...
    let b64 = TransferBound::new(&e3, mtu, tcp, Size(65536), rtt).unwrap();
    assert_eq!(b64.limit, window::Limit::Link);
    assert!(b64.window_needed < 55_000);
    // ... but at 33 Mbit/s it needs almost all of 64 KiB (no margin for any extra delay), and
    // 128 KiB has twice what it needs.
    e3.rate = vp33;
    let b33 = TransferBound::new(&e3, mtu, tcp, Size(65536), rtt).unwrap();
    assert!(
        b33.window_needed > 60_000 && b33.window_needed < 65_536,
        "{}",
        b33.window_needed
    );
    assert!(2 * b33.window_needed < 131_072);

    // Every run: the paper's Mbps is its KiB/s as a cell rate (x 8 x 1.024 x 53/48), its
    // utilisation is that over the VP, and the measurement is under the model's bound.
    let runs = f.numbers("dhpc_ebn.runs.window_bytes").unwrap().len();
    for i in 0..runs {
        let get = |k: &str| f.number(&format!("dhpc_ebn.runs.{i}.{k}"));
        let kib = get("payload_kib_s").unwrap();
        let vp = get("vp_mbps").unwrap();
        if let Ok(paper) = get("paper_mbps") {
            // 1%: the last run's 32.11 is the low end (3550) of the paper's "3550 -> 3600".
            assert!(
                (window::ebn_paper_mbps(kib) - paper).abs() / paper < 0.01,
                "run {i}"
            );
            let util = get("utilisation").unwrap();
            assert!((paper / vp - util).abs() < 0.01, "run {i}");
        }
        e3.rate = Rate((vp * 1e6) as u64);
        let w = Size(get("window_bytes").unwrap() as u64);
        let m = get("mtu_bytes").unwrap() as u64;
        let bound = TransferBound::new(&e3, m, tcp, w, rtt).unwrap();
        assert!(
            kib <= bound.payload_kib_s,
            "run {i}: {kib} over the bound {}",
            bound.payload_kib_s
        );
    }
}
