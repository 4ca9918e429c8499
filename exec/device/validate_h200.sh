#!/usr/bin/env bash
# The single-GPU real-hardware validation of tandem on an H200 (docs/validation.md). Runs THERE,
# from the repository root, with the bundle that exec/device/make_bundle.sh built HERE carried:
#
#   device run: carry [".device-bundle"], timeout_s 600,
#               command "bash exec/device/validate_h200.sh"
#
# 1. unpacks .device-bundle/bundle.tar.xz into /tmp, finds CUDA (cudart, cuBLAS) and NCCL (the
#    toolkit, else PyTorch's venv) and checks that every binary starts;
# 2. measures the ceilings (tandem-ceilings: pinned H2D/D2H, D2D, bf16 GEMM 8192^3);
# 3. for each run of RUNS, `tandem run -n 1 --driver cuda --steps 3` with --trace and --json,
#    then `tandem calibrate` on its trace, `tandem sim` uncalibrated and calibrated, and
#    `tandem compare --json` of each prediction against the measurement;
# 4. packs everything into at most 8 files under $OUT and prints the table last.
#
# Fails soft: a run that fails or times out is marked in the table and the others go on. Runs are
# started in the order of RUNS while the deadline leaves time for one (TANDEM_DEADLINE_S, from the
# script's start; the rest are marked "skipped").
#
# Env: TANDEM_RUNS        space-separated runs MODEL:MB:RECOMPUTE:OFFLOAD (default below)
#      TANDEM_MICROBATCHES micro-batches per iteration (global_batch = MB * this; default 4)
#      TANDEM_STEPS       steps per run (default 3; the iteration time is the median of 2..N)
#      TANDEM_RUN_TIMEOUT seconds per `tandem run` (default 150)
#      TANDEM_DEADLINE_S  no run starts after this many seconds (default 420)
#      TANDEM_DRY_RUN=1   no GPU: check the bundle, plan and simulate every run, no tandem run
#      OUT                where results go (default /tmp/tandem-validate-out)
set -uo pipefail
t_start=$(date +%s)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
OUT=${OUT:-/tmp/tandem-validate-out}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/tandem-validate.XXXXXX)
log="$W/log.txt"
dry=${TANDEM_DRY_RUN:-0}
steps=${TANDEM_STEPS:-3}
mbs_per_iter=${TANDEM_MICROBATCHES:-4}
run_timeout=${TANDEM_RUN_TIMEOUT:-150}
deadline=${TANDEM_DEADLINE_S:-420}
# Most informative first (docs/validation.md, "The runs"): the deadline cuts from the end.
default_runs="1.3b:1:none:none 1.3b:8:full:none 1.3b:4:none:optimizer 6.7b:1:full:none \
1.3b:2:none:none 1.3b:4:none:none 1.3b:8:none:none 1.3b:1:full:none 1.3b:4:full:none \
1.3b:1:none:optimizer 1.3b:8:full:optimizer 6.7b:1:none:none 6.7b:2:none:none 6.7b:4:full:none \
6.7b:8:full:none 1.3b:2:full:none"
runs=${TANDEM_RUNS:-$default_runs}

say() { echo "$*" | tee -a "$log"; }
elapsed() { echo $(($(date +%s) - t_start)); }

# ---- 1. bundle and libraries ----------------------------------------------------------------------
B=/tmp/tandem-bundle
if [ -f .device-bundle/bundle.tar.xz ]; then
  rm -rf "$B" && mkdir -p "$B"
  if ! tar -C "$B" -xJf .device-bundle/bundle.tar.xz 2>>"$log"; then
    python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
      .device-bundle/bundle.tar.xz "$B" || { say "FATAL: cannot unpack .device-bundle/bundle.tar.xz"; exit 1; }
  fi
elif [ -x .device-bundle/stage/bin/tandem-run ]; then
  B=$root/.device-bundle/stage
else
  say "FATAL: no .device-bundle/bundle.tar.xz: run exec/device/make_bundle.sh here and carry .device-bundle"
  exit 1
fi
# shellcheck disable=SC1091
. "$B/env.sh"

