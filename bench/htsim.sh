#!/usr/bin/env bash
# Side by side with htsim (issue 29): builds htsim from its public source (Broadcom's csg-htsim,
# g++ and make only) and runs the datacenter experiments the issue names, then weft's scenarios of
# the same experiments when they exist, and prints both tools' results with the ratio.
#
#   NDP incast: N senders x 450 KB to one receiver, 8-packet queues, 10 Gbit/s, 128-host fat-tree
#               (completion time p50 and of the last flow, against the ideal N x size / rate),
#               and weft's simulator on the same (scenarios/fabric-incast-ndp.toml): both, and the ratio
#   permutation: every host sends 2 MB to another, 128 hosts, spraying (htsim -strat perm) and
#               per-flow ECMP (-strat ecmp_host -paths 1: one path per flow) (goodput per flow, mean and min)
#   speed:      CPU seconds of the 432-host spraying permutation, htsim's and weft's simulator's
#               (NDP, k = 12 fat-tree, 8-frame trimming queues), and their ratio
#
# Usage: bench/htsim.sh [SENDERS]          (default 16)
#   HTSIM_SRC=DIR  an htsim source tree (with sim/) instead of cloning it into target/htsim
set -euo pipefail
cd "$(dirname "$0")/.."
senders="${1:-16}"
src="${HTSIM_SRC:-target/htsim/src}"
if [ ! -d "$src/sim" ]; then
  mkdir -p "$(dirname "$src")"
  git clone --depth 1 https://github.com/Broadcom/csg-htsim "$src"
fi
echo "htsim: $(git -C "$src" log -1 --format='%h %cs' 2>/dev/null || echo "source at $src")"
make -s -C "$src/sim" >/dev/null
make -s -C "$src/sim/datacenter" >/dev/null
ndp_bin=$(realpath "$src/sim/datacenter/htsim_ndp")
gen="$src/sim/datacenter/connection_matrices"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# htsim writes idmap.txt into its working directory: run it in the scratch directory.
ndp() { (cd "$work" && "$ndp_bin" "$@"); }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# Flow completion times (us) of an htsim log, one per line, sorted.
fcts() { sed -n 's/.* finished at \([0-9.]*\) total bytes.*/\1/p' "$1" | sort -g; }

# --- NDP incast ---
python3 "$gen/gen_incast.py" "$work/incast.cm" 128 "$senders" 450000 0 1 >/dev/null
ndp -tm "$work/incast.cm" -nodes 128 -cwnd 23 -q 8 -strat perm -linkspeed 10000 \
  -end 1000000 -o "$work/incast" >"$work/incast.log" 2>&1
fcts "$work/incast.log" >"$work/incast.fct"
python3 - "$work/incast.fct" "$senders" <<'EOF'
import statistics, sys
v = [float(x) for x in open(sys.argv[1]) if x.strip()]
n = int(sys.argv[2])
ideal = n * 450000 * 8 / 10e9 * 1e6
print(f"htsim NDP incast {n} x 450 KB, 10 Gbit/s, q 8, 128-host fat-tree: {len(v)} flows done, "
      f"FCT p50 {statistics.median(v):.0f} us, last {max(v):.0f} us (ideal {ideal:.0f} us, "
      f"last/ideal {max(v) / ideal:.3f})")
EOF

# --- the same NDP incast on weft's simulator (scenarios/fabric-incast-ndp.toml with SENDERS
# senders), side by side with htsim's; htsim's p50 is the median of its flows' completion times,
# weft's its fct_p50_us (the same order statistic up to interpolation between two flows) ---
cargo build -q --release -p weft
sed "s/^senders = .*/senders = $senders/" scenarios/fabric-incast-ndp.toml >"$work/ndp.toml"
/usr/bin/time -f "%U %S" -o "$work/weft-time" target/release/weft run "$work/ndp.toml" \
  --engine sim -q -o "$work/ndp.json" >/dev/null
python3 - "$work/incast.fct" "$work/ndp.json" "$work/weft-time" <<'EOF'
import json, statistics, sys
h = [float(x) for x in open(sys.argv[1]) if x.strip()]
w = json.load(open(sys.argv[2]))["samples"][0]
cpu = sum(float(x) for x in open(sys.argv[3]).read().split())
rows = [("flows done", len(h), w["flows_completed"]),
        ("FCT p50 (us)", statistics.median(h), w["fct_p50_us"]),
        ("FCT last flow (us)", max(h), w["fct_max_us"])]
