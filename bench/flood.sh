#!/usr/bin/env bash
# Agents under a flood (issue 30): `weft serve` on loopback while another process (bench/flood.py)
# holds IDLE connections that never say hello and opens RATE new ones a second for SECONDS, from
# 200 loopback addresses; meanwhile a real client runs `weft tput -t 2` again and again. Prints
# the client's set-up time per test (its wall time less the data phase: connection, hello, key
# proof, stream set-up and the final report), its median and p99 beside the target (p99 under
# 100 ms), whether every test succeeded, and the agent's descriptors and memory before, at the
# peak and after. Loopback only; the flood stops by itself.
#
# Usage: bench/flood.sh [IDLE] [RATE] [SECONDS]     (defaults 10000 1000 40)
#        WEFT_BIN=path/to/weft bench/flood.sh ...     (a weft already built, instead of building)
set -euo pipefail
cd "$(dirname "$0")/.."
idle="${1:-10000}"
rate="${2:-1000}"
secs="${3:-40}"
if [ -z "${WEFT_BIN:-}" ]; then cargo build -q --release -p weft; fi
bin="${WEFT_BIN:-target/release/weft}"
work=$(mktemp -d)
agent=""
flood=""
cleanup() {
  [ -n "$flood" ] && kill "$flood" 2>/dev/null || true
  [ -n "$agent" ] && kill "$agent" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

port=$((20000 + RANDOM % 20000))
"$bin" serve -q --bind "127.0.0.1:$port" 2>"$work/agent.err" &
agent=$!
sleep 0.5
mem() { awk '/^VmRSS/ {print $2 " kB"}' "/proc/$agent/status"; }
fds() { ls "/proc/$agent/fd" | wc -l; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); flood: $idle idle + $rate/s for $secs s"
echo "agent before: $(fds) descriptors, $(mem)"

# The same client on the idle agent first: the reference for the set-up time on this machine now.
setup_of() {
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; print((s["wall_ns"]-s["up"]["sender_elapsed_ns"])/1e6)' "$1"
}
: >"$work/quiet"
for _ in 1 2 3 4 5; do
  "$bin" tput "127.0.0.1:$port" -t 2s --json >"$work/t.json"
  setup_of "$work/t.json" >>"$work/quiet"
done
echo "set-up time without the flood (ms): $(sort -n "$work/quiet" | tr '\n' ' ')"

python3 bench/flood.py "$port" "$idle" "$rate" "$secs" >"$work/flood.json" 2>"$work/flood.err" &
flood=$!
# Start the tests once the idle connections are open.
until grep -q "idle connections opened" "$work/flood.err" 2>/dev/null; do
  kill -0 "$flood" 2>/dev/null || { cat "$work/flood.err"; exit 1; }
  sleep 0.1
done
peak_fds=0
peak_mem=0
ok=0
fail=0
: >"$work/setup"
while kill -0 "$flood" 2>/dev/null; do
  if "$bin" tput "127.0.0.1:$port" -t 2s --json >"$work/t.json" 2>"$work/t.err"; then
    ok=$((ok + 1))
    setup_of "$work/t.json" >>"$work/setup"
  else
    fail=$((fail + 1))
    sed 's/^/  failed: /' "$work/t.err"
  fi
  f=$(fds); m=$(awk '/^VmRSS/ {print $2}' "/proc/$agent/status")
  [ "$f" -gt "$peak_fds" ] && peak_fds=$f
  [ "$m" -gt "$peak_mem" ] && peak_mem=$m
done
wait "$flood" || true
flood=""
echo "flood: $(cat "$work/flood.json")"
echo "agent at peak: $peak_fds descriptors, $peak_mem kB"
sleep 3
echo "agent after:  $(fds) descriptors, $(mem)"
python3 - "$work/setup" "$ok" "$fail" <<'EOF'
import statistics, sys
v = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
ok, fail = int(sys.argv[2]), int(sys.argv[3])
if not v:
    print(f"tput during the flood: {ok} succeeded, {fail} failed; no set-up time measured")
    sys.exit(1)
p99 = v[min(len(v) - 1, int(round(0.99 * (len(v) - 1))))]
print(f"tput -t 2 during the flood: {ok} succeeded, {fail} failed")
print(f"set-up time (wall less data phase): median {statistics.median(v):.1f} ms, "
      f"p99 {p99:.1f} ms, max {v[-1]:.1f} ms over {len(v)} tests (target: p99 < 100 ms, all succeed)")
sys.exit(0 if fail == 0 and p99 < 100 else 1)
EOF
