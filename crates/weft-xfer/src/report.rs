//! Result documents (`kind = "xfer"`, engine `real`) with the time breakdown of the RIACS study's
//! Table 2: the share of the sender's elapsed time spent synchronising with the receiver, on disk
//! I/O and on data transfer.

use serde_json::{Value, json};
use weft_model::Rate;
use weft_report::{Engine, ResultDoc};

use crate::net::recv::SessionReport;
use crate::net::send::SendReport;

/// CPU seconds per gigabit moved (`cpu` over `bytes`): how many cores it takes per Gbit/s.
/// `None` when nothing moved.
pub fn cpu_per_gbit(cpu: weft_model::Duration, bytes: u64) -> Option<f64> {
    (bytes > 0).then(|| cpu.as_secs_f64() / (bytes as f64 * 8.0 / 1e9))
}

/// The checksum as the summaries name it: `blake3`, `blake3-keyed`, `xxh3`, or null in the
/// unreliable modes.
fn checksum_name(c: Option<crate::proto::BlockHasher>) -> Value {
    match c {
        Some(h) if h.keyed() => json!(format!("{}-keyed", h.kind().name())),
        Some(h) => json!(h.kind().name()),
        None => Value::Null,
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 1000.0 / whole as f64).round() / 10.0
    }
}

/// The sender's summary. `params` describes the run as requested.
pub fn send_doc(r: &SendReport, params: Value) -> ResultDoc {
    let mut doc = ResultDoc::new("xfer", Engine::Real);
    doc.params = params;
    let el = r.elapsed.as_nanos();
    let moved = r.stats.bytes_done;
    let s = &r.stats;
    let loss_frac = if s.packets_sent == 0 {
        0.0
    } else {
        (s.packets_lost + s.packets_nacked) as f64 / s.packets_sent as f64
    };
    let other = el.saturating_sub(r.sync.as_nanos() + r.disk.as_nanos() + r.transfer.as_nanos());
    doc.summary = json!({
        "role": "sender",
        "files": r.files.len(),
        "files_ok": r.files.iter().filter(|f| f.ok).count(),
        "bytes": moved,
        "elapsed_ns": el,
        "goodput_bps": Rate::from_bytes_over(moved, r.elapsed).as_bps(),
        "goodput_mbps": Rate::from_bytes_over(moved, r.elapsed).as_mbps_f64(),
        "sync_pct": pct(r.sync.as_nanos(), el),
        "disk_pct": pct(r.disk.as_nanos(), el),
        "transfer_pct": pct(r.transfer.as_nanos(), el),
        "other_pct": pct(other, el),
        "hash_ns": r.hash.as_nanos(),
        "packets_sent": s.packets_sent,
        "packets_retransmitted": s.packets_retransmitted,
        "packets_lost": s.packets_lost,
        "packets_nacked": s.packets_nacked,
        "packets_dup_at_receiver": s.packets_dup,
        "loss_fraction": loss_frac,
        "final_rate_bps": r.final_rate,
        "packet_size": r.packet_size,
        "window": r.window,
        "stripes": r.stripes,
        "sessions": r.sessions,
        "checksum": checksum_name(r.checksum),
        "cpu_s": r.cpu.as_secs_f64(),
        "cpu_s_per_gbit": cpu_per_gbit(r.cpu, moved),
        "receivers": r.receivers.iter().map(|p| json!({
            "addr": p.addr.to_string(),
            "stripe": p.stripe.map(|s| json!({ "part": s.part, "parts": s.parts, "transfer": format!("{:016x}", s.transfer) })),
            "buffers": p.buffers,
            "bytes": p.bytes,
            "msg": p.msg,
        })).collect::<Vec<_>>(),
    });
    doc.samples = r
        .files
        .iter()
        .map(|f| json!({ "name": f.name, "size": f.size, "ok": f.ok, "msg": f.msg, "resumed_buffers": f.resumed_buffers }))
        .collect();
    doc
}

/// One receiver session's summary.
pub fn recv_doc(r: &SessionReport) -> ResultDoc {
    let mut doc = ResultDoc::new("xfer", Engine::Real);
    doc.params =
        json!({ "role": "receiver", "mode": r.mode.map(|m| format!("{m:?}").to_lowercase()) });
    let s = &r.stats;
    doc.summary = json!({
        "role": "receiver",
        "peer": r.peer.map(|p| p.to_string()),
        "elapsed_ns": r.elapsed.as_nanos(),
        "files": r.files.len(),
        "files_ok": r.files.iter().filter(|f| f.ok).count(),
        "packets_received": s.packets_received,
        "packets_dup": s.packets_dup,
        "packets_stray": s.packets_stray,
        "packets_bad": s.packets_bad,
        "packets_lost": s.packets_lost,
        "packets_nacked": s.packets_nacked,
        "hash_failures": s.hash_failures,
        "hashes_not_kept": r.hashes_not_kept,
        "bytes": r.bytes_written,
        "checksum": checksum_name(r.checksum),
        "cpu_s": r.cpu.as_secs_f64(),
        "cpu_s_per_gbit": cpu_per_gbit(r.cpu, r.bytes_written),
        "error": r.error,
    });
    doc.samples = r
        .files
        .iter()
        .map(
            |f| json!({ "name": f.name, "size": f.size, "ok": f.ok, "msg": f.msg, "gaps": f.gaps }),
        )
        .collect();
    doc
}
