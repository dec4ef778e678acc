//! Control messages on the TCP channel, each in a frame `[len u32][type u8][body]` where `len`
//! counts the type byte and the body. Integers are big-endian; strings are `u16` length + UTF-8;
//! range lists are `u32` count + `(start u32, end u32)` half-open pairs.
//!
//! Handshake: the sender opens with `ClientHello` (version, mode, window, nonce); the receiver
//! answers `ServerHello` (version, random session id, its nonce, the UDP ports to stripe over,
//! whether a key is required); the sender proves the key with `Auth` (a keyed BLAKE3 MAC over both
//! nonces and the session id, see [`crate::auth`]) and the receiver answers `Welcome` with its own
//! MAC, or `Refuse`. Then per file: `FileOffer` / `FileAccept` | `FileReject`, per buffer `Start` /
//! `Ready` / data / `End` / (`Nack` / `End`)* / `Done`, then `FileEnd` / `FileDone`, and `Bye`.

use super::{Reader, WireError};

/// Control protocol version spoken by this build. Version 3 added the checksum byte to
/// `ClientHello`; version 4 added the MBTP stripe to it, and lets a sender send its probe round
/// before the receiver's `Ready` (the receiver holds what comes early); version 5 added the
/// arrival rate to `Nack` and `Done` (as message types of their own, so that each type has one
/// layout). A receiver of this build still serves
/// version 2 to 4 senders, and answers each in its own version (reports without the arrival
/// rate); an older receiver refuses this build's senders. Version 6 stretches keys (Argon2id,
/// at least 16 bytes): its layouts are version 5's, a keyed receiver refuses older senders by
/// version, and under a key only the reliable mode with BLAKE3 runs
/// (`crate::net::keyed_refusal`).
pub const PROTOCOL_VERSION: u16 = 6;
/// The oldest sender version a receiver of this build serves.
pub const MIN_PROTOCOL_VERSION: u16 = 2;
/// The first version whose `ClientHello` carries the checksum byte.
const CHECKSUM_VERSION: u16 = 3;
/// The first version whose `ClientHello` carries the stripe.
pub const STRIPE_VERSION: u16 = 4;
/// The first version whose `Nack` and `Done` carry the arrival rate.
pub const ARRIVAL_VERSION: u16 = 5;

/// Which part of an MBTP transfer spread over separate receivers a session is: receiver `part`
/// of `parts`, all sessions of one `weft send` sharing the random `transfer` id. The receiver
/// keeps what it gets as a stripe of each file (see `crate::net::stripe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe {
    /// The transfer's id, the same for every receiver.
    pub transfer: u64,
    /// This receiver's number, 1..=parts.
    pub part: u16,
    /// How many receivers share the transfer.
    pub parts: u16,
}
/// Length of the frame header (`len` field), bytes.
pub const FRAME_HEADER_LEN: usize = 4;
/// The largest frame body accepted, bytes.
pub const MAX_FRAME: usize = 1 << 20;
/// The longest string field accepted, bytes.
pub const MAX_STRING: usize = 4096;
/// The most UDP ports a receiver may offer for striping.
pub const MAX_PORTS: usize = 64;

/// Transfer mode, fixed for a session by the `ClientHello`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Rate-controlled blasting with selective retransmission and BLAKE3 integrity.
    Reliable,
    /// The Simple Buffer Transfer Protocol: one buffer at a time, unreliable.
    Sbtp,
    /// One session of a Multiple Buffer Transfer Protocol transfer (unreliable).
    Mbtp,
}

impl Mode {
    fn to_u8(self) -> u8 {
        match self {
            Mode::Reliable => 0,
            Mode::Sbtp => 1,
            Mode::Mbtp => 2,
        }
    }
    fn from_u8(v: u8) -> Result<Self, WireError> {
        match v {
            0 => Ok(Mode::Reliable),
            1 => Ok(Mode::Sbtp),
            2 => Ok(Mode::Mbtp),
            _ => Err(WireError::Invalid("mode")),
        }
    }
    /// Whether lost data is retransmitted until complete.
    pub fn is_reliable(self) -> bool {
        self == Mode::Reliable
    }
}

