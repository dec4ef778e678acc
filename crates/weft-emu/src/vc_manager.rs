//! The connection manager as a process (`weft vc manager`): it holds a plan, listens on a Unix
//! socket, and serves each switch that connects over the authenticated channel
//! ([`crate::vc_control`]) with the sans-IO [`Manager`]'s decisions: a switch that says hello
//! without its whole table or its contracts gets both pushed, and its acknowledgement closes a
//! [`Restore`] (the time
//! from hello to acknowledgement, on CLOCK_MONOTONIC). One thread per connected switch; the
//! manager's state is shared under a lock.

use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use weft_gate::auth::Key;
use weft_model::Instant;
use weft_model::vc::wire::Msg;
use weft_model::vc::{ContractAt, Held, Manager, Plan, Push, Restore};

use crate::vc_control::{Channel, ControlError};

fn now() -> Instant {
    Instant(weft_sys::clock::monotonic_ns())
}

/// Serves the switches of `plan` and the `contracts` they enforce (resolved against `plan`) on
/// `listener` with `key` until `stop` is set, calling `on` with each restore as it completes and
/// what the switch then holds; returns every restore.
pub fn serve(
    listener: &UnixListener,
    plan: &Plan,
    contracts: &[ContractAt],
    key: &Key,
    stop: &AtomicBool,
    on: &(dyn Fn(&Restore, Held) + Sync),
) -> std::io::Result<Vec<Restore>> {
    listener.set_nonblocking(true)?;
    let m = Mutex::new(Manager::new(plan, contracts));
    std::thread::scope(|scope| {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((conn, _)) => {
                    let m = &m;
                    scope.spawn(move || {
                        if let Err(e) = switch(conn, m, key, stop, on) {
                            eprintln!("weft vc manager: {e}");
                        }
                    });
                }
                // A switch that comes back is taken at once: its outage ends with its restore.
                Err(_) => {
                    let _ = weft_sys::readable(&[listener.as_raw_fd()], Some(20_000_000));
                }
            }
        }
    });
    Ok(m.into_inner().map(|m| m.restores).unwrap_or_default())
}

/// What a hello or acknowledgement says the switch holds.
fn held_of(entries: u32, contracts: u32) -> Held {
    Held {
        entries: entries as usize,
        contracts: contracts as usize,
    }
}

/// The message of a push.
fn push_msg(p: Push) -> Msg {
    Msg::Push {
        entries: p.entries,
        contracts: p.contracts,
    }
}

/// One switch's connection, until it closes or `stop`.
fn switch(
    conn: UnixStream,
    m: &Mutex<Manager>,
    key: &Key,
    stop: &AtomicBool,
    on: &(dyn Fn(&Restore, Held) + Sync),
) -> Result<(), ControlError> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    let lock = || m.lock().unwrap_or_else(|e| e.into_inner());
    let mut ch = Channel::accept(conn, key)?;
    let hello = ch.recv()?;
    let (s, held) = match &hello {
        Msg::Hello {
            switch,
            held,
            contracts,
        } => match lock().switch_index(switch) {
            Some(s) => (s, held_of(*held, *contracts)),
            None => {
                return Err(ControlError::Unexpected(
                    "the hello of a switch of the plan",
                    Box::new(hello),
                ));
            }
        },
        _ => return Err(ControlError::Unexpected("Hello", Box::new(hello))),
    };
    let push = {
        let mut m = lock();
        m.handle_hello(now(), s, held);
        m.poll_push_for(s)
    };
    if let Some(p) = push {
        ch.send(&push_msg(p))?;
    }
    let fd = ch.stream().as_raw_fd();
    let result = loop {
        if stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        if !weft_sys::readable(&[fd], Some(20_000_000)).is_ok_and(|r| r[0]) {
            continue;
        }
        match ch.recv() {
            Ok(Msg::Ack { held, contracts }) => {
                let held = held_of(held, contracts);
                let (restored, push) = {
                    let mut m = lock();
                    let before = m.restores.len();
                    m.handle_ack(now(), s, held);
                    let r = m.restores.get(before).cloned();
                    (r, m.poll_push_for(s))
                };
                if let Some(r) = restored {
                    on(&r, held);
                }
                if let Some(p) = push {
                    ch.send(&push_msg(p))?;
                }
            }
            Ok(other) => break Err(ControlError::Unexpected("Ack", Box::new(other))),
            Err(e) => break Err(e),
        }
    };
    lock().handle_lost(now(), s);
    match result {
        // A switch that goes away is what the manager is for: not an error.
        Err(ControlError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(()),
        r => r,
    }
}
