//! Wire utilisation in the manner of the Sandia Sniffer study: bytes on the wire summed per bin
//! (10 s), divided by what the link could carry in a bin; smoothed by a trailing moving average
//! (5 min); a histogram in 10% bins; the fraction of time above thresholds; the longest runs above
//! them; the protocol and port mix; the top talkers.

use std::net::IpAddr;

use serde::Serialize;
use weft_model::{Duration, Rate};

use crate::decode::{Net, PacketInfo};
use crate::mix::{Mix, MixAcc};
use crate::tech::Framing;
use rustc_hash::FxHashMap;

/// Settings of a utilisation analysis.
#[derive(Clone, Debug)]
pub struct UtilConfig {
    /// Link rate the utilisation is relative to, bits per second.
    pub link_rate: Rate,
    /// How each packet is charged to the link.
    pub framing: Framing,
    /// Sample bin (the Sniffer's 10 s).
    pub bin: Duration,
    /// Smoothing window (the study's 5 min), rounded to whole bins.
    pub smooth: Duration,
    /// Thresholds, in percent of the link rate.
    pub above: Vec<f64>,
    /// How many top ports, talkers and runs to report.
    pub top: usize,
    /// Bins past the first beyond which packets are not counted but reported as out of range
    /// (a corrupt timestamp must not ask for a huge series: 16 bytes per bin are kept).
    pub max_bins: u64,
    /// Distinct hosts tracked for the talker table before new ones are lumped together
    /// (`--max-hosts`; what is left out is `hosts_untracked_bytes`).
    pub max_hosts: usize,
    /// IP datagrams whose first fragment's ports are remembered for their later fragments
    /// (`--max-fragments`; what is left out is in `mix.fragment_table`).
    pub max_fragments: usize,
}

impl UtilConfig {
    /// The Sandia settings (10 s bins, 5 min smoothing, thresholds 30% and 50%) at `link_rate`.
    pub fn sandia(link_rate: Rate, framing: Framing) -> Self {
        UtilConfig {
            link_rate,
            framing,
            bin: Duration::from_secs(10),
            smooth: Duration::from_secs(300),
            above: vec![30.0, 50.0],
            top: 10,
            // 4M bins: 64 MiB at most; 463 days of 10 s bins, 46 days of 1 s bins.
            max_bins: 4_000_000,
            max_hosts: 1 << 20,
            max_fragments: crate::mix::FRAG_TABLE_MAX,
        }
    }
}

#[derive(Clone, Copy, Default)]
struct BinAcc {
    wire_bytes: u64,
    packets: u64,
}

#[derive(Clone, Copy, Default)]
struct HostAcc {
    tx_bytes: u64,
    rx_bytes: u64,
    tx_packets: u64,
    rx_packets: u64,
}

/// Accumulates packets; [`UtilAnalyzer::finish`] computes the report.
pub struct UtilAnalyzer {
    cfg: UtilConfig,
    first_bin: Option<u64>,
    bins: Vec<BinAcc>,
    mix: MixAcc,
    hosts: FxHashMap<IpAddr, HostAcc>,
    hosts_untracked_bytes: u64,
    packets: u64,
    bytes: u64,
    wire_bytes: u64,
    first_ts: u64,
    last_ts: u64,
    out_of_range: u64,
}

impl UtilAnalyzer {
    /// A fresh analysis.
    pub fn new(cfg: UtilConfig) -> Self {
        let max_fragments = cfg.max_fragments;
        UtilAnalyzer {
            cfg,
            first_bin: None,
            bins: Vec::new(),
            mix: MixAcc::new(max_fragments),
            hosts: FxHashMap::default(),
            hosts_untracked_bytes: 0,
            packets: 0,
            bytes: 0,
            wire_bytes: 0,
            first_ts: u64::MAX,
            last_ts: 0,
            out_of_range: 0,
        }
    }

