//! An AF_PACKET socket with a `PACKET_MMAP` receive ring (TPACKET_V2): the kernel writes each
//! frame, its length and its receive time into a slot of memory shared with this process, so
//! that looking for a frame is a memory read instead of a `recvmsg` system call (which, on a
//! switch polling many ports, mostly finds nothing).
//!
//! TPACKET_V2 rather than V3: a V3 ring hands frames over a block at a time, when the block is
//! full or its retire timer (at least 1 ms) fires, which would delay a lone frame by up to a
//! millisecond; a V2 slot is handed over as soon as the frame is in it.
//!
//! A frame longer than a slot (offloads left on, an MTU above the one the ring was sized for)
//! is not cut short: the socket asks for a copy of such frames on its ordinary receive queue
//! (`PACKET_COPY_THRESH`), the slot is marked `TP_STATUS_COPY`, and [`PacketRing::recv`] reads
//! the whole frame from the queue instead (or, when that queue is full too, drops it).

use std::cell::Cell;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::packet::{PacketOptions, PacketSocket, Received};

/// `tpacket_versions::TPACKET_V2` (linux/if_packet.h).
const TPACKET_V2: libc::c_int = 1;
/// Socket options of SOL_PACKET (linux/if_packet.h).
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_COPY_THRESH: libc::c_int = 7;
const PACKET_VERSION: libc::c_int = 10;
/// Slot status bits (linux/if_packet.h).
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_COPY: u32 = 1 << 1;
/// Alignment of slots and of the data in them.
const TPACKET_ALIGNMENT: usize = 16;

/// `struct tpacket_req` (linux/if_packet.h).
#[repr(C)]
struct TpacketReq {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
}

/// `struct tpacket2_hdr` (linux/if_packet.h): the head of each slot.
#[repr(C)]
struct Tpacket2Hdr {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

fn align(x: usize) -> usize {
    (x + TPACKET_ALIGNMENT - 1) & !(TPACKET_ALIGNMENT - 1)
}

/// Bytes before a frame's first byte in its slot: the slot header and the link address,
/// aligned (the kernel's `macoff` for a 14-byte Ethernet header is 66 of these 80).
const SLOT_OVERHEAD: usize = 80;

/// The slot size for frames up to `max_frame` bytes: overhead included, 16-byte aligned.
pub fn slot_bytes(max_frame: usize) -> usize {
    align(SLOT_OVERHEAD + max_frame)
}

/// A packet socket whose arrivals land in a receive ring; it sends like [`PacketSocket`].
#[derive(Debug)]
pub struct PacketRing {
    socket: PacketSocket,
    map: *mut u8,
    map_len: usize,
    slot: usize,
    slots_per_block: usize,
    block: usize,
    slots: usize,
    next: Cell<usize>,
}

// SAFETY: the mapping is owned by this value and only touched through `&self` methods of one
// thread at a time (`PacketRing` is not `Sync`: `next` is a `Cell`).
unsafe impl Send for PacketRing {}

impl PacketRing {
    /// Opens a packet socket on `ifname` (as [`PacketSocket::open`]) with a receive ring of
    /// about `ring_bytes`, in slots that hold frames up to `max_frame` bytes whole.
    pub fn open(
        ifname: &str,
        opts: PacketOptions,
        max_frame: usize,
        ring_bytes: usize,
    ) -> io::Result<Self> {
        let socket = PacketSocket::open(ifname, opts)?;
        let fd = socket.raw_fd();
        use crate::sockopt::set_int;
        set_int(fd, libc::SOL_PACKET, PACKET_VERSION, TPACKET_V2)?;
        set_int(fd, libc::SOL_PACKET, PACKET_COPY_THRESH, 1)?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let slot = slot_bytes(max_frame);
        // A block holds at least 8 slots (slots never straddle blocks).
        let block = (slot * 8).div_ceil(page) * page;
        let blocks = (ring_bytes / block).max(1);
        let slots_per_block = block / slot;
        let req = TpacketReq {
            tp_block_size: block as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: slot as u32,
            tp_frame_nr: (blocks * slots_per_block) as u32,
        };
        // SAFETY: `req` is a live tpacket_req of the size passed.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                PACKET_RX_RING,
                &req as *const TpacketReq as *const libc::c_void,
                std::mem::size_of::<TpacketReq>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        let map_len = block * blocks;
        // SAFETY: maps the ring the kernel just made for this descriptor; checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(PacketRing {
            socket,
            map: map as *mut u8,
            map_len,
            slot,
            slots_per_block,
            block,
            slots: blocks * slots_per_block,
            next: Cell::new(0),
        })
    }

    /// Slots in the ring.
    pub fn slots(&self) -> usize {
        self.slots
    }

    fn slot_ptr(&self, i: usize) -> *mut u8 {
        let (b, s) = (i / self.slots_per_block, i % self.slots_per_block);
        // SAFETY: b < blocks and s < slots_per_block, so the offset is inside the mapping.
        unsafe { self.map.add(b * self.block + s * self.slot) }
    }

    fn status(&self, p: *mut u8) -> &AtomicU32 {
        // SAFETY: each slot starts with the 4-aligned u32 status the kernel and we share.
        unsafe { AtomicU32::from_ptr(p as *mut u32) }
    }

    /// Receives one frame into `buf` (truncated to it; `len` keeps the wire length);
    /// `Ok(None)` when the ring holds nothing. Frames this host sent are skipped when the
    /// socket ignores outgoing ones (the kernel does not put them in the ring).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        loop {
            let i = self.next.get();
            let p = self.slot_ptr(i);
            let status = self.status(p).load(Ordering::Acquire);
            if status & TP_STATUS_USER == 0 {
                return Ok(None);
            }
            // SAFETY: the slot is ours until we hand it back: read its header and frame, all
            // within the slot (the kernel keeps tp_mac + tp_snaplen <= the slot size).
            let (len, snap, mac, sec, nsec, pkttype) = unsafe {
                let h = &*(p as *const Tpacket2Hdr);
                let sll = &*(p.add(align(std::mem::size_of::<Tpacket2Hdr>()))
                    as *const libc::sockaddr_ll);
                (
                    h.tp_len as usize,
                    h.tp_snaplen as usize,
                    h.tp_mac as usize,
                    h.tp_sec as u64,
                    h.tp_nsec as u64,
                    sll.sll_pkttype,
                )
            };
            let stamp_ns = sec * 1_000_000_000 + nsec;
            let outgoing = pkttype == libc::PACKET_OUTGOING;
            let whole = status & TP_STATUS_COPY == 0;
            let stored = if whole {
                let n = snap.min(buf.len());
                // SAFETY: tp_mac + tp_snaplen lies within the slot (see above).
                let src = unsafe { std::slice::from_raw_parts(p.add(mac), n) };
                buf[..n].copy_from_slice(src);
                n
            } else {
                0
            };
            self.status(p).store(TP_STATUS_KERNEL, Ordering::Release);
            self.next.set((i + 1) % self.slots);
            if whole && stored < len.min(buf.len()) {
                // Cut to the slot with no copy queued (the receive queue was full): dropped,
                // as the kernel drops a frame its queue has no room for.
                continue;
            }
            if !whole {
                // The whole frame waits on the receive queue, in arrival order.
                match self.socket.recv(buf)? {
                    Some(r) => return Ok(Some(Received { stamp_ns, ..r })),
                    None => continue,
                }
            }
            return Ok(Some(Received {
                len,
                stored,
                stamp_ns,
                outgoing,
            }));
        }
    }

    /// Sends one whole frame (as [`PacketSocket::send`]).
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        self.socket.send(frame)
    }

    /// Sends whole frames in order (as [`PacketSocket::send_many`]).
    pub fn send_many<F: AsRef<[u8]>>(&self, frames: &[F]) -> usize {
        self.socket.send_many(frames)
    }

    /// The descriptor, for polling (readable when a slot holds a frame).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.socket.raw_fd()
    }
}

