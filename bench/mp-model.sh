#!/usr/bin/env bash
# Four local ranks' collectives against the model (issue 14's done-when: within 20% of a model
# fitted from ping-pong). Each round fits the model from a 2-rank ping-pong alone (one-way time
# and the time in the send and receive calls, LogP's overheads, and the ranks' reduction kernel
# timed on its own: gamma) and runs the collectives among 4 ranks beside it (`weft mp
# --model-from`, weft_model::calc::shared_host: alpha-beta-gamma, and the messages' and
# reductions' CPU time shared by the host's cores when ranks outnumber them). The collectives
# never enter the fit.
#
# Two modes, alternating which goes first: `normal` (the ranks at normal priority, as on any
# machine) and `realtime` (`weft mp --realtime`, SCHED_FIFO: other work on the host cannot
# delay the ranks; root only). The ping-pong of a round runs in the mode of the collectives it
# predicts. The table shows medians over rounds of each collective's mean time, of the model
# and of their ratio; the load average is printed per round (the machine is shared).
#
# Usage: bench/mp-model.sh [ROUNDS]   (WEFT=path uses that binary instead of a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
if [ -z "${WEFT:-}" ]; then
  cargo build --release -q -p weft
fi
weft="${WEFT:-target/release/weft}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sizes=1,8,4K,64K,1M
common=(--sizes "$sizes" --iterations 500 --iterations-large 50 --json)
modes=(normal)
if [ "$(id -u)" -eq 0 ]; then modes+=(realtime); else echo "not root: the realtime mode is left out" >&2; fi

run_mode() { # MODE ROUND
  local flag=()
  [ "$1" = realtime ] && flag=(--realtime)
  "$weft" mp --local 2 --pattern pingpong "${common[@]}" "${flag[@]}" >"$tmp/pp.$1.$2.json"
  "$weft" mp --local 4 --pattern exchange,alltoall,allreduce-ring,allreduce-rd,barrier \
    "${common[@]}" "${flag[@]}" --model-from "$tmp/pp.$1.$2.json" >"$tmp/coll.$1.$2.json"
}

for r in $(seq 1 "$rounds"); do
  echo "round $r: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  order=("${modes[@]}")
  if [ $((r % 2)) -eq 0 ]; then order=($(printf '%s\n' "${modes[@]}" | tac)); fi
  for m in "${order[@]}"; do run_mode "$m" "$r"; done
done
echo "after the rounds: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$tmp" "$rounds" "${modes[@]}" <<'EOF'
import json, statistics, sys
tmp, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def samples(path):
    return json.load(open(path))["samples"]

print(f"medians over {rounds} rounds; model fitted from each round's 2-rank ping-pong alone")
for mode in modes:
    pp = {}
    for r in range(1, rounds + 1):
        for s in samples(f"{tmp}/pp.{mode}.{r}.json"):
            pp.setdefault(s["size"], []).append(s)
    print(f"\n{mode}: ping-pong one-way mean / send + receive calls per message / reduction "
          "kernel, us")
    print("  " + "  ".join(f"{z} B {statistics.median(x['mean_us'] for x in v):.2f}/"
                          f"{statistics.median(x['send_us'] + x['recv_us'] for x in v):.2f}/"
                          f"{statistics.median(x.get('reduce_kernel_us', 0) for x in v):.2f}"
                          for z, v in sorted(pp.items())))
    coll = {}
    for r in range(1, rounds + 1):
        for s in samples(f"{tmp}/coll.{mode}.{r}.json"):
            coll.setdefault((s["pattern"], s["size"]), []).append(s)
    print(f"{'pattern':<15} {'size':>8} {'measured us':>12} {'model us':>10} {'ratio':>7}  within 20%")
    misses = 0
    for (pattern, size), v in coll.items():
        ratio = statistics.median(x["mean_us"] / x["model_us"] for x in v)
        ok = abs(ratio - 1) <= 0.2
        misses += not ok
        print(f"{pattern:<15} {size:>8} {statistics.median(x['mean_us'] for x in v):12.1f} "
              f"{statistics.median(x['model_us'] for x in v):10.1f} {ratio:6.2f}x  "
              f"{'yes' if ok else 'NO'}")
    print(f"{mode}: {len(coll) - misses} of {len(coll)} within 20%")
EOF
