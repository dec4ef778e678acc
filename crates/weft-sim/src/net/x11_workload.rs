//! The `x11` workload of a scenario file on the simulated network: the core's renderer and X
//! server ([`weft_model::app::x11`]) on the two ends of one TCP connection from the `from` host
//! to the `to` host, opened as a `tput` workload's flows are ([`tcp_flow`]: stack, MSS from the
//! path MTU, 64 KB buffers) with `TCP_NODELAY` at both ends (Xlib's transport sets it), each
//! host's CPU charged its calls, segments and bytes, and the X server's host one more copy of
//! each byte, into its frame buffer ([`frame_buffer_copy`], as the model charges it). Reports
//! what the renderer measured ([`weft_model::app::x11::X11Result::metrics`]).

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};
use weft_model::Duration;
use weft_model::app::Application;
use weft_model::app::x11::{X11Client, X11Server, X11Spec, frame_buffer_copy};
use weft_model::host::HostCpu;
use weft_model::net::Topology;
use weft_model::scenario::{Host, Scenario, Workload};

use super::hosted::Hosted;
use super::hosts::{App, machines};
use super::run::run_noted;
use super::tput::{Ends, tcp_flow};

/// Simulated time a frame may take at most (the run's length is this times the frames).
const FRAME_BUDGET: Duration = Duration::from_secs(30);

/// Runs the `x11` workload `w` of `s` on `topo`; metrics into `m`, problems into `notes`.
pub fn x11(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    seed: u64,
    capture: Option<&Path>,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let (Some(f), Some(t), Some(x)) = (w.from.first(), w.to.first(), w.x11) else {
        return notes.push("an x11 workload needs `from` and `to`".into());
    };
    let index = |name: &String| topo.hosts.iter().position(|h| &h.name == name);
    let (Some(a), Some(b)) = (index(f), index(t)) else {
        return notes.push(format!("x11: no host {f:?} or {t:?}"));
    };
    // Every host as its preset has it, but the display's, which copies to its frame buffer.
    let mut hosts = machines(s, topo);
    hosts[b] = s
        .host(t)
        .and_then(Host::cost_preset)
        .map(|c| HostCpu::new(frame_buffer_copy(&c)));
    let ends = Ends {
        seed,
        k: 0,
        pair: (a, b),
        machines: &hosts,
    };
    let spec = X11Spec {
        frame: x.frame,
        render: x.render,
        frames: x.frames,
    };
    let nodelay = Workload {
        nodelay: true,
        ..w.clone()
    };
    let (client, server) = tcp_flow(
        s,
        topo,
        &nodelay,
        &ends,
        &mut HashMap::new(),
        X11Client::new(spec),
        X11Server::new(x.frame),
    );
    let apps: Vec<(usize, Box<dyn App>)> = vec![(a, Box::new(client)), (b, Box::new(server))];
    let budget = x.render + FRAME_BUDGET;
    let time = Duration(budget.as_nanos().saturating_mul(x.frames));
    let Some(r) = run_noted(topo, apps, time, capture, notes) else {
        return;
    };
    let Some(c) = r.hosts.app::<Hosted<X11Client>>(0) else {
        return;
    };
    m.extend(c.app().result().metrics());
    if !c.app().is_done() {
        notes.push(format!(
            "x11 {f} -> {t}: {} of {} frames shown within {time:?}",
            c.app().result().frame_ns.len(),
            x.frames
        ));
    }
    if let Some(sv) = r.hosts.app::<Hosted<X11Server>>(1) {
        m.insert("server_drawn_bytes".into(), json!(sv.app().drawn()));
        m.insert("server_reads".into(), json!(sv.app().reads()));
    }
}
