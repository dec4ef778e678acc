//! X11 display traffic (`kind = "x11"`): a renderer that draws frames and shows each on a remote
//! X server with PutImage requests over one TCP connection, and the X server that reads them and
//! copies them to its frame buffer (study 000's AVS on an SGI Challenge, displayed on a Sparc 20).
//!
//! What matters of the X Window System protocol (X11R6, "X Window System Protocol", Scheifler):
//! - a PutImage request (opcode 72) is a 24-byte header (opcode, format, request length,
//!   drawable, gc, width, height, dst-x, dst-y, left-pad, depth, 2 unused) and the image, each
//!   scan line padded to the connection's scanline pad (32 bits on the servers of the day);
//! - a request's length is a 16-bit count of 4-byte units, so without the BIG-REQUESTS extension
//!   no request exceeds 65,535 x 4 = 262,140 bytes: Xlib's `XPutImage` sends a larger image as
//!   several requests, each a strip of whole scan lines ([`Frame`]);
//! - in ZPixmap format a pixel takes the bits-per-pixel of the depth's pixmap format: 8 for
//!   depth 8 (1 byte), 32 for depth 24 (4 bytes);
//! - an animating Xlib program calls `XSync` after each frame: a GetInputFocus request (4 bytes)
//!   whose 32-byte reply the client waits for, so at most one frame is in flight and the client
//!   draws the next only once the server has read (and executed) the last.
//!
//! The renderer spends `render` on its CPU before sending each frame (an application timer:
//! the driver charges the host only for its network work). Xlib's transport sets
//! `TCP_NODELAY`, as the drivers are asked to. The X server knows each request's length from its
//! header; as the drivers here carry lengths, not bytes, it is given the frame's geometry and
//! reads the same sequence of requests. Its copy of each image byte into the frame buffer is a
//! host cost ([`frame_buffer_copy`]), which both engines charge.
//!
//! [`X11Result`] turns what the renderer measured into the metrics every engine reports, under
//! the keys of [`keys`].

use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use super::quantile::nearest_rank;
use super::{Application, Input, Output, StreamId};
use crate::host::HostCosts;
use crate::time::{Duration, Instant};

/// Bytes of a PutImage request before its image (X11 protocol, PutImage).
pub const PUT_IMAGE_HEADER: u64 = 24;
/// The largest core X11 request, bytes: a 16-bit length in 4-byte units (65,535 x 4).
pub const MAX_REQUEST: u64 = 65_535 * 4;
/// Bytes of a GetInputFocus request (XSync's round trip).
pub const GET_INPUT_FOCUS: u64 = 4;
/// Bytes of every X11 reply's fixed part, GetInputFocus's whole reply.
pub const REPLY: u64 = 32;
/// The stream the renderer and the server talk on.
const STREAM: StreamId = 0;

/// Bytes of a pixel in ZPixmap format at `depth` bits (8 -> 1, 24 -> 4: the pixmap formats'
/// bits per pixel); `None` for a depth this workload does not model.
pub fn bytes_per_pixel(depth: u32) -> Option<u64> {
    match depth {
        8 => Some(1),
        24 => Some(4),
        _ => None,
    }
}

/// A frame as PutImage requests: `width` x `height` pixels of `depth` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Frame {
    /// Pixels per scan line.
    pub width: u64,
    /// Scan lines.
    pub height: u64,
    /// Bits per pixel of the window's visual: 8 or 24.
    pub depth: u32,
}

impl Frame {
    /// Bytes of one scan line, padded to 32 bits.
    pub fn line_bytes(&self) -> u64 {
        (self.width * bytes_per_pixel(self.depth).unwrap_or(1)).div_ceil(4) * 4
    }

    /// Scan lines in one request: as many whole lines as fit in [`MAX_REQUEST`] (at least 1).
    pub fn lines_per_request(&self) -> u64 {
        ((MAX_REQUEST - PUT_IMAGE_HEADER) / self.line_bytes().max(1)).max(1)
    }

