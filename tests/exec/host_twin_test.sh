#!/bin/bash
# The twin loop on this machine, as a regression guard with a loose bound (issue 13): calibrate on
# a 2-rank TP=2 run of the tiny GPT (4 micro-batches), predict a different run (8 micro-batches)
# with `tandem sim --calibration`, measure that run, and require |error| <= 25 %. Timing on a
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
  "$bin/tandem-run" -n 2 "$tiny" "${sets[@]}" --steps 8 --json --trace "$tmp/cal.trace" > "$tmp/cal.json"
  "$bin/tandem-calibrate" "$tmp/cal.trace" "$tiny" "${sets[@]}" -o "$tmp/p.pb" > /dev/null
  "$bin/tandem-sim" "$tiny" "${other[@]}" --calibration "$tmp/p.pb" --json > "$tmp/pred.json"
  "$bin/tandem-run" -n 2 "$tiny" "${other[@]}" --steps 8 --json > "$tmp/meas.json"
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
