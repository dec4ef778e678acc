#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ for a given time and prints, per target, the executions, the
# corpus it grew and what it found (crashes, time-outs, out-of-memory inputs, kept in
# fuzz/artifacts/TARGET/). A benchmark of robustness, not a test: run it by hand or nightly.
#
#   bench/fuzz.sh [SECONDS] [TARGET...]     SECONDS per target (default 60); all targets if none
#
# Builds the targets the way cargo-fuzz does (libFuzzer from libfuzzer-sys, SanitizerCoverage
# instrumentation, debug assertions and overflow checks on), with `cargo fuzz` itself when it is
# installed and otherwise with plain cargo: the instrumentation flags are stable rustc flags, so
# a nightly toolchain is used only if there is one (no sanitizer is asked for). Corpora persist
# in fuzz/corpus/TARGET/ between runs.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

SECS="${1:-60}"
shift || true
mapfile -t ALL < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^weft-fuzz$')
TARGETS=("${@:-${ALL[@]}}")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")

TOOLCHAIN=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then TOOLCHAIN=(+nightly); fi
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
echo "toolchain: $(cargo "${TOOLCHAIN[@]}" --version); $SECS s per target; load average $(cut -d' ' -f1-3 /proc/loadavg)"
# An explicit --target keeps the instrumentation off build scripts, as cargo-fuzz does.
HOST=$(rustc "${TOOLCHAIN[@]}" -vV | sed -n 's/^host: //p')
BIN="target/$HOST/release"
if cargo fuzz --help >/dev/null 2>&1; then
  BUILD=(cargo "${TOOLCHAIN[@]}" fuzz build --sanitizer none --release --target "$HOST")
else
  BUILD=(cargo "${TOOLCHAIN[@]}" build --release --bins --target "$HOST")
fi
BUILD_LOG=$(mktemp)
"${BUILD[@]}" >"$BUILD_LOG" 2>&1 || { tail -40 "$BUILD_LOG"; exit 1; }
rm -f "$BUILD_LOG"

printf '%-18s %14s %10s %8s  %s\n' target executions exec/s corpus findings
total=0
for t in "${TARGETS[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  before=$(ls "artifacts/$t" | wc -l)
  log=$(mktemp)
  # libFuzzer exits non-zero when it finds something; the artifacts say what.
  "$BIN/$t" "corpus/$t" -max_total_time="$SECS" -print_final_stats=1 -rss_limit_mb=2048 \
    -timeout=10 -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || true
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  found=$(( $(ls "artifacts/$t" | wc -l) - before ))
  total=$((total + found))
  what=$(ls -t "artifacts/$t" | head -"$found" | tr '\n' ' ')
  printf '%-18s %14s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$(ls "corpus/$t" | wc -l)" \
    "$([ "$found" -eq 0 ] && echo none || echo "$found: $what")"
  rm -f "$log"
done
echo "findings in all: $total"
[ "$total" -eq 0 ]
