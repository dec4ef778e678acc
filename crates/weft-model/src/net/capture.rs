//! Capture taps: every frame that crosses a link, written as a capture file that tshark reads.
//! Classic pcap with nanosecond stamps: Ethernet frames (LINKTYPE_ETHERNET = 1) and, for ATM
//! links, AAL5 PDUs with their VPI/VCI in the SunATM pseudo header (LINKTYPE_SUNATM = 123): one
//! flags byte (bit 7 set = from the host, DTE to DCE; low nibble 2 = LLC/SNAP multiplexed), VPI
//! (1 byte), VCI (2 bytes big-endian), then the PDU (LLC/SNAP + IP packet).
//!
//! The network calls its [`Tap`] at the same points in both engines (a frame leaving a host, a
//! frame due at a host, a frame sent over a trunk), so a simulated run and an emulated run of
//! the same scenario write the same kind of files.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::frame::{ETH_HEADER, Frame};
use super::link::{LinkSpec, Vc};
use super::topology::Topology;

/// Link type of a capture file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkType {
    /// Ethernet frames as carried.
    Ethernet,
    /// AAL5 PDUs of Classical IP over ATM, with VPI/VCI.
    SunAtm,
}

impl LinkType {
    /// The number written in the file header.
    pub fn code(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::SunAtm => 123,
        }
    }
}

/// Which way a frame crossed the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the host to the switch (on a trunk: from its first end to its second).
    FromHost,
    /// From the switch to the host (on a trunk: from its second end to its first).
    ToHost,
}

/// Which link of a network a frame crossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkId {
    /// The link of host `i`.
    Host(usize),
    /// Trunk `i` between two switches.
    Trunk(usize),
}

/// Where a network reports the frames that cross its links.
pub trait Tap<F> {
    /// `frame` crossed `link` in direction `dir`, at `at_ns` on the network's clock.
    fn record(&mut self, link: LinkId, at_ns: u64, dir: Direction, frame: &F);

