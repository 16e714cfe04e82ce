#!/usr/bin/env bash
# `arlsim validate` end to end on the shipped CPU scenario: calibrate, predict, execute, compare.
# Checks that the report exists and is well formed, that predicted and measured outputs share one
# record format, and that no checksum failed; not the timings (tests/bench/validate_runtime.sh
# prints those). Bad options and plans the runtime cannot execute exit 2 with the reason.
# Usage: validate_cli_test.sh PATH/TO/arlsim
set -u
arlsim="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../lib/checks.sh"
scenario=scenarios/cpu-validate.json

expect validate-runs 0 "$arlsim" validate "$scenario" --backend cpu --steps 1:1 --out "$tmp/v" --json
cp "$tmp/out" "$tmp/report.json"
if python3 - "$tmp/report.json" "$tmp/v" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-report"; fi
import csv, json, math, os, sys
r = json.load(open(sys.argv[1]))
out = sys.argv[2]
for key in ("stages", "activities", "median_abs_stage_error", "median_abs_activity_error", "bytes_verified", "checksum_failures"):
    assert key in r, key
names = {s["stage"] for s in r["stages"]}
assert {"rollout", "old_logprob", "ref_logprob", "train", "weight_sync"} <= names, names
for row in r["stages"] + r["activities"]:
    for k in ("predicted_s", "measured_s", "error"):
        assert math.isfinite(row[k]), row
    assert row["measured_s"] > 0, row
    assert abs(row["error"] - (row["predicted_s"] - row["measured_s"]) / row["measured_s"]) < 1e-9, row
assert r["checksum_failures"] == 0
assert r["bytes_verified"] > 0
# One record format: both sides have the same files, summary keys and CSV columns.
for f in ("summary.json", "steps.csv", "timeline.json", "report.html"):
    assert os.path.exists(os.path.join(out, "predicted", f)), f
    assert os.path.exists(os.path.join(out, "measured", f)), f
p = json.load(open(os.path.join(out, "predicted", "summary.json")))
m = json.load(open(os.path.join(out, "measured", "summary.json")))
assert set(p) == set(m), set(p) ^ set(m)
hp = next(csv.reader(open(os.path.join(out, "predicted", "steps.csv"))))
hm = next(csv.reader(open(os.path.join(out, "measured", "steps.csv"))))
assert hp == hm, (hp, hm)
t = json.load(open(os.path.join(out, "measured", "timeline.json")))
assert any(e.get("name") == "train" for e in t["traceEvents"])
# The engines as measured: their spans of work, split at prefill and decode as predicted.
spans = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("name") in ("decode", "prefill+decode")]
assert len(spans) >= 2, len(spans)
assert any(e["name"] == "prefill+decode" for e in spans)
assert json.load(open(os.path.join(out, "validation.json")))["stages"] == r["stages"]
# Every kernel timed and priced alone: per stage and kind, their measured times add up to the
# per-kind totals, fit inside their stage's time on its devices, and every shape is in kernels.csv.
kinds = r["kernels"]
assert {k["stage"] for k in kinds} >= {"rollout", "old_logprob", "train"}, kinds
for k in kinds:
    assert k["count"] > 0 and math.isfinite(k["predicted_s"]) and k["predicted_s"] >= 0, k
    assert math.isfinite(k["measured_s"]) and k["measured_s"] >= 0, k
for kind, total in r["kernels_measured_s"].items():
    if kind == "wait":
        continue  # the tool calls after a rollout's engine work are waits of no kernel
    mine = sum(k["measured_s"] for k in kinds if k["kind"] == kind)
    assert abs(mine - total) <= 1e-6 * max(1.0, total), (kind, mine, total)
stage_measured = {s["stage"]: s["measured_s"] for s in r["stages"]}
for stage in stage_measured:
    inside = sum(k["measured_s"] for k in kinds if k["stage"] == stage)
    assert inside <= stage_measured[stage] * r["devices"] * (1 + 1e-6), (stage, inside, stage_measured[stage])
