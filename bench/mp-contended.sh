#!/usr/bin/env bash
# Four local ranks against the alpha-beta model (issue 14's done-when: collectives within 20% of
# alpha + m beta fitted from ping-pong), with two fits side by side:
#   quiet:     one pair ping-pongs alone (2 ranks), as `weft mp --local 2` measures it;
#   contended: two pairs ping-pong at once (4 ranks on this host, OSU's osu_multi_lat shape),
#              so that the fit sees the same CPU contention as the 4-rank collectives.
# Each round runs the quiet fit, the contended fit and the 4-rank collectives back to back; the
# table shows medians over rounds of each collective's mean time and its ratio to each model.
# The load average is printed per round (the machine is shared).
#
# Usage: bench/mp-contended.sh [ROUNDS]   (WEFT=path uses that binary instead of a release build)
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
common=(--sizes "$sizes" --iterations 200 --iterations-large 20 --json)

for r in $(seq 1 "$rounds"); do
  echo "round $r: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$weft" mp --local 2 --pattern pingpong "${common[@]}" >"$tmp/quiet.$r.json"
  "$weft" mp --local 2 --pattern pingpong "${common[@]}" >"$tmp/pairA.$r.json" &
  a=$!
  "$weft" mp --local 2 --pattern pingpong "${common[@]}" >"$tmp/pairB.$r.json" &
  b=$!
  wait "$a" "$b"
  "$weft" mp --local 4 --pattern exchange,alltoall,allreduce-ring,allreduce-rd,barrier \
    "${common[@]}" >"$tmp/coll.$r.json"
done

python3 - "$tmp" "$rounds" <<'EOF'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
RENDEZVOUS = 64 * 1024

def samples(path):
    doc = json.load(open(path))
    return doc["samples"] if isinstance(doc, dict) else doc

def means(name, pattern):
    out = {}
    for r in range(1, rounds + 1):
        for s in samples(f"{tmp}/{name}.{r}.json"):
            if s["pattern"] == pattern:
                out.setdefault(int(s["size"]), []).append(s["mean_us"] * 1e-6)
    return {k: statistics.median(v) for k, v in out.items()}

def fit(points):
    # weft_model::calc::AlphaBeta::fit: least squares on the relative error (weights 1/t^2).
    sw = sx = sy = sxx = sxy = 0.0
    for x, y in points:
        w = 1 / (y * y)
        sw += w; sx += w * x; sy += w * y; sxx += w * x * x; sxy += w * x * y
    det = sw * sxx - sx * sx
    beta = (sw * sxy - sx * sy) / det
    alpha = (sy - beta * sx) / sw
    if alpha < 0:
        alpha, beta = 0.0, sxy / sxx
    return alpha, beta

quiet = fit(sorted(means("quiet", "pingpong").items()))
both = {}
for name in ("pairA", "pairB"):
    for k, v in means(name, "pingpong").items():
        both.setdefault(k, []).append(v)
contended = fit(sorted((k, statistics.mean(v)) for k, v in both.items()))

def model(ab, pattern, m, p=4):
    a, b = ab
    msg = a + m * b
    return {
        "exchange": msg,
        "alltoall": (p - 1) * ((a if m > RENDEZVOUS else 0) + msg),
        "allreduce-ring": 2 * (p - 1) * a + 2 * (p - 1) / p * m * b,
        "allreduce-rd": 2 * msg,
        "barrier": 2 * a,
    }[pattern]

for label, ab in (("quiet", quiet), ("contended", contended)):
    print(f"fit {label:<9}: alpha {ab[0]*1e6:8.1f} us, rate {8/ab[1]/1e9 if ab[1] > 0 else 0:6.2f} Gbit/s")
print(f"{'pattern':<15} {'size':>8} {'measured us':>12} {'quiet x':>8} {'contended x':>12}")
worst = 0.0
for pattern in ("exchange", "alltoall", "allreduce-ring", "allreduce-rd", "barrier"):
    for m, t in sorted(means("coll", pattern).items()):
        q, c = t / model(quiet, pattern, m), t / model(contended, pattern, m)
        worst = max(worst, abs(c - 1))
        print(f"{pattern:<15} {m:>8} {t*1e6:12.1f} {q:8.2f} {c:12.2f}")
print(f"largest miss against the contended fit: {worst*100:.0f}% (done-when: 20%)")
EOF
