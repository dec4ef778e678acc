//! Emulation: namespaced Linux hosts talking through weft's userspace switch.
//!
//! Each host of a [`Topology`] gets a network namespace (`weft-<run>-<host>`) joined by a veth
//! pair to the switch's namespace (`weft-<run>`). One thread of this process runs the topology's
//! network of switches — `weft-model`'s [`weft_model::net::Network`], the same sans-IO code the
//! simulator runs (links with their rate, framing, delay, buffers, drop policies, faults and VC
//! contracts; output-queued, input-FIFO or VOQ/iSLIP fabrics; trunks between switches) — on the
//! one event engine ([`weft_model::engine::run`]) against the wall clock, reading whole Ethernet
//! frames from AF_PACKET sockets on the switch ends and writing them out when due ([`driver`]).
//! This crate keeps only what touches the system: namespaces, frame I/O, the wall clock and
//! clean-up. Namespaces are created and removed with `ip` (iproute2); offloads are turned off
//! with `ethtool` so that frames are real-sized.
//!
//! Choices, and why:
//! - `ip`/`ethtool` rather than netlink: a handful of commands per host at bring-up, the same an
//!   operator would type, and errors that say which command failed.
//! - AF_PACKET (`recvmsg`/`send`, non-blocking, kernel receive timestamps) on the switch ends of
//!   veth pairs. Each frame is stamped with the time the kernel queued it, so the switch's own
//!   wake-up latency does not delay it. Measured against TAP devices with the same busy-polling
//!   forwarder (`bench/emu-io.sh`, quiet 2-core VM): TAP moved 1.17x the TCP throughput (4.64
//!   against 3.96 Gbit/s at MTU 9000) and 1.08x the 64-byte frames (73 against 68 kpps), but a
//!   TAP `read` carries no receive timestamp, and emulated timing matters more here than 8-17%
//!   of unlimited-rate speed. Frames are read from a TPACKET_V2 `PACKET_MMAP` receive ring per
//!   port ([`port_io`]: no system call to look at an empty port; `WEFT_EMU_RX=recvmsg` reads
//!   them with one `recvmsg` each), and a turn's frames to one port leave in one `sendmmsg`
//!   ([`tx_batch`]; `WEFT_EMU_TX=send` sends each on its own). The ring became the default when
//!   a quiet machine confirmed it (bench/emu.sh, load 0.1: TCP 5.76 against 3.38 Gbit/s, 8
//!   OC-3c hosts lag p99 66 against 209 us, 64-byte frames 93 against 95 kpps). Measured alternating on the shared 2-core VM
//!   (2026-11-28, load 3-9, so noisy): 16 OC-3c hosts lag p99 165 us and 44 ms with the ring
//!   against 82 and 132 ms with `recvmsg`, 8 hosts p99 47 us and 40 ms against 58 us and 10 ms;
//!   unlimited rates (`bench/emu.sh`, T=3, medians of 2 at load 9): TCP 3.41 against 2.41
//!   Gbit/s (bridge 5.89), 64-byte frames 33 against 52 kpps (bridge 63): the ring's copy into
//!   its slot is done by the sender's softirq, which small frames feel. TPACKET_V3 was not
//!   used (it hands frames over a block at a time, after up to 1 ms); AF_XDP was not tried.
//! - The switch thread busy-polls while it holds frames or saw one in the last 50 ms, and sleeps
//!   in `ppoll` only when idle; while it runs, idle-class threads keep every CPU from halting
//!   ([`keep_awake`]). Measured on this 2-core VM (100 pings over an OC-3c path of 17 ms): with
//!   SCHED_FIFO and `ppoll` until 100 us before each deadline, 23% of pings were 0.2-16 ms late
//!   and the switch's lag p99 was 3.3 ms, because a halted virtual CPU wakes up 0.1-1 ms late and
//!   a SCHED_FIFO thread that spins is throttled 50 ms in every second; busy-polling under normal
//!   scheduling with the keep-awake threads: 99% within 0.1 ms, lag p99 2-3 us. Lag (how late a
//!   frame left against its due time) is recorded as percentiles and reported.
//! - TCP windows are enforced at the sender (bytes unacknowledged, `SIOCOUTQ`) in
//!   [`workload::tcp_bulk`]: Linux 6.x keeps `TCP_WINDOW_CLAMP` only until the first data
//!   segments change the socket's `scaling_ratio`, when `tcp_measure_rcv_mss` resets the clamp
//!   to what the receive buffer holds (`tcp_set_window_clamp(sk, tcp_win_from_space(sk,
//!   sk_rcvbuf))`). The clamp still sets the window scale and the SYN's window: captured at a
//!   35600-byte clamp and MSS 4438, shift 0 and 35504 bytes, then 44380, 53256, 62132 and
//!   65535 (the largest a shift of 0 carries).

pub mod driver;
pub mod emulation;
pub mod error;
pub mod guard;
pub mod keep_awake;
pub mod lag;
pub mod netns;
pub mod port_io;
pub mod rr_tcp;
pub mod scenario;
pub mod signals;
pub mod state;
pub mod tx_batch;
pub mod vc_agent;
pub mod vc_control;
pub mod vc_manager;
pub mod vc_scenario;
pub mod workload;

pub use emulation::{Emulation, HostInfo, UpOptions};
pub use error::EmuError;
pub use weft_model::net::{FabricKind, FabricSpec, HostSpec, LinkSpec, Topology};
