//! An application on one TCP connection (its stream 0), non-blocking, waiting in `ppoll` until
//! the socket or the application's deadline has something.
//!
//! Each turn: the application's timer; every byte the socket has, read and handed over (a read
//! of `n` bytes is one [`Input::Read`] with its bytes); the outputs, queued; as much of the
//! queue written as the socket takes, a message whose last byte the socket took returning its
//! write call ([`Input::Written`]). A message is written from one buffer, so that a short one
//! leaves in one segment as a blocking `write` would send it. The driver stops when the
//! application is done and everything it wrote has gone, when the stream has ended (closed by
//! the peer or failed) and the application has nothing left to write, or at
//! [`Options::until`].
//!
//! Bulk transfer runs here at the speed of a tool written for it: a message is written from a
//! page-aligned buffer that already holds the filler ([`crate::buf`]: no copy per call, the
//! kernel's copy at its fast alignment), as much of it per call as the socket takes, and the
//! socket is read only when `ppoll` said it had something. An [`Observer`] sees every call's
//! bytes as it returns (a tool's interval counters).

use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::ops::Range;
use std::os::fd::AsRawFd;

use weft_model::app::{Application, Input, Output, Tag};
use weft_model::{Duration, Instant};

use crate::buf::PageBuf;
use crate::{Clock, Options, payload, stream_error, timers};

/// How long a writer held back by [`Options::max_outq`] waits before looking again.
const OUTQ_WAIT: Duration = Duration::from_micros(100);

/// The longest message buffer, bytes: a longer message is written from it again and again.
const MAX_MESSAGE_BUF: u64 = 4 << 20;

/// Sees each socket call's bytes as it returns: the hook through which a tool keeps live
/// counters (bytes and calls per interval, the last instant data moved) without the driver
/// knowing of intervals. `()` sees nothing.
pub trait Observer {
    /// A write call took `n` bytes at `now`.
    fn wrote(&mut self, _n: u64, _now: Instant) {}
    /// A read call returned `n` bytes at `now`.
    fn read(&mut self, _n: u64, _now: Instant) {}
}

impl Observer for () {}

/// Something to write.
#[derive(Debug)]
enum Pending {
    /// A message of `len` bytes (its tag, then the filler), `sent` of them written.
    Message {
        len: u64,
        tag: Option<Tag>,
        sent: u64,
    },
    /// Bytes read, to write back.
    Echo { data: Vec<u8>, sent: usize },
    /// Shut the sending direction.
    Close,
}

/// What a run of [`drive`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Payload bytes written.
    pub written: u64,
    /// Payload bytes read.
    pub read: u64,
    /// The peer closed the stream.
    pub eof: bool,
    /// The stream failed: the failed call's error (the application was told as
    /// [`Input::Closed`] with its error).
    pub error: Option<Failure>,
}

/// A failed socket call's error, kept as a value ([`io::Error`] is neither `Copy` nor `Eq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Its kind.
    pub kind: ErrorKind,
    /// The system's error number, if it was one.
    pub os: Option<i32>,
}

impl Failure {
    /// The error again, with the system's message when there was one.
    pub fn to_io(self) -> io::Error {
        self.os
            .map_or_else(|| io::Error::from(self.kind), io::Error::from_raw_os_error)
    }
}

/// Runs `app` on `s` (connected) from `clock`'s now until it is done, the stream has ended, or
/// `opts.until`. The application is told the stream is open first. Errors are those of the
/// socket calls that are not the stream's (a failed `ppoll`, a socket that cannot be made
/// non-blocking); a stream that fails is the application's [`Input::Closed`].
pub fn drive<A: Application + ?Sized>(
    app: &mut A,
    s: &TcpStream,
    clock: &Clock,
    opts: &Options,
) -> io::Result<Report> {
    drive_until(app, s, clock, opts, |_, _| false)
}

/// As [`drive`], stopping also when `stop(app, now)` says so (asked every turn, at least every
/// [`Options::tick`]): a server whose bounds (its client's word, a deadline, an idle time-out)
/// are outside the application.
pub fn drive_until<A: Application + ?Sized>(
    app: &mut A,
    s: &TcpStream,
    clock: &Clock,
    opts: &Options,
    stop: impl FnMut(&A, Instant) -> bool,
) -> io::Result<Report> {
    drive_observed(app, s, clock, opts, &mut (), stop)
}

