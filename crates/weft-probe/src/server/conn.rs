//! One accepted connection: tell control from data by the magic, then serve or attach it.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};

use weft_gate::Pass;

use super::context::TestContext;
use super::{Pending, Shared};
use crate::control::Control;
use crate::error::ProbeError;
use crate::proto::data::{DATA_MAGIC, HELLO_LEN};
use crate::proto::{
    Hello, MAGIC, Message, ProtoError, RelaySpec, RelayTest, TestSpec, read_message,
};

/// What a control connection asked for with its first message.
enum Job {
    /// A test with this agent as the server.
    Test(TestSpec),
    /// A test with this agent as the client, toward another agent.
    Relay(RelaySpec),
}

/// Handles one connection to the end. Never panics on anything the peer sends. `pass` is the
/// connection's place in the lobby, given up once it has identified itself.
pub(super) fn handle(shared: &Arc<Shared>, mut stream: TcpStream, peer: SocketAddr, pass: Pass) {
    let limits = &shared.config.limits;
    // The lobby closes the connection at its hello deadline; the read time-out is a second
    // bound on each read in case the accept loop is late.
    let hello = std::time::Duration::from(limits.lobby.hello_timeout);
    if stream.set_read_timeout(Some(hello)).is_err() {
        return;
    }
    let mut magic = [0u8; 4];
    if let Err(e) = stream.read_exact(&mut magic) {
        drop_conn(shared, peer, &format!("no hello ({e})"));
        return;
    }
    if magic == DATA_MAGIC {
        attach_data(shared, stream, peer, magic, pass);
        return;
    }
    if magic != MAGIC {
        let err = ProbeError::Proto(ProtoError::BadMagic(magic));
        let mut c = Control::new(stream, limits.max_message);
        c.send_error_best_effort(&err);
        drop_conn(shared, peer, &err.to_string());
        return;
    }
    if shared.config.key.is_none() && !shared.config.open && !peer.ip().to_canonical().is_loopback()
    {
        // Protected mode: a keyless agent left running serves its own host only.
        let err = ProbeError::Refused(format!(
            "this agent has no key and serves only clients on its own host (protected mode); \
             run it with --key-file (and the client with the same) or with --open to serve {}",
            peer.ip()
        ));
        let mut c = Control::new(stream, limits.max_message);
        c.send_error_best_effort(&err);
        drop_conn(shared, peer, &err.to_string());
        return;
    }
    let mut first = std::io::Read::chain(&magic[..], &stream);
    let msg = read_message(&mut first, &mut Vec::new(), limits.max_message);
    let mut control = Control::new(stream, limits.max_message);
    let msg = match (msg, &shared.config.key) {
        (Ok(Message::AuthHello(h)), Some(key)) => {
            match crate::auth::agent_hello(&mut control, key, &h).and_then(|()| control.recv()) {
                Ok(m) => Ok(m),
                Err(e) => {
                    refuse_auth(shared, &mut control, peer, &e);
                    return;
                }
            }
        }
        (Ok(Message::AuthHello(_)), None) => {
            refuse_auth(shared, &mut control, peer, &crate::auth::no_key_here());
            return;
        }
        (Ok(Message::Request(_) | Message::Relay(_)), Some(_)) => {
            refuse_auth(shared, &mut control, peer, &crate::auth::key_required());
            return;
        }
        (m, _) => m.map_err(ProbeError::Proto),
    };
    let job = match msg {
        Ok(Message::Request(spec)) => Job::Test(spec),
        Ok(Message::Relay(spec)) if shared.config.relay => Job::Relay(spec),
        Ok(Message::Relay(spec)) => {
            let err = ProbeError::Refused(format!(
                "this agent does not relay tests (it runs with `weft serve --no-relay`), so it \
                 will not run a test toward {}; run weft on its host with local:{} instead",
                spec.target, spec.target
            ));
            control.send_error_best_effort(&err);
            shared.tests_failed.fetch_add(1, Ordering::SeqCst);
            shared.log(&format!("{peer}: refused: {err}"));
            return;
        }
        Ok(other) => {
            let err = ProbeError::Protocol(format!(
                "expected a Request or a Relay first, got {:?}",
                other.msg_type()
            ));
            control.send_error_best_effort(&err);
            drop_conn(shared, peer, &err.to_string());
            return;
        }
        Err(ProbeError::Proto(ProtoError::UnsupportedVersion(v))) => {
            // Said in the peer's own framing, so that an older client reads why, not "bad
            // version 2" of its own parser.
            let why = format!(
                "this agent speaks weft control protocol {} and the client {v}: use the same weft \
                 version on both ends (protocol 2 changed the keyed handshake and tags messages)",
                crate::proto::VERSION
            );
            let mut bytes = Message::error("version", why.clone()).to_bytes();
            bytes[4] = v;
            let _ = std::io::Write::write_all(&mut control.stream(), &bytes);
            drop_conn(shared, peer, &why);
            return;
        }
        Err(err) => {
            control.send_error_best_effort(&err);
            drop_conn(shared, peer, &err.to_string());
            return;
        }
    };
    if !pass.identified() {
        drop_conn(
            shared,
            peer,
            "closed by the lobby before its request was read",
        );
        return;
    }
    // From here on the connection is a test's: silence is bounded by the idle time-out.
    if control.set_read_timeout(Some(limits.idle_timeout)).is_err() {
        return;
    }
    run_test(shared, control, peer, job);
}

