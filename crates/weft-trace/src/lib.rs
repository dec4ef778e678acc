//! Capture reading and traffic analysis for `weft trace`.
//!
//! - [`CaptureReader`] streams pcap and pcapng (gzipped or not) in constant memory, one
//!   [`Packet`] at a time, and stops at the first corrupt or truncated record with a
//!   [`CaptureError`] naming its byte offset.
//! - [`decode()`] turns a frame of any supported link type into a [`PacketInfo`].
//! - [`util`] is the Sandia Sniffer analysis (utilisation series, smoothing, histogram, time above
//!   thresholds, protocol mix, talkers); [`flows`] the per-flow summary; [`latency`] the
//!   two-point latency breakdown of the GIGAswitch study; [`live`] samples an interface.
//!
//! Every analysis returns an [`Outcome`]: its result over whatever was read, and the error that
//! stopped reading early, if any (the result is then partial).

pub mod capture;
pub mod decode;
pub mod error;
pub mod flows;
mod input;
pub mod latency;
pub mod live;
pub mod mix;
mod pcapng;
pub mod synth;
pub mod tech;
pub mod util;
pub mod wire;

pub use capture::{CaptureReader, Format, Packet};
pub use decode::{PacketInfo, decode};
pub use error::{CaptureError, CaptureErrorKind};

/// The result of analysing a capture, complete or partial.
#[derive(Clone, Debug)]
pub struct Outcome<T> {
    /// What the analysis found in the packets read.
    pub result: T,
    /// Packets read.
    pub packets: u64,
    /// Bytes of capture read (decompressed, for gzip input).
    pub bytes_read: u64,
    /// Set when reading stopped early: the result covers only the packets before it.
    pub error: Option<CaptureError>,
}

impl<T> Outcome<T> {
    /// True if the capture could not be read to its end.
    pub fn partial(&self) -> bool {
        self.error.is_some()
    }
}

/// Feeds every packet of `reader` to `f` with its decoded headers, until the end or an error.
pub fn for_each_packet(
    reader: &mut CaptureReader,
    mut f: impl FnMut(&Packet<'_>, &PacketInfo),
) -> Option<CaptureError> {
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                let info = decode(p.linktype, p.data);
                f(&p, &info);
            }
            Ok(None) => return None,
            Err(e) => return Some(e),
        }
    }
}

/// Runs the utilisation analysis over a capture.
pub fn analyse_util(
    reader: &mut CaptureReader,
    cfg: util::UtilConfig,
) -> Outcome<util::UtilReport> {
    let mut a = util::UtilAnalyzer::new(cfg);
    let error = for_each_packet(reader, |p, info| {
        a.add(p.ts_ns, p.orig_len, p.linktype, info)
    });
    Outcome {
        result: a.finish(),
        packets: reader.packets(),
        bytes_read: reader.offset(),
        error,
    }
}