rows = list(csv.DictReader(open(os.path.join(out, "kernels.csv"))))
assert sum(int(x["count"]) for x in rows) == sum(k["count"] for k in kinds)
assert r["kernel_shapes"][0]["shape"] == rows[0]["shape"]
assert any(x["kind"] == "gemm" and " x " in x["shape"] for x in rows)
PY
contains validate-profile "$tmp/v/profile.json" '"kind": "measured"'

# The table, with a given profile (no calibration).
expect validate-table 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 2:2
contains validate-table-stage "$tmp/out" "weight_sync"
contains validate-table-median "$tmp/out" "|error| per stage"
contains validate-table-data "$tmp/out" "0 checksum failures: nothing lost or corrupted"

# --scale: a smaller plan, predicted and executed alike.
expect validate-scale 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 --scale 0.5 --json
contains validate-scale-json "$tmp/out" '"scale": 0.5'
contains validate-scale-note "$tmp/err" "scaled by 0.5: 2 of 4 layers, 2 of 4 prompts per step"
# Progress on stderr: each activity as it starts, its times when it ends.
contains validate-progress-start "$tmp/err" "arlsim validate: step 1 rollout (1 of "
contains validate-progress-end "$tmp/err" "s of wall time"
expect validate-scale-zero 2 "$arlsim" validate "$scenario" --backend cpu --scale 0
contains validate-scale-zero-message "$tmp/err" "--scale must be in (0, 1]"
expect validate-scale-big 2 "$arlsim" validate "$scenario" --backend cpu --scale 2

# A disaggregated plan: one engine GPU, one training GPU, the weights broadcast between them.
expect validate-disaggregated 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 \
  --set '/policy/placement="disaggregated"' --set /policy/rollout_gpus=1 --set /policy/train/dp=1 --json
if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-disaggregated-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
sync = next(s for s in r["stages"] if s["stage"] == "weight_sync")
assert sync["measured_s"] > 0 and sync["predicted_s"] > 0, sync
assert r["checksum_failures"] == 0 and r["bytes_verified"] > 2**20, r["bytes_verified"]
PY

# PPO: a critic (its forward pass with a value head, its training after the policy's on each
# mini-batch, its own weights) and an old-log-prob pass in its own layout (tp 2, dp 1).
critic='{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 256, "intermediate_size": 768,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "num_hidden_layers": 2, "vocab_size": 8192,
  "max_position_embeddings": 4096, "hidden_act": "silu", "tie_word_embeddings": true, "torch_dtype": "float32"}'
expect validate-critic 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 \
  --set '/workload/algorithm="ppo"' --set "/workload/critic=$critic" --set '/policy/old_logprob={"tp": 2, "dp": 1}' --json
if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-critic-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
stages = {s["stage"]: s for s in r["stages"]}
for name in ("critic", "old_logprob", "train"):
    assert stages[name]["measured_s"] > 0 and stages[name]["predicted_s"] > 0, stages.get(name)
assert r["checksum_failures"] == 0
PY
# Sequence parallelism: the tensor-parallel pair gathers and scatters the sequence.
expect validate-sp 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 \
  --set /policy/train/tp=2 --set /policy/train/dp=1 --set /policy/train/sequence_parallel=true --json
if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-sp-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
train = next(s for s in r["stages"] if s["stage"] == "train")
assert train["measured_s"] > 0 and train["predicted_s"] > 0 and r["checksum_failures"] == 0, train
PY
# An asynchronous plan (disaggregated, one device each side): the next step's rollout overlaps this
# step's training in the measured run as in the predicted one.
expect validate-async 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" \
  --set '/policy/sync={"mode": "async"}' --set '/policy/placement="disaggregated"' --set /policy/rollout_gpus=1 \
  --set /policy/train/dp=1 --out "$tmp/async" --json
