#!/usr/bin/env bash
# Crash anywhere (issue 30): `kill -9` of `weft send` or `weft recv` at N random instants of a
# transfer (picked from a seed), each followed at once by `weft send --resume` (after restarting
# `weft recv` where it was the one killed). Checks, every time, that the file arrives identical,
# that nothing is left beside it, and that no resume is refused. It is the test
# `xfer_crash` (10 instants in CI) run for N (default 100); a round takes about 2 s.
#
# Usage: bench/crash.sh [N] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-100}"
seed="${2:-6221104}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
WEFT_CRASH_ROUNDS="$n" WEFT_CRASH_SEED="$seed" \
  cargo test -q -p weft --test xfer_crash -- --nocapture
echo "crash anywhere: $n kill -9 instants from seed $seed, every resume completed (target: all $n)"
