#!/usr/bin/env bash
# The hostile-input probe of issue 11, replayed: every reproducer it found ends with a clear
# message and the exit code of its kind (2 bad input, 3 out of memory), or with correct output;
# never a crash (134/139), a hang (timeout: 124), a silent success, or a user's file destroyed.
# usage: hostile_input_test.sh BIN_DIR REPO_ROOT
set -u
bin="$1"; root="$2"; fail=0
tiny="$root/scenarios/tiny-gpt.textproto"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

# refuse DESC RC REGEX CMD...: CMD exits RC within 60 s and its stderr matches REGEX.
refuse() {
  local desc="$1" want="$2" re="$3"; shift 3
  local err rc
  err=$(timeout 60 "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -eq "$want" ] && grep -Eq -- "$re" <<<"$err"; then ok "$desc"
  else bad "$desc (exit $rc, want $want; stderr: $(head -c 400 <<<"$err"))"; fi
}

# --- 1. writers never replace what is not a regular file -------------------------------------
"$bin/tandem-sim" "$tiny" --trace "$work/p.trace" >/dev/null 2>&1 || bad "sim --trace on tiny"
cp "$work/p.trace" "$work/q.trace"
if [ "$(id -u)" -eq 0 ]; then
  # A device node of our own (the same device as /dev/null), so that a regression cannot harm the
  # machine's /dev/null.
  mknod -m 666 "$work/null" c 1 3
  "$bin/tandem-compare" "$work/p.trace" "$work/q.trace" -o "$work/null" >/dev/null 2>&1
  if [ -c "$work/null" ]; then ok "compare -o DEVICE leaves the device a character device"
  else bad "compare -o DEVICE replaced the device node"; fi
fi
echo keep > "$work/target.html"; ln -s "$work/target.html" "$work/link.html"
"$bin/tandem-compare" "$work/p.trace" "$work/q.trace" -o "$work/link.html" >/dev/null 2>&1
if [ -L "$work/link.html" ]; then ok "compare -o SYMLINK keeps the link"; else bad "compare -o SYMLINK replaced the link"; fi
mkfifo "$work/fifo"; cat "$work/fifo" > "$work/fifo.out" 2>/dev/null < /dev/null & reader=$!
timeout 60 "$bin/tandem-sim" "$tiny" --timeline "$work/fifo" >/dev/null 2>&1
sleep 0.5; kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
if [ -p "$work/fifo" ] && [ -s "$work/fifo.out" ]; then ok "sim --timeline FIFO writes into the FIFO"
else bad "sim --timeline FIFO: not written through, or replaced"; fi
refuse "sim --trace '' is an error" 2 "empty" "$bin/tandem-sim" "$tiny" --trace ""
if ls "$work" | grep -q '\.tmp'; then bad "temporary files left in $work"; else ok "no temporary files left"; fi

# --- 2. bounded memory and time: refusals with an estimate, never bad_alloc or hours of running --
refuse "plan global_batch=1e6 refused with an estimate" 2 "max-memory" \
  "$bin/tandem-plan" "$tiny" --set strategy.global_batch=1000000
refuse "export-chakra global_batch=1e6 refused" 2 "max-memory" \
  "$bin/tandem-export-chakra" "$tiny" --set strategy.global_batch=1000000 -o "$work/et"
# (--max-memory fixed so that the check does not depend on this machine's memory; 4 GiB since
# session 12: the replica-class fold's 65,536 states need about 6.9 GiB, the tp-only rerun's 131,072
# needed 12.3)
refuse "1,048,576-GPU sim refused with an estimate" 2 "needs about .* GiB.*max-memory" \
  "$bin/tandem-sim" "$root/scenarios/gpt3-175b-a100.textproto" --set cluster.gpus=1048576 \
  --set strategy.global_batch=1572864 --max-memory 4
# 10^6 GPUs of tiny-gpt, pure data parallelism: within 8 GiB of memory, but its two gradient
# all-reduces over 10^6 GPUs alone would take 2 x (10^6)^2 x 5 us, about 4 months
# (sim/sim_time_estimate.cc): refused at once, naming the estimate and --max-time, instead of
# running on.
million=("$bin/tandem-sim" "$tiny" --set cluster.gpus=1000000 --set strategy.global_batch=2000000 --max-memory 8)
refuse "1,000,000-GPU tiny-gpt sim refused with a time estimate" 2 \
  "would take about .* of wall time \(1000000 ranks.*more than the limit of 60\.0 min.*--max-time" \
  "${million[@]}"
refuse "--max-time with a bad duration refused" 2 "--max-time: expected a duration" "${million[@]}" --max-time 2x
refuse "sweep --max-time with a bad duration refused" 2 "--max-time: expected a duration" \
  "$bin/tandem-sweep" "$tiny" --vary strategy.tp=1,2 --max-time 5y
# Out of memory inside the simulation process (exit 3, not 1) is tested in
# tests/sim/forked_call_test.cc under RLIMIT_AS, where it is deterministic and takes milliseconds.

# --- 7. JSON is valid whatever the strings hold -----------------------------------------------
sed 's/^name: "tiny-gpt"/name: "ctl\\001 \\"q\\" \\377"/' "$tiny" > "$work/ctl.textproto"
for i in 1 2; do "$bin/tandem-plan" "$work/ctl.textproto" --json > "$work/plan$i.json" 2>/dev/null; done
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/plan1.json" 2>/dev/null && cmp -s "$work/plan1.json" "$work/plan2.json"
then ok "plan --json escapes control characters, quotes and bad UTF-8, the same every run"
else bad "plan --json with control characters: invalid or not deterministic"; fi

# Defects 3, 4, 6 and 8 of the issue are checked where their code is: the scenario loader's in
# tests/shared/hostile_input_test.cc, the trace and calibration readers' in
# tests/traces/hostile_input_test.sh (docs/fuzzing.md has the table, defect by defect).
exit $fail
