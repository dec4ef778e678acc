//! A control connection: framed messages over a TCP stream, with a reused read buffer and a bound
//! on message size; after a keyed handshake ([`crate::auth`]) every message carries a tag.
//!
//! A tagged message is the frame of protocol 2 with 16 bytes more at the end of its body: a
//! keyed BLAKE3 ([`weft_gate::auth::FrameAuth`]) under a key of this connection (the
//! pre-shared key's, bound to both handshake nonces), over the direction, the message's number
//! in that direction (counted at both ends, never sent) and the header and body as sent (the
//! header's length counts the tag). A message changed, dropped, replayed, reordered, reflected
//! or inserted fails the check, and the connection is closed: after the handshake an attacker on
//! the path can no longer speak for either end.

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use weft_gate::auth::{FrameAuth, Key, Role, TAG_LEN};

use crate::error::ProbeError;
use crate::proto::frame::HEADER_LEN;
use crate::proto::{Accept, Frame, Message, ProtoError, read_frame};

/// The tag state of a keyed connection, shared by the clones of a [`Control`] (a reader
/// thread and a writer see one count per direction).
#[derive(Debug)]
struct Tags {
    frames: FrameAuth,
    /// A client's: the agent's `AuthOk` (untagged, the first message after the proof) is still
    /// to come, to be checked with this key and these nonces.
    pending_proof: Option<(Key, [u8; 16], [u8; 16])>,
    /// Whether messages received carry tags (a client's: from after `AuthOk`).
    receiving: bool,
}

/// One end of a control connection.
#[derive(Debug)]
pub struct Control {
    stream: TcpStream,
    buf: Vec<u8>,
    max_body: u32,
    tags: Option<Arc<Mutex<Tags>>>,
}

fn tag_failure() -> ProbeError {
    ProbeError::Auth(
        "a control message failed its authentication tag (changed, dropped, replayed or \
         inserted on the way): the connection is closed"
            .into(),
    )
}

impl Control {
    /// Wraps a connected stream; bodies over `max_body` bytes are refused.
    pub fn new(stream: TcpStream, max_body: u32) -> Self {
        // Control messages are small and latency-sensitive.
        let _ = stream.set_nodelay(true);
        Control {
            stream,
            buf: Vec::new(),
            max_body,
            tags: None,
        }
    }

