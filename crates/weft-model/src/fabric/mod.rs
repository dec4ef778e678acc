//! Cell switch fabrics: output-queued (with speed-up), input-queued FIFO (with head-of-line
//! blocking) and virtual output queues with iSLIP.
//!
//! Each fabric is a [`Slotted`] state machine: cells are offered to input ports and one call to
//! [`Slotted::step`] is one cell time, in which every output sends at most one cell. The
//! simulator drives `step` directly on slot numbers; [`Clocked`] wraps any slotted fabric as an
//! [`Element`](crate::Element) on nanosecond time for the emulator and event-driven runs.

pub mod arbiter;
pub mod clocked;
pub mod input_fifo;
pub mod islip;
pub mod output_queued;
/// The random source, at the bottom layer now ([`crate::rng`]); this path kept for old callers.
pub use crate::rng;

pub use crate::rng::Rng;
pub use arbiter::{Contention, HolArbiter};
pub use clocked::Clocked;
pub use input_fifo::InputFifo;
pub use islip::Islip;
pub use output_queued::OutputQueued;

use crate::element::PortId;

/// An item that knows which output port of a fabric it is bound for.
pub trait Routed {
    /// The output port, from zero.
    fn output(&self) -> PortId;
}

/// A fabric that moves cells in whole cell times.
pub trait Slotted<T> {
    /// A cell arrives at input `port` (during the current slot). Cells for an output the fabric
    /// does not have, or that do not fit, are dropped and counted.
    fn offer(&mut self, port: PortId, item: T);

    /// Ends the current slot: moves cells across the fabric and hands every cell that leaves an
    /// output during this slot to `emit(output, cell)`.
    fn step(&mut self, emit: &mut dyn FnMut(PortId, T));

    /// True when the fabric holds no cell (stepping it would do nothing).
    fn is_idle(&self) -> bool;

    /// Counters so far.
    fn counters(&self) -> FabricCounters;
}

/// What a fabric has done with the cells offered to it. At any moment
/// `offered == delivered + dropped + held`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FabricCounters {
    /// Cells offered at inputs.
    pub offered: u64,
    /// Cells that left by an output.
    pub delivered: u64,
    /// Cells dropped (no room, bad output port).
    pub dropped: u64,
    /// Cells held in the fabric now.
    pub held: u64,
}

/// A fabric could not be built as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FabricError {
    /// Port counts must be at least one, and at most the fabric's limit.
    #[error("{what} must be between 1 and {max}, got {got}")]
    Ports {
        /// Which count.
        what: &'static str,
        /// The largest allowed.
        max: usize,
        /// What was asked for.
        got: usize,
    },
    /// Speed-up must be at least one.
    #[error("speed-up must be at least 1")]
    Speedup,
    /// iSLIP needs at least one iteration.
    #[error("iSLIP needs at least one iteration")]
    Iterations,
}

pub(crate) fn check_ports(what: &'static str, got: usize, max: usize) -> Result<(), FabricError> {
    if got == 0 || got > max {
        Err(FabricError::Ports { what, max, got })
    } else {
        Ok(())
    }
}
