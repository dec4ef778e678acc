//! The buffer memory a receiver's sessions share (`--max-total-memory`): each session reserves
//! its window of buffers before it accepts a file and gives the reservation back when it ends.

use std::sync::Mutex;

/// A session's reservation of buffer memory, given back when dropped.
pub(super) struct Held<'a> {
    pub(super) budget: &'a MemoryBudget,
    pub(super) bytes: u64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.budget.release(&mut self.bytes);
    }
}

/// Buffer memory shared by a receiver's sessions: each reserves its window of buffers before
/// it accepts a file, and gives the reservation back when it ends.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    limit: u64,
    used: std::sync::Arc<Mutex<u64>>,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        MemoryBudget {
            limit,
            used: std::sync::Arc::new(Mutex::new(0)),
        }
    }

    /// The limit, bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn used(&self) -> std::sync::MutexGuard<'_, u64> {
        self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Grows `held` (this session's reservation, bytes) to `want` if the budget has room;
    /// `Err` with the bytes in use by all sessions otherwise.
    pub(super) fn grow(&self, held: &mut u64, want: u64) -> Result<(), u64> {
        if want <= *held {
            return Ok(());
        }
        let mut used = self.used();
        let more = want - *held;
        if used.saturating_add(more) > self.limit {
            return Err(*used);
        }
        *used += more;
        *held = want;
        Ok(())
    }

    /// Gives a session's reservation back.
    pub(super) fn release(&self, held: &mut u64) {
        let mut used = self.used();
        *used = used.saturating_sub(*held);
        *held = 0;
    }
}
