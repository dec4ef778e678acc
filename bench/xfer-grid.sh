#!/usr/bin/env bash
# The lossy long-path grid (issue: bulk transfer where TCP fails): weft's reliable mode, iperf3
# TCP (cubic and bbr) and UDT's sendfile/recvfile through the emulator (weft emu, needs root) on
# an OC-3c path, for every round trip in {17, 100, 300} ms and random loss in {0.1, 1, 5}%.
# Each result is printed as a share of the AAL5 payload rate of OC-3c (149.76 Mbit/s x 48/53 =
# 135.63 Mbit/s), with weft's ratio to the better TCP. Targets: weft >= 90% at 1% loss for every
# RTT, >= 70% at 5% loss and 300 ms, and ahead of the best TCP by >= 5% wherever that TCP is below
# 90%.
#
# The path is bench/xfer-emu.toml's (hosts a and b, one switch, both links OC-3c) with the delay
# of each link set to a quarter of the round trip and the loss on a's link (both directions, so
# TCP's ACKs and weft's control channel see it too).
#
# How each tool is measured (every run has a cap of CAP seconds, because TCP at 5% loss over
# 300 ms moves a few hundred kbit/s and would take hours to move the file):
#  - weft: `weft send FILE` (SIZE_MIB, BLAKE3 on), timed by the wall clock around the client
#    (set-up included; its own figure, which leaves the set-up out as iperf3's does, is noted
#    beside); a transfer not done in 3 x CAP is credited with nothing and printed as such.
#  - iperf3: `-t CAP` and the bytes its server received over the seconds it counted (its own
#    figure: set-up and slow start's first round trips before its clock starts are left out,
#    which errs in TCP's favour).
#  - UDT: recvfile fetches the file from sendfile; credited with the bytes written by the time
#    it finished or was cut at the cap, over the wall time.
# Results go to DIR/results.jsonl (the record format of `weft sweep`, so `weft plot` draws them)
# and a figure per loss rate: DIR/loss-<P>.svg (share of the payload rate against the RTT, one
# line per tool).
#
# Usage: sudo bench/xfer-grid.sh [SIZE_MIB] [CAP_S] [DIR]
#        (defaults: 64 MiB, 20 s, target/xfer-grid). RTTS="17 100" LOSSES="1" narrow the grid;
#        TOOLS="weft" runs only some of weft, iperf3, udt; WEFT=path/to/weft uses that binary
#        instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib="${1:-64}"
cap="${2:-20}"
out="${3:-target/xfer-grid}"
rtts="${RTTS:-17 100 300}"
losses="${LOSSES:-0.1 1 5}"
tools="${TOOLS:-weft iperf3 udt}"
has() { case " $tools " in *" $1 "*) return 0;; *) return 1;; esac; }
[ "$(id -u)" = 0 ] || { echo "xfer-grid: needs root (network namespaces)" >&2; exit 2; }
for p in iperf3 libudt-dev g++; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || {
    apt-get update -qq && apt-get install -y -qq iperf3 libudt-dev g++ >/dev/null; break; }
done
modprobe tcp_bbr 2>/dev/null || true
if [ -n "${WEFT:-}" ]; then weft=$WEFT; else cargo build --release -q -p weft; weft=$PWD/target/release/weft; fi
mkdir -p "$out"
: > "$out/results.jsonl"
work=$(mktemp -d /dev/shm/weft-xfer-grid.XXXXXX)
trap 'rm -rf "$work"' EXIT

ex=/usr/share/doc/libudt-dev/examples
for f in sendfile recvfile; do
  sed 's|#include <udt.h>|#include <udt/udt.h>|' "$ex/$f.cpp" > "$work/$f.cpp"
  g++ -O2 -o "$work/$f" "$work/$f.cpp" -ludt -lpthread
done
head -c "$((size_mib << 20))" /dev/urandom > "$work/src.bin"
bytes=$((size_mib << 20))
aal5=135630000
echo "xfer-grid: $size_mib MiB per weft/UDT transfer, cap $cap s per run; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# The scenario of one cell: RTT (ms) and loss (%).
scenario() {
  python3 - "$1" "$2" > "$work/path.toml" <<'PY'
import sys
rtt_ms, loss_pct = float(sys.argv[1]), float(sys.argv[2])
print(f'''name = "xfer-grid-{rtt_ms:g}ms-{loss_pct:g}pct"
description = "bulk transfer over OC-3c, {rtt_ms:g} ms RTT, {loss_pct:g}% random loss"
seed = 4
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "sw"
fabric = "output-queued"
[[link]]
ends = ["a", "sw"]
tech = "oc3c"
delay = "{rtt_ms / 4:g}ms"
loss = {loss_pct / 100:g}
[[link]]
ends = ["sw", "b"]
tech = "oc3c"
delay = "{rtt_ms / 4:g}ms"''')
PY
}

# One emulated run; its result document on stdout.
emu() { "$weft" emu run "$work/path.toml" --json "$@"; }
# The last command's stdout from a run document, and whether the emulator fell behind.
stdout_of() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d['samples'][-1]['stdout'])"; }
degraded_of() { python3 -c "import json,sys; d=json.load(sys.stdin); print(str(d.get('summary',{}).get('switch',{}).get('degraded',False)).lower())"; }
timed() { echo "s=\$(date +%s.%N); $1; e=\$(date +%s.%N); echo \"\$s \$e\""; }