    /// Counts one packet seen at `ts_ns` of `orig_len` bytes on link type `link`.
    #[inline]
    pub fn add(&mut self, ts_ns: u64, orig_len: u32, link: u16, info: &PacketInfo) {
        let bin_ns = self.cfg.bin.as_nanos().max(1);
        let b = ts_ns / bin_ns;
        let first = *self.first_bin.get_or_insert(b);
        let Some(idx) = b.checked_sub(first).filter(|&i| i < self.cfg.max_bins) else {
            self.out_of_range += 1;
            return;
        };
        let idx = idx as usize;
        if idx >= self.bins.len() {
            self.bins.resize(idx + 1, BinAcc::default());
        }
        let wire = self.cfg.framing.wire_bytes(link, orig_len, info);
        // `idx < bins.len()` was just ensured.
        if let Some(acc) = self.bins.get_mut(idx) {
            acc.wire_bytes += wire;
            acc.packets += 1;
        }
        self.packets += 1;
        self.bytes += orig_len as u64;
        self.wire_bytes += wire;
        self.first_ts = self.first_ts.min(ts_ns);
        self.last_ts = self.last_ts.max(ts_ns);
        self.mix.add(orig_len as u64, info);
        if matches!(info.net, Net::Ipv4 | Net::Ipv6) {
            self.host(info.src, orig_len as u64, true);
            self.host(info.dst, orig_len as u64, false);
        }
    }

    /// Counts `wire_bytes` and `packets` observed in the bin containing `t_ns` without packet
    /// detail (live sampling from interface counters).
    pub fn add_bytes(&mut self, t_ns: u64, wire_bytes: u64, packets: u64) {
        let bin_ns = self.cfg.bin.as_nanos().max(1);
        let b = t_ns / bin_ns;
        let first = *self.first_bin.get_or_insert(b);
        let Some(idx) = b.checked_sub(first).filter(|&i| i < self.cfg.max_bins) else {
            self.out_of_range += packets;
            return;
        };
        let idx = idx as usize;
        if idx >= self.bins.len() {
            self.bins.resize(idx + 1, BinAcc::default());
        }
        if let Some(acc) = self.bins.get_mut(idx) {
            acc.wire_bytes += wire_bytes;
            acc.packets += packets;
        }
        self.packets += packets;
        self.bytes += wire_bytes;
        self.wire_bytes += wire_bytes;
        self.first_ts = self.first_ts.min(t_ns);
        self.last_ts = self.last_ts.max(t_ns);
    }

    #[inline]
    fn host(&mut self, a: IpAddr, bytes: u64, tx: bool) {
        let n = self.hosts.len();
        let h = match self.hosts.get_mut(&a) {
            Some(h) => h,
            None if n < self.cfg.max_hosts => self.hosts.entry(a).or_default(),
            None => {
                self.hosts_untracked_bytes += bytes;
                return;
            }
        };
        if tx {
            h.tx_bytes += bytes;
            h.tx_packets += 1;
        } else {
            h.rx_bytes += bytes;
            h.rx_packets += 1;
        }
    }

