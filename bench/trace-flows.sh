#!/usr/bin/env bash
# `weft trace flows` on captures of 100,000 and 1,000,000 one-packet UDP flows, beside tshark's
# conversation table (`tshark -q -z conv,udp`) on the same captures (a benchmark, not a test).
# Prints each run's time and peak resident memory, weft's 1M/100k time ratio (target: at most
# 14, i.e. time linear in packets) and memory per flow (target: 1M flows under 700 MB), and
# tshark's time and memory over weft's.
#
#   bench/trace-flows.sh [RUNS]     RUNS (default 5) runs of each, alternating; medians printed
#
# The captures come from `weft trace synth --flows` (Ethernet/IPv4/UDP, 42-byte frames, each
# packet its own source address and port: 5.8 MB and 58 MB), are read once into the page cache,
# and are deleted on exit. weft runs twice per size: printing its table (the top 20 flows,
# picked in one pass) and writing every flow as CSV (all flows sorted), since tshark prints
# every conversation. Peak memory comes from GNU time (`apt-get install time`).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${1:-5}"
DIR="$(mktemp -d "${TMPDIR:-/tmp}/weft-flows-bench.XXXXXX")"
trap 'rm -rf "$DIR"' EXIT

cargo build --release -q -p weft
WEFT="$PWD/target/release/weft"
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "GNU time not found at $TIME: apt-get install time"; exit 1; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (times are noisy when it is high)"
for n in 100000 1000000; do
  "$WEFT" trace synth "$DIR/f$n.pcap" --flows --frame 42 --size $((24 + 58 * n))
  cat "$DIR/f$n.pcap" >/dev/null
done

# Runs a command RUNS times; prints "median-seconds median-KiB".
measure() {
  local i out secs=() kib=()
  for ((i = 0; i < RUNS; i++)); do
    out=$("$TIME" -f '%e %M' "$@" 2>&1 >/dev/null | tail -1)
    secs+=("${out% *}")
    kib+=("${out#* }")
  done
  printf '%s\n' "${secs[@]}" | sort -g | awk '{a[NR]=$1} END{printf "%s ", a[int((NR+1)/2)]}'
  printf '%s\n' "${kib[@]}" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'
}

declare -A T M
for n in 100000 1000000; do
  cap="$DIR/f$n.pcap"
  read -r T[table$n] M[table$n] < <(measure "$WEFT" trace flows "$cap")
  read -r T[csv$n] M[csv$n] < <(measure "$WEFT" trace flows "$cap" --csv "$DIR/out.csv")
  if command -v tshark >/dev/null; then
    read -r T[tshark$n] M[tshark$n] < <(measure tshark -q -n -r "$cap" -z conv,udp)
  fi
done

row() { printf '%-34s %8s s %8.1f MiB\n' "$1" "$2" "$(awk -v k="$3" 'BEGIN{print k/1024}')"; }
for n in 100000 1000000; do
  echo "--- $n flows ($(stat -c %s "$DIR/f$n.pcap") bytes)"
  row "weft trace flows (table)" "${T[table$n]}" "${M[table$n]}"
  row "weft trace flows --csv (all)" "${T[csv$n]}" "${M[csv$n]}"
  if [ -n "${T[tshark$n]:-}" ]; then
    row "tshark -q -z conv,udp" "${T[tshark$n]}" "${M[tshark$n]}"
  fi
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", a/b}'; }
echo "--- ratios"
echo "weft 1M/100k time, table:     $(ratio "${T[table1000000]}" "${T[table100000]}")x (target <= 14)"
echo "weft 1M/100k time, --csv:     $(ratio "${T[csv1000000]}" "${T[csv100000]}")x"
echo "weft memory at 1M flows:      $(awk -v k="${M[csv1000000]}" 'BEGIN{printf "%.0f MiB, %.0f bytes a flow", k/1024, k*1024/1e6}') (target < 700 MB)"
if [ -n "${T[tshark1000000]:-}" ]; then
  echo "tshark/weft time at 1M:       $(ratio "${T[tshark1000000]}" "${T[csv1000000]}")x (weft --csv); memory $(ratio "${M[tshark1000000]}" "${M[csv1000000]}")x"
  echo "tshark 1M/100k time:          $(ratio "${T[tshark1000000]}" "${T[tshark100000]}")x"
else
  echo "tshark not installed: apt-get install tshark"
fi
