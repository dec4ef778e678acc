#!/usr/bin/env bash
# Speed of weft's simulator (bench, not a test; run it on a quiet machine):
#  1. slot-port updates per CPU second, saturated 16x16 input-queued FIFO (target >= 1e8);
#  2. slot-port updates per CPU second, 32x32 VOQ + iSLIP (4 iterations, load 0.9);
#  3. events per CPU second, output-queued many-to-one (16 OC-3c hosts of AAL5 cells into one
#     output) on the one event engine and switch that the emulator runs (target >= 2e7);
#  4. weft against ns-3 (Debian package libns3-dev): HOSTS UDP senders on point-to-point links
#     into one drop-tail bottleneck, same packets, same simulated time; prints weft's speed as a
#     multiple of ns-3's (target >= 20x), on CPU time of the simulation loop alone. weft's side
#     runs the general engine (hosts, switch, links as any scenario), not a loop of its own.
# Environment: HOSTS (4), RATE (100Mbps), LOAD (0.5 of the link per host), SIZE (1472 B UDP payload),
# QUEUE (100 packets), TIME (5 s simulated), FIFO_SLOTS (2e7), ISLIP_SLOTS (2e6), OQ_MS (2000).
set -euo pipefail
cd "$(dirname "$0")/.."

HOSTS=${HOSTS:-4} RATE=${RATE:-100Mbps} LOAD=${LOAD:-0.5} SIZE=${SIZE:-1472}
QUEUE=${QUEUE:-100} TIME=${TIME:-5}

cargo build --release -q -p weft-sim --example simbench
bin=target/release/examples/simbench

echo "== weft simulator speed (one core); load: $(cut -d" " -f1-3 /proc/loadavg)"
taskset -c 0 "$bin" fifo "${FIFO_SLOTS:-2e7}" 2>/dev/null || "$bin" fifo "${FIFO_SLOTS:-2e7}"
taskset -c 0 "$bin" islip "${ISLIP_SLOTS:-2e6}" 2>/dev/null || "$bin" islip "${ISLIP_SLOTS:-2e6}"
taskset -c 0 "$bin" oq "${OQ_MS:-2000}" 2>/dev/null || "$bin" oq "${OQ_MS:-2000}"

echo "== many-to-one against ns-3: $HOSTS hosts x $LOAD of $RATE, ${SIZE}-byte UDP payloads, queue $QUEUE packets, ${TIME}s"
weft_line=$("$bin" m2o "$HOSTS" "$RATE" "$LOAD" "$SIZE" "$QUEUE" "$TIME")
echo "$weft_line"

if ! pkg-config --exists ns3-core 2>/dev/null && [ ! -e /usr/include/ns3/core-module.h ]; then
  echo "ns-3 not installed (apt-get install libns3-dev); no comparison"
  exit 0
fi
ns3bin=target/release/weft-ns3-many-to-one
if [ ! -x "$ns3bin" ] || [ bench/sim-ns3-many-to-one.cc -nt "$ns3bin" ]; then
  g++ -O2 -std=c++17 -o "$ns3bin" bench/sim-ns3-many-to-one.cc $(pkg-config --cflags ns3-core) \
    -lns3-core -lns3-network -lns3-internet -lns3-point-to-point -lns3-applications \
    -lns3-traffic-control -lns3-bridge
fi
ns3_line=$("$ns3bin" --hosts="$HOSTS" --rate="$RATE" --load="$LOAD" --size="$SIZE" --queue="$QUEUE" --time="$TIME")
echo "$ns3_line"

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
awk -v wc="$(field "$weft_line" cpu_s)" -v nc="$(field "$ns3_line" cpu_s)" \
    -v ws="$(field "$weft_line" sent)" -v ns="$(field "$ns3_line" sent)" \
    -v wr="$(field "$weft_line" received)" -v nr="$(field "$ns3_line" received)" 'BEGIN {
  printf "packets sent weft/ns-3: %d/%d, received: %d/%d\n", ws, ns, wr, nr
  if (wc <= 0) wc = 1e-6
  printf "weft is %.1fx faster than ns-3 (CPU %.4fs vs %.4fs; target >= 20x)\n", nc / wc, wc, nc
}'
