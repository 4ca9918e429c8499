#!/usr/bin/env bash
# Every program's command line: an empty output path is bad input (exit 2, nothing written);
# running out of host memory is "out of memory", exit 3, not an abort; --json output is valid JSON
# whatever the scenario's name holds (quote, backslash, control characters, ill-formed UTF-8).
# usage: cli_test.sh BIN_DIR REPO_ROOT
set -u
bin="$(cd "$1" && pwd)"; root="$(cd "$2" && pwd)"; fail=0
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
tiny="$root/scenarios/tiny-gpt.textproto"
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
cd "$tmp"

expect_empty_path() {  # NAME FLAG COMMAND...
  local name="$1" flag="$2"; shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  check "$name: empty $flag exits 2" "[ $rc -eq 2 ]"
  check "$name: message names $flag" "grep -q -- '$flag: an empty path' <<<\"\$err\""
}
expect_empty_path "sim" --trace "$bin/tandem-sim" "$tiny" --trace ""
expect_empty_path "sim" --timeline "$bin/tandem-sim" "$tiny" --timeline ""
expect_empty_path "sweep" --output "$bin/tandem-sweep" "$tiny" --vary strategy.tp=1 -o ""
expect_empty_path "run" --trace "$bin/tandem-run" "$tiny" --trace ""
expect_empty_path "export-chakra" --output "$bin/tandem-export-chakra" "$tiny" -o ""
expect_empty_path "export-chakra" --calibration "$bin/tandem-export-chakra" "$tiny" -o x --calibration ""
"$bin/tandem-sim" "$tiny" --trace "$tmp/t.pb" > /dev/null
expect_empty_path "compare" --output "$bin/tandem-compare" "$tmp/t.pb" "$tmp/t.pb" -o ""
expect_empty_path "calibrate" --output "$bin/tandem-calibrate" "$tmp/t.pb" "$tiny" -o ""
check "nothing written in the working directory" "[ \"\$(ls -A)\" = t.pb ]"

# 100 MB of address space is too little for GPT-3's plan: std::bad_alloc, caught by the wrapper.
err=$(ulimit -v 100000; "$bin/tandem-plan" "$root/scenarios/gpt3-175b-a100.textproto" 2>&1 >/dev/null); rc=$?
check "plan out of host memory exits 3" "[ $rc -eq 3 ]"
check "plan says out of memory" "grep -q '^tandem plan: out of memory' <<<\"\$err\""

# A name with a quote, a backslash, a newline, U+0001, a stray byte 0xFF and an e-acute: the JSON
# parses, and reads back as the name with 0xFF replaced by U+FFFD.
name=$(printf 'a"b\\c\nd\001e\377f\303\251')
want=$(printf 'a"b\\c\nd\001e\357\277\275f\303\251')
for prog in plan sim; do
  "$bin/tandem-$prog" "$tiny" --set "name=$name" --json > "$tmp/$prog.json"
  check "$prog --json with a hostile name parses" "'$bin/tandem-test-json-check' < '$tmp/$prog.json'"
  got=$("$bin/tandem-test-json-check" scenario < "$tmp/$prog.json")
  check "$prog --json reads back the name" "[ \"\$got\" = \"\$want\" ]"
done
if command -v mpirun > /dev/null; then
  "$bin/tandem-run" "$tiny" --steps 1 --set "name=$name" --json > "$tmp/run.json"
  check "run --json with a hostile name parses" "'$bin/tandem-test-json-check' < '$tmp/run.json'"
  got=$("$bin/tandem-test-json-check" scenario < "$tmp/run.json")
  check "run --json reads back the name" "[ \"\$got\" = \"\$want\" ]"
else
  echo "skip run --json: no mpirun"
fi
exit $fail