if python3 - "$tmp/out" "$tmp/async" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-async-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
stages = {s["stage"]: s for s in r["stages"]}
assert r["checksum_failures"] == 0 and stages["rollout"]["measured_s"] > 0 and stages["train"]["measured_s"] > 0
# The activities the prediction overlaps (a step's next rollout beside its training) ran at once.
assert r["activities_concurrent"] >= 2 and r["activities_concurrent"] <= r["activities_executed"], r
# Each kernel of a merged run counted in its own activity's stage: decode attention in the rollout
# alone, training's GEMMs under train, no tool-call wait but the rollout's.
kinds = r["kernels"]
assert not any(k["kind"] == "decode_attention" and k["stage"] != "rollout" for k in kinds), kinds
assert any(k["stage"] == "train" and k["kind"] == "gemm" for k in kinds), kinds
assert not any(k["kind"] == "wait" and k["stage"] in ("train", "old_logprob", "ref_logprob") for k in kinds), kinds
# Overlap: each run's total is less than the sum of its stages, predicted and measured alike.
for side, total in (("predicted", r["predicted_total_s"]), ("measured", r["measured_total_s"])):
    assert total < sum(s[side + "_s"] for s in r["stages"]) * 0.98, (side, total)
# The measured timeline: step 2's rollout starts before step 1's training ends.
events = json.load(open(sys.argv[2] + "/measured/timeline.json"))
events = events["traceEvents"] if isinstance(events, dict) else events
def span(step, stage):
    xs = [e for e in events if e.get("ph") == "X" and e.get("args", {}).get("step") == step
          and e.get("args", {}).get("stage") == stage]
    return min(e["ts"] for e in xs), max(e["ts"] + e["dur"] for e in xs)
assert span(2, "rollout")[0] < span(1, "train")[1], (span(2, "rollout"), span(1, "train"))
PY
# A partial rollout: each step's engines run what the simulator logged until the fraction was
# done; the paused trajectories go on in the next step.
expect validate-partial 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --scale 0.5 \
  --set '/policy/sync={"mode": "sync", "partial_rollout": 0.5}' --out "$tmp/partial" --json
if python3 - "$tmp/out" "$tmp/partial" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-partial-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
stages = {s["stage"]: s for s in r["stages"]}
assert r["checksum_failures"] == 0 and stages["rollout"]["measured_s"] > 0 and stages["train"]["measured_s"] > 0, r
for side in ("predicted", "measured"):
    assert len(json.load(open(sys.argv[2] + "/" + side + "/summary.json"))["steps"]) == 2
PY
# A layout switch before step 2 (engines of tp 2, training tp 2 x dp 1): step 2's weight sync
# waits the switch overhead twice (rollout and training both change), the engines load their
# shards and the training state moves through host memory, checksummed, predicted and measured.
expect validate-switch 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --scale 0.5 \
  --set /policy/switch_overhead=0.2s \
  --set '/policy/schedule=[{"steps": "2:", "rollout": {"tp": 2}, "train": {"tp": 2, "dp": 1}}]' --out "$tmp/switch" --json
if python3 - "$tmp/out" "$tmp/switch" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-switch-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
assert r["checksum_failures"] == 0 and r["kernels_measured_s"]["copy"] > 0 and r["kernels_measured_s"]["wait"] >= 0.4, r
for side in ("predicted", "measured"):
    events = json.load(open(sys.argv[2] + "/" + side + "/timeline.json"))
    events = events["traceEvents"] if isinstance(events, dict) else events
    def sync(step):
        return sum(e["dur"] for e in events if e.get("ph") == "X" and e.get("args", {}).get("step") == step
                   and e.get("args", {}).get("stage") == "weight_sync") / 1e6
    # Timeline microseconds: the switch's two waits of 0.2 s are in step 2's weight sync alone
    # (predicted exactly; measured, the waits at least, whatever the machine's load).
    if side == "predicted":
        assert sync(2) >= sync(1) + 0.4 - 1e-3, (side, sync(1), sync(2))
    else:
        assert sync(2) >= 0.4 - 1e-3, (side, sync(1), sync(2))
PY
# Hybrid sharding (shard groups of one rank: each holds the whole state, the gradients all-reduced
# across the replicas), under ZeRO-1 and ZeRO-3.
for zero in 1 3; do
  expect "validate-hybrid-zero$zero" 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" \
    --scale 0.5 --steps 1:1 --set /policy/train/zero=$zero --set /policy/train/shard_group=1 \
    --set '/policy/train/overlap={"param_gather": false, "grad_reduce": false}' --json
  if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-hybrid-zero$zero-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
