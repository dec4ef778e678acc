//! Every supported link type, VLAN stacks, LLC/SNAP, IPv6 extension headers and fragments.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

mod common;

use std::net::{IpAddr, Ipv6Addr};

use weft_trace::decode::{Net, Transport, linktype};
use weft_trace::synth::{L4, frame_for, ipv4_packet};
use weft_trace::tech::Framing;
use weft_trace::util::{UtilAnalyzer, UtilConfig};

fn ipv6_udp(payload: &[u8], ext: &[u8], first_nh: u8) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    let plen = (ext.len() + 8 + payload.len()) as u16;
    p.extend_from_slice(&plen.to_be_bytes());
    p.push(first_nh);
    p.push(64);
    p.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
    p.extend_from_slice(&"fe80::2".parse::<Ipv6Addr>().unwrap().octets());
    p.extend_from_slice(ext);
    p.extend_from_slice(&4000u16.to_be_bytes());
    p.extend_from_slice(&53u16.to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}

#[test]
fn every_link_type_reaches_the_transport() {
    let v4 = ipv4_packet(
        common::A,
        common::B,
        42,
        L4::Tcp(1234, 80, 1, 2, 0x18),
        b"hello",
    );
    let v6 = ipv6_udp(b"abc", &[], 17);
    for link in [
        linktype::NULL,
        linktype::ETHERNET,
        linktype::FDDI,
        linktype::RAW_12,
        linktype::RAW_14,
        linktype::RAW,
        linktype::LOOP,
        linktype::LINUX_SLL,
        linktype::SUNATM,
        linktype::LINUX_SLL2,
    ] {
        let f = frame_for(link, &v4);
        let i = weft_trace::decode(link, &f);
        assert_eq!(i.net, Net::Ipv4, "link {link}");
        assert_eq!(i.ports(), Some((1234, 80)), "link {link}");
        assert_eq!(i.payload(&f), b"hello", "link {link}");
        assert_eq!(i.ip_id, 42);
        let f = frame_for(link, &v6);
        let i = weft_trace::decode(link, &f);
        assert_eq!(i.net, Net::Ipv6, "link {link}");
        assert_eq!(i.ports(), Some((4000, 53)), "link {link}");
        assert_eq!(i.payload(&f), b"abc");
    }
    // Raw IPv4 / IPv6 link types carry no header at all.
    assert_eq!(
        weft_trace::decode(linktype::IPV4, &v4).ports(),
        Some((1234, 80))
    );
    assert_eq!(
        weft_trace::decode(linktype::IPV6, &v6).ports(),
        Some((4000, 53))
    );
    // NULL in big-endian host order, and LANE over SunATM.
    let mut f = 2u32.to_be_bytes().to_vec();
    f.extend_from_slice(&v4);
    assert_eq!(weft_trace::decode(linktype::NULL, &f).net, Net::Ipv4);
    let mut f = vec![0x01, 0, 0, 40, 0, 0];
    f.extend_from_slice(&frame_for(linktype::ETHERNET, &v4));
    assert_eq!(
        weft_trace::decode(linktype::SUNATM, &f).ports(),
        Some((1234, 80))
    );
}

#[test]
fn vlan_stacks_and_llc_snap() {
    let v4 = ipv4_packet(common::A, common::B, 1, L4::Udp(5, 6), b"x");
    let eth = frame_for(linktype::ETHERNET, &v4);
    // QinQ: 802.1ad outer, 802.1Q inner.
    let mut q = eth[..12].to_vec();
    q.extend_from_slice(&[0x88, 0xa8, 0, 100, 0x81, 0x00, 0, 200]);
    q.extend_from_slice(&eth[12..]);
    let i = weft_trace::decode(linktype::ETHERNET, &q);
    assert_eq!((i.vlans, i.ports()), (2, Some((5, 6))));
    // 802.3 length + LLC/SNAP.
    let mut s = eth[..12].to_vec();
    s.extend_from_slice(&((v4.len() + 8) as u16).to_be_bytes());
    s.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
    s.extend_from_slice(&v4);
    assert_eq!(
        weft_trace::decode(linktype::ETHERNET, &s).ports(),
        Some((5, 6))
    );
    // ARP is counted as non-IP.
    let mut arp = eth[..12].to_vec();
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0; 28]);
    assert_eq!(
        weft_trace::decode(linktype::ETHERNET, &arp).net,
        Net::Other(0x0806)
    );
}

#[test]
fn ipv6_extension_headers_and_fragments() {
    // Hop-by-hop (8 bytes) then destination options (16 bytes), then UDP.
    let mut ext = vec![60, 0, 1, 4, 0, 0, 0, 0];
    ext.extend_from_slice(&[17, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let p = ipv6_udp(b"payload", &ext, 0);
    let i = weft_trace::decode(linktype::RAW, &p);
    assert_eq!((i.proto, i.ports()), (17, Some((4000, 53))));
    assert_eq!(i.payload(&p), b"payload");
    assert_eq!(i.src, IpAddr::V6(Ipv6Addr::LOCALHOST));
    // First fragment: offset 0, M=1, id 0xdeadbeef.
    let frag = [17, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef];
    let p = ipv6_udp(b"payload", &frag, 44);
    let i = weft_trace::decode(linktype::RAW, &p);
    assert!(i.frag.is_fragment && i.frag.more && i.frag.offset == 0);
    assert_eq!((i.ip_id, i.ports()), (0xdead_beef, Some((4000, 53))));
    // A later fragment has no transport header.
    let mut p2 = p.clone();
    p2[42..44].copy_from_slice(&[0, 0x10]);
    let i = weft_trace::decode(linktype::RAW, &p2);
    assert_eq!(
        (i.frag.offset, i.transport, i.proto),
        (16, Transport::None, 17)
    );
}

#[test]
fn ipv4_fragments_are_charged_to_their_datagram_ports() {
    // A 3000-byte UDP datagram to NFS in three fragments, the first carrying the UDP header.
    let whole = ipv4_packet(common::A, common::B, 777, L4::Udp(800, 2049), &[0u8; 2992]);
    let body = &whole[20..];
    let mut frags = Vec::new();
    for (k, chunk) in body.chunks(1480).enumerate() {
        let mut h = whole[..20].to_vec();
        h[2..4].copy_from_slice(&((20 + chunk.len()) as u16).to_be_bytes());
        let more = k < body.len().div_ceil(1480) - 1;
        let fo = ((k * 1480 / 8) as u16) | if more { 0x2000 } else { 0 };
        h[6..8].copy_from_slice(&fo.to_be_bytes());
        h.extend_from_slice(chunk);
        frags.push(frame_for(linktype::ETHERNET, &h));
    }
    assert_eq!(frags.len(), 3);
    let mut a = UtilAnalyzer::new(UtilConfig::sandia(
        weft_model::Rate(10_000_000),
        Framing::Captured,
    ));
    for f in &frags {
        a.add(
            0,
            f.len() as u32,
            linktype::ETHERNET,
            &weft_trace::decode(linktype::ETHERNET, f),
        );
    }
    let r = a.finish();
    let total: u64 = frags.iter().map(|f| f.len() as u64).sum();
    assert_eq!(r.mix.fragments.packets, 3);
    assert_eq!(r.mix.udp.bytes, total);
    assert_eq!(r.mix.nfs.bytes, total);
    assert_eq!(r.mix.nfs.packets, 3);
    assert_eq!(r.mix.fragments_unattributed.packets, 0);
    let first = weft_trace::decode(linktype::ETHERNET, &frags[0]);
    assert_eq!(first.payload_len, 2992);
}