    /// Ends the capture (flushes files); the first error met, if any.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LLC_SNAP_IPV4: [u8; 8] = [0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00, 0x08, 0x00];

/// Writes one capture file.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    link: LinkType,
    vc: Vc,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Starts a capture on `out`, writing the file header (VPI/VCI used for SunATM).
    pub fn new(mut out: W, link: LinkType, vc: Vc) -> io::Result<Self> {
        let snaplen = 262_144u32;
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&MAGIC_NS.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&snaplen.to_le_bytes());
        h.extend_from_slice(&link.code().to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter {
            out,
            link,
            vc,
            snaplen,
        })
    }

    /// Writes one Ethernet frame seen at `unix_ns` (ns since 1970) going `dir`.
    pub fn write(&mut self, unix_ns: u64, dir: Direction, frame: &[u8]) -> io::Result<()> {
        let mut rec = Vec::with_capacity(frame.len() + 16);
        match self.link {
            LinkType::Ethernet => rec.extend_from_slice(frame),
            LinkType::SunAtm => {
                let flags = match dir {
                    Direction::FromHost => 0x80 | 0x02,
                    Direction::ToHost => 0x02,
                };
                rec.push(flags);
                rec.push(self.vc.vpi);
                rec.extend_from_slice(&self.vc.vci.to_be_bytes());
                rec.extend_from_slice(&LLC_SNAP_IPV4);
                rec.extend_from_slice(frame.get(ETH_HEADER..).unwrap_or(&[]));
            }
        }
        let incl = (rec.len() as u32).min(self.snaplen);
        let mut h = Vec::with_capacity(16);
        h.extend_from_slice(&((unix_ns / 1_000_000_000) as u32).to_le_bytes());
        h.extend_from_slice(&((unix_ns % 1_000_000_000) as u32).to_le_bytes());
        h.extend_from_slice(&incl.to_le_bytes());
        h.extend_from_slice(&(rec.len() as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&rec[..incl as usize])
    }

    /// Flushes buffered records.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A tap that writes one capture per link, its stamps shifted by `epoch_ns` (the Unix time of
/// the network clock's zero). A write error stops that link's capture and is kept for
/// [`PcapTap::finish`].
pub struct PcapTap<W: Write> {
    writers: Vec<(LinkId, PcapWriter<W>)>,
    epoch_ns: u64,
    scratch: Vec<u8>,
    error: Option<(LinkId, io::Error)>,
}

impl<W: Write> PcapTap<W> {
    /// A tap over `writers`, one per link to capture.
    pub fn new(writers: Vec<(LinkId, PcapWriter<W>)>, epoch_ns: u64) -> Self {
        PcapTap {
            writers,
            epoch_ns,
            scratch: Vec::new(),
            error: None,
        }
    }

    /// Moves the clock's zero (the emulator follows adjustments of the real-time clock).
    pub fn set_epoch(&mut self, epoch_ns: u64) {
        self.epoch_ns = epoch_ns;
    }
}

impl<W: Write, F: Frame> Tap<F> for PcapTap<W> {
    fn record(&mut self, link: LinkId, at_ns: u64, dir: Direction, frame: &F) {
        let Some(k) = self.writers.iter().position(|(id, _)| *id == link) else {
            return;
        };
        self.scratch.clear();
        frame.write_bytes(&mut self.scratch);
        if let Err(e) = self.writers[k]
            .1
            .write(self.epoch_ns + at_ns, dir, &self.scratch)
        {
            let (id, _) = self.writers.swap_remove(k);
            self.error.get_or_insert((id, e));
        }
    }

    fn finish(&mut self) -> Result<(), String> {
        for (id, w) in &mut self.writers {
            if let Err(e) = w.flush() {
                self.error.get_or_insert((*id, e));
            }
        }
        match self.error.take() {
            Some((id, e)) => Err(format!("capture of {id:?}: {e}")),
            None => Ok(()),
        }
    }
}

/// One frame crossing a link, as a [`Recorder`] keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<F> {
    /// The link.
    pub link: LinkId,
    /// When (ns, the network's clock): the instant a frame left its host, or was due at it.
    pub at_ns: u64,
    /// Which way.
    pub dir: Direction,
    /// The frame.
    pub frame: F,
}

/// A tap that keeps every record in memory, shared with whoever holds a clone (tests compare
/// what two engines did with the same frames).
#[derive(Clone, Debug, Default)]
pub struct Recorder<F> {
    records: std::sync::Arc<std::sync::Mutex<Vec<Record<F>>>>,
}

impl<F: Clone> Recorder<F> {
    /// An empty recorder.
    pub fn new() -> Self {
        Recorder {
            records: Default::default(),
        }
    }

