//! The real driver: the protocol core over a TCP control connection and UDP sockets, with files on
//! disk. [`send`] is the sending side, [`recv`] the receiving side, [`store`] keeps the receiver's
//! writes inside its directory and makes them atomic and resumable, [`stripe`] is where a file
//! an MBTP transfer spread over separate receivers ends up, and how `weft join` puts it together.

pub mod accept;
mod beneath;
pub mod ctl;
pub mod reader;
pub mod recv;
mod recv_budget;
mod recv_end;
mod recv_pipeline;
mod recv_session;
pub mod send;
mod send_session;
pub mod source;
pub mod store;
pub mod stripe;
pub mod sys;

use crate::auth::{Key, Role};
use crate::proto::{BlockHasher, Checksum, ProtoError};
use crate::wire::control::{MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, Stripe};
use crate::wire::{Control, Mode, RefuseCode, WireError};
use ctl::CtlConn;

/// Milliseconds to wait for each handshake message.
pub const HANDSHAKE_TIMEOUT_MS: u64 = 10_000;

/// What can go wrong in a transfer.
#[derive(Debug, thiserror::Error)]
pub enum XferError {
    // The messages include their cause's, so no variant names a `source`: a report of the
    // error chain (`{:#}` in the CLI) would print the cause twice.
    /// A system call failed.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        error: std::io::Error,
    },
    /// The peer sent bytes that are not a valid message.
    #[error("malformed control message: {0}")]
    Wire(WireError),
    /// The peer broke the protocol.
    #[error("protocol error: {0}")]
    Proto(ProtoError),
    /// The peer refused.
    #[error("refused by the receiver ({code:?}): {msg}")]
    Refused {
        /// Why.
        code: RefuseCode,
        /// The receiver's reason.
        msg: String,
    },
    /// The receiver's session failed after it had started; its message says why.
    #[error("the receiver failed: {0}")]
    ReceiverFailed(String),
    /// Authentication failed.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// The peer closed the connection.
    #[error("the peer closed the control connection")]
    PeerClosed,
    /// Nothing heard for too long.
    #[error("timed out {0}")]
    Timeout(&'static str),
    /// The peer acknowledged nothing on the control connection for this many milliseconds
    /// (max(3 x RTO, 2 s)): it died with its host, or the path to it is down.
    #[error(
        "the peer stopped answering: nothing acknowledged on the control connection for {0} ms \
         (the bound is max(3 x RTO, 2 s)); it died, or the path to it is down"
    )]
    PeerSilent(u64),
    /// A local check failed (bad argument, unusable file).
    #[error("{0}")]
    Local(String),
}

impl XferError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        XferError::Io {
            what: what.into(),
            error: source,
        }
    }
}

impl XferError {
    /// The error a receiver's `Refuse` stands for: a failure of its session (code `Failed`), or
    /// a refusal.
    pub fn refusal(code: RefuseCode, msg: String) -> Self {
        match code {
            RefuseCode::Failed => XferError::ReceiverFailed(msg),
            code => XferError::Refused { code, msg },
        }
    }
}

/// When the control connection broke with `e`: the receiver's own account of why, if it sent
/// one before closing (a `Refuse` already in the read buffer), else `e`.
pub fn cause_of_close(conn: &mut CtlConn, e: XferError) -> XferError {
    if conn.read_available().is_ok() {
        while let Ok(Some(m)) = conn.next_msg() {
            if let Control::Refuse { code, msg } = m {
                return XferError::refusal(code, msg);
            }
        }
    }
    e
}

impl From<WireError> for XferError {
    fn from(e: WireError) -> Self {
        XferError::Wire(e)
    }
}

impl From<ProtoError> for XferError {
    fn from(e: ProtoError) -> Self {
        XferError::Proto(e)
    }
}