    /// Computes the report.
    pub fn finish(self) -> UtilReport {
        let cfg = &self.cfg;
        let bin_ns = cfg.bin.as_nanos().max(1);
        let k = (cfg.smooth.as_nanos() / bin_ns).max(1) as usize;
        // Capacity of one bin, in bits (kept as a u128 product for exact histogram bins).
        let cap_bits_x1e9 = cfg.link_rate.0 as u128 * bin_ns as u128;
        let util_of = |wire: u64| -> f64 {
            if cap_bits_x1e9 == 0 {
                0.0
            } else {
                (wire as f64 * 8.0 * 1e9) / cap_bits_x1e9 as f64
            }
        };
        let start_ns = self.first_bin.unwrap_or(0) * bin_ns;
        let mut samples = Vec::with_capacity(self.bins.len());
        let mut window = 0u64;
        let mut hist = [0u64; 10];
        let mut hist_s = [0u64; 10];
        let mut over_100 = 0u64;
        for (i, b) in self.bins.iter().enumerate() {
            window += b.wire_bytes;
            if i >= k {
                window -= self.bins[i - k].wire_bytes;
            }
            let n = (i + 1).min(k) as u64;
            let util = util_of(b.wire_bytes);
            let util_smooth = util_of(window) / n as f64;
            let tenths = (b.wire_bytes as u128 * 8 * 10 * 1_000_000_000)
                .checked_div(cap_bits_x1e9)
                .unwrap_or(0);
            if tenths > 10
                || (tenths == 10 && b.wire_bytes as u128 * 8 * 1_000_000_000 > cap_bits_x1e9)
            {
                over_100 += 1;
            }
            hist[(tenths as usize).min(9)] += 1;
            hist_s[((util_smooth * 10.0).floor().max(0.0) as usize).min(9)] += 1;
            samples.push(Sample {
                t_ns: start_ns + i as u64 * bin_ns,
                wire_bytes: b.wire_bytes,
                packets: b.packets,
                util,
                util_smooth,
            });
        }
        let n = samples.len().max(1) as f64;
        let frac = |h: &[u64; 10]| h.map(|c| c as f64 / n);
        let above = cfg
            .above
            .iter()
            .map(|&thr| above(&samples, thr, bin_ns, cfg.top))
            .collect();
        let mean_util = if samples.is_empty() {
            0.0
        } else {
            util_of(self.wire_bytes) / samples.len() as f64
        };
        let mut talkers: Vec<Talker> = self
            .hosts
            .iter()
            .map(|(a, h)| Talker {
                addr: *a,
                tx_bytes: h.tx_bytes,
                rx_bytes: h.rx_bytes,
                tx_packets: h.tx_packets,
                rx_packets: h.rx_packets,
            })
            .collect();
        talkers.sort_by(|a, b| {
            (b.tx_bytes + b.rx_bytes)
                .cmp(&(a.tx_bytes + a.rx_bytes))
                .then(a.addr.cmp(&b.addr))
        });
        talkers.truncate(cfg.top);
        UtilReport {
            link_rate_bps: cfg.link_rate.0,
            framing: cfg.framing.clone(),
            bin_ns,
            smooth_bins: k as u64,
            start_ns,
            packets: self.packets,
            bytes: self.bytes,
            wire_bytes: self.wire_bytes,
            first_ts_ns: if self.packets == 0 { 0 } else { self.first_ts },
            last_ts_ns: self.last_ts,
            out_of_range_packets: self.out_of_range,
            mean_util,
            peak_util: samples.iter().map(|s| s.util).fold(0.0, f64::max),
            peak_util_smooth: samples.iter().map(|s| s.util_smooth).fold(0.0, f64::max),
            histogram: hist,
            histogram_frac: frac(&hist),
            histogram_smooth_frac: frac(&hist_s),
            bins_over_100pct: over_100,
            above,
            mix: self.mix.finish(cfg.top),
            talkers,
            hosts_seen: self.hosts.len() as u64,
            hosts_untracked_bytes: self.hosts_untracked_bytes,
            samples,
        }
    }
}

fn above(samples: &[Sample], thr: f64, bin_ns: u64, top: usize) -> Above {
    let t = thr / 100.0;
    let n = samples.len().max(1) as f64;
    let raw = samples.iter().filter(|s| s.util > t).count();
    let smooth = samples.iter().filter(|s| s.util_smooth > t).count();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < samples.len() {
        if samples[i].util_smooth > t {
            let start = i;
            while i < samples.len() && samples[i].util_smooth > t {
                i += 1;
            }
            let s = &samples[start..i];
            runs.push(Run {
                start_ns: samples[start].t_ns,
                duration_ns: (i - start) as u64 * bin_ns,
                mean_util: s.iter().map(|x| x.util).sum::<f64>() / s.len() as f64,
                peak_util: s.iter().map(|x| x.util).fold(0.0, f64::max),
            });
        } else {
            i += 1;
        }
    }
    let runs_count = runs.len() as u64;
    runs.sort_by(|a, b| {
        b.duration_ns
            .cmp(&a.duration_ns)
            .then(a.start_ns.cmp(&b.start_ns))
    });
    runs.truncate(top);
    Above {
        threshold_pct: thr,
        frac_time_raw: raw as f64 / n,
        frac_time_smooth: smooth as f64 / n,
        runs_count,
        longest_runs: runs,
    }
}