/// Why a receiver refused a session or a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefuseCode {
    /// Version or mode not supported.
    Version,
    /// Missing or wrong key.
    Auth,
    /// The name is absolute, contains `..`, or leads out of the directory.
    Path,
    /// The file exists and `--force` was not given.
    Exists,
    /// A size, buffer or packet size over the receiver's limits.
    TooLarge,
    /// A protocol violation or local failure.
    Other,
    /// The receiving file system has not room for the file.
    NoSpace,
    /// The session failed at the receiver (after it had started); the message says why.
    Failed,
}

impl RefuseCode {
    fn to_u16(self) -> u16 {
        match self {
            RefuseCode::Version => 1,
            RefuseCode::Auth => 2,
            RefuseCode::Path => 3,
            RefuseCode::Exists => 4,
            RefuseCode::TooLarge => 5,
            RefuseCode::Other => 6,
            RefuseCode::NoSpace => 7,
            RefuseCode::Failed => 8,
        }
    }
    fn from_u16(v: u16) -> Self {
        match v {
            1 => RefuseCode::Version,
            2 => RefuseCode::Auth,
            3 => RefuseCode::Path,
            4 => RefuseCode::Exists,
            5 => RefuseCode::TooLarge,
            7 => RefuseCode::NoSpace,
            8 => RefuseCode::Failed,
            // Codes of newer peers read as the general one (their message says more).
            _ => RefuseCode::Other,
        }
    }
}

