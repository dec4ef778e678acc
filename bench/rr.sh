#!/usr/bin/env bash
# weft rr vs sockperf ping-pong on loopback: p50 and p99 round trips, UDP and TCP, 64-byte
# messages, with the same placement for both tools:
#   free   - neither tool pinned, both sleep in the kernel between messages (the defaults);
#   pinned - client on CPU 0, server on CPU 1 (weft: rr -A 0,1; sockperf: taskset);
#   spin   - pinned, and both ends spin on non-blocking sockets (weft: --busy-poll;
#            sockperf: --nonblocked on client and server).
# sockperf reports one-way latency (RTT/2); this script doubles it so that both columns are round
# trips. Prints ratios weft/sockperf (below 1.0: weft is faster) and, first, the host's own
# wake-up floor (weft rr --floor) and the load average: on a virtual machine a sleeping end's
# late wake-up is most of a loopback round trip, and a loaded machine makes every figure noisy.
#
# Usage: bench/rr.sh [SECONDS_PER_RUN]   (installs sockperf from Debian if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-5}"
size=64

if ! command -v sockperf >/dev/null; then
  echo "bench: installing sockperf" >&2
  apt-get update -qq && apt-get install -y -qq sockperf >/dev/null
fi
if [ "$(nproc)" -lt 2 ]; then
  echo "bench: needs 2 CPUs to place the two ends apart" >&2
  exit 1
fi
cargo build --release -q -p weft
weft=target/release/weft

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$weft" rr --floor -A 0,1
echo

# The weft agent is not pinned: `rr -A 0,1` asks it to serve from CPU 1 (the same as taskset).
agent_port=$(free_port)
"$weft" serve --bind "127.0.0.1:$agent_port" -q >/dev/null 2>&1 &
pids+=($!)

# One sockperf server per (proto, placement): pinned ones under taskset, spinning ones non-blocked.
declare -A sp_port
for proto in udp tcp; do
  for place in free pinned spin; do
    port=$(free_port)
    args=(server -i 127.0.0.1 -p "$port")
    [ "$proto" = tcp ] && args+=(--tcp)
    [ "$place" = spin ] && args+=(--nonblocked)
    if [ "$place" = free ]; then
      sockperf "${args[@]}" >/dev/null 2>&1 &
    else
      taskset -c 1 sockperf "${args[@]}" >/dev/null 2>&1 &
    fi
    pids+=($!)
    sp_port[$proto.$place]=$port
  done
done
sleep 1

# sockperf: prints "percentile 50.000 = X" (one-way usec).
sockperf_rtt() { # proto place -> "p50 p99" RTT in usec
  local args=(ping-pong -i 127.0.0.1 -p "${sp_port[$1.$2]}" -t "$secs" -m "$size")
  [ "$1" = tcp ] && args+=(--tcp)
  [ "$2" = spin ] && args+=(--nonblocked)
  local pin=()
  [ "$2" != free ] && pin=(taskset -c 0)
  "${pin[@]}" sockperf "${args[@]}" 2>&1 |
    awk '/percentile 50.000/ {p50=$NF*2} /percentile 99.000/ {p99=$NF*2} END {printf "%.2f %.2f\n", p50, p99}'
}

# weft: for as long as sockperf (a count would run for minutes when a loaded machine stretches
# the tail).
weft_rtt() { # proto place -> "p50 p99" RTT in usec
  local args=(rr "127.0.0.1:$agent_port" --size "$size" --warmup 1000 --time "${secs}s" --json)
  [ "$1" = udp ] && args+=(--udp)
  [ "$2" != free ] && args+=(-A 0,1)
  [ "$2" = spin ] && args+=(--busy-poll)
  "$weft" -q "${args[@]}" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); r=d["samples"][0]["rtt"]; print("%.2f %.2f" % (r["p50_ns"]/1e3, r["p99_ns"]/1e3))'
}

printf "%-5s %-7s %12s %12s %8s %12s %12s %8s\n" proto place "weft p50" "sockperf p50" ratio "weft p99" "sockperf p99" ratio
for proto in udp tcp; do
  for place in free pinned spin; do
    read -r wp50 wp99 < <(weft_rtt "$proto" "$place")
    read -r sp50 sp99 < <(sockperf_rtt "$proto" "$place")
    awk -v p="$proto" -v q="$place" -v a="$wp50" -v b="$sp50" -v c="$wp99" -v d="$sp99" \
      'BEGIN {printf "%-5s %-7s %10.2fus %10.2fus %7.2fx %10.2fus %10.2fus %7.2fx\n", p, q, a, b, a/b, c, d, c/d}'
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
