//! The data-path payload: requests carry their sequence number (little-endian, truncated to the
//! message) in their first bytes, and every answer, echo or agent, carries the same bytes back.
//! That is how a UDP client tells the reply it waits for from a late one.

/// Bytes of the sequence number a request of `req` bytes answered by `resp` bytes carries back.
pub fn seq_len(req: usize, resp: usize) -> usize {
    req.min(resp).min(8)
}

/// A request buffer of `len` bytes with a recognisable filler after the sequence number.
pub fn request_buffer(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Writes `seq` into the first `k` bytes of `buf`.
pub fn put_seq(buf: &mut [u8], k: usize, seq: u64) {
    let bytes = seq.to_le_bytes();
    let k = k.min(buf.len()).min(8);
    if let (Some(dst), Some(src)) = (buf.get_mut(..k), bytes.get(..k)) {
        dst.copy_from_slice(src);
    }
}

/// Whether the first `k` bytes of `reply` carry `seq`.
pub fn has_seq(reply: &[u8], k: usize, seq: u64) -> bool {
    let bytes = seq.to_le_bytes();
    match (reply.get(..k), bytes.get(..k)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Fills an answer of `resp.len()` bytes to `req`: the first `seq_len` bytes of the request,
/// then filler. Used by the agent; never panics whatever the lengths.
pub fn answer_into(req: &[u8], resp: &mut [u8]) {
    let k = seq_len(req.len(), resp.len());
    if let (Some(dst), Some(src)) = (resp.get_mut(..k), req.get(..k)) {
        dst.copy_from_slice(src);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_round_trip_at_every_length() {
        for len in 1..=12 {
            let mut b = request_buffer(len);
            let k = seq_len(len, len);
            put_seq(&mut b, k, 0x0102_0304_0506_0708);
            assert!(has_seq(&b, k, 0x0102_0304_0506_0708));
            assert!(!has_seq(&b, k, 0x0102_0304_0506_0709));
            let mut ans = vec![0u8; 3];
            answer_into(&b, &mut ans);
            assert!(has_seq(&ans, seq_len(len, 3), 0x0102_0304_0506_0708));
        }
        assert!(!has_seq(&[], 1, 0));
        answer_into(&[], &mut []);
    }
}