/// One control message (the representation; [`Control::parse`] / [`Control::emit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Sender opens: protocol version, mode, buffers it wants in flight, its nonce.
    ClientHello {
        /// Protocol version.
        version: u16,
        /// Transfer mode.
        mode: Mode,
        /// Buffers the sender would keep in flight (receiver may grant fewer).
        window: u16,
        /// Random challenge.
        nonce: [u8; 16],
        /// The per-buffer checksum, as [`crate::proto::Checksum::to_wire`] numbers it (from
        /// version 3; 0, BLAKE3, for older senders). Kept as a number so that a receiver can
        /// refuse one it does not know with a clear message.
        checksum: u8,
        /// MBTP over separate receivers: which one this session is (from version 4; on the
        /// wire as transfer u64, part u16, parts u16, all zero for none).
        stripe: Option<Stripe>,
    },
    /// Receiver answers: version, session id, its nonce, UDP ports, whether a key is required.
    ServerHello {
        /// Protocol version.
        version: u16,
        /// Random session id carried by every data datagram.
        session: u64,
        /// Random challenge.
        nonce: [u8; 16],
        /// Buffers the receiver grants in flight.
        window: u16,
        /// UDP ports to stripe data over (1..=64).
        ports: Vec<u16>,
        /// Whether the sender must prove a pre-shared key.
        key_required: bool,
    },
    /// Sender's MAC over the handshake (all zero without a key).
    Auth {
        /// Keyed BLAKE3 MAC.
        mac: [u8; 32],
    },
    /// Receiver accepts the session, with its own MAC (all zero without a key).
    Welcome {
        /// Keyed BLAKE3 MAC.
        mac: [u8; 32],
    },
    /// Receiver refuses the session, or (code [`RefuseCode::Failed`], at any time after the
    /// handshake) says why the session failed at its end; the connection closes.
    Refuse {
        /// Why.
        code: RefuseCode,
        /// Human-readable reason.
        msg: String,
    },
    /// Sender proposes a file.
    FileOffer {
        /// File number in this session.
        file: u32,
        /// File size, bytes.
        size: u64,
        /// Buffer size, bytes.
        buffer_size: u32,
        /// Payload bytes per datagram.
        packet_size: u32,
        /// Continue from the receiver's journal if one matches.
        resume: bool,
        /// Identity of this version of the sender's file (a BLAKE3 of its name, size and
        /// modification time): a journal is resumed only if it matches.
        hash: [u8; 32],
        /// Relative path below the receiver's directory, `/`-separated.
        name: String,
    },
    /// Receiver takes the file; `have` lists buffer indices already on disk (resume).
    FileAccept {
        /// File number.
        file: u32,
        /// Half-open ranges of buffer indices the receiver already holds.
        have: Vec<(u32, u32)>,
    },
    /// Receiver refuses the file.
    FileReject {
        /// File number.
        file: u32,
        /// Why.
        code: RefuseCode,
        /// Human-readable reason.
        msg: String,
    },
    /// Start of a buffer: SBTP's start(size, packet size), plus where it lies and its hash.
    Start {
        /// Session-wide buffer sequence number.
        buf: u32,
        /// File number.
        file: u32,
        /// Buffer index inside the file.
        index: u32,
        /// Buffer size, bytes.
        size: u32,
        /// Payload bytes per datagram.
        packet_size: u32,
        /// BLAKE3 of the buffer (all zero in unreliable modes).
        hash: [u8; 32],
    },
    /// Receiver has room for buffer `buf`: send it.
    Ready {
        /// Buffer sequence number.
        buf: u32,
    },
    /// Sender has sent every datagram of this round.
    End {
        /// Buffer sequence number.
        buf: u32,
        /// Round: 0 for the first blast, then one per retransmission.
        round: u32,
        /// Datagrams sent in this round.
        sent: u32,
    },
    /// Receiver lacks these packets (reliable mode).
    Nack {
        /// Buffer sequence number.
        buf: u32,
        /// The round this answers.
        round: u32,
        /// Rate at which this round's data arrived, bits/s (0 if unknown).
        rx_rate: u64,
        /// Datagrams the receiver's own sockets dropped (kernel receive queue full) since its
        /// previous report: receiver overrun, not network loss.
        drops: u32,
        /// Half-open ranges of missing packet indices.
        missing: Vec<(u32, u32)>,
        /// Rate at which this round's data reached the receiver's host, bits/s, timed by the
        /// kernel's receive timestamps rather than when the receiver read it (from version 5,
        /// as message type 21 with it after `rx_rate`; `None` for older peers, 0 if unknown): a
        /// receiver that was late to read makes `rx_rate` low, not this.
        arrival_rate: Option<u64>,
    },
    /// Receiver has the buffer (complete and verified, or with `lost` packets zero-filled).
    Done {
        /// Buffer sequence number.
        buf: u32,
        /// Distinct packets received.
        received: u32,
        /// Packets never received (unreliable modes).
        lost: u32,
        /// Duplicate packets received.
        dup: u32,
        /// Rate at which the last round's data arrived, bits/s (0 if unknown).
        rx_rate: u64,
        /// Datagrams the receiver's own sockets dropped since its previous report.
        drops: u32,
        /// As `Nack`'s (message type 22 with it after `rx_rate`).
        arrival_rate: Option<u64>,
    },
    /// Sender has no more buffers for this file.
    FileEnd {
        /// File number.
        file: u32,
        /// Whole-file digest: BLAKE3 over the concatenated BLAKE3s of the file's buffer-size
        /// blocks, in order (all zero in unreliable modes).
        digest: [u8; 32],
    },
    /// Receiver's verdict on the file.
    FileDone {
        /// File number.
        file: u32,
        /// Whether it is in place under its final name (or its part is written, in MBTP).
        ok: bool,
        /// Details (hash mismatch, I/O error, gaps).
        msg: String,
    },
    /// End of session.
    Bye,
}

const T_CLIENT_HELLO: u8 = 1;
const T_SERVER_HELLO: u8 = 2;
const T_AUTH: u8 = 3;
const T_WELCOME: u8 = 4;
const T_REFUSE: u8 = 5;
const T_FILE_OFFER: u8 = 10;
const T_FILE_ACCEPT: u8 = 11;
const T_FILE_REJECT: u8 = 12;
const T_START: u8 = 13;
const T_READY: u8 = 14;
const T_END: u8 = 15;
const T_NACK: u8 = 16;
const T_DONE: u8 = 17;
const T_FILE_END: u8 = 18;
const T_FILE_DONE: u8 = 19;
const T_BYE: u8 = 20;
/// `Nack` and `Done` with the arrival rate (protocol 5).
const T_NACK_ARRIVAL: u8 = 21;
const T_DONE_ARRIVAL: u8 = 22;

