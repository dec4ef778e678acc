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
#  5. simulated TCP on a dumbbell: FLOWS bulk TCP flows (Linux-like NewReno with SACK) from
#     FLOWS senders through a bottleneck trunk of DB_RATE to FLOWS receivers, weft against ns-3
#     on the same topology (bench/sim-ns3-tcp-dumbbell.cc); prints TCP segments (data and ACKs)
#     simulated per CPU second of each (target for weft >= 5e6) and the ratio (target >= 20x).
#     Medians of DB_RUNS runs of each, alternating, with the load average before each.
# Environment: HOSTS (4), RATE (100Mbps), LOAD (0.5 of the link per host), SIZE (1472 B UDP payload),
# QUEUE (100 packets), TIME (5 s simulated), FIFO_SLOTS (2e7), ISLIP_SLOTS (2e6), OQ_MS (2000);
# FLOWS (16), DB_RATE (1Gbps, every link), DB_DELAY (50us per link), DB_QUEUE (100 packets),
# DB_TIME (weft 10 s simulated; ns-3 DB_NS3_TIME, 2 s, as it is far slower), DB_RUNS (3).
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
NS3_LIBS="-lns3-core -lns3-network -lns3-internet -lns3-point-to-point -lns3-applications -lns3-traffic-control -lns3-bridge"
ns3bin=target/release/weft-ns3-many-to-one
if [ ! -x "$ns3bin" ] || [ bench/sim-ns3-many-to-one.cc -nt "$ns3bin" ]; then
  g++ -O2 -std=c++17 -o "$ns3bin" bench/sim-ns3-many-to-one.cc $(pkg-config --cflags ns3-core) \
    $NS3_LIBS
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

FLOWS=${FLOWS:-16} DB_RATE=${DB_RATE:-1Gbps} DB_DELAY=${DB_DELAY:-50us} DB_QUEUE=${DB_QUEUE:-100}
DB_TIME=${DB_TIME:-10} DB_NS3_TIME=${DB_NS3_TIME:-2} DB_RUNS=${DB_RUNS:-3}
echo "== TCP dumbbell: $FLOWS flows, every link $DB_RATE and $DB_DELAY, bottleneck queue $DB_QUEUE packets; weft ${DB_TIME}s, ns-3 ${DB_NS3_TIME}s simulated"
cargo build --release -q -p weft-sim --example tcpbench
ns3db=target/release/weft-ns3-tcp-dumbbell
if [ ! -x "$ns3db" ] || [ bench/sim-ns3-tcp-dumbbell.cc -nt "$ns3db" ]; then
  g++ -O2 -std=c++17 -o "$ns3db" bench/sim-ns3-tcp-dumbbell.cc $(pkg-config --cflags ns3-core 2>/dev/null) $NS3_LIBS
fi
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
w_rates=() n_rates=()
for run in $(seq "$DB_RUNS"); do
  echo "run $run, load: $(cut -d" " -f1-3 /proc/loadavg)"
  w=$(taskset -c 0 target/release/examples/tcpbench "$FLOWS" "$DB_RATE" "$DB_DELAY" "$DB_QUEUE" "$DB_TIME" 2>/dev/null \
      || target/release/examples/tcpbench "$FLOWS" "$DB_RATE" "$DB_DELAY" "$DB_QUEUE" "$DB_TIME")
  echo "  $w"
  n=$(taskset -c 0 "$ns3db" --flows="$FLOWS" --rate="$DB_RATE" --delay="$DB_DELAY" --queue="$DB_QUEUE" --time="$DB_NS3_TIME" 2>/dev/null \
      || "$ns3db" --flows="$FLOWS" --rate="$DB_RATE" --delay="$DB_DELAY" --queue="$DB_QUEUE" --time="$DB_NS3_TIME")
  echo "  $n"
  w_rates+=("$(awk -v s="$(field "$w" segments)" -v c="$(field "$w" cpu_s)" 'BEGIN { printf "%.0f", s / (c > 0 ? c : 1e-9) }')")
  n_rates+=("$(awk -v s="$(field "$n" segments)" -v c="$(field "$n" cpu_s)" 'BEGIN { printf "%.0f", s / (c > 0 ? c : 1e-9) }')")
done
wm=$(printf '%s\n' "${w_rates[@]}" | median)
nm=$(printf '%s\n' "${n_rates[@]}" | median)
awk -v w="$wm" -v n="$nm" 'BEGIN {
  printf "TCP segments per CPU second, median: weft %.3g (target >= 5e6), ns-3 %.3g\n", w, n
  printf "weft is %.1fx faster than ns-3 on the TCP dumbbell (target >= 20x)\n", w / (n > 0 ? n : 1e-9)
}'
echo "load after: $(cut -d" " -f1-3 /proc/loadavg)"
