# Sourced by the benchmark scripts: reads [BUILD_DIR] [DIR] into $build and $dir (a temporary
# directory when DIR is not given), and defines seconds_since START_NS, and bench_trace OUT STEPS
# RESPONSE_MEAN, which writes (once: an existing OUT is kept for later runs) the benchmarks'
# trace: STEPS steps of 512 prompts x 16 responses x 8 turns, responses up to 30K tokens, and
# 2 s Python tool calls.
build="${1:-build}"
dir="${2:-}"
if [ -z "$dir" ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
seconds_since() { awk -v s="$1" -v e="$(date +%s%N)" 'BEGIN { printf "%.2f", (e - s) / 1e9 }'; }
bench_trace() {
  [ -s "$1" ] && return
  echo "generating $1 ..."
  local start
  start=$(date +%s%N)
  "$build/app/arlsim" trace gen --steps "$2" --prompts-per-step 512 --group-size 16 --turns-mean 8 --turns-min 8 \
    --turns-max 8 --response-mean "$3" --response-limit 30K --tool "python: dist=lognormal mean=2s sigma=0.8" --out "$1"
  echo "generation        $(seconds_since "$start") s"
}
