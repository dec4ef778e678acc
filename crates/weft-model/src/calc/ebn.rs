//! The EBN study's (002) runs set beside the window/link bound: the figures file's
//! `dhpc_ebn.runs` (window, MTU, segment size, VP rate, measured ttcp KiB/s) against
//! [`TransferBound`] as the model engine bounds the runs' scenarios (`scenarios/ebn-vp26.toml`,
//! `ebn-vp33.toml`): datagrams of the run's segment size, the whole segments a 1995 BSD sender
//! keeps in flight, a round of the study's round trip plus the two segment times a delayed ACK
//! waits for ([`window::ack_clocked`]). With the paper's own "Mbps" recomputed and the round that
//! the window in flight alone would need to explain each measurement (`weft calc window --ebn`).

use serde::Serialize;

use super::window::{self, TransferBound};
use crate::scenario::{FigureError, Figures};
use crate::tech::{Tech, TechError, Transport};
use crate::time::Duration;
use crate::units::{Rate, Size};

/// Why the runs could not be set out.
#[derive(Debug, thiserror::Error)]
pub enum EbnError {
    /// A figure is missing or malformed.
    #[error(transparent)]
    Figure(#[from] FigureError),
    /// The bound could not be computed (an MTU the link cannot carry).
    #[error(transparent)]
    Tech(#[from] TechError),
}

/// One run of the study beside the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EbnRun {
    /// TCP window, bytes.
    pub window_bytes: u64,
    /// MTU, bytes.
    pub mtu_bytes: u64,
    /// The segment size TCP sent, bytes (536 where the run set no path MTU).
    pub mss_bytes: u64,
    /// The virtual path's rate, Mbit/s.
    pub vp_mbps: f64,
    /// The paper's measured ttcp payload rate, KiB/s.
    pub paper_payload_kib_s: f64,
    /// The paper's "Mbps" column, where it gives one.
    pub paper_mbps: Option<f64>,
    /// That column recomputed from the payload rate ([`window::ebn_paper_mbps`]).
    pub recomputed_paper_mbps: f64,
    /// The window/link bound: the window in flight (whole segments) over the round (the study's
    /// round trip and two segment times), or the link's payload rate for the run's datagrams.
    pub model: TransferBound,
    /// The round at which the window in flight alone gives the measured rate, ns (0 when the
    /// rate is zero).
    pub implied_rtt_ns: u64,
}

/// The study's runs and the round trip they were modelled over.
#[derive(Clone, Debug, PartialEq)]
pub struct EbnRuns {
    /// Round trip via the router (`dhpc_ebn.rtt_ms_via_router`).
    pub rtt: Duration,
    /// The runs, in the figures file's order.
    pub runs: Vec<EbnRun>,
}

/// The runs of `figures` (`dhpc_ebn.*`), each on an E3 link at its VP's rate.
pub fn ebn_runs(f: &Figures) -> Result<EbnRuns, EbnError> {
    let rtt = Duration::from_secs_f64(f.number("dhpc_ebn.rtt_ms_via_router")? / 1e3);
    let n = f.numbers("dhpc_ebn.runs.window_bytes")?.len();
    let mut runs = Vec::with_capacity(n);
    for i in 0..n {
        let get = |k: &str| f.number(&format!("dhpc_ebn.runs.{i}.{k}"));
        let window = Size(get("window_bytes")? as u64);
        let mtu = get("mtu_bytes")? as u64;
        let mss = get("mss_bytes")? as u64;
        let vp = get("vp_mbps")?;
        let kib = get("payload_kib_s")?;
        let mut e3 = Tech::preset("e3")?;
        e3.rate = Rate((vp * 1e6) as u64);
        let tcp = Transport::Tcp { options: 0 };
        let datagram = (mss + tcp.header_bytes()).min(mtu);
        let (in_flight, round) = window::ack_clocked(&e3, datagram, tcp, window, rtt, true, None);
        let model = TransferBound::new(&e3, datagram, tcp, in_flight, round)?;
        runs.push(EbnRun {
            window_bytes: window.0,
            mtu_bytes: mtu,
            mss_bytes: mss,
            vp_mbps: vp,
            paper_payload_kib_s: kib,
            paper_mbps: get("paper_mbps").ok(),
            recomputed_paper_mbps: window::ebn_paper_mbps(kib),
            model,
            implied_rtt_ns: window::implied_rtt(in_flight, kib).unwrap_or_default().0,
        });
    }
    Ok(EbnRuns { rtt, runs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_runs_are_window_bound_over_17ms() {
        let f = Figures::bundled().unwrap();
        let r = ebn_runs(&f).unwrap();
        assert!(!r.runs.is_empty());
        assert_eq!(
            r.rtt,
            Duration::from_secs_f64(f.number("dhpc_ebn.rtt_ms_via_router").unwrap() / 1e3)
        );
        for run in &r.runs {
            assert!(run.model.bound_bps <= run.model.link_bps, "{run:?}");
            assert!(run.recomputed_paper_mbps > 0.0, "{run:?}");
        }
    }

    /// `weft calc window --ebn` and `weft run scenarios/ebn-vp*.toml --engine model` answer the
    /// same question (the bound on each run as its sender and path shape it) and give the same
    /// figures; run 4 of the study is workload 0's second point of ebn-vp33. ebn-vp33's DECNIS is
    /// a router (`decnis600-ebn`): its round is the links' 16 ms and the router's time, not the
    /// ping's 17 ms that `--ebn` takes, so its runs are held to the same closed form over the
    /// round the engine reports (`rtt_ms`).
    #[test]
    fn the_runs_are_what_the_model_engine_gives_for_their_scenarios() {
        let f = Figures::bundled().unwrap();
        let runs = ebn_runs(&f).unwrap().runs;
        let mut engine = Vec::new();
        for text in [
            include_str!("../../../../scenarios/ebn-vp26.toml"),
            include_str!("../../../../scenarios/ebn-vp33.toml"),
        ] {
            let s = crate::Scenario::parse(text, "ebn.toml").unwrap();
            engine.extend(crate::calc::evaluate(&s).into_iter().map(|p| {
                let routed = p.metrics.contains_key("router_round_ms");
                (
                    p.metrics["payload_kib_s"],
                    routed.then(|| p.metrics["rtt_ms"]),
                )
            }));
        }
        assert_eq!(engine.len(), runs.len());
        for (i, (run, (kib, routed))) in runs.iter().zip(&engine).enumerate() {
            let expected = match routed {
                None => run.model.payload_kib_s,
                Some(rtt_ms) => {
                    let mut e3 = Tech::preset("e3").unwrap();
                    e3.rate = Rate((run.vp_mbps * 1e6) as u64);
                    let tcp = Transport::Tcp { options: 0 };
                    let rtt = Duration::from_secs_f64(rtt_ms / 1e3);
                    let w = Size(run.window_bytes);
                    let (in_flight, round) =
                        window::ack_clocked(&e3, run.mtu_bytes, tcp, w, rtt, true, None);
                    let b = TransferBound::new(&e3, run.mtu_bytes, tcp, in_flight, round).unwrap();
                    assert!(*rtt_ms > 17.0, "run {i}: the router lengthens the round");
                    b.payload_kib_s
                }
            };
            println!(
                "run {i}: --ebn {:.1} KiB/s, expected {expected:.1}, scenario {kib:.1}, paper {}",
                run.model.payload_kib_s, run.paper_payload_kib_s
            );
            // Both compute the same closed form from the same numbers: only the order of the
            // floating-point operations (and the round trip's rounding to the ns) may differ.
            assert!(
                (expected / kib - 1.0).abs() < 1e-6,
                "run {i}: {expected} against {kib}"
            );
        }
    }
}
