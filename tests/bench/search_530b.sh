#!/bin/sh
# Issue #17's search target: the whole space of a 530B GPT on 2520 A100s
# (tests/bench/mt-nlg-530b-a100.textproto), the best K simulated, in <= 60 s wall on the 2-core
# machine. Times `tandem search` under SCHED_FIFO (`chrt -f 1`: sched_autogroup makes `nice`
# useless on this VM, HELPERS.md) and prints the wall time, the search's own phase figures and the
# load average before and after (other work on the machine still takes the second core). Run by
# hand; nothing is asserted. Usage: search_530b.sh BUILD_BIN_DIR [RANKS [extra flags...]]
#   RANKS > 1 runs it under `mpirun -n RANKS` (docs/search.md "MPI"), with --bind-to none: Open
#   MPI's default binding of 2 ranks to cores made the same run 97 s instead of 54 s here.
set -eu
bin="$1"; ranks="${2:-1}"; [ $# -ge 2 ] && shift 2 || shift 1
here="$(cd "$(dirname "$0")" && pwd)"
scenario="$here/mt-nlg-530b-a100.textproto"
out="$(mktemp)"; trap 'rm -f "$out"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
if [ "$ranks" -gt 1 ]; then
  chrt -f 1 mpirun -n "$ranks" --bind-to none --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none \
    "$bin/tandem-search" "$scenario" --json "$@" > "$out"
else
  chrt -f 1 "$bin/tandem-search" "$scenario" --json "$@" > "$out"
fi
end=$(date +%s.%N)
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "wall: $(echo "$end - $start" | bc) s"
grep -o '"points":[0-9]*,"valid":[0-9]*' "$out"
grep -o '"out_of_memory":[0-9]*,"memory_planned":[0-9]*,"probes":[0-9]*,"estimate_wall_s":[0-9.]*,"estimate_cpu_s":[0-9.]*' "$out"
grep -o '"results":\[{"rank":1,"sets":\[[^]]*\]' "$out" || true
