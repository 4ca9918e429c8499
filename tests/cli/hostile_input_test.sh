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

# --- 2. bounded memory: refusals with an estimate, never bad_alloc ---------------------------
refuse "plan global_batch=1e6 refused with an estimate" 2 "max-memory" \
  "$bin/tandem-plan" "$tiny" --set strategy.global_batch=1000000
refuse "export-chakra global_batch=1e6 refused" 2 "max-memory" \
  "$bin/tandem-export-chakra" "$tiny" --set strategy.global_batch=1000000 -o "$work/et"
refuse "model.layers=1e9 refused" 2 "model.layers|max-memory" "$bin/tandem-plan" "$tiny" --set model.layers=1000000000
refuse "2^30 GPUs refused" 2 "cluster.gpus" "$bin/tandem-plan" "$tiny" --set cluster.gpus=1073741824 \
  --set strategy.micro_batch=1 --set strategy.global_batch=1073741824
# (--max-memory fixed so that the check does not depend on this machine's memory)
refuse "1,048,576-GPU sim refused with an estimate" 2 "needs about .* GiB.*max-memory" \
  "$bin/tandem-sim" "$root/scenarios/gpt3-175b-a100.textproto" --set cluster.gpus=1048576 \
  --set strategy.global_batch=1572864 --max-memory 8

# --- 3. inputs must be regular files ----------------------------------------------------------
refuse "scenario /dev/zero refused" 2 "not a regular file" "$bin/tandem-plan" /dev/zero
refuse "preset /dev/zero refused" 2 "regular file|preset" "$bin/tandem-plan" "$tiny" --set cluster.preset=/dev/zero
refuse "preset /tmp refused (not 'gpus_per_node not set')" 2 "directory" "$bin/tandem-plan" "$tiny" --set cluster.preset=/tmp
refuse "--calibration /dev/zero refused" 2 "not a regular file" "$bin/tandem-sim" "$tiny" --calibration /dev/zero
refuse "--calibration DIR refused" 2 "directory" "$bin/tandem-sim" "$tiny" --calibration "$work"
: > "$work/empty.tsv"; printf '# only a comment\n' > "$work/comments.tsv"
refuse "--calibration empty file refused" 2 "empty|no " "$bin/tandem-sim" "$tiny" --calibration "$work/empty.tsv"
refuse "--calibration comments-only refused" 2 "empty|no " "$bin/tandem-sim" "$tiny" --calibration "$work/comments.tsv"

# --- 4. non-finite and extreme figures --------------------------------------------------------
for s in cluster.nvlink_bandwidth_gbps=inf cluster.nvlink_bandwidth_gbps=1e300 cluster.nvlink_latency_us=inf \
         cluster.nic_latency_us=inf cluster.kernel_launch_us=inf cluster.hbm_gib=9e9 model.seq_len=1073741824; do
  refuse "--set $s refused" 2 "${s%%=*}" "$bin/tandem-sim" "$tiny" --set "$s"
done

# --- 6. silent no-ops and misleading success --------------------------------------------------
"$bin/tandem-run" -n 1 "$tiny" --steps 1 --trace "$work/m.trace" >/dev/null 2>&1 || bad "run -n 1 on tiny"
refuse "calibrate refuses a simulated trace" 2 "predicted|simulated" \
  "$bin/tandem-calibrate" "$work/p.trace" "$tiny" -o "$work/prof.pb"
refuse "compare with roles swapped refused" 2 "swap|predict|measur" \
  "$bin/tandem-compare" "$work/m.trace" "$work/p.trace" -o "$work/r.html" --allow-different-scenarios
python3 - "$work/p.trace" "$work/flip.trace" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read()); b[len(b) // 2] ^= 0x5a; open(sys.argv[2], 'wb').write(b)
PY
refuse "a flipped payload byte is refused" 2 "checksum|corrupt|cut" \
  "$bin/tandem-compare" "$work/flip.trace" "$work/q.trace" -o "$work/r.html"

# --- 7. JSON is valid whatever the strings hold -----------------------------------------------
sed 's/^name: "tiny-gpt"/name: "ctl\\001 \\"q\\" \\377"/' "$tiny" > "$work/ctl.textproto"
for i in 1 2; do "$bin/tandem-plan" "$work/ctl.textproto" --json > "$work/plan$i.json" 2>/dev/null; done
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/plan1.json" 2>/dev/null && cmp -s "$work/plan1.json" "$work/plan2.json"
then ok "plan --json escapes control characters, quotes and bad UTF-8, the same every run"
else bad "plan --json with control characters: invalid or not deterministic"; fi

# --- 8. smaller -------------------------------------------------------------------------------
for prog in plan sim; do
  refuse "interleaved with pp=1 refused by $prog" 2 "strategy.pp_schedule.*interleaved" "$bin/tandem-$prog" "$tiny" \
    --set strategy.pp_schedule=interleaved --set strategy.virtual_stages=2
done
refuse "--set rejection names the --set" 2 "--set strategy.dtype" "$bin/tandem-plan" "$tiny" --set strategy.dtype=fp7
refuse "leading zero in a number refused" 2 "model.layers" "$bin/tandem-plan" "$tiny" --set model.layers=010
sed 's/^name: "tiny-gpt"/name: "unterminated/' "$tiny" > "$work/quote.textproto"
refuse "unterminated quote refused" 2 "quote|string|textproto:[0-9]" "$bin/tandem-plan" "$work/quote.textproto"
refuse "unterminated quote in --set refused" 2 "--set model.norm" "$bin/tandem-plan" "$tiny" --set 'model.norm="layernorm'
exit $fail
