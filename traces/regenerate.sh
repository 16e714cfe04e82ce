#!/usr/bin/env bash
# Regenerates the shipped traces from their generator commands (the same commands are listed in
# traces/README.md). Usage: traces/regenerate.sh PATH/TO/arlsim [OUTPUT_DIR]
# The end-to-end test runs this into a temporary directory and compares with the shipped files,
# so a change to the generator that alters them shows up; run it into traces/ to accept one.
set -euo pipefail
arlsim="$1"
out="${2:-$(dirname "$0")}"
"$arlsim" trace gen --preset dapo-math --prompts-per-step 8 --every 20 --out "$out/dapo-math.jsonl"
"$arlsim" trace gen --preset swe-agent --prompts-per-step 2 --every 20 --out "$out/swe-agent.jsonl"
"$arlsim" trace gen --preset search-agent --prompts-per-step 4 --every 20 --out "$out/search-agent.jsonl"
"$arlsim" trace gen --preset code-tool --prompts-per-step 8 --group-size 4 --every 25 --out "$out/code-tool.jsonl"
"$arlsim" trace gen --preset earl-game --prompts-per-step 4 --every 4 --out "$out/earl-game.jsonl"
