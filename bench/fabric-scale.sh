#!/usr/bin/env bash
# The simulator at scale (issue 29: "432 hosts must fit in memory and time easily; 8192 hosts
# must run"): NDP's sprayed permutation on a fat-tree of K-port switches (K^3/4 hosts), every
# host sending SIZE to another over 10 Gbit/s links with 8-frame trimming queues, as
# bench/htsim.sh's speed run (k = 12, 2 MB) but at any k. Prints the flows done, their
# completion times, the packets forwarded (each hop counted), the CPU seconds of the run, the
# packets per CPU second and the peak memory, with the load average before and after.
#
# Usage: bench/fabric-scale.sh [K] [SIZE]        (defaults: 32, i.e. 8192 hosts, and 200KB)
#        bench/fabric-scale.sh --scenario [K] [SIZE]   prints the scenario file only (bench/htsim.sh's)
#   WEFT_BIN=PATH  the weft binary (default target/release/weft, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
scenario() { # K SIZE: the permutation as a scenario file, on standard output
  local k=$1 size=$2
  cat <<TOML
name = "perm-k$k"
description = "NDP permutation of $size flows on a k = $k fat-tree, sprayed"
seed = 1
[fabric]
topology = "fat-tree"
k = $k
host_link = { tech = "10gige", delay = "1us", mtu = 9000 }
switch = { buffer = "8 frames", trim = true }
multipath = "spray"
[[workload]]
kind = "tput"
traffic = "permutation"
flow_size = "$size"
transport = "ndp"
time = "100ms"
TOML
}
if [ "${1:-}" = --scenario ]; then
  scenario "${2:-32}" "${3:-200KB}"
  exit 0
fi
k="${1:-32}"
size="${2:-200KB}"
bin="${WEFT_BIN:-target/release/weft}"
[ -x "$bin" ] || cargo build --release -q
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scenario "$k" "$size" >"$work/perm.toml"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "%U %S %M" -o "$work/time" "$bin" run "$work/perm.toml" --engine sim -q \
  -o "$work/perm.json" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
read -r u s m <"$work/time"
python3 - "$work/perm.json" "$u" "$s" "$m" "$k" "$size" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["samples"][0]
cpu = max(float(sys.argv[2]) + float(sys.argv[3]), 0.01)  # /usr/bin/time counts in 10 ms
kb, k = int(sys.argv[4]), int(sys.argv[5])
hosts = k ** 3 // 4
pkts = w["frames_forwarded"]
print(f"k = {k}, {hosts} hosts, {sys.argv[6]} each: {w['flows_completed']} of {hosts} flows done, "
      f"FCT p50 {w['fct_p50_us']:.0f} us, last {w['fct_max_us']:.0f} us "
      f"(ideal {w.get('ideal_fct_us', float('nan')):.0f} us)")
print(f"{pkts / 1e6:.2f} M packets forwarded in {cpu:.1f} CPU s ({pkts / cpu / 1e6:.2f} M per CPU s), "
      f"peak memory {kb / 1024:.0f} MB ({kb / hosts:.0f} KB per host)")
PY
