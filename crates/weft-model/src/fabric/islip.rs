//! Virtual output queues with iSLIP (McKeown 1999): each input keeps one queue per output, so a
//! blocked cell never holds up cells for other outputs; a request-grant-accept matching with
//! round-robin pointers, repeated for `k` iterations, picks which inputs send in each slot.

use std::collections::VecDeque;

use super::{FabricCounters, FabricError, Routed, Slotted, check_ports};
use crate::element::PortId;

/// Largest port count: request and grant sets are one 64-bit word each.
pub const MAX_PORTS: usize = 64;

/// An N x N VOQ switch scheduled by iSLIP with `k` iterations per slot.
#[derive(Clone, Debug)]
pub struct Islip<T> {
    n: usize,
    iterations: usize,
    /// `voq[i * n + o]`: cells at input `i` for output `o`.
    voq: Vec<VecDeque<T>>,
    /// Per-VOQ capacity in cells.
    capacity: usize,
    /// `requests[o]`: bit `i` set when VOQ (i, o) holds a cell.
    requests: Vec<u64>,
    grant_ptr: Vec<u32>,
    accept_ptr: Vec<u32>,
    grants: Vec<u64>,
    matched_to: Vec<u32>,
    counters: FabricCounters,
}

/// The first set bit of `mask` at or after `start` going round (`mask` non-zero, bits < 64).
#[inline]
fn first_from(mask: u64, start: u32) -> u32 {
    let hi = if start >= 64 {
        0
    } else {
        mask & (!0u64 << start)
    };
    if hi != 0 {
        hi.trailing_zeros()
    } else {
        mask.trailing_zeros()
    }
}

impl<T: Routed> Islip<T> {
    /// An `n` x `n` switch whose virtual output queues each hold `voq_capacity` cells, scheduled
    /// with `iterations` iSLIP iterations per slot.
    pub fn new(n: usize, iterations: usize, voq_capacity: usize) -> Result<Self, FabricError> {
        check_ports("ports", n, MAX_PORTS)?;
        if iterations == 0 {
            return Err(FabricError::Iterations);
        }
        Ok(Islip {
            n,
            iterations,
            voq: (0..n * n).map(|_| VecDeque::new()).collect(),
            capacity: voq_capacity,
            requests: vec![0; n],
            grant_ptr: vec![0; n],
            accept_ptr: vec![0; n],
            grants: vec![0; n],
            matched_to: vec![u32::MAX; n],
            counters: FabricCounters::default(),
        })
    }

    /// Cells queued at input `i` for output `o`.
    pub fn voq_len(&self, i: usize, o: usize) -> usize {
        self.voq.get(i * self.n + o).map_or(0, VecDeque::len)
    }

    /// Runs the iSLIP iterations; fills `matched_to[i]` with the output input `i` sends to.
    fn schedule(&mut self) {
        let n = self.n as u32;
        let mut free_in: u64 = if n == 64 { !0 } else { (1u64 << n) - 1 };
        let mut free_out = free_in;
        self.matched_to.iter_mut().for_each(|m| *m = u32::MAX);
        for iter in 0..self.iterations {
            // Grant: each free output picks one requesting free input, round-robin.
            self.grants.iter_mut().for_each(|g| *g = 0);
            let mut outs = free_out;
            let mut any = false;
            while outs != 0 {
                let o = outs.trailing_zeros();
                outs &= outs - 1;
                let req = self.requests[o as usize] & free_in;
                if req != 0 {
                    let i = first_from(req, self.grant_ptr[o as usize]);
                    self.grants[i as usize] |= 1 << o;
                    any = true;
                }
            }
            if !any {
                break;
            }
            // Accept: each input granted picks one output, round-robin; pointers move only on
            // the first iteration, which is what keeps iSLIP free of starvation.
            let mut ins = free_in;
            while ins != 0 {
                let i = ins.trailing_zeros();
                ins &= ins - 1;
                let g = self.grants[i as usize];
                if g == 0 {
                    continue;
                }
                let o = first_from(g, self.accept_ptr[i as usize]);
                self.matched_to[i as usize] = o;
                free_in &= !(1 << i);
                free_out &= !(1 << o);
                if iter == 0 {
                    self.accept_ptr[i as usize] = (o + 1) % n;
                    self.grant_ptr[o as usize] = (i + 1) % n;
                }
            }
        }
    }
}

impl<T: Routed> Slotted<T> for Islip<T> {
    fn offer(&mut self, port: PortId, item: T) {
        self.counters.offered += 1;
        let o = item.output();
        if port >= self.n || o >= self.n {
            self.counters.dropped += 1;
            return;
        }
        let q = &mut self.voq[port * self.n + o];
        if q.len() >= self.capacity {
            self.counters.dropped += 1;
            return;
        }
        q.push_back(item);
        self.requests[o] |= 1 << port;
        self.counters.held += 1;
    }

    fn step(&mut self, emit: &mut dyn FnMut(PortId, T)) {
        if self.counters.held == 0 {
            return;
        }
        self.schedule();
        for i in 0..self.n {
            let o = self.matched_to[i];
            if o == u32::MAX {
                continue;
            }
            let o = o as usize;
            let q = &mut self.voq[i * self.n + o];
            if let Some(cell) = q.pop_front() {
                if q.is_empty() {
                    self.requests[o] &= !(1 << i);
                }
                self.counters.held -= 1;
                self.counters.delivered += 1;
                emit(o, cell);
            }
        }
    }

    fn is_idle(&self) -> bool {
        self.counters.held == 0
    }

    fn counters(&self) -> FabricCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_from_wraps() {
        assert_eq!(first_from(0b1010, 0), 1);
        assert_eq!(first_from(0b1010, 2), 3);
        assert_eq!(first_from(0b1010, 4), 1);
        assert_eq!(first_from(1 << 63, 63), 63);
    }
}
