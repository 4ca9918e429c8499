#!/usr/bin/env bash
# tandem plan end to end: the JSON keys the issue names, the exit code and message of bad input.
# usage: plan_cli_test.sh TANDEM_PLAN_BINARY REPO_ROOT
set -u
plan="$1"; root="$2"; fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }

json=$("$plan" --json "$root/scenarios/gpt3-175b-a100.textproto")
check "plan --json exits 0" "[ $? -eq 0 ]"
for key in parameters flops_per_iteration hardware_flops_per_iteration peak_memory_bytes memory_breakdown \
           params grads optimizer activations comm fits; do
  check "json has \"$key\"" "grep -q '\"$key\":' <<<\"\$json\""
done
check "json is one object on one line" "[ \$(wc -l <<<\"\$json\") -eq 1 ]"
check "gpt3 fits in 80 GiB" "grep -q '\"fits\": true' <<<\"\$json\""

text=$("$plan" "$root/scenarios/tiny-gpt.textproto" --set cluster.gpus=4 --set strategy.tp=2 --set strategy.pp=2)
check "text plan shows the grid" "grep -q 'dp 1 x pp 2 x tp 2' <<<\"\$text\""

err=$("$plan" "$root/scenarios/tiny-gpt.textproto" --set strategy.tp=3 2>&1 >/dev/null); rc=$?
check "tp not dividing heads exits 2" "[ $rc -eq 2 ]"
check "message names the field" "grep -q 'strategy.tp' <<<\"\$err\""

err=$("$plan" "$root/scenarios/no-such-file.textproto" 2>&1 >/dev/null); rc=$?
check "missing file exits 2" "[ $rc -eq 2 ]"
check "message names the file" "grep -q 'no-such-file.textproto' <<<\"\$err\""
# Hostile input (issue 11): refused with exit 2 and a message, never a hang or an abort.
tiny="$root/scenarios/tiny-gpt.textproto"
err=$(timeout 20 "$plan" /dev/zero 2>&1 >/dev/null); rc=$?
check "/dev/zero exits 2 at once" "[ $rc -eq 2 ]"
check "/dev/zero is not a regular file" "grep -q 'not a regular file' <<<\"\$err\""
tmp=$(mktemp -d); mkfifo "$tmp/fifo"
err=$(timeout 20 "$plan" "$tmp/fifo" 2>&1 >/dev/null); rc=$?
check "a FIFO exits 2 at once" "[ $rc -eq 2 ]"
err=$(timeout 20 "$plan" "$tmp" 2>&1 >/dev/null); rc=$?
check "a directory exits 2" "[ $rc -eq 2 ] && grep -q 'it is a directory' <<<\"\$err\""
rm -rf "$tmp"
err=$("$plan" "$tiny" --set cluster.preset=/tmp 2>&1 >/dev/null); rc=$?
check "a directory as preset exits 2 and lists the presets" \
  "[ $rc -eq 2 ] && grep -q 'it is a directory' <<<\"\$err\" && grep -q 'dgx-h100' <<<\"\$err\""
err=$("$plan" "$tiny" --set cluster.nic_latency_us=inf 2>&1 >/dev/null); rc=$?
check "an infinite latency exits 2 at its --set" \
  "[ $rc -eq 2 ] && grep -q '^tandem plan: --set cluster.nic_latency_us=inf (over .*): cluster.nic_latency_us: must be a finite number' <<<\"\$err\""
err=$("$plan" "$tiny" --set cluster.hbm_gib=9e9 2>&1 >/dev/null); rc=$?
check "hbm_gib 9e9 exits 2 (it printed a negative size)" "[ $rc -eq 2 ]"
# (an explicit budget, so that a machine with more memory than the estimate refuses it too)
err=$(timeout 60 "$plan" "$tiny" --set strategy.global_batch=1000000 --max-memory 16 2>&1 >/dev/null); rc=$?
check "global_batch 10^6 exits 2, not 134 (bad_alloc)" "[ $rc -eq 2 ]"
check "its message gives the estimate and the flag" \
  "grep -q '240001264 tasks per rank program' <<<\"\$err\" && grep -q -- '--max-memory' <<<\"\$err\""
err=$("$plan" "$root/scenarios/gpt3-175b-a100.textproto" --max-memory 0.1 2>&1 >/dev/null); rc=$?
check "--max-memory 0.1 refuses gpt3 (about 0.3 GiB)" "[ $rc -eq 2 ] && grep -q 'limit of 0.1 GiB' <<<\"\$err\""
err=$("$plan" "$tiny" --max-memory 0 2>&1 >/dev/null); rc=$?
check "--max-memory 0 exits 2" "[ $rc -eq 2 ]"
"$plan" "$tiny" --max-memory 1 >/dev/null 2>&1
check "--max-memory 1 plans tiny-gpt" "[ $? -eq 0 ]"
exit $fail
