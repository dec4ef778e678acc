//! The `real` engine of `weft repro`: a scenario's request/response and throughput workloads
//! measured on loopback against an in-process agent (as `weft demo` does), so that a study's
//! measuring method (a `method` item) runs on the user's own machine. The topology is not
//! emulated: the numbers are the host's, not the paper's network's. Runs are bounded: a
//! throughput test lasts at most [`MAX_TPUT`], a size at most [`MAX_REQUESTS`] requests.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use weft_model::scenario::{Point, Scenario, WorkloadKind};
use weft_model::tech::Transport;
use weft_probe::proto::{Amount, Direction, TputSpec, Transport as ProbeTransport};
use weft_probe::rr::{self, Peer, Proto, RrConfig, StopRule};
use weft_probe::server::{Server, ServerConfig, ServerHandle};
use weft_probe::tput::{self, TputConfig};
use weft_report::{Engine, ResultDoc};

/// The longest throughput test the real engine runs for a workload (its `time` if shorter).
pub const MAX_TPUT: Duration = Duration::from_secs(2);

/// The most requests the real engine measures per point (the workload's `count` if fewer).
pub const MAX_REQUESTS: u64 = 2000;

/// An agent on 127.0.0.1 (a free port) inside this process, stopped when dropped.
pub struct LocalAgent {
    handle: Option<ServerHandle>,
    addr: SocketAddr,
}

