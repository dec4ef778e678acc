//! The outcome of a throughput test: per-direction counts reconciled between sender and
//! receiver, interval samples, CPU use, and its `ResultDoc` and table forms.

use std::fmt::Write as _;
use std::net::SocketAddr;

use serde::Serialize;
use serde_json::{Value, json};
use weft_model::{Duration, Rate, Size};
use weft_report::{Engine, ResultDoc};

use crate::error::ProbeError;
use crate::proto::{Amount, CpuUse, Interval, SockInfo, StreamEnd, TputSpec, Transport, UdpCounts};

/// Receiver-side counts of one direction over one interval (a `samples` entry of the result).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IntervalSample {
    /// Interval start, seconds since the test started.
    pub start_s: f64,
    /// Interval end, seconds since the test started.
    pub end_s: f64,
    /// `up` (client to agent) or `down` (agent to client).
    pub direction: &'static str,
    /// Bytes received in the interval.
    pub bytes: u64,
    /// Receiver-side goodput over the interval, bits/s.
    pub bps: f64,
    /// Reads (TCP) or datagrams (UDP) received in the interval.
    pub packets: u64,
    /// Which end measured it: `agent` or `client`.
    pub measured_by: &'static str,
    /// UDP: change in datagrams missing over the interval (negative when late datagrams
    /// filled earlier gaps); `None` for TCP.
    pub lost: Option<i64>,
}

impl IntervalSample {
    /// The receive side of an interval report.
    pub fn from_report(
        rep: &Interval,
        direction: &'static str,
        by_agent: bool,
        transport: Transport,
    ) -> Self {
        let dur = rep.end_ns.saturating_sub(rep.start_ns);
        IntervalSample {
            start_s: rep.start_ns as f64 / 1e9,
            end_s: rep.end_ns as f64 / 1e9,
            direction,
            bytes: rep.rx_bytes,
            bps: if dur == 0 {
                0.0
            } else {
                rep.rx_bytes as f64 * 8e9 / dur as f64
            },
            packets: rep.rx_packets,
            measured_by: if by_agent { "agent" } else { "client" },
            lost: (transport == Transport::Udp).then_some(rep.rx_lost),
        }
    }
}

/// One direction of a test, with the sender's and the receiver's view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DirResult {
    /// Bytes the sender wrote (UDP: datagram payloads including weft's 16-byte header).
    pub sender_bytes: u64,
    /// Bytes the receiver read.
    pub receiver_bytes: u64,
    /// Writes (TCP) or datagrams (UDP) sent.
    pub sender_packets: u64,
    /// Reads (TCP) or distinct datagrams (UDP) received.
    pub receiver_packets: u64,
    /// Longest sender stream, start to last write, ns.
    pub sender_elapsed_ns: u64,
    /// Longest receiver stream, start to last byte, ns.
    pub receiver_elapsed_ns: u64,
    /// The headline: receiver bytes over receiver time, bits/s.
    pub goodput_bps: f64,
    /// Sender bytes over sender time, bits/s.
    pub sender_bps: f64,
    /// UDP accounting summed over streams (jitter: the largest of the streams).
    pub udp: Option<UdpCounts>,
    /// Per stream: sender's and receiver's final counters.
    pub streams: Vec<(StreamEnd, StreamEnd)>,
}

impl DirResult {
    /// Pairs sender and receiver streams and checks that they agree: for TCP every byte written
    /// must have been read (the receiver counted to end of stream); for UDP the receiver's
    /// expected count must be the sender's datagram count.
    pub fn reconcile(
        transport: Transport,
        sender: Vec<StreamEnd>,
        receiver: Vec<StreamEnd>,
    ) -> Result<DirResult, ProbeError> {
        if sender.len() != receiver.len() {
            return Err(ProbeError::Protocol(format!(
                "{} sending streams but {} receiving streams reported",
                sender.len(),
                receiver.len()
            )));
        }
        let mut udp: Option<UdpCounts> = None;
        for (i, (s, r)) in sender.iter().zip(&receiver).enumerate() {
            match transport {
                Transport::Tcp if s.bytes != r.bytes => {
                    return Err(ProbeError::Protocol(format!(
                        "stream {i}: sender wrote {} bytes but receiver read {}",
                        s.bytes, r.bytes
                    )));
                }
                Transport::Tcp => {}
                Transport::Udp => {
                    let c = r.udp.clone().unwrap_or_default();
                    if c.expected != s.packets {
                        return Err(ProbeError::Protocol(format!(
                            "stream {i}: sender sent {} datagrams, receiver expected {}",
                            s.packets, c.expected
                        )));
                    }
                    let a = udp.get_or_insert_with(UdpCounts::default);
                    a.expected += c.expected;
                    a.received += c.received;
                    a.lost += c.lost;
                    a.duplicates += c.duplicates;
                    a.reordered += c.reordered;
                    a.jitter_ns = a.jitter_ns.max(c.jitter_ns);
                }
            }
        }
        let sum = |v: &[StreamEnd], f: fn(&StreamEnd) -> u64| v.iter().map(f).sum::<u64>();
        let max = |v: &[StreamEnd]| v.iter().map(|e| e.elapsed_ns).max().unwrap_or(0);
        let bps = |bytes: u64, ns: u64| {
            if ns == 0 {
                0.0
            } else {
                bytes as f64 * 8e9 / ns as f64
            }
        };
        let receiver_packets = match &udp {
            Some(u) => u.received,
            None => sum(&receiver, |e| e.packets),
        };
        Ok(DirResult {
            sender_bytes: sum(&sender, |e| e.bytes),
            receiver_bytes: sum(&receiver, |e| e.bytes),
            sender_packets: sum(&sender, |e| e.packets),
            receiver_packets,
            sender_elapsed_ns: max(&sender),
            receiver_elapsed_ns: max(&receiver),
            goodput_bps: bps(sum(&receiver, |e| e.bytes), max(&receiver)),
            sender_bps: bps(sum(&sender, |e| e.bytes), max(&sender)),
            udp,
            streams: sender.into_iter().zip(receiver).collect(),
        })
    }
}