/// As [`drive_until`], telling `observer` of every call's bytes as it returns.
pub fn drive_observed<A: Application + ?Sized>(
    app: &mut A,
    s: &TcpStream,
    clock: &Clock,
    opts: &Options,
    observer: &mut impl Observer,
    mut stop: impl FnMut(&A, Instant) -> bool,
) -> io::Result<Report> {
    s.set_nonblocking(true)?;
    let mut d = Driver {
        queue: VecDeque::new(),
        rbuf: PageBuf::zeroed(opts.read_len.max(1)),
        msg: PageBuf::default(),
        report: Report::default(),
        ended: false,
        readable: true,
        last_output: clock.now(),
    };
    app.handle_input(clock.now(), Input::Connected { stream: 0 });
    d.outputs(app, clock.now());
    loop {
        let now = clock.now();
        if opts.expired(now) || stop(app, now) {
            break;
        }
        timers(app, now);
        d.read(app, s, clock, observer)?;
        d.outputs(app, clock.now());
        let held = d.write(app, s, clock, opts, observer)?;
        if d.queue.is_empty() && (app.is_done() || d.ended) {
            break;
        }
        let now = clock.now();
        let mut wait = opts.wait(now, app.poll_timeout(), d.last_output);
        if held {
            wait = Some(wait.map_or(OUTQ_WAIT, |w| w.min(OUTQ_WAIT)));
        }
        let mut events = libc::POLLIN;
        if !held && !d.queue.is_empty() {
            events |= libc::POLLOUT;
        }
        let mut fds = [libc::pollfd {
            fd: s.as_raw_fd(),
            events,
            revents: 0,
        }];
        weft_sys::poll::ppoll_readable(&mut fds, Some(wait.map_or(0, |w| w.0)))?;
        d.readable = fds[0].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
    }
    Ok(d.report)
}

struct Driver {
    queue: VecDeque<Pending>,
    /// Read buffer ([`Options::read_len`]).
    rbuf: PageBuf,
    /// Messages are written from here: the filler, a multiple of its period long (so that a
    /// message longer than the buffer is written from it again and again), with a message's
    /// tag over its first bytes while they are being written.
    msg: PageBuf,
    report: Report,
    /// The stream ended (closed by the peer, or failed): the application was told.
    ended: bool,
    /// The last `ppoll` said the socket had something to read (or an error, or an end).
    readable: bool,
    last_output: Instant,
}

/// What the front of the queue writes next.
enum Piece {
    /// Shut the sending direction.
    Close,
    /// These bytes of the echo at the front.
    Echo(Range<usize>),
    /// These bytes of the message buffer (with the tag over the first ones, to restore after).
    Message(Range<usize>, Option<Tag>),
}

impl Driver {
    /// Queues the application's outputs at `now`; `echo` is what was just read.
    fn outputs_with<A: Application + ?Sized>(&mut self, app: &mut A, now: Instant, echo: &[u8]) {
        while let Some(out) = app.poll_output(now) {
            self.last_output = now;
            match out {
                Output::Write { len, tag, .. } => {
                    self.fit(len);
                    self.queue.push_back(Pending::Message { len, tag, sent: 0 })
                }
                Output::Echo { len, .. } => {
                    let n = (len as usize).min(echo.len());
                    self.queue.push_back(Pending::Echo {
                        data: echo[..n].to_vec(),
                        sent: 0,
                    });
                }
                Output::Close { .. } => self.queue.push_back(Pending::Close),
                _ => {}
            }
        }
    }

    fn outputs<A: Application + ?Sized>(&mut self, app: &mut A, now: Instant) {
        self.outputs_with(app, now, &[]);
    }

    /// Grows the message buffer to hold a message of `len` bytes in one piece (up to
    /// [`MAX_MESSAGE_BUF`]); its length stays a multiple of the filler's period.
    fn fit(&mut self, len: u64) {
        let want = len.clamp(1, MAX_MESSAGE_BUF) as usize;
        if self.msg.as_slice().len() < want {
            self.msg = PageBuf::pattern(want.next_multiple_of(payload::PERIOD));
        }
    }