/// How many bytes of frame are needed to know the length of the first frame in `buf`, or the
/// total length of that frame once its header is present. `Err` if the declared length is out of
/// bounds (the stream must then be closed).
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, WireError> {
    if buf.len() < FRAME_HEADER_LEN {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len == 0 {
        return Err(WireError::Truncated);
    }
    if len > MAX_FRAME {
        return Err(WireError::TooLong(len));
    }
    Ok(Some(FRAME_HEADER_LEN + len))
}

impl Control {
    /// Parses one frame body (type byte and body, without the length prefix).
    pub fn parse(body: &[u8]) -> Result<Self, WireError> {
        if body.len() > MAX_FRAME {
            return Err(WireError::TooLong(body.len()));
        }
        let mut r = Reader::new(body);
        let t = r.u8()?;
        let msg = match t {
            T_CLIENT_HELLO => {
                let version = r.u16()?;
                Control::ClientHello {
                    version,
                    mode: Mode::from_u8(r.u8()?)?,
                    window: r.u16()?,
                    nonce: r.array()?,
                    checksum: if version >= CHECKSUM_VERSION {
                        r.u8()?
                    } else {
                        0
                    },
                    stripe: if version >= STRIPE_VERSION {
                        stripe(&mut r)?
                    } else {
                        None
                    },
                }
            }
            T_SERVER_HELLO => {
                let version = r.u16()?;
                let session = r.u64()?;
                let nonce = r.array()?;
                let window = r.u16()?;
                let key_required = bool_of(r.u8()?)?;
                let n = r.u8()? as usize;
                if n == 0 || n > MAX_PORTS {
                    return Err(WireError::Invalid("port count"));
                }
                let mut ports = Vec::with_capacity(n);
                for _ in 0..n {
                    ports.push(r.u16()?);
                }
                Control::ServerHello {
                    version,
                    session,
                    nonce,
                    window,
                    ports,
                    key_required,
                }
            }
            T_AUTH => Control::Auth { mac: r.array()? },
            T_WELCOME => Control::Welcome { mac: r.array()? },
            T_REFUSE => Control::Refuse {
                code: RefuseCode::from_u16(r.u16()?),
                msg: string(&mut r)?,
            },
            T_FILE_OFFER => Control::FileOffer {
                file: r.u32()?,
                size: r.u64()?,
                buffer_size: r.u32()?,
                packet_size: r.u32()?,
                resume: bool_of(r.u8()?)?,
                hash: r.array()?,
                name: string(&mut r)?,
            },
            T_FILE_ACCEPT => Control::FileAccept {
                file: r.u32()?,
                have: ranges(&mut r)?,
            },
            T_FILE_REJECT => Control::FileReject {
                file: r.u32()?,
                code: RefuseCode::from_u16(r.u16()?),
                msg: string(&mut r)?,
            },
            T_START => Control::Start {
                buf: r.u32()?,
                file: r.u32()?,
                index: r.u32()?,
                size: r.u32()?,
                packet_size: r.u32()?,
                hash: r.array()?,
            },
            T_READY => Control::Ready { buf: r.u32()? },
            T_END => Control::End {
                buf: r.u32()?,
                round: r.u32()?,
                sent: r.u32()?,
            },
            T_NACK | T_NACK_ARRIVAL => Control::Nack {
                buf: r.u32()?,
                round: r.u32()?,
                rx_rate: r.u64()?,
                arrival_rate: if t == T_NACK_ARRIVAL {
                    Some(r.u64()?)
                } else {
                    None
                },
                drops: r.u32()?,
                missing: ranges(&mut r)?,
            },
            T_DONE | T_DONE_ARRIVAL => Control::Done {
                buf: r.u32()?,
                received: r.u32()?,
                lost: r.u32()?,
                dup: r.u32()?,
                rx_rate: r.u64()?,
                arrival_rate: if t == T_DONE_ARRIVAL {
                    Some(r.u64()?)
                } else {
                    None
                },
                drops: r.u32()?,
            },
            T_FILE_END => Control::FileEnd {
                file: r.u32()?,
                digest: r.array()?,
            },
            T_FILE_DONE => Control::FileDone {
                file: r.u32()?,
                ok: bool_of(r.u8()?)?,
                msg: string(&mut r)?,
            },
            T_BYE => Control::Bye,
            other => return Err(WireError::UnknownType(other)),
        };
        r.finish()?;
        Ok(msg)
    }

    /// Appends the whole frame (length prefix, type, body) to `out`. Strings longer than
    /// [`MAX_STRING`] are cut at a character boundary so the frame stays parseable.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; FRAME_HEADER_LEN]);
        match self {
            Control::ClientHello {
                version,
                mode,
                window,
                nonce,
                checksum,
                stripe,
            } => {
                out.push(T_CLIENT_HELLO);
                out.extend_from_slice(&version.to_be_bytes());
                out.push(mode.to_u8());
                out.extend_from_slice(&window.to_be_bytes());
                out.extend_from_slice(nonce);
                if *version >= CHECKSUM_VERSION {
                    out.push(*checksum);
                }
                if *version >= STRIPE_VERSION {
                    let s = stripe.unwrap_or(Stripe {
                        transfer: 0,
                        part: 0,
                        parts: 0,
                    });
                    out.extend_from_slice(&s.transfer.to_be_bytes());
                    out.extend_from_slice(&s.part.to_be_bytes());
                    out.extend_from_slice(&s.parts.to_be_bytes());
                }
            }
            Control::ServerHello {
                version,
                session,
                nonce,
                window,
                ports,
                key_required,
            } => {
                out.push(T_SERVER_HELLO);
                out.extend_from_slice(&version.to_be_bytes());
                out.extend_from_slice(&session.to_be_bytes());
                out.extend_from_slice(nonce);
                out.extend_from_slice(&window.to_be_bytes());
                out.push(u8::from(*key_required));
                let ports = &ports[..ports.len().min(MAX_PORTS)];
                out.push(ports.len() as u8);
                for p in ports {
                    out.extend_from_slice(&p.to_be_bytes());
                }
            }
            Control::Auth { mac } => {
                out.push(T_AUTH);
                out.extend_from_slice(mac);
            }
            Control::Welcome { mac } => {
                out.push(T_WELCOME);
                out.extend_from_slice(mac);
            }
            Control::Refuse { code, msg } => {
                out.push(T_REFUSE);
                out.extend_from_slice(&code.to_u16().to_be_bytes());
                put_string(out, msg);
            }
            Control::FileOffer {
                file,
                size,
                buffer_size,
                packet_size,
                resume,
                hash,
                name,
            } => {
                out.push(T_FILE_OFFER);
                out.extend_from_slice(&file.to_be_bytes());
                out.extend_from_slice(&size.to_be_bytes());
                out.extend_from_slice(&buffer_size.to_be_bytes());
                out.extend_from_slice(&packet_size.to_be_bytes());
                out.push(u8::from(*resume));
                out.extend_from_slice(hash);
                put_string(out, name);
            }
            Control::FileAccept { file, have } => {
                out.push(T_FILE_ACCEPT);
                out.extend_from_slice(&file.to_be_bytes());
                put_ranges(out, have);
            }
            Control::FileReject { file, code, msg } => {
                out.push(T_FILE_REJECT);
                out.extend_from_slice(&file.to_be_bytes());
                out.extend_from_slice(&code.to_u16().to_be_bytes());
                put_string(out, msg);
            }
            Control::Start {
                buf,
                file,
                index,
                size,
                packet_size,
                hash,
            } => {
                out.push(T_START);
                for v in [buf, file, index, size, packet_size] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
                out.extend_from_slice(hash);
            }
            Control::Ready { buf } => {
                out.push(T_READY);
                out.extend_from_slice(&buf.to_be_bytes());
            }
            Control::End { buf, round, sent } => {
                out.push(T_END);
                for v in [buf, round, sent] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
            Control::Nack {
                buf,
                round,
                rx_rate,
                drops,
                missing,
                arrival_rate,
            } => {
                out.push(if arrival_rate.is_some() {
                    T_NACK_ARRIVAL
                } else {
                    T_NACK
                });
                out.extend_from_slice(&buf.to_be_bytes());
                out.extend_from_slice(&round.to_be_bytes());
                out.extend_from_slice(&rx_rate.to_be_bytes());
                if let Some(a) = arrival_rate {
                    out.extend_from_slice(&a.to_be_bytes());
                }
                out.extend_from_slice(&drops.to_be_bytes());
                put_ranges(out, missing);
            }
            Control::Done {
                buf,
                received,
                lost,
                dup,
                rx_rate,
                drops,
                arrival_rate,
            } => {
                out.push(if arrival_rate.is_some() {
                    T_DONE_ARRIVAL
                } else {
                    T_DONE
                });
                for v in [buf, received, lost, dup] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
                out.extend_from_slice(&rx_rate.to_be_bytes());
                if let Some(a) = arrival_rate {
                    out.extend_from_slice(&a.to_be_bytes());
                }
                out.extend_from_slice(&drops.to_be_bytes());
            }
            Control::FileEnd { file, digest } => {
                out.push(T_FILE_END);
                out.extend_from_slice(&file.to_be_bytes());
                out.extend_from_slice(digest);
            }
            Control::FileDone { file, ok, msg } => {
                out.push(T_FILE_DONE);
                out.extend_from_slice(&file.to_be_bytes());
                out.push(u8::from(*ok));
                put_string(out, msg);
            }
            Control::Bye => out.push(T_BYE),
        }
        let len = (out.len() - start - FRAME_HEADER_LEN) as u32;
        out[start..start + FRAME_HEADER_LEN].copy_from_slice(&len.to_be_bytes());
    }
}

/// A `ClientHello`'s stripe: transfer u64, part u16, parts u16; all zero is none.
fn stripe(r: &mut Reader<'_>) -> Result<Option<Stripe>, WireError> {
    let (transfer, part, parts) = (r.u64()?, r.u16()?, r.u16()?);
    match (transfer, part, parts) {
        (0, 0, 0) => Ok(None),
        (_, 1.., 1..) if part <= parts => Ok(Some(Stripe {
            transfer,
            part,
            parts,
        })),
        _ => Err(WireError::Invalid("stripe")),
    }
}

fn bool_of(v: u8) -> Result<bool, WireError> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(WireError::Invalid("boolean")),
    }
}

