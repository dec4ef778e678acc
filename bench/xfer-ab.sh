#!/usr/bin/env bash
# A/B of two weft builds on loopback, in alternating pairs: each pair is one memory-to-memory
# transfer (`weft send --mem SIZE` into `weft recv --discard`) by each build, the order swapped
# from pair to pair, each build sending to its own receiver. Prints each pair's goodputs
# (Gbit/s), the medians and how many pairs B won, and the load average before and after. Run it
# under the bench lock: flock /work/bench.lock bench/xfer-ab.sh A B [SIZE] [PAIRS].
# ARGS_A / ARGS_B add options to that build's `weft send` (e.g. ARGS_B="--rate 100Gbps" with
# A = B compares the adaptive rate control with a fixed rate).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/xfer-ab.sh WEFT_A WEFT_B [SIZE (512MiB)] [PAIRS (8)]" >&2; exit 2; }
a_bin=$(realpath "$1"); b_bin=$(realpath "$2"); size="${3:-512MiB}"; pairs="${4:-8}"
work=$(mktemp -d /tmp/weft-xfer-ab.XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pa=$(free_port); pb=$(free_port)
"$a_bin" recv --listen "127.0.0.1:$pa" --discard --dir "$work/a" --json >"$work/ra.json" 2>"$work/ra.log" &
ra=$!
"$b_bin" recv --listen "127.0.0.1:$pb" --discard --dir "$work/b" --json >"$work/rb.json" 2>"$work/rb.log" &
rb=$!
trap 'kill $ra $rb 2>/dev/null; wait $ra $rb 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 0.5
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# One transfer: goodput in Gbit/s from the sender's JSON summary.
one() { # BIN PORT ARGS
  # shellcheck disable=SC2086
  "$1" send --mem "$size" 127.0.0.1 --port "$2" --no-progress --json $3 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin)["summary"]; print("%.2f" % (d["goodput_bps"]/1e9))'
}
: >"$work/pairs"
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) = 1 ]; then
    a=$(one "$a_bin" "$pa" "${ARGS_A:-}"); b=$(one "$b_bin" "$pb" "${ARGS_B:-}")
  else
    b=$(one "$b_bin" "$pb" "${ARGS_B:-}"); a=$(one "$a_bin" "$pa" "${ARGS_A:-}")
  fi
  echo "pair $i: A $a B $b Gbit/s"
  echo "$a $b" >>"$work/pairs"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/pairs" <<'PY'
import statistics, sys
p = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
print(f"medians: A {statistics.median(a for a, _ in p):.2f}, B {statistics.median(b for _, b in p):.2f} Gbit/s; "
      f"B faster in {sum(b > a for a, b in p)} of {len(p)} pairs")
PY