impl Drop for PacketRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `open`, used by no one after this.
        unsafe {
            libc::munmap(self.map as *mut libc::c_void, self.map_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the test may run (root); otherwise it is skipped (failing under
    /// WEFT_TEST_STRICT=1).
    fn root() -> bool {
        let why = weft_testutil::missing_root("AF_PACKET");
        if let Some(why) = &why {
            weft_testutil::skip(why);
        }
        why.is_none()
    }

    /// Sends `n` datagrams of `size` bytes to itself on loopback and returns their length on
    /// the wire (Ethernet, IPv4, UDP headers included).
    fn loopback_datagrams(n: usize, size: usize) -> (usize, u8) {
        let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mark = (size % 200) as u8 + 17;
        for _ in 0..n {
            a.send_to(&vec![mark; size], a.local_addr().unwrap())
                .unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        (14 + 20 + 8 + size, mark)
    }

    fn mine(r: &Received, buf: &[u8], wire: usize, mark: u8) -> bool {
        r.len == wire && buf[14] == 0x45 && buf[r.stored - 1] == mark
    }

    /// Every arrival is read once from the ring, whole, in order past the ring's end (more
    /// frames than slots, read in rounds), with a receive time, and never an outgoing one.
    #[test]
    fn ring_frames_arrive_once_whole_and_stamped() {
        if !root() {
            return;
        }
        weft_testutil::in_private_netns(ring_frames_in_order);
    }

    fn ring_frames_in_order() {
        let ring =
            PacketRing::open("lo", PacketOptions::switch_port(1 << 20), 2048, 1 << 16).unwrap();
        let slots = ring.slots();
        assert!(slots >= 8, "{slots}");
        let mut buf = [0u8; 2048];
        let mut seen = 0;
        for _round in 0..3 {
            let (wire, mark) = loopback_datagrams(slots / 2, 700);
            while let Some(r) = ring.recv(&mut buf).unwrap() {
                assert!(!r.outgoing);
                if mine(&r, &buf, wire, mark) {
                    assert_eq!(r.stored, wire);
                    assert!(r.stamp_ns > 1_600_000_000 * 1_000_000_000);
                    seen += 1;
                }
            }
        }
        assert_eq!(seen, 3 * (slots / 2));
    }

    /// A frame longer than a slot comes whole, through the copy on the receive queue.
    #[test]
    fn a_frame_longer_than_a_slot_comes_whole() {
        if !root() {
            return;
        }
        weft_testutil::in_private_netns(long_frames_whole);
    }

    fn long_frames_whole() {
        let ring =
            PacketRing::open("lo", PacketOptions::switch_port(1 << 20), 256, 1 << 16).unwrap();
        let (wire, mark) = loopback_datagrams(2, 3000);
        let mut buf = vec![0u8; 9000];
        let mut seen = 0;
        while let Some(r) = ring.recv(&mut buf).unwrap() {
            if mine(&r, &buf, wire, mark) {
                assert_eq!(r.stored, wire);
                assert!(r.stamp_ns > 1_600_000_000 * 1_000_000_000);
                seen += 1;
            }
        }
        assert_eq!(seen, 2);
    }
}