    /// Reads everything the socket has (if the last wait said it had something).
    fn read<A: Application + ?Sized>(
        &mut self,
        app: &mut A,
        mut s: &TcpStream,
        clock: &Clock,
        observer: &mut impl Observer,
    ) -> io::Result<()> {
        if self.ended || !self.readable {
            return Ok(());
        }
        loop {
            match s.read(self.rbuf.as_mut_slice()) {
                Ok(0) => {
                    self.ended = true;
                    self.report.eof = true;
                    app.handle_input(
                        clock.now(),
                        Input::Closed {
                            stream: 0,
                            error: None,
                        },
                    );
                    return Ok(());
                }
                Ok(n) => {
                    self.report.read += n as u64;
                    let now = clock.now();
                    observer.read(n as u64, now);
                    let buf = std::mem::take(&mut self.rbuf);
                    let data = &buf.as_slice()[..n];
                    let read = Input::Read {
                        stream: 0,
                        len: n as u64,
                        data: Some(data),
                    };
                    app.handle_input(now, read);
                    // An echo writes back what was just read.
                    self.outputs_with(app, now, data);
                    self.rbuf = buf;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(app, clock, &e);
                    return Ok(());
                }
            }
        }
    }

    /// The stream failed with `e`: the application is told (once).
    fn fail<A: Application + ?Sized>(&mut self, app: &mut A, clock: &Clock, e: &io::Error) {
        if !self.ended {
            self.ended = true;
            self.report.error = Some(Failure {
                kind: e.kind(),
                os: e.raw_os_error(),
            });
            let error = Some(stream_error(e));
            app.handle_input(clock.now(), Input::Closed { stream: 0, error });
        }
    }

    /// What the front of the queue writes next (`None`: the queue is empty).
    fn piece(&mut self) -> Option<Piece> {
        Some(match self.queue.front()? {
            Pending::Close => Piece::Close,
            Pending::Echo { data, sent } => Piece::Echo(*sent..data.len()),
            &Pending::Message { len, tag, sent } => {
                let cap = self.msg.as_slice().len() as u64;
                let at = sent % cap;
                let n = (len - sent).min(cap - at);
                let head = tag.filter(|t| sent < u64::from(t.len));
                if let Some(t) = head {
                    // The message starts at the buffer's start: its tag goes over the filler.
                    t.write(self.msg.as_mut_slice());
                }
                Piece::Message(at as usize..(at + n) as usize, head)
            }
        })
    }

    /// Writes what the socket takes; returns true if [`Options::max_outq`] holds the writer
    /// back.
    fn write<A: Application + ?Sized>(
        &mut self,
        app: &mut A,
        mut s: &TcpStream,
        clock: &Clock,
        opts: &Options,
        observer: &mut impl Observer,
    ) -> io::Result<bool> {
        while let Some(piece) = self.piece() {
            let range = match &piece {
                Piece::Close => {
                    // The peer may have gone already: nothing more to say to it.
                    let _ = s.shutdown(Shutdown::Write);
                    self.queue.pop_front();
                    continue;
                }
                Piece::Echo(r) | Piece::Message(r, _) => r.clone(),
            };
            let mut n = range.len();
            if let Some(max) = opts.max_outq {
                let outq = weft_sys::sockopt::tcp_outq(s.as_raw_fd())?;
                let room = max.saturating_sub(outq) as usize;
                if room == 0 && n > 0 {
                    self.untag(&piece);
                    return Ok(true);
                }
                n = n.min(room);
            }
            let bytes = match (&piece, self.queue.front()) {
                (Piece::Echo(_), Some(Pending::Echo { data, .. })) => &data[range.start..],
                _ => &self.msg.as_slice()[range.start..],
            };
            let r = if n == 0 { Ok(0) } else { s.write(&bytes[..n]) };
            self.untag(&piece);
            let wrote = match r {
                Ok(w) => w,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.queue.clear();
                    self.fail(app, clock, &e);
                    return Ok(false);
                }
            };
            self.report.written += wrote as u64;
            if wrote > 0 {
                observer.wrote(wrote as u64, clock.now());
            }
            let finished = match self.queue.front_mut() {
                Some(Pending::Echo { data, sent }) => {
                    *sent += wrote;
                    *sent == data.len()
                }
                Some(Pending::Message { len, sent, .. }) => {
                    *sent += wrote as u64;
                    *sent == *len
                }
                _ => true,
            };
            if finished {
                let was_message = matches!(self.queue.pop_front(), Some(Pending::Message { .. }));
                if was_message {
                    let now = clock.now();
                    app.handle_input(now, Input::Written { stream: 0 });
                    self.outputs(app, now);
                }
            }
        }
        Ok(false)
    }

    /// Puts the filler back where a message's tag was written for `piece`.
    fn untag(&mut self, piece: &Piece) {
        if let Piece::Message(_, Some(t)) = piece {
            let head = &mut self.msg.as_mut_slice()[..usize::from(t.len)];
            for (i, b) in head.iter_mut().enumerate() {
                *b = payload::filler(i);
            }
        }
    }
}