/// One bin of the utilisation series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Start of the bin, nanoseconds since the epoch.
    pub t_ns: u64,
    /// Bytes on the wire in the bin (with the framing charged).
    pub wire_bytes: u64,
    /// Packets in the bin.
    pub packets: u64,
    /// Utilisation of the bin, fraction of the link rate.
    pub util: f64,
    /// Trailing moving average of `util` over the smoothing window (fewer bins at the start).
    pub util_smooth: f64,
}

/// A run of consecutive smoothed samples above a threshold.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    /// Start of the first bin of the run, ns since the epoch.
    pub start_ns: u64,
    /// Length of the run, ns.
    pub duration_ns: u64,
    /// Mean raw utilisation over the run, fraction.
    pub mean_util: f64,
    /// Highest raw utilisation in the run, fraction.
    pub peak_util: f64,
}

/// Time above one threshold.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Above {
    /// Threshold, percent of the link rate.
    pub threshold_pct: f64,
    /// Fraction of raw bins strictly above the threshold.
    pub frac_time_raw: f64,
    /// Fraction of smoothed samples strictly above it.
    pub frac_time_smooth: f64,
    /// Number of runs of smoothed samples above it.
    pub runs_count: u64,
    /// The longest runs, longest first.
    pub longest_runs: Vec<Run>,
}

/// Bytes to and from one host.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Talker {
    /// Address.
    pub addr: IpAddr,
    /// Bytes sent (captured frame lengths).
    pub tx_bytes: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Packets received.
    pub rx_packets: u64,
}

/// The result of a utilisation analysis.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UtilReport {
    /// Link rate, bits per second.
    pub link_rate_bps: u64,
    /// Framing charged.
    pub framing: Framing,
    /// Bin length, ns.
    pub bin_ns: u64,
    /// Smoothing window, in bins.
    pub smooth_bins: u64,
    /// Start of the first bin (bins are aligned to multiples of the bin length since the epoch), ns.
    pub start_ns: u64,
    /// Packets counted.
    pub packets: u64,
    /// Bytes counted (recorded frame lengths).
    pub bytes: u64,
    /// Bytes on the wire with framing.
    pub wire_bytes: u64,
    /// First packet time, ns since the epoch.
    pub first_ts_ns: u64,
    /// Last packet time, ns since the epoch.
    pub last_ts_ns: u64,
    /// Packets dropped for timestamps before the first bin or implausibly far after it.
    pub out_of_range_packets: u64,
    /// Mean utilisation over all bins, fraction.
    pub mean_util: f64,
    /// Highest raw bin, fraction.
    pub peak_util: f64,
    /// Highest smoothed sample, fraction.
    pub peak_util_smooth: f64,
    /// Raw bins per 10% utilisation bin ([0,10%), ..., [90%,100%] and above).
    pub histogram: [u64; 10],
    /// The same as fractions of all bins.
    pub histogram_frac: [f64; 10],
    /// Histogram of the smoothed series, fractions.
    pub histogram_smooth_frac: [f64; 10],
    /// Raw bins above 100% (a link rate set too low, or a capture of several links).
    pub bins_over_100pct: u64,
    /// Time above each threshold.
    pub above: Vec<Above>,
    /// Protocol and port mix.
    pub mix: Mix,
    /// Top talkers by bytes sent plus received.
    pub talkers: Vec<Talker>,
    /// Distinct hosts seen (up to the tracking limit).
    pub hosts_seen: u64,
    /// Bytes of hosts beyond the tracking limit.
    pub hosts_untracked_bytes: u64,
    /// The series.
    pub samples: Vec<Sample>,
}
