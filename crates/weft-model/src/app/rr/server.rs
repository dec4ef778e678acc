//! The server of request/response.

use std::collections::VecDeque;

use super::{Answer, Via, tag_len};
use crate::app::{Application, Input, Output, Tag};
use crate::time::Instant;

/// The server: answers each request of `request` bytes with `response` bytes, as `answer`
/// says; over datagrams, every client that asks.
#[derive(Clone, Debug)]
pub struct RrServer {
    request: u64,
    response: u64,
    answer: Answer,
    via: Via,
    /// Bytes of the current request read so far (streams, [`Answer::Whole`]).
    got: u64,
    /// Its first bytes, as far as they have come (streams with bytes): the answer carries
    /// them back.
    head: Vec<u8>,
    /// The answers to give, in order.
    out: VecDeque<Output>,
    answered: u64,
    /// Datagrams: only requests of exactly `request` bytes are answered.
    exact: bool,
    /// Datagrams not answered for their size.
    refused: u64,
}

impl RrServer {
    /// A server for requests of `request` bytes answered with `response` bytes, as `answer`
    /// says, via `via` (over datagrams the peer of [`Via::Datagram`] is not used: it answers
    /// whoever asks).
    pub fn new(request: u64, response: u64, answer: Answer, via: Via) -> Self {
        RrServer {
            request: request.max(1),
            response,
            answer,
            via,
            got: 0,
            head: Vec::new(),
            out: VecDeque::new(),
            answered: 0,
            exact: false,
            refused: 0,
        }
    }

    /// Over datagrams, answers only requests of exactly the request's size and counts the
    /// others in [`RrServer::refused`] (an agent facing the network; the simulator's clients
    /// send nothing else).
    pub fn exact_size(mut self) -> Self {
        self.exact = true;
        self
    }

    /// Datagrams not answered for their size ([`RrServer::exact_size`]).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// The bytes `d` of requests read on `stream`: each whole request answered with its
    /// first bytes' tag.
    fn requests(&mut self, stream: usize, mut d: &[u8]) {
        let k = tag_len(self.request, self.response);
        while !d.is_empty() {
            let take = ((self.request - self.got) as usize).min(d.len());
            if self.head.len() < k {
                let h = (k - self.head.len()).min(take);
                self.head.extend_from_slice(&d[..h]);
            }
            self.got += take as u64;
            d = &d[take..];
            if self.got == self.request {
                self.got = 0;
                self.answered += 1;
                let tag = Tag::read(&self.head, k);
                self.head.clear();
                self.out.push_back(Output::Write {
                    stream,
                    len: self.response,
                    tag,
                });
            }
        }
    }

    /// Requests answered ([`Answer::Whole`]), or reads written back ([`Answer::Echo`]).
    pub fn answered(&self) -> u64 {
        self.answered
    }
}

impl Application for RrServer {
    fn handle_input(&mut self, _now: Instant, input: Input<'_>) {
        match (input, self.via, self.answer) {
            (Input::Read { stream, len, .. }, Via::Stream, Answer::Echo) => {
                self.answered += 1;
                self.out.push_back(Output::Echo { stream, len });
            }
            (
                Input::Read {
                    stream,
                    len,
                    data: None,
                },
                Via::Stream,
                Answer::Whole,
            ) => {
                self.got += len;
                while self.got >= self.request {
                    self.got -= self.request;
                    self.answered += 1;
                    self.out.push_back(Output::Write {
                        stream,
                        len: self.response,
                        tag: None,
                    });
                }
            }
            (
                Input::Read {
                    stream,
                    data: Some(d),
                    ..
                },
                Via::Stream,
                Answer::Whole,
            ) => self.requests(stream, d),
            (Input::Datagram { len, .. }, Via::Datagram(_), _)
                if self.exact && len != self.request =>
            {
                self.refused += 1;
            }
            (Input::Datagram { peer, .. }, Via::Datagram(_), _) => {
                self.answered += 1;
                let tag = input.tag(tag_len(self.request, self.response));
                self.out.push_back(Output::Send {
                    peer,
                    len: self.response,
                    tag,
                });
            }
            _ => {}
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self, _now: Instant) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram(len: u64) -> Input<'static> {
        Input::Datagram {
            peer: 3,
            len,
            tag: None,
            data: None,
        }
    }

    #[test]
    fn an_exact_server_answers_only_requests_of_the_size_and_counts_the_others() {
        let mut loose = RrServer::new(64, 32, Answer::Whole, Via::Datagram(0));
        let mut exact = loose.clone().exact_size();
        for s in [&mut loose, &mut exact] {
            for len in [63, 64, 65] {
                s.handle_input(Instant(1), datagram(len));
            }
        }
        let answers = |s: &mut RrServer| std::iter::from_fn(|| s.poll_output(Instant(1))).count();
        assert_eq!((answers(&mut loose), loose.refused()), (3, 0));
        assert_eq!((answers(&mut exact), exact.refused()), (1, 2));
        assert_eq!(exact.answered(), 1);
    }
}
