//! Buffer sizes as users write them (`"512 cells"`, `"300 frames"`, `"64KiB"`) and their
//! resolution into a queue's [`Capacity`] and an EPD threshold in the capacity's unit, for a
//! queue that holds cells (ATM) or whole frames.

use serde::{Deserialize, Serialize};

use super::{Capacity, DropPolicy};
use crate::tech::CELL_BYTES;

/// What a buffer size counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BufferUnit {
    /// ATM cells (53-byte units on a frame link).
    Cells,
    /// Frames (packets) of any size.
    Frames,
    /// Bytes.
    Bytes,
}

/// A buffer size: `amount` of `unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffer {
    /// How many cells, frames or bytes.
    pub amount: u64,
    /// What is counted.
    pub unit: BufferUnit,
}

impl Buffer {
    /// `n` cells.
    pub const fn cells(n: u64) -> Self {
        Buffer {
            amount: n,
            unit: BufferUnit::Cells,
        }
    }
    /// `n` frames.
    pub const fn frames(n: u64) -> Self {
        Buffer {
            amount: n,
            unit: BufferUnit::Frames,
        }
    }
    /// `n` bytes.
    pub const fn bytes(n: u64) -> Self {
        Buffer {
            amount: n,
            unit: BufferUnit::Bytes,
        }
    }

    /// The capacity of a queue of cells (`cells` true) or of whole frames holding this buffer;
    /// `frame_cells` is the cells of one MTU-sized frame, to count frames in cells.
    pub fn capacity(&self, cells: bool, frame_cells: u64) -> Capacity {
        let n = self.amount;
        match (self.unit, cells) {
            (BufferUnit::Cells, true) => Capacity::Cells(n),
            (BufferUnit::Bytes, true) => Capacity::Cells(n / CELL_BYTES),
            (BufferUnit::Frames, true) => Capacity::Cells(n.saturating_mul(frame_cells.max(1))),
            (BufferUnit::Cells, false) => Capacity::Bytes(n.saturating_mul(CELL_BYTES)),
            (BufferUnit::Bytes, false) => Capacity::Bytes(n),
            (BufferUnit::Frames, false) => Capacity::Frames(n),
        }
    }

    /// This amount in the unit of `capacity` (cells, bytes or frames), with `frame_cells` and
    /// `frame_bytes` the size of one MTU-sized frame.
    pub fn in_unit_of(&self, capacity: Capacity, frame_cells: u64, frame_bytes: u64) -> u64 {
        let n = self.amount;
        let (fc, fb) = (frame_cells.max(1), frame_bytes.max(1));
        match (capacity, self.unit) {
            (Capacity::Cells(_), BufferUnit::Cells) => n,
            (Capacity::Cells(_), BufferUnit::Bytes) => n / CELL_BYTES,
            (Capacity::Cells(_), BufferUnit::Frames) => n.saturating_mul(fc),
            (Capacity::Bytes(_), BufferUnit::Cells) => n.saturating_mul(CELL_BYTES),
            (Capacity::Bytes(_), BufferUnit::Bytes) => n,
            (Capacity::Bytes(_), BufferUnit::Frames) => n.saturating_mul(fb),
            (Capacity::Frames(_), BufferUnit::Cells) => n / fc,
            (Capacity::Frames(_), BufferUnit::Bytes) => n / fb,
            (Capacity::Frames(_), BufferUnit::Frames) => n,
        }
    }
}

impl DropPolicy<Buffer> {
    /// The policy for a queue of `capacity`, the EPD threshold converted to its unit.
    pub fn resolve(&self, capacity: Capacity, frame_cells: u64, frame_bytes: u64) -> DropPolicy {
        match *self {
            DropPolicy::Tail => DropPolicy::Tail,
            DropPolicy::Ppd => DropPolicy::Ppd,
            DropPolicy::Epd { threshold } => DropPolicy::Epd {
                threshold: threshold.in_unit_of(capacity, frame_cells, frame_bytes),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_become_cells_on_cell_queues_and_stay_frames_otherwise() {
        // A 9180-byte CLIP frame is 192 cells.
        assert_eq!(Buffer::frames(2).capacity(true, 192), Capacity::Cells(384));
        assert_eq!(Buffer::frames(2).capacity(false, 192), Capacity::Frames(2));
        assert_eq!(Buffer::bytes(5300).capacity(true, 1), Capacity::Cells(100));
        assert_eq!(Buffer::cells(10).capacity(false, 1), Capacity::Bytes(530));
        let epd = DropPolicy::Epd {
            threshold: Buffer::cells(384),
        };
        assert_eq!(
            epd.resolve(Capacity::Frames(4), 192, 9194),
            DropPolicy::Epd { threshold: 2 }
        );
        assert_eq!(
            epd.resolve(Capacity::Bytes(1 << 20), 192, 9194),
            DropPolicy::Epd {
                threshold: 384 * 53
            }
        );
    }
}
