#!/usr/bin/env bash
# report.html of simulate, whatif and capacity: well-formed (parsed as XML), self-contained (no
# script, nothing fetched), the charts each command promises (by their ids), no "nan" or "inf",
# and, where a headless chromium is installed, rendered by it into a screenshot.
# Usage: report_html_test.sh ARLSIM
set -uo pipefail
arlsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() {  # name command...
  local name=$1
  shift
  if "$@" >"$tmp/out" 2>&1; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; cat "$tmp/out"; fi
}

"$arlsim" simulate default --steps 1:46 --out "$tmp/sim" >/dev/null || echo "FAIL simulate"
"$arlsim" simulate default --set /workload/engine/gpu_memory_utilization=0.12 \
  --out "$tmp/oom" >/dev/null 2>&1
"$arlsim" whatif default --steps 1:16 --vary /policy/rollout/tp=1,2 --out "$tmp/whatif" >/dev/null || echo "FAIL whatif"
"$arlsim" capacity default --nodes 1,2 --deadline 2h --budget 50 --out "$tmp/capacity" >/dev/null || echo "FAIL capacity"

# structure.py FILE ID...: well-formed, no script or external reference, each chart id present
# as an <svg> with marks, no non-finite numbers in the text.
cat >"$tmp/structure.py" <<'PY'
import re, sys
import xml.etree.ElementTree as ET
path, ids = sys.argv[1], sys.argv[2:]
text = open(path, encoding="utf-8").read()
root = ET.fromstring(text)
ns = "{http://www.w3.org/2000/svg}"
svgs = {e.get("id"): e for e in root.iter(ns + "svg")}
for i in ids:
    assert i in svgs, f"no <svg id={i}> in {path}: {sorted(svgs)}"
    marks = [e for e in svgs[i].iter() if e.tag in (ns + "rect", ns + "polyline", ns + "circle", ns + "polygon", ns + "path")]
    assert marks, f"<svg id={i}> draws nothing"
assert not any(e.tag.endswith("script") for e in root.iter()), "a script"
assert not re.search(r'(src|href)="(https?:)?//', text), "an external reference"
assert not re.search(r"\b(nan|inf|-nan|-inf)\b", text, re.I), "a non-finite number"
print(len(svgs), "charts")
PY
check simulate-structure python3 "$tmp/structure.py" "$tmp/sim/report.html" step-times contexts memory pool-0
check simulate-kpis grep -q "whole run, projected" "$tmp/sim/report.html"
check oom-marked grep -q "Stopped at step 1: out of memory" "$tmp/oom/report.html"
check oom-structure python3 "$tmp/structure.py" "$tmp/oom/report.html" step-times memory
check whatif-structure python3 "$tmp/structure.py" "$tmp/whatif/report.html" variants
check whatif-rows grep -q "/policy/rollout/tp=2" "$tmp/whatif/report.html"
"$arlsim" whatif default --steps 1:1 --vary /workload/engine/gpu_memory_utilization=0.9,0.12 --out "$tmp/whatif-oom" >/dev/null 2>&1
check whatif-oom-no-figures python3 -c "
import re, sys
t = open(sys.argv[1]).read()
row = re.search(r'<tr><td class=\"l\">B</td>.*?</tr>', t).group(0)
assert '(stopped at step 1)' in row and '-100' not in row and '>0.000<' not in row, row
" "$tmp/whatif-oom/report.html"
check whatif-json python3 -c "import json,sys; assert len(json.load(open('$tmp/whatif/variants.json'))) == 2"
check capacity-structure python3 "$tmp/structure.py" "$tmp/capacity/report.html" pareto
check capacity-lines grep -q "deadline 2" "$tmp/capacity/report.html"
check capacity-json python3 -c "import json; assert len(json.load(open('$tmp/capacity/capacity.json'))) == 4"

# A headless browser renders each page (skipped where none is installed).
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$browser" ]; then
  for page in sim whatif capacity oom; do
    rm -f "$tmp/$page.png"
    check "render-$page" timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
      --disable-component-update --disable-sync --no-first-run --user-data-dir="$tmp/profile-$page" \
      --screenshot="$tmp/$page.png" --window-size=1200,1600 "file://$tmp/$page/report.html"
    check "render-$page-png" test "$(stat -c %s "$tmp/$page.png" 2>/dev/null || echo 0)" -gt 20000
  done
else
  echo "no chromium: rendering not checked"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
