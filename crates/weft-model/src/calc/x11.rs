//! X11 display traffic in closed form ([`crate::app::x11`] on the `model` engine). A frame of
//! `B` PutImage bytes (and XSync's 4-byte GetInputFocus) takes
//!
//! `render + max(send path, wire, receive path + frame-buffer copy) + XSync round trip`
//!
//! where the send path is the renderer's host's work on the frame (a write call per request,
//! each segment, each byte, and the ACKs it receives: one per two segments, delayed ACKs), the
//! wire the slowest hop's time for the frame's segments, and the receive path the X server's
//! host's (a read per request, its segments and bytes, the ACKs it sends) with one more copy of
//! each byte into the frame buffer ([`crate::app::x11::frame_buffer_copy`]). The three overlap
//! as the frame streams through them, so the slowest sets the pace; the round trip of XSync
//! ([`super::rtt::request_response`]: 4 bytes there, the 32-byte reply back) is paid once a
//! frame, as the renderer waits for it before drawing the next. The host costs are the
//! scenario's presets ([`crate::host`]), the ones the simulator charges.

use serde::Serialize;

use super::engine::ModelPoint;
use super::rr_point::{host_costs, path_hops};
use super::rtt::{Hop, request_response};
use crate::app::x11::{Frame, GET_INPUT_FOCUS, REPLY, X11Spec, frame_buffer_copy, keys};
use crate::host::{Direction, HostCosts};
use crate::scenario::{Scenario, Workload};
use crate::tech::Transport;
use crate::time::Duration;

/// TCP/IP headers of a segment, bytes.
const HEADERS: u64 = 40;

/// What sets the pace of a frame's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum X11Limit {
    /// The renderer's host's send path.
    Sender,
    /// The slowest link.
    Wire,
    /// The X server's host's receive path and its copy to the frame buffer.
    Receiver,
}

/// The estimate for one renderer and display.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct X11Estimate {
    /// The renderer's time, the frame's bytes through the slowest stage, and XSync's round trip.
    pub render: Duration,
    /// The frame's bytes through the slowest of the three stages.
    pub transfer: Duration,
    /// XSync's round trip.
    pub sync: Duration,
    /// Their sum: one frame.
    pub frame: Duration,
    /// What sets `transfer`.
    pub limit: X11Limit,
    /// PutImage bytes per second, Mbit/s.
    pub mbps: f64,
}

/// Frames of `spec` from a renderer on `client` to an X server on `server` (its costs without
/// the frame-buffer copy, which this adds) over `hops`.
pub fn estimate(
    hops: &[Hop],
    spec: &X11Spec,
    client: &HostCosts,
    server: &HostCosts,
) -> X11Estimate {
    let frame: &Frame = &spec.frame;
    let server = frame_buffer_copy(server);
    let mtu = hops.iter().map(|h| h.tech.mtu.0).min().unwrap_or(1500);
    let mss = mtu.saturating_sub(HEADERS).max(1);
    let bytes = frame.bytes() + GET_INPUT_FOCUS;
    let segments = bytes.div_ceil(mss);
    let acks = segments.div_ceil(2);
    let calls = frame.requests().count() as u64 + 1;
    let path = |h: &HostCosts, dir: Direction, other: Direction| {
        h.cost(dir, bytes, segments, calls) + h.cost(other, 0, acks, 0)
    };
    let sender = path(client, Direction::Send, Direction::Receive);
    let receiver = path(&server, Direction::Receive, Direction::Send);
    let last = bytes - (segments - 1) * mss;
    let wire = hops
        .iter()
        .map(|h| {
            h.tech.wire_time(mss + HEADERS) * (segments - 1) + h.tech.wire_time(last + HEADERS)
        })
        .max()
        .unwrap_or_default();
    let (transfer, limit) = [
        (sender, X11Limit::Sender),
        (wire, X11Limit::Wire),
        (receiver, X11Limit::Receiver),
    ]
    .into_iter()
    .fold((Duration::ZERO, X11Limit::Wire), |a, b| {
        if b.0 > a.0 { b } else { a }
    });
    let tcp = Transport::Tcp { options: 0 };
    let sync = request_response(hops, tcp, GET_INPUT_FOCUS, REPLY, client, &server).total;
    let total = spec.render + transfer + sync;
    X11Estimate {
        render: spec.render,
        transfer,
        sync,
        frame: total,
        limit,
        mbps: frame.bytes() as f64 * 8.0 / total.as_nanos().max(1) as f64 * 1e3,
    }
}