impl LocalAgent {
    /// Starts the agent.
    pub fn start() -> Result<LocalAgent, String> {
        let server = Server::bind(ServerConfig::loopback())
            .map_err(|e| format!("cannot start a local agent: {e}"))?;
        let addr = server.local_addr();
        Ok(LocalAgent {
            handle: Some(server.spawn()),
            addr,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for LocalAgent {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown();
            let _ = h.join();
        }
    }
}

/// Every point of `scenario` measured against the agent at `agent`: one sample per point, in
/// [`Scenario::points`] order, with `workload`, `point` and the metrics the model and the
/// simulator name the same way (`rtt_mean_us`, `rtt_ms`, `goodput_mbps`, ...), or `notes` saying
/// why a point was not measured.
pub fn run(scenario: &Scenario, agent: SocketAddr) -> ResultDoc {
    let mut doc = ResultDoc::new("real.scenario", Engine::Real);
    doc.params = json!({ "scenario": scenario.name, "agent": agent.to_string(),
                         "loopback": true, "max_tput_s": MAX_TPUT.as_secs_f64(),
                         "max_requests": MAX_REQUESTS });
    for p in scenario.points() {
        let mut sample = match p.spec.kind {
            WorkloadKind::Rr => request_response(&p, agent),
            WorkloadKind::Tput => throughput(&p, agent),
            other => json!({ "notes": [format!(
                "a {} workload is not a loopback measurement", other.name())] }),
        };
        sample["workload"] = json!(p.workload);
        sample["point"] = serde_json::to_value(p.value).unwrap_or(Value::Null);
        doc.samples.push(sample);
    }
    doc
}

fn request_response(p: &Point, agent: SocketAddr) -> Value {
    let w = &p.spec;
    let size = w
        .size
        .and_then(|s| u32::try_from(s.0).ok())
        .unwrap_or(1)
        .max(1);
    let mut cfg = RrConfig::new(Peer::Agent(agent), vec![size]);
    cfg.proto = match w.proto {
        Some(Transport::Udp) => Proto::Udp,
        _ => Proto::Tcp,
    };
    cfg.response_size = w.response_size.and_then(|s| u32::try_from(s.0).ok());
    let count = w.count.unwrap_or(MAX_REQUESTS).clamp(1, MAX_REQUESTS);
    cfg.stop = StopRule::Count { count };
    cfg.warmup = 20;
    if let Some(t) = w.timeout {
        cfg.timeout = Duration::from_nanos(t.as_nanos().max(1));
    }
    cfg.abort_after_losses = 0;
    match rr::run(&cfg) {
        Ok(r) => match r.sizes.first() {
            Some(s) => {
                let sent = s.sent.max(1) as f64;
                json!({ "rtt_mean_us": s.rtt.mean_ns / 1e3, "rtt_ms": s.rtt.mean_ns / 1e6,
                        "rtt_p50_us": s.rtt.p50_ns as f64 / 1e3,
                        "rtt_p99_us": s.rtt.p99_ns as f64 / 1e3,
                        "rtt_min_us": s.rtt.min_ns as f64 / 1e3,
                        "rr_loss": s.lost as f64 / sent, "requests": s.sent,
                        "notes": [format!("{} {} requests of {size} B on loopback", count, cfg.proto)] })
            }
            None => json!({ "notes": ["the request/response run measured no size"] }),
        },
        Err(e) => json!({ "notes": [format!("request/response on loopback failed: {e}")] }),
    }
}

fn throughput(p: &Point, agent: SocketAddr) -> Value {
    let w = &p.spec;
    let time = w
        .time
        .map(|t| Duration::from_nanos(t.as_nanos()))
        .unwrap_or(MAX_TPUT)
        .min(MAX_TPUT)
        .max(Duration::from_millis(100));
    let udp = matches!(w.proto, Some(Transport::Udp));
    let len = w
        .size
        .and_then(|s| u32::try_from(s.0).ok())
        .unwrap_or(if udp { 1472 } else { 64 * 1024 });
    let spec = TputSpec {
        transport: if udp {
            ProbeTransport::Udp
        } else {
            ProbeTransport::Tcp
        },
        direction: Direction::Forward,
        streams: 1,
        len: len.clamp(1, if udp { 65_507 } else { 16 << 20 }),
        amount: Amount::TimeNs(u64::try_from(time.as_nanos()).unwrap_or(u64::MAX)),
        window: w.window.map(|s| s.0),
        mss: None,
        cc: None,
        nodelay: false,
        rate_bps: if udp { w.rate.map(|r| r.0) } else { None },
        interval_ns: None,
    };
    let cfg = TputConfig {
        server: agent,
        spec,
        connect_timeout: Duration::from_secs(5),
        key: None,
    };
    match tput::run(&cfg, &mut |_| {}) {
        Ok(t) => {
            let bps = t.goodput_bps();
            json!({ "goodput_mbps": bps / 1e6, "payload_kib_s": bps / 8.0 / 1024.0,
                    "notes": [format!("{} for {:.1} s on loopback, {len}-byte writes",
                                      if udp { "UDP" } else { "TCP" }, time.as_secs_f64())] })
        }
        Err(e) => json!({ "notes": [format!("throughput on loopback failed: {e}")] }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_response_and_throughput_run_on_loopback_and_others_say_why_not() {
        let text = "name = \"r\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
                    [[link]]\nends = [\"a\", \"b\"]\ntech = \"fddi\"\n\
                    [[workload]]\nkind = \"rr\"\nproto = \"udp\"\nfrom = \"a\"\nto = \"b\"\n\
                    size = [64, 1024]\ncount = 50\n\
                    [[workload]]\nkind = \"tput\"\nfrom = \"a\"\nto = \"b\"\ntime = \"200ms\"\n\
                    [[workload]]\nkind = \"saturated\"\ninputs = 2\noutputs = 2\n";
        let s = Scenario::parse(text, "r.toml").unwrap_or_else(|e| panic!("{e}"));
        let agent = LocalAgent::start().unwrap_or_else(|e| panic!("{e}"));
        let doc = run(&s, agent.addr());
        assert_eq!(doc.samples.len(), 4);
        for rr in &doc.samples[..2] {
            let us = rr["rtt_mean_us"].as_f64().unwrap_or(0.0);
            assert!(us > 0.0 && us < 1e6, "{rr}");
            assert_eq!(rr["workload"], 0);
        }
        assert!(
            doc.samples[2]["goodput_mbps"].as_f64().unwrap_or(0.0) > 1.0,
            "{}",
            doc.samples[2]
        );
        assert!(
            doc.samples[3]["notes"][0]
                .as_str()
                .is_some_and(|n| n.contains("saturated"))
        );
    }
}
