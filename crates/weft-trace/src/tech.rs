//! How many bytes a captured packet occupied on the wire of a given technology.
//!
//! A small explicit table of presets: the technology presets of `weft-model` (branch `model`) had
//! not landed when this was written; when they do, this table should defer to them.

use weft_model::Rate;

use crate::decode::{PacketInfo, linktype};

/// How a packet is charged to the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    /// The captured length as recorded (`orig_len`), no link overhead added.
    Captured,
    /// Ethernet: header + FCS (4), padded to 64 bytes, plus preamble/SFD (8) and inter-frame gap
    /// (12).
    Ethernet,
    /// FDDI: IP + LLC/SNAP (8) + FC, addresses (13) + FCS (4) + preamble (8) + SD (1) + ED/FS (2).
    Fddi,
    /// ATM AAL5 with LLC/SNAP: IP + 8 + 8-byte trailer padded to 48-byte cells of 53 bytes.
    Aal5,
}

/// A technology preset: a line rate and a framing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Tech {
    /// Preset name.
    pub name: &'static str,
    /// Rate available to frames (for ATM: the cell stream), bits per second.
    pub rate: Rate,
    /// Framing charged per packet.
    pub framing: Framing,
}

/// The presets, by name.
pub const TECHS: &[Tech] = &[
    Tech {
        name: "ethernet10",
        rate: Rate(10_000_000),
        framing: Framing::Ethernet,
    },
    Tech {
        name: "ethernet100",
        rate: Rate(100_000_000),
        framing: Framing::Ethernet,
    },
    Tech {
        name: "gige",
        rate: Rate(1_000_000_000),
        framing: Framing::Ethernet,
    },
    Tech {
        name: "10gige",
        rate: Rate(10_000_000_000),
        framing: Framing::Ethernet,
    },
    Tech {
        name: "fddi",
        rate: Rate(100_000_000),
        framing: Framing::Fddi,
    },
    Tech {
        name: "oc3c",
        rate: Rate(149_760_000),
        framing: Framing::Aal5,
    },
    Tech {
        name: "taxi100",
        rate: Rate(100_000_000),
        framing: Framing::Aal5,
    },
    Tech {
        name: "ds3",
        rate: Rate(40_704_000),
        framing: Framing::Aal5,
    },
    Tech {
        name: "e3",
        rate: Rate(33_920_000),
        framing: Framing::Aal5,
    },
];

/// Looks a preset up by name.
pub fn tech(name: &str) -> Option<Tech> {
    TECHS
        .iter()
        .copied()
        .find(|t| t.name.eq_ignore_ascii_case(name))
}

impl Framing {
    /// Bytes the packet occupies on the wire, from its recorded length, link type and headers.
    #[inline]
    pub fn wire_bytes(self, link: u16, orig_len: u32, info: &PacketInfo) -> u64 {
        let orig = orig_len as u64;
        // The network-layer length: the IP header's, else what is left after the link header.
        let l3 = if info.ip_len > 0 {
            info.ip_len as u64
        } else {
            orig.saturating_sub(link_header_guess(link))
        };
        match self {
            Framing::Captured => orig,
            Framing::Ethernet => {
                let l2 = if link == linktype::ETHERNET {
                    orig
                } else {
                    l3 + 14
                };
                (l2 + 4).max(64) + 8 + 12
            }
            Framing::Fddi => l3 + 8 + 13 + 4 + 8 + 1 + 2,
            Framing::Aal5 => (l3 + 8 + 8).div_ceil(48) * 53,
        }
    }
}

fn link_header_guess(link: u16) -> u64 {
    match link {
        linktype::ETHERNET => 14,
        linktype::NULL | linktype::LOOP | linktype::SUNATM => 4,
        linktype::LINUX_SLL => 16,
        linktype::LINUX_SLL2 => 20,
        linktype::FDDI => 21,
        _ => 0,
    }
}