/// Everything a throughput test measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TputResult {
    /// The agent's address.
    pub server: SocketAddr,
    /// What was asked for.
    pub spec: TputSpec,
    /// The agent's test number.
    pub test_id: u64,
    /// Client to agent, if data flowed that way.
    pub up: Option<DirResult>,
    /// Agent to client, if data flowed that way.
    pub down: Option<DirResult>,
    /// The client's data sockets as the kernel configured them (up streams first).
    pub local_sockets: Vec<SockInfo>,
    /// The agent's data sockets as its kernel configured them.
    pub remote_sockets: Vec<SockInfo>,
    /// The client's data sockets at the end of the test (buffers after auto-tuning).
    pub local_sockets_end: Vec<SockInfo>,
    /// The agent's data sockets at the end of the test.
    pub remote_sockets_end: Vec<SockInfo>,
    /// The client's CPU use for the test.
    pub local_cpu: CpuUse,
    /// The agent's CPU use for the test.
    pub remote_cpu: CpuUse,
    /// Receiver-side interval samples (with `--interval`).
    pub intervals: Vec<IntervalSample>,
    /// Wall time of the data phase at the client, ns.
    pub wall_ns: u64,
    /// The agent that was the client, when the test was relayed (`weft pattern A:B`): then
    /// "local" and "client" in this result mean that agent, and `server` is the target.
    pub relay: Option<SocketAddr>,
}

impl TputResult {
    /// Receiver-side goodput summed over both directions, bits/s: the headline figure.
    pub fn goodput_bps(&self) -> f64 {
        self.up
            .iter()
            .chain(self.down.iter())
            .map(|d| d.goodput_bps)
            .sum()
    }

    /// The result as a `ResultDoc` of kind `tput`, engine `real`.
    ///
    /// `summary` keys: `goodput_bps` (headline), `up` / `down` (a [`DirResult`] or null),
    /// `cpu.client` / `cpu.agent` (`user_ns`, `sys_ns`, `wall_ns`, `percent`),
    /// `cpu_pct_per_gbps.client` / `.agent`. `samples` are [`IntervalSample`]s.
    pub fn to_result_doc(&self) -> ResultDoc {
        let mut doc = ResultDoc::new("tput", Engine::Real);
        let s = &self.spec;
        let amount = match s.amount {
            Amount::Bytes(b) => json!({ "bytes": b }),
            Amount::Count(c) => json!({ "count": c }),
            Amount::TimeNs(t) => json!({ "time_ns": t }),
        };
        doc.params = json!({
            "server": self.server.to_string(),
            "relay": self.relay.map(|r| r.to_string()),
            "test_id": self.test_id,
            "transport": s.transport,
            "direction": s.direction,
            "streams": s.streams,
            "len": s.len,
            "amount": amount,
            "window": s.window,
            "mss": s.mss,
            "cc": s.cc,
            "nodelay": s.nodelay,
            "rate_bps": s.rate_bps,
            "interval_ns": s.interval_ns,
            "sockets": { "client": self.local_sockets, "agent": self.remote_sockets },
            "sockets_end": { "client": self.local_sockets_end, "agent": self.remote_sockets_end },
        });
        let cpu = |c: &CpuUse| {
            json!({ "user_ns": c.user_ns, "sys_ns": c.sys_ns, "wall_ns": c.wall_ns,
                    "percent": c.percent() })
        };
        let gbps = self.goodput_bps() / 1e9;
        let per = |c: &CpuUse| if gbps > 0.0 { c.percent() / gbps } else { 0.0 };
        doc.summary = json!({
            "goodput_bps": self.goodput_bps(),
            "up": self.up,
            "down": self.down,
            "cpu": { "client": cpu(&self.local_cpu), "agent": cpu(&self.remote_cpu) },
            "cpu_pct_per_gbps": { "client": per(&self.local_cpu), "agent": per(&self.remote_cpu) },
            "wall_ns": self.wall_ns,
        });
        doc.samples = self
            .intervals
            .iter()
            .map(|i| serde_json::to_value(i).unwrap_or(Value::Null))
            .collect();
        doc
    }

