//! How many bytes a captured packet occupied on the wire: either its recorded length, or what a
//! technology preset of `weft-model` charges for its IP datagram (preamble, header, padding to the
//! minimum frame, FCS, gap; on ATM whole 53-byte cells of AAL5 with the preset's encapsulation).

use serde::{Serialize, Serializer};
use weft_model::Tech;

use crate::decode::{PacketInfo, linktype};

/// How each packet is charged to the link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Framing {
    /// The recorded length (`orig_len`), no link overhead added.
    Captured,
    /// What the technology puts on the wire for the packet's IP datagram.
    Tech(Box<Tech>),
}

impl Framing {
    /// The framing of a `weft-model` preset (`ethernet10`, `fddi`, `oc3c`, ...).
    pub fn preset(name: &str) -> Result<Self, weft_model::tech::TechError> {
        Ok(Framing::Tech(Box::new(Tech::preset(name)?)))
    }

    /// The name reported in results: `captured` or the preset's name.
    pub fn name(&self) -> &str {
        match self {
            Framing::Captured => "captured",
            Framing::Tech(t) => &t.name,
        }
    }

    /// Bytes the packet occupies on the wire, from its recorded length, link type and headers.
    #[inline]
    pub fn wire_bytes(&self, link: u16, orig_len: u32, info: &PacketInfo) -> u64 {
        let orig = orig_len as u64;
        match self {
            Framing::Captured => orig,
            Framing::Tech(t) => {
                // The IP datagram length per its header, else what follows the link header.
                let l3 = if info.ip_len > 0 {
                    info.ip_len as u64
                } else {
                    orig.saturating_sub(link_header_guess(link))
                };
                t.wire_bytes(l3)
            }
        }
    }
}

impl Serialize for Framing {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
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
