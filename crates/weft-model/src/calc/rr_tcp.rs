//! The round trip of a request and its answer over an established TCP connection, in closed
//! form: the messages cut into segments of the MSS (each with its IP and TCP headers and
//! options), the segments pipelined store and forward over every hop (cell by cell through a
//! switch between two ATM links), each switch's latency,
//! the hosts' costs (a write call and its bytes to send a message, a read call and its bytes to
//! receive one), and what TCP adds to a request/response exchange: a message's short last
//! segment held by Nagle's rule until its full segments are acknowledged, and the
//! acknowledgement itself, sent at once for every `ack_every`-th full segment or after the
//! delayed-ACK timer.
//!
//! The connection is warm (its congestion window no longer limits a message) and nothing is
//! lost or queued behind other traffic. The simulator runs the same exchange through the TCP of
//! [`crate::tcp`]; where the two differ by construction:
//! - the model charges one read call per message (per part of it, when Nagle splits it); the
//!   simulator's readers read whatever has arrived each time they wake, so a message whose
//!   segments arrive further apart than a read call takes costs the simulator a call per batch;
//! - an echo server ([`Answer::Echo`]) writes back each read, the simulator's segment by
//!   segment as they are read; the model echoes a message of one full segment and a tail (which
//!   4.4BSD's Nagle holds) in those two parts, and any other message whole: with two or more
//!   full segments the receivers' every-second-segment ACKs release the tails without the
//!   timer, and the segment-by-segment echo overlaps the two directions, so the model's round
//!   trip is then an estimate (within 15% of the simulator's on 10 Mbit/s Ethernet up to 4 KB);
//! - the first requests of a connection still grow its congestion window in the simulator (a
//!   1995 BSD stack starts from one segment).
//!
//! Both take a delayed ACK as sent its timer's length after the segment that started it. 4.4BSD
//! sends it at the next tick of its 200 ms fast timer instead; in a closed request/response loop
//! the transactions then lock to the tick, and each held tail waits 200 ms less the few
//! milliseconds between the tick and the held segment's arrival, which both overstate by those
//! milliseconds.

pub use crate::app::rr::Answer;
use crate::calc::rtt::{Hop, RttBreakdown, cell_by_cell};
use crate::host::{Direction, HostCosts};
use crate::tcp::Config;
use crate::tech::Transport;
use crate::time::Duration;

/// The TCP behaviour a request/response exchange depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpExchange {
    /// Payload bytes of a full segment (the MSS less any option bytes every segment carries).
    pub mss: u64,
    /// TCP option bytes every segment carries (12 with timestamps).
    pub options: u64,
    /// Nagle's rule as 4.4BSD applies it: a short segment waits while any data is
    /// unacknowledged. (Off, or Linux's rule, which only holds it behind another short
    /// segment, holds nothing in an exchange of one message at a time.)
    pub bsd_nagle: bool,
    /// The delayed-ACK timer (`None`: every segment acknowledged at once).
    pub delayed_ack: Option<Duration>,
    /// Full segments acknowledged at once, without the timer.
    pub ack_every: u32,
    /// How the server answers.
    pub answer: Answer,
}

impl TcpExchange {
    /// The exchange two hosts configured with `cfg` run (the segment size the smaller of the
    /// two ends', here the same), answering as `answer`.
    pub fn from_config(cfg: &Config, answer: Answer) -> Self {
        let options = if cfg.timestamps { 12 } else { 0 };
        TcpExchange {
            mss: u64::from(cfg.mss).saturating_sub(options).max(1),
            options,
            bsd_nagle: cfg.nagle && !cfg.nagle_minshall,
            delayed_ack: cfg.delayed_ack,
            ack_every: cfg.ack_every.max(1),
            answer,
        }
    }

    /// Bytes of a segment's IP datagram carrying `payload` bytes.
    fn datagram(&self, payload: u64) -> u64 {
        payload
            + Transport::Tcp {
                options: self.options,
            }
            .header_bytes()
    }

    /// The datagrams of `bytes` of payload: full segments, then the short tail if any.
    fn cut(&self, bytes: u64) -> (Vec<u64>, Option<u64>) {
        let full = bytes / self.mss;
        let tail = bytes % self.mss;
        let mut v = vec![self.datagram(self.mss); full as usize];
        if full == 0 {
            v.push(self.datagram(tail));
            return (v, None);
        }
        (v, (tail > 0).then(|| self.datagram(tail)))
    }