    /// Everything recorded so far, in order.
    pub fn records(&self) -> Vec<Record<F>> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl<F: Clone> Tap<F> for Recorder<F> {
    fn record(&mut self, link: LinkId, at_ns: u64, dir: Direction, frame: &F) {
        if let Ok(mut r) = self.records.lock() {
            r.push(Record {
                link,
                at_ns,
                dir,
                frame: frame.clone(),
            });
        }
    }
}

/// Creates one capture file per link of `topo` under `dir` — `<host>.pcap` for each host's link,
/// `<a>-<b>.pcap` for each trunk between switches `a` and `b` (SunATM on ATM links) — and a tap
/// that writes them, its stamps shifted by `epoch_ns`. Both engines lay captures out this way.
pub fn capture_files(
    topo: &Topology,
    dir: &Path,
    epoch_ns: u64,
) -> io::Result<PcapTap<BufWriter<File>>> {
    // Names become file names: checked here, where they are used, whatever the caller did.
    topo.validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let open = |name: String, link: &LinkSpec| -> io::Result<PcapWriter<BufWriter<File>>> {
        let lt = if link.is_atm() {
            LinkType::SunAtm
        } else {
            LinkType::Ethernet
        };
        let p = dir.join(format!("{name}.pcap"));
        let err = |e: io::Error| io::Error::new(e.kind(), format!("creating {}: {e}", p.display()));
        // A capture of an earlier run is replaced, never followed: a symbolic link left in the
        // directory is removed (not its target), and the new file is created exclusively
        // (O_EXCL fails on a link put back in between), so a root run truncates nothing outside.
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(err(e)),
            _ => {}
        }
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
            .map_err(err)?;
        PcapWriter::new(BufWriter::new(f), lt, link.vc)
    };
    let mut writers = Vec::new();
    for (i, h) in topo.hosts.iter().enumerate() {
        writers.push((LinkId::Host(i), open(h.name.clone(), &h.link)?));
    }
    for (k, t) in topo.trunks.iter().enumerate() {
        let name = |s: usize| topo.switches.get(s).map_or("?", |x| x.name.as_str());
        writers.push((
            LinkId::Trunk(k),
            open(
                format!("{}-{}", name(t.ends[0]), name(t.ends[1])),
                &t.links[0],
            )?,
        ));
    }
    Ok(PcapTap::new(writers, epoch_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_replace_links_and_never_write_through_them() {
        use crate::net::{FabricSpec, HostSpec, SwitchSpec, TrunkSpec};
        let dir = std::env::temp_dir().join(format!("weft-capture-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep me").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("a.pcap")).unwrap();
        let host = |n: &str| HostSpec {
            name: n.into(),
            addr: None,
            link: LinkSpec::ethernet(None, crate::Duration::ZERO),
            switch: 0,
        };
        let topo = Topology::star(vec![host("a"), host("b")], FabricSpec::default(), 1);
        let tap = capture_files(&topo, &dir, 0).unwrap();
        drop(tap);
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        let meta = std::fs::symlink_metadata(dir.join("a.pcap")).unwrap();
        assert!(meta.file_type().is_file());

        // A trunk's file is named after its switches: a switch named to lead out is refused.
        let mut two = topo.clone();
        two.switches.push(SwitchSpec {
            forwarding: None,
            shared_buffer: None,
            name: "../escaped".into(),
            ..two.switches[0].clone()
        });
        two.hosts[1].switch = 1;
        let l = LinkSpec::ethernet(None, crate::Duration::ZERO);
        two.trunks.push(TrunkSpec {
            ends: [0, 1],
            links: [l.clone(), l],
        });
        let sub = dir.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        let e = capture_files(&two, &sub, 0).err().unwrap();
        assert!(e.to_string().contains("switch name"), "{e}");
        assert!(!dir.join("escaped.pcap").exists() && !dir.join("switch-.").exists());
        two.switches[1].name = "edge".into();
        drop(capture_files(&two, &sub, 0).unwrap());
        assert!(sub.join("switch-edge.pcap").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn writes_ethernet_and_sunatm_records() {
        let mut eth = PcapWriter::new(Vec::new(), LinkType::Ethernet, Vc::default()).unwrap();
        eth.write(1_500_000_000_123, Direction::FromHost, &[7u8; 60])
            .unwrap();
        let b = eth.out.clone();
        assert_eq!(&b[0..4], &MAGIC_NS.to_le_bytes());
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 1500);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 123);
        assert_eq!(b.len(), 24 + 16 + 60);
        let mut atm =
            PcapWriter::new(Vec::new(), LinkType::SunAtm, Vc { vpi: 1, vci: 300 }).unwrap();
        atm.write(0, Direction::ToHost, &[9u8; 54]).unwrap();
        let a = atm.out;
        // 4 pseudo-header + 8 LLC/SNAP + 40 IP bytes.
        assert_eq!(a.len(), 24 + 16 + 4 + 8 + 40);
        assert_eq!(&a[40..44], &[0x02, 1, 0x01, 0x2c]);
    }
}
