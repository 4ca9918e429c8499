#!/usr/bin/env bash
# The front script `./tandem` as a new user first meets it (issue 19): with no arguments, or help,
# -h, --help, it prints its usage on stdout and exits 0 without building anything; the usage is
# the commands, never a line of the script itself (it once printed 'set -euo pipefail'); an unknown
# command exits 2 with a message and the usage on stderr.
# usage: front_script_test.sh REPO_ROOT
set -u
root="$1"; fail=0
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
# An empty build folder: a usage that tried to build would leave a CMakeCache.txt there.
export TANDEM_BUILD_DIR="$work/build"

for args in "" help -h --help; do
  # shellcheck disable=SC2086
  out=$(timeout 30 "$root/tandem" $args 2>"$work/err"); rc=$?
  what="./tandem ${args:-(no arguments)}"
  [ "$rc" -eq 0 ] && ok "$what exits 0" || bad "$what exits $rc"
  [ "$(head -n 1 <<<"$out")" = "usage: ./tandem COMMAND [ARGS...]" ] && ok "$what starts with the usage line" \
    || bad "$what first line: $(head -n 1 <<<"$out")"
  if grep -Eq 'pipefail|^set |^#|\$\{|\(\) \{' <<<"$out"; then bad "$what prints script text: $(grep -E 'pipefail|^set |^#' <<<"$out" | head -n 1)"
  else ok "$what prints no line of the script"; fi
  [ -s "$work/err" ] && bad "$what writes on stderr: $(head -c 200 "$work/err")" || ok "$what writes nothing on stderr"
done
[ -e "$TANDEM_BUILD_DIR" ] && bad "the usage built something in $TANDEM_BUILD_DIR" || ok "the usage builds nothing"

# Every command the script dispatches is named in its usage (the commands of its case statement).
out=$("$root/tandem")
for cmd in demo test build plan sim run compare sweep calibrate export-chakra help; do
  grep -Eq "(^|[ |])$cmd([ |]|$)" <<<"$out" && ok "usage names '$cmd'" || bad "usage does not name '$cmd'"
done

err=$(timeout 30 "$root/tandem" no-such-command 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && ok "an unknown command exits 2" || bad "an unknown command exits $rc"
grep -q "unknown command 'no-such-command'" <<<"$err" && ok "an unknown command is named" || bad "unknown command message: $err"
grep -q "^usage: ./tandem COMMAND" <<<"$err" && ok "an unknown command prints the usage on stderr" || bad "no usage on stderr"
exit $fail
