//! Reading and writing framed control messages on a byte stream.

use std::io::{self, Read, Write};

use super::ProtoError;
use super::frame::{Frame, HEADER_LEN};
use super::message::Message;

/// Reads one message from `r`. The header is read and checked first, so an oversized or garbage
/// header is refused before any body is allocated; `buf` is reused between calls.
///
/// Returns [`ProtoError::Closed`] when the stream ends cleanly before a header starts.
pub fn read_message<R: Read>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max_body: u32,
) -> Result<Message, ProtoError> {
    read_frame(r, buf, max_body)?;
    Message::parse(&Frame::new_unchecked(&buf[..]))
}

/// Reads one frame's bytes (header and body) into `buf`, checking the header first as
/// [`read_message`] does, without parsing the body.
pub fn read_frame<R: Read>(r: &mut R, buf: &mut Vec<u8>, max_body: u32) -> Result<(), ProtoError> {
    let mut header = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match r.read(&mut header[got..]) {
            Ok(0) if got == 0 => return Err(ProtoError::Closed),
            Ok(0) => {
                return Err(ProtoError::Truncated {
                    need: HEADER_LEN,
                    have: got,
                });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let head = Frame::new_unchecked(&header[..]);
    head.check_header(max_body)?;
    let len = head.body_len() as usize;
    buf.clear();
    buf.extend_from_slice(&header);
    buf.resize(HEADER_LEN + len, 0);
    r.read_exact(&mut buf[HEADER_LEN..]).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            ProtoError::Truncated {
                need: HEADER_LEN + len,
                have: HEADER_LEN,
            }
        } else {
            e.into()
        }
    })?;
    Ok(())
}

/// Writes one message to `w` in a single `write_all` (header and body together).
pub fn write_message<W: Write>(w: &mut W, msg: &Message) -> Result<(), ProtoError> {
    let bytes = msg.to_bytes();
    w.write_all(&bytes)?;
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_messages_back_to_back_and_then_closed() {
        let mut bytes = Message::Bye.to_bytes();
        bytes.extend(Message::error("x", "y").to_bytes());
        let mut r = &bytes[..];
        let mut buf = Vec::new();
        assert_eq!(read_message(&mut r, &mut buf, 100).unwrap(), Message::Bye);
        assert_eq!(
            read_message(&mut r, &mut buf, 100).unwrap(),
            Message::error("x", "y")
        );
        assert_eq!(
            read_message(&mut r, &mut buf, 100).unwrap_err(),
            ProtoError::Closed
        );
    }

    #[test]
    fn refuses_oversize_before_reading_body() {
        let bytes = super::super::frame::emit_header(1, 1 << 30);
        let mut r = &bytes[..];
        let mut buf = Vec::new();
        assert!(matches!(
            read_message(&mut r, &mut buf, 1024),
            Err(ProtoError::TooLarge { .. })
        ));
        assert!(buf.capacity() < 1024);
    }

    #[test]
    fn truncated_body_is_an_error() {
        let bytes = Message::error("x", "y").to_bytes();
        let mut r = &bytes[..bytes.len() - 1];
        assert!(matches!(
            read_message(&mut r, &mut Vec::new(), 100),
            Err(ProtoError::Truncated { .. })
        ));
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use crate::proto::frame::emit_header;
    use proptest::prelude::*;

    proptest! {
        /// No byte string makes the parsers panic, with or without a valid header in front;
        /// what they accept is what the bytes say: the whole-buffer parser and the stream
        /// reader agree on every buffer, a message they accept re-emits to bytes that parse to
        /// it again, the stream reader consumes a header at least per message (so it ends),
        /// and a data hello that parses is its 24 bytes exactly.
        #[test]
        fn any_bytes_are_an_error_or_a_message(
            ty in 0u8..16,
            body in proptest::collection::vec(any::<u8>(), 0..200),
            raw in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut framed = emit_header(ty, body.len() as u32).to_vec();
            framed.extend_from_slice(&body);
            // A valid message with whatever follows it: both read that message.
            let sent = Message::error("limit", String::from_utf8_lossy(&raw).into_owned());
            let mut valid = sent.to_bytes();
            valid.extend_from_slice(&raw);
            prop_assert_eq!(Message::parse_bytes(&valid, 1024).ok(), Some(sent));
            for bytes in [&framed[..], &raw[..], &valid[..]] {
                let whole = Message::parse_bytes(bytes, 1024).ok();
                let mut r = bytes;
                let mut buf = Vec::new();
                let first = read_message(&mut r, &mut buf, 1024).ok();
                prop_assert_eq!(&whole, &first);
                if let Some(m) = &whole {
                    let again = Message::parse_bytes(&m.to_bytes(), 1024).ok();
                    prop_assert_eq!(again.as_ref(), Some(m));
                }
                let mut r = bytes;
                let mut read = 0;
                while read_message(&mut r, &mut buf, 1024).is_ok() {
                    read += 1;
                }
                prop_assert!(read <= bytes.len() / HEADER_LEN, "{} messages from {} bytes", read, bytes.len());
                if let Ok(h) = crate::proto::Hello::parse(bytes) {
                    prop_assert_eq!(&h.emit()[..], &bytes[..crate::proto::data::HELLO_LEN]);
                }
            }
        }
    }
}
