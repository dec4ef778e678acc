#!/usr/bin/env bash
# bench/emu-io.sh: how frames should enter and leave the userspace switch, measured.
# The same busy-polling forwarder (crates/weft-emu/examples/io_paths.rs) moves frames between two
# namespaced hosts either through AF_PACKET sockets on the switch's ends of veth pairs (what the
# emulator uses) or through TAP devices whose other side is the host's interface. Measured with
# iperf3: 64-byte-frame packet rate (UDP, 18-byte payloads) and TCP throughput at MTU 9000, with
# offloads off as in an emulation. Prints both and the ratio TAP / AF_PACKET.
# Not a test: needs root, iperf3, ethtool, python3. Environment: T (seconds per run, default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then echo "bench/emu-io.sh: needs root (network namespaces)"; exit 2; fi
for t in iperf3 python3 ethtool; do
  command -v "$t" >/dev/null || { echo "bench/emu-io.sh: needs $t"; exit 2; }
done
T=${T:-5}
cargo build --release --quiet -p weft-emu --example io_paths
FWD=$PWD/target/release/examples/io_paths
SW=weft-io-sw; A=weft-io-a; B=weft-io-b
tmp=$(mktemp -d)
teardown() {
  [ -n "${fwd_pid:-}" ] && kill "$fwd_pid" 2>/dev/null || true
  for n in $A $B $SW; do ip netns del "$n" 2>/dev/null || true; done
}
cleanup() { teardown; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

host_up() { # ns ifname addr
  ip -n "$1" link set lo up
  ip -n "$1" link set "$2" mtu 9000 up
  ip -n "$1" addr add "$3/24" dev "$2"
  ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
}
fresh() {
  teardown
  ip netns add $SW; ip netns add $A; ip netns add $B
}
tcp_bps() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["end"]["sum_received"]["bits_per_second"])'; }
udp_pps() { python3 -c 'import json,sys; s=json.load(sys.stdin)["end"]["sum"]; print((s["packets"]-s["lost_packets"])/s["seconds"])'; }
measure() { # prints "tcp_bps pps"
  ip netns exec $B iperf3 -s -D -1 >/dev/null; sleep 0.3
  local t; t=$(ip netns exec $A iperf3 -c 10.79.0.2 -t "$T" -J | tcp_bps)
  ip netns exec $B iperf3 -s -D -1 >/dev/null; sleep 0.3
  local p; p=$(ip netns exec $A iperf3 -c 10.79.0.2 -u -b 0 -l 18 -t "$T" -J | udp_pps)
  echo "$t $p"
}

echo "== AF_PACKET on veth ends"
fresh
i=0
for h in $A $B; do
  ip link add eth0 netns $h type veth peer name p$i netns $SW
  ip -n $SW link set p$i mtu 9000 up
  ip netns exec $SW ethtool -K p$i tso off gso off gro off tx off rx off >/dev/null
  host_up $h eth0 10.79.0.$((i+1))
  i=$((i+1))
done
ip netns exec $SW "$FWD" packet p0 p1 $((2 * T + 4)) > "$tmp/packet.out" &
fwd_pid=$!
sleep 0.5
read -r pk_tcp pk_pps < <(measure)
kill "$fwd_pid" 2>/dev/null || true; wait "$fwd_pid" 2>/dev/null || true; fwd_pid=

echo "== TAP devices"
fresh
mkfifo "$tmp/go"
ip netns exec $SW "$FWD" tap wtap0 wtap1 $((2 * T + 4)) < "$tmp/go" > "$tmp/tap.out" &
fwd_pid=$!
exec 3> "$tmp/go"
until grep -q ready "$tmp/tap.out" 2>/dev/null; do sleep 0.05; done
i=0
for h in $A $B; do
  ip -n $SW link set wtap$i netns $h
  ip -n $h link set wtap$i name eth0
  host_up $h eth0 10.79.0.$((i+1))
  i=$((i+1))
done
echo go >&3
sleep 0.3
read -r tap_tcp tap_pps < <(measure)
exec 3>&-
kill "$fwd_pid" 2>/dev/null || true; wait "$fwd_pid" 2>/dev/null || true; fwd_pid=

python3 - "$pk_tcp" "$tap_tcp" "$pk_pps" "$tap_pps" <<'PY'
import sys
pt, tt, pp, tp = map(float, sys.argv[1:])
print(f"TCP MTU 9000: AF_PACKET {pt/1e9:.2f} Gbit/s, TAP {tt/1e9:.2f} Gbit/s, TAP/AF_PACKET {tt/pt:.2f}x")
print(f"64-byte frames: AF_PACKET {pp/1e3:.0f} kpps, TAP {tp/1e3:.0f} kpps, TAP/AF_PACKET {tp/pp:.2f}x")
PY
