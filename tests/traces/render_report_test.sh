#!/usr/bin/env bash
# The HTML report in a real browser: writes test traces, runs tandem-compare on them (and checks
# that traces of another scenario are refused with exit code 2), then renders the page in headless
# Chromium and checks that the rendered DOM holds the headline and drawn SVG.
#   render_report_test.sh MAKE_TRACES_PROGRAM COMPARE_PROGRAM
# Chromium missing fails the test (./tandem installs Debian's chromium); TANDEM_NO_BROWSER=1 skips
# it (exit 77, ctest's SKIP_RETURN_CODE).
set -euo pipefail
make_traces="$1"
compare="$2"

fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "${TANDEM_NO_BROWSER:-}" = 1 ]; then
  echo "skipped: TANDEM_NO_BROWSER=1"
  exit 77
fi
browser="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$browser" ] || fail "chromium is not installed: install Debian's 'chromium' package (./tandem installs it), or set TANDEM_NO_BROWSER=1 to skip this test"

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
"$make_traces" "$dir"

"$compare" "$dir/a.trace" "$dir/b.trace" -o "$dir/report.html" > "$dir/summary.txt"
[ -s "$dir/report.html" ] || fail "no report written"
"$compare" "$dir/a.trace" "$dir/b.trace" --json > "$dir/report.json"
grep -q '"format":"tandem-compare-1"' "$dir/report.json" || fail "--json printed no comparison"

set +e
"$compare" "$dir/a.trace" "$dir/other.trace" -o "$dir/refused.html" 2> "$dir/refused.txt"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "traces of different scenarios: exit code $rc, expected 2"
grep -q "different scenarios" "$dir/refused.txt" || fail "no clear message for different scenarios: $(cat "$dir/refused.txt")"
[ ! -e "$dir/refused.html" ] || fail "a report was written for refused traces"
"$compare" "$dir/a.trace" "$dir/other.trace" --allow-different-scenarios > /dev/null || fail "--allow-different-scenarios refused"

# The headline as written, e.g. <div class="v" id="iteration-a">1.23 ms</div>.
headline="$(grep -o 'id="iteration-a">[^<]*<' "$dir/report.html" | head -1)"
[ -n "$headline" ] || fail "no headline in the report"

profile="$dir/profile"
mkdir -p "$profile"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
  --dump-dom "file://$dir/report.html" > "$dir/dom.html" 2> "$dir/chromium.log" \
  || fail "chromium failed: $(tail -5 "$dir/chromium.log")"

grep -qF "$headline" "$dir/dom.html" || fail "the rendered page lacks the headline ($headline)"
grep -q 'id="iteration-error">[+-][0-9.]*%<' "$dir/dom.html" || fail "the rendered page lacks the iteration error"
svgs="$(grep -o '<svg' "$dir/dom.html" | wc -l)"
rects="$(grep -o '<rect' "$dir/dom.html" | wc -l)"
lines="$(grep -o '<polyline' "$dir/dom.html" | wc -l)"
[ "$svgs" -ge 1 ] || fail "no <svg> in the rendered page"
[ "$rects" -ge 10 ] || fail "only $rects <rect> drawn"
[ "$lines" -ge 2 ] || fail "only $lines <polyline> drawn"
echo "rendered: $headline, $svgs svg, $rects rect, $lines polyline"
