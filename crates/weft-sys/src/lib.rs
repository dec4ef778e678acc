//! The Linux system calls weft needs that `std` and `socket2` do not offer, in one crate, so that
//! every `unsafe` FFI call of the workspace's I/O lives here and each exists once:
//!
//! - [`poll`]: `ppoll` with a nanosecond time-out;
//! - [`packet`]: AF_PACKET sockets (whole Ethernet frames, kernel receive timestamps);
//! - [`packet_ring`]: the same with a `PACKET_MMAP` receive ring (no system call per frame);
//! - [`tap`]: TAP devices;
//! - [`netns`]: entering a network namespace (`setns`);
//! - [`sched`]: scheduling classes, CPU placement and timer slack;
//! - [`sockopt`]: TCP socket options (`TCP_CONGESTION`, `TCP_WINDOW_CLAMP`, `SIOCOUTQ`,
//!   forced buffer sizes) and a listener with them set before `listen`;
//! - [`process`]: root check and signals by process id;
//! - [`clock`]: CLOCK_MONOTONIC in nanoseconds;
//! - [`cpu`]: CPU time of a thread or the process (`getrusage`).
//!
//! Why not a crate: `nix` covers most of these but not AF_PACKET receive timestamps, TAP or
//! `TCP_WINDOW_CLAMP`, and would add a second layer of types over `libc` for a few dozen calls;
//! `socket2` is used where it has the setter (weft-probe's socket options). Every `unsafe` block
//! here is a plain FFI call on a descriptor the caller owns, with pointers to live, correctly sized
//! local values.

pub mod clock;
pub mod cpu;
pub mod netns;
pub mod packet;
pub mod packet_ring;
pub mod poll;
pub mod process;
pub mod sched;
pub mod sockopt;
pub mod tap;

pub use packet::{PacketOptions, PacketSocket, Received};
pub use packet_ring::PacketRing;
pub use poll::{ppoll_readable, readable};
pub use tap::TapDevice;
