//! The receiving side of the driver: frames parsed off each connection, a message's start
//! read straight into its receive where one waits for it, each message's bytes put where the
//! rank says (its receive, or kept as unexpected until the rank asks for them), and the control
//! frames (hello, bye, abort).

use super::*;

impl Engine {
    /// Parses and delivers whatever connection `ci` has; returns whether anything moved.
    pub(super) fn pump(&mut self, ci: usize, buf: &mut [u8]) -> Result<bool, MpError> {
        let mut moved = false;
        loop {
            match self.rx[ci] {
                Rx::Header => {
                    if self.conns[ci].staged().len() < HEADER_LEN {
                        if moved {
                            // A frame was just taken: let the caller see whether the step is
                            // complete before reading again (that read would find nothing).
                            return Ok(moved);
                        }
                        if let Some(at) = self.expected_large(ci) {
                            match self.read_into_receive(ci, at, buf)? {
                                Fill::Data(_) => {
                                    moved = true;
                                    continue;
                                }
                                Fill::WouldBlock => return Ok(moved),
                                Fill::Eof => return self.on_eof(ci).map(|()| moved),
                            }
                        }
                        match self.fill(ci)? {
                            Fill::Data(_) => {
                                moved = true;
                                continue;
                            }
                            Fill::WouldBlock => return Ok(moved),
                            Fill::Eof => return self.on_eof(ci).map(|()| moved),
                        }
                    }
                    let hdr =
                        Header::parse(self.conns[ci].staged()).map_err(|source| MpError::Wire {
                            rank: self.conn_peer[ci].unwrap_or(self.me),
                            source,
                        })?;
                    self.check_addressing(ci, &hdr)?;
                    self.conns[ci].consume(HEADER_LEN);
                    moved = true;
                    if hdr.kind == Kind::Data {
                        self.start_chunk(&hdr)?;
                        self.rx[ci] = Rx::Chunk { hdr, got: 0 };
                    } else {
                        self.rx[ci] = Rx::Control { hdr };
                    }
                }
                Rx::Chunk { hdr, got } => {
                    let len = hdr.len as usize;
                    if got == len {
                        self.end_chunk(&hdr);
                        self.rx[ci] = Rx::Header;
                        continue;
                    }
                    let staged = self.conns[ci].staged().len();
                    if staged > 0 {
                        let n = staged.min(len - got);
                        let src = hdr.src as usize;
                        let at = hdr.offset as usize + got;
                        let data = &self.conns[ci].staged()[..n];
                        match self.partial[src].map(|p| p.dest) {
                            Some(Dest::Recv(r)) => {
                                let o = r.offset + at;
                                buf[o..o + n].copy_from_slice(data);
                            }
                            _ => {
                                if let Some(u) = self.unexpected[src].back_mut() {
                                    u[at..at + n].copy_from_slice(data);
                                }
                            }
                        }
                        self.conns[ci].consume(n);
                        self.rx[ci] = Rx::Chunk { hdr, got: got + n };
                        moved = true;
                        continue;
                    }
                    if !self.conns[ci].may_read() {
                        // The last read emptied the socket: the rest comes after a readiness
                        // check (a `recv` now would find nothing).
                        return Ok(moved);
                    }
                    let remaining = len - got;
                    let r = if remaining >= DIRECT_READ {
                        let src = hdr.src as usize;
                        let at = hdr.offset as usize + got;
                        let dst: &mut [u8] = match self.partial[src].map(|p| p.dest) {
                            Some(Dest::Recv(r)) => {
                                let o = r.offset + at;
                                &mut buf[o..o + remaining]
                            }
                            _ => match self.unexpected[src].back_mut() {
                                Some(u) => &mut u[at..at + remaining],
                                None => &mut [],
                            },
                        };
                        let r = self.conns[ci].read_direct(dst);
                        if let Ok(Fill::Data(n)) = r {
                            self.rx[ci] = Rx::Chunk { hdr, got: got + n };
                        }
                        r
                    } else {
                        self.conns[ci].fill()
                    };
                    match r.map_err(|e| self.conn_error(ci, e))? {
                        Fill::Data(_) => moved = true,
                        Fill::WouldBlock => return Ok(moved),
                        Fill::Eof => return Err(self.closed_error(ci)),
                    }
                }
                Rx::Control { hdr } => {
                    let len = hdr.len as usize;
                    if self.conns[ci].staged().len() < len {
                        if !self.conns[ci].may_read() {
                            return Ok(moved);
                        }
                        match self.fill(ci)? {
                            Fill::Data(_) => {
                                moved = true;
                                continue;
                            }
                            Fill::WouldBlock => return Ok(moved),
                            Fill::Eof => return Err(self.closed_error(ci)),
                        }
                    }
                    let payload = self.conns[ci].staged()[..len].to_vec();
                    self.conns[ci].consume(len);
                    self.rx[ci] = Rx::Header;
                    moved = true;
                    self.on_control(&hdr, &payload)?;
                }
            }
        }
    }