# record TOOL RTT LOSS BPS DEGRADED NOTE: one line of results.jsonl and one of the table.
record() {
  python3 - "$@" >> "$out/results.jsonl" <<'PY'
import json, sys
tool, rtt, loss, bps, degraded, note = sys.argv[1:7]
bps = float(bps)
rec = {"id": f"{tool}-{rtt}ms-{loss}pct", "params": {"tool": tool, "rtt_ms": float(rtt), "loss_pct": float(loss)},
       "seed": None, "status": "ok", "elapsed_s": 0.0,
       "result": {"kind": "xfer.grid", "summary": {"share_pct": 100 * bps / 135630000, "mbps": bps / 1e6,
                  "emulator_degraded": degraded == "true"}, "notes": [note] if note else []}}
print(json.dumps(rec))
PY
  python3 -c "print(f'  {\"$1\":<12} {$4/1e6:7.1f} Mbit/s = {100*$4/$aal5:5.1f}%' + ('  [emulator degraded]' if '$5' == 'true' else '') + ('  ($6)' if '$6' else ''))"
}

for rtt in $rtts; do
  for loss in $losses; do
    scenario "$rtt" "$loss"
    echo "RTT $rtt ms, loss $loss%:"
    wbps=0 best=0
    if has weft; then
    rm -rf "$work/rx" "$work/weft.json"; mkdir -p "$work/rx"
    doc=$(emu --exec "b:$weft recv --open --dir $work/rx --listen 10.77.0.2:7140 --force --sessions 1 &" \
              --exec "a:$(timed "timeout $((3 * cap)) $weft send $work/src.bin 10.77.0.2 --no-progress --json > $work/weft.json")")
    if cmp -s "$work/src.bin" "$work/rx/src.bin"; then
      bps=$(echo "$doc" | stdout_of | python3 -c "import sys; s,e=map(float,sys.stdin.read().split()[-2:]); print(int($bytes*8/(e-s)))")
      own=$(python3 -c "import json; print(json.load(open('$work/weft.json'))['summary']['goodput_bps'])")
      note=$(python3 -c "print(f'its own figure, set-up left out: {100*$own/$aal5:.1f}%')")
    else
      bps=0; note="not complete within $((3 * cap)) s"
    fi
    record weft "$rtt" "$loss" "$bps" "$(echo "$doc" | degraded_of)" "$note"
    wbps=$bps
    fi
    # iperf3 cubic and bbr
    for cc in cubic bbr; do
      has iperf3 || break
      doc=$(emu --exec "b:iperf3 -s -1 -B 10.77.0.2 &" \
                --exec "a:iperf3 -c 10.77.0.2 -t $cap -C $cc -J > $work/iperf3.json; echo done") || true
      bps=$(python3 -c "
import json
try:
    r = json.load(open('$work/iperf3.json'))['end']['sum_received']
    print(int(r['bytes'] * 8 / max(r['seconds'], 1e-9)))
except Exception:
    print(0)")
      record "iperf3-$cc" "$rtt" "$loss" "$bps" "$(echo "$doc" | degraded_of)" ""
      [ "$bps" -gt "$best" ] && best=$bps
    done
    if has udt; then
    rm -f "$work/udt.bin"
    doc=$(emu --exec "b:cd $work && $work/sendfile 9000 &" \
              --exec "a:$(timed "timeout $cap $work/recvfile 10.77.0.2 9000 src.bin $work/udt.bin >/dev/null")")
    got=$(stat -c %s "$work/udt.bin" 2>/dev/null || echo 0)
    bps=$(echo "$doc" | stdout_of | python3 -c "import sys; s,e=map(float,sys.stdin.read().split()[-2:]); print(int($got*8/(e-s)))")
    unote=""; [ "$got" -lt "$bytes" ] && unote="cut at $cap s after $got of $bytes bytes"
    record udt "$rtt" "$loss" "$bps" "$(echo "$doc" | degraded_of)" "$unote"
    fi
    has weft && has iperf3 && python3 -c "
w, t = $wbps, $best
share = 100 * w / $aal5
tshare = 100 * t / $aal5
print(f'  weft / best TCP = {w / max(t, 1):.2f}' + (f' (target >= 1.05 where the best TCP, {tshare:.1f}%, is below 90%)' if tshare < 90 else ''))"
  done
done

# One figure per loss rate: share of the payload rate against the RTT, a line per tool.
for loss in $losses; do
  python3 -c "
import json
for l in open('$out/results.jsonl'):
    r = json.loads(l)
    if r['params']['loss_pct'] == float('$loss'):
        print(l, end='')" > "$work/loss.jsonl"
  "$weft" plot "$work/loss.jsonl" --x rtt_ms --y share_pct --by tool -o "$out/loss-$loss.svg" >/dev/null \
    && echo "figure: $out/loss-$loss.svg"
done
echo "results: $out/results.jsonl; load average $(cut -d' ' -f1-3 /proc/loadavg)"
