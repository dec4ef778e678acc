//! Micro-benchmark of the sans-IO TCP: two connections back to back through a fixed-delay pipe
//! with a bottleneck rate, one bulk transfer, and the segments handled per CPU second.
//!
//! ```sh
//! cargo run --release -p weft-model --example tcpbench -- [SEGMENTS] [--cc reno|newreno|cubic]
//!     [--sack] [--bsd] [--rate-mbps N] [--delay-us N] [--queue SEGMENTS]
//! ```
//!
//! With `--queue` the bottleneck drops what does not fit (drop-tail), so loss recovery runs too.
//!
//! A segment counts once per direction it travels (data one way, ACKs the other); the time is
//! the process's CPU time (`getrusage`), so a loaded machine slows the wall
//! clock more than the figure. No allocation happens per segment: the pipe is two ring buffers
//! that reach their size in the first round trips.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use weft_model::tcp::{CcAlgorithm, Config, Connection, Segment, SeqNum};
use weft_model::{Duration, Instant, Rate, Size};

/// Counts heap allocations, to show the steady state makes none.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One direction: a drop-tail line of `rate` then `delay`; arrivals are in send order.
struct Pipe {
    rate: Rate,
    delay: Duration,
    limit: usize,
    free_at: Instant,
    /// Departure times of the segments still at the line.
    line: VecDeque<Instant>,
    queue: VecDeque<(Instant, Segment)>,
    drops: u64,
}

impl Pipe {
    fn new(rate: Rate, delay: Duration, limit: usize) -> Self {
        Pipe {
            rate,
            delay,
            limit,
            free_at: Instant::ZERO,
            line: VecDeque::new(),
            queue: VecDeque::new(),
            drops: 0,
        }
    }
    fn send(&mut self, now: Instant, seg: Segment) {
        while self.line.front().is_some_and(|&t| t <= now) {
            self.line.pop_front();
        }
        if self.line.len() >= self.limit {
            self.drops += 1;
            return;
        }
        let start = self.free_at.max(now);
        self.free_at = start + self.rate.time_to_send(Size(40 + u64::from(seg.len)));
        self.line.push_back(self.free_at);
        self.queue.push_back((self.free_at + self.delay, seg));
    }
    fn next(&self) -> Option<Instant> {
        self.queue.front().map(|x| x.0)
    }
}

/// CPU seconds this process has used (user and system, all threads).
fn cpu_seconds() -> f64 {
    weft_sys::cpu::CpuTime::process().total_ns() as f64 / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut target: u64 = 5_000_000;
    let mut cfg = Config::linux();
    let mut rate = Rate::mbps(10_000);
    let mut delay = Duration::from_micros(50);
    let mut limit = usize::MAX;
    let mut i = 0;
    while i < args.len() {
        let next = |i: usize| args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--cc" => {
                cfg.cc = CcAlgorithm::from_name(&next(i)).unwrap_or(CcAlgorithm::Cubic);
                i += 1;
            }
            "--sack" => cfg.sack = true,
            "--no-sack" => cfg.sack = false,
            "--bsd" => {
                cfg = Config {
                    mss: 1460,
                    ..Config::default()
                }
            }
            "--rate-mbps" => {
                rate = Rate::mbps(next(i).parse().unwrap_or(10_000));
                i += 1;
            }
            "--queue" => {
                limit = next(i).parse().unwrap_or(usize::MAX);
                i += 1;
            }
            "--delay-us" => {
                delay = Duration::from_micros(next(i).parse().unwrap_or(50));
                i += 1;
            }
            n => target = n.parse().unwrap_or(target),
        }
        i += 1;
    }
    let mut a = Connection::connect(cfg.clone(), 5001, 5002, SeqNum(1), Instant::ZERO);
    let mut b = Connection::listen(cfg.clone(), 5002, SeqNum(2));
    let mut ab = Pipe::new(rate, delay, limit);
    let mut ba = Pipe::new(rate, delay, limit);
    let mut now = Instant::ZERO;
    let mut segments: u64 = 0;
    let start = cpu_seconds();
    // Allocations after the first tenth of the run (the rings and range sets have grown).
    let mut allocations_at_tenth = None;
    while segments < target {
        if allocations_at_tenth.is_none() && segments >= target / 10 {
            allocations_at_tenth = Some(ALLOCATIONS.load(Ordering::Relaxed));
        }
        a.send(usize::MAX);
        let r = b.readable() as usize;
        b.recv(r);
        while let Some(s) = a.poll_transmit(now) {
            ab.send(now, s);
        }
        while let Some(s) = b.poll_transmit(now) {
            ba.send(now, s);
        }
        let next = [ab.next(), ba.next(), a.poll_timeout(), b.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let Some(t) = next else { break };
        now = now.max(t);
        if ab.next().is_some_and(|t| t <= now) {
            if let Some((_, s)) = ab.queue.pop_front() {
                b.handle_segment(now, &s);
                segments += 1;
            }
        } else if ba.next().is_some_and(|t| t <= now) {
            if let Some((_, s)) = ba.queue.pop_front() {
                a.handle_segment(now, &s);
                segments += 1;
            }
        } else {
            a.handle_timeout(now);
            b.handle_timeout(now);
        }
    }
    let cpu = cpu_seconds() - start;
    let steady_allocations =
        ALLOCATIONS.load(Ordering::Relaxed) - allocations_at_tenth.unwrap_or_default();
    let st = a.stats();
    println!(
        "cc {} sack {} mss {}: {} segments ({} data, {} ACKs) in {:.3} CPU s: {:.2} M segments per CPU second",
        cfg.cc.name(),
        a.sack_enabled(),
        a.mss(),
        segments,
        st.data_segments_sent,
        b.stats().pure_acks_sent,
        cpu,
        segments as f64 / cpu / 1e6
    );
    println!(
        "simulated {:.3} s, goodput {:.1} Mbit/s, cwnd {} B, queue drops {}, retransmitted {}, \
         fast retransmits {}, timeouts {}, heap allocations after the first tenth {}, \
         load average {}",
        now.as_nanos() as f64 / 1e9,
        b.stats().bytes_delivered as f64 * 8.0 / (now.as_nanos() as f64 / 1e9) / 1e6,
        a.cwnd(),
        ab.drops,
        st.segments_retransmitted,
        st.fast_retransmits,
        st.timeouts,
        steady_allocations,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
}
