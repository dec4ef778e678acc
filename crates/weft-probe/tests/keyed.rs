//! A keyed agent: the client proves first, and after the handshake every control message is
//! tagged, so nothing can be injected into an authenticated connection (issue 32).
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use weft_probe::auth::Key;
use weft_probe::control::Control;
use weft_probe::proto::{AuthHello, AuthProof, Direction, Hex, Message, TestSpec, Transport};
use weft_probe::server::{Server, ServerConfig, ServerHandle};
use weft_probe::tput::TputConfig;

fn key() -> Key {
    Key::from_derived([42; 32])
}

fn keyed_agent() -> ServerHandle {
    let mut cfg = ServerConfig::loopback();
    cfg.key = Some(key());
    Server::bind(cfg).unwrap().spawn()
}

fn connect(h: &ServerHandle) -> Control {
    let c = Control::new(TcpStream::connect(h.local_addr()).unwrap(), 1 << 20);
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c
}

fn tput_spec() -> weft_probe::proto::TputSpec {
    let mut s = common::spec(Transport::Tcp, Direction::Forward, 0);
    s.amount = weft_probe::proto::Amount::Bytes(100_000);
    s
}

#[test]
fn the_agent_proves_nothing_to_a_client_that_has_not_proven_the_key() {
    let agent = keyed_agent();
    let mut c = connect(&agent);
    c.send(&Message::AuthHello(AuthHello {
        nonce: Hex([1; 16]),
    }))
    .unwrap();
    // The challenge is a nonce and nothing an offline guess could be checked against.
    let raw = c.recv().unwrap();
    let Message::AuthChallenge(ch) = &raw else {
        panic!("{raw:?}")
    };
    let body = String::from_utf8(Message::AuthChallenge(ch.clone()).body_json()).unwrap();
    assert_eq!(
        body,
        format!(r#"{{"nonce":"{}"}}"#, "_".repeat(0) + &hex(&ch.nonce.0))
    );
    // A wrong proof gets a refusal, not the agent's proof.
    c.send(&Message::AuthProof(AuthProof { mac: Hex([0; 32]) }))
        .unwrap();
    match c.recv_raw() {
        Ok(Message::Error(e)) => assert_eq!(e.code, "auth"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    agent.shutdown();
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn a_message_without_its_tag_after_the_handshake_ends_the_connection() {
    let agent = keyed_agent();
    // A proper handshake, then a request written past the tagging (as an attacker on the path
    // who let the handshake through would).
    let mut c = connect(&agent);
    weft_probe::auth::client_hello(&mut c, &key()).unwrap();
    let untagged = Message::Request(TestSpec::Tput(tput_spec())).to_bytes();
    c.stream().write_all(&untagged).unwrap();
    // The agent's proof arrives, then the refusal (tagged): no Accept.
    match c.recv() {
        Err(weft_probe::ProbeError::Auth(m)) => assert!(m.contains("tag"), "{m}"),
        other => panic!("expected the agent to refuse the untagged request, got {other:?}"),
    }
    // A tagged request on a fresh connection is served.
    let cfg = TputConfig {
        server: agent.local_addr(),
        spec: tput_spec(),
        connect_timeout: Duration::from_secs(5),
        key: Some(key()),
    };
    let r = weft_probe::tput::run(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.up.unwrap().receiver_bytes, 100_000);
    agent.shutdown();
}

#[test]
fn an_older_client_is_told_in_its_own_version_why_it_is_refused() {
    let agent = common::agent(Duration::from_secs(2));
    let mut s = TcpStream::connect(agent.local_addr()).unwrap();
    let mut v1 = Message::Request(TestSpec::Tput(tput_spec())).to_bytes();
    v1[4] = 1;
    s.write_all(&v1).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut answer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut s, &mut answer);
    assert_eq!(answer.get(4), Some(&1), "not framed as version 1");
    answer[4] = weft_probe::proto::VERSION;
    match Message::parse_bytes(&answer, 1 << 20).unwrap() {
        Message::Error(e) => {
            assert_eq!(e.code, "version");
            assert!(e.message.contains("protocol 2"), "{}", e.message);
        }
        m => panic!("{m:?}"),
    }
    agent.shutdown();
}
