//! Orderly close with FIN: both orders, a lost FIN, and TIME-WAIT.

use super::*;
use crate::tcp::{Flags, State};

/// Config with a short TIME-WAIT so the tests see it end.
fn quick() -> Config {
    Config {
        time_wait: ms(500),
        ..plain(1000)
    }
}

#[test]
fn the_side_that_closes_first_waits_in_time_wait() {
    let (ab, ba) = clean(ms(10));
    let mut s = pair(quick(), quick(), ab, ba);
    let mut app = bulk(10_000, true);
    let mut states = vec![];
    let mut finished_at = None;
    s.run_until(at_ms(2000), |s| {
        if states.last() != Some(&s.a.state()) {
            states.push(s.a.state());
        }
        app(s);
        // b closes its side 100 ms after reading everything: a waits in FIN-WAIT-2 meanwhile.
        if s.b.is_recv_finished() && finished_at.is_none() {
            finished_at = Some(s.now);
        }
        if finished_at.is_some_and(|t| s.now >= t + ms(100)) && s.b.state() == State::CloseWait {
            s.b.close();
        }
    });
    assert_eq!(s.b.stats().bytes_read, 10_000);
    assert_eq!(
        states,
        vec![
            State::SynSent,
            State::Established,
            State::FinWait1,
            State::FinWait2,
            State::TimeWait,
            State::Closed
        ]
    );
    assert_eq!(s.b.state(), State::Closed, "LAST-ACK ends at the final ACK");
    assert!(s.a.error().is_none() && s.b.error().is_none());
    let fins = s.trace.iter().filter(|x| x.2.has(Flags::FIN)).count();
    assert_eq!(fins, 2);
}

#[test]
fn simultaneous_close_goes_through_closing() {
    let (ab, ba) = clean(ms(10));
    let mut s = pair(quick(), quick(), ab, ba);
    let mut closed = false;
    let mut saw_closing = false;
    s.run_until(at_ms(2000), |s| {
        if !closed && s.a.state() == State::Established && s.b.state() == State::Established {
            s.a.close();
            s.b.close();
            closed = true;
        }
        saw_closing |= s.a.state() == State::Closing && s.b.state() == State::Closing;
    });
    assert!(saw_closing);
    assert_eq!((s.a.state(), s.b.state()), (State::Closed, State::Closed));
}

#[test]
fn a_lost_fin_is_retransmitted() {
    let (ab, ba) = clean(ms(10));
    let mut s = pair(quick(), quick(), ab, ba);
    let mut dropped = false;
    s.drop_if = Box::new(move |d, seg| {
        let drop = d == Dir::AtoB && seg.has(Flags::FIN) && !dropped;
        dropped |= drop;
        drop
    });
    let mut app = bulk(3000, true);
    s.run_until(at_ms(3000), |s| {
        app(s);
        if s.b.is_recv_finished() {
            s.b.close();
        }
    });
    assert_eq!(s.a.stats().timeouts, 1);
    assert_eq!((s.a.state(), s.b.state()), (State::Closed, State::Closed));
    assert_eq!(s.b.stats().bytes_read, 3000);
}
