//! Counters a connection keeps: what it sent and received, how it recovered from loss.

/// Cumulative counters of one connection. Sizes in bytes, counts in segments or events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Segments emitted by `poll_transmit`, all kinds.
    pub segments_sent: u64,
    /// Segments emitted that carried payload.
    pub data_segments_sent: u64,
    /// Payload bytes emitted, retransmissions included.
    pub bytes_sent: u64,
    /// Segments emitted that repeated sequence space already sent.
    pub segments_retransmitted: u64,
    /// Payload bytes of those segments.
    pub bytes_retransmitted: u64,
    /// Segments emitted without payload, SYN or FIN (pure ACKs and window updates).
    pub pure_acks_sent: u64,
    /// ACKs sent because the delayed-ACK timer expired.
    pub delayed_acks: u64,
    /// Segments handed to `handle_segment`.
    pub segments_received: u64,
    /// Segments whose payload arrived above the next expected byte.
    pub out_of_order_segments: u64,
    /// Segments whose payload had all been received before.
    pub duplicate_segments: u64,
    /// Duplicate ACKs received (RFC 5681's definition).
    pub dup_acks_received: u64,
    /// Retransmission timer expiries (data and SYN).
    pub timeouts: u64,
    /// Time-outs found spurious (an ACK echoed the original's timestamp) and undone.
    pub spurious_timeouts: u64,
    /// Fast retransmits (entries into loss recovery by duplicate ACKs or SACK).
    pub fast_retransmits: u64,
    /// Retransmissions found lost during SACK recovery (a segment sent after them was SACKed)
    /// and sent again.
    pub lost_retransmissions: u64,
    /// Partial acknowledgements during NewReno or SACK recovery.
    pub partial_acks: u64,
    /// Zero-window probes sent.
    pub window_probes: u64,
    /// Application bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// Bytes received in order (ready for the application or already read).
    pub bytes_delivered: u64,
    /// Bytes the application read.
    pub bytes_read: u64,
    /// Segments dropped because the out-of-order store was full.
    pub reassembly_overflows: u64,
    /// Data segments received marked Congestion Experienced (ECN).
    pub ce_received: u64,
    /// ACKs received echoing a mark (ECE).
    pub ece_received: u64,
    /// Window reductions made for ECN echoes (at most one per window of data).
    pub ecn_reductions: u64,
}
