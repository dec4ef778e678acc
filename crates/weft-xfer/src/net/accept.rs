//! The receiver's accept loop (`weft recv`): every connection waits in a bounded lobby
//! ([`weft_gate::Door`]) until its handshake is complete (the sender's hello and, with a key, its
//! proof), so that idle or slow connections never take a session's place: each has
//! [`RecvOptions::lobby`]`.hello_timeout` (2 s) to finish, and when too many wait, in total or
//! from one address, the oldest is closed. Only then does a sender take one of the
//! `max_concurrent` session slots; sessions running are never closed to make room.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use weft_gate::{Arrival, Door};

use super::XferError;
use super::recv::{RecvOptions, SessionReport, handshake, run_session};
use super::store::Store;
use crate::wire::{Control, RefuseCode, WireError};

/// What [`serve`] did by the time it stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeSummary {
    /// Sessions started (handshake complete, slot taken).
    pub sessions: u64,
    /// Senders refused because `max_concurrent` sessions were running.
    pub busy: u64,
    /// Senders whose handshake failed after their hello (wrong key, other version).
    pub handshake_failures: u64,
    /// Connections closed without a complete handshake: silent past the hello time-out, the
    /// oldest waiting when room was needed, garbage, or gone.
    pub unidentified_closed: u64,
}

#[derive(Default)]
struct Counters {
    active: AtomicUsize,
    started: AtomicU64,
    busy: AtomicU64,
    failed: AtomicU64,
    unidentified: AtomicU64,
}

/// Serves senders on `listener`, writing into `store`, calling `on_session` after each session
/// (and after each handshake that a sender failed). Returns after `max_sessions` sessions, or
/// never; nothing a peer does stops the accept loop. Raises the open-files limit to its hard
/// limit first.
pub fn serve(
    listener: TcpListener,
    store: Store,
    opts: RecvOptions,
    on_session: &(dyn Fn(SessionReport) + Sync),
) -> Result<ServeSummary, XferError> {
    // Best effort: the agent works within the soft limit too, with fewer connections.
    let _ = weft_gate::raise_open_files_limit();
    let door = Door::new(opts.lobby);
    let n = Counters::default();
    let done = |n: &Counters| {
        opts.max_sessions
            .is_some_and(|m| n.started.load(Ordering::SeqCst) >= m)
    };
    std::thread::scope(|s| {
        while !done(&n) {
            let (stream, peer, pass) =
                match door.accept(&listener, std::time::Duration::from_millis(200)) {
                    Arrival::Connection(st, p, pass) => (st, p, pass),
                    Arrival::Nothing => continue,
                    // EMFILE and friends: the door has freed what it could; go on.
                    Arrival::Failed(_) => continue,
                };
            let (store, opts, n) = (&store, &opts, &n);
            s.spawn(move || {
                let admitted = match handshake(stream, opts) {
                    Ok(a) => {
                        if !pass.identified() {
                            // The lobby closed it just as the handshake ended.
                            n.unidentified.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                        a
                    }
                    Err(e) => {
                        drop(pass);
                        // A sender that spoke but failed (wrong key, another version) is told
                        // and reported; silence, garbage and closed connections are only
                        // counted.
                        if matches!(
                            e,
                            XferError::Auth(_) | XferError::Wire(WireError::Version(_))
                        ) {
                            n.failed.fetch_add(1, Ordering::SeqCst);
                            on_session(failed_handshake(peer, &e));
                        } else {
                            n.unidentified.fetch_add(1, Ordering::SeqCst);
                        }
                        return;
                    }
                };
                let Some(slot) = take_slot(admitted, opts, n) else {
                    return;
                };
                let report = run_session(slot, store, opts);
                n.active.fetch_sub(1, Ordering::SeqCst);
                on_session(report);
            });
        }
        // Done: nobody still saying hello will get a session now.
        while door.evict_oldest() {}
    });
    Ok(ServeSummary {
        sessions: n.started.load(Ordering::SeqCst),
        busy: n.busy.load(Ordering::SeqCst),
        handshake_failures: n.failed.load(Ordering::SeqCst),
        unidentified_closed: n.unidentified.load(Ordering::SeqCst),
    })
}

/// A session slot for an admitted sender, or its refusal (busy, or `max_sessions` reached).
fn take_slot(
    mut a: super::recv::Admitted,
    opts: &RecvOptions,
    n: &Counters,
) -> Option<super::recv::Admitted> {
    let max = opts.max_concurrent.max(1);
    let refuse = |a: &mut super::recv::Admitted, msg: String| {
        a.conn.queue(&Control::Refuse {
            code: RefuseCode::Other,
            msg,
        });
        let _ = a.conn.flush_all(1000);
    };
    if n.active
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |k| {
            (k < max).then_some(k + 1)
        })
        .is_err()
    {
        n.busy.fetch_add(1, Ordering::SeqCst);
        refuse(
            &mut a,
            format!("receiver busy: {max} sessions at once (its --max-concurrent); try again"),
        );
        return None;
    }
    let limit = opts.max_sessions.unwrap_or(u64::MAX);
    if n.started
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |k| {
            (k < limit).then_some(k + 1)
        })
        .is_err()
    {
        n.active.fetch_sub(1, Ordering::SeqCst);
        refuse(
            &mut a,
            format!("the receiver has served its {limit} sessions (--sessions) and is stopping"),
        );
        return None;
    }
    Some(a)
}

fn failed_handshake(peer: std::net::SocketAddr, e: &XferError) -> SessionReport {
    SessionReport {
        peer: Some(peer),
        mode: None,
        files: Vec::new(),
        stats: Default::default(),
        elapsed: weft_model::Duration::ZERO,
        error: Some(e.to_string()),
        hashes_not_kept: 0,
        bytes_written: 0,
        checksum: None,
        cpu: weft_model::Duration::ZERO,
    }
}