train = next(s for s in r["stages"] if s["stage"] == "train")
assert train["measured_s"] > 0 and train["predicted_s"] > 0 and r["checksum_failures"] == 0, train
assert r["kernels_measured_s"]["collective"] > 0
PY
done
# Pipeline stages (tp 1 x pp 2): training in the 1F1B schedule and the log-prob passes forward
# only, the activations and their gradients moving between the stages, checked.
expect validate-pipeline 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --scale 0.5 \
  --steps 1:1 --set /policy/train/pp=2 --set /policy/train/dp=1 --json
if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-pipeline-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
stages = {s["stage"]: s for s in r["stages"]}
for stage in ("train", "old_logprob"):
    assert stages[stage]["measured_s"] > 0 and stages[stage]["predicted_s"] > 0, stages[stage]
assert r["checksum_failures"] == 0 and r["kernels_measured_s"]["collective"] > 0, r
PY
# Ulysses context parallelism (tp 1 x cp 2), a mixture-of-experts model at ep 2 over the two
# data-parallel ranks (micro-batches of their own sizes, all-to-alls at the largest member's), and
# the same model under ZeRO-3 (its experts gathered over their data-parallel group), and a small
# DeepSeek-V3-shaped model (multi-head latent attention, its engines decoding over the latent
# cache; MoE layers after a dense one), Megatron's interleaved schedule (pp 2 x vpp 2) and
# speculative decoding (verification steps of 5 rows a sequence after a drafting wait): run,
# checked, with collectives measured.
moe='/model="tests/runtime/models/tiny-qwen3-moe.json"'
mla='/model="tests/runtime/models/tiny-deepseek-v3.json"'
for variant in ulysses moe-ep moe-zero3 mla interleaved speculative; do
  if [[ $variant == speculative ]]; then
    extra=(--set '/workload/engine/speculative={"mean_accepted_tokens": 2.5, "draft_tokens": 4, "draft_time": "1 ms"}')
  elif [[ $variant == interleaved ]]; then
    extra=(--set /policy/train/pp=2 --set /policy/train/vpp=2 --set /policy/train/dp=1 --set '/policy/train/overlap={"p2p": false}')
  elif [[ $variant == ulysses ]]; then
    extra=(--set /policy/train/cp=2 --set /policy/train/dp=1 --set '/policy/train/cp_kind="ulysses"')
  elif [[ $variant == moe-ep ]]; then
    extra=(--set "$moe" --set /policy/train/ep=2)
  elif [[ $variant == moe-zero3 ]]; then
    extra=(--set "$moe" --set /policy/train/zero=3 --set '/policy/train/overlap={"param_gather": false, "grad_reduce": false}')
  else
    extra=(--set "$mla")
  fi
  expect validate-$variant 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --scale 0.5 \
    --steps 1:1 "${extra[@]}" --json
  if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-$variant-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
stages = {s["stage"]: s for s in r["stages"]}
for stage in ("train", "old_logprob", "rollout"):
    assert stages[stage]["measured_s"] > 0 and stages[stage]["predicted_s"] > 0, stages[stage]
assert r["checksum_failures"] == 0 and r["kernels_measured_s"]["collective"] > 0, r
PY
done
# Interleaving takes micro-batches in multiples of pp: three of them are refused, once simulated.
expect validate-vpp-count 2 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 \
  --set /policy/train/pp=2 --set /policy/train/vpp=2 --set /policy/train/dp=1 --set '/policy/train/overlap={"p2p": false}' \
  --set /policy/train/micro_batch=3
contains validate-vpp-count-named "$tmp/err" "/policy/train/vpp: Megatron's interleaved schedule takes micro-batches in multiples of pp = 2"
expect validate-ring 2 "$arlsim" validate "$scenario" --backend cpu --set /policy/train/cp=2 --set /policy/train/dp=1
contains validate-ring-named "$tmp/err" "/policy/train/cp_kind: ring attention"
expect validate-pass-ep 2 "$arlsim" validate "$scenario" --backend cpu --set "$moe" --set /policy/train/ep=2 \
  --set '/policy/old_logprob={"tp": 2, "dp": 1}'
