#!/usr/bin/env bash
# weft mp against MPICH on loopback, in turns within one run: ping-pong (OSU osu_latency / osu_bw
# definitions, 2 ranks) and all-reduce of doubles (4 ranks), both built here from bench/mp/*.c.
# MPICH is run over TCP (MPIR_CVAR_NOLOCAL=1 and UCX's tcp transport on lo), since weft's ranks
# talk TCP; MPICH's default shared-memory path is printed once beside it, for reference.
#
# Each round runs MPICH and weft back to back, alternating which goes first; the table shows the
# medians over rounds, and the load average is printed per round (the machine is shared).
# Targets: ping-pong p50 within 1.2x of MPICH for 8 B to 64 KiB; bandwidth at 4 MiB at least 0.9x;
# all-reduce of 1 MiB among 4 ranks within 1.3x (p50).
#
# Usage: bench/mp.sh [ROUNDS]   (installs mpich and libmpich-dev from Debian if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-5}"

if ! command -v mpicc >/dev/null || ! dpkg-query -W -f='${Status}' libmpich-dev 2>/dev/null | grep -q "ok installed"; then
  echo "bench: installing mpich and libmpich-dev" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mpich libmpich-dev >/dev/null
fi
cargo build --release -q -p weft
weft=target/release/weft

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -Wno-stringop-overflow -o "$tmp/pingpong" bench/mp/pingpong.c
mpicc -O2 -o "$tmp/allreduce" bench/mp/allreduce.c

pp_sizes=(8 64 512 4096 32768 65536 4194304)
ar_size=1048576
iters=2000
large=200
warm=200
# Four ranks share two CPUs here; MPICH polls without end and takes 0.1-0.2 s per 1 MiB
# all-reduce then, so its all-reduce runs fewer iterations (weft the same ones).
ar_large=40
ar_warm=5
# MPICH over TCP: every peer treated as remote (no shared memory), UCX's TCP transport on lo,
# with TCP_NODELAY (without it UCX waits out delayed acknowledgements: 8 ms per 8-byte ping-pong).
mpich_tcp=(env MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self UCX_TCP_NODELAY=y UCX_NET_DEVICES=lo)

csv() { local IFS=,; echo "$*"; }

# MPICH's results are printed before MPI_Finalize, which over UCX's TCP transport sometimes
# hangs with four ranks: the run is cut off after a while and its printed lines kept.
mpich_pp() { { timeout 300 "${mpich_tcp[@]}" mpiexec -n 2 "$tmp/pingpong" "$iters" "$large" "$warm" "${pp_sizes[@]}" 2>/dev/null || true; } |
  awk '/^pingpong/ {print "pp", $2, $3, $4, $5}'; }
mpich_ar() { { timeout 300 "${mpich_tcp[@]}" mpiexec -n 4 "$tmp/allreduce" "$iters" "$ar_large" "$ar_warm" "$ar_size" 2>/dev/null || true; } |
  awk '/^allreduce/ {print "ar", $2, $3, $4, 0}'; }
weft_json() { python3 -c '
import json, sys
tag = sys.argv[1]
for s in json.load(sys.stdin)["samples"]:
    print(tag, s["size"], "%.3f" % s["p50_us"], "%.3f" % s["mean_us"], "%.1f" % s["mbps"])' "$1"; }
weft_pp() { "$weft" mp --local 2 --pattern pingpong --sizes "$(csv "${pp_sizes[@]}")" \
  --iterations "$iters" --iterations-large "$large" --warmup "$warm" --json | weft_json pp; }
weft_ar() { "$weft" mp --local 4 --pattern allreduce --sizes "$ar_size" \
  --iterations "$iters" --iterations-large "$ar_large" --warmup "$ar_warm" --json | weft_json ar; }

for r in $(seq 1 "$rounds"); do
  echo "round $r: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  if [ $((r % 2)) -eq 1 ]; then
    mpich_pp | sed 's/^/mpich /' >>"$tmp/results"
    weft_pp | sed 's/^/weft /' >>"$tmp/results"
    mpich_ar | sed 's/^/mpich /' >>"$tmp/results"
    weft_ar | sed 's/^/weft /' >>"$tmp/results"
  else
    weft_pp | sed 's/^/weft /' >>"$tmp/results"
    mpich_pp | sed 's/^/mpich /' >>"$tmp/results"
    weft_ar | sed 's/^/weft /' >>"$tmp/results"
    mpich_ar | sed 's/^/mpich /' >>"$tmp/results"
  fi
done
echo "after the rounds: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# For reference: MPICH's default path between local ranks (UCX shared memory).
{ timeout 300 mpiexec -n 2 "$tmp/pingpong" "$iters" "$large" "$warm" 8 65536 4194304 2>/dev/null || true; } |
  awk '/^pingpong/ {print "shm pp", $2, $3, $4, $5}' >>"$tmp/results"

python3 - "$tmp/results" "$rounds" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(tool, kind, size, col):
    v = [float(r[col]) for r in rows if r[0] == tool and r[1] == kind and int(r[2]) == size]
    return statistics.median(v) if v else float("nan")
def verdict(ok): return "meets" if ok else "MISSES"
print(f"medians over {sys.argv[2]} rounds (MPICH 4.0.2 over TCP on loopback; weft mp --local)")
print(f"{'test':<22} {'weft':>12} {'MPICH':>12} {'ratio':>7}  target")
sizes = sorted({int(r[2]) for r in rows if r[1] == "pp" and r[0] == "weft"})
for s in sizes:
    w, m = med("weft", "pp", s, 3), med("mpich", "pp", s, 3)
    tgt = "" if s > 65536 else f"<= 1.20x {verdict(w / m <= 1.2)}"
    print(f"{'pingpong p50 ' + str(s) + ' B':<22} {w:>10.2f}us {m:>10.2f}us {w / m:>6.2f}x  {tgt}")
big = max(sizes)
w, m = med("weft", "pp", big, 5), med("mpich", "pp", big, 5)
print(f"{'bandwidth ' + str(big) + ' B':<22} {w:>8.0f}Mbit/s {m:>6.0f}Mbit/s {w / m:>6.2f}x  >= 0.90x {verdict(w / m >= 0.9)}")
for s in sorted({int(r[2]) for r in rows if r[1] == "ar" and r[0] == "weft"}):
    w, m = med("weft", "ar", s, 3), med("mpich", "ar", s, 3)
    print(f"{'allreduce p50 ' + str(s) + ' B':<22} {w:>10.2f}us {m:>10.2f}us {w / m:>6.2f}x  <= 1.30x {verdict(w / m <= 1.3)}")
    w, m = med("weft", "ar", s, 4), med("mpich", "ar", s, 4)
    print(f"{'allreduce mean ' + str(s) + ' B':<22} {w:>10.2f}us {m:>10.2f}us {w / m:>6.2f}x")
for v in (r for r in rows if r[0] == "shm"):
    print(f"MPICH shared memory, for reference: pingpong {v[2]} B p50 {float(v[3]):.2f}us, {float(v[5]):.0f} Mbit/s")
EOF