    /// Bytes of each PutImage request of the frame, header included, in order.
    pub fn requests(&self) -> impl Iterator<Item = u64> + '_ {
        let per = self.lines_per_request();
        (0..self.height.div_ceil(per)).map(move |k| {
            let lines = (self.height - k * per).min(per);
            PUT_IMAGE_HEADER + lines * self.line_bytes()
        })
    }

    /// Bytes of the frame's PutImage requests, headers included.
    pub fn bytes(&self) -> u64 {
        self.requests().sum()
    }

    /// Bytes of the frame's image alone (what the server copies to its frame buffer).
    pub fn image_bytes(&self) -> u64 {
        self.height * self.line_bytes()
    }
}

/// The host that runs the X server, with its copy of every byte read into the frame buffer
/// added to its receive path (one more [`HostCosts::copy_ns_per_byte`], ns per byte).
pub fn frame_buffer_copy(host: &HostCosts) -> HostCosts {
    HostCosts {
        recv_other_ns_per_byte: host.recv_other_ns_per_byte + host.copy_ns_per_byte,
        ..host.clone()
    }
}

/// What the renderer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct X11Spec {
    /// The frame.
    pub frame: Frame,
    /// The renderer's time per frame before it sends it.
    pub render: Duration,
    /// Frames to draw.
    pub frames: u64,
}

/// The metric keys of X11 results.
pub mod keys {
    /// PutImage bytes (headers and images) per second, sustained: the frames after the first,
    /// from the first frame's XSync reply to the last's, Mbit/s (the workload's default metric:
    /// the study's "sustained data rate").
    pub const X11_MBPS: &str = "x11_mbps";
    /// Frames per second over the same frames.
    pub const FRAMES_PER_S: &str = "frames_per_s";
    /// Median time of a frame, from the start of its rendering to its XSync reply (every frame),
    /// ms.
    pub const FRAME_MS: &str = "frame_ms";
    /// 99th percentile of the same, ms.
    pub const FRAME_P99_MS: &str = "frame_p99_ms";
    /// Frames shown (their XSync answered).
    pub const FRAMES: &str = "frames";
    /// PutImage requests per frame.
    pub const REQUESTS_PER_FRAME: &str = "requests_per_frame";
}

/// What the renderer measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct X11Result {
    /// PutImage bytes of the frames shown.
    pub bytes: u64,
    /// The first frame's start and the last reply.
    pub span: Option<(Instant, Instant)>,
    /// Each shown frame's time from its rendering's start to its reply, ns.
    pub frame_ns: Vec<u64>,
    /// PutImage requests per frame.
    pub requests_per_frame: u64,
}

impl X11Result {
    /// The frames the sustained rate counts and the time they took: every frame after the
    /// first (from the first reply to the last), as a session long open would run; the first
    /// opens the connection's window from TCP's initial one segment. With one frame, that one.
    fn sustained(&self) -> Option<(u64, f64)> {
        let (a, b) = self.span?;
        let n = self.frame_ns.len() as u64;
        let first = self.frame_ns.first().map(|&ns| a + Duration(ns))?;
        let (frames, from) = if n >= 2 { (n - 1, first) } else { (n, a) };
        let ns = b.saturating_duration_since(from).as_nanos();
        (ns > 0).then_some((frames, ns as f64 / 1e9))
    }

    /// PutImage data per second, sustained, Mbit/s (`None` before a frame is shown).
    pub fn mbps(&self) -> Option<f64> {
        let (frames, secs) = self.sustained()?;
        let per_frame = self.bytes as f64 / self.frame_ns.len() as f64;
        Some(per_frame * frames as f64 * 8.0 / secs / 1e6)
    }

    /// Frames shown per second, sustained.
    pub fn frames_per_s(&self) -> Option<f64> {
        let (frames, secs) = self.sustained()?;
        Some(frames as f64 / secs)
    }