    /// How long a receiver holds its acknowledgement of `full` full segments after the last
    /// one arrives.
    fn ack_delay(&self, full: u64) -> Duration {
        match self.delayed_ack {
            Some(d) if full % u64::from(self.ack_every) != 0 => d,
            _ => Duration::ZERO,
        }
    }
}

/// Arrival times at the far end of `hops` of datagrams of `sizes` bytes handed to the first
/// link at `release` (each one), each link serving them in order: store and forward, except
/// that a switch between two ATM links sends a datagram's cells on as they arrive
/// ([`cell_by_cell`]).
fn train(hops: &[Hop], sizes: &[u64], release: Duration) -> Vec<Duration> {
    let mut last = vec![release; sizes.len()];
    let mut first = last.clone();
    let mut prev: Option<&Hop> = None;
    for (i, h) in hops.iter().enumerate() {
        let cells = cell_by_cell(prev, h);
        let mut free = Duration::ZERO;
        for ((end_at, start_at), &size) in last.iter_mut().zip(first.iter_mut()).zip(sizes) {
            let wire = h.tech.wire_time(size);
            let (start, end) = match cells {
                Some((_, cell)) => {
                    let start = (*start_at).max(free);
                    (start, (start + wire).max(*end_at + cell))
                }
                None => {
                    let start = (*end_at).max(free);
                    (start, start + wire)
                }
            };
            free = end;
            let after = h.propagation + h.switch_latency;
            *start_at = start + h.tech.cell_time().unwrap_or(wire) + after;
            *end_at = (end + after).saturating_sub(h.overlap(hops.get(i + 1), size));
        }
        prev = Some(h);
    }
    last
}

/// The one-way time of a lone datagram of `size` bytes over `hops`.
fn lone(hops: &[Hop], size: u64) -> Duration {
    train(hops, &[size], Duration::ZERO)[0]
}

/// One direction of the exchange: the segments and what the far end's acknowledgements do.
struct Leg<'a> {
    there: &'a [Hop<'a>],
    back: &'a [Hop<'a>],
    x: &'a TcpExchange,
}

/// When a message's last byte reaches the receiver, and how much of that was a wait for an
/// acknowledgement.
struct Delivery {
    arrived: Duration,
    waited: Duration,
}

impl Leg<'_> {
    /// A message of `bytes` whose write ends at `release`, all of it read at once.
    fn message(&self, bytes: u64, release: Duration) -> Delivery {
        let (full, tail) = self.x.cut(bytes);
        let together: Vec<u64> = full.iter().copied().chain(tail).collect();
        let pipelined = *train(self.there, &together, release)
            .last()
            .unwrap_or(&release);
        let Some(tail) = tail.filter(|_| self.x.bsd_nagle) else {
            return Delivery {
                arrived: pipelined,
                waited: Duration::ZERO,
            };
        };
        // The tail waits for the acknowledgement of the full segments.
        let last_full = *train(self.there, &full, release).last().unwrap_or(&release);
        let acked =
            last_full + self.x.ack_delay(full.len() as u64) + lone(self.back, self.x.datagram(0));
        let arrived = train(self.there, &[tail], acked.max(release))[0];
        Delivery {
            arrived,
            waited: arrived.saturating_sub(pipelined),
        }
    }
}