    /// The region of the receive that the next message on connection `ci` will fill, if the
    /// connection carries one peer, is between messages, nothing of that peer's is queued
    /// ahead ([`Rank::next_receive`]), and the receive is large enough to be read straight
    /// into ([`DIRECT_READ`]).
    fn expected_large(&self, ci: usize) -> Option<Region> {
        let src = self.conn_peer[ci]?;
        if self.partial[src].is_some() {
            return None;
        }
        let at = self.rank.next_receive(src)?;
        (at.len >= DIRECT_READ).then_some(at)
    }

    /// Reads the next frame's header with the start of its payload going straight into `at`
    /// (see [`Conn::read_split`]); when the header is that message's, the frame continues as a
    /// chunk with those bytes already in place, otherwise they go back behind the header.
    fn read_into_receive(
        &mut self,
        ci: usize,
        at: Region,
        buf: &mut [u8],
    ) -> Result<Fill, MpError> {
        let need = HEADER_LEN - self.conns[ci].staged().len();
        let dst = &mut buf[at.offset..at.offset + at.len.min(SPLIT_MAX)];
        let r = self.conns[ci]
            .read_split(need, dst)
            .map_err(|e| self.conn_error(ci, e))?;
        let Fill::Data(n) = r else {
            return Ok(r);
        };
        if n <= need {
            return Ok(r);
        }
        let k = n - need;
        let hdr = Header::parse(self.conns[ci].staged()).map_err(|source| MpError::Wire {
            rank: self.conn_peer[ci].unwrap_or(self.me),
            source,
        })?;
        let src = hdr.src as usize;
        let expected = hdr.kind == Kind::Data
            && self.conn_peer[ci] == Some(src)
            && hdr.dst as usize == self.me
            && hdr.offset == 0
            && hdr.seq == self.rx_seq[src]
            && hdr.len == hdr.total
            && hdr.total as usize == at.len;
        if expected {
            self.conns[ci].consume(HEADER_LEN);
            self.start_chunk(&hdr)?;
            self.rx[ci] = Rx::Chunk { hdr, got: k };
        } else {
            self.conns[ci].restage(&buf[at.offset..at.offset + k]);
        }
        Ok(r)
    }

    fn fill(&mut self, ci: usize) -> Result<Fill, MpError> {
        self.conns[ci].fill().map_err(|e| self.conn_error(ci, e))
    }

    /// A connection ended between frames: fine once its peers said goodbye.
    fn on_eof(&mut self, ci: usize) -> Result<(), MpError> {
        let done = match self.conn_peer[ci] {
            Some(r) => self.bye[r],
            None => (0..self.ranks).all(|r| r == self.me || self.bye[r]),
        };
        if done {
            Ok(())
        } else {
            Err(self.closed_error(ci))
        }
    }

    fn check_addressing(&self, ci: usize, hdr: &Header) -> Result<(), MpError> {
        let src = hdr.src as usize;
        let ok_src = match self.conn_peer[ci] {
            Some(p) => src == p,
            None => src < self.ranks && src != self.me,
        };
        if !ok_src || hdr.dst as usize != self.me {
            return Err(MpError::Mismatch(format!(
                "rank {} received a frame from rank {} for rank {} on the connection of {}",
                self.me,
                hdr.src,
                hdr.dst,
                self.conn_peer[ci].map_or("its daemon".to_string(), |p| format!("rank {p}"))
            )));
        }
        Ok(())
    }

