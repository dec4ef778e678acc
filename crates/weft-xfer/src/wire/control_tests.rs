//! Byte vectors and round trips of the control messages.

use super::*;

fn round_trip(m: Control) {
    let mut out = Vec::new();
    m.emit(&mut out);
    let total = frame_len(&out).unwrap().unwrap();
    assert_eq!(total, out.len());
    assert_eq!(Control::parse(&out[FRAME_HEADER_LEN..]).unwrap(), m);
    // Every strict prefix of the body is rejected, never panics.
    for cut in 0..out.len() - FRAME_HEADER_LEN {
        assert!(Control::parse(&out[FRAME_HEADER_LEN..FRAME_HEADER_LEN + cut]).is_err());
    }
}

#[test]
fn start_byte_vector() {
    let mut out = Vec::new();
    Control::Start {
        buf: 1,
        file: 2,
        index: 3,
        size: 0x0010_0000,
        packet_size: 9000,
        hash: [0xab; 32],
    }
    .emit(&mut out);
    let mut want = vec![0, 0, 0, 53, 13, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3];
    want.extend_from_slice(&[0, 0x10, 0, 0, 0, 0, 0x23, 0x28]);
    want.extend_from_slice(&[0xab; 32]);
    assert_eq!(out, want);
}

#[test]
fn nack_byte_vector() {
    let body = [
        16, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
        4, 0, 0, 0, 6,
    ];
    let nack = |arrival_rate| Control::Nack {
        buf: 9,
        round: 1,
        rx_rate: 1000,
        drops: 2,
        missing: vec![(4, 6)],
        arrival_rate,
    };
    assert_eq!(Control::parse(&body).unwrap(), nack(None));
    // Protocol 5's type 21: the arrival rate after the read rate.
    let mut v5 = body.to_vec();
    v5[0] = 21;
    v5.splice(17..17, 2000u64.to_be_bytes());
    assert_eq!(Control::parse(&v5).unwrap(), nack(Some(2000)));
}

#[test]
fn all_messages_round_trip() {
    for m in [
        Control::ClientHello {
            version: 2,
            mode: Mode::Mbtp,
            window: 4,
            nonce: [7; 16],
            checksum: 0,
            stripe: None,
        },
        Control::ClientHello {
            version: 3,
            mode: Mode::Reliable,
            window: 4,
            nonce: [7; 16],
            checksum: 200,
            stripe: None,
        },
        Control::ClientHello {
            version: 4,
            mode: Mode::Mbtp,
            window: 1,
            nonce: [7; 16],
            checksum: 1,
            stripe: Some(Stripe {
                transfer: 0x0102_0304_0506_0708,
                part: 2,
                parts: 5,
            }),
        },
        Control::ClientHello {
            version: 4,
            mode: Mode::Reliable,
            window: 8,
            nonce: [7; 16],
            checksum: 0,
            stripe: None,
        },
        Control::ServerHello {
            version: 1,
            session: u64::MAX,
            nonce: [9; 16],
            window: 3,
            ports: vec![1, 2, 65535],
            key_required: true,
        },
        Control::Auth { mac: [1; 32] },
        Control::Welcome { mac: [2; 32] },
        Control::Refuse {
            code: RefuseCode::Auth,
            msg: "wrong key".into(),
        },
        Control::FileOffer {
            file: 0,
            size: 1 << 40,
            buffer_size: 1 << 22,
            packet_size: 8972,
            resume: true,
            hash: [3; 32],
            name: "dir/ü.bin".into(),
        },
        Control::FileAccept {
            file: 5,
            have: vec![(0, 3), (7, 9)],
        },
        Control::FileReject {
            file: 5,
            code: RefuseCode::Exists,
            msg: String::new(),
        },
        Control::Ready { buf: 77 },
        Control::End {
            buf: 1,
            round: 2,
            sent: 3,
        },
        Control::Nack {
            buf: 1,
            round: 2,
            rx_rate: 3,
            drops: 4,
            missing: vec![(0, 2), (5, 9)],
            arrival_rate: Some(6),
        },
        Control::FileEnd {
            file: 1,
            digest: [4; 32],
        },
        Control::FileDone {
            file: 1,
            ok: false,
            msg: "hash mismatch".into(),
        },
        Control::Bye,
    ] {
        round_trip(m);
    }
    // Before protocol 5 and since (type 22).
    for arrival_rate in [None, Some(7)] {
        round_trip(Control::Done {
            buf: 1,
            received: 2,
            lost: 3,
            dup: 4,
            rx_rate: 5,
            drops: 6,
            arrival_rate,
        });
    }
}

