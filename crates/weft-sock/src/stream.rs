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

use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;

use weft_model::app::{Application, Input, Output, Tag};
use weft_model::{Duration, Instant};

use crate::{Clock, Options, payload, stream_error, timers};

/// Bytes read (and written) per call at most.
const CHUNK: usize = 64 * 1024;

/// How long a writer held back by [`Options::max_outq`] waits before looking again.
const OUTQ_WAIT: Duration = Duration::from_micros(100);

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
    mut stop: impl FnMut(&A, Instant) -> bool,
) -> io::Result<Report> {
    s.set_nonblocking(true)?;
    let mut d = Driver {
        queue: VecDeque::new(),
        buf: vec![0u8; CHUNK],
        fill: payload::buffer(CHUNK + 251),
        report: Report::default(),
        ended: false,
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
        d.read(app, s, clock)?;
        d.outputs(app, clock.now());
        let held = d.write(app, s, clock, opts)?;
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
    }
    Ok(d.report)
}

struct Driver {
    queue: VecDeque<Pending>,
    /// Read buffer, and the bytes of the message being written.
    buf: Vec<u8>,
    /// The filler, one period longer than a chunk, so that a chunk at any offset is a slice.
    fill: Vec<u8>,
    report: Report,
    /// The stream ended (closed by the peer, or failed): the application was told.
    ended: bool,
    last_output: Instant,
}

impl Driver {
    /// Queues the application's outputs at `now`; `echo` is what was just read.
    fn outputs_with<A: Application + ?Sized>(&mut self, app: &mut A, now: Instant, echo: &[u8]) {
        while let Some(out) = app.poll_output(now) {
            self.last_output = now;
            match out {
                Output::Write { len, tag, .. } => {
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

    /// Reads everything the socket has.
    fn read<A: Application + ?Sized>(
        &mut self,
        app: &mut A,
        mut s: &TcpStream,
        clock: &Clock,
    ) -> io::Result<()> {
        if self.ended {
            return Ok(());
        }
        loop {
            match s.read(&mut self.buf) {
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
                    let buf = std::mem::take(&mut self.buf);
                    let read = Input::Read {
                        stream: 0,
                        len: n as u64,
                        data: Some(&buf[..n]),
                    };
                    app.handle_input(now, read);
                    // An echo writes back what was just read.
                    self.outputs_with(app, now, &buf[..n]);
                    self.buf = buf;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.ended = true;
                    let error = Some(stream_error(&e));
                    app.handle_input(clock.now(), Input::Closed { stream: 0, error });
                    return Ok(());
                }
            }
        }
    }

    /// Writes what the socket takes; returns true if [`Options::max_outq`] holds the writer
    /// back.
    fn write<A: Application + ?Sized>(
        &mut self,
        app: &mut A,
        mut s: &TcpStream,
        clock: &Clock,
        opts: &Options,
    ) -> io::Result<bool> {
        while let Some(front) = self.queue.front_mut() {
            let (bytes, done): (&[u8], bool) = match front {
                Pending::Close => {
                    // The peer may have gone already: nothing more to say to it.
                    let _ = s.shutdown(Shutdown::Write);
                    self.queue.pop_front();
                    continue;
                }
                Pending::Echo { data, sent } => (&data[*sent..], false),
                Pending::Message { len, tag, sent } => {
                    let n = (*len - *sent).min(CHUNK as u64) as usize;
                    let at = (*sent % 251) as usize;
                    self.buf[..n].copy_from_slice(&self.fill[at..at + n]);
                    if let Some(t) = tag
                        && *sent < u64::from(t.len)
                    {
                        let mut head = [0u8; 8];
                        t.write(&mut head);
                        let from = *sent as usize;
                        let k = (usize::from(t.len) - from).min(n);
                        self.buf[..k].copy_from_slice(&head[from..from + k]);
                    }
                    (&self.buf[..n], *len == 0)
                }
            };
            let mut n = bytes.len();
            if let Some(max) = opts.max_outq {
                let outq = weft_sys::sockopt::tcp_outq(s.as_raw_fd())?;
                let room = max.saturating_sub(outq) as usize;
                if room == 0 && n > 0 {
                    return Ok(true);
                }
                n = n.min(room);
            }
            let wrote = if done {
                0
            } else {
                match s.write(&bytes[..n]) {
                    Ok(w) => w,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.queue.clear();
                        if !self.ended {
                            self.ended = true;
                            let error = Some(stream_error(&e));
                            app.handle_input(clock.now(), Input::Closed { stream: 0, error });
                        }
                        return Ok(false);
                    }
                }
            };
            self.report.written += wrote as u64;
            let finished = match front {
                Pending::Echo { data, sent } => {
                    *sent += wrote;
                    *sent == data.len()
                }
                Pending::Message { len, sent, .. } => {
                    *sent += wrote as u64;
                    *sent == *len
                }
                Pending::Close => true,
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
}