# CUDA's runtime and cuBLAS, and NCCL: the toolkit's folders, else PyTorch's venv (nvidia-* wheels).
find_lib() {  # SONAME -> the folder that holds it, or nothing
  local d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$d/$1" ] && { echo "$d"; return; }
  done
  local site
  site=$(python3 -c "import site; print(' '.join(site.getsitepackages()))" 2>/dev/null)
  for d in $site; do
    local f
    f=$(find "$d/nvidia" -name "$1" 2>/dev/null | head -1)
    [ -n "$f" ] && { dirname "$f"; return; }
  done
  f=$(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n {print $NF; exit}')
  [ -n "$f" ] && dirname "$f"
}
libpath="$B/lib"
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  d=$(find_lib "$so")
  if [ -z "$d" ]; then
    say "warning: $so not found (toolkit or PyTorch venv)"
  else
    say "lib: $so from $d"
    case ":$libpath:" in *":$d:"*) ;; *) libpath="$libpath:$d" ;; esac
  fi
done
export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Debian 12's libstdc++/libgcc_s only where the system's are too old or missing.
if ! tandem-plan --help >/dev/null 2>>"$log"; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$B/lib-cxx"
  say "lib: using the bundle's libstdc++ (lib-cxx)"
fi
for b in tandem-plan tandem-sim tandem-calibrate tandem-compare tandem-run; do
  "$b" --help >/dev/null 2>>"$log" || say "FATAL?: $b does not start (see log)"
done
say "bundle: $B ($(head -3 "$B/MANIFEST" | tail -2 | tr '\n' ' '))"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader \
  >>"$log" 2>&1 || true

# ---- 2. ceilings -------------------------------------------------------------------------------------
if [ "$dry" = 1 ]; then
  say "dry run: no GPU steps"
  timeout 60 tandem-ceilings >"$W/ceilings.txt" 2>&1
  say "tandem-ceilings (expect exit 2, no device): exit $?"
else
  timeout 90 tandem-ceilings 2>&1 | tee "$W/ceilings.txt" | tee -a "$log"
fi

# ---- 3. runs ---------------------------------------------------------------------------------------
declare -a rows
for spec in $runs; do
  IFS=: read -r model mb rc off <<<"$spec"
  id="gpt${model}-mb${mb}-rc${rc}-off${off}"
  scen="scenarios/gpt-${model}-h200.textproto"
  sets=(--set "strategy.micro_batch=$mb" --set "strategy.global_batch=$((mb * mbs_per_iter))"
        --set "strategy.recompute=$rc" --set "strategy.offload=$off"
        # The CUDA driver's weight-gradient GEMMs write gradients in the training dtype; the default
        # software preset (megatron-core-0.8) keeps fp32 gradients for bf16, which it refuses.
        # Plan, sim and run all get this, so they describe the same schedule.
        --set "software.grad_reduce_dtype=param")
  d="$W/$id"
  mkdir -p "$d"
  status=ok
  left=$((deadline - $(elapsed)))
  if [ "$left" -lt 30 ]; then
    rows+=("$id|skipped (deadline)")
    say "== $id: skipped, $(elapsed) s of $deadline s spent"
    continue
  fi
  t=$run_timeout
  [ "$t" -gt "$left" ] && t=$left
  tandem-plan "$scen" "${sets[@]}" --json >"$d/plan.json" 2>"$d/plan.err" || status="plan failed"
  if [ "$dry" != 1 ] && [ "$status" = ok ]; then
    say "== $id: tandem run (timeout $t s, at $(elapsed) s)"
    t0=$(date +%s)
    timeout --kill-after=10 "$t" tandem-run -n 1 --driver cuda "$scen" "${sets[@]}" --steps "$steps" \
      --timeout 120 --trace "$d/measured.trace" --json >"$d/run.json" 2>"$d/run.err"
    rc_run=$?
    echo "$(($(date +%s) - t0))" >"$d/run.wall_s"
    case $rc_run in
      0) ;;
      124|137) status="timeout ${t}s" ;;
      3) status="OOM (exit 3)" ;;
      *) status="run exit $rc_run" ;;
    esac
    [ "$status" = ok ] || { say "   $status: $(tail -2 "$d/run.err" | tr '\n' ' ')"; tail -2 "$d/run.err" >>"$log"; }
  fi
  # Predictions (cheap: seconds on the CPU).
  timeout 120 tandem-sim "$scen" "${sets[@]}" --json --trace "$d/pred-uncal.trace" >"$d/sim-uncal.json" \
    2>"$d/sim-uncal.err" || echo "sim-uncal exit $?" >>"$d/notes"
  if [ -s "$d/measured.trace" ] && [ "$status" = ok ]; then
    timeout 120 tandem-calibrate "$d/measured.trace" "$scen" "${sets[@]}" -o "$d/profile.pb" \
      >"$d/calibrate.out" 2>&1 || echo "calibrate exit $?" >>"$d/notes"
    timeout 120 tandem-sim "$scen" "${sets[@]}" --calibration "$d/profile.pb" --json \
      --trace "$d/pred-cal.trace" >"$d/sim-cal.json" 2>"$d/sim-cal.err" || echo "sim-cal exit $?" >>"$d/notes"
    for k in uncal cal; do
      [ -s "$d/pred-$k.trace" ] || continue
      timeout 120 tandem-compare "$d/pred-$k.trace" "$d/measured.trace" -o "$d/compare-$k.html" --json \
        >"$d/compare-$k.json" 2>"$d/compare-$k.err" || echo "compare-$k exit $?" >>"$d/notes"
    done
  fi
  [ "$dry" = 1 ] && [ "$status" = ok ] && status="dry"
  rows+=("$id|$status")