/// A version 2 sender's hello (no checksum byte) still parses, as BLAKE3; from version 3 the
/// byte is there and required.
#[test]
fn client_hello_carries_the_checksum_from_version_3() {
    let v2 = [&[T_CLIENT_HELLO, 0, 2, 0, 0, 4][..], &[7; 16]].concat();
    assert_eq!(
        Control::parse(&v2).unwrap(),
        Control::ClientHello {
            version: 2,
            mode: Mode::Reliable,
            window: 4,
            nonce: [7; 16],
            checksum: 0,
            stripe: None,
        }
    );
    let mut v3 = v2.clone();
    v3[2] = 3;
    assert_eq!(Control::parse(&v3).unwrap_err(), WireError::Truncated);
    v3.push(1);
    assert!(matches!(
        Control::parse(&v3).unwrap(),
        Control::ClientHello {
            version: 3,
            checksum: 1,
            ..
        }
    ));
    assert_eq!(
        Control::parse(&[&v2[..], &[1]].concat()).unwrap_err(),
        WireError::Trailing(1),
        "a version 2 hello has no checksum byte"
    );
}

#[test]
fn rejects_bad_fields() {
    assert_eq!(Control::parse(&[]).unwrap_err(), WireError::Truncated);
    assert_eq!(
        Control::parse(&[99]).unwrap_err(),
        WireError::UnknownType(99)
    );
    assert_eq!(
        Control::parse(&[T_FILE_DONE, 0, 0, 0, 1, 2, 0, 0]).unwrap_err(),
        WireError::Invalid("boolean")
    );
    assert_eq!(
        Control::parse(&[T_BYE, 0]).unwrap_err(),
        WireError::Trailing(1)
    );
    // A reversed range and an absurd count.
    assert!(
        Control::parse(&[
            T_FILE_ACCEPT,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
            5,
            0,
            0,
            0,
            5
        ])
        .is_err()
    );
    assert!(Control::parse(&[T_FILE_ACCEPT, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).is_err());
    assert_eq!(
        frame_len(&[0xff, 0xff, 0xff, 0xff]).unwrap_err(),
        WireError::TooLong(0xffff_ffff)
    );
    assert_eq!(frame_len(&[0, 0, 1]).unwrap(), None);
}

/// From version 4 the hello ends with the stripe: transfer u64, part u16, parts u16, all zero
/// for none; a part outside 1..=parts is refused.
#[test]
fn client_hello_carries_the_stripe_from_version_4() {
    let v3 = [&[T_CLIENT_HELLO, 0, 3, 2, 0, 1][..], &[7; 16], &[0]].concat();
    let mut v4 = v3.clone();
    v4[2] = 4;
    assert_eq!(Control::parse(&v4).unwrap_err(), WireError::Truncated);
    let with = |t: u64, part: u16, parts: u16| {
        [
            &v4[..],
            &t.to_be_bytes(),
            &part.to_be_bytes(),
            &parts.to_be_bytes(),
        ]
        .concat()
    };
    assert!(matches!(
        Control::parse(&with(0, 0, 0)).unwrap(),
        Control::ClientHello {
            version: 4,
            stripe: None,
            ..
        }
    ));
    assert!(matches!(
        Control::parse(&with(9, 3, 5)).unwrap(),
        Control::ClientHello {
            stripe: Some(Stripe {
                transfer: 9,
                part: 3,
                parts: 5
            }),
            ..
        }
    ));
    for (t, part, parts) in [(9, 0, 5), (9, 6, 5), (9, 1, 0), (9, 0, 0)] {
        assert_eq!(
            Control::parse(&with(t, part, parts)).unwrap_err(),
            WireError::Invalid("stripe"),
            "{t} {part} {parts}"
        );
    }
    assert!(matches!(
        Control::parse(&v3).unwrap(),
        Control::ClientHello {
            version: 3,
            stripe: None,
            ..
        }
    ));
}
