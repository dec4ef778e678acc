//! The preset technologies, each with where its numbers come from.

use super::{Encap, FrameFormat, Framing, Tech};
use crate::units::{Rate, Size};

/// One preset: its canonical name, the aliases it also answers to, and a one-line description.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    /// Canonical name (used in scenario files: `tech = "oc3c"`).
    pub name: &'static str,
    /// Other accepted names.
    pub aliases: &'static [&'static str],
    /// What it is and where the numbers come from.
    pub about: &'static str,
    build: fn() -> Tech,
}

impl Preset {
    /// The technology this preset describes.
    pub fn tech(&self) -> Tech {
        (self.build)()
    }
}

/// IEEE 802.3 framing: preamble + SFD 8, MAC header 14, FCS 4, inter-frame gap 12, minimum frame 64.
const ETHERNET: FrameFormat = FrameFormat {
    preamble: 8,
    header: 14,
    trailer: 4,
    gap: 12,
    min_frame: 64,
};

/// FDDI framing (ANSI X3.139) in whole bytes: preamble 8 (16 idle symbols), SD 1 + FC 1 + DA 6 +
/// SA 6 = 14, FCS 4 + ED and FS (4 symbols) 2 = 6; no gap beyond the preamble, no minimum frame.
/// The token rotation is not modelled: a switched FDDI port carries one station.
const FDDI: FrameFormat = FrameFormat {
    preamble: 8,
    header: 14,
    trailer: 6,
    gap: 0,
    min_frame: 0,
};

/// Fibre Channel framing (FC-PH) with IP over FC (RFC 2625) in whole bytes: SOF 4 (as the
/// preamble), frame header 24 + the network header of IP over FC 16 = 40, CRC 4 + EOF 4 = 8, and
/// at least six idle words (24 bytes) between frames; no minimum frame.
const FIBRE_CHANNEL: FrameFormat = FrameFormat {
    preamble: 4,
    header: 40,
    trailer: 8,
    gap: 24,
    min_frame: 0,
};

/// Largest IP datagram carried in one Fibre Channel frame: the 2112-byte data field less the
/// network header (16) and LLC/SNAP (8). RFC 2625 lets a datagram span a sequence of frames;
/// a datagram a frame keeps every frame's overhead counted.
const FIBRE_CHANNEL_MTU: u64 = 2112 - 16 - 8;

/// The ALLNODE switch's frame as this preset takes it: no published layout is at hand, so no
/// frame is charged beyond the LLC/SNAP header in front of each datagram (a lower bound on the
/// wire's time).
const ALLNODE: FrameFormat = FrameFormat {
    preamble: 0,
    header: 0,
    trailer: 0,
    gap: 0,
    min_frame: 0,
};

fn frame(name: &str, line: u64, rate: u64, format: FrameFormat, encap: Encap, mtu: u64) -> Tech {
    Tech {
        name: name.to_string(),
        line_rate: Rate(line),
        rate: Rate(rate),
        framing: Framing::Frame(format),
        encap,
        mtu: Size(mtu),
    }
}

fn cells(name: &str, line: u64, rate: u64, encap: Encap, mtu: u64) -> Tech {
    Tech {
        name: name.to_string(),
        line_rate: Rate(line),
        rate: Rate(rate),
        framing: Framing::Cells,
        encap,
        mtu: Size(mtu),
    }
}

