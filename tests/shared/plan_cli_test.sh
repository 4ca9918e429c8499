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
exit $fail
