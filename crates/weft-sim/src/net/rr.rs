//! Request/response on simulated hosts (the `rr` workload, an echo test): a client sends a
//! `size`-byte UDP request, waits for the answer (as large, or `response_size` bytes), and sends
//! the next; a request not answered within the time-out is counted as lost. Messages larger than the path MTU go as
//! several datagrams (as IP fragments would) and count once all have arrived.
//!
//! With a host cost model each message pays what [`weft_model::calc::rtt`] charges: one call,
//! its packets and its bytes to send, the same to receive, on the host's one CPU.

use std::any::Any;
use std::collections::VecDeque;

use weft_model::host::HostCpu;
use weft_model::{Duration, Instant};

use super::frame::{SimFrame, UDP_IP_HEADERS};
use super::hosts::App;

/// How a message of `size` bytes is cut into datagrams of at most `mtu` bytes: the IP length
/// of each.
pub fn datagrams(size: u64, mtu: u32) -> Vec<u32> {
    let per = u64::from(mtu.saturating_sub(UDP_IP_HEADERS).max(1));
    let n = size.div_ceil(per).max(1);
    (0..n)
        .map(|i| (size - i * per).min(per) as u32 + UDP_IP_HEADERS)
        .collect()
}

/// Bytes of message payload in a datagram of `ip_len` bytes.
fn payload(ip_len: u32) -> u64 {
    u64::from(ip_len.saturating_sub(UDP_IP_HEADERS))
}

/// Datagrams a host has ready, each with when its NIC gets it.
#[derive(Debug, Default)]
struct Outbox(VecDeque<(Instant, SimFrame)>);

impl Outbox {
    /// Queues the datagrams of message `seq` from `src` to `dst`, ready at `at`.
    fn message(&mut self, at: Instant, src: usize, dst: usize, seq: u32, parts: &[u32]) {
        for &len in parts {
            self.0
                .push_back((at, SimFrame::udp(src, dst, len, seq, at.0)));
        }
    }

    fn pop_due(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        let &(t, _) = self.0.front()?;
        if t > now {
            return None;
        }
        self.0.pop_front()
    }

    fn next(&self) -> Option<Instant> {
        self.0.front().map(|x| x.0)
    }
}

/// The client: `count` requests, one at a time.
#[derive(Debug)]
pub struct RrClient {
    host: usize,
    server: usize,
    size: u64,
    parts: Vec<u32>,
    /// Bytes of the answer, and its datagrams.
    response: u64,
    response_parts: u64,
    count: u64,
    timeout: Duration,
    cpu: Option<HostCpu>,
    outbox: Outbox,
    /// The request in flight: its number, when it was issued, its deadline, bytes of answer so far.
    current: Option<(u32, Instant, Instant, u64)>,
    /// When the next request is issued.
    next: Option<Instant>,
    issued: u64,
    /// Round trips of the answered requests, ns, in order.
    pub rtt_ns: Vec<u64>,
    /// Requests not answered within the time-out.
    pub lost: u64,
}

impl RrClient {
    /// `count` requests of `size` bytes from host `host` to the echo server on `server`, in
    /// datagrams of at most `mtu` bytes, each waiting `timeout`; the first at time zero.
    pub fn new(
        host: usize,
        server: usize,
        size: u64,
        mtu: u32,
        count: u64,
        timeout: Duration,
    ) -> Self {
        RrClient {
            host,
            server,
            size,
            parts: datagrams(size, mtu),
            response: size,
            response_parts: datagrams(size, mtu).len() as u64,
            count,
            timeout,
            cpu: None,
            outbox: Outbox::default(),
            current: None,
            next: (count > 0).then_some(Instant::ZERO),
            issued: 0,
            rtt_ns: Vec::new(),
            lost: 0,
        }
    }

    /// Charges the host's send and receive work to `cpu`.
    pub fn with_cpu(mut self, cpu: HostCpu) -> Self {
        self.cpu = Some(cpu);
        self
    }

    /// Waits for answers of `bytes` (in datagrams of at most `mtu` bytes) instead of answers as
    /// large as the request.
    pub fn with_response(mut self, bytes: u64, mtu: u32) -> Self {
        self.response = bytes;
        self.response_parts = datagrams(bytes, mtu).len() as u64;
        self
    }

    /// Issues the first request at `at` instead of time zero (after other traffic has warmed up).
    pub fn starting(mut self, at: Instant) -> Self {
        if self.count > 0 {
            self.next = Some(at);
        }
        self
    }

