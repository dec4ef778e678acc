//! The output-queued switch with speed-up `S`: in each slot up to `S` cells may reach each output
//! (in `S` contention phases among input head cells) and each output sends one. With `S` at least
//! the number of inputs every cell reaches its output queue in the slot it arrives: the ideal
//! output-queued switch of Karol, Hluchyj and Morgan.

use super::arbiter::{Contention, HolArbiter, NO_CELL};
use super::{FabricCounters, FabricError, Routed, Slotted, check_ports};
use crate::element::PortId;
use crate::queue::{Capacity, DropPolicy, Queue, Queued};
use crate::rng::Rng;

/// An `inputs` x `outputs` switch with input FIFOs, speed-up and output queues.
#[derive(Clone, Debug)]
pub struct OutputQueued<T> {
    inputs: Vec<Queue<T>>,
    outputs: Vec<Queue<T>>,
    speedup: usize,
    arbiter: HolArbiter,
    hol: Vec<u32>,
    counters: FabricCounters,
}

impl<T: Routed + Queued> OutputQueued<T> {
    /// A switch with `speedup` transfers per output per slot; `input_capacity` bounds the input
    /// FIFOs (only used when the speed-up is below the input count) and `output_capacity` with
    /// `policy` the output queues. Ties among same-slot arrivals are broken by `contention`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        inputs: usize,
        outputs: usize,
        speedup: usize,
        input_capacity: Capacity,
        output_capacity: Capacity,
        policy: DropPolicy,
        contention: Contention,
        rng: Rng,
    ) -> Result<Self, FabricError> {
        check_ports("inputs", inputs, super::input_fifo::MAX_PORTS)?;
        check_ports("outputs", outputs, super::input_fifo::MAX_PORTS)?;
        if speedup == 0 {
            return Err(FabricError::Speedup);
        }
        Ok(OutputQueued {
            inputs: (0..inputs)
                .map(|_| Queue::new(input_capacity, DropPolicy::Tail))
                .collect(),
            outputs: (0..outputs)
                .map(|_| Queue::new(output_capacity, policy))
                .collect(),
            speedup,
            arbiter: HolArbiter::new(inputs, outputs, contention, rng),
            hol: vec![NO_CELL; inputs],
            counters: FabricCounters::default(),
        })
    }

    /// The output queue of `port`.
    pub fn output_queue(&self, port: PortId) -> Option<&Queue<T>> {
        self.outputs.get(port)
    }
}

impl<T: Routed + Queued> Slotted<T> for OutputQueued<T> {
    fn offer(&mut self, port: PortId, item: T) {
        self.counters.offered += 1;
        let ok = item.output() < self.outputs.len()
            && self
                .inputs
                .get_mut(port)
                .is_some_and(|q| q.offer(item).is_ok());
        if ok {
            self.counters.held += 1;
        } else {
            self.counters.dropped += 1;
        }
    }

    fn step(&mut self, emit: &mut dyn FnMut(PortId, T)) {
        for _ in 0..self.speedup {
            let mut any = false;
            for (h, q) in self.hol.iter_mut().zip(&self.inputs) {
                *h = q.peek().map_or(NO_CELL, |c| c.output() as u32);
                any |= *h != NO_CELL;
            }
            if !any {
                break;
            }
            for &(i, o) in self.arbiter.resolve(&self.hol) {
                if let Some(cell) = self.inputs[i as usize].dequeue() {
                    if self.outputs[o as usize].offer(cell).is_err() {
                        self.counters.held -= 1;
                        self.counters.dropped += 1;
                    }
                }
            }
        }
        for (o, q) in self.outputs.iter_mut().enumerate() {
            if let Some(cell) = q.dequeue() {
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