/// Fills `out` with the x11 workload `w` (its renderer `from`, its display `to`).
pub fn x11(s: &Scenario, w: &Workload, out: &mut ModelPoint) {
    let (Some(a), Some(b), Some(x)) = (w.from.first(), w.to.first(), w.x11) else {
        return;
    };
    let Some(path) = s.path(a, b) else {
        out.notes.push(format!("no path from {a:?} to {b:?}"));
        return;
    };
    let hops = path_hops(s, a, &path);
    let spec = X11Spec {
        frame: x.frame,
        render: x.render,
        frames: x.frames,
    };
    let (client, server) = (host_costs(s, a), host_costs(s, b));
    let e = estimate(&hops, &spec, &client, &server);
    let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
    let m = &mut out.metrics;
    m.insert(keys::X11_MBPS.into(), e.mbps);
    m.insert(
        keys::FRAMES_PER_S.into(),
        1e9 / e.frame.as_nanos().max(1) as f64,
    );
    m.insert(keys::FRAME_MS.into(), ms(e.frame));
    m.insert(keys::FRAME_P99_MS.into(), ms(e.frame));
    m.insert(keys::FRAMES.into(), x.frames as f64);
    m.insert(
        keys::REQUESTS_PER_FRAME.into(),
        x.frame.requests().count() as f64,
    );
    out.notes.push(format!(
        "closed form: {}x{}x{} frames of {} PutImage bytes; render {:.2} ms + {:?}-limited \
         transfer {:.2} ms + XSync {:.2} ms; hosts {} and {} (+ frame-buffer copy)",
        x.frame.width,
        x.frame.height,
        x.frame.depth,
        x.frame.bytes(),
        ms(e.render),
        e.limit,
        ms(e.transfer),
        ms(e.sync),
        client.name,
        server.name,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::presets::sparc20_m50_solaris23;
    use crate::tech::Tech;

    fn hop(tech: &Tech) -> [Hop<'_>; 1] {
        [Hop::direct(tech)]
    }

    const SPEC: X11Spec = X11Spec {
        frame: Frame {
            width: 1152,
            height: 900,
            depth: 8,
        },
        render: Duration::ZERO,
        frames: 1,
    };

    /// Free hosts on Ethernet: the wire alone, a bit under 10 Mbit/s after the headers and the
    /// round trip; a Sparc 20 display on OC-3c: its receive path and copy.
    #[test]
    fn the_slowest_stage_and_the_round_trip_make_a_frame() {
        let free = HostCosts::FREE;
        let eth = Tech::preset("ethernet10").unwrap();
        let e = estimate(&hop(&eth), &SPEC, &free, &free);
        assert_eq!(e.limit, X11Limit::Wire);
        assert!(e.mbps < 10.0 && e.mbps > 9.0, "{}", e.mbps);
        let oc3 = Tech::preset("oc3c").unwrap();
        let ss20 = sparc20_m50_solaris23();
        let a = estimate(&hop(&oc3), &SPEC, &free, &ss20);
        assert_eq!(a.limit, X11Limit::Receiver);
        assert_eq!(a.frame, a.transfer + a.sync);
        let slow = estimate(
            &hop(&oc3),
            &X11Spec {
                render: Duration::from_millis(100),
                ..SPEC
            },
            &free,
            &ss20,
        );
        assert_eq!(slow.frame, a.frame + Duration::from_millis(100));
        assert!(slow.mbps < a.mbps);
    }
}