fn string(r: &mut Reader<'_>) -> Result<String, WireError> {
    let n = r.u16()? as usize;
    if n > MAX_STRING {
        return Err(WireError::Invalid("string length"));
    }
    let s = r.take(n)?;
    String::from_utf8(s.to_vec()).map_err(|_| WireError::Invalid("UTF-8"))
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    let mut end = s.len().min(MAX_STRING);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.extend_from_slice(&(end as u16).to_be_bytes());
    out.extend_from_slice(&s.as_bytes()[..end]);
}

fn ranges(r: &mut Reader<'_>) -> Result<Vec<(u32, u32)>, WireError> {
    let n = r.u32()? as usize;
    if n > MAX_FRAME / 8 {
        return Err(WireError::Invalid("range count"));
    }
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let a = r.u32()?;
        let b = r.u32()?;
        if b <= a {
            return Err(WireError::Invalid("empty or reversed range"));
        }
        v.push((a, b));
    }
    Ok(v)
}

fn put_ranges(out: &mut Vec<u8>, v: &[(u32, u32)]) {
    let v = &v[..v.len().min(MAX_FRAME / 8 - 1)];
    out.extend_from_slice(&(v.len() as u32).to_be_bytes());
    for (a, b) in v {
        out.extend_from_slice(&a.to_be_bytes());
        out.extend_from_slice(&b.to_be_bytes());
    }
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;