    /// A compact human-readable table.
    pub fn to_table(&self) -> String {
        let s = &self.spec;
        let mut out = String::new();
        let amount = match s.amount {
            Amount::Bytes(b) => format!("{}", Size(b)),
            Amount::Count(c) => format!("{c} x {}", Size(u64::from(s.len))),
            Amount::TimeNs(t) => format!("{}", Duration(t)),
        };
        let via = self.relay.map_or(String::new(), |r| format!(" from {r}"));
        let _ = writeln!(
            out,
            "weft tput {}{via} {} {}, {} stream(s), len {}, {amount}",
            self.server,
            format!("{:?}", s.transport).to_lowercase(),
            format!("{:?}", s.direction).to_lowercase(),
            s.streams,
            Size(u64::from(s.len))
        );
        let _ = writeln!(
            out,
            "{:<5} {:>12} {:>12} {:>9} {:>12} {:>12}  udp",
            "dir", "sent", "received", "time", "goodput", "sender rate"
        );
        for (name, d) in [("up", &self.up), ("down", &self.down)] {
            let Some(d) = d else { continue };
            let udp = d.udp.as_ref().map_or(String::new(), |u| {
                format!(
                    "lost {}/{} ({:.3}%) dup {} reord {} jitter {}",
                    u.lost,
                    u.expected,
                    if u.expected == 0 {
                        0.0
                    } else {
                        u.lost as f64 * 100.0 / u.expected as f64
                    },
                    u.duplicates,
                    u.reordered,
                    Duration(u.jitter_ns.round() as u64)
                )
            });
            let _ = writeln!(
                out,
                "{:<5} {:>12} {:>12} {:>9} {:>12} {:>12}  {}",
                name,
                Size(d.sender_bytes).to_string(),
                Size(d.receiver_bytes).to_string(),
                Duration(d.receiver_elapsed_ns).to_string(),
                Rate(d.goodput_bps.round() as u64).to_string(),
                Rate(d.sender_bps.round() as u64).to_string(),
                udp
            );
        }
        let _ = writeln!(
            out,
            "cpu   client {:.1}%  agent {:.1}%  (user+sys over wall time)",
            self.local_cpu.percent(),
            self.remote_cpu.percent()
        );
        let sock = |v: &[SockInfo]| {
            v.first().map_or("-".to_string(), |i| {
                let mut t = format!("snd {} rcv {}", Size(i.sndbuf), Size(i.rcvbuf));
                if let Some(m) = i.mss {
                    let _ = write!(t, " mss {m}");
                }
                if let Some(c) = &i.cc {
                    let _ = write!(t, " cc {c}");
                }
                t
            })
        };
        let _ = writeln!(
            out,
            "sockets at start  client {}  agent {}",
            sock(&self.local_sockets),
            sock(&self.remote_sockets)
        );
        let _ = writeln!(
            out,
            "sockets at end    client {}  agent {}",
            sock(&self.local_sockets_end),
            sock(&self.remote_sockets_end)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(bytes: u64, packets: u64) -> StreamEnd {
        StreamEnd {
            bytes,
            packets,
            elapsed_ns: 1_000_000_000,
            udp: None,
        }
    }

    #[test]
    fn tcp_counts_must_match() {
        let d = DirResult::reconcile(Transport::Tcp, vec![end(100, 1)], vec![end(100, 3)]).unwrap();
        assert_eq!(d.goodput_bps, 800.0);
        let e = DirResult::reconcile(Transport::Tcp, vec![end(100, 1)], vec![end(99, 3)]);
        assert!(e.unwrap_err().to_string().contains("99"));
    }

    #[test]
    fn udp_sums_streams_and_checks_expected() {
        let mut r = end(50, 5);
        r.udp = Some(UdpCounts {
            expected: 6,
            received: 5,
            lost: 1,
            duplicates: 0,
            reordered: 2,
            jitter_ns: 3.0,
        });
        let d = DirResult::reconcile(Transport::Udp, vec![end(60, 6)], vec![r.clone()]).unwrap();
        assert_eq!(d.udp.as_ref().unwrap().lost, 1);
        assert_eq!(d.receiver_packets, 5);
        assert!(DirResult::reconcile(Transport::Udp, vec![end(70, 7)], vec![r]).is_err());
    }
}