/// Refuses a client that did not prove the key (or wanted to prove one to an agent without).
fn refuse_auth(shared: &Shared, control: &mut Control, peer: SocketAddr, err: &ProbeError) {
    control.send_error_best_effort(err);
    shared.auth_failures.fetch_add(1, Ordering::SeqCst);
    drop_conn(shared, peer, &err.to_string());
}

fn drop_conn(shared: &Shared, peer: SocketAddr, why: &str) {
    shared.dropped.fetch_add(1, Ordering::SeqCst);
    shared.log(&format!("{peer}: dropped: {why}"));
}

/// A data connection: read the rest of its hello and hand it to the test with that cookie.
fn attach_data(
    shared: &Shared,
    mut stream: TcpStream,
    peer: SocketAddr,
    magic: [u8; 4],
    pass: Pass,
) {
    let mut hello = [0u8; HELLO_LEN];
    hello[..4].copy_from_slice(&magic);
    if let Err(e) = stream.read_exact(&mut hello[4..]) {
        drop_conn(shared, peer, &format!("incomplete data hello ({e})"));
        return;
    }
    let h = match Hello::parse(&hello) {
        Ok(h) if !h.udp => h,
        Ok(_) => {
            drop_conn(shared, peer, "UDP hello on a TCP connection");
            return;
        }
        Err(e) => {
            drop_conn(shared, peer, &format!("bad data hello: {e}"));
            return;
        }
    };
    let tx = match shared.registry.lock() {
        Ok(reg) => reg.get(&h.cookie).map(|p| p.data_tx.clone()),
        Err(_) => None,
    };
    match tx {
        Some(_) if !pass.identified() => {
            drop_conn(
                shared,
                peer,
                "closed by the lobby before its hello was read",
            );
        }
        Some(tx) => {
            // A test's data stream: silence is now bounded by the idle time-out.
            let _ = stream.set_read_timeout(Some(shared.config.limits.idle_timeout));
            if tx.send((h.stream, stream)).is_err() {
                drop_conn(shared, peer, "data connection for a test that has ended");
            }
        }
        None => drop_conn(shared, peer, "data connection with an unknown cookie"),
    }
}

