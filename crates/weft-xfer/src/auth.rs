//! Control-channel authentication with a pre-shared key, shared with `weft serve`: see
//! [`weft_gate::auth`]. The sender is the [`Role::Client`] of the handshake, the receiver the
//! [`Role::Server`]; after the handshake every control frame carries a [`FrameAuth`] tag.

pub use weft_gate::auth::{FrameAuth, FrameAuthError, Key, Role, TAG_LEN};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Control, FRAME_HEADER_LEN, control::frame_len};

    fn frame(m: &Control) -> Vec<u8> {
        let mut v = Vec::new();
        m.emit(&mut v);
        v
    }

    #[test]
    fn sealed_control_frames_keep_their_framing_and_open_in_order() {
        // The tag scheme assumes the length prefix weft-xfer's frames start with.
        assert_eq!(FRAME_HEADER_LEN, weft_gate::auth::LEN_PREFIX);
        let k = Key::from_derived([1; 32]);
        let mut tx = k.frames(Role::Client, &[1; 16], &[2; 16], 7);
        let mut rx = k.frames(Role::Server, &[1; 16], &[2; 16], 7);
        let msgs = [
            Control::Ready { buf: 1 },
            Control::End {
                buf: 1,
                round: 0,
                sent: 9,
            },
            Control::Bye,
        ];
        for m in &msgs {
            let mut f = frame(m);
            tx.seal(&mut f, 0);
            assert_eq!(frame_len(&f).unwrap(), Some(f.len()));
            let body = rx.open(&f[FRAME_HEADER_LEN..]).unwrap();
            assert_eq!(Control::parse(body).unwrap(), *m);
        }
        let mut f = frame(&msgs[0]);
        tx.seal(&mut f, 0);
        f[FRAME_HEADER_LEN] ^= 1;
        assert_eq!(rx.open(&f[FRAME_HEADER_LEN..]), Err(FrameAuthError::BadTag));
    }
}
