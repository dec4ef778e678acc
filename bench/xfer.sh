#!/usr/bin/env bash
# weft send/recv (reliable mode, BLAKE3 integrity on) against iperf3 TCP single stream on
# loopback, run in turns so that both see the same machine:
#  - memory to memory, the comparison the target is set for: `weft send --mem` (bytes made in
#    memory, the ttcp -s source) into `weft recv --discard` (each buffer's BLAKE3 and the
#    whole-file digest checked, then dropped), against iperf3's default, which also sends from
#    and receives into memory. Target: ratio >= 0.7.
#  - file to file on tmpfs (/dev/shm), so the disk is out of the picture but the file system is
#    not: `weft send FILE` into `weft recv --dir`, against iperf3 -F reading the same file. The
#    iperf3 server receives into memory (its own -F on the receiving side stops short of the
#    end of the file), so iperf3 is spared the writing that weft does: the ratio errs against
#    weft.
# Then SBTP and MBTP on loopback with the study's parameters (9000-byte packets, 1 MiB buffers,
# MBTP with 5 receivers), printing the sender's time breakdown (sync / disk / transfer) that the
# RIACS study's Table 2 tabulates, and the loss fraction (the study's target: under 5%).
# The emulated OC-3c comparison is at the end (needs root and the emulator).
#
# Usage: bench/xfer.sh [SIZE_MIB] [RUNS]     (defaults: 1024 MiB, 3 runs; best run of each kept)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib="${1:-1024}"
runs="${2:-3}"

command -v iperf3 >/dev/null || { apt-get update -qq && apt-get install -y -qq iperf3 >/dev/null; }
cargo build --release -q -p weft
weft=$PWD/target/release/weft

work=$(mktemp -d /dev/shm/weft-xfer-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
jget() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }
mbps() { python3 -c "print(f'{$1/1e6:.0f}')"; }

head -c "$((size_mib << 20))" /dev/urandom > "$work/src.bin"
mkdir -p "$work/rx" "$work/sink"
port=$(free_port)
"$weft" recv --dir "$work/rx" --listen "127.0.0.1:$port" --force 2>"$work/recv.log" &
pids+=($!)
sink_port=$(free_port)
"$weft" recv --dir "$work/sink" --listen "127.0.0.1:$sink_port" --discard 2>"$work/sink.log" &
pids+=($!)
sleep 0.5

# One weft transfer (arguments before the host: a file, or --mem SIZE); prints its goodput in
# bit/s on stdout and its time breakdown on stderr.
weft_run() {
  local p=$1; shift
  local out
  out=$("$weft" send "$@" 127.0.0.1 --port "$p" --no-progress --json ${WEFT_SEND_ARGS:-})
  echo "$out" | jget '["summary"]' | python3 -c "import ast,sys; s=ast.literal_eval(sys.stdin.read()); print(f\"  (sync {s['sync_pct']}% disk {s['disk_pct']}% transfer {s['transfer_pct']}% other {s['other_pct']}%, retransmitted {s['packets_retransmitted']} of {s['packets_sent']}, final rate {s['final_rate_bps']/1e6:.0f} Mbit/s, packet {s['packet_size']} B)\")" >&2
  echo "$out" | jget '["summary"]["goodput_bps"]'
}

