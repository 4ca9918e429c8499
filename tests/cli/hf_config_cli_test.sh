#!/usr/bin/env bash
# model.hf_config end to end (shared/hf_config.h, issue 19): tandem plan takes a Hugging Face
# config.json from --set or from the scenario file (relative to the file's folder) and plans the
# model it describes; a config tandem cannot model exits 2 naming the config file and the field.
# usage: hf_config_cli_test.sh BIN_DIR REPO_ROOT
set -u
bin="$1"; root="$2"; fail=0
configs="$root/tests/shared/hf_configs"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

# Llama 2 7B over the GPT 6.7B scenario: 32 layers of hidden 4096 and 6,738,415,616 parameters
# (the published count; tests/shared/hf_config_test.cc derives it by hand): "6.74e+09".
out=$(timeout 120 "$bin/tandem-plan" "$root/scenarios/gpt-6.7b-h200.textproto" \
      --set model.hf_config="$configs/llama-2-7b/config.json" 2>&1); rc=$?
[ "$rc" -eq 0 ] && ok "plan --set model.hf_config=llama-2-7b exits 0" || bad "plan with llama-2-7b exits $rc: $out"
grep -q "model       llama: 6.74e+09 parameters, 32 layers, hidden 4096" <<<"$out" && ok "plans Llama 2 7B" \
  || bad "plan output: $(grep '^model' <<<"$out")"

# In a scenario file, relative to its folder, with the sequence inside Mistral's window.
mkdir -p "$work/s/cfg" && cp "$configs/mistral-7b-v0.1/config.json" "$work/s/cfg/config.json"
cat > "$work/s/mistral.textproto" <<'TXT'
name: "mistral"
model { hf_config: "cfg/config.json" seq_len: 4096 }
cluster { preset: "dgx-h100" gpus: 8 }
strategy { tp: 8 micro_batch: 1 global_batch: 8 }
TXT
out=$(cd / && timeout 120 "$bin/tandem-plan" "$work/s/mistral.textproto" 2>&1); rc=$?
[ "$rc" -eq 0 ] && ok "a scenario's relative hf_config is read beside it" || bad "mistral scenario exits $rc: $out"
grep -q "model       mistral: .* 32 layers, hidden 4096, seq 4096" <<<"$out" && ok "plans Mistral 7B" \
  || bad "plan output: $(grep '^model' <<<"$out")"

# Refusals: exit 2, the config file and its field named.
refuse() {
  local desc="$1" re="$2"; shift 2
  local err rc
  err=$(timeout 60 "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -eq 2 ] && grep -Eq -- "$re" <<<"$err"; then ok "$desc"
  else bad "$desc (exit $rc; stderr: $(head -c 400 <<<"$err"))"; fi
}
refuse "Mixtral refused: num_local_experts" "mixtral-8x7b/config.json: num_local_experts: 8 experts" \
  "$bin/tandem-plan" "$root/scenarios/tiny-gpt.textproto" --set model.hf_config="$configs/mixtral-8x7b/config.json"
refuse "Mistral past its window refused: sliding_window" "config.json: sliding_window: 4096 tokens" \
  "$bin/tandem-plan" "$root/scenarios/tiny-gpt.textproto" --set model.hf_config="$configs/mistral-7b-v0.1/config.json" \
  --set model.seq_len=8192
refuse "a missing config is named" "no-such.json" \
  "$bin/tandem-plan" "$root/scenarios/tiny-gpt.textproto" --set model.hf_config="$work/no-such.json"
refuse "a FIFO is not read" "fifo" \
  bash -c "mkfifo '$work/fifo' && exec '$bin/tandem-plan' '$root/scenarios/tiny-gpt.textproto' --set model.hf_config='$work/fifo'"
exit $fail
