#!/bin/sh
# `mpirun -n R tandem search` gives the JSON of the one-process search byte for byte (the timing
# fields aside: estimate_wall_s / estimate_cpu_s are measurements, different on any two runs), with
# R = 2 and 3 (the points do not divide evenly among 3); rank 0 alone prints; bad input under
# mpirun still exits 2 with the rule, printed once.
set -eu
bin="$1"; src="$2"; tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
tiny="$src/scenarios/tiny-gpt.textproto"
# The flags the host driver's MPI tests use (tests/exec/CMakeLists.txt): more ranks than cores, as
# root in a container, no cross-memory attach.
mpi="mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none"
cut() { sed 's/"estimate_[a-z_]*":[^,]*,//g' "$1"; }
fixed="--set strategy.recompute=none --set software.overlap_param_gather=false --set strategy.offload=none"
# shellcheck disable=SC2086
"$bin" "$tiny" --gpus 8 $fixed --top 4 -j 1 --json > "$tmp/one.json"
for r in 2 3; do
  # shellcheck disable=SC2086
  $mpi -n $r "$bin" "$tiny" --gpus 8 $fixed --top 4 -j 1 --json > "$tmp/mpi$r.json"
  cut "$tmp/one.json" > "$tmp/one.cut"
  cut "$tmp/mpi$r.json" > "$tmp/mpi$r.cut"
  cmp "$tmp/one.cut" "$tmp/mpi$r.cut" || { echo "mpirun -n $r: JSON differs"; diff "$tmp/one.cut" "$tmp/mpi$r.cut" | head; exit 1; }
done
# The run must have exercised the merge: points refused under several rules, points pruned, and
# four simulated results.
grep -q '"pruned":{"not among the K best by estimate' "$tmp/one.json"
[ "$(grep -o '"rank":[0-9]*' "$tmp/one.json" | wc -l)" -eq 4 ]
same() {  # same NAME ARGS...: one process and mpirun -n 2 give the same JSON (timings aside)
  name="$1"; shift
  "$bin" "$@" --json > "$tmp/$name.1.json"
  $mpi -n 2 "$bin" "$@" --json > "$tmp/$name.2.json"
  cut "$tmp/$name.1.json" > "$tmp/$name.1.cut"
  cut "$tmp/$name.2.json" > "$tmp/$name.2.cut"
  cmp "$tmp/$name.1.cut" "$tmp/$name.2.cut" || { echo "$name: JSON differs"; exit 1; }
}
# --vary-batch and --no-simulate through the same merge.
# shellcheck disable=SC2086
same vb "$tiny" --gpus 8 $fixed --vary-batch --top 6 --no-simulate
# Points out of memory before the K fit: HBM of 0.0015 GiB (1.61 MB) is under the planned peak of
# some of the best-estimated points (1.9-2.8 MB at the default HBM, in the run above).
# shellcheck disable=SC2086
same oom "$tiny" --gpus 8 $fixed --set cluster.hbm_gib=0.0015 --top 4 --no-simulate
grep -q '"out_of_memory":[1-9]' "$tmp/oom.1.json"
# Bad input: exit 2, the message once (from rank 0).
rc=0
# shellcheck disable=SC2086
$mpi -n 2 "$bin" "$tiny" --gpus 7 $fixed --set strategy.pp_schedule=1f1b --set strategy.virtual_stages=1 \
  > /dev/null 2> "$tmp/err" || rc=$?
[ "$rc" -eq 2 ] || { echo "expected exit 2 under mpirun, got $rc"; cat "$tmp/err"; exit 1; }
[ "$(grep -c 'no valid strategy for 7 GPUs' "$tmp/err")" -eq 1 ] || { echo "expected the message once:"; cat "$tmp/err"; exit 1; }
echo "search mpi: ok"
