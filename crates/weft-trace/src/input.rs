//! A large, reusable read buffer over any `Read`, with the file offset of every byte it holds.
//!
//! Records are parsed in place from the buffer, so reading a capture allocates nothing per packet
//! and holds at most one buffer (plus the largest single block) in memory, whatever the file size.

use std::io::{self, Read};

/// Default size of one read from the underlying input, in bytes.
pub const DEFAULT_CHUNK: usize = 4 << 20;

/// Buffered input with offsets.
pub(crate) struct Input {
    r: Box<dyn Read + Send>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Offset in the stream of `buf[start]`.
    offset: u64,
    eof: bool,
}

impl Input {
    pub(crate) fn new(r: Box<dyn Read + Send>, chunk: usize) -> Self {
        Input {
            r,
            buf: vec![0; chunk.max(64)],
            start: 0,
            end: 0,
            offset: 0,
            eof: false,
        }
    }

    /// Stream offset of the next unconsumed byte.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes available without another read.
    pub(crate) fn available(&self) -> usize {
        self.end - self.start
    }

    /// Makes at least `need` bytes available; returns how many are (fewer only at end of input).
    pub(crate) fn fill(&mut self, need: usize) -> io::Result<usize> {
        if self.end - self.start >= need {
            return Ok(self.end - self.start);
        }
        if self.start + need > self.buf.len() {
            // Move the unconsumed tail to the front, and grow for an unusually large block.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if need > self.buf.len() {
                self.buf.resize(need, 0);
            }
        }
        while self.end - self.start < need && !self.eof {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end - self.start)
    }

    /// The available bytes (call `fill` first).
    pub(crate) fn peek(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks `n` available bytes consumed.
    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.offset += n as u64;
    }
}

impl Input {
    /// The last `n` consumed bytes (valid until the next `fill`).
    pub(crate) fn peek_consumed(&self, n: usize) -> &[u8] {
        &self.buf[self.start.saturating_sub(n)..self.start]
    }
}
