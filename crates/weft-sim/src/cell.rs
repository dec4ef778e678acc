//! The simulator's cell: a small descriptor instead of 53 bytes, with what the metrics need.

use weft_model::WireLen;
use weft_model::element::PortId;
use weft_model::fabric::Routed;
use weft_model::queue::Queued;

/// One cell (or, in frame-level runs, one whole frame) in flight in a simulation.
///
/// [`CELL_BYTES`](weft_model::cell::CELL_BYTES) is the size of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimCell {
    /// Input port (source) it entered by.
    pub src: u16,
    /// Output port it is bound for.
    pub dst: u16,
    /// Flow (virtual circuit) number: frames of one flow never interleave.
    pub flow: u32,
    /// Frame number within the flow.
    pub frame: u32,
    /// Cells in its frame.
    pub frame_cells: u32,
    /// True on the last cell of its frame (the AAL5 end-of-frame bit).
    pub eof: bool,
    /// When it was created: a slot number (slotted runs) or nanoseconds (event-driven runs).
    pub born: u64,
    /// Bytes it occupies on a link: 53 for a cell, the frame length when whole frames are
    /// simulated.
    pub bytes: u32,
}

impl WireLen for SimCell {
    fn wire_len(&self) -> usize {
        self.bytes as usize
    }
}

impl Queued for SimCell {
    fn flow(&self) -> u32 {
        self.flow
    }
    fn end_of_frame(&self) -> bool {
        self.eof
    }
}

impl Routed for SimCell {
    fn output(&self) -> PortId {
        usize::from(self.dst)
    }
}