    /// The metrics under [`keys`].
    pub fn metrics(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(v) = self.mbps() {
            m.insert(keys::X11_MBPS.into(), json!(v));
        }
        if let Some(v) = self.frames_per_s() {
            m.insert(keys::FRAMES_PER_S.into(), json!(v));
        }
        let mut sorted = self.frame_ns.clone();
        sorted.sort_unstable();
        for (key, q) in [(keys::FRAME_MS, 0.5), (keys::FRAME_P99_MS, 0.99)] {
            if let Some(ns) = nearest_rank(&sorted, q) {
                m.insert(key.into(), json!(ns as f64 / 1e6));
            }
        }
        m.insert(keys::FRAMES.into(), json!(self.frame_ns.len()));
        m.insert(
            keys::REQUESTS_PER_FRAME.into(),
            json!(self.requests_per_frame),
        );
        m
    }
}

/// Where the renderer is in its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not connected yet.
    Idle,
    /// Rendering frame `started` until the instant.
    Rendering(Instant),
    /// The frame's requests and XSync are written; `got` bytes of the reply read.
    Syncing { got: u64 },
    /// Every frame shown.
    Done,
}

/// The renderer: the X client on stream 0 (the connection to its display).
#[derive(Clone, Debug)]
pub struct X11Client {
    spec: X11Spec,
    phase: Phase,
    /// When the frame in hand started rendering.
    started: Instant,
    /// Frames begun.
    begun: u64,
    out: VecDeque<Output>,
    result: X11Result,
}

impl X11Client {
    /// A renderer doing `spec`.
    pub fn new(spec: X11Spec) -> Self {
        X11Client {
            spec,
            phase: Phase::Idle,
            started: Instant::ZERO,
            begun: 0,
            out: VecDeque::new(),
            result: X11Result {
                requests_per_frame: spec.frame.requests().count() as u64,
                ..X11Result::default()
            },
        }
    }

    /// What it measured so far.
    pub fn result(&self) -> &X11Result {
        &self.result
    }

    /// Starts the next frame at `now` (or finishes).
    fn next_frame(&mut self, now: Instant) {
        if self.begun == self.spec.frames {
            self.phase = Phase::Done;
            return;
        }
        self.begun += 1;
        self.started = now;
        if self.result.span.is_none() {
            self.result.span = Some((now, now));
        }
        self.phase = Phase::Rendering(now + self.spec.render);
        if self.spec.render == Duration::ZERO {
            self.send_frame();
        }
    }

    /// Writes the frame's PutImage requests, each with one write call, and XSync's
    /// GetInputFocus after them.
    fn send_frame(&mut self) {
        for len in self.spec.frame.requests() {
            self.out.push_back(Output::Write {
                stream: STREAM,
                len,
                tag: None,
            });
        }
        self.out.push_back(Output::Write {
            stream: STREAM,
            len: GET_INPUT_FOCUS,
            tag: None,
        });
        self.phase = Phase::Syncing { got: 0 };
    }
}

impl Application for X11Client {
    fn handle_input(&mut self, now: Instant, input: Input<'_>) {
        match (input, self.phase) {
            (Input::Connected { .. }, Phase::Idle) => self.next_frame(now),
            (Input::Read { len, .. }, Phase::Syncing { got }) => {
                let got = got + len;
                if got < REPLY {
                    self.phase = Phase::Syncing { got };
                    return;
                }
                self.result.bytes += self.spec.frame.bytes();
                self.result.frame_ns.push((now - self.started).as_nanos());
                if let Some(span) = &mut self.result.span {
                    span.1 = now;
                }
                self.next_frame(now);
            }
            _ => {}
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Phase::Rendering(at) = self.phase
            && at <= now
        {
            self.send_frame();
        }
    }

    fn poll_output(&mut self, _now: Instant) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self.phase {
            Phase::Rendering(at) => Some(at),
            _ => None,
        }
    }

    fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }
}

