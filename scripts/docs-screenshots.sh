#!/usr/bin/env bash
# Renders the pictures in docs/images/ from runs of the shipped scenarios (offscreen; needs the
# viewer built). Usage: scripts/docs-screenshots.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/app/arlsim" simulate default --steps 1:1 --out "$tmp/tp2" >/dev/null
"$build/app/arlsim" simulate default --steps 1:1 --set /policy/rollout/tp=4 --out "$tmp/tp4" >/dev/null
QT_QPA_PLATFORM=offscreen "$build/gui/arlsim-view" --screenshot "$root/docs/images/viewer-side-by-side.png" \
  --size 1400x820 --step 1 --align "$tmp/tp2/timeline.json" "$tmp/tp4/timeline.json"
echo "wrote docs/images/viewer-side-by-side.png"