/// Reserves a test slot, registers the cookie, dispatches on the kind of test, and reports. A
/// relayed test takes a slot like any other: it is bounded by the same limits.
fn run_test(shared: &Arc<Shared>, mut control: Control, peer: SocketAddr, job: Job) {
    let limits = &shared.config.limits;
    // A client that starts its next test right after the previous one ended may arrive before
    // that test's thread has released its slot: wait a little before calling the agent busy.
    let reserve_by = std::time::Instant::now() + std::time::Duration::from_millis(500);
    let reserved = loop {
        let ok = shared
            .active_tests
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < limits.max_tests).then_some(n + 1)
            })
            .is_ok();
        if ok || std::time::Instant::now() >= reserve_by {
            break ok;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    if !reserved {
        let err = ProbeError::Busy(format!(
            "the agent is already running its maximum of {} tests; try again later",
            limits.max_tests
        ));
        control.send_error_best_effort(&err);
        shared.tests_failed.fetch_add(1, Ordering::SeqCst);
        shared.log(&format!("{peer}: refused: {err}"));
        return;
    }
    let test_id = shared.next_test_id.fetch_add(1, Ordering::SeqCst);
    let cookie = match new_cookie() {
        Ok(c) => c,
        Err(err) => {
            control.send_error_best_effort(&err);
            shared.active_tests.fetch_sub(1, Ordering::SeqCst);
            shared.tests_failed.fetch_add(1, Ordering::SeqCst);
            shared.log(&format!("{peer}: test {test_id}: {err}"));
            return;
        }
    };
    let (data_tx, data_rx) = mpsc::channel();
    if let Ok(mut reg) = shared.registry.lock() {
        reg.insert(cookie, Pending { data_tx });
    }
    shared.log(&format!("{peer}: test {test_id}: {}", describe(&job)));
    let mut ctx = TestContext::new(test_id, cookie, control, data_rx, shared);
    let result = match &job {
        Job::Test(TestSpec::Tput(t)) => crate::tput::agent::serve(&mut ctx, t),
        Job::Test(TestSpec::Rr(r)) => crate::rr::agent::serve(&mut ctx, r),
        Job::Test(TestSpec::Mp(m)) => crate::mp::agent::serve(&mut ctx, m),
        Job::Relay(r) => crate::relay::agent::serve(&mut ctx, r),
    };
    if let Ok(mut reg) = shared.registry.lock() {
        reg.remove(&cookie);
    }
    // The test's streams are gone (its session aborted or finished): free the slot before the
    // client hears the outcome, so that it can start its next test at once.
    shared.active_tests.fetch_sub(1, Ordering::SeqCst);
    match result {
        Ok(()) => {
            shared.tests_ok.fetch_add(1, Ordering::SeqCst);
            shared.log(&format!("{peer}: test {test_id}: done"));
        }
        Err(e) => {
            ctx.control.send_error_best_effort(&e);
            shared.tests_failed.fetch_add(1, Ordering::SeqCst);
            shared.log(&format!("{peer}: test {test_id}: failed: {e}"));
        }
    }
    ctx.control.shutdown();
    drop(ctx);
    if shared.config.once {
        shared.request_shutdown();
    }
}

fn describe(job: &Job) -> String {
    let tput = |t: &crate::proto::TputSpec| {
        format!(
            "tput {:?} {:?} x{} len {}",
            t.transport, t.direction, t.streams, t.len
        )
    };
    match job {
        Job::Test(TestSpec::Tput(t)) => tput(t),
        Job::Test(TestSpec::Rr(_)) => "rr".to_string(),
        Job::Test(TestSpec::Mp(m)) => format!("mp rank {} of {}", m.rank, m.ranks),
        Job::Relay(r) => match &r.test {
            RelayTest::Tput(t) => format!("relay to {}: {}", r.target, tput(t)),
            RelayTest::Rr(_) => format!("relay to {}: rr", r.target),
        },
    }
}

/// 16 random bytes from the kernel (getrandom): keeps strangers' data connections apart.
fn new_cookie() -> Result<[u8; 16], ProbeError> {
    let mut c = [0u8; 16];
    weft_gate::auth::random_bytes(&mut c).map_err(|e| ProbeError::io("reading random bytes", e))?;
    Ok(c)
}