/// The X server: reads the renderer's requests off stream 0, in the order [`Frame::requests`]
/// gives them, and answers each GetInputFocus with its 32-byte reply.
#[derive(Clone, Debug)]
pub struct X11Server {
    frame: Frame,
    /// The request being read: its place in the frame's sequence (the frame's requests, then
    /// GetInputFocus) and the bytes of it still to come.
    at: usize,
    left: u64,
    /// Replies to write.
    replies: u64,
    /// Image bytes copied to the frame buffer.
    drawn: u64,
    /// PutImage requests executed.
    put_images: u64,
    /// Read calls that returned bytes.
    reads: u64,
}

impl X11Server {
    /// A server showing frames of `frame`.
    pub fn new(frame: Frame) -> Self {
        let mut s = X11Server {
            frame,
            at: 0,
            left: 0,
            replies: 0,
            drawn: 0,
            put_images: 0,
            reads: 0,
        };
        s.left = s.request(0);
        s
    }

    /// Bytes of request `k` of a frame's sequence (its last is GetInputFocus).
    fn request(&self, k: usize) -> u64 {
        self.frame.requests().nth(k).unwrap_or(GET_INPUT_FOCUS)
    }

    /// Image bytes copied to the frame buffer.
    pub fn drawn(&self) -> u64 {
        self.drawn
    }

    /// PutImage requests executed.
    pub fn put_images(&self) -> u64 {
        self.put_images
    }

    /// Read calls that returned bytes.
    pub fn reads(&self) -> u64 {
        self.reads
    }
}

