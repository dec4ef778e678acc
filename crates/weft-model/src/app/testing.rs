//! The smallest driver: two applications joined by an in-memory link of fixed delay, on virtual
//! time, for an application's unit tests (smoltcp's netsim in miniature). Over a stream each
//! write arrives whole, one read, `delay` later, and the write call returns then
//! ([`Input::Written`]); over datagrams each send arrives `delay` later unless the link loses
//! it. The client is peer 0 and the server peer 1.

use super::{Application, Input, Output, PeerId, StreamId};
use crate::engine::EventQueue;
use crate::time::{Duration, Instant};

/// The link between the two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Link {
    /// One-way delay.
    pub delay: Duration,
    /// Lose every this many-th datagram (0: none); streams lose nothing.
    pub lose_every: u64,
}

/// What crosses the link.
#[derive(Clone, Copy, Debug)]
enum Item {
    Bytes(u64),
    Written,
    Datagram(u64, Option<super::Tag>),
    Fin,
}

/// A client and a server joined by a [`Link`].
pub struct Pair<C, S> {
    /// The client (peer 0).
    pub client: C,
    /// The server (peer 1).
    pub server: S,
    link: Link,
    stream: bool,
    /// Items in flight: their destination side (0: client, 1: server).
    wire: EventQueue<(usize, Item)>,
    datagrams: u64,
    /// The number each side gives its stream.
    ids: [StreamId; 2],
}

impl<C: Application, S: Application> Pair<C, S> {
    /// The two over one stream, open from time zero.
    pub fn stream(client: C, server: S, link: Link) -> Self {
        Pair::new(client, server, link, true)
    }

    /// The two exchanging datagrams.
    pub fn datagrams(client: C, server: S, link: Link) -> Self {
        Pair::new(client, server, link, false)
    }

    fn new(client: C, server: S, link: Link, stream: bool) -> Self {
        Pair {
            client,
            server,
            link,
            stream,
            wire: EventQueue::new(),
            datagrams: 0,
            ids: [0, 0],
        }
    }

    /// The client numbers its stream `client`, the server `server` (ranks number their
    /// streams by peer: 1 and 0).
    pub fn with_stream_ids(mut self, client: StreamId, server: StreamId) -> Self {
        self.ids = [client, server];
        self
    }

    /// Runs until nothing is left to do or `until`, whichever is first; returns the last
    /// instant.
    pub fn run(&mut self, until: Instant) -> Instant {
        let mut now = Instant::ZERO;
        if self.stream {
            let [c, s] = self.ids;
            self.client
                .handle_input(now, Input::Connected { stream: c });
            self.server
                .handle_input(now, Input::Connected { stream: s });
        }
        loop {
            while let Some((_, (side, item))) = self.wire.pop_due(now) {
                let from: PeerId = 1 - side;
                let stream = self.ids[side];
                // Items for a side are pushed with the side they reach; a write's return is
                // pushed with its writer's side.
                let input = match item {
                    Item::Bytes(len) => Input::Read {
                        stream,
                        len,
                        data: None,
                    },
                    Item::Datagram(len, tag) => Input::Datagram {
                        peer: from,
                        len,
                        tag,
                        data: None,
                    },
                    Item::Written => Input::Written { stream },
                    Item::Fin => Input::Closed {
                        stream,
                        error: None,
                    },
                };
                if side == 0 {
                    self.client.handle_input(now, input);
                } else {
                    self.server.handle_input(now, input);
                }
            }
            self.turn(now, 0);
            self.turn(now, 1);
            let next = [
                self.wire.peek_time(),
                self.client.poll_timeout(),
                self.server.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                Some(t) if t <= until => now = now.max(t),
                _ => return now,
            }
        }
    }

    /// Side `side`'s timers and outputs at `now`.
    fn turn(&mut self, now: Instant, side: usize) {
        let app: &mut dyn Application = if side == 0 {
            &mut self.client
        } else {
            &mut self.server
        };
        if app.poll_timeout().is_some_and(|t| t <= now) {
            app.handle_timeout(now);
        }
        let mut out = Vec::new();
        while let Some(o) = app.poll_output(now) {
            out.push(o);
        }
        let at = now + self.link.delay;
        for o in out {
            let item = match o {
                Output::Write { len, .. } | Output::Echo { len, .. } => {
                    self.wire.push(at, (side, Item::Written));
                    Item::Bytes(len)
                }
                Output::Send { len, tag, .. } => {
                    self.datagrams += 1;
                    if self.link.lose_every > 0 && self.datagrams % self.link.lose_every == 0 {
                        continue;
                    }
                    Item::Datagram(len, tag)
                }
                Output::Close { .. } => Item::Fin,
            };
            self.wire.push(at, (1 - side, item));
        }
    }
}
