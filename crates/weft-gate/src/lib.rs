//! What weft's two agents (`weft serve` and `weft recv`) share at their door:
//!
//! - [`auth`]: pre-shared-key challenge and response (a keyed BLAKE3 MAC over both sides'
//!   random nonces), and the per-frame tags `weft send`/`weft recv` put on their control frames
//!   after it. The key never crosses the wire.
//! - [`lobby`]: the sans-IO bound on connections that have not yet said who they are (their
//!   hello): a deadline for each, a cap in total and per source address, the oldest dropped when
//!   a cap is reached, so that idle or slow connections cannot crowd out real clients.
//! - [`door`]: the lobby driven by the wall clock over real TCP connections, for the accept loop
//!   of an agent, and the open-files limit raised to its hard limit.

pub mod auth;
pub mod door;
pub mod lobby;

pub use auth::{Key, KeyError, MIN_KEY_LEN, Role};
pub use door::{Arrival, Door, Pass, open_files, raise_open_files_limit};
pub use lobby::{Lobby, LobbyLimits, LobbyStats};
