#!/usr/bin/env bash
# arlsim-view as a program: screenshots of one timeline and of two side by side (their size, and
# pixels in the stages' colours), and the exit status and message for files and options it refuses.
# Usage: view_cli_test.sh ARLSIM_VIEW ARLSIM
set -uo pipefail
view=$1
arlsim=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export QT_QPA_PLATFORM=offscreen
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }
expect() {  # name status command...
  local name=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -eq "$want" ]; then ok; else bad "$name: exit $got, wanted $want"; cat "$tmp/err"; fi
}
contains() {  # name file text
  if grep -qF -- "$3" "$2"; then ok; else bad "$1: '$3' not in $(cat "$2")"; fi
}

"$arlsim" simulate default --steps 1:1 --out "$tmp/a" >/dev/null || bad "simulate a"
"$arlsim" simulate default --steps 1:1 --set /policy/rollout/tp=4 --out "$tmp/b" >/dev/null || bad "simulate b"

# One timeline: the size asked, and the rollout engines' slices in the rollout's colours.
expect one 0 "$view" --screenshot "$tmp/one.png" --size 1000x700 "$tmp/a/timeline.json"
read -r w h rollout train < <(python3 "$here/png_colors.py" "$tmp/one.png")
[ "$w" = 1000 ] && [ "$h" = 700 ] && ok || bad "one: size ${w}x${h}"
[ "${rollout:-0}" -gt 500 ] && ok || bad "one: ${rollout:-0} rollout pixels"

# Two side by side, aligned at step 1: both panes hold the engines' slices.
expect two 0 "$view" --screenshot "$tmp/two.png" --size 1400x800 --step 1 --align "$tmp/a/timeline.json" "$tmp/b/timeline.json"
read -r w h rollout train < <(python3 "$here/png_colors.py" "$tmp/two.png")
[ "$w" = 1400 ] && [ "$h" = 800 ] && ok || bad "two: size ${w}x${h}"
[ "${rollout:-0}" -gt 1000 ] && ok || bad "two: ${rollout:-0} rollout pixels"
expect range 0 "$view" --screenshot "$tmp/range.png" --range 10:20 "$tmp/a/timeline.json"

# Files it cannot read: exit 2, the file and the problem named, no crash.
printf '{"traceEvents": [\n{"ph": "X", "ts": 1,,}\n]}\n' >"$tmp/broken.json"
expect broken 2 "$view" --screenshot "$tmp/x.png" "$tmp/broken.json"
contains broken "$tmp/err" "$tmp/broken.json:2:"
contains broken-what "$tmp/err" "not valid JSON"
[ ! -e "$tmp/x.png" ] && ok || bad "broken: a screenshot was written"
printf '[{"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": -5, "name": "a"}]' >"$tmp/negative.json"
expect negative 2 "$view" --screenshot "$tmp/x.png" "$tmp/negative.json"
contains negative "$tmp/err" "event 1 of the trace events: \"dur\" must be a number of microseconds from 0 to 1e16"
: >"$tmp/empty.json"
expect empty 2 "$view" --screenshot "$tmp/x.png" "$tmp/empty.json"
contains empty "$tmp/err" "the file is empty"
mkdir -p "$tmp/folder"
expect folder 2 "$view" --screenshot "$tmp/x.png" "$tmp/folder"
contains folder "$tmp/err" "is a directory, not a timeline file"
expect missing 2 "$view" --screenshot "$tmp/x.png" "$tmp/none.json"
contains missing "$tmp/err" "$tmp/none.json: cannot be opened"
expect second-bad 2 "$view" --screenshot "$tmp/x.png" "$tmp/a/timeline.json" "$tmp/broken.json"
contains second-bad "$tmp/err" "broken.json:2:"

# Times counted from the epoch (~1.7e15 us), zoomed to a nanosecond: drawn, not hung.
printf '[{"ph":"X","pid":1,"tid":1,"ts":1700000000000000,"dur":1000,"name":"a"}]' >"$tmp/epoch.json"
expect epoch 0 timeout 60 "$view" --screenshot "$tmp/epoch.png" --range 1700000000:1700000000.0000005 "$tmp/epoch.json"
# Objects after the events (metadata, stack frames) are not events.
printf '{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":5,"name":"a"}],"metadata":{"x":{"y":1}}}' >"$tmp/meta.json"
expect metadata-after 0 "$view" --screenshot "$tmp/meta.png" "$tmp/meta.json"
# Aligning on a step one timeline lacks leaves that pane as it is, and says so.
"$arlsim" simulate disaggregated-async --steps 1:11 --out "$tmp/c" >/dev/null || bad "simulate c"
expect align-missing 0 "$view" --screenshot "$tmp/align.png" --step 16 --align "$tmp/a/timeline.json" "$tmp/c/timeline.json"

# Options it refuses.
expect unknown-option 2 "$view" --bogus "$tmp/a/timeline.json"
contains unknown-option "$tmp/err" "Unknown option 'bogus'"
expect no-display 2 env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$view" "$tmp/a/timeline.json"
contains no-display "$tmp/err" "no display to show the window on"
expect no-file 2 "$view" --screenshot "$tmp/x.png"
contains no-file "$tmp/err" "give one or two timeline files"
expect three 2 "$view" --screenshot "$tmp/x.png" "$tmp/a/timeline.json" "$tmp/a/timeline.json" "$tmp/a/timeline.json"
expect size 2 "$view" --screenshot "$tmp/x.png" --size 10x10 "$tmp/a/timeline.json"
contains size "$tmp/err" "--size must be WxH"
expect range-bad 2 "$view" --screenshot "$tmp/x.png" --range 5:1 "$tmp/a/timeline.json"
contains range-bad "$tmp/err" "--range must be A:B seconds with A < B"
expect step-bad 2 "$view" --screenshot "$tmp/x.png" --step x "$tmp/a/timeline.json"
expect unwritable 2 "$view" --screenshot "$tmp/no/such/dir/x.png" "$tmp/a/timeline.json"
contains unwritable "$tmp/err" "cannot write the screenshot"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
