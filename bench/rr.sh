#!/usr/bin/env bash
# weft rr vs sockperf ping-pong on loopback: p50 and p99 round-trip latency, UDP and TCP, 64-byte
# messages. sockperf reports one-way latency (RTT/2); this script doubles it so that both columns
# are round trips. Prints ratios weft/sockperf (below 1.0 means weft is faster). Target: p50
# within 1.1x of sockperf.
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
cargo build --release -q -p weft
weft=target/release/weft

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

agent_port=$(free_port)
"$weft" serve --bind "127.0.0.1:$agent_port" >/dev/null 2>&1 &
pids+=($!)
sp_udp=$(free_port)
sockperf server -i 127.0.0.1 -p "$sp_udp" >/dev/null 2>&1 &
pids+=($!)
sp_tcp=$(free_port)
sockperf server --tcp -i 127.0.0.1 -p "$sp_tcp" >/dev/null 2>&1 &
pids+=($!)
sleep 1

# sockperf: prints "percentile 50.000 = X" (one-way usec).
sockperf_rtt() { # proto port -> "p50 p99" RTT in usec
  local flag=""
  [ "$1" = tcp ] && flag="--tcp"
  sockperf ping-pong $flag -i 127.0.0.1 -p "$2" -t "$secs" -m "$size" 2>&1 |
    awk '/percentile 50.000/ {p50=$NF*2} /percentile 99.000/ {p99=$NF*2} END {printf "%.2f %.2f\n", p50, p99}'
}

# weft: as many transactions as sockperf does in about the same time (converge off, fixed count).
weft_rtt() { # proto -> "p50 p99" RTT in usec
  local flag=""
  [ "$1" = udp ] && flag="--udp"
  "$weft" rr "127.0.0.1:$agent_port" $flag --size "$size" --warmup 1000 \
    --count $((secs * 40000)) --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); r=d["samples"][0]["rtt"]; print("%.2f %.2f" % (r["p50_ns"]/1e3, r["p99_ns"]/1e3))'
}

printf "%-5s %12s %12s %8s %12s %12s %8s\n" proto "weft p50" "sockperf p50" ratio "weft p99" "sockperf p99" ratio
for proto in udp tcp; do
  port=$sp_udp
  [ "$proto" = tcp ] && port=$sp_tcp
  read -r wp50 wp99 < <(weft_rtt "$proto")
  read -r sp50 sp99 < <(sockperf_rtt "$proto" "$port")
  awk -v p="$proto" -v a="$wp50" -v b="$sp50" -v c="$wp99" -v d="$sp99" \
    'BEGIN {printf "%-5s %10.2fus %10.2fus %7.2fx %10.2fus %10.2fus %7.2fx\n", p, a, b, a/b, c, d, c/d}'
done