/// All presets. ATM presets default to Classical IP (RFC 1577): LLC/SNAP and a 9180-byte MTU.
pub static PRESETS: &[Preset] = &[
    Preset {
        name: "ethernet10",
        aliases: &["ethernet", "10base-t", "ether"],
        about: "10 Mbit/s Ethernet (Manchester, 20 Mbaud), MTU 1500",
        build: || {
            frame(
                "ethernet10",
                20_000_000,
                10_000_000,
                ETHERNET,
                Encap::Null,
                1500,
            )
        },
    },
    Preset {
        name: "ethernet100",
        aliases: &["fast-ethernet", "100base-tx", "fe"],
        about: "100 Mbit/s Ethernet (4B/5B, 125 Mbaud), MTU 1500",
        build: || {
            frame(
                "ethernet100",
                125_000_000,
                100_000_000,
                ETHERNET,
                Encap::Null,
                1500,
            )
        },
    },
    Preset {
        name: "gige",
        aliases: &["ethernet1000", "1000base-x", "1gige"],
        about: "1 Gbit/s Ethernet (8B/10B, 1.25 Gbaud), MTU 1500",
        build: || {
            frame(
                "gige",
                1_250_000_000,
                1_000_000_000,
                ETHERNET,
                Encap::Null,
                1500,
            )
        },
    },
    Preset {
        name: "gige-jumbo",
        aliases: &["ethernet1000-jumbo"],
        about: "1 Gbit/s Ethernet with 9000-byte jumbo frames",
        build: || {
            frame(
                "gige-jumbo",
                1_250_000_000,
                1_000_000_000,
                ETHERNET,
                Encap::Null,
                9000,
            )
        },
    },
    Preset {
        name: "10gige",
        aliases: &["ethernet10g", "10gbase-r", "10ge"],
        about: "10 Gbit/s Ethernet (64B/66B, 10.3125 Gbaud), MTU 1500",
        build: || {
            frame(
                "10gige",
                10_312_500_000,
                10_000_000_000,
                ETHERNET,
                Encap::Null,
                1500,
            )
        },
    },
    Preset {
        name: "10gige-jumbo",
        aliases: &["ethernet10g-jumbo"],
        about: "10 Gbit/s Ethernet with 9000-byte jumbo frames",
        build: || {
            frame(
                "10gige-jumbo",
                10_312_500_000,
                10_000_000_000,
                ETHERNET,
                Encap::Null,
                9000,
            )
        },
    },
    Preset {
        name: "fddi",
        aliases: &["switched-fddi"],
        about: "FDDI (4B/5B, 125 Mbaud, 100 Mbit/s), IP over LLC/SNAP (RFC 1188), MTU 4352 (RFC 1390)",
        build: || frame("fddi", 125_000_000, 100_000_000, FDDI, Encap::LlcSnap, 4352),
    },
    Preset {
        name: "fc266",
        aliases: &["fibre-channel-266", "fcs266", "fibre-channel"],
        about: "Fibre Channel at quarter speed (8B/10B, 265.625 Mbaud, 212.5 Mbit/s; FC-PH), IP \
                over FC (RFC 2625) with LLC/SNAP, one datagram a frame (MTU 2088): the IBM \
                Fibre Channel adapter/266 of the RS/6000s",
        build: || {
            frame(
                "fc266",
                265_625_000,
                212_500_000,
                FIBRE_CHANNEL,
                Encap::LlcSnap,
                FIBRE_CHANNEL_MTU,
            )
        },
    },
    Preset {
        name: "fc1062",
        aliases: &["fibre-channel-1062", "fcs1062"],
        about: "Fibre Channel at full speed (8B/10B, 1062.5 Mbaud, 850 Mbit/s; FC-PH), IP over FC \
                (RFC 2625) with LLC/SNAP, one datagram a frame (MTU 2088)",
        build: || {
            frame(
                "fc1062",
                1_062_500_000,
                850_000_000,
                FIBRE_CHANNEL,
                Encap::LlcSnap,
                FIBRE_CHANNEL_MTU,
            )
        },
    },
    Preset {
        name: "allnode",
        aliases: &["ibm-allnode"],
        about: "IBM's ALLNODE multistage switch of NASA's LACE cluster, IP over it: neither its \
                link rate nor its framing is in the studies or a source at hand, so both are \
                placeholders (100 Mbit/s, LLC/SNAP and no frame, MTU 9180); fit for messages whose time \
                the hosts set, not for bulk",
        build: || {
            frame(
                "allnode",
                100_000_000,
                100_000_000,
                ALLNODE,
                Encap::LlcSnap,
                9180,
            )
        },
    },
    Preset {
        name: "oc3c",
        aliases: &["oc-3c", "sts-3c", "atm155", "oc3"],
        about: "ATM over SONET OC-3c: 155.52 Mbit/s line, 149.76 Mbit/s SPE payload (260 of 270 \
                columns) as the cell stream; CLIP, MTU 9180",
        build: || cells("oc3c", 155_520_000, 149_760_000, Encap::LlcSnap, 9180),
    },
    Preset {
        name: "oc3c-lane",
        aliases: &["lane"],
        about: "OC-3c with LAN Emulation (LE header 2 + Ethernet header 14), MTU 1500",
        build: || cells("oc3c-lane", 155_520_000, 149_760_000, Encap::Lane, 1500),
    },
    Preset {
        name: "oc12c",
        aliases: &["oc-12c", "sts-12c", "atm622", "oc12"],
        about: "ATM over SONET OC-12c: 622.08 Mbit/s line, 599.04 Mbit/s SPE payload (1040 of 1080 \
                columns); CLIP, MTU 9180",
        build: || cells("oc12c", 622_080_000, 599_040_000, Encap::LlcSnap, 9180),
    },
    Preset {
        name: "taxi100",
        aliases: &["taxi", "atm100"],
        about: "ATM over TAXI (4B/5B at 125 Mbaud): a 100 Mbit/s cell stream; CLIP, MTU 9180",
        build: || cells("taxi100", 125_000_000, 100_000_000, Encap::LlcSnap, 9180),
    },
    Preset {
        name: "ds3",
        aliases: &["t3", "ds-3"],
        about: "ATM over DS-3 with PLCP: 44.736 Mbit/s line, 12 cells per 125 us = 40.704 Mbit/s \
                cell stream; CLIP, MTU 9180",
        build: || cells("ds3", 44_736_000, 40_704_000, Encap::LlcSnap, 9180),
    },
    Preset {
        name: "e3",
        aliases: &["e3-g832", "g832"],
        about: "ATM over E3 (G.832): 34.368 Mbit/s line, 530 payload bytes per 125 us = 33.92 \
                Mbit/s cell stream; CLIP, MTU 9180",
        build: || cells("e3", 34_368_000, 33_920_000, Encap::LlcSnap, 9180),
    },
];

