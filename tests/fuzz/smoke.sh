#!/usr/bin/env bash
# The fuzzing smoke of `./tandem test` (docs/fuzzing.md): builds the libFuzzer targets (preset
# fuzz, clang, ASan + UBSan, into build-fuzz/), replays every reproducer of regressions/<target>/
# (a fixed crash must stay fixed), then fuzzes each target for SECONDS on its checked-in corpus.
# Fails on any crash, sanitizer report, timeout or leak; the input is kept in out/fuzz/.
# Reproducers listed in regressions/known-unfixed.txt (bugs found, not fixed yet) are replayed
# too but do not fail the smoke; it says when one of them passes, so that it can be taken off.
# usage: tests/fuzz/smoke.sh [SECONDS]   (default $TANDEM_FUZZ_SECONDS, else 15 per target)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/tests/fuzz"
build="$root/build-fuzz"
secs="${1:-${TANDEM_FUZZ_SECONDS:-15}}"
out="$root/out/fuzz"
targets=(scenario plan trace calibration)
corpus_of() { [ "$1" = plan ] && echo scenario || echo "$1"; }

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake --preset fuzz -S "$root" "${launcher[@]}" > /dev/null
fi
cmake --build "$build" -j "$(nproc)" --target fuzzers > /dev/null

known="$here/regressions/known-unfixed.txt"
is_known() { [ -f "$known" ] && grep -qE "^$1/$2([[:space:]]|$)" "$known"; }

mkdir -p "$out"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
failed=0
for t in "${targets[@]}"; do
  bin="$build/bin/fuzz_$t"
  for r in "$here/regressions/$t"/*; do
    [ -f "$r" ] || continue
    name="$(basename "$r")"
    if "$bin" -runs=1 -timeout=30 -rss_limit_mb=2048 "$r" > "$work/replay.log" 2>&1; then
      is_known "$t" "$name" && echo "fuzz: $t/$name passes now: take it off regressions/known-unfixed.txt"
    elif is_known "$t" "$name"; then
      echo "fuzz: $t/$name still fails (known, unfixed)"
    else
      echo "FAIL: fuzz_$t crashes on regressions/$t/$name:"; tail -n 30 "$work/replay.log"; failed=1
    fi
  done
  c="$(corpus_of "$t")"
  dict=(); [ "$c" = scenario ] && dict=(-dict="$here/scenario.dict")
  mkdir -p "$work/$t"
  if "$bin" "$work/$t" "$here/corpus/$c" "${dict[@]}" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
       -artifact_prefix="$out/$t-" -print_final_stats=1 > "$work/$t.log" 2>&1; then
    echo "fuzz: $t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" | grep -o '[0-9]*$') executions in ${secs} s, no crash"
  else
    echo "FAIL: fuzz_$t found a crash (input in $out/):"; grep -E "ERROR|SUMMARY|internal error|invalid schedule|Test unit" "$work/$t.log" | head -n 20
    tail -n 60 "$work/$t.log" > "$out/$t.log"; failed=1
  fi
done
exit $failed