/// What the handshake settled.
#[derive(Debug, Clone)]
pub struct SessionParams {
    /// Session id carried by data datagrams.
    pub session: u64,
    /// Buffers in flight.
    pub window: u16,
    /// Receiver's UDP ports.
    pub ports: Vec<u16>,
    /// The receiver's `Welcome` is still to come (first on the control connection): without a
    /// key it proves nothing, so the sender goes on without waiting a round trip for it.
    pub welcome_pending: bool,
    /// The buffers' checksum, keyed for this session when the ends share a key.
    pub hasher: BlockHasher,
    /// The protocol version the session speaks (the sender's).
    pub version: u16,
    /// MBTP over separate receivers: which stripe this session is (from the sender's hello).
    pub stripe: Option<Stripe>,
}

/// What a sender asks for in its hello.
#[derive(Debug, Clone, Copy)]
pub struct Hello {
    /// Transfer mode.
    pub mode: Mode,
    /// Buffers the sender would keep in flight.
    pub window: u16,
    /// The buffers' checksum.
    pub checksum: Checksum,
    /// MBTP over separate receivers: which one this session goes to.
    pub stripe: Option<Stripe>,
}

/// The per-session key of the buffers' BLAKE3 ([`BlockHasher`]): derived from the pre-shared key
/// apart from the control channel's, and bound to both nonces and the session id, so that
/// checksums of one session are worthless in another.
fn checksum_key(key: Option<&Key>, cn: &[u8; 16], sn: &[u8; 16], session: u64) -> Option<[u8; 32]> {
    key.map(|k| {
        k.for_protocol("weft-xfer v1 buffer checksum key")
            .mac(Role::Client, cn, sn, session)
    })
}

/// A 64-bit random value.
pub fn random_u64() -> Result<u64, XferError> {
    let mut b = [0u8; 8];
    sys::random_bytes(&mut b).map_err(|e| XferError::io("reading random bytes", e))?;
    Ok(u64::from_be_bytes(b))
}

fn nonce() -> Result<[u8; 16], XferError> {
    let mut n = [0u8; 16];
    sys::random_bytes(&mut n).map_err(|e| XferError::io("reading random bytes", e))?;
    Ok(n)
}

/// The sender's side of the handshake, with the default checksum (BLAKE3).
pub fn client_handshake(
    conn: &mut CtlConn,
    mode: Mode,
    window: u16,
    key: Option<&Key>,
) -> Result<SessionParams, XferError> {
    let hello = Hello {
        mode,
        window,
        checksum: Checksum::default(),
        stripe: None,
    };
    client_handshake_with(conn, &hello, key)
}