print(f"NDP incast, side by side     {'htsim':>10} {'weft sim':>10} {'weft/htsim':>10}")
for name, a, b in rows:
    print(f"  {name:<26} {a:>10.1f} {b:>10.1f} {b / a:>10.3f}")
print(f"  weft: {w['frames_trimmed']} trims, {w['frames_dropped']} drops, "
      f"{w['timeouts']} time-outs, CPU {cpu:.2f} s")
EOF

# --- permutation: spraying against per-flow ECMP ---
python3 "$gen/gen_permutation.py" "$work/perm.cm" 128 128 2000000 0 1 >/dev/null
for strat in "perm" "ecmp_host -paths 1"; do
  # shellcheck disable=SC2086 # the strategy and its argument are two words
  ndp -tm "$work/perm.cm" -nodes 128 -cwnd 23 -q 8 -strat $strat -linkspeed 10000 \
    -end 1000000 -o "$work/perm" >"$work/perm.log" 2>&1
  fcts "$work/perm.log" >"$work/perm.fct"
  python3 - "$work/perm.fct" "$strat" <<'EOF'
import statistics, sys
v = [float(x) for x in open(sys.argv[1]) if x.strip()]
g = [2000000 * 8 / (t * 1e-6) / 1e9 for t in v]
print(f"htsim NDP permutation 128 x 2 MB, -strat {sys.argv[2]}: {len(v)} flows done, goodput "
      f"mean {statistics.mean(g):.2f} Gbit/s, min {min(g):.2f} Gbit/s")
EOF
done

# --- speed: the 432-host spraying permutation ---
python3 "$gen/gen_permutation.py" "$work/perm432.cm" 432 432 2000000 0 1 >/dev/null
/usr/bin/time -f "%U %S %M" -o "$work/time" bash -c 'cd "$0" && exec "$@"' "$work" "$ndp_bin" -tm "$work/perm432.cm" -nodes 432 -cwnd 23 \
  -q 8 -strat perm -linkspeed 10000 -end 1000000 -o "$work/p432" >"$work/p432.log" 2>&1
read -r u s m <"$work/time"
hcpu=$(echo "$u + $s" | bc)
echo "htsim NDP permutation 432 x 2 MB, spraying: $(fcts "$work/p432.log" | wc -l) flows done, \
CPU $hcpu s, peak memory $((m / 1024)) MB"

# --- the same on weft's simulator: NDP, k = 12 fat-tree (432 hosts), 8-frame trimming queues,
# sprayed, every host sending 2 MB to another; CPU seconds of the run alone (built above) ---
bash bench/fabric-scale.sh --scenario 12 2MB >"$work/p432.toml"
/usr/bin/time -f "%U %S %M" -o "$work/wtime" target/release/weft run "$work/p432.toml" \
  --engine sim -q -o "$work/p432.json" >/dev/null
read -r u s m <"$work/wtime"
wcpu=$(echo "$u + $s" | bc)
python3 - "$work/p432.json" "$hcpu" "$wcpu" "$((m / 1024))" <<'EOF'
import json, sys
w = json.load(open(sys.argv[1]))["samples"][0]
h, c = float(sys.argv[2]), float(sys.argv[3])
print(f"weft NDP permutation 432 x 2 MB, spraying: {w['flows_completed']} flows done, goodput "
      f"mean {w['goodput_mean_mbps'] / 1e3:.2f} Gbit/s, min {w['goodput_min_mbps'] / 1e3:.2f} "
      f"Gbit/s, CPU {c:.2f} s, peak memory {sys.argv[4]} MB; htsim/weft CPU {h / max(c, 1e-9):.2f}")
EOF

# --- weft, where it has the same experiments ---
for s in scenarios/fabric-incast.toml scenarios/fabric-incast-lossy.toml \
  scenarios/fabric-permutation.toml scenarios/fabric-incast-ndp.toml; do
  if [ -f "$s" ]; then
    echo "weft: $s (model, sim):"
    /usr/bin/time -f "  weft CPU %U s user, %S s system, peak memory %M kB" \
      target/release/weft run "$s" --engine model,sim
  else
    echo "weft: $s does not exist yet: no side-by-side row for it"
  fi
done