impl Application for X11Server {
    fn handle_input(&mut self, _now: Instant, input: Input<'_>) {
        let Input::Read { mut len, .. } = input else {
            return;
        };
        self.reads += 1;
        let n = self.frame.requests().count();
        while len > 0 {
            let take = len.min(self.left);
            len -= take;
            self.left -= take;
            if self.left > 0 {
                break;
            }
            if self.at < n {
                self.put_images += 1;
                self.drawn += self.request(self.at) - PUT_IMAGE_HEADER;
                self.at += 1;
            } else {
                self.replies += 1;
                self.at = 0;
            }
            self.left = self.request(self.at);
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self, _now: Instant) -> Option<Output> {
        self.replies = self.replies.checked_sub(1)?;
        Some(Output::Write {
            stream: STREAM,
            len: REPLY,
            tag: None,
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{Link, Pair};

    const SUN: Frame = Frame {
        width: 1152,
        height: 900,
        depth: 8,
    };

    fn run(
        frame: Frame,
        render: Duration,
        frames: u64,
        delay_ms: u64,
    ) -> Pair<X11Client, X11Server> {
        let spec = X11Spec {
            frame,
            render,
            frames,
        };
        let link = Link {
            delay: Duration::from_millis(delay_ms),
            lose_every: 0,
        };
        let mut p = Pair::stream(X11Client::new(spec), X11Server::new(frame), link);
        p.run(Instant(Duration::from_secs(60).as_nanos()));
        assert!(p.client.is_done());
        p
    }

    /// A 1152 x 900 8-bit frame is four PutImages of whole 1152-byte lines (227, 227, 227 and
    /// 219 lines), none over 262,140 bytes; a 24-bit frame's lines take 4 bytes a pixel.
    #[test]
    fn a_frame_goes_as_strips_of_whole_lines_within_the_request_limit() {
        let r: Vec<u64> = SUN.requests().collect();
        assert_eq!(
            r,
            vec![
                24 + 227 * 1152,
                24 + 227 * 1152,
                24 + 227 * 1152,
                24 + 219 * 1152
            ]
        );
        assert!(r.iter().all(|&b| b <= MAX_REQUEST && b % 4 == 0));
        assert_eq!(SUN.image_bytes(), 1152 * 900);
        let deep = Frame { depth: 24, ..SUN };
        assert_eq!(deep.line_bytes(), 4608);
        assert_eq!(deep.lines_per_request(), 56);
        assert_eq!(deep.requests().count(), 17);
        assert!(deep.requests().all(|b| b <= MAX_REQUEST));
        assert_eq!(deep.bytes(), 17 * 24 + 4 * 1152 * 900);
        // An odd width pads each line to 32 bits.
        assert_eq!(Frame { width: 3, ..SUN }.line_bytes(), 4);
    }

    /// The server reads exactly those requests and copies every image byte.
    #[test]
    fn the_server_reads_the_requests_and_draws_every_byte() {
        let p = run(SUN, Duration::ZERO, 5, 1);
        assert_eq!(p.server.put_images(), 5 * 4);
        assert_eq!(p.server.drawn(), 5 * SUN.image_bytes());
        let m = p.client.result().metrics();
        assert_eq!(m[keys::FRAMES], 5);
        assert_eq!(m[keys::REQUESTS_PER_FRAME], 4);
    }

    /// XSync keeps one frame in flight: each frame costs a round trip of the 1 ms link (its
    /// requests there, the reply back), so five frames take 10 ms, where frames written
    /// without waiting would all be there in 1 ms.
    #[test]
    fn xsync_keeps_one_frame_in_flight() {
        let p = run(SUN, Duration::ZERO, 5, 1);
        let r = p.client.result();
        assert!(
            r.frame_ns.iter().all(|&ns| ns == 2_000_000),
            "{:?}",
            r.frame_ns
        );
        assert_eq!(r.span, Some((Instant::ZERO, Instant(10_000_000))));
        assert!((r.frames_per_s().unwrap() - 500.0).abs() < 1e-9);
        let mbps = 5.0 * SUN.bytes() as f64 * 8.0 / 10e-3 / 1e6;
        assert!((r.mbps().unwrap() - mbps).abs() < 1e-9);
    }

    /// The renderer's time comes before each frame's sending: 3 ms of rendering on the 1 ms
    /// link make each frame 5 ms.
    #[test]
    fn render_time_spaces_the_frames() {
        let p = run(SUN, Duration::from_millis(3), 4, 1);
        let r = p.client.result();
        assert!(
            r.frame_ns.iter().all(|&ns| ns == 5_000_000),
            "{:?}",
            r.frame_ns
        );
        assert_eq!(r.span.unwrap().1, Instant(20_000_000));
        let m = r.metrics();
        assert_eq!(m[keys::FRAME_MS], 5.0);
        assert_eq!(m[keys::FRAME_P99_MS], 5.0);
        assert!((m[keys::FRAMES_PER_S].as_f64().unwrap() - 200.0).abs() < 1e-9);
    }

    /// A reply read in pieces counts once it is whole.
    #[test]
    fn the_reply_counts_once_whole() {
        let mut c = X11Client::new(X11Spec {
            frame: SUN,
            render: Duration::ZERO,
            frames: 2,
        });
        c.handle_input(Instant::ZERO, Input::Connected { stream: 0 });
        while c.poll_output(Instant::ZERO).is_some() {}
        let read = |len| Input::Read {
            stream: 0,
            len,
            data: None,
        };
        c.handle_input(Instant(1), read(20));
        assert!(c.result().frame_ns.is_empty());
        c.handle_input(Instant(2), read(12));
        assert_eq!(c.result().frame_ns, vec![2]);
    }

    #[test]
    fn the_copy_to_the_frame_buffer_is_one_more_copy_on_the_receive_path() {
        let h = crate::host::presets::sparc20_m50_solaris23();
        let x = frame_buffer_copy(&h);
        let d = x.per_byte_ns(crate::host::Direction::Receive)
            - h.per_byte_ns(crate::host::Direction::Receive);
        assert!((d - h.copy_ns_per_byte).abs() < 1e-9);
        assert_eq!(
            x.per_byte_ns(crate::host::Direction::Send),
            h.per_byte_ns(crate::host::Direction::Send)
        );
    }
}
