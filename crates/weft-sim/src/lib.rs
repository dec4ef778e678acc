//! Discrete-event simulation of weft fabrics on virtual time.
//!
//! Two engines share the fabric models of `weft-model`:
//! - [`slotted`]: one cell time per step, when every port runs at one rate (input-queued FIFO,
//!   output-queued, VOQ + iSLIP), with the allocation-free saturated head-of-line loop in [`hol`];
//! - [`net`]: networks of switches with simulated hosts on the one event engine
//!   ([`weft_model::engine`]), through the same switch code the emulator runs; [`many_to_one`] is
//!   the many-hosts-into-one-port experiment on it.
//!
//! Every run is a pure function of its parameters and a seed: each source, arbiter and host draws
//! from its own xoshiro256++ stream ([`weft_model::fabric::Rng::for_stream`]), so adding a source
//! does not change what the others see. [`experiments`] packages the standard experiments and
//! their [`ResultDoc`](weft_report::ResultDoc)s.

pub mod cell;
pub mod experiments;
pub mod hol;
pub mod many_to_one;
pub mod metrics;
pub mod net;
pub mod ring;
pub mod scenario;
pub mod slotted;
pub mod source;

pub use cell::SimCell;
pub use hol::{HolParams, HolResult, run_saturated};
