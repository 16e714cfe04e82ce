#!/usr/bin/env bash
# The cost model against published end-to-end measurements (tests/bench/validation/*.json):
# training iterations of Megatron-LM and NeMo runs, nccl-tests collectives. Prints one markdown
# table per kind with each row's signed error, and the median and worst absolute error.
# Usage: tests/bench/validate_model.sh [BUILD_DIR] [--bands calib/error-bands.json]
set -euo pipefail
build=${1:-build}
shift || true
exec python3 "$(dirname "$0")/validation/validate.py" "$build/app/arlsim" "$@"
