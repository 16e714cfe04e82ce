#!/usr/bin/env bash
# `arlsim export` end to end: each format's output for shipped scenarios against its golden file
# (tests/export/golden/; `--update` rewrites them), and the invariants a framework imposes refused
# with exit 2. Usage: export_test.sh PATH/TO/arlsim [--update]
set -u
arlsim="$1"
update="${2:-}"
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$here/../lib/checks.sh"

golden() {  # golden NAME ARGS...: `arlsim export ARGS` against golden/NAME
  local name="$1"
  shift
  if ! "$arlsim" export "$@" >"$tmp/$name" 2>"$tmp/$name.err" || [ ! -s "$tmp/$name" ]; then
    failed=$((failed + 1)); echo "FAIL export-$name: no output"; sed 's/^/  /' "$tmp/$name.err" | head -5
    return
  fi
  if [ "$update" = "--update" ]; then
    cp "$tmp/$name" "$here/golden/$name"
  fi
  same "export-$name" "$tmp/$name" "$here/golden/$name"
}

# Colocated and synchronous (Megatron engine), disaggregated and asynchronous (verl's separate
# async trainer), an MoE model with expert and pipeline parallelism on the FSDP-free engine, the
# FSDP engine with Ulysses, and the Slurm wrapper.
golden default.verl.sh default --format verl
golden disaggregated-async.verl.sh disaggregated-async --format verl
golden moe-ep-pp.verl.sh default --format verl --set /model=qwen3-30b-a3b --set /policy/train/tp=2 --set /policy/train/pp=2 \
  --set /policy/train/dp=4 --set /policy/train/ep=4 --set /policy/rollout/tp=4 --set /policy/rollout/ep=4
golden fsdp-ulysses.verl.sh default --format verl --set /policy/train/tp=1 --set /policy/train/dp=8 --set /policy/train/cp=2 \
  --set '/policy/train/cp_kind="ulysses"' --set /policy/train/zero=3 --set /policy/train/sequence_parallel=false
golden earl-testbed.slurm.sh earl-testbed --format slurm
golden default.openrlhf.sh default --format openrlhf
golden default.openrlhf-0.10.1.sh default --format openrlhf --framework-version 0.10.1
golden disaggregated-async.openrlhf.sh disaggregated-async --format openrlhf
golden default.slime.sh default --format slime
golden disaggregated-async.slime.sh disaggregated-async --format slime
golden disaggregated-async.areal.yaml disaggregated-async --format areal
contains export-slime-async "$here/golden/disaggregated-async.slime.sh" "python3 train_async.py"
contains export-areal-backends "$here/golden/disaggregated-async.areal.yaml" 'backend: "megatron:d8p1t2c1e1"'
contains export-openrlhf-flat-note "$here/golden/default.openrlhf-0.10.1.sh" "--train.max_tokens_per_gpu: no flag before OpenRLHF 0.10.2"
contains export-openrlhf-async "$here/golden/disaggregated-async.openrlhf.sh" "--train.async_enable"
contains export-notes-stderr "$tmp/disaggregated-async.verl.sh.err" "note: not expressible in verl: dispatch decentralized"
contains export-notes-header "$here/golden/disaggregated-async.verl.sh" "# Not expressible in verl, the closest setting taken:"

# json: the plan itself, parseable.
expect export-json 0 "$arlsim" export default --format json
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["format"] == "arlsim-scenario/1"' "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL export-json-parses"
fi

# A plan with a layout schedule: one launch per segment, the later ones resuming.
expect export-plan 0 "$arlsim" plan default --out "$tmp/plan.json"
expect export-schedule 0 "$arlsim" export "$tmp/plan.json" --format verl --out "$tmp/plan.sh"
contains export-schedule-engine "$tmp/plan.sh" "python3 -m verl.trainer.main_ppo"

# Invariants: exit 2, the reason, no file.
expect export-mini-batches 2 "$arlsim" export default --format verl --out "$tmp/x.sh" --set /cluster/nodes=1 \
  --set /policy/train/dp=4 --set /workload/prompts_per_step=12 --set /workload/mini_batches=8 --set /trace/generate/prompts_per_step=12
contains export-mini-batches-why "$tmp/err" "8 mini-batches do not divide it"
expect export-grid 2 "$arlsim" export disaggregated-async --format verl --out "$tmp/x.sh" --set /policy/rollout_gpus=20 \
  --set /policy/train/tp=4 --set /policy/train/dp=3 --set /workload/prompts_per_step=96 --set /trace/generate/prompts_per_step=96
contains export-grid-why "$tmp/err" "20 GPUs do not fill whole nodes of 8"
expect export-colocate-all 2 "$arlsim" export default --format openrlhf --out "$tmp/x.sh" --set /policy/rollout/replicas=4
contains export-colocate-all-why "$tmp/err" "colocate-all needs the actor's GPUs (16) to equal engines x vLLM TP (4 x 2)"
expect export-areal-colocated 2 "$arlsim" export default --format areal --out "$tmp/x.sh"
contains export-areal-colocated-why "$tmp/err" "AReaL runs rollout and training on separate GPUs"
expect export-format 2 "$arlsim" export default --format xml
contains export-format-why "$tmp/err" 'unknown format "xml"; valid: json, verl, slurm, openrlhf, slime, areal'
expect export-missing 2 "$arlsim" export "$tmp/none.json" --format verl
if [ -e "$tmp/x.sh" ]; then failed=$((failed + 1)); echo "FAIL export-no-file"; else passed=$((passed + 1)); fi
report
