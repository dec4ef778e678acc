#!/usr/bin/env bash
# weft against its peer tools on loopback, in one run:
#   1. TCP single-stream throughput and CPU per Gbit/s: weft tput vs iperf3;
#   2. two streams: weft tput -P 2 vs iperf3 -P 2;
#   3. ping-pong round-trip latency p50 and p99, UDP and TCP, 64-byte messages: weft rr vs sockperf;
#   4. how weft scales with streams (1, 2, 4).
# Ratios are weft / peer. Targets: throughput >= 1.0x iperf3 (single stream at no more CPU per
# bit, and -P 2), p50 latency within 1.1x of sockperf. CPU is measured the same way for both tools:
# user + system time of the client process (getrusage of the child) plus that of the server process
# (/proc/PID/stat) over the run, as % of one core per Gbit/s of goodput. sockperf reports one-way
# latency (RTT/2); it is doubled here so that both columns are round trips.
#
# Throughput runs alternate weft and iperf3 REPS times and judge the median ratio: one run of
# each is at the mercy of whatever else the machine does at that moment. The load average is
# printed first and last, so that a reader can tell whether the machine was quiet.
#
# Where the two ends run matters more than anything else on a small VM: on this 2-vCPU machine
# both tools move 12-19 Gbit/s with client and server on the same CPU and 6-12 Gbit/s on
# different CPUs (a halted vCPU wakes late; the data is cold in the other CPU's cache), and
# unpinned runs land anywhere in between. PIN=same puts every client and server on CPU 0,
# PIN=split clients on CPU 0 and servers on CPU 1, for both tools alike; unset, the scheduler
# decides, as when people run the tools.
#
# Usage: bench/probe.sh [SECONDS_PER_RUN] [REPS]   (defaults 5 and 3; installs iperf3 and
# sockperf if missing)
# Uses fixed loopback ports 53301-53304. On a 2-core machine both ends share the cores, so the
# stream scaling is only meaningful on a machine with more cores.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-5}"
reps="${2:-3}"
size=64
P_WEFT=53301
P_IPERF=53302
P_SP_UDP=53303
P_SP_TCP=53304
HZ=$(getconf CLK_TCK)

case "${PIN:-}" in
  "") on_server=(); on_client=() ;;
  same) on_server=(taskset -c 0); on_client=(taskset -c 0) ;;
  split) on_server=(taskset -c 1); on_client=(taskset -c 0) ;;
  *) echo "bench: PIN is 'same' or 'split'" >&2; exit 2 ;;
esac

