//! Sans-IO fabric models for `weft`.
//!
//! Nothing in this crate touches a socket, a clock or a thread. Time is passed in by the caller as an
//! [`Instant`] of nanoseconds; every model is a plain struct driven by `handle_*(now, ...)`,
//! `poll_*(now)` and `poll_timeout()` (see [`element`]). The simulator (`weft-sim`) feeds it virtual
//! time, the emulator (`weft-emu`) feeds it the wall clock.

pub mod app;
pub mod calc;
pub mod cell;
pub mod dcqcn;
pub mod element;
pub mod engine;
pub mod fabric;
pub mod figures;
pub mod host;
pub mod mp;
pub mod ndp;
pub mod net;
pub mod queue;
pub mod rng;
pub mod scenario;
pub mod shaper;
pub mod tcp;
pub mod tech;
pub mod time;
pub mod units;
pub mod vc;

pub use element::{Element, WireLen};
pub use scenario::{Scenario, ScenarioError};
pub use tech::{Encap, Tech, Transport, aal5_cells};
pub use time::{Duration, Instant};
pub use units::{Rate, Size, UnitError};
