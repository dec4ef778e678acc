#!/usr/bin/env bash
# bench/emu.sh: the userspace switch against a kernel bridge, and how many OC-3c hosts it carries.
# Not a test (needs root, iperf3, python3; spends about a minute). Prints ratios; rerun on a quiet
# machine, the numbers on a busy one mean little.
#   1. TCP throughput (iperf3, MTU 9000) and 64-byte-frame packet rate (iperf3 UDP, 18-byte
#      payloads) between two namespaces, through `weft emu` with unlimited link rates and through
#      a kernel bridge with the same offload settings (TSO/GSO/GRO/checksum off). Target: TCP
#      >= 0.3x the bridge.
#   2. The largest number of OC-3c hosts the switch carries at full rate with lag p99 <= 50 us.
# Environment: T (seconds per iperf3 run, default 5), MAX_HOSTS (default 32).
# The switch thread busy-polls while the bridge's work happens in softirq context of
# whoever sends: on a busy machine that favours weft; compare on a quiet one.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then echo "bench/emu.sh: needs root (network namespaces)"; exit 2; fi
for t in iperf3 python3 ethtool; do
  command -v "$t" >/dev/null || { echo "bench/emu.sh: needs $t"; exit 2; }
done
T=${T:-5}
MAX_HOSTS=${MAX_HOSTS:-32}
cargo build --release --quiet -p weft
cargo build --release --quiet -p weft-emu --example emu_hosts
W=target/release/weft
tmp=$(mktemp -d)
BR=weft-bench-br; A=weft-bench-a; B=weft-bench-b
cleanup() {
  for n in $A $B $BR; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

cat > "$tmp/fast.toml" <<TOML
name = "bench-fast"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "sw"
fabric = "output-queued"
[[link]]
ends = ["a", "sw"]
tech = { preset = "10gige-jumbo", line_rate = "1Tbps", rate = "1Tbps" }
[[link]]
ends = ["sw", "b"]
tech = { preset = "10gige-jumbo", line_rate = "1Tbps", rate = "1Tbps" }
TOML

tcp_bps() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["end"]["sum_received"]["bits_per_second"])'; }
udp_pps() { python3 -c 'import json,sys; s=json.load(sys.stdin)["end"]["sum"]; print((s["packets"]-s["lost_packets"])/s["seconds"])'; }
# The stdout of the last --exec step of a `weft emu run --json` document.
last_stdout() { python3 -c 'import json,sys; print(json.load(sys.stdin)["samples"][-1]["stdout"])'; }

echo "== weft switch (unlimited rates, MTU 9000)"
weft_tcp=$($W emu run "$tmp/fast.toml" --json --exec 'b: iperf3 -s -1 &' \
  --exec "a: iperf3 -c 10.77.0.2 -t $T -J" 2>/dev/null | last_stdout | tcp_bps)
weft_pps=$($W emu run "$tmp/fast.toml" --json --exec 'b: iperf3 -s -1 &' \
  --exec "a: iperf3 -c 10.77.0.2 -u -b 0 -l 18 -t $T -J" 2>/dev/null | last_stdout | udp_pps)

echo "== kernel bridge (same offloads)"
ip netns add $BR; ip netns add $A; ip netns add $B
ip -n $BR link add br0 type bridge
ip -n $BR link set br0 up
i=1
for h in $A $B; do
  ip link add eth0 netns $h type veth peer name p$i netns $BR
  ip -n $BR link set p$i master br0 mtu 9000 up
  ip -n $h link set lo up
  ip -n $h link set eth0 mtu 9000 up
  ip -n $h addr add 10.78.0.$i/24 dev eth0
  ip netns exec $h ethtool -K eth0 tso off gso off gro off tx off rx off >/dev/null
  ip netns exec $BR ethtool -K p$i tso off gso off gro off tx off rx off >/dev/null
  i=$((i+1))
done
ip netns exec $B iperf3 -s -D -1 >/dev/null; sleep 0.3
br_tcp=$(ip netns exec $A iperf3 -c 10.78.0.2 -t "$T" -J | tcp_bps)
ip netns exec $B iperf3 -s -D -1 >/dev/null; sleep 0.3
br_pps=$(ip netns exec $A iperf3 -c 10.78.0.2 -u -b 0 -l 18 -t "$T" -J | udp_pps)

python3 - "$weft_tcp" "$br_tcp" "$weft_pps" "$br_pps" <<'PY'
import sys
wt, bt, wp, bp = map(float, sys.argv[1:])
print(f"TCP MTU 9000: weft {wt/1e9:.2f} Gbit/s, bridge {bt/1e9:.2f} Gbit/s, ratio {wt/bt:.2f}x (target >= 0.3x)")
print(f"64-byte frames: weft {wp/1e3:.0f} kpps, bridge {bp/1e3:.0f} kpps, ratio {wp/bp:.2f}x")
PY

echo "== OC-3c hosts at full rate (lag p99 <= 50 us)"
target/release/examples/emu_hosts "$MAX_HOSTS" 50 2