contains validate-pass-ep-named "$tmp/err" "/policy/old_logprob: the training's ep = 2"
# The engines' host work between iterations and eager dispatch: a busy wait before each
# iteration, as the inference model charges it.
expect validate-host-eager 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --scale 0.5 \
  --steps 1:1 --set '/workload/engine/host_overhead_per_iteration="2 ms"' --set /workload/engine/enforce_eager=true \
  --set '/workload/engine/eager_dispatch="20 us"' --json
if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-host-eager-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
rollout = next(s for s in r["stages"] if s["stage"] == "rollout")
assert rollout["measured_s"] > 0 and r["checksum_failures"] == 0 and r["kernels_measured_s"]["wait"] > 0, r
PY
# ZeRO-Offload: the optimizer step's bytes go to host memory and back, checksummed.
expect validate-offload 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 \
  --set /policy/train/offload_optimizer=true --json
if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-offload-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
train = next(s for s in r["stages"] if s["stage"] == "train")
assert train["measured_s"] > 0 and train["predicted_s"] > 0 and r["checksum_failures"] == 0, train
assert r["kernels_measured_s"]["copy"] > 0
PY
# ZeRO-3: each micro-batch gathers the parameters over the shard group, forward and backward.
zero3=(--set /policy/train/zero=3 --set '/policy/train/overlap={"param_gather": false, "grad_reduce": false}')
expect validate-zero3 0 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 \
  "${zero3[@]}" --json
if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-zero3-report"; fi
import json, sys
r = json.load(open(sys.argv[1]))
train = next(s for s in r["stages"] if s["stage"] == "train")
assert train["measured_s"] > 0 and train["predicted_s"] > 0 and r["checksum_failures"] == 0, train
assert r["kernels_measured_s"]["collective"] > 0
PY
# ... and its devices keep their weights whole, which the memory check counts with every other
# buffer the programs make (sized before any runs; the engines' batches, and so their buffers,
# follow the measured profile: on the reference machine about 964 MiB for the two devices).
expect validate-zero3-memory 2 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 \
  "${zero3[@]}" --max-memory 350MiB
contains validate-zero3-memory-why "$tmp/err" "devices' buffers would take about"
# A preparation pass of a smaller tp than training's makes its weight buffers its tp rank's size,
# kept for all stages: tp 2 training with a tp 1 old-log-prob pass takes about 7.5 MiB more on the
# reference machine (the weights' growth, less what the schedule's own buffers vary by).
tp2=(--set /policy/train/tp=2 --set /policy/train/dp=1)
expect validate-pass-memory 2 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 \
  "${tp2[@]}" --max-memory 100MiB
cp "$tmp/err" "$tmp/err-tp2"
expect validate-pass-memory-tp1 2 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --steps 1:1 \
  "${tp2[@]}" --set '/policy/old_logprob={"tp": 1, "dp": 2}' --max-memory 100MiB
if python3 - "$tmp/err-tp2" "$tmp/err" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-pass-memory-larger"; fi
import re, sys
def mib(path):
    m = re.search(r"devices' buffers would take about ([0-9.]+) (MiB|GiB)", open(path).read())
    return float(m.group(1)) * (1024 if m.group(2) == "GiB" else 1)
base, tp1 = mib(sys.argv[1]), mib(sys.argv[2])
assert tp1 - base > 5, (base, tp1)
PY
expect validate-max-memory 2 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --max-memory 1KiB
contains validate-max-memory-why "$tmp/err" "more than the 1.00 KiB of --max-memory"
# A plan the simulator finds out of memory: said, with status 2, and nothing executed.
expect validate-oom 2 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --set /model=qwen3-4b --steps 1:1
contains validate-oom-why "$tmp/err" "the plan runs out of memory in step 1"
# CPU devices share the host's memory: their peaks together must fit too.
expect validate-devices-memory 2 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/v/profile.json" --max-memory 300MiB
contains validate-devices-memory-why "$tmp/err" "devices' buffers would take about"
contains validate-devices-memory-limit "$tmp/err" "more than the 300.00 MiB of --max-memory: run it smaller (--scale)"
expect validate-bad-max-memory 2 "$arlsim" validate "$scenario" --backend cpu --max-memory lots
contains validate-bad-max-memory-why "$tmp/err" "--max-memory"
expect validate-offload-params 2 "$arlsim" validate "$scenario" --backend cpu --set /policy/train/offload_params=true
contains validate-offload-params-why "$tmp/err" "/policy/train/offload_params"
expect validate-pass-cp 2 "$arlsim" validate "$scenario" --backend cpu --set '/policy/old_logprob={"tp": 1, "cp": 2, "dp": 1}'
contains validate-pass-cp-named "$tmp/err" "/policy/old_logprob/cp: a pass's context parallelism is ring attention"