need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v sockperf >/dev/null || need+=(sockperf)
if [ ${#need[@]} -gt 0 ]; then
  echo "bench: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v python3 >/dev/null || { echo "bench: python3 is needed to read JSON" >&2; exit 1; }
cargo build --release -q -p weft
weft="$PWD/target/release/weft"
tmp=$(mktemp -d)

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

wait_port() { # port: wait until something listens on 127.0.0.1:port (TCP)
  for _ in $(seq 50); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench: nothing listens on 127.0.0.1:$1" >&2
  exit 1
}

"${on_server[@]}" "$weft" serve --bind "127.0.0.1:$P_WEFT" --max-duration 120s >"$tmp/serve.log" 2>&1 &
pid_weft=$!; pids+=("$pid_weft")
"${on_server[@]}" iperf3 -s -B 127.0.0.1 -p "$P_IPERF" >"$tmp/iperf3.log" 2>&1 &
pid_iperf=$!; pids+=("$pid_iperf")
"${on_server[@]}" sockperf server -i 127.0.0.1 -p "$P_SP_UDP" >/dev/null 2>&1 &
pids+=($!)
"${on_server[@]}" sockperf server --tcp -i 127.0.0.1 -p "$P_SP_TCP" >/dev/null 2>&1 &
pids+=($!)
wait_port "$P_WEFT"; wait_port "$P_IPERF"; wait_port "$P_SP_TCP"
sleep 0.5

proc_cpu() { # pid -> user+system seconds so far
  awk -v hz="$HZ" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}

# Runs a client command with stdout to $tmp/out; prints its user+system CPU seconds.
client_cpu() {
  python3 - "$tmp/out" "$@" <<'PY'
import resource, subprocess, sys
out = open(sys.argv[1], "w")
rc = subprocess.call(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
if rc != 0:
    sys.exit(f"bench: {sys.argv[2]} failed with exit code {rc}")
print(f"{r.ru_utime + r.ru_stime:.4f}")
PY
}

# tput TOOL STREAMS -> "gbps cpu_pct_per_gbps"
tput() {
  local tool=$1 n=$2 s0 s1 c wall gbps
  if [ "$tool" = weft ]; then
    s0=$(proc_cpu "$pid_weft")
    c=$(client_cpu "${on_client[@]}" "$weft" tput "127.0.0.1:$P_WEFT" -t "${secs}s" -P "$n" --json)
    s1=$(proc_cpu "$pid_weft")
    read -r gbps wall < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["summary"]["goodput_bps"]/1e9, d["summary"]["wall_ns"]/1e9)' "$tmp/out")
  else
    s0=$(proc_cpu "$pid_iperf")
    c=$(client_cpu "${on_client[@]}" iperf3 -c 127.0.0.1 -p "$P_IPERF" -t "$secs" -P "$n" -J)
    s1=$(proc_cpu "$pid_iperf")
    read -r gbps wall < <(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]["sum_received"]; print(e["bits_per_second"]/1e9, e["seconds"])' "$tmp/out")
  fi
  awk -v g="$gbps" -v c="$c" -v a="$s0" -v b="$s1" -v w="$wall" \
    'BEGIN { cpu = (c + b - a) / w * 100; printf "%.3f %.2f\n", g, (g > 0 ? cpu / g : 0) }'
}

# rr TOOL PROTO -> "p50_us p99_us" round trip
rr() {
  local tool=$1 proto=$2
  if [ "$tool" = weft ]; then
    local flag=""; [ "$proto" = udp ] && flag="--udp"
    # shellcheck disable=SC2086
    "${on_client[@]}" "$weft" rr "127.0.0.1:$P_WEFT" $flag --size "$size" --warmup 1000 --count $((secs * 20000)) --json |
      python3 -c 'import json,sys; s=json.load(sys.stdin)["samples"][0]; print("%.2f %.2f" % (s["p50_ns"]/1e3, s["p99_ns"]/1e3))'
  else
    local flag="" port=$P_SP_UDP; [ "$proto" = tcp ] && { flag="--tcp"; port=$P_SP_TCP; }
    # shellcheck disable=SC2086
    "${on_client[@]}" sockperf ping-pong $flag -i 127.0.0.1 -p "$port" -t "$secs" -m "$size" 2>&1 |
      awk '/percentile 50.000/ {p50=$NF*2} /percentile 99.000/ {p99=$NF*2} END {printf "%.2f %.2f\n", p50, p99}'
  fi
}

verdict() { # value target op(ge|le) -> "ok" or "MISS"
  awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN { ok = (op == "ge") ? (v >= t) : (v <= t); print (ok ? "ok" : "MISS") }'
}

median() { # numbers... -> their median
  printf "%s\n" "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'
}

echo "weft vs iperf3 / sockperf on loopback, ${secs}s per run, $(nproc) cores, PIN=${PIN:-none}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "== TCP throughput (goodput, Gbit/s) and CPU (% of a core per Gbit/s, both ends), $reps alternating runs"
printf "%-10s %10s %10s %8s %8s   %10s %10s %8s %8s\n" streams weft iperf3 ratio target "weft cpu" "iperf cpu" ratio target
for n in 1 2; do
  ratios=(); cratios=()
  for rep in $(seq "$reps"); do
    read -r wg wc < <(tput weft "$n")
    read -r ig ic < <(tput iperf3 "$n")
    r=$(awk -v a="$wg" -v b="$ig" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    rc=$(awk -v a="$wc" -v b="$ic" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    ratios+=("$r"); cratios+=("$rc")
    printf "%-10s %10s %10s %7sx %8s   %10s %10s %7sx\n" "-P $n #$rep" "$wg" "$ig" "$r" "" "$wc" "$ic" "$rc"
  done
  r=$(median "${ratios[@]}"); rc=$(median "${cratios[@]}")
  cpu_target="-"
  [ "$n" = 1 ] && cpu_target="<=1.00x $(verdict "$rc" 1.0 le)"
  printf "%-10s %10s %10s %7sx %8s   %10s %10s %7sx %s\n" "-P $n median" "" "" "$r" ">=1.00x $(verdict "$r" 1.0 ge)" "" "" "$rc" "$cpu_target"
done
echo
echo "== Ping-pong round trip, ${size}-byte messages (us)"
printf "%-5s %10s %12s %8s %10s   %10s %12s %8s\n" proto "weft p50" "sockperf p50" ratio target "weft p99" "sockperf p99" ratio
for proto in udp tcp; do
  read -r w50 w99 < <(rr weft "$proto")
  read -r s50 s99 < <(rr sockperf "$proto")
  r50=$(awk -v a="$w50" -v b="$s50" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
  r99=$(awk -v a="$w99" -v b="$s99" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
  printf "%-5s %10s %12s %7sx %10s   %10s %12s %7sx\n" "$proto" "$w50" "$s50" "$r50" "<=1.10x $(verdict "$r50" 1.1 le)" "$w99" "$s99" "$r99"
done
echo
echo "== weft TCP throughput by streams (scaling needs more cores than the two ends use)"
printf "%-8s %10s %10s %12s\n" streams Gbit/s "vs -P 1" "cpu/Gbit/s"
base=""
for n in 1 2 4; do
  read -r g c < <(tput weft "$n")
  [ -z "$base" ] && base=$g
  printf "%-8s %10s %9.2fx %12s\n" "-P $n" "$g" "$(awk -v a="$g" -v b="$base" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$c"
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