/// The round trip of a `request`-byte message from `client` to `server` over `hops` and its
/// `response`-byte answer, on a warm TCP connection that behaves as `x` says (with
/// [`Answer::Echo`], `response` is taken as `request`).
pub fn tcp_request_response(
    hops: &[Hop],
    x: &TcpExchange,
    request: u64,
    response: u64,
    client: &HostCosts,
    server: &HostCosts,
) -> RttBreakdown {
    let back = super::rtt::reverse(hops);
    // An echo of a message not echoed in two parts is taken whole and not held (see above).
    let whole = TcpExchange {
        bsd_nagle: x.bsd_nagle && x.answer == Answer::Whole,
        ..*x
    };
    let there = Leg {
        there: hops,
        back: &back,
        x: &whole,
    };
    let home = Leg {
        there: &back,
        back: hops,
        x: &whole,
    };
    let cost = |h: &HostCosts, d: Direction, bytes: u64| {
        let (full, tail) = x.cut(bytes);
        h.cost(d, bytes, full.len() as u64 + u64::from(tail.is_some()), 1)
    };
    let split =
        x.answer == Answer::Echo && x.bsd_nagle && request / x.mss == 1 && request % x.mss > 0;
    let (total, waited, hosts, crossings) = if split {
        echo_in_two(&there, &home, x, request, client, server)
    } else {
        let response = if x.answer == Answer::Echo {
            request
        } else {
            response
        };
        let written = cost(client, Direction::Send, request);
        let asked = there.message(request, written);
        // Each end waits blocked in its read: the message wakes it.
        let read = cost(server, Direction::Receive, request) + server.wakeup();
        let answered = cost(server, Direction::Send, response);
        let reply = home.message(response, asked.arrived + read + answered);
        let got = cost(client, Direction::Receive, response) + client.wakeup();
        let hosts = written + read + answered + got;
        (reply.arrived + got, asked.waited + reply.waited, hosts, 2)
    };
    let sum = |f: fn(&Hop) -> Duration| hops.iter().fold(Duration::ZERO, |a, h| a + f(h));
    let propagation = sum(|h| h.propagation) * crossings;
    let switching = sum(|h| h.switch_latency) * crossings;
    RttBreakdown {
        propagation,
        switching,
        hosts,
        waiting: waited,
        serialisation: total.saturating_sub(propagation + switching + hosts + waited),
        total,
    }
}

