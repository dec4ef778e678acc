#!/usr/bin/env bash
# weft tput -u against iperf3 -u on loopback: the receiver's goodput (Mbit/s) and loss (%) at
# each offered rate, weft and iperf3 alternating REPS times, judged on the median ratio. Both
# tools send LEN-byte datagrams (UDP payload, weft's 16-byte header included) for SECONDS, paced
# at the rate (0: as fast as the socket takes them). The load average is printed first and last:
# on a busy machine the unpaced rate says more about the neighbours than about the tools.
#
# Usage: bench/tput-udp.sh [SECONDS_PER_RUN] [REPS] [RATES]   (defaults 3, 3, "100M 1G 0";
# LEN=1400, PIN=same|split as in bench/probe.sh; WEFT=path to use another build)
# Uses fixed loopback ports 53311 (weft serve) and 53312 (iperf3 -s).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-3}"
reps="${2:-3}"
rates="${3:-100M 1G 0}"
len="${LEN:-1400}"
P_WEFT=53311
P_IPERF=53312

case "${PIN:-}" in
  "") on_server=(); on_client=() ;;
  same) on_server=(taskset -c 0); on_client=(taskset -c 0) ;;
  split) on_server=(taskset -c 1); on_client=(taskset -c 0) ;;
  *) echo "bench: PIN is 'same' or 'split'" >&2; exit 2 ;;
esac
command -v iperf3 >/dev/null || { echo "bench: iperf3 is needed (apt-get install iperf3)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 is needed to read JSON" >&2; exit 1; }
if [ -z "${WEFT:-}" ]; then
  nice cargo build --release -q -p weft
  WEFT="$PWD/target/release/weft"
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

wait_port() {
  for _ in $(seq 50); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench: nothing listens on 127.0.0.1:$1" >&2
  exit 1
}

"${on_server[@]}" "$WEFT" serve --bind "127.0.0.1:$P_WEFT" --max-duration 120s >"$tmp/serve.log" 2>&1 &
pids+=($!)
"${on_server[@]}" iperf3 -s -B 127.0.0.1 -p "$P_IPERF" >"$tmp/iperf3.log" 2>&1 &
pids+=($!)
wait_port "$P_WEFT"; wait_port "$P_IPERF"
sleep 0.5

weft_rate() { # iperf3's 100M / 1G / 0 as weft's 100Mbps / 1Gbps / 0
  case "$1" in 0) echo 0 ;; *[KMG]) echo "${1}bps" ;; *) echo "$1" ;; esac
}

# run TOOL RATE -> "mbps loss_pct"
run() {
  local tool=$1 rate=$2
  if [ "$tool" = weft ]; then
    "${on_client[@]}" "$WEFT" tput "127.0.0.1:$P_WEFT" -u -b "$(weft_rate "$rate")" -l "$len" -t "${secs}s" --json >"$tmp/out" 2>/dev/null
    python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
u = (s.get("up") or {}).get("udp") or {}
exp = u.get("expected", 0)
print("%.1f %.2f" % (s["goodput_bps"] / 1e6, 100.0 * u.get("lost", 0) / exp if exp else 0.0))
PY
  else
    "${on_client[@]}" iperf3 -c 127.0.0.1 -p "$P_IPERF" -u -b "$rate" -l "$len" -t "$secs" -J >"$tmp/out" 2>/dev/null
    python3 - "$tmp/out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["end"]["sum"]
print("%.1f %.2f" % (s["bits_per_second"] * (1 - s["lost_percent"] / 100) / 1e6, s["lost_percent"]))
PY
  fi
}

median() {
  printf "%s\n" "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'
}

echo "weft tput -u vs iperf3 -u on loopback, ${len}-byte datagrams, ${secs}s per run, $(nproc) cores, PIN=${PIN:-none}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "weft: $WEFT"
printf "%-12s %12s %8s %12s %8s %8s\n" rate "weft Mbit/s" "loss%" "iperf3 Mbit/s" "loss%" ratio
for rate in $rates; do
  ratios=()
  for rep in $(seq "$reps"); do
    read -r wm wl < <(run weft "$rate")
    read -r im il < <(run iperf3 "$rate")
    r=$(awk -v a="$wm" -v b="$im" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    ratios+=("$r")
    printf "%-12s %12s %8s %12s %8s %7sx\n" "$rate #$rep" "$wm" "$wl" "$im" "$il" "$r"
  done
  printf "%-12s %12s %8s %12s %8s %7sx\n" "$rate median" "" "" "" "" "$(median "${ratios[@]}")"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
