//! The input-queued FIFO switch: one queue per input, only its head cell can cross the fabric, and
//! each output takes one cell per slot. A head cell that loses contention blocks the cells behind
//! it even when their outputs are free (head-of-line blocking; Karol, Hluchyj and Morgan 1987).

use super::arbiter::{Contention, HolArbiter, NO_CELL};
use super::{FabricCounters, FabricError, Routed, Slotted, check_ports};
use crate::element::PortId;
use crate::queue::{Capacity, DropPolicy, Queue, Queued};
use crate::rng::Rng;

/// Largest port count of an input-queued fabric.
pub const MAX_PORTS: usize = 1 << 16;

/// An `inputs` x `outputs` input-queued switch with FIFO input queues.
#[derive(Clone, Debug)]
pub struct InputFifo<T> {
    queues: Vec<Queue<T>>,
    outputs: usize,
    arbiter: HolArbiter,
    hol: Vec<u32>,
    counters: FabricCounters,
}

impl<T: Routed + Queued> InputFifo<T> {
    /// A switch whose input buffers each hold `capacity` under `policy`; contention is resolved
    /// as `contention` says, random choices drawn from `rng`.
    pub fn new(
        inputs: usize,
        outputs: usize,
        capacity: Capacity,
        policy: DropPolicy,
        contention: Contention,
        rng: Rng,
    ) -> Result<Self, FabricError> {
        check_ports("inputs", inputs, MAX_PORTS)?;
        check_ports("outputs", outputs, MAX_PORTS)?;
        Ok(InputFifo {
            queues: (0..inputs).map(|_| Queue::new(capacity, policy)).collect(),
            outputs,
            arbiter: HolArbiter::new(inputs, outputs, contention, rng),
            hol: vec![NO_CELL; inputs],
            counters: FabricCounters::default(),
        })
    }

    /// The input queue of `port`.
    pub fn input_queue(&self, port: PortId) -> Option<&Queue<T>> {
        self.queues.get(port)
    }
}

impl<T: Routed + Queued> Slotted<T> for InputFifo<T> {
    fn offer(&mut self, port: PortId, item: T) {
        self.counters.offered += 1;
        let ok = item.output() < self.outputs
            && self
                .queues
                .get_mut(port)
                .is_some_and(|q| q.offer(item).is_ok());
        if ok {
            self.counters.held += 1;
        } else {
            self.counters.dropped += 1;
        }
    }

    fn step(&mut self, emit: &mut dyn FnMut(PortId, T)) {
        for (h, q) in self.hol.iter_mut().zip(&self.queues) {
            *h = q.peek().map_or(NO_CELL, |c| c.output() as u32);
        }
        for &(i, o) in self.arbiter.resolve(&self.hol) {
            if let Some(cell) = self.queues[i as usize].dequeue() {
                self.counters.held -= 1;
                self.counters.delivered += 1;
                emit(o as usize, cell);
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
