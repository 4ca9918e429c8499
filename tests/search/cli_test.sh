#!/bin/sh
# tandem-search end to end: two runs give the same results (the timing fields aside), and so does
# --approximate where nothing parts; bad input
# (no valid strategy, a model that fits nowhere, an unknown --set field) exits 2 with the rule; -o
# writes the HTML report.
set -eu
bin="$1"; src="$2"; tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
tiny="$src/scenarios/tiny-gpt.textproto"
fixed="--set strategy.sp_mode=none --set strategy.recompute=none --set strategy.zero_stage=0 --set strategy.micro_batch=1
       --set software.grad_reduce_overlap=true --set software.overlap_param_gather=false --set software.tp_comm_overlap=false
       --set strategy.tp_mode=1d --set strategy.offload=none"
# shellcheck disable=SC2086
"$bin" "$tiny" --gpus 8 $fixed --top 3 -j 2 --json > "$tmp/a.json"
# shellcheck disable=SC2086
"$bin" "$tiny" --gpus 8 $fixed --top 3 -j 1 --json > "$tmp/b.json"
sed 's/"estimate_[a-z_]*":[^,]*,//g' "$tmp/a.json" > "$tmp/a.cut"
sed 's/"estimate_[a-z_]*":[^,]*,//g' "$tmp/b.json" > "$tmp/b.cut"
cmp "$tmp/a.cut" "$tmp/b.cut"
# 31 points, 19 valid (derived in search_space_test.cc).
grep -q '"points":31,"valid":19,' "$tmp/a.json"
grep -q '"rank":3,' "$tmp/a.json"
# --approximate where no lane parts (the tiny GPT on one node: no fold parts) is the exact search,
# byte for byte but for the timing fields (docs/sim.md "Approximate tier").
# shellcheck disable=SC2086
"$bin" "$tiny" --gpus 8 $fixed --top 3 -j 2 --json --approximate > "$tmp/approx.json"
sed 's/"estimate_[a-z_]*":[^,]*,//g' "$tmp/approx.json" > "$tmp/approx.cut"
cmp "$tmp/a.cut" "$tmp/approx.cut"
# -o writes the HTML report of the same run (its figures against the JSON: search_report_html_test.cc).
# shellcheck disable=SC2086
"$bin" "$tiny" --gpus 8 $fixed --top 3 -j 2 --json -o "$tmp/report.html" > "$tmp/c.json"
head -1 "$tmp/report.html" | grep -q '<!DOCTYPE html>'
[ "$(grep -c '<tr class="point' "$tmp/report.html")" -eq 3 ]
grep -q 'id="counts" data-points="31" data-valid="19"' "$tmp/report.html"
# The table names the invalid rules.
# shellcheck disable=SC2086
"$bin" "$tiny" --gpus 8 $fixed --top 1 > "$tmp/table.out"
grep -q "invalid 4: strategy.tp: tp = N must divide model.heads = N" "$tmp/table.out"
expect2() {  # expect2 PATTERN ARGS...: exit code 2 and PATTERN on stderr
  pattern="$1"; shift
  rc=0
  "$bin" "$@" > /dev/null 2> "$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] || { echo "expected exit 2, got $rc: $*"; cat "$tmp/err"; exit 1; }
  grep -q "$pattern" "$tmp/err" || { echo "expected '$pattern' in:"; cat "$tmp/err"; exit 1; }
}
# shellcheck disable=SC2086
expect2 "no valid strategy for 7 GPUs" "$tiny" --gpus 7 $fixed --set strategy.pp_schedule=1f1b --set strategy.virtual_stages=1
# shellcheck disable=SC2086
expect2 "the model fits nowhere on 1 GPUs" "$tiny" --gpus 1 $fixed --set cluster.hbm_gib=0.0009765625
expect2 "strategy.tpp" "$tiny" --gpus 8 --set strategy.tpp=2
expect2 "positive number of GPUs" "$tiny" --gpus 0
echo "search cli: ok"
