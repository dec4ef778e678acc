//! Message passing on simulated hosts: each rank is the core's [`Rank`] (walking its
//! [`Program`], the same blocks of plans `weft mp`'s real ranks run) on its host ([`Hosted`])
//! over one simulated TCP connection per peer, the sans-IO [`Connection`] of `weft_model::tcp`
//! with `TCP_NODELAY` and Linux's defaults, as the real ranks' sockets are, paced onto the
//! host's link by its [`super::nic::Nic`].
//!
//! A host with a cost model (`costs`) charges its rank's `write` and `read` calls, their copies
//! and each arriving segment to its CPU ([`super::mp_workload::run_ranks_on`]); its segments
//! leave through the host's transmit path without a CPU charge of their own. A host without
//! one costs nothing: the times are what the fabric and TCP make of the schedule. Time comes
//! only from the engine.

use weft_model::Instant;
pub use weft_model::app::mp::{Rank, RankTimes};
use weft_model::mp::program::Program;
use weft_model::net::LinkSpec;
use weft_model::tcp::{Config, Connection, SeqNum};

use super::hosted::{Hosted, TcpEnd};

/// Rank `r`'s end of its connection to rank `q` has local port `PORT_BASE + q` and remote
/// port `PORT_BASE + r`.
pub const PORT_BASE: u16 = 6000;

/// Most ranks a simulated run takes (ports stay below 65536, and the real runs' bound).
pub const MAX_RANKS: usize = 64;

/// The connections' configuration over a path of MTU `mtu` bytes: Linux's defaults with
/// `TCP_NODELAY` (the real ranks set it) and 4 MiB buffers both ways (what they ask for).
/// Linux's timestamps matter here: a time-out that a queue caused (a message held behind
/// another rank's burst, its ACK behind a third's) is found spurious and undone, as the real
/// ranks' stacks undo it, instead of leaving that pair's connection with a threshold of two
/// segments for its next large message.
pub fn rank_config(mtu: u32) -> Config {
    let mut cfg = Config::linux();
    cfg.nagle = false;
    cfg.mss = mtu.saturating_sub(40).clamp(536, u32::from(u16::MAX)) as u16;
    cfg.send_buffer = 4 << 20;
    cfg.recv_buffer = 4 << 20;
    cfg
}

/// Rank `me` of a run among ranks on `hosts`, on its host `hosts[me]` with its link `link`,
/// running `program` over connections configured with `cfg`. Each rank dials the lower ranks
/// (their SYNs leave at time zero) and listens for the higher ones.
pub fn rank_on_host(
    me: usize,
    hosts: &[usize],
    program: Program,
    cfg: &Config,
    link: LinkSpec,
) -> Hosted<Rank> {
    let n = hosts.len();
    let conns = (0..n)
        .map(|q| {
            let at = TcpEnd {
                host: hosts[me],
                port: PORT_BASE + q as u16,
                peer: hosts[q],
                peer_port: PORT_BASE + me as u16,
            };
            let iss = SeqNum(((me * 131 + q * 7919) as u32).wrapping_mul(2_654_435_761));
            let conn = match q.cmp(&me) {
                std::cmp::Ordering::Less => {
                    Connection::connect(cfg.clone(), at.port, at.peer_port, iss, Instant::ZERO)
                }
                std::cmp::Ordering::Greater => Connection::listen(cfg.clone(), at.port, iss),
                std::cmp::Ordering::Equal => return None,
            };
            Some((at, conn))
        })
        .collect();
    Hosted::streams(Rank::new(me, n, program), conns).with_link(link)
}
