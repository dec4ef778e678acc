#!/usr/bin/env bash
# bench/emu.sh: the userspace switch against a kernel bridge, and how many OC-3c hosts it carries.
# Not a test (needs root, iperf3, python3, ethtool; spends a few minutes). Prints each figure
# beside its target (issue 30) with the load average; rerun on a quiet machine, the numbers on a
# busy one mean little.
#   1. TCP throughput (iperf3, MTU 9000) and 64-byte-frame packet rate (iperf3 UDP, 18-byte
#      payloads) between two namespaces, through `weft emu` with unlimited link rates and through
#      a kernel bridge with the same offload settings (TSO/GSO/GRO/checksum off), ROUNDS rounds
#      alternating the switch's I/O paths (VARIANTS, each RX/TX: receive `ring`, a TPACKET_V2
#      PACKET_MMAP ring, or `recvmsg`, one system call a frame, crates/weft-emu/src/port_io.rs;
#      send `batch`, a turn's frames to a port in one sendmmsg, or `send`, one call a frame,
#      crates/weft-emu/src/tx_batch.rs) and the bridge; medians. Targets: TCP >= 0.7x the
#      bridge, 64-byte frames >= 0.7x its packet rate.
#   2. The largest number of OC-3c hosts the switch carries at full rate with lag p99 <= 50 us,
#      per I/O path, from FIRST_HOSTS up. Target: >= 16.
# Environment: T (seconds per iperf3 run, default 5), ROUNDS (default 3), VARIANTS (default
# "ring/batch ring/send recvmsg/send": the default, then the paths it replaced), MAX_HOSTS
# (default 32), FIRST_HOSTS (default 8), HOST_VARIANTS (the paths part 2 tries, default
# VARIANTS).
# The switch thread busy-polls while the bridge's work happens in softirq context of
# whoever sends: on a busy machine that favours weft; compare on a quiet one.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then echo "bench/emu.sh: needs root (network namespaces)"; exit 2; fi
for t in iperf3 python3 ethtool; do
  command -v "$t" >/dev/null || { echo "bench/emu.sh: needs $t"; exit 2; }
done
T=${T:-5}
ROUNDS=${ROUNDS:-3}
VARIANTS=${VARIANTS:-ring/batch ring/send recvmsg/send}
HOST_VARIANTS=${HOST_VARIANTS:-$VARIANTS}
MAX_HOSTS=${MAX_HOSTS:-32}
FIRST_HOSTS=${FIRST_HOSTS:-8}
# One command for both, so that the features of the crates they share unify the same way on
# every run (built apart, each build undoes the other's).
nice cargo build --release --quiet -p weft -p weft-emu --example emu_hosts
W=target/release/weft
tmp=$(mktemp -d)
BR=weft-bench-br; A=weft-bench-a; B=weft-bench-b
cleanup() {
  for n in $A $B $BR; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
load() { cut -d' ' -f1 /proc/loadavg; }

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

# Each line of $tmp/runs: KIND VARIANT VALUE LOAD
for r in $(seq "$ROUNDS"); do
  for v in $VARIANTS; do
    export WEFT_EMU_RX=${v%/*} WEFT_EMU_TX=${v#*/}
    l=$(load)
    x=$($W emu run "$tmp/fast.toml" --json --exec 'b: iperf3 -s -1 &' \
      --exec "a: iperf3 -c 10.77.0.2 -t $T -J" 2>/dev/null | last_stdout | tcp_bps)
    echo "tcp $v $x $l" | tee -a "$tmp/runs"
    l=$(load)
    x=$($W emu run "$tmp/fast.toml" --json --exec 'b: iperf3 -s -1 &' \
      --exec "a: iperf3 -c 10.77.0.2 -u -b 0 -l 18 -t $T -J" 2>/dev/null | last_stdout | udp_pps)
    echo "pps $v $x $l" | tee -a "$tmp/runs"
  done
  ip netns exec $B iperf3 -s -1 >/dev/null 2>&1 & sleep 0.3
  l=$(load)
  x=$(ip netns exec $A iperf3 -c 10.78.0.2 -t "$T" -J | tcp_bps)
  wait
  echo "tcp bridge $x $l" | tee -a "$tmp/runs"
  ip netns exec $B iperf3 -s -1 >/dev/null 2>&1 & sleep 0.3
  l=$(load)
  x=$(ip netns exec $A iperf3 -c 10.78.0.2 -u -b 0 -l 18 -t "$T" -J | udp_pps)
  wait
  echo "pps bridge $x $l" | tee -a "$tmp/runs"
done

python3 - "$tmp/runs" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    kind, v, x, l = line.split()
    runs.setdefault((kind, v), []).append((float(x), float(l)))
med = lambda xs: statistics.median(x for x, _ in xs)
loads = lambda xs: "/".join(f"{l:.1f}" for _, l in xs)
for kind, unit, scale, name in (("tcp", "Gbit/s", 1e9, "TCP MTU 9000"), ("pps", "kpps", 1e3, "64-byte frames")):
    br = runs[(kind, "bridge")]
    print(f"{name}: bridge {med(br)/scale:.2f} {unit} (median of {len(br)}, load {loads(br)})")
    for (k, v), xs in runs.items():
        if k == kind and v != "bridge":
            print(f"  weft rx/tx={v}: {med(xs)/scale:.2f} {unit}, ratio {med(xs)/med(br):.2f}x "
                  f"(target >= 0.7x; median of {len(xs)}, load {loads(xs)})")
PY

echo "== OC-3c hosts at full rate (lag p99 <= 50 us; target >= 16)"
for v in $HOST_VARIANTS; do
  echo "-- rx/tx=$v, load $(load)"
  WEFT_EMU_RX=${v%/*} WEFT_EMU_TX=${v#*/} target/release/examples/emu_hosts "$MAX_HOSTS" 50 2 "$FIRST_HOSTS"
done