    fn on_control(&mut self, hdr: &Header, payload: &[u8]) -> Result<(), MpError> {
        let src = hdr.src as usize;
        match hdr.kind {
            Kind::Abort => Err(MpError::PeerAborted {
                rank: src,
                reason: String::from_utf8_lossy(payload).into_owned(),
            }),
            Kind::Bye => {
                self.bye[src] = true;
                Ok(())
            }
            Kind::Hello => {
                let h = wire::parse_hello(payload).ok_or_else(|| {
                    MpError::Mismatch(format!("rank {src} sent a malformed hello"))
                })?;
                self.hello[src] = Some(h);
                Ok(())
            }
            Kind::Data => Ok(()),
        }
    }

    /// The first chunk of a message decides where it goes, as the rank says
    /// ([`Rank::message_starts`]): its receive, or the unexpected queue.
    fn start_chunk(&mut self, hdr: &Header) -> Result<(), MpError> {
        let src = hdr.src as usize;
        if hdr.offset != 0 {
            return match self.partial[src] {
                Some(p)
                    if p.seq == hdr.seq
                        && p.got == hdr.offset as usize
                        && p.total == hdr.total as usize =>
                {
                    Ok(())
                }
                _ => Err(MpError::Mismatch(format!(
                    "rank {src} sent a chunk at offset {} of message {} that does not continue \
                     the message in progress",
                    hdr.offset, hdr.seq
                ))),
            };
        }
        if self.partial[src].is_some() {
            return Err(MpError::Mismatch(format!(
                "rank {src} started message {} before finishing the previous one",
                hdr.seq
            )));
        }
        if hdr.seq != self.rx_seq[src] {
            return Err(MpError::Mismatch(format!(
                "rank {src} sent message {} where {} was next: messages lost or reordered",
                hdr.seq, self.rx_seq[src]
            )));
        }
        self.rx_seq[src] = hdr.seq.wrapping_add(1);
        let total = hdr.total as usize;
        let dest = match self
            .rank
            .message_starts(src, total)
            .map_err(|e| MpError::Mismatch(e.to_string()))?
        {
            Some(at) => Dest::Recv(at),
            None => {
                if self.unexpected_bytes + total > MAX_UNEXPECTED {
                    return Err(MpError::Mismatch(format!(
                        "more than {} MiB of messages arrived before their receives: the ranks \
                         do not run the same plan",
                        MAX_UNEXPECTED >> 20
                    )));
                }
                self.unexpected_bytes += total;
                self.stats.unexpected += 1;
                let data = self.unexpected_buffer(total);
                self.unexpected[src].push_back(data);
                Dest::Unexpected
            }
        };
        self.partial[src] = Some(Partial {
            seq: hdr.seq,
            total,
            got: 0,
            dest,
        });
        Ok(())
    }

    fn end_chunk(&mut self, hdr: &Header) {
        let src = hdr.src as usize;
        let Some(mut p) = self.partial[src] else {
            return;
        };
        p.got += hdr.len as usize;
        if p.got < p.total {
            self.partial[src] = Some(p);
            return;
        }
        self.partial[src] = None;
        self.rank.message_ends(src);
    }

    /// A buffer of `len` bytes for an unexpected message: a spare one where one is kept (the
    /// largest, so that the pool does not grow), else a new one. A fresh allocation of a large
    /// message is the kernel's: a page fault and a cleared page for every 4 KiB as it fills
    /// (traced in the all-reduce and all-to-all at 1 MiB, where a third of the messages arrive
    /// before their receives), which a reused buffer does not pay.
    fn unexpected_buffer(&mut self, len: usize) -> Vec<u8> {
        let largest = (0..self.spare.len()).max_by_key(|&i| self.spare[i].capacity());
        let mut v = largest.map_or_else(Vec::new, |i| self.spare.swap_remove(i));
        v.truncate(len);
        v.resize(len, 0);
        v
    }
}
