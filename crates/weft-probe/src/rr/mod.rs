//! Request/response latency tests (`weft rr`): the studies' echo tests and the NASA message-size
//! sweeps.
//!
//! A client times transactions (a request of N bytes, a response of M bytes) against a weft
//! agent or any RFC 862 echo service, over TCP or UDP, warm (one persistent connection) or cold
//! (a connection per transaction, the set-up timed apart), with `--burst` transactions in flight.
//! Each size runs `warmup` unmeasured transactions, then a fixed count or until the 95%
//! confidence interval of the mean is narrow enough ([`StopRule`]). UDP transactions that get no
//! reply within the time-out count as lost; late replies are recognised by the sequence number
//! every request carries in its first bytes ([`weft_model::app::Tag`]) and discarded.
//!
//! ```no_run
//! use weft_probe::rr::{self, Peer, RrConfig};
//! let cfg = RrConfig::new(Peer::Echo("127.0.0.1:7".parse().unwrap()), vec![64, 1024]);
//! let result = rr::run(&cfg).unwrap();
//! println!("{}", result.table());
//! let doc = result.to_result_doc();
//! # let _ = doc;
//! ```

pub mod agent;
mod agent_client;
pub mod busy;
pub mod config;
pub mod floor;
pub mod leg;
pub mod meter;
pub mod place;
pub mod result;
/// Latency statistics (the socket driver's, shared with the message-passing ranks).
pub use weft_sock::stats;

pub use config::{Peer, Proto, RrConfig, StopRule};
pub use result::{RrResult, SizeResult};
pub use stats::{LatencyStats, LatencySummary};

use leg::Leg;
use meter::Meter;

/// Why a request/response run could not be carried out at all. A size that starts and then
/// fails is not an error: it is reported in its [`SizeResult::aborted`].
#[derive(Debug, thiserror::Error)]
pub enum RrError {
    /// The configuration is invalid (a usage error at the command line).
    #[error("{0}")]
    Config(String),
    /// The agent refused the test or the control connection failed.
    #[error("{0}")]
    Agent(String),
}

/// Runs every size of `cfg` in order and returns what each measured.
///
/// Sizes that fail part-way (a refused connection, a TCP time-out, too many consecutive UDP
/// losses) are kept with their partial statistics and an `aborted` reason; the run goes on with
/// the next size. See [`RrResult::failed`].
pub fn run(cfg: &RrConfig) -> Result<RrResult, RrError> {
    run_with_progress(cfg, |_| {})
}

/// As [`run`], calling `progress` with each size's record as soon as it is done.
pub fn run_with_progress(
    cfg: &RrConfig,
    mut progress: impl FnMut(&SizeResult),
) -> Result<RrResult, RrError> {
    cfg.validate()?;
    let _pinned = match cfg.client_cpu {
        Some(c) => Some(place::Pinned::to(c).map_err(|e| RrError::Config(e.to_string()))?),
        None => None,
    };
    tracing::info!(peer = ?cfg.peer, proto = %cfg.proto, sizes = cfg.sizes.len(),
                   busy_poll = cfg.busy_poll, client_cpu = ?cfg.client_cpu,
                   agent_cpu = ?cfg.agent_cpu, "rr run starts");
    let mut out = RrResult::new(cfg);
    for &req in &cfg.sizes {
        let resp = cfg.response_for(req);
        let r = match cfg.peer {
            Peer::Echo(addr) => {
                let mut meter = Meter::new(cfg.warmup, cfg.stop, cfg.abort_after_losses)
                    .with_time_limit(cfg.time_limit);
                let aborted = run_leg(cfg, addr, req, resp, &mut meter)
                    .err()
                    .or_else(|| cut_off(cfg, &meter));
                SizeResult::from_meter(req, resp, &meter, cfg.cold, aborted)
            }
            Peer::Agent(addr) => agent_client::run_size(cfg, addr, req, resp)?,
        };
        tracing::debug!(size = req, answered = r.count, lost = r.lost,
                        p50_ns = r.rtt.p50_ns, aborted = ?r.aborted, "rr size done");
        progress(&r);
        out.sizes.push(r);
    }
    Ok(out)
}

/// The reason a size stopped at its time limit, if it did.
pub(crate) fn cut_off(cfg: &RrConfig, meter: &Meter) -> Option<String> {
    let limit = cfg.time_limit?;
    meter.cut_off().then(|| {
        format!(
            "stopped at the time limit of {:.1} s before the stop rule was met",
            limit.as_secs_f64()
        )
    })
}

/// Runs one size's transactions against a data endpoint.
pub(crate) fn run_leg(
    cfg: &RrConfig,
    addr: std::net::SocketAddr,
    req: u32,
    resp: u32,
    meter: &mut Meter,
) -> Result<(), leg::Abort> {
    let leg = Leg {
        addr,
        req: req as usize,
        resp: resp as usize,
        burst: cfg.burst,
        timeout: cfg.timeout,
        spin: cfg.busy_poll,
    };
    match (cfg.proto, cfg.cold) {
        (Proto::Tcp, false) => leg::tcp_warm(&leg, meter),
        (Proto::Tcp, true) => leg::tcp_cold(&leg, meter),
        (Proto::Udp, false) => leg::udp_warm(&leg, meter),
        (Proto::Udp, true) => leg::udp_cold(&leg, meter),
    }
}
