//! Protocol and port mix: TCP/UDP/ICMP/other, the services the Sandia study named (NFS, X11,
//! FTP data) and the top ports, with IP fragments accounted to their datagram's ports.

use std::net::IpAddr;

use serde::Serialize;

use crate::decode::{Net, PacketInfo, Transport};
use rustc_hash::FxHashMap;

/// Packets and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    /// Packets.
    pub packets: u64,
    /// Bytes (recorded frame lengths).
    pub bytes: u64,
}

impl Count {
    #[inline]
    fn add(&mut self, bytes: u64) {
        self.packets += 1;
        self.bytes += bytes;
    }
}

/// Traffic to or from one port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PortCount {
    /// `tcp` or `udp`.
    pub proto: &'static str,
    /// The service port (see [`service_port`]).
    pub port: u16,
    /// Packets and bytes.
    #[serde(flatten)]
    pub count: Count,
}

/// The mix.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Mix {
    /// TCP.
    pub tcp: Count,
    /// UDP.
    pub udp: Count,
    /// ICMP and ICMPv6.
    pub icmp: Count,
    /// Other IP protocols.
    pub other_ip: Count,
    /// Not IP (ARP, ...), or undecodable.
    pub non_ip: Count,
    /// IPv6 (any protocol).
    pub ipv6: Count,
    /// IP fragments (first and later).
    pub fragments: Count,
    /// Non-first fragments whose first fragment was not seen (ports unknown).
    pub fragments_unattributed: Count,
    /// NFS: port 2049, TCP or UDP.
    pub nfs: Count,
    /// X11: TCP ports 6000-6063.
    pub x11: Count,
    /// FTP data: TCP port 20.
    pub ftp_data: Count,
    /// Top service ports by bytes.
    pub top_ports: Vec<PortCount>,
    /// What the bounded fragment table left out.
    pub fragment_table: FragStats,
}

/// The port a TCP/UDP packet is charged to: a named service's port when either end is one,
/// otherwise the lower of the two (the usual server side).
pub fn service_port(sport: u16, dport: u16) -> u16 {
    let named = |p: u16| p == 2049 || (6000..=6063).contains(&p) || p == 20;
    if named(dport) {
        dport
    } else if named(sport) {
        sport
    } else {
        sport.min(dport)
    }
}

type FragKey = (IpAddr, IpAddr, u32, u8);

/// Default bound of the fragment table, in datagrams (`--max-fragments`).
pub const FRAG_TABLE_MAX: usize = 65_536;

/// What a fragment table left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FragStats {
    /// Datagrams whose first fragment was forgotten because the table was full (it is emptied
    /// when it reaches its bound).
    pub forgotten: u64,
    /// Later fragments whose first fragment was not remembered (never seen, or forgotten): not
    /// charged to any ports.
    pub unattributed: u64,
}

/// Remembers the ports of first fragments so that later fragments of the same datagram can be
/// charged to them (bounded: the table is emptied when it reaches its bound, and what that
/// cost is counted in [`FragStats`]).
pub(crate) struct FragTable {
    map: FxHashMap<FragKey, (u16, u16)>,
    max: usize,
    stats: FragStats,
}

impl FragTable {
    /// A table of at most `max` datagrams (at least one).
    pub(crate) fn new(max: usize) -> Self {
        FragTable {
            map: FxHashMap::default(),
            max: max.max(1),
            stats: FragStats::default(),
        }
    }

    /// What the bound left out so far.
    pub(crate) fn stats(&self) -> FragStats {
        self.stats
    }

    /// The packet's ports: its own, or for a later fragment those of its first fragment if seen.
    #[inline]
    pub(crate) fn ports(&mut self, info: &PacketInfo) -> Option<(u16, u16)> {
        let ports = info.ports();
        if !info.frag.is_fragment {
            return ports;
        }
        let key = (info.src, info.dst, info.ip_id, info.proto);
        if info.frag.offset == 0 {
            if let Some(p) = ports {
                if self.map.len() >= self.max {
                    self.stats.forgotten += self.map.len() as u64;
                    self.map.clear();
                }
                self.map.insert(key, p);
            }
            ports
        } else {
            let p = if info.frag.more {
                self.map.get(&key).copied()
            } else {
                self.map.remove(&key)
            };
            if p.is_none() {
                self.stats.unattributed += 1;
            }
            p
        }
    }
}

pub(crate) struct MixAcc {
    mix: Mix,
    /// Bytes and packets per service port: index `proto_is_udp * 65536 + port`.
    ports: Vec<Count>,
    frags: FragTable,
}

impl MixAcc {
    /// An accumulator whose fragment table holds at most `max_fragments` datagrams.
    pub(crate) fn new(max_fragments: usize) -> Self {
        MixAcc {
            mix: Mix::default(),
            ports: vec![Count::default(); 2 * 65_536],
            frags: FragTable::new(max_fragments),
        }
    }

    #[inline]
    pub(crate) fn add(&mut self, bytes: u64, info: &PacketInfo) {
        let m = &mut self.mix;
        if !matches!(info.net, Net::Ipv4 | Net::Ipv6) {
            m.non_ip.add(bytes);
            return;
        }
        if info.net == Net::Ipv6 {
            m.ipv6.add(bytes);
        }
        match info.proto {
            6 => m.tcp.add(bytes),
            17 => m.udp.add(bytes),
            1 | 58 => m.icmp.add(bytes),
            _ => m.other_ip.add(bytes),
        }
        let ports = self.frags.ports(info);
        if info.frag.is_fragment {
            m.fragments.add(bytes);
            if ports.is_none() && info.frag.offset > 0 && matches!(info.proto, 6 | 17) {
                m.fragments_unattributed.add(bytes);
            }
        }
        let Some((s, d)) = ports else { return };
        let udp = match (info.proto, info.transport) {
            (17, _) | (_, Transport::Udp { .. }) => 1,
            _ => 0,
        };
        let port = service_port(s, d);
        if port == 2049 {
            m.nfs.add(bytes);
        } else if udp == 0 && (6000..=6063).contains(&port) {
            m.x11.add(bytes);
        } else if udp == 0 && port == 20 {
            m.ftp_data.add(bytes);
        }
        if let Some(c) = self.ports.get_mut(udp * 65_536 + port as usize) {
            c.add(bytes);
        }
    }

    pub(crate) fn finish(mut self, top: usize) -> Mix {
        self.mix.fragment_table = self.frags.stats();
        let mut v: Vec<(usize, Count)> = self
            .ports
            .iter()
            .enumerate()
            .filter(|(_, c)| c.packets > 0)
            .map(|(i, c)| (i, *c))
            .collect();
        v.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then(a.0.cmp(&b.0)));
        self.mix.top_ports = v
            .into_iter()
            .take(top)
            .map(|(i, count)| PortCount {
                proto: if i >= 65_536 { "udp" } else { "tcp" },
                port: (i % 65_536) as u16,
                count,
            })
            .collect();
        self.mix
    }
}
