//! A message's path through the software of its two hosts (NASA's LACE, study 001, section
//! "ATM API and PVM"): straight through the kernel's sockets, relayed by PVM's daemons, or
//! through a vendor's ATM API, and what each costs on top of the host's own calls.
//!
//! A [`MsgPath`] turns a host's [`HostCosts`] (its calls, packets and bytes for one message
//! through its sockets) into the costs of one message along the path, so that any engine that
//! charges a host's costs charges the path's. The costs are counted per side as a fitted preset
//! reads them (`rs6000-lace`: the send call is the sending host's part of a message, the
//! receive call the receiving host's):
//! - a *relay* (PVM's daemon on the host: the task's message read by `pvmd` and written on) adds
//!   one receive and one send, with their packets and bytes, to its side;
//! - the *vendor API* (FORE's, through STREAMS: "causing a context switch, whereas the UDP
//!   protocol is implemented entirely within the kernel"; the API still makes its system calls
//!   "with the operating system (and IP)") adds its crossing, [`HostCosts`]-free time
//!   `api_crossing_ns`, to each side's call.
//!
//! The paths of figures 11, 13 and 14: UDP ([`MsgPath::Socket`]), the API alone (figure 11's,
//! and PvmRouteAal's, the PVM designers' port with the Direct Route: [`MsgPath::Api`]), PVM's
//! default route over UDP ([`MsgPath::PvmDaemon`]: task to `pvmd` over TCP, `pvmd` to `pvmd`
//! over UDP, `pvmd` to task) and PVM's daemons over the API ([`MsgPath::PvmApi`], the nominal
//! port: the daemons' UDP replaced by the API). A local hop is charged the host's socket call,
//! which for a preset fitted over an adapter bounds it from above.

use super::HostCosts;

/// How a message goes from one task to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgPath {
    /// One socket call each side (UDP/IP or TCP/IP in the kernel).
    Socket,
    /// Through the vendor's API each side, its crossing added to the call.
    Api,
    /// PVM's daemon route: a daemon relays the message on each side, over sockets.
    PvmDaemon,
    /// PVM's daemons relaying over the vendor's API.
    PvmApi,
}

impl MsgPath {
    /// Daemons that relay the message on each side.
    pub const fn relays(self) -> u32 {
        match self {
            MsgPath::Socket | MsgPath::Api => 0,
            MsgPath::PvmDaemon | MsgPath::PvmApi => 1,
        }
    }

    /// Whether the message crosses the vendor's API (once on each side).
    pub const fn api(self) -> bool {
        matches!(self, MsgPath::Api | MsgPath::PvmApi)
    }

    /// `host`'s costs for one message along this path, named `name`: each side's call, packet
    /// and byte costs plus a receive and a send per relay, and `api_crossing_ns` (ns) on each
    /// side's call if the path crosses the API.
    pub fn costs(self, host: &HostCosts, api_crossing_ns: f64, name: &'static str) -> HostCosts {
        let k = f64::from(self.relays());
        let api = if self.api() { api_crossing_ns } else { 0.0 };
        let relay_call = host.send_call_ns + host.recv_call_ns;
        let relay_packet = host.send_packet_ns + host.recv_packet_ns;
        let relay_byte = host.send_other_ns_per_byte + host.recv_other_ns_per_byte;
        let relay_copies = (host.send_copies + host.recv_copies) * self.relays();
        HostCosts {
            name,
            send_call_ns: host.send_call_ns + k * relay_call + api,
            recv_call_ns: host.recv_call_ns + k * relay_call + api,
            send_packet_ns: host.send_packet_ns + k * relay_packet,
            recv_packet_ns: host.recv_packet_ns + k * relay_packet,
            send_copies: host.send_copies + relay_copies,
            recv_copies: host.recv_copies + relay_copies,
            checksum_ns_per_byte: host.checksum_ns_per_byte * (1.0 + 2.0 * k),
            send_other_ns_per_byte: host.send_other_ns_per_byte + k * relay_byte,
            recv_other_ns_per_byte: host.recv_other_ns_per_byte + k * relay_byte,
            ..host.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostCosts {
        HostCosts {
            send_call_ns: 100.0,
            recv_call_ns: 200.0,
            send_packet_ns: 10.0,
            recv_packet_ns: 20.0,
            copy_ns_per_byte: 1.0,
            send_copies: 1,
            recv_copies: 2,
            send_other_ns_per_byte: 3.0,
            recv_other_ns_per_byte: 4.0,
            ..HostCosts::FREE
        }
    }

    #[test]
    fn a_socket_path_is_the_host_itself() {
        let h = host();
        assert_eq!(MsgPath::Socket.costs(&h, 5e6, "free"), h);
    }

    #[test]
    fn a_daemon_relays_a_receive_and_a_send_on_each_side() {
        let p = MsgPath::PvmDaemon.costs(&host(), 5e6, "pvm");
        assert_eq!((p.send_call_ns, p.recv_call_ns), (400.0, 500.0));
        assert_eq!((p.send_packet_ns, p.recv_packet_ns), (40.0, 50.0));
        assert_eq!((p.send_copies, p.recv_copies), (4, 5));
        assert_eq!(
            (p.send_other_ns_per_byte, p.recv_other_ns_per_byte),
            (10.0, 11.0)
        );
    }

    #[test]
    fn the_api_adds_its_crossing_to_each_sides_call_only() {
        let h = host();
        let a = MsgPath::Api.costs(&h, 5e6, "api");
        assert_eq!((a.send_call_ns, a.recv_call_ns), (5_000_100.0, 5_000_200.0));
        assert_eq!(
            a.per_byte_ns(super::super::Direction::Send),
            h.per_byte_ns(super::super::Direction::Send)
        );
        let n = MsgPath::PvmApi.costs(&h, 5e6, "pvm-api");
        assert_eq!((n.send_call_ns, n.recv_call_ns), (5_000_400.0, 5_000_500.0));
    }
}