# One iperf3 TCP transfer: of SIZE_MIB from memory, or of the file given as -F FILE; prints its
# goodput in bit/s.
iperf_run() {
  local amount=(-n "$((size_mib << 20))") ip
  [ $# -gt 0 ] && amount=("$@")
  ip=$(free_port)
  iperf3 -s -1 -p "$ip" -B 127.0.0.1 >/dev/null 2>&1 &
  local server=$!
  sleep 0.3
  iperf3 -c 127.0.0.1 -p "$ip" -J "${amount[@]}" \
    | jget '["end"]["sum_received"]["bits_per_second"]' | cut -d. -f1
  wait "$server"
}

best_mem=0 best_mem_ip=0 best_file=0 best_file_ip=0
for i in $(seq "$runs"); do
  bps=$(weft_run "$sink_port" --mem "${size_mib}MiB")
  echo "memory to memory, weft reliable run $i: $(mbps "$bps") Mbit/s"
  [ "$bps" -gt "$best_mem" ] && best_mem=$bps
  bps=$(iperf_run)
  echo "memory to memory, iperf3 TCP run $i: $(mbps "$bps") Mbit/s"
  [ "$bps" -gt "$best_mem_ip" ] && best_mem_ip=$bps
done
for i in $(seq "$runs"); do
  bps=$(weft_run "$port" "$work/src.bin")
  cmp -s "$work/src.bin" "$work/rx/src.bin" || { echo "bench: received file differs!" >&2; exit 1; }
  rm -f "$work/rx/src.bin"
  echo "file to file (tmpfs), weft reliable run $i: $(mbps "$bps") Mbit/s"
  [ "$bps" -gt "$best_file" ] && best_file=$bps
  bps=$(iperf_run -F "$work/src.bin")
  echo "file (tmpfs) to memory, iperf3 TCP -F run $i: $(mbps "$bps") Mbit/s"
  [ "$bps" -gt "$best_file_ip" ] && best_file_ip=$bps
done
python3 - "$best_mem" "$best_mem_ip" "$best_file" "$best_file_ip" <<'PY'
import sys
w, t, wf, tf = (int(x) for x in sys.argv[1:5])
print(f"loopback memory to memory: weft reliable {w/1e6:.0f} Mbit/s, iperf3 TCP {t/1e6:.0f} Mbit/s, "
      f"ratio weft/iperf3 = {w/t:.2f} (target >= 0.70)")
print(f"loopback from a tmpfs file: weft reliable (file to file) {wf/1e6:.0f} Mbit/s, "
      f"iperf3 TCP -F (file to memory) {tf/1e6:.0f} Mbit/s, ratio weft/iperf3 = {wf/tf:.2f}")
PY

# SBTP and MBTP as published: 9000-byte packets, 1 MiB buffers, 4 receiving sockets; the
# study's 100 MB (SBTP) and 25 MB (MBTP, 5 receivers) files.
head -c 100000000 /dev/urandom > "$work/sbtp.bin"
head -c 26214400 /dev/urandom > "$work/mbtp.bin"
for mode in sbtp mbtp; do
  f="$work/$mode.bin"
  extra=()
  [ "$mode" = mbtp ] && extra=(--receivers 5)
  out=$("$weft" send "$f" 127.0.0.1 --port "$port" --mode "$mode" --packet-size 9000 --buffer-size 1MiB \
        --no-progress --json "${extra[@]}")
  echo "$out" | jget '["summary"]' | python3 -c "
import ast,sys
s=ast.literal_eval(sys.stdin.read())
loss = s['packets_lost']/max(1,s['packets_sent'])
print(f\"$mode: {s['goodput_mbps']:.0f} Mbit/s; sync {s['sync_pct']}% disk {s['disk_pct']}% transfer {s['transfer_pct']}% \"
      f\"(network idle {100-s['transfer_pct']:.1f}%); loss {100*loss:.2f}% (study: under 5%, striped 1-2%)\")"
  rm -f "$work/rx/$mode.bin"
done

# --- Emulated OC-3c path (17 ms RTT, 1% random loss) ------------------------------------------
# Needs the emulator (weft emu) and root. Reliable-mode goodput against iperf3 TCP (cubic, bbr)
# and UDT's sendfile/recvfile (Debian libudt-dev examples); target >= 90% of the AAL5 payload
# rate and ahead of both. WEFT_XFER_EMU=0 skips it.
if [ "${WEFT_XFER_EMU:-1}" = 1 ] && [ "$(id -u)" = 0 ] && "$weft" emu list >/dev/null 2>&1; then
  bash bench/xfer-emu.sh
else
  echo "emulated OC-3c comparison: skipped (needs root and a weft with the emulator; see bench/xfer-emu.sh)"
fi
