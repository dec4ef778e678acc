//! A control connection: framed messages over a TCP stream, with a reused read buffer and a bound
//! on message size.

use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use crate::error::ProbeError;
use crate::proto::{Message, ProtoError, read_message, write_message};

/// One end of a control connection.
#[derive(Debug)]
pub struct Control {
    stream: TcpStream,
    buf: Vec<u8>,
    max_body: u32,
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
        }
    }

    /// Sends one message.
    pub fn send(&mut self, msg: &Message) -> Result<(), ProbeError> {
        write_message(&mut self.stream, msg).map_err(ProbeError::from)
    }

    /// Receives one message, turning a peer's `Error` message into [`ProbeError::Remote`]
    /// (or [`ProbeError::Auth`] for code `auth`, so that it reads "authentication failed").
    pub fn recv(&mut self) -> Result<Message, ProbeError> {
        match read_message(&mut self.stream, &mut self.buf, self.max_body)? {
            Message::Error(e) if e.code == "auth" => Err(ProbeError::Auth(e.message)),
            Message::Error(e) => Err(ProbeError::Remote {
                code: e.code,
                message: e.message,
            }),
            m => Ok(m),
        }
    }

    /// Receives one message with any `Error` message returned as a message.
    pub fn recv_raw(&mut self) -> Result<Message, ProtoError> {
        read_message(&mut self.stream, &mut self.buf, self.max_body)
    }

    /// Sets the read time-out (`None` blocks forever).
    pub fn set_read_timeout(&self, t: Option<Duration>) -> Result<(), ProbeError> {
        self.stream
            .set_read_timeout(t)
            .map_err(|e| ProbeError::io("setting control read time-out", e))
    }

    /// A second handle for a reader thread (the original keeps writing).
    pub fn try_clone(&self) -> Result<Control, ProbeError> {
        let stream = self
            .stream
            .try_clone()
            .map_err(|e| ProbeError::io("cloning control connection", e))?;
        Ok(Control {
            stream,
            buf: Vec::new(),
            max_body: self.max_body,
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
