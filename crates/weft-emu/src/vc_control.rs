//! The connection manager's control channel on a stream (a Unix socket): the messages of
//! [`weft_model::vc::wire`] in frames of a 4-byte big-endian length, authenticated as the
//! agents are ([`weft_gate::auth`]: both sides prove the pre-shared key of `--key-file` over two
//! fresh nonces, the switch first; every message after that carries a 16-byte tag under a key
//! of this connection, so a message changed, replayed, dropped or inserted ends the
//! connection). The switch is the side that connects ([`Role::Client`]), the manager the side
//! that listens.

use std::io::{self, Read, Write};

use weft_gate::auth::{FrameAuth, FrameAuthError, Key, LEN_PREFIX, Role, TAG_LEN};
use weft_model::vc::wire::{MAX_MESSAGE, Msg, WireError};

/// The context the channel's key is derived in from the user's key: MACs of other protocols
/// sharing the key file are worthless here.
pub const PROTOCOL: &str = "weft vc manager control channel v1";

/// The handshake's session number in the MAC (both nonces already make it unique).
const SESSION: u64 = 0;

/// Why the channel failed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The stream failed or closed.
    #[error("control channel: {0}")]
    Io(#[from] io::Error),
    /// The peer sent bytes that are not a message.
    #[error("control channel: {0}")]
    Wire(#[from] WireError),
    /// A frame's tag did not hold.
    #[error("control channel: {0}")]
    Tag(#[from] FrameAuthError),
    /// A frame's length prefix is over the limit.
    #[error("control channel: a frame of {0} bytes, more than {max}", max = MAX_MESSAGE + TAG_LEN)]
    TooLong(usize),
    /// The peer did not prove the key.
    #[error("control channel: the peer did not prove the key (is its --key-file the same?)")]
    Auth,
    /// A message other than the one the protocol expects now.
    #[error("control channel: expected {0}, got {1:?}")]
    Unexpected(&'static str, Box<Msg>),
}

/// One end of an authenticated control channel.
pub struct Channel<S> {
    stream: S,
    tags: Option<FrameAuth>,
}

/// Opens a received frame's body (the bytes after its length prefix): checks its tag if the
/// channel is authenticated, then parses the message. Any bytes give a message or an error.
pub fn open_frame(tags: Option<&mut FrameAuth>, body: &[u8]) -> Result<Msg, ControlError> {
    let msg = match tags {
        Some(t) => t.open(body)?,
        None => body,
    };
    Ok(Msg::parse(msg)?)
}

/// The frame of `m` (length prefix, message, and its tag if `tags`).
pub fn seal_frame(tags: Option<&mut FrameAuth>, m: &Msg) -> Vec<u8> {
    let mut out = vec![0u8; LEN_PREFIX];
    out.extend_from_slice(&m.emit());
    let len = (out.len() - LEN_PREFIX) as u32;
    out[..LEN_PREFIX].copy_from_slice(&len.to_be_bytes());
    if let Some(t) = tags {
        t.seal(&mut out, 0);
    }
    out
}

impl<S: Read + Write> Channel<S> {
    /// A channel on `stream` before the handshake.
    fn new(stream: S) -> Self {
        Channel { stream, tags: None }
    }

    /// Sends `m`.
    pub fn send(&mut self, m: &Msg) -> Result<(), ControlError> {
        let f = seal_frame(self.tags.as_mut(), m);
        self.stream.write_all(&f)?;
        self.stream.flush()?;
        Ok(())
    }

    /// Receives the next message (blocks, or fails with the stream's timeout).
    pub fn recv(&mut self) -> Result<Msg, ControlError> {
        let mut len = [0u8; LEN_PREFIX];
        self.stream.read_exact(&mut len)?;
        let n = u32::from_be_bytes(len) as usize;
        if n > MAX_MESSAGE + TAG_LEN {
            return Err(ControlError::TooLong(n));
        }
        let mut body = vec![0u8; n];
        self.stream.read_exact(&mut body)?;
        open_frame(self.tags.as_mut(), &body)
    }

    /// The stream.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// The switch's side: proves `key` to the manager on `stream` and checks the manager's
    /// proof; every message after this is tagged.
    pub fn connect(stream: S, key: &Key) -> Result<Self, ControlError> {
        let key = key.for_protocol(PROTOCOL);
        let mut c = Channel::new(stream);
        let cn = weft_gate::auth::nonce()?;
        c.send(&Msg::AuthHello { nonce: cn })?;
        let sn = match c.recv()? {
            Msg::AuthChallenge { nonce } => nonce,
            m => return Err(ControlError::Unexpected("AuthChallenge", Box::new(m))),
        };
        c.send(&Msg::AuthProof {
            mac: key.mac(Role::Client, &cn, &sn, SESSION),
        })?;
        match c.recv()? {
            Msg::AuthOk { mac } if key.verify(Role::Server, &cn, &sn, SESSION, &mac) => {}
            Msg::AuthOk { .. } => return Err(ControlError::Auth),
            m => return Err(ControlError::Unexpected("AuthOk", Box::new(m))),
        }
        c.tags = Some(key.frames(Role::Client, &cn, &sn, SESSION));
        Ok(c)
    }

    /// The manager's side: checks the switch's proof of `key` before proving it in turn; every
    /// message after this is tagged.
    pub fn accept(stream: S, key: &Key) -> Result<Self, ControlError> {
        let key = key.for_protocol(PROTOCOL);
        let mut c = Channel::new(stream);
        let cn = match c.recv()? {
            Msg::AuthHello { nonce } => nonce,
            m => return Err(ControlError::Unexpected("AuthHello", Box::new(m))),
        };
        let sn = weft_gate::auth::nonce()?;
        c.send(&Msg::AuthChallenge { nonce: sn })?;
        match c.recv()? {
            Msg::AuthProof { mac } if key.verify(Role::Client, &cn, &sn, SESSION, &mac) => {}
            Msg::AuthProof { .. } => return Err(ControlError::Auth),
            m => return Err(ControlError::Unexpected("AuthProof", Box::new(m))),
        }
        c.send(&Msg::AuthOk {
            mac: key.mac(Role::Server, &cn, &sn, SESSION),
        })?;
        c.tags = Some(key.frames(Role::Server, &cn, &sn, SESSION));
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;
    use weft_model::vc::Entry;

    fn pair(switch_key: [u8; 32], manager_key: [u8; 32]) -> (ControlResult, ControlResult) {
        let (a, b) = UnixStream::pair().unwrap();
        let m = std::thread::spawn(move || Channel::accept(b, &Key::from_derived(manager_key)));
        let s = Channel::connect(a, &Key::from_derived(switch_key));
        (s, m.join().unwrap())
    }

    type ControlResult = Result<Channel<UnixStream>, ControlError>;

    #[test]
    fn the_same_key_opens_a_tagged_channel_both_ways() {
        let (s, m) = pair([7; 32], [7; 32]);
        let (mut s, mut m) = (s.unwrap(), m.unwrap());
        let hello = Msg::Hello {
            switch: "asx2".into(),
            held: 0,
            contracts: 0,
        };
        s.send(&hello).unwrap();
        assert_eq!(m.recv().unwrap(), hello);
        let push = Msg::Push {
            entries: vec![Entry {
                in_port: 3,
                in_vpi: 0,
                in_vci: Some(138),
                out_port: 16,
                out_vpi: 0,
                out_vci: Some(40),
            }],
            contracts: vec![],
        };
        m.send(&push).unwrap();
        assert_eq!(s.recv().unwrap(), push);
        // Tagged: the frame on the wire is the message, its length and a tag.
        let f = seal_frame(
            None,
            &Msg::Ack {
                held: 1,
                contracts: 0,
            },
        );
        assert_eq!(
            f.len(),
            LEN_PREFIX
                + Msg::Ack {
                    held: 1,
                    contracts: 0,
                }
                .emit()
                .len()
        );
    }

    #[test]
    fn another_key_is_refused_by_the_manager_before_it_proves_anything() {
        let (s, m) = pair([7; 32], [8; 32]);
        assert!(matches!(m, Err(ControlError::Auth)), "{:?}", m.err());
        // The switch never got an AuthOk: the manager closed.
        assert!(s.is_err());
    }

    #[test]
    fn a_changed_replayed_or_untagged_frame_is_refused() {
        let key = Key::from_derived([5; 32]).for_protocol(PROTOCOL);
        let mut tx = key.frames(Role::Client, &[1; 16], &[2; 16], SESSION);
        let rx = key.frames(Role::Server, &[1; 16], &[2; 16], SESSION);
        let m = Msg::Hello {
            switch: "s".into(),
            held: 3,
            contracts: 0,
        };
        let f = seal_frame(Some(&mut tx), &m);
        let body = &f[LEN_PREFIX..];
        assert_eq!(open_frame(Some(&mut rx.clone()), body).unwrap(), m);
        let mut changed = body.to_vec();
        changed[4] ^= 1;
        assert!(matches!(
            open_frame(Some(&mut rx.clone()), &changed),
            Err(ControlError::Tag(FrameAuthError::BadTag))
        ));
        let mut once = rx.clone();
        open_frame(Some(&mut once), body).unwrap();
        assert!(open_frame(Some(&mut once), body).is_err(), "replayed");
        let plain = seal_frame(None, &m);
        assert!(open_frame(Some(&mut rx.clone()), &plain[LEN_PREFIX..]).is_err());
    }

    #[test]
    fn a_frame_longer_than_any_message_is_refused_before_it_is_read() {
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(&u32::MAX.to_be_bytes()).unwrap();
        let mut c = Channel::new(a);
        assert!(matches!(c.recv(), Err(ControlError::TooLong(n)) if n == u32::MAX as usize));
    }
}