    fn tags(&self) -> Option<MutexGuard<'_, Tags>> {
        // A thread that panicked while holding the lock left counts that the next check fails
        // on, which closes the connection: poisoning needs no other handling.
        self.tags
            .as_ref()
            .map(|t| t.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The client's side of a keyed handshake, once its proof is sent: its messages are tagged
    /// from now on, and the next message received must be the agent's `AuthOk`.
    pub(crate) fn authenticate_as_client(&mut self, key: &Key, cn: [u8; 16], sn: [u8; 16]) {
        self.tags = Some(Arc::new(Mutex::new(Tags {
            frames: key.frames(Role::Client, &cn, &sn, 0),
            pending_proof: Some((key.clone(), cn, sn)),
            receiving: false,
        })));
    }

    /// The agent's side, once the client's proof held and `AuthOk` is sent: tags both ways.
    pub(crate) fn authenticate_as_agent(&mut self, key: &Key, cn: [u8; 16], sn: [u8; 16]) {
        self.tags = Some(Arc::new(Mutex::new(Tags {
            frames: key.frames(Role::Server, &cn, &sn, 0),
            pending_proof: None,
            receiving: true,
        })));
    }

    /// Whether messages on this connection are tagged (a keyed handshake took place).
    pub fn is_authenticated(&self) -> bool {
        self.tags.is_some()
    }

    /// Sends one message (tagged after a keyed handshake).
    pub fn send(&mut self, msg: &Message) -> Result<(), ProbeError> {
        let mut bytes = msg.to_bytes();
        if let Some(mut t) = self.tags() {
            seal_tagged(&mut t.frames, &mut bytes);
        }
        (&self.stream)
            .write_all(&bytes)
            .map_err(|e| ProbeError::Proto(ProtoError::Io(e)))
    }

    /// Receives one message, turning a peer's `Error` message into [`ProbeError::Remote`]
    /// (or [`ProbeError::Auth`] for code `auth`, so that it reads "authentication failed").
    pub fn recv(&mut self) -> Result<Message, ProbeError> {
        match self.recv_raw()? {
            Message::Error(e) if e.code == "auth" => Err(ProbeError::Auth(e.message)),
            Message::Error(e) => Err(ProbeError::Remote {
                code: e.code,
                message: e.message,
            }),
            m => Ok(m),
        }
    }

    /// Receives one message with any `Error` message returned as a message. After a keyed
    /// handshake its tag is checked first; a client checks the agent's proof first of all.
    pub fn recv_raw(&mut self) -> Result<Message, ProbeError> {
        let receiving = self.tags().is_some_and(|t| t.receiving);
        let max = if receiving {
            self.max_body.saturating_add(TAG_LEN as u32)
        } else {
            self.max_body
        };
        read_frame(&mut self.stream, &mut self.buf, max).map_err(old_peer)?;
        let Some(mut t) = self
            .tags
            .as_ref()
            .map(|t| t.lock().unwrap_or_else(|e| e.into_inner()))
        else {
            return Ok(Message::parse(&Frame::new_unchecked(&self.buf[..]))?);
        };
        if let Some((key, cn, sn)) = t.pending_proof.take() {
            let msg = Message::parse(&Frame::new_unchecked(&self.buf[..]))?;
            crate::auth::check_agent_proof(&key, &cn, &sn, msg)?;
            t.receiving = true;
            drop(t);
            return self.recv_raw();
        }
        if !t.receiving {
            return Ok(Message::parse(&Frame::new_unchecked(&self.buf[..]))?);
        }
        open_tagged(&mut t.frames, &mut self.buf)?;
        drop(t);
        Ok(Message::parse(&Frame::new_unchecked(&self.buf[..]))?)
    }

    /// A client's first answer from `agent` to its request: the agent's `Accept`. Whatever shows
    /// that the peer is not a weft agent says so and names the port reached ([`not_an_agent`],
    /// [`unexpected_answer`]).
    pub fn recv_accept(&mut self, agent: SocketAddr) -> Result<Accept, ProbeError> {
        match self.recv().map_err(|e| not_an_agent(agent, e))? {
            Message::Accept(a) => Ok(a),
            other => Err(unexpected_answer(agent, "Accept", &other)),
        }
    }

    /// Sets the read time-out (`None` blocks forever).
    pub fn set_read_timeout(&self, t: Option<Duration>) -> Result<(), ProbeError> {
        self.stream
            .set_read_timeout(t)
            .map_err(|e| ProbeError::io("setting control read time-out", e))
    }

    /// A second handle for a reader thread (the original keeps writing); both share the tag
    /// counts.
    pub fn try_clone(&self) -> Result<Control, ProbeError> {
        let stream = self
            .stream
            .try_clone()
            .map_err(|e| ProbeError::io("cloning control connection", e))?;
        Ok(Control {
            stream,
            buf: Vec::new(),
            max_body: self.max_body,
            tags: self.tags.clone(),
        })
    }

    /// Sends an `Error` message if the connection still takes it, ignoring failure.
    pub fn send_error_best_effort(&mut self, err: &ProbeError) {
        let _ = self.send(&Message::error(err.code(), err.to_string()));
    }

    /// Shuts the connection down in both directions (unblocks a reader thread).
    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// The underlying stream.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// The largest body accepted.
    pub fn max_body(&self) -> u32 {
        self.max_body
    }
}

/// Appends the tag of the next message sent to `frame` (header and body) and counts it in the
/// header's length.
pub fn seal_tagged(frames: &mut FrameAuth, frame: &mut Vec<u8>) {
    let body = frame.len().saturating_sub(HEADER_LEN) + TAG_LEN;
    let len = u32::try_from(body).unwrap_or(u32::MAX);
    if let Some(h) = frame.get_mut(8..12) {
        h.copy_from_slice(&len.to_be_bytes());
    }
    let tag = frames.sign(frame);
    frame.extend_from_slice(&tag);
}

/// Checks the tag at the end of a received `frame` (header and body, as read) against the next
/// message expected from the peer, and leaves the frame without it (its header's length
/// corrected). Any bytes at all: an error, never a panic.
pub fn open_tagged(frames: &mut FrameAuth, frame: &mut Vec<u8>) -> Result<(), ProbeError> {
    let n = frame
        .len()
        .checked_sub(TAG_LEN)
        .filter(|n| *n >= HEADER_LEN)
        .ok_or_else(tag_failure)?;
    let (msg, tag) = frame.split_at(n);
    frames.check(msg, tag).map_err(|_| tag_failure())?;
    frame.truncate(n);
    let body = u32::try_from(n - HEADER_LEN).unwrap_or(u32::MAX);
    frame[8..12].copy_from_slice(&body.to_be_bytes());
    Ok(())
}

/// Where a client that reached something other than a weft agent at `agent` should look.
fn agent_hint(agent: SocketAddr) -> String {
    format!(
        "is `weft serve` listening on port {} of {}? (its default port is {})",
        agent.port(),
        agent.ip(),
        crate::server::DEFAULT_PORT
    )
}

/// What a client says when its first exchange with `agent` fails in a way that shows the peer is
/// not a weft agent: it sent bytes that are not weft's (a whole header of them, or fewer and
/// closed), closed without a word, or accepted the connection and said nothing (an HTTP server
/// waits for a request line that never comes). Any other error is returned as it is.
pub fn not_an_agent(agent: SocketAddr, e: ProbeError) -> ProbeError {
    let hint = agent_hint(agent);
    match e {
        ProbeError::Proto(ProtoError::Truncated { have, .. }) => ProbeError::Protocol(format!(
            "{agent} is not a weft agent: it answered {have} bytes that are no weft message and \
             closed the connection; {hint}"
        )),
        ProbeError::Proto(ProtoError::BadMagic(m)) => ProbeError::Protocol(format!(
            "{agent} is not a weft agent: it answered {:?}, which is not the weft protocol; {hint}",
            String::from_utf8_lossy(&m)
        )),
        ProbeError::Proto(ProtoError::Closed) => ProbeError::Protocol(format!(
            "{agent} closed the connection without answering as a weft agent; {hint}"
        )),
        ProbeError::Proto(p) if p.is_timeout() => ProbeError::Protocol(format!(
            "{agent} accepted the connection but did not answer as a weft agent; {hint}"
        )),
        e => e,
    }
}

/// What a client says when `agent` answered its first message with `got` where it expected
/// `want`: one of the messages a client opens with (a request, a key's hello, a relay request)
/// is its own sent back, by an echo service, not a weft agent.
pub fn unexpected_answer(agent: SocketAddr, want: &str, got: &Message) -> ProbeError {
    match got {
        Message::Request(_) | Message::AuthHello(_) | Message::Relay(_) => {
            ProbeError::Protocol(format!(
                "{agent} is not a weft agent: it sent this client's own {:?} message back (an \
                 echo service?); {}",
                got.msg_type(),
                agent_hint(agent)
            ))
        }
        _ => ProbeError::Protocol(format!("expected {want}, got {:?}", got.msg_type())),
    }
}

/// A frame of another protocol version, said so that an older or newer peer is named as such.
fn old_peer(e: ProtoError) -> ProbeError {
    match e {
        ProtoError::UnsupportedVersion(v) => ProbeError::Protocol(format!(
            "the peer speaks weft control protocol {v}, this build speaks {}: it runs {} weft; \
             use the same version on both ends",
            crate::proto::VERSION,
            if v < crate::proto::VERSION {
                "an older"
            } else {
                "a newer"
            }
        )),
        e => ProbeError::Proto(e),
    }
}
