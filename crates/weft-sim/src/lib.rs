//! Discrete-event simulation of weft fabrics on virtual time.
//!
//! Two engines share the fabric models of `weft-model`:
//! - [`slotted`]: one cell time per step, when every port runs at one rate (input-queued FIFO,
//!   output-queued, VOQ + iSLIP), with the allocation-free saturated head-of-line loop in [`hol`];
//! - [`event`]: nanosecond events in a heap, when links differ (many hosts into one output port).
//!
//! Every run is a pure function of its parameters and a seed: each source, arbiter and host draws
//! from its own xoshiro256++ stream ([`weft_model::fabric::Rng::for_stream`]), so adding a source
//! does not change what the others see. [`experiments`] packages the standard experiments and
//! their [`ResultDoc`](weft_report::ResultDoc)s.

pub mod cell;
pub mod event;
pub mod experiments;
pub mod hol;
pub mod metrics;
pub mod scenario;
pub mod slotted;
pub mod source;

pub use cell::SimCell;
pub use hol::{HolParams, HolResult, gigaswitch_efficiency, run_saturated};