    fn step(&mut self, now: Instant) {
        if let Some((_, _, deadline, _)) = self.current
            && deadline <= now
        {
            self.current = None;
            self.lost += 1;
            self.next = Some(now);
        }
        if self.current.is_none() && self.next.is_some_and(|t| t <= now) && self.issued < self.count
        {
            let seq = self.issued as u32;
            self.issued += 1;
            self.next = None;
            let parts = self.parts.len() as u64;
            let ready = match &mut self.cpu {
                Some(cpu) => cpu.send(now, self.size, parts, 1),
                None => now,
            };
            self.outbox
                .message(ready, self.host, self.server, seq, &self.parts);
            self.current = Some((seq, now, now + self.timeout, 0));
        }
    }
}

impl App for RrClient {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        self.step(now);
        self.outbox.pop_due(now)
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        if f.tcp.is_some() || f.corrupted || f.src as usize != self.server {
            return;
        }
        let Some((seq, t0, deadline, got)) = self.current else {
            return;
        };
        if f.seq != seq || now >= deadline {
            return;
        }
        let got = got + payload(f.len - weft_model::net::ETH_HEADER as u32);
        if got < self.response {
            self.current = Some((seq, t0, deadline, got));
            return;
        }
        let done = match &mut self.cpu {
            Some(cpu) => cpu.receive(now, self.response, self.response_parts, 1),
            None => now,
        };
        self.rtt_ns.push(done.0 - t0.0);
        self.current = None;
        self.next = Some(done);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let pending = if self.issued < self.count {
            self.next
        } else {
            None
        };
        [self.outbox.next(), pending, self.current.map(|c| c.2)]
            .into_iter()
            .flatten()
            .min()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The echo server: answers each whole request with a message of the same size (or
/// `response_size`).
#[derive(Debug)]
pub struct RrServer {
    host: usize,
    size: u64,
    /// Datagrams of a request.
    request_parts: u64,
    /// Bytes of each answer, and its datagrams.
    response: u64,
    parts: Vec<u32>,
    cpu: Option<HostCpu>,
    outbox: Outbox,
    /// The request being received: client, number, bytes so far.
    current: Option<(usize, u32, u64)>,
    /// Requests answered.
    pub answered: u64,
}

impl RrServer {
    /// An echo server on `host` for `size`-byte requests, answering in datagrams of at most
    /// `mtu` bytes.
    pub fn new(host: usize, size: u64, mtu: u32) -> Self {
        RrServer {
            host,
            size,
            request_parts: datagrams(size, mtu).len() as u64,
            response: size,
            parts: datagrams(size, mtu),
            cpu: None,
            outbox: Outbox::default(),
            current: None,
            answered: 0,
        }
    }

    /// Charges the host's receive and send work to `cpu`.
    pub fn with_cpu(mut self, cpu: HostCpu) -> Self {
        self.cpu = Some(cpu);
        self
    }

    /// Answers with `bytes` (in datagrams of at most `mtu` bytes) instead of the request's size.
    pub fn with_response(mut self, bytes: u64, mtu: u32) -> Self {
        self.response = bytes;
        self.parts = datagrams(bytes, mtu);
        self
    }
}

impl App for RrServer {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        self.outbox.pop_due(now)
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        if f.tcp.is_some() || f.corrupted || f.dst as usize != self.host {
            return;
        }
        let (src, seq) = (f.src as usize, f.seq);
        let so_far = match self.current {
            Some((s, q, b)) if s == src && q == seq => b,
            // A new request (the rest of an earlier one was lost).
            _ => 0,
        };
        let got = so_far + payload(f.len - weft_model::net::ETH_HEADER as u32);
        if got < self.size {
            self.current = Some((src, seq, got));
            return;
        }
        self.current = None;
        self.answered += 1;
        let parts = self.parts.len() as u64;
        let ready = match &mut self.cpu {
            Some(cpu) => {
                let read = cpu.receive(now, self.size, self.request_parts, 1);
                cpu.send(read, self.response, parts, 1)
            }
            None => now,
        };
        self.outbox.message(ready, self.host, src, seq, &self.parts);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.outbox.next()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_cut_at_the_mtu() {
        assert_eq!(datagrams(64, 1500), vec![92]);
        assert_eq!(datagrams(1500, 1500), vec![1500, 56]);
        assert_eq!(datagrams(0, 1500), vec![28]);
    }
}
