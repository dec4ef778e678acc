//! The shape every fabric model shares: input by `handle_input`, output by `poll_output`, and the
//! next moment it needs attention by `poll_timeout` (STYLE.md; quinn-proto and smoltcp).
//!
//! Call order for a driver (simulator or emulator), each time it wakes at `now`:
//! 1. `handle_input(now, port, item)` for every item that arrived;
//! 2. `poll_output(now)` until it returns `None`, sending each item out of its port;
//! 3. `poll_timeout()` to learn when to wake next (`None`: only new input can change anything).
//!
//! Elements never read a clock; the same element gives the same outputs for the same calls.

use crate::time::Instant;

/// The number of a port on an element, from zero.
pub type PortId = usize;

/// Something that occupies a link: a frame, a cell, a datagram. The emulator carries real bytes
/// (`Vec<u8>`), the simulator carries small descriptors.
pub trait WireLen {
    /// Bytes this item occupies at the layer the element accounts for (before any framing that
    /// the link technology adds).
    fn wire_len(&self) -> usize;
}

impl WireLen for Vec<u8> {
    fn wire_len(&self) -> usize {
        self.len()
    }
}

/// A sans-IO fabric element (a link, a queue, a shaper, a switch) carrying items of type `T`.
pub trait Element<T> {
    /// An item arrives on `port` at `now`. The element may queue it, forward it later, or drop it
    /// (and count the drop).
    fn handle_input(&mut self, now: Instant, port: PortId, item: T);

    /// The next item leaving the element at or before `now`, with the port it leaves by.
    fn poll_output(&mut self, now: Instant) -> Option<(PortId, T)>;

    /// The earliest instant at which `poll_output` could return something new without new input.
    fn poll_timeout(&self) -> Option<Instant>;

    /// As [`Element::poll_output`], with the instant the item was due (at or before `now`; a
    /// driver on the wall clock records `now - due` as lag). By default, `now`.
    fn poll_output_due(&mut self, now: Instant) -> Option<(PortId, Instant, T)> {
        self.poll_output(now).map(|(p, x)| (p, now, x))
    }
}