# Bad input.
# The CUDA backend: one process per GPU, bf16; without a GPU (or without the toolkit) a clear refusal.
expect validate-cuda-processes 2 "$arlsim" validate "$scenario" --backend cuda --profile calib/profiles/h100-sxm.json
contains validate-cuda-processes-message "$tmp/err" "run it as mpirun -n 2 arlsim validate"
expect validate-cuda-dtype 2 "$arlsim" validate "$scenario" --backend cuda --profile calib/profiles/h100-sxm.json \
  --set /cluster/gpus_per_node=1 --set /policy/train/dp=1
contains validate-cuda-dtype-message "$tmp/err" "/workload/dtype: the CUDA runtime executes bf16"
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect validate-cuda-no-gpu 2 "$arlsim" validate scenarios/gpu-validate.json --backend cuda --profile calib/profiles/h100-sxm.json
  contains validate-cuda-no-gpu-message "$tmp/err" "arlsim validate: --backend cuda: "
fi
# Under mpirun: the CPU backend refuses (its devices are threads of one process); the CUDA one
# without a GPU stops every process with status 2.
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  # Under AddressSanitizer, Open MPI's own allocations are reported as leaks at exit (exit 23).
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  expect validate-cpu-mpirun 2 timeout 120 mpirun -n 2 "$arlsim" validate "$scenario" --backend cpu
  contains validate-cpu-mpirun-message "$tmp/err" "--backend cpu runs in one process"
  if ! nvidia-smi -L >/dev/null 2>&1; then
    expect validate-cuda-mpirun-no-gpu 2 timeout 120 mpirun -n 2 "$arlsim" validate "$scenario" --backend cuda \
      --profile calib/profiles/h100-sxm.json --set '/workload/dtype="bf16"'
    contains validate-cuda-mpirun-no-gpu-message "$tmp/err" "arlsim validate: --backend cuda: "
  fi
fi
expect validate-backend 2 "$arlsim" validate "$scenario" --backend tpu
contains validate-backend-message "$tmp/err" 'unknown backend "tpu"'
expect validate-no-backend 2 "$arlsim" validate "$scenario"
expect validate-steps 2 "$arlsim" validate "$scenario" --backend cpu --steps x
contains validate-steps-message "$tmp/err" "--steps"
expect validate-disaggregated-gather 2 "$arlsim" validate "$scenario" --backend cpu --set '/policy/placement="disaggregated"' \
  --set /policy/rollout_gpus=1 --set /policy/train/dp=1 --set '/policy/weight_sync={"method": "allgather-swap"}'
contains validate-disaggregated-gather-message "$tmp/err" "/policy/weight_sync/method: a disaggregated plan's weights are broadcast"
expect validate-vpp-overlap 2 "$arlsim" validate "$scenario" --backend cpu --set /policy/train/tp=1 --set /policy/train/dp=1 \
  --set /policy/train/pp=2 --set /policy/train/vpp=2
contains validate-vpp-overlap-message "$tmp/err" "/policy/train/overlap: overlapped communication is not executed yet"
expect validate-devices 2 "$arlsim" validate "$scenario" --backend cpu --set /cluster/gpus_per_node=64 \
  --set /policy/train/dp=64 --set /workload/prompts_per_step=64 --set /workload/mini_batches=1
contains validate-devices-message "$tmp/err" "needs 64 devices and the CPU backend has"
expect validate-missing 2 "$arlsim" validate no-such-scenario.json --backend cpu
expect validate-profile-missing 2 "$arlsim" validate "$scenario" --backend cpu --profile "$tmp/none.json"
contains validate-profile-missing-message "$tmp/err" "none.json"
report