done

# ---- 4. table and results ---------------------------------------------------------------------
table() {
  python3 - "$W" "${rows[@]}" <<'EOF'
import json, os, sys
w = sys.argv[1]
def load(p):
    try:
        with open(p) as f: return json.load(f)
    except Exception: return None
def pct(a, b):
    return "" if a is None or b is None or not b else "%+.1f%%" % (100.0 * (a - b) / b)
def s(x): return "-" if x is None else "%.3f" % x
def gib(x): return "-" if x is None else "%.2f" % (x / 2**30)
hdr = ("run", "status", "meas s", "uncal s", "err", "cal s", "err", "peak GiB", "plan GiB", "err")
out = []
for row in sys.argv[2:]:
    rid, status = row.split("|", 1)
    d = os.path.join(w, rid)
    run = load(os.path.join(d, "run.json")) or {}
    su = load(os.path.join(d, "sim-uncal.json")) or {}
    sc = load(os.path.join(d, "sim-cal.json")) or {}
    plan = load(os.path.join(d, "plan.json")) or {}
    m = run.get("iteration_time_s")
    u = su.get("iteration_time_s")
    c = sc.get("iteration_time_s")
    pk = run.get("peak_memory_bytes")
    pl = (run.get("planned_peak_memory_bytes_per_rank") or [None])[0] or plan.get("peak_memory_bytes")
    out.append((rid, status, s(m), s(u), pct(u, m), s(c), pct(c, m), gib(pk), gib(pl), pct(pk, pl)))
widths = [max(len(str(r[i])) for r in [hdr] + out) for i in range(len(hdr))]
for r in [hdr] + out:
    print("  ".join(str(v).ljust(widths[i]) for i, v in enumerate(r)))
print("err = (predicted - measured) / measured; memory err = (measured - planned) / planned.")
print("targets: iteration time 5% uncalibrated, 2% calibrated; peak memory 2% (docs/validation.md).")
print("cal = calibrated on the same run's trace (in-sample).")
EOF
}
table >"$W/table.txt" 2>&1
cp "$W/table.txt" "$OUT/table.txt"
cp "$W/ceilings.txt" "$OUT/ceilings.txt" 2>/dev/null
# Everything but traces and HTML (small), the measured traces, the predicted traces + reports:
# at most 16 MiB a file, 8 files in all (README of the device tool).
(cd "$W" && tar -cJf "$OUT/runs.tar.xz" --exclude='*.trace' --exclude='*.html' . 2>/dev/null)
(cd "$W" && find . -name 'measured.trace' -print0 | tar -cJf "$W/measured.tar.xz" --null -T - 2>/dev/null)
(cd "$W" && find . \( -name 'pred-*.trace' -o -name '*.html' \) -print0 | tar -cJf "$W/predicted.tar.xz" --null -T - 2>/dev/null)
for a in measured predicted; do
  sz=$(stat -c %s "$W/$a.tar.xz" 2>/dev/null || echo 0)
  if [ "$sz" -le $((15 << 20)) ]; then
    cp "$W/$a.tar.xz" "$OUT/"
  else
    # Two parts at most each (8 files in all): cat $a.tar.xz.part-* > $a.tar.xz
    split -b 15M -a 1 "$W/$a.tar.xz" "$OUT/$a.tar.xz.part-"
    ls "$OUT/$a.tar.xz.part-"* | tail -n +3 | xargs -r rm -f
  fi
done
cp "$log" "$OUT/log.txt"
echo
echo "== ceilings"
grep -h ceiling "$W/ceilings.txt" 2>/dev/null || tail -2 "$W/ceilings.txt" 2>/dev/null
echo "== tandem on one H200 ($(elapsed) s; results in \$OUT: $(ls "$OUT" | tr '\n' ' '))"
cat "$W/table.txt"