/// The preset called `name` or one of its aliases, case-insensitive.
pub(super) fn lookup(name: &str) -> Option<Tech> {
    let want = name.trim().to_ascii_lowercase();
    PRESETS
        .iter()
        .find(|p| p.name == want || p.aliases.contains(&want.as_str()))
        .map(Preset::tech)
}

/// The canonical preset names, comma-separated (for error messages).
pub(super) fn names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_builds_under_its_own_name_and_aliases() {
        for p in PRESETS {
            assert_eq!(lookup(p.name).map(|t| t.name), Some(p.name.to_string()));
            for a in p.aliases {
                assert_eq!(lookup(a).map(|t| t.name), Some(p.name.to_string()), "{a}");
            }
            let t = p.tech();
            assert!(t.rate <= t.line_rate, "{}", p.name);
            assert!(t.mtu.0 > 0);
        }
    }

    #[test]
    fn cell_stream_rates_follow_their_frame_structures() {
        // SONET: 8000 frames/s, 9 rows, payload columns x 8 bits.
        assert_eq!(
            lookup("oc3c").map(|t| t.rate),
            Some(Rate(8000 * 9 * 260 * 8))
        );
        assert_eq!(
            lookup("oc12c").map(|t| t.rate),
            Some(Rate(8000 * 9 * 1040 * 8))
        );
        // DS-3 PLCP: 12 cells of 53 bytes per 125 us.
        assert_eq!(
            lookup("ds3").map(|t| t.rate),
            Some(Rate(12 * 53 * 8 * 8000))
        );
        // Fibre Channel's 8B/10B: 8 data bits in every 10 baud.
        for name in ["fc266", "fc1062"] {
            let t = lookup(name).unwrap();
            assert_eq!(t.rate.0 * 10, t.line_rate.0 * 8, "{name}");
        }
        // One frame a datagram: SOF, FC and network headers, LLC/SNAP, CRC and EOF, six idles.
        let fc = lookup("fc266").unwrap();
        assert_eq!(fc.wire_bytes(29), 4 + 24 + 16 + 8 + 29 + 4 + 4 + 24);
        // E3 G.832: 530 bytes per 125 us.
        assert_eq!(lookup("e3").map(|t| t.rate), Some(Rate(530 * 8 * 8000)));
    }
}