/// The sender's side of the handshake, asking for what `hello` names.
pub fn client_handshake_with(
    conn: &mut CtlConn,
    hello: &Hello,
    key: Option<&Key>,
) -> Result<SessionParams, XferError> {
    let &Hello {
        mode,
        window,
        checksum,
        stripe,
    } = hello;
    let cn = nonce()?;
    conn.queue(&Control::ClientHello {
        version: PROTOCOL_VERSION,
        mode,
        window,
        nonce: cn,
        checksum: checksum.to_wire(),
        stripe,
    });
    conn.flush_all(HANDSHAKE_TIMEOUT_MS)?;
    // A receiver of protocol 2 or 3 cannot parse this version's hello (it has bytes more) and
    // closes without a word, and one of protocol 4 refuses it by version: say what that
    // probably means.
    let reply = conn.recv_wait(HANDSHAKE_TIMEOUT_MS).map_err(|e| match e {
        XferError::PeerClosed => XferError::Local(format!(
            "the receiver closed the connection without answering the hello: if it is an older \
             weft (protocol 2 or 3, before --checksum or separate MBTP receivers), upgrade it \
             (this sender speaks protocol {PROTOCOL_VERSION}; receivers of this version still \
             serve protocol 2 to 4 senders)"
        )),
        e => e,
    })?;
    let (session, sn, window, ports, key_required) = match reply {
        Control::ServerHello {
            version,
            session,
            nonce,
            window,
            ports,
            key_required,
        } => {
            if version != PROTOCOL_VERSION {
                return Err(WireError::Version(version).into());
            }
            (session, nonce, window, ports, key_required)
        }
        Control::Refuse { code, msg } => return Err(XferError::Refused { code, msg }),
        _ => return Err(ProtoError::Unexpected("message instead of ServerHello").into()),
    };
    if key_required && key.is_none() {
        return Err(XferError::Auth(
            "the receiver requires a pre-shared key: pass the same --key to weft send".into(),
        ));
    }
    let mac = key.map_or([0; 32], |k| k.mac(Role::Client, &cn, &sn, session));
    let hasher = BlockHasher::new(checksum, checksum_key(key, &cn, &sn, session));
    conn.queue(&Control::Auth { mac });
    conn.flush_all(HANDSHAKE_TIMEOUT_MS)?;
    if key.is_none() {
        return Ok(SessionParams {
            session,
            window: window.max(1),
            ports,
            welcome_pending: true,
            hasher,
            version: PROTOCOL_VERSION,
            stripe,
        });
    }
    match conn.recv_wait(HANDSHAKE_TIMEOUT_MS)? {
        Control::Welcome { mac } => {
            if let Some(k) = key
                && !k.verify(Role::Server, &cn, &sn, session, &mac)
            {
                return Err(XferError::Auth(
                    "the receiver could not prove the key (is its --key the same?)".into(),
                ));
            }
            if let Some(k) = key {
                conn.authenticate(k.frames(Role::Client, &cn, &sn, session));
            }
        }
        Control::Refuse { code, msg } => return Err(XferError::Refused { code, msg }),
        _ => return Err(ProtoError::Unexpected("message instead of Welcome").into()),
    }
    Ok(SessionParams {
        session,
        window: window.max(1),
        ports,
        welcome_pending: false,
        hasher,
        version: PROTOCOL_VERSION,
        stripe,
    })
}

/// Why a session with a key cannot use `mode` and `checksum`, or `None`: with a key only the
/// reliable mode with BLAKE3 runs. Its datagrams carry no tag either, but each buffer is checked
/// against a BLAKE3 keyed for the session before it is written, so a forged or altered datagram
/// makes the buffer be sent again and never reaches the file. SBTP and MBTP write what arrives
/// (lost packets zero-filled, nothing checked), and anyone can compute XXH3: under a key they
/// would let whoever sees a session id write the file's content, and a key that protects nothing
/// of the data is worse than none, since it says it does. (Tagging every datagram would cost a
/// keyed hash per datagram on top of the buffer's, for modes the study ran on a trusted LAN.)
pub fn keyed_refusal(mode: Mode, checksum: Checksum) -> Option<String> {
    let why = "under a key only --mode reliable with --checksum blake3 is allowed: its buffers \
               are checked with a BLAKE3 keyed for the session before they are written, while \
               sbtp and mbtp write whatever datagrams arrive and anyone can compute xxh3, so a \
               stranger who sees the session id could write the file's content";
    match (mode, checksum) {
        (Mode::Reliable, Checksum::Blake3) => None,
        (Mode::Reliable, c) => Some(format!("--checksum {} with a key: {why}", c.name())),
        (m, _) => Some(format!("--mode {} with a key: {why}", mode_name(m))),
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Reliable => "reliable",
        Mode::Sbtp => "sbtp",
        Mode::Mbtp => "mbtp",
    }
}

/// The first protocol version whose keys are stretched (Argon2id, `weft_gate::auth`): a keyed
/// receiver refuses older senders by name rather than failing their MAC.
pub const STRETCHED_KEY_VERSION: u16 = 6;