/// An echo of a request of one full segment and a short tail that Nagle's rule holds: the full
/// segment goes, the server reads and echoes it, the echo carries the acknowledgement that
/// releases the tail (unless a pure ACK is quicker), and the tail, carrying the client's
/// acknowledgement of the echo, is echoed in turn. Returns the round trip, the tail's delay
/// against a request pipelined whole, the host costs on the way and the path crossings.
fn echo_in_two(
    there: &Leg,
    home: &Leg,
    x: &TcpExchange,
    request: u64,
    client: &HostCosts,
    server: &HostCosts,
) -> (Duration, Duration, Duration, u64) {
    let (full, tail) = (x.datagram(x.mss), x.datagram(request - x.mss));
    let t_bytes = request - x.mss;
    let written = client.cost(Direction::Send, request, 2, 1);
    let arrived = lone(there.there, full) + written;
    // Every read finds its reader blocked (the two parts come apart): each wakes it.
    let read_f = server.cost(Direction::Receive, x.mss, 1, 1) + server.wakeup();
    let write_f = server.cost(Direction::Send, x.mss, 1, 1);
    let echoed = arrived + read_f + write_f + lone(home.there, full);
    // The tail goes with the first acknowledgement of the full segment: the echo, or a pure
    // ACK when the timer is quicker than the server.
    let pure = arrived + x.ack_delay(1) + lone(there.back, x.datagram(0));
    let released = pure.min(echoed).max(written);
    let tail_in = train(there.there, &[tail], released)[0];
    let read_t = server.cost(Direction::Receive, t_bytes, 1, 1) + server.wakeup();
    let write_t = server.cost(Direction::Send, t_bytes, 1, 1);
    let ready = tail_in.max(arrived + read_f + write_f) + read_t + write_t;
    let back_in = train(home.there, &[tail], ready)[0];
    let read_echo_f = client.cost(Direction::Receive, x.mss, 1, 1) + client.wakeup();
    let read_echo_t = client.cost(Direction::Receive, t_bytes, 1, 1) + client.wakeup();
    let done = back_in.max(echoed + read_echo_f) + read_echo_t;
    let whole = *train(there.there, &[full, tail], written)
        .last()
        .unwrap_or(&tail_in);
    let waited = tail_in.saturating_sub(whole);
    let hosts = written + read_f + write_f + read_t + write_t + read_echo_t;
    (done, waited, hosts, 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calc::rtt::request_response;
    use crate::tech::Tech;

    fn eth() -> Tech {
        Tech::preset("ethernet10").unwrap()
    }

    fn direct(t: &Tech) -> [Hop<'_>; 1] {
        [Hop {
            cut_through: false,
            tech: t,
            propagation: Duration::from_micros(5),
            switch_latency: Duration::ZERO,
        }]
    }

    fn bsd(answer: Answer) -> TcpExchange {
        TcpExchange::from_config(
            &Config {
                mss: 1460,
                ..Config::default()
            },
            answer,
        )
    }

    #[test]
    fn a_one_segment_exchange_is_the_datagram_round_trip() {
        let t = eth();
        let hops = direct(&t);
        let h = HostCosts {
            send_call_ns: 100_000.0,
            recv_call_ns: 50_000.0,
            send_other_ns_per_byte: 10.0,
            ..HostCosts::FREE
        };
        let tcp = Transport::Tcp { options: 0 };
        for answer in [Answer::Whole, Answer::Echo] {
            let a = tcp_request_response(&hops, &bsd(answer), 64, 64, &h, &h);
            let b = request_response(&hops, tcp, 64, 64, &h, &h);
            assert_eq!(a.total, b.total);
            assert_eq!(a.waiting, Duration::ZERO);
        }
    }

    #[test]
    fn through_an_atm_switch_both_forms_send_cells_on_as_they_arrive() {
        let t = Tech::preset("oc3c").unwrap();
        let hop = |latency| Hop {
            tech: &t,
            propagation: Duration::from_micros(5),
            switch_latency: latency,
            cut_through: false,
        };
        let hops = [hop(Duration::from_micros(10)), hop(Duration::ZERO)];
        let tcp = Transport::Tcp { options: 0 };
        let free = HostCosts::FREE;
        // One segment each way: the train and the datagram round trip agree, and the second
        // hop costs a cell, not a frame.
        let a = tcp_request_response(&hops, &bsd(Answer::Whole), 1000, 1000, &free, &free);
        let b = request_response(&hops, tcp, 1000, 1000, &free, &free);
        assert_eq!(a.total, b.total);
        let one_hop = 2 * t.wire_time(1040).0 + 2 * 5_000;
        let cell = t.cell_time().unwrap().0;
        assert_eq!(a.total.0, one_hop + 2 * (cell + 5_000 + 10_000));
    }

    #[test]
    fn bsd_nagle_holds_an_odd_segment_count_for_the_delayed_ack() {
        let t = eth();
        let hops = direct(&t);
        let free = HostCosts::FREE;
        let x = bsd(Answer::Whole);
        // 1500 bytes: one full segment and a 40-byte tail, each way: the tail waits for the
        // 200 ms delayed ACK of the lone full segment, then for the ACK's trip back, and then
        // crosses the link's propagation delay behind the full segment instead of on its heels.
        let held = tcp_request_response(&hops, &x, 1500, 1500, &free, &free);
        let ack = t.wire_time(40) + Duration::from_micros(5);
        let delay = Duration::from_micros(5);
        assert_eq!(held.waiting, (Duration::from_millis(200) + ack + delay) * 2);
        // Two full segments are acknowledged at once: the tail waits one ACK's trip.
        let even = tcp_request_response(&hops, &x, 2 * 1460 + 40, 64, &free, &free);
        let free_flow = TcpExchange {
            bsd_nagle: false,
            ..x
        };
        let not_held = tcp_request_response(&hops, &free_flow, 2 * 1460 + 40, 64, &free, &free);
        assert!(even.waiting > ack && even.waiting < ack * 2, "{even:?}");
        assert_eq!(not_held.waiting, Duration::ZERO);
        assert!(even.total > not_held.total);
        // Linux's rule (Minshall's) holds nothing.
        let linux = TcpExchange::from_config(
            &Config {
                mss: 1460,
                timestamps: false,
                ..Config::linux()
            },
            Answer::Whole,
        );
        let l = tcp_request_response(&hops, &linux, 1500, 1500, &free, &free);
        assert_eq!(l.waiting, Duration::ZERO);
        let bsd_free = tcp_request_response(&hops, &free_flow, 1500, 1500, &free, &free);
        assert_eq!(l.total, bsd_free.total);
    }

    #[test]
    fn an_echo_service_releases_the_tail_with_its_first_echo() {
        let t = eth();
        let hops = direct(&t);
        let free = HostCosts::FREE;
        let r = tcp_request_response(&hops, &bsd(Answer::Echo), 1500, 1500, &free, &free);
        // No timer: full segment there, its echo back (carrying the ACK), tail there, tail back.
        let one = |payload: u64| t.wire_time(payload + 40) + Duration::from_micros(5);
        assert_eq!(r.total, one(1460) * 2 + one(40) * 2);
        assert!(r.waiting > Duration::ZERO);
    }
}
