#!/bin/bash
# The twin loop on this machine, as a regression guard with a loose bound (issue 13): calibrate on
# three 2-rank TP=2 runs of the tiny GPT (4 micro-batches; `tandem calibrate` takes per shape the
# median over the runs of each run's mean, as the bench and the demo do), predict a different run
# (8 micro-batches) with `tandem sim --calibration`, measure that run, and require |error| <= 25 %.
# Beside it, the loop's other pieces, each checked for what it must carry (not timed): the machine
# state probe taken right before the measured run (`tandem run --probe-state`) and the prediction
# scaled to it (`tandem sim --state-probe`: its JSON names the ratios), the calibration's probes
# taken the same way, alone right before each calibration run (`tandem calibrate --state-probe`),
# the runs' own probes in their JSON, and `tandem compare` showing the interval's evidence beside the
# error. A derivable check of the calibration's state: a profile calibrated with the same probe file
# three times (--state-probe F x3: their median is F) holds one machine state, the one a prediction
# probed with F falls in (traces/calibration/machine_states.h): state 1 of 1, unscaled. Timing on a
# shared machine is noisy (docs/exec.md, "Measurement noise": IQRs of 10-30 % under load), so an
# attempt over the bound is retried, calibration included, up to 3 times: a model regression (the
# GPU-roofline fallback was +3076 %, the median-based profile -50 %) fails every attempt, a noisy
# attempt does not fail the test.
#   host_twin_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
tiny="$src/scenarios/tiny-gpt.textproto"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
sets=(--set cluster.preset=host --set cluster.gpus=2 --set strategy.tp=2)
other=("${sets[@]}" --set strategy.global_batch=16)
for attempt in 1 2 3; do
  for i in 1 2 3; do
    "$bin/tandem-run" --probe-state "$tmp/cal$i.probe.txt" -n 2
    "$bin/tandem-run" -n 2 "$tiny" "${sets[@]}" --steps 8 --json --trace "$tmp/cal$i.trace" > "$tmp/cal$i.json"
  done
  "$bin/tandem-calibrate" "$tmp/cal1.trace" "$tmp/cal2.trace" "$tmp/cal3.trace" "$tiny" "${sets[@]}" -o "$tmp/p.pb" --no-shared-probe \
    --state-probe "$tmp/cal1.probe.txt" --state-probe "$tmp/cal2.probe.txt" --state-probe "$tmp/cal3.probe.txt" > /dev/null
  "$bin/tandem-sim" "$tiny" "${other[@]}" --calibration "$tmp/p.pb" --json --trace "$tmp/pred.trace" > "$tmp/pred.json"
  "$bin/tandem-run" --probe-state "$tmp/now.txt" -n 2
  "$bin/tandem-sim" "$tiny" "${other[@]}" --calibration "$tmp/p.pb" --state-probe "$tmp/now.txt" --json > "$tmp/state.json"
  "$bin/tandem-run" -n 2 "$tiny" "${other[@]}" --steps 8 --json --trace "$tmp/meas.trace" > "$tmp/meas.json"
  "$bin/tandem-compare" "$tmp/pred.trace" "$tmp/meas.trace" -o "$tmp/report.html" > "$tmp/compare.txt"
  grep -q "^interval evidence: calibration-spread+host-bench-residuals: the 3 calibration runs' spread" "$tmp/compare.txt" ||
    { echo "tandem compare does not show the interval's evidence:" >&2; cat "$tmp/compare.txt" >&2; exit 1; }
  if [ "$attempt" = 1 ]; then
    "$bin/tandem-calibrate" "$tmp/cal1.trace" "$tmp/cal2.trace" "$tmp/cal3.trace" "$tiny" "${sets[@]}" -o "$tmp/same.pb" --no-shared-probe \
      --no-probe --state-probe "$tmp/now.txt" --state-probe "$tmp/now.txt" --state-probe "$tmp/now.txt" > /dev/null
    "$bin/tandem-sim" "$tiny" "${other[@]}" --calibration "$tmp/same.pb" --state-probe "$tmp/now.txt" --json > "$tmp/same.json"
    python3 - "$tmp/same.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["prediction_interval"]["state_probe"]
assert all(abs(r[k] - 1) < 1e-9 for k in ("communication_ratio", "memory_ratio", "compute_ratio")), r
assert (r["calibrated_state"], r["calibrated_states"], r["matched"]) == (1, 1, True), r
PY
  fi
  python3 - "$tmp/state.json" "$tmp/meas.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["prediction_interval"]
m = json.load(open(sys.argv[2]))
ratios = s.get("state_probe", {})
assert s.get("evidence") == "calibration-spread+host-bench-residuals", s
assert all(ratios.get(k, 0) > 0 for k in ("communication_ratio", "memory_ratio", "compute_ratio")), s
assert 1 <= ratios["calibrated_state"] <= ratios["calibrated_states"] <= 3, s  # three calibration runs
assert all(m["state_probe"][k] > 0 for k in ("allreduce_256b_s", "allreduce_16kib_s", "zero_fill_1mib_s", "compute_s")), m
PY
  if python3 - "$tmp/pred.json" "$tmp/meas.json" "$attempt" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["iteration_time_s"]
m = json.load(open(sys.argv[2]))
e = (p - m["iteration_time_s"]) / m["iteration_time_s"]
print(f"attempt {sys.argv[3]}: predicted {p*1e3:.2f} ms, measured {m['iteration_time_s']*1e3:.2f} ms "
      f"(IQR {100*m['steady_state']['relative_iqr']:.1f} %), error {100*e:+.1f} %")
sys.exit(0 if abs(e) <= 0.25 else 1)
PY
  then exit 0; fi
done
echo "host twin: cross-configuration prediction off by more than 25 % in 3 attempts" >&2
exit 1