/// The receiver's side of the handshake: returns the mode and the session parameters, or
/// refuses the sender (and returns the error). `bind` makes the session's UDP sockets and
/// returns their ports; it is called once the sender's hello has arrived, so that a connection
/// that never says hello holds no UDP sockets.
pub fn server_handshake(
    conn: &mut CtlConn,
    key: Option<&Key>,
    bind: impl FnOnce() -> Result<Vec<u16>, XferError>,
    max_window: u16,
) -> Result<(Mode, SessionParams), XferError> {
    let (mode, want, cn, version, checksum, stripe) = match conn.recv_wait(HANDSHAKE_TIMEOUT_MS)? {
        Control::ClientHello {
            version,
            mode,
            window,
            nonce,
            checksum,
            stripe,
        } => {
            if !(MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&version) {
                refuse(
                    conn,
                    RefuseCode::Version,
                    format!(
                        "protocol version {version} is not supported (this receiver speaks {MIN_PROTOCOL_VERSION} to {PROTOCOL_VERSION})"
                    ),
                );
                return Err(WireError::Version(version).into());
            }
            let Some(checksum) = Checksum::from_wire(checksum) else {
                let known: Vec<String> = Checksum::ALL
                    .iter()
                    .map(|c| format!("{} ({})", c.name(), c.to_wire()))
                    .collect();
                let msg = format!(
                    "unknown checksum number {checksum}: this receiver knows {}",
                    known.join(", ")
                );
                refuse(conn, RefuseCode::Version, msg.clone());
                return Err(XferError::Local(msg));
            };
            if key.is_some() && version < STRETCHED_KEY_VERSION {
                let msg = format!(
                    "this receiver has a key, and keys are stretched with Argon2id since protocol \
                     {STRETCHED_KEY_VERSION}; the sender speaks {version}: upgrade it"
                );
                refuse(conn, RefuseCode::Version, msg.clone());
                return Err(XferError::Local(msg));
            }
            if key.is_some()
                && let Some(msg) = keyed_refusal(mode, checksum)
            {
                refuse(conn, RefuseCode::Version, msg.clone());
                return Err(XferError::Local(msg));
            }
            if stripe.is_some() && mode != Mode::Mbtp {
                let msg =
                    "a stripe of a transfer over separate receivers is MBTP's only".to_string();
                refuse(conn, RefuseCode::Version, msg.clone());
                return Err(XferError::Local(msg));
            }
            (mode, window, nonce, version, checksum, stripe)
        }
        _ => return Err(ProtoError::Unexpected("message instead of ClientHello").into()),
    };
    let ports = bind()?;
    let session = random_u64()?;
    let sn = nonce()?;
    let window = if mode.is_reliable() {
        want.clamp(1, max_window.max(1))
    } else {
        1
    };
    // An older sender is answered in its own version (the ServerHello is the same in both).
    conn.queue(&Control::ServerHello {
        version,
        session,
        nonce: sn,
        window,
        ports: ports.to_vec(),
        key_required: key.is_some(),
    });
    conn.flush_all(HANDSHAKE_TIMEOUT_MS)?;
    let mac = match conn.recv_wait(HANDSHAKE_TIMEOUT_MS)? {
        Control::Auth { mac } => mac,
        _ => return Err(ProtoError::Unexpected("message instead of Auth").into()),
    };
    if let Some(k) = key {
        if !k.verify(Role::Client, &cn, &sn, session, &mac) {
            refuse(conn, RefuseCode::Auth, "wrong or missing key".into());
            return Err(XferError::Auth("the sender did not prove the key".into()));
        }
        conn.queue(&Control::Welcome {
            mac: k.mac(Role::Server, &cn, &sn, session),
        });
        conn.authenticate(k.frames(Role::Server, &cn, &sn, session));
    } else {
        conn.queue(&Control::Welcome { mac: [0; 32] });
    }
    conn.flush_all(HANDSHAKE_TIMEOUT_MS)?;
    Ok((
        mode,
        SessionParams {
            session,
            window,
            ports: ports.to_vec(),
            welcome_pending: false,
            hasher: BlockHasher::new(checksum, checksum_key(key, &cn, &sn, session)),
            version,
            stripe,
        },
    ))
}

fn refuse(conn: &mut CtlConn, code: RefuseCode, msg: String) {
    conn.queue(&Control::Refuse { code, msg });
    let _ = conn.flush_all(1000);
}
