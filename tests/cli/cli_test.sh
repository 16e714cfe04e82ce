#!/usr/bin/env bash
# End-to-end checks of the arlsim program: exit statuses, output shapes, inputs no unit test can
# hold (a 100 MB file, a path that does not exist). Usage: cli_test.sh PATH/TO/arlsim
set -u
arlsim="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../lib/checks.sh"

# The default run simulates the embedded default scenario and prints its table.
expect default 0 "$arlsim"
contains default-steps "$tmp/out" "default: 16 GPUs, 10 steps"
contains default-table "$tmp/out" "step time (s)"
contains default-throughput "$tmp/out" "throughput"

# simulate: the three output files, JSON keys, step ranges, granularities that agree, determinism.
expect simulate-out 0 "$arlsim" simulate default --out "$tmp/run" --steps 15:60
for f in summary.json steps.csv timeline.json; do
  if [ -s "$tmp/run/$f" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL simulate-out: no $f"; fi
done
contains simulate-steps-csv "$tmp/run/steps.csv" "step,start_s,end_s,time_s,rollout_s"
for key in '"steps"' '"total_time_s"' '"gpu_hours"' '"cost_usd"' '"oom_events"' '"weight_sync"' '"tokens_per_s"'; do
  contains "simulate-summary-$key" "$tmp/run/summary.json" "$key"
done
contains simulate-timeline "$tmp/run/timeline.json" '"traceEvents"'
"$arlsim" simulate default --json --steps 15:30 >"$tmp/a.json"
"$arlsim" simulate default --json --steps 15:30 --rollout-granularity iteration >"$tmp/b.json"
same simulate-skip-vs-iteration "$tmp/a.json" "$tmp/b.json"
"$arlsim" simulate default --json --steps 15:30 >"$tmp/c.json"
same simulate-deterministic "$tmp/a.json" "$tmp/c.json"
# Timeline detail levels: stages < engines < full events; a step range keeps only its steps.
for level in stages engines full; do
  expect "timeline-$level" 0 "$arlsim" simulate default --steps 1:16 --out "$tmp/tl-$level" --timeline-detail $level
  contains "timeline-$level" "$tmp/out" "detail $level)"
done
if python3 - "$tmp" <<'PY'
import json, sys
n = {l: json.load(open(f"{sys.argv[1]}/tl-{l}/timeline.json"))["traceEvents"] for l in ("stages", "engines", "full")}
x = {l: sum(e["ph"] == "X" for e in v) for l, v in n.items()}
assert 0 < x["stages"] < x["engines"] < x["full"], x
assert not any(e.get("name") == "tool call" for e in n["engines"])
assert any(e.get("name") == "tool call" for e in n["full"])
assert not any(e["ph"] == "C" and e["name"].startswith("KV") for e in n["stages"])
PY
then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL timeline-levels"; fi
expect timeline-steps 0 "$arlsim" simulate default --steps 1:31 --out "$tmp/tl-range" --timeline-steps 16:16
if python3 - "$tmp/tl-range/timeline.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
steps = {e["args"]["step"] for e in j["traceEvents"] if e["ph"] == "X"}
assert steps == {16}, steps
assert j["otherData"]["steps"] == 1
PY
then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL timeline-steps-only"; fi
expect timeline-steps-none 2 "$arlsim" simulate default --out "$tmp/x" --timeline-steps 2:10
contains timeline-steps-none "$tmp/err" "--timeline-steps: no step the run simulates is in it (its steps: 1, 16, 31, 46, 61, 76, ...)"
expect timeline-bad-detail 2 "$arlsim" simulate default --out "$tmp/x" --timeline-detail everything
contains timeline-bad-detail "$tmp/err" '--timeline-detail must be "stages", "engines" or "full", not "everything"'
expect timeline-bad-steps 2 "$arlsim" simulate default --out "$tmp/x" --timeline-steps 5:2
contains timeline-bad-steps "$tmp/err" "--timeline-steps expects A:B"
expect simulate-pipeline 0 "$arlsim" simulate earl-testbed --steps 1:1 --detail pipeline --out "$tmp/pipe"
contains simulate-pipeline "$tmp/pipe/timeline.json" '"pipeline stage 3"'
expect simulate-bad-detail 2 "$arlsim" simulate default --detail everything
expect whatif 0 "$arlsim" whatif default --steps 1:16 --vary /policy/dispatch=centralized,decentralized --vary /policy/routing=sticky,round-robin
contains whatif-columns "$tmp/out" "#4"
contains whatif-ratio "$tmp/out" "step time / #1"
expect simulate-pool-without-units 2 "$arlsim" simulate default --set /policy/tool_policy=static --set /cluster/pools/0/count=0
contains simulate-pool-without-units "$tmp/err" 'pool "python" has no units: count is 0, and only the pooled tool policy grows a pool'
expect whatif-analytic 0 "$arlsim" whatif default --analytic --vary /policy/rollout/tp=1,2
contains whatif-analytic "$tmp/out" "step time / #1"
expect whatif-zip 0 "$arlsim" whatif default --steps 1:1 --zip --vary /policy/rollout/tp=1,2 --vary /workload/engine/max_num_seqs=64,128
contains whatif-zip "$tmp/out" "#2"
expect whatif-zip-mismatch 2 "$arlsim" whatif default --zip --vary /policy/rollout/tp=1,2 --vary /workload/engine/max_num_seqs=64
expect whatif-bad-vary 2 "$arlsim" whatif default --vary nothing

# plan: the selectors side by side, plan.json, and its replay by simulate.
expect plan 0 "$arlsim" plan default --steps 1:46 --out "$tmp/plan.json"
contains plan-selectors "$tmp/out" "configured        static        online       offline"
contains plan-dispatch "$tmp/out" "layout-aware"
contains plan-agreement "$tmp/out" "agreement: the planner's analytic run"
contains plan-dispatch-adopted "$tmp/out" "  adopted: "
contains plan-balance-batch "$tmp/plan.json" '"balance_batch":'
contains plan-format "$tmp/plan.json" '"format": "arlsim-plan/1"'
for key in '"layouts"' '"schedule"' '"selectors"' '"candidates"' '"predicted"' '"scenario"' '"dispatch"' '"sync"' '"agreement"'; do
  contains "plan-json-$key" "$tmp/plan.json" "$key"
done
python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['predicted']['total_time_s'])" "$tmp/plan.json" >"$tmp/planned"
"$arlsim" simulate "$tmp/plan.json" --steps 1:46 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['total_time_s'])" >"$tmp/replayed"
same plan-replays "$tmp/planned" "$tmp/replayed"
# The planner's analytic run beside the simulated one, on the same steps (within 10% here).
python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
a = j['agreement']
ok = a['simulated_s'] == j['predicted']['total_time_s'] and a['analytic_s'] is not None
print('agreement ok' if ok and abs(a['analytic_s'] / a['simulated_s'] - 1) < 0.10 else a)" "$tmp/plan.json" >"$tmp/agreement"
contains plan-agreement-json "$tmp/agreement" "agreement ok"
expect plan-check 0 "$arlsim" check "$tmp/plan.json"
# The switch overhead the plan weighed is the one its replay charges: the flag's default, or the
# scenario's when it states one, unless the flag is given.
contains plan-overhead-default "$tmp/plan.json" '"switch_overhead": 30.0'
"$arlsim" plan default --steps 1:46 --set '/policy/switch_overhead="5 s"' --out "$tmp/plan5.json" >/dev/null
contains plan-overhead-scenario "$tmp/plan5.json" '"switch_overhead": 5.0'
"$arlsim" plan default --steps 1:46 --set '/policy/switch_overhead="5 s"' --switch-overhead 12 --out "$tmp/plan12.json" >/dev/null
contains plan-overhead-flag "$tmp/plan12.json" '"switch_overhead": 12.0'
# The plan's layouts carry the scenario's kernels (every candidate runs them).
expect plan-kernels 0 "$arlsim" plan default --set '/policy/train/kernels="eager"' --json
if python3 -c "import json, sys; d = json.load(open(sys.argv[1])); t = d['layouts']['train']; assert t['kernels'] == 'eager', t" "$tmp/out"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL plan-kernels-layout"; fi
expect plan-overhead-too-large 2 "$arlsim" plan default --switch-overhead 2e6
contains plan-overhead-too-large "$tmp/err" "--switch-overhead must be 0 to 1000000 seconds, got 2e+06"
expect plan-bad-selector 2 "$arlsim" plan default --selector greedy
contains plan-bad-selector "$tmp/err" 'unknown selector "greedy"'
expect plan-selector-typo 2 "$arlsim" plan default --selector offlin
contains plan-selector-typo "$tmp/err" 'did you mean "offline"?'
printf '{"format": "arlsim-plan/2", "scenario": {}}' >"$tmp/plan2.json"
expect plan-bad-version 2 "$arlsim" simulate "$tmp/plan2.json"
contains plan-bad-version "$tmp/err" 'unsupported format version "arlsim-plan/2"'
printf '{"format": "arlsim-plan/1"}' >"$tmp/plan3.json"
expect plan-no-scenario 2 "$arlsim" simulate "$tmp/plan3.json"
contains plan-no-scenario "$tmp/err" "a plan must carry its scenario"

# capacity: candidates with the stable keys; more nodes never turn a feasible GPU type infeasible.
expect capacity 0 "$arlsim" capacity earl-testbed --gpus h100-sxm,a100-sxm-80g --nodes 1..16 --placements colocated --json
for key in '"gpu"' '"nodes"' '"feasible"' '"reason"' '"step_time_s"' '"total_time_s"' '"cost_usd"' '"pareto"' '"agreement"' \
  '"confirmed"' '"simulated_step_time_s"' '"simulated_total_time_s"' '"beyond_tolerance"'; do
  contains "capacity-json-$key" "$tmp/out" "$key"
done
if python3 - "$tmp/out" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
for gpu in {r["gpu"] for r in rows}:
    seen = False
    for r in sorted((r for r in rows if r["gpu"] == gpu), key=lambda r: r["nodes"]):
        if seen and not r["feasible"]:
            sys.exit(f"{gpu}: {r['nodes']} nodes infeasible after a smaller feasible size")
        seen = seen or r["feasible"]
    assert any(not r["feasible"] and r["reason"].startswith("OOM at step") for r in rows)
PY
then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL capacity-monotone"; fi
expect capacity-table 0 "$arlsim" capacity default --nodes 1,2 --deadline 1h --budget 100
contains capacity-deadline "$tmp/out" "cheapest within the deadline: "
contains capacity-budget "$tmp/out" "fastest within the budget: "
contains capacity-simulated "$tmp/out" "by the event simulator against"
contains capacity-simulated-column "$tmp/out" "simulated (h)"
contains capacity-recommended-simulated "$tmp/out" "USD, simulated"
# Every configuration on the Pareto frontier is confirmed by the event simulator.
"$arlsim" capacity default --nodes 1,2 --json >"$tmp/cap.json"
if python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
assert all(x['confirmed'] for x in c if x['pareto']), c
for x in c:
    if x['confirmed'] and x['simulated_total_time_s'] is not None:
        assert abs(x['simulated_step_time_s'] * 10 - x['simulated_total_time_s']) < 1e-6 * x['simulated_total_time_s']
        assert x['beyond_tolerance'] == (abs(x['simulated_total_time_s'] / x['total_time_s'] - 1) > 0.10)
" "$tmp/cap.json"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL capacity-confirmed"; fi
# A configuration whose simulation would not fit in --max-memory is not simulated, and says so.
expect capacity-memory 0 "$arlsim" capacity default --nodes 1,2 --max-memory 1MiB --threads 1
if grep -qE "^h100-sxm +2 +16  colocated +[0-9.]+ +[0-9.]+ +memory" "$tmp/out"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL capacity-memory-column"; fi
contains capacity-memory-why "$tmp/out" "memory = not run whole by the event simulator: its simulation needs about "
contains capacity-memory-limit "$tmp/out" " of memory, more than the 1.00 MiB of --max-memory (others may need more)"
contains capacity-memory-answer "$tmp/out" "fastest: none that the event simulator confirms"
"$arlsim" capacity default --nodes 1,2 --max-memory 1MiB --threads 2 --json >"$tmp/cap-memory.json"
if python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
feasible = [x for x in c if x['feasible']]
assert feasible and all(not x['confirmed'] and 'per thread (2 threads)' in x['unconfirmable'] for x in feasible), c
assert all(x['unconfirmable'] is None for x in c if not x['feasible'])
" "$tmp/cap-memory.json"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL capacity-memory-json"; fi
expect capacity-bad-memory 2 "$arlsim" capacity default --max-memory lots
contains capacity-bad-memory "$tmp/err" "--max-memory"
expect capacity-bad-confirm 2 "$arlsim" capacity default --confirm -1
contains capacity-bad-confirm "$tmp/err" "--confirm must be 0 or more"
# --out that cannot be written is refused before any work, with status 2.
: >"$tmp/a-file"
expect simulate-bad-out 2 "$arlsim" simulate default --out "$tmp/a-file/run"
contains simulate-bad-out "$tmp/err" "--out: cannot create directory"
expect whatif-bad-out 2 "$arlsim" whatif default --vary /policy/rollout/tp=1,2 --out "$tmp/a-file/w"
contains whatif-bad-out "$tmp/err" "--out: cannot create directory"
expect capacity-bad-out 2 "$arlsim" capacity default --out "$tmp/a-file/c"
contains capacity-bad-out "$tmp/err" "--out: cannot create directory"
# estimate given a scenario or a model says what it takes.
expect estimate-scenario 2 "$arlsim" estimate default
contains estimate-scenario "$tmp/err" "default is a scenario; estimate takes a stage"
expect estimate-model 2 "$arlsim" estimate qwen3-8b
contains estimate-model "$tmp/err" "qwen3-8b is a model; estimate takes a stage"
# list gpus gives each profile's price, or says it has none.
expect list-gpus 0 "$arlsim" list gpus
contains list-gpus-priced "$tmp/out" "h100-sxm"
contains list-gpus-price "$tmp/out" '$3.00 per GPU-hour'
contains list-gpus-unpriced "$tmp/out" "b200-sxm"
contains list-gpus-unpriced-note "$tmp/out" "unpriced (give --price GPU=USD"
# check reads traces (.jsonl or --kind trace) and prints the effective document with --resolved.
expect check-trace 0 "$arlsim" check traces/earl-game.jsonl
contains check-trace "$tmp/out" "traces/earl-game.jsonl: ok (trace: 15 steps, 480 trajectories, 2035 turns)"
printf '{"format":"arlsim-trace/1"}\n{"step": 1}\n' >"$tmp/bad-trace.txt"
expect check-trace-kind 2 "$arlsim" check --kind trace "$tmp/bad-trace.txt"
contains check-trace-kind "$tmp/err" "bad-trace.txt:2: missing required key \"turns\""
# A shard dtype below ZeRO-3 has nothing to shard: a warning, not an error.
expect check-shard-dtype 0 "$arlsim" check default --set '/policy/train/shard_dtype="bf16"'
contains check-shard-dtype-warning "$tmp/err" "only ZeRO-3 shards the parameters, so the shard dtype changes nothing at ZeRO 1"
expect check-resolved 0 "$arlsim" check default --set /cluster/nodes=4 --set /policy/train/dp=16 --resolved
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['cluster']['nodes'] == 4 and d['policy']['train']['dp'] == 16 and d['cluster']['gpu']['name'] == 'h100-sxm'" "$tmp/out"
then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL check-resolved-content"; fi
# check simulates a scenario's first step and warns when a stage does not fit (the file is valid).
expect check-first-step 0 "$arlsim" check default --set /workload/engine/gpu_memory_utilization=0.12
contains check-first-step "$tmp/err" "default: warning: step 1: rollout does not fit: it needs 10.0 GiB per GPU, 9.6 GiB available"
# A mixture-of-experts model with tensor parallelism on one node: its experts' group is that node's
# (it was priced as crossing nodes, and a cluster without a NIC ended in an internal error).
expect simulate-moe-tp 0 "$arlsim" simulate scenarios/cpu-validate.json --steps 1:1 \
  --set '/model="tests/runtime/models/tiny-qwen3-moe.json"' --set /policy/train/tp=2 --set /policy/train/dp=1
# ... and when, with virtual pipeline stages, a data rank's micro-batches are no multiple of pp.
expect check-interleaved 0 "$arlsim" check scenarios/cpu-validate.json --set /policy/train/pp=2 --set /policy/train/vpp=2 \
  --set /policy/train/dp=1 --set /policy/train/micro_batch=3
contains check-interleaved "$tmp/err" "a data rank has 3 micro-batches in a mini-batch, which Megatron's interleaved schedule (vpp = 2) refuses"
expect capacity-price-inf 2 "$arlsim" capacity default --price h100-sxm=inf
contains capacity-price-inf "$tmp/err" "--price expects GPU=USD"
expect capacity-gpus-empty 2 "$arlsim" capacity default --gpus ,
contains capacity-gpus-empty "$tmp/err" "--gpus expects GPU profiles separated by commas"
expect capacity-bad-steps 2 "$arlsim" capacity default --steps 0
contains capacity-bad-steps "$tmp/err" "--steps must be 1 to 100000000, got 0"
expect capacity-price-unknown-gpu 2 "$arlsim" capacity default --gpus h100-sxm --price b200=3
contains capacity-price-unknown-gpu "$tmp/err" "\"b200\" is not one of the GPUs evaluated (h100-sxm)"
expect capacity-csv 0 "$arlsim" capacity default --nodes 2 --csv
contains capacity-csv "$tmp/out" "gpu,nodes,gpus,placement,rollout_share,feasible,reason,step_time_s"
expect capacity-bad-nodes 2 "$arlsim" capacity default --nodes 0..4x
contains capacity-bad-nodes "$tmp/err" "--nodes expects"
expect capacity-bad-gpu 2 "$arlsim" capacity default --gpus h100-sxn
contains capacity-bad-gpu "$tmp/err" "did you mean"
expect capacity-bad-deadline 2 "$arlsim" capacity default --deadline soon
expect whatif-bad-value 2 "$arlsim" whatif default --steps 1:1 --vary /policy/rollout/tp=3
contains whatif-bad-value "$tmp/err" "do not split over tp = 3"
expect whatif-json 0 "$arlsim" whatif default --steps 1:1 --json --vary /policy/dispatch=centralized,decentralized
contains whatif-json "$tmp/out" '"total_time_s"'
expect simulate-bad-steps 2 "$arlsim" simulate default --steps 9:3
expect simulate-bad-oom 2 "$arlsim" simulate default --on-oom ignore
expect simulate-no-scenario 2 "$arlsim" simulate
expect simulate-empty-range 2 "$arlsim" simulate default --steps 100000:
expect simulate-oom 0 "$arlsim" simulate default --steps 1:1 --set '/policy/train={"tp": 1, "dp": 16, "zero": 0}'
contains simulate-oom "$tmp/out" "OOM"

expect version 0 "$arlsim" --version
contains version "$tmp/out" "arlsim 0.1.0"
expect help 0 "$arlsim" --help
expect check-help 0 "$arlsim" check --help
expect unknown-command 2 "$arlsim" frobnicate
expect unknown-option 2 "$arlsim" check --frobnicate scenarios/default.json
expect no-files 2 "$arlsim" check

# Valid inputs of every kind, from files and by preset name.
expect check-files 0 "$arlsim" check scenarios/default.json calib/profiles/h100-sxm.json \
  scenarios/clusters/dgx-h100.json scenarios/models/deepseek-v3.json tests/input/data/hf/pythia-6.9b.json
expect check-preset 0 "$arlsim" check default
expect check-set 0 "$arlsim" check default --set /cluster/nodes=4 --set /policy/train/dp=16

# --json on a model: the documented keys.
expect check-json 0 "$arlsim" check --json --context 8192 llama-3.1-8b
for key in '"params_total"' '"params_active"' '"kv_bytes_per_token": 131072' '"flops_per_token"' '"context": 8192'; do
  contains "json-$key" "$tmp/out" "$key"
done
expect check-json-bad 2 "$arlsim" check --json tests/bad_input/empty.json
contains json-diagnostics "$tmp/out" '"message": "the file is empty; expected a JSON object"'

# Bad inputs: exit status 2 and the message, never a crash.
for f in tests/bad_input/*.json; do
  expect "bad:$f" 2 "$arlsim" check "$f"
done
expect missing-path 2 "$arlsim" check does/not/exist.json
contains missing-path "$tmp/err" "does/not/exist.json: no such file"
expect directory 2 "$arlsim" check tests
contains directory "$tmp/err" "tests: is a directory, not a JSON file"
expect unknown-preset 2 "$arlsim" check qwen3-8bb
contains unknown-preset "$tmp/err" 'did you mean "qwen3-8b"?'
expect bad-kind 2 "$arlsim" check --kind clustre scenarios/default.json
expect wrong-kind 2 "$arlsim" check --kind model scenarios/clusters/dgx-h100.json
expect bad-context 2 "$arlsim" check --context 0 qwen3-8b

# A 100 MB file is refused by size, without reading it whole.
head -c 104857600 /dev/zero >"$tmp/huge.json"
expect huge-file 2 "$arlsim" check "$tmp/huge.json"
contains huge-file "$tmp/err" "the file is 100 MiB; input files of this kind are limited to 16 MiB"

# Stage estimates: every shipped example, human and JSON, with the documented keys.
for f in scenarios/stages/*.json; do
  expect "estimate:$f" 0 "$arlsim" estimate "$f"
done
expect estimate-train-json 0 "$arlsim" estimate --json scenarios/stages/train-llama-3.1-8b-h100.json
for key in '"iteration_s"' '"tokens_per_s"' '"model_tflops_per_gpu"' '"mfu"' '"memory_per_rank_gib"' '"fits": true'; do
  contains "train-json-$key" "$tmp/out" "$key"
done
# Error bands from the validation record bracket each banded figure.
bands_ok() { python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    assert d[k + '_low'] <= d[k] <= d[k + '_high'], k
" "$@"; }
if bands_ok "$tmp/out" iteration_s tokens_per_s mfu; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL train bands"; fi
expect estimate-collective-bands 0 "$arlsim" estimate --json scenarios/stages/allreduce-h100-1gib.json
if bands_ok "$tmp/out" time_s busbw_gbps; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL collective bands"; fi
expect estimate-train-unfused 0 "$arlsim" estimate --json scenarios/stages/train-llama-3.1-8b-h100.json --set '/attention_kernel="unfused"'
contains estimate-train-unfused "$tmp/out" '"iteration_s"'
expect estimate-inference-json 0 "$arlsim" estimate --json scenarios/stages/decode-qwen2.5-72b-h100.json
for key in '"time_s"' '"tokens_per_s"' '"kv_capacity_tokens"' '"memory_per_gpu_gib"'; do
  contains "inference-json-$key" "$tmp/out" "$key"
done
expect estimate-collective-json 0 "$arlsim" estimate --json scenarios/stages/allreduce-h100-1gib.json
for key in '"time_s"' '"algbw_gbps"' '"busbw_gbps"' '"algorithm"'; do
  contains "collective-json-$key" "$tmp/out" "$key"
done
expect estimate-rollout-json 0 "$arlsim" estimate --json scenarios/stages/rollout-qwen3-8b-h100.json
for key in '"requests_per_s"' '"output_tokens_per_s"' '"ttft_s"' '"tpot_s"' '"p99"' '"preemptions"' '"makespan_s"'; do
  contains "rollout-json-$key" "$tmp/out" "$key"
done
# Event skipping and per-iteration simulation print the same figures (to 12 significant digits:
# a span of skipped iterations sums their times in another order than one at a time).
round12() { python3 -c "import json,sys
def r(x): return {k: r(v) for k, v in x.items()} if isinstance(x, dict) else [r(v) for v in x] if isinstance(x, list) else float('%.12g' % x) if isinstance(x, float) else x
d = r(json.load(sys.stdin)); d.pop('events', None); json.dump(d, sys.stdout, indent=1, sort_keys=True)"; }
"$arlsim" estimate --json scenarios/stages/rollout-qwen3-8b-h100.json | round12 >"$tmp/skip.json"
"$arlsim" estimate --json --rollout-granularity iteration scenarios/stages/rollout-qwen3-8b-h100.json | round12 >"$tmp/iter.json"
same estimate-skip-vs-iteration "$tmp/skip.json" "$tmp/iter.json"
expect estimate-bad-granularity 2 "$arlsim" estimate --rollout-granularity sometimes scenarios/stages/rollout-qwen3-8b-h100.json
expect estimate-rollout-oom 2 "$arlsim" estimate scenarios/stages/rollout-qwen3-8b-h100.json --set /engine/gpu_memory_utilization=0.1
contains estimate-rollout-oom "$tmp/err" "/engine: the engine's KV cache does not fit"
expect list-policies 0 "$arlsim" list policies
contains list-policies "$tmp/out" "length-aware"
expect list-stages 0 "$arlsim" list stages
contains list-stages "$tmp/out" "weight_sync   training  the new weights"

# A layout that does not fit the model, and an over-large one: clear messages, status 2.
expect estimate-bad-tp 2 "$arlsim" estimate scenarios/stages/train-llama-3.1-8b-h100.json --set /layout/tp=3
contains estimate-bad-tp "$tmp/err" "tp = 3 does not divide the model's 32 heads"
expect estimate-oom 0 "$arlsim" estimate scenarios/stages/train-llama-3.1-8b-h100.json --set /layout/tp=1 --set /layout/dp=8 --set /layout/zero=0 --set /seq_len=32768 --set /global_batch=8
contains estimate-oom "$tmp/out" "DOES NOT FIT"
expect estimate-no-file 2 "$arlsim" estimate
expect estimate-missing 2 "$arlsim" estimate does/not/exist.json

# Lists.
for topic in models gpus clusters scenarios; do
  expect "list-$topic" 0 "$arlsim" list "$topic"
done
contains list-scenarios "$tmp/out" "default"
expect list-models 0 "$arlsim" list models
contains list-models-table "$tmp/out" "qwen3-30b-a3b"
expect list-bad 2 "$arlsim" list gadgets

# Offloaded states and sleeping engines that do not fit the node's host memory stop the run there
# (ZeRO-2: the gradients the weight sync swaps out are sharded, so the training phase needs more).
expect host-oom 0 "$arlsim" simulate default --steps 1:1 --set /policy/train/offload_optimizer=true \
  --set /policy/train/zero=2 --set '/cluster/host_memory="64 GiB"'
contains host-oom-header "$tmp/out" "OOM in train (host memory)"
contains host-oom-line "$tmp/out" "needs 106.80 GiB of 64.00 GiB of host memory per node"
contains host-oom-parts "$tmp/out" "sleeping engines' weights 61.03, offloaded optimizer states 45.77"
# The state a colocated weight sync swaps out lives in host memory during the rollout: 8 ranks'
# gradients and optimizer states, 22 GB each, do not fit 100 GiB.
expect host-oom-swap 0 "$arlsim" simulate default --steps 1:1 --set '/cluster/host_memory="100 GiB"'
contains host-oom-swap-line "$tmp/out" "stage weight_sync, rank 0: needs 167.83 GiB of 100.00 GiB of host memory per node"
contains host-oom-swap-parts "$tmp/out" "swapped training state 167.83"
expect host-oom-json 0 "$arlsim" simulate default --steps 1:1 --set /policy/train/offload_optimizer=true \
  --set /policy/train/zero=2 --set '/cluster/host_memory="64 GiB"' --json
contains host-oom-json-memory "$tmp/out" '"memory": "host"'
expect host-memory-small 2 "$arlsim" check default --set '/cluster/host_memory="1 MiB"'
contains host-memory-small-named "$tmp/err" "/cluster/host_memory"

# A run larger than the memory it may take is refused before it runs, with the estimate and what
# to change; the estimate scales with the step's trajectories.
expect memory-refused 2 "$arlsim" simulate default --max-memory "1 MiB"
contains memory-refused-estimate "$tmp/err" "needs about"
contains memory-refused-step "$tmp/err" "512 trajectories"
contains memory-refused-what "$tmp/err" "more than the 1.00 MiB of --max-memory: simulate fewer steps at once (--steps A:B)"
expect memory-bad-size 2 "$arlsim" simulate default --max-memory lots
contains memory-bad-size-named "$tmp/err" "--max-memory:"
expect memory-zero 2 "$arlsim" simulate default --max-memory "0 GiB"
contains memory-zero-named "$tmp/err" "--max-memory: must be more than 0"
expect memory-enough 0 "$arlsim" simulate default --max-memory "1 GiB" --steps 1:1
expect memory-whatif 2 "$arlsim" whatif default --vary /workload/prompts_per_step=8,512 --max-memory "1 MiB" --steps 1:1
contains memory-whatif-variant "$tmp/err" "variant /workload/prompts_per_step=512: the generated trace alone needs about"
expect memory-plan 2 "$arlsim" plan default --max-memory "1 MiB"
contains memory-plan-said "$tmp/err" "arlsim plan: the generated trace alone needs about"
expect memory-larger-step 2 "$arlsim" simulate default --max-memory "1 MiB" --set /workload/prompts_per_step=128
contains memory-larger-step-count "$tmp/err" "1.02 K trajectories"
# Without --max-memory the limit is what the process may take (here an address-space limit; not
# under AddressSanitizer, which reserves terabytes of address space).
if ! ldd "$arlsim" 2>/dev/null | grep -q libasan; then
  expect memory-available 2 bash -c "ulimit -v 300000; exec \"\$0\" simulate default --steps 1:1 \
    --set /workload/prompts_per_step=25000 --set /workload/samples_per_prompt=16" "$arlsim"
  contains memory-available-said "$tmp/err" "this machine has available"
  contains memory-available-override "$tmp/err" "or pass --max-memory to run anyway"
fi
# Processes that mpirun starts on one machine (as its environment says) each take their part of
# what it has available: 100,000 of them leave a run of 144 MiB no room (in a build with MPI; one
# without runs the whole job in rank 0).
if "$arlsim" --version | grep -q "MPI (for distributed sweeps): MPI"; then
  expect memory-shared 2 env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_SIZE=100000 "$arlsim" simulate default \
    --steps 1:1 --set /workload/prompts_per_step=6000 --set /workload/samples_per_prompt=16
  contains memory-shared-said "$tmp/err" "available to each of the 100000 processes on this machine"
fi

# A run an OOM stopped says so, gives no throughput or cost as if whole, and --fail-on-oom exits 3.
expect oom-stopped 0 "$arlsim" simulate default --set /workload/engine/gpu_memory_utilization=0.12
contains oom-stopped-header "$tmp/out" "STOPPED at step 1 (1 of 10): OOM in rollout"
contains oom-stopped-no-cost "$tmp/out" "no throughput or cost is given for a run that stopped"
if grep -q "^throughput" "$tmp/out"; then failed=$((failed + 1)); echo "FAIL oom-stopped-throughput"; else passed=$((passed + 1)); fi
expect oom-fail 3 "$arlsim" simulate default --set /workload/engine/gpu_memory_utilization=0.12 --fail-on-oom
expect oom-json 0 "$arlsim" simulate default --set /workload/engine/gpu_memory_utilization=0.12 --json
contains oom-json-stopped "$tmp/out" '"stopped": {'
expect oom-whatif 0 "$arlsim" whatif default --vary /workload/engine/gpu_memory_utilization=0.12,0.6 --set /steps=2
contains oom-whatif-marked "$tmp/out" "stopped, step 1"
# ... and its figures are withheld, not shown as a free and instant run.
if grep -Eq '^step time mean \(s\) +- +[0-9]' "$tmp/out" && ! grep -Eq '^cost \(USD\) +0\.00' "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL oom-whatif-withheld"; cat "$tmp/out"
fi
# A sampled trace's whole run is projected.
expect projected 0 "$arlsim" simulate default --set /steps=2
contains projected-line "$tmp/out" "2 of 150 steps simulated; projected"

# --set /ptr=null deletes the key (a merge patch's null): a default comes back, a required key goes.
expect set-null-default 0 "$arlsim" check default --set /workload/engine=null
expect set-null-required 2 "$arlsim" check default --set /policy/rollout=null
contains set-null-required-why "$tmp/err" 'missing required key "rollout"'

# A trace file whose steps are not the workload's batch is refused, unless the scenario says the
# trace sets it.
expect trace-batch 2 "$arlsim" simulate default --trace traces/code-tool.jsonl --set /steps=1
contains trace-batch-why "$tmp/err" "traces/code-tool.jsonl: step 1 has 32 trajectories; the workload's 64 prompts x 8 samples make 512 a step"
expect trace-sets-batch 0 "$arlsim" simulate default --trace traces/code-tool.jsonl --set /steps=1 --set /trace_sets_batch=true

# A run longer than the clock holds is refused as bad input, not an internal check failure or an
# abort; capacity reports such a configuration as unable to run and goes on.
expect clock-range 2 "$arlsim" estimate scenarios/stages/rollout-qwen3-8b-h100.json --set /arrival_rate_per_s=1e-8
contains clock-range-why "$tmp/err" "the simulated time passes 292 years"
python3 -c "
import json
print(json.dumps({'format': 'arlsim-trace/1', 'provenance': {}}))
turn = {'prefill_tokens': 10, 'gen_tokens': 10, 'tool': 'python', 'tool_latency_s': 1e7}
for p in range(64):
    for s in range(8):
        print(json.dumps({'step': 1, 'prompt_id': p, 'sample': s, 'turns': [turn, turn, {'prefill_tokens': 0, 'gen_tokens': 10}]}))
" > "$tmp/long-tools.jsonl"
one_sandbox=(--set /policy/tool_policy=static --set /cluster/pools/0/count=1 --set /cluster/pools/0/max_count=1)
expect clock-range-simulate 2 "$arlsim" simulate default --trace "$tmp/long-tools.jsonl" "${one_sandbox[@]}"
contains clock-range-simulate-why "$tmp/err" "the simulated time passes 292 years"
expect clock-range-capacity 0 "$arlsim" capacity default --trace "$tmp/long-tools.jsonl" "${one_sandbox[@]}" --nodes 2
contains clock-range-capacity-row "$tmp/out" "the simulated time passes 292 years"

# Sizes each within range whose product no count holds: refused, not a negative parameter count.
cat > "$tmp/huge-moe.json" <<'JSON'
{"format": "arlsim-model/1", "name": "huge", "hidden_size": 4096, "num_layers": 64, "num_heads": 32,
 "ffn_hidden_size": 14336, "vocab_size": 128256,
 "moe": {"num_experts": 1048576, "experts_per_token": 8, "expert_ffn_hidden_size": 16777216}}
JSON
expect model-too-large 2 "$arlsim" check "$tmp/huge-moe.json"
contains model-too-large-why "$tmp/err" "more than the 10^15 arlsim can count"

# capacity --gpus takes a profile file as well as a preset name.
cp calib/profiles/h100-sxm.json "$tmp/my-gpu.json"
expect capacity-gpu-file 0 "$arlsim" capacity default --gpus "$tmp/my-gpu.json" --nodes 2
contains capacity-gpu-file-row "$tmp/out" "my-gpu.json"
if grep -q "cannot refer to the file" "$tmp/out" "$tmp/err"; then failed=$((failed + 1)); echo "FAIL capacity-gpu-file-read"; else passed=$((passed + 1)); fi

# plan's --out is checked before the planning.
expect plan-out-folder 2 "$arlsim" plan default --out "$tmp"
contains plan-out-folder-why "$tmp/err" "is a folder; give a file name"
expect plan-out-no-folder 2 "$arlsim" plan default --out "$tmp/no/such/plan.json"
expect trace-import-out-folder 2 "$arlsim" trace import traces/examples/dashboard.csv --prompts-per-step 64 --group-size 8 --out "$tmp"

# AReaL's YAML: an alias that refers to itself, aliases nested into one another, NaN.
printf 'a: &x\n  b: *x\n' > "$tmp/self.yaml"
expect areal-self-alias 2 "$arlsim" import "$tmp/self.yaml" --from areal --model qwen3-8b --out "$tmp/i.json"
contains areal-self-alias-why "$tmp/err" "an alias that refers to itself"
python3 -c "
lines = ['x0: &a0 {k: [lol, lol, lol, lol, lol, lol, lol, lol, lol]}']
for n in range(1, 9):
    lines.append('x%d: &a%d {' % (n, n) + ', '.join('k%d: *a%d' % (i, n - 1) for i in range(9)) + '}')
print('\n'.join(lines))
" > "$tmp/laughs.yaml"
expect areal-alias-bomb 2 timeout 60 "$arlsim" import "$tmp/laughs.yaml" --from areal --model qwen3-8b --out "$tmp/i.json"
contains areal-alias-bomb-why "$tmp/err" "aliases nested into one another"
printf 'sglang:\n  mem_fraction_static: .nan\n' > "$tmp/nan.yaml"
expect areal-nan 2 "$arlsim" import "$tmp/nan.yaml" --from areal --model qwen3-8b --out "$tmp/i.json"
contains areal-nan-why "$tmp/err" "nan.yaml:2: sglang.mem_fraction_static: expected a finite number"
echo 'python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.gpu_memory_utilization=nan trainer.nnodes=2.5' > "$tmp/nan-verl.sh"
expect verl-nan 2 "$arlsim" import "$tmp/nan-verl.sh" --from verl --model qwen3-8b --out "$tmp/i.json"
contains verl-nan-why "$tmp/err" "gpu_memory_utilization: expected a finite number, got \"nan\""
contains verl-count-why "$tmp/err" "trainer.nnodes: expected a whole number of at least 0, got \"2.5\""

# A schedule entry that no simulated step falls in (the default scenario runs every 15th step).
expect schedule-no-step 0 "$arlsim" check default --set '/policy/schedule=[{"steps":"2:3","rollout":{"tp":4}}]'
contains schedule-no-step-why "$tmp/err" "/policy/schedule/0: no simulated step is in steps 2:3, so it changes nothing (the steps run: 1, 16, 31"
expect schedule-some-step 0 "$arlsim" check default --set '/policy/schedule=[{"steps":"16:30","rollout":{"tp":4}}]'
if grep -q "no simulated step" "$tmp/err"; then failed=$((failed + 1)); echo "FAIL schedule-some-step-quiet"; else passed=$((passed + 1)); fi

# A problem an override makes in a preset's fields says which overrides changed the preset.
expect preset-changed 2 "$arlsim" check default --set /workload/mini_batches=512
contains preset-changed-why "$tmp/err" "the preset as changed by --set /workload/mini_batches=512; change the field named with --set"
# Folders where files are expected are named as folders.
expect trace-folder 2 "$arlsim" check default --set "/trace=\"$tmp\""
contains trace-folder-why "$tmp/err" "is a directory, not a trace file"
expect trace-import-folder 2 "$arlsim" trace import "$tmp" --out "$tmp/x.jsonl"
contains trace-import-folder-why "$tmp/err" "is a directory, not a file to import"
# A staleness out of range is one error, not two.
expect staleness-range 2 "$arlsim" check scenarios/disaggregated-async.json --set /policy/sync/staleness=1000
if grep -q "needs a staleness of at least 1" "$tmp/err"; then failed=$((failed + 1)); echo "FAIL staleness-range-once"; else passed=$((passed + 1)); fi

# Deleting a key that is not there, when one beside it is spelt alike, is most likely a typo.
expect delete-typo 2 "$arlsim" simulate default --set /policy/rolout=null
contains delete-typo-why "$tmp/err" '/policy/rolout: nothing to delete (no such key); did you mean "/policy/rollout"?'
expect delete-absent 0 "$arlsim" check default --set /policy/rollout_gpus=null

# pad_micro_batches takes "none" or "longest".
expect pad-bad 2 "$arlsim" check default --set '/policy/train/pad_micro_batches="all"'
contains pad-bad-why "$tmp/err" "/policy/train/pad_micro_batches"
expect pad-ok 0 "$arlsim" check default --set '/policy/train/pad_micro_batches="longest"'

# An empty name would title every output with nothing.
expect empty-name 2 "$arlsim" check default --set '/name=""'
contains empty-name-why "$tmp/err" "/name: must not be empty"

# Packing and padding: kept in plan.json, turned off by a schedule entry, warned of where inert.
expect plan-packing 0 "$arlsim" plan default --steps 1 --set '/policy/train/packing="fit"' --set /policy/train/pp=2 \
  --set /policy/train/dp=4 --set '/policy/train/pad_micro_batches="longest"' --out "$tmp/packed-plan.json"
python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['scenario']['policy']['train']
assert (t.get('packing'), t.get('pad_micro_batches')) == ('fit', 'longest'), t
" "$tmp/packed-plan.json" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL plan-packing-kept"; }
packed=(--set '/policy/train/packing="fit"' --set /policy/train/pp=2 --set /policy/train/dp=4
  --set '/policy/train/pad_micro_batches="longest"' --set /steps=1)
"$arlsim" simulate default "${packed[@]}" --json >"$tmp/on.json" 2>/dev/null
"$arlsim" simulate default "${packed[@]}" --json \
  --set '/policy/schedule=[{"steps":"1:","train":{"packing":"balanced","pad_micro_batches":"none"}}]' >"$tmp/off.json" 2>/dev/null
"$arlsim" simulate default --set /policy/train/pp=2 --set /policy/train/dp=4 --set /steps=1 --json >"$tmp/plain.json" 2>/dev/null
python3 -c "
import json, sys
train = [json.load(open(f))['steps'][0]['stages']['train'] for f in sys.argv[1:]]
assert train[1] == train[2] and train[0] != train[2], train
" "$tmp/on.json" "$tmp/off.json" "$tmp/plain.json" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL schedule-turns-packing-off"; }
expect pad-inert 0 "$arlsim" check default --set '/policy/train/pad_micro_batches="longest"'
contains pad-inert-why "$tmp/err" "there is no pipeline (pp 1), so it changes nothing"

# A mean response below one token is refused, not drawn as one-token responses.
expect gen-zero-mean 2 "$arlsim" trace gen --response-mean 0 --out "$tmp/g.jsonl"
contains gen-zero-mean-why "$tmp/err" "--response-mean: 0 tokens at step 1; a mean response needs at least 1 token"

# Continuous generation: asynchronous only, and not beside a partial rollout.
expect continuous-sync 2 "$arlsim" check default --set '/policy/sync={"mode":"sync","continuous":true}'
contains continuous-sync-why "$tmp/err" '/policy/sync/continuous: continuous generation applies to "mode": "async" only'
expect continuous-partial 2 "$arlsim" check default --set '/policy/placement="disaggregated"' --set /policy/rollout_gpus=8 \
  --set /policy/train/dp=4 --set '/policy/sync={"mode":"async","staleness":2,"continuous":true,"partial_rollout":0.5}'
contains continuous-partial-why "$tmp/err" "continuous generation and partial_rollout both decide when a step's rollout ends; set one"
expect continuous-inert 0 "$arlsim" check disaggregated-async --set /policy/sync/continuous=true
contains continuous-inert-why "$tmp/err" "the engines hold one step's trajectories at a time (a staleness of 1, or continuous 1), so continuous generation changes nothing"
expect continuous-too-many 2 "$arlsim" check disaggregated-async --set /policy/sync/continuous=3
contains continuous-too-many-why "$tmp/err" "/policy/sync/continuous: the engines can hold at most staleness + 1 = 2 steps' batches"
expect continuous-batches 0 "$arlsim" check disaggregated-async --set /policy/sync/continuous=2
expect kv-cache-needs-continuous 2 "$arlsim" check disaggregated-async --set '/policy/sync/kv_cache="keep"'
contains kv-cache-needs-continuous-why "$tmp/err" "/policy/sync/kv_cache: what the running requests keep across a weight update applies to continuous generation"
expect kv-cache-value 2 "$arlsim" check disaggregated-async --set '/policy/sync/kv_cache="kep"'
contains kv-cache-value-why "$tmp/err" 'did you mean "keep"?'
expect continuous-plan 0 "$arlsim" plan default --steps 1 --set '/policy/placement="disaggregated"' --set /policy/rollout_gpus=8 \
  --set /policy/train/dp=4 --set '/policy/sync={"mode":"async","staleness":2,"continuous":true,"kv_cache":"keep"}' \
  --out "$tmp/cont-plan.json"
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))['scenario']['policy']['sync']
assert s.get('continuous') is True and s.get('staleness') == 2 and s.get('kv_cache') == 'keep', s
" "$tmp/cont-plan.json" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL continuous-plan-kept"; }

# GB200 NVL72: a rack's NVLink domain is one node, used whole or in part; no more than an NVL576.
cat >"$tmp/gb200.json" <<'JSON'
{"format": "arlsim-scenario/1", "name": "gb200-part", "extends": "default",
 "cluster": {"extends": "gb200-nvl72", "gpu": "gb200", "nodes": 1, "gpus_per_node": 64, "host_memory": "15360 GB"},
 "policy": {"train": {"tp": 8, "dp": 8}, "rollout": {"tp": 8}}}
JSON
expect gb200-rack 0 "$arlsim" check "$tmp/gb200.json"
contains gb200-rack-what "$tmp/out" "on 1 x 64 gb200"
expect gb200-too-wide 2 "$arlsim" check "$tmp/gb200.json" --set /cluster/gpus_per_node=577
contains gb200-too-wide-why "$tmp/err" "/cluster/gpus_per_node: expected an integer between 1 and 576, got 577"
expect gb200-straddle 0 "$arlsim" check "$tmp/gb200.json" --set /cluster/gpus_per_node=72 --set /cluster/nodes=2 \
  --set /policy/rollout/tp=16 --set /policy/train/dp=18 --set /workload/prompts_per_step=72 --set /workload/mini_batches=1
contains gb200-straddle-why "$tmp/err" "/policy/rollout: engines of 16 GPUs do not tile nodes of 72: some straddle two nodes"
expect gb200-hosts-whole 2 "$arlsim" check "$tmp/gb200.json" --set /cluster/gpus_per_host=5
contains gb200-hosts-whole-why "$tmp/err" "/cluster/gpus_per_host: a node's 64 GPUs are not whole hosts of 5"
expect gb200-export-hosts 0 "$arlsim" export "$tmp/gb200.json" --format slurm
contains gb200-export-hosts-why "$tmp/err" "a node here is an NVLink domain of 64 GPUs, hosts of 4"
expect gb200-no-pageable 2 "$arlsim" check "$tmp/gb200.json" --set '/policy/weight_sync={"state": "to-cpu"}'
contains gb200-no-pageable-why "$tmp/err" "GPU profile gb200 gives no rates for it"

# A mini-batch that does not split evenly over dp: refused, but for first-fit packing into token
# budgets (AReaL's split by tokens), where the ranks take their samples balanced by tokens.
expect uneven-dp 2 "$arlsim" check default --set /cluster/nodes=3 --set /policy/train/dp=12
contains uneven-dp-why "$tmp/err" "/policy/train/dp: a mini-batch of 128 trajectories does not split evenly over dp = 12"
expect uneven-dp-fit 0 "$arlsim" simulate default --set /cluster/nodes=3 --set /policy/train/dp=12 \
  --set '/policy/train/packing="fit"' --set /policy/train/max_tokens_per_gpu=32768 --steps 1:1
contains uneven-dp-fit-why "$tmp/err" "the ranks take 10 or 11, balanced by tokens, as AReaL splits a batch"
expect uneven-dp-in-order 0 "$arlsim" check default --set /cluster/nodes=3 --set /policy/train/dp=12 \
  --set '/policy/train/packing="fit"' --set /policy/train/max_tokens_per_gpu=32768 --set /policy/balance_batch=false
contains uneven-dp-in-order-why "$tmp/err" "the ranks take 10 or 11, in order (balance_batch is false)"
expect fewer-than-dp 2 "$arlsim" check default --set /cluster/nodes=3 --set /policy/train/dp=12 \
  --set '/policy/train/packing="fit"' --set /policy/train/max_tokens_per_gpu=32768 --set /workload/mini_batches=64
contains fewer-than-dp-why "$tmp/err" "/policy/train/dp: a mini-batch of 8 trajectories does not split evenly over dp = 12"

# capacity on a GPU that comes in NVLink domains of several hosts (GB200 NVL72): its system's
# domains, 128 GPUs as two of 64; a profile whose system cannot be read is refused.
expect capacity-system 0 "$arlsim" capacity default --gpus gb200 --nodes 16 --placements colocated --steps 10 --confirm 0
contains capacity-system-shape "$tmp/out" "gb200            2    128  colocated"
contains capacity-system-note "$tmp/out" "gb200: nodes are NVLink domains of gb200-nvl72"
sed 's/"system": "gb200-nvl72"/"system": "no-such-rack"/' "$(dirname "$0")/../../calib/profiles/gb200.json" >"$tmp/rackless.json"
expect capacity-system-missing 2 "$arlsim" capacity default --gpus "$tmp/rackless.json" --nodes 2 --placements colocated --steps 10
contains capacity-system-missing-why "$tmp/err" 'rackless.json:6:13: /system: unknown cluster preset "no-such-rack"'

# capacity's CSV counts the nodes built too; fewer GPUs than a host make a domain of part of one;
# a system named by file is read beside its profile; a GPU without a system on a scenario whose
# nodes are another's domains says so.
"$arlsim" capacity default --gpus gb200 --nodes 16 --placements colocated --steps 10 --confirm 0 --csv >"$tmp/cap.csv"
contains capacity-system-csv "$tmp/cap.csv" "gb200,2,128,colocated"
printf '%s\n' '{"format": "arlsim-scenario/1", "extends": "default", "cluster": {"gpus_per_node": 2, "nodes": 8}}' >"$tmp/pairs.json"
expect capacity-system-part-host 0 "$arlsim" capacity "$tmp/pairs.json" --gpus gb200 --nodes 1 --placements colocated --steps 10 --confirm 0
contains capacity-system-part-host-row "$tmp/out" "gb200            1      2  colocated"
mkdir -p "$tmp/hw"
sed 's/"system": "gb200-nvl72"/"system": "rack.json"/' "$(dirname "$0")/../../calib/profiles/gb200.json" >"$tmp/hw/gb.json"
cp "$(dirname "$0")/../../scenarios/clusters/gb200-nvl72.json" "$tmp/hw/rack.json"
expect capacity-system-file 0 "$arlsim" capacity default --gpus "$tmp/hw/gb.json" --nodes 2 --placements colocated --steps 10 --confirm 0
contains capacity-system-file-row "$tmp/out" "gb.json     1     16  colocated"
expect check-system-file 0 "$arlsim" check "$tmp/hw/gb.json"
expect check-system-missing 2 "$arlsim" check "$tmp/rackless.json"
contains check-system-missing-why "$tmp/err" '/system: unknown cluster preset "no-such-rack"'
printf '%s\n' '{"format": "arlsim-scenario/1", "extends": "default", "cluster": {"extends": "gb200-nvl72", "nodes": 1},
 "policy": {"train": {"dp": 36}}, "workload": {"prompts_per_step": 72, "mini_batches": 1}}' >"$tmp/on-gb200.json"
expect capacity-no-system 0 "$arlsim" capacity "$tmp/on-gb200.json" --gpus h800-sxm --nodes 1 --placements colocated --steps 10 --confirm 0
contains capacity-no-system-note "$tmp/out" "h800-sxm: its profile names no system: it runs in the scenario's nodes, NVLink domains of gb200-nvl72"
# An H100 in a scenario of GB200 racks comes in its own 8-GPU servers (its profile's system), not
# in the racks' NVLink domain of 72; between 8-GPU servers the scenario's nodes stay.
expect capacity-own-servers 0 "$arlsim" capacity "$tmp/on-gb200.json" --gpus h100-sxm --nodes 1 --placements colocated --steps 10 --confirm 0
contains capacity-own-servers-row "$tmp/out" "h100-sxm         9     72  colocated"
# Padded tensors: the planner leaves context parallelism out (verl refuses it without padding
# removal), and its memory estimate keeps the confirmed runs free of OOMs.
expect capacity-padded 0 "$arlsim" capacity default --nodes 2 --placements colocated --steps 10 --set '/workload/padding={"policy":"limits"}'
if grep -qE "^h100-sxm .* cp[0-9]" "$tmp/out"; then failed=$((failed + 1)); echo "FAIL capacity-padded-no-cp"; else passed=$((passed + 1)); fi
if grep -q "OOM" "$tmp/out"; then failed=$((failed + 1)); echo "FAIL capacity-padded-confirmed"; else passed=$((passed + 1)); fi
# whatif's analytic figures of a variant that does not fit are withheld, as a stopped run's.
expect whatif-analytic-oom 0 "$arlsim" whatif default --steps 1:1 --analytic --vary '/workload/padding={"policy":"removed"},{"policy":"limits"}'
if grep -qE "^step time mean \(s\) +[0-9.]+ +-$" "$tmp/out"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL whatif-analytic-oom-withheld"; fi
# A configuration that cannot be built still says the nodes and the split it would have had.
expect capacity-unbuilt-shape 0 "$arlsim" capacity "$tmp/on-gb200.json" --gpus h100-sxm --nodes 1 --placements disaggregated:0.4 --steps 10 --confirm 0
contains capacity-unbuilt-shape-row "$tmp/out" "h100-sxm         9     72  disagg 44%           -"
contains capacity-own-servers-note "$tmp/out" "h100-sxm: nodes are NVLink domains of dgx-h100"
expect capacity-servers-stay 0 "$arlsim" capacity default --gpus h200-sxm --nodes 2 --placements colocated --steps 10 --confirm 0 --set '/cluster/network/nic_bandwidth="100 Gbps"'
if grep -q "hgx-h200" "$tmp/out"; then failed=$((failed + 1)); echo "FAIL capacity-servers-stay-note"; else passed=$((passed + 1)); fi

# capacity's flags within range; a disaggregated share split in whole nodes says what it became;
# rack-scale scenarios: a mini-batch smaller than the GPUs takes more model parallelism, and a
# disaggregated split within one rack goes in whole hosts; a row's reason carries errors only.
expect capacity-threads-zero 2 "$arlsim" capacity default --threads 0
contains capacity-threads-zero-why "$tmp/err" "--threads must be 1 to 1024, got 0"
expect capacity-threads-huge 2 "$arlsim" capacity default --threads 100000
expect capacity-nodes-huge 2 "$arlsim" capacity default --nodes 100000
contains capacity-nodes-huge-why "$tmp/err" "--nodes: 100000 is more than a cluster may have (65536)"
expect capacity-price-huge 2 "$arlsim" capacity default --price h100-sxm=1e308
contains capacity-price-huge-why "$tmp/err" "USD a GPU-hour is more than a profile may say (10000)"
expect capacity-share-rounded 0 "$arlsim" capacity default --nodes 4 --placements disaggregated:0.9 --steps 10 --confirm 0
contains capacity-share-rounded-row "$tmp/out" "disagg 75%"
contains capacity-share-rounded-note "$tmp/out" "disaggregated:0.9 splits in whole nodes: e.g. 24 of 32 h100-sxm GPUs roll out (75%)"
"$arlsim" capacity default --nodes 4 --placements disaggregated:0.9 --steps 10 --confirm 0 --json >"$tmp/share.json"
contains capacity-share-rounded-json "$tmp/share.json" '"rollout_gpus": 24'
# Settings a scenario's other settings make unused are warned about.
expect check-eager-dispatch-unused 0 "$arlsim" check default --set '/workload/engine/eager_dispatch="5 us"'
contains check-eager-dispatch-unused-why "$tmp/err" "/workload/engine/eager_dispatch: the dispatch prices eager mode, and enforce_eager is off"
expect check-micro-batch-unused 0 "$arlsim" check default --set /policy/train/micro_batch=4
contains check-micro-batch-unused-why "$tmp/err" "/policy/train/micro_batch: a token budget (max_tokens_per_gpu) makes the micro-batches"
expect check-offload-params-zero1 0 "$arlsim" check default --set /policy/train/offload_params=true
contains check-offload-params-zero1-why "$tmp/err" "/policy/train/offload_params: DeepSpeed (offload_param) and FSDP (CPU offload) offload ZeRO-3's parameter shards"
# A share goes to the nearest whole nodes that leave the other side one; a count or a placement
# given twice is refused, as a GPU is.
expect capacity-share-nearest 0 "$arlsim" capacity default --nodes 4 --placements disaggregated:0.49 --steps 10 --confirm 0
if grep -qE "^h100-sxm +4 +32  disagg 50%" "$tmp/out"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL capacity-share-nearest-row"; fi
expect capacity-nodes-twice 2 "$arlsim" capacity default --nodes 2,2 --steps 10
contains capacity-nodes-twice-why "$tmp/err" "--nodes names 2 twice"
expect capacity-placements-twice 2 "$arlsim" capacity default --placements disaggregated,disaggregated:0.5 --steps 10
contains capacity-placements-twice-why "$tmp/err" "--placements names disaggregated:0.5 twice"
# Shares that whole nodes round alike build one cluster: one row, one line naming both.
expect capacity-share-same-split 0 "$arlsim" capacity default --nodes 4 --placements disaggregated:0.55,disaggregated:0.6 --steps 10 --confirm 0
if [ "$(grep -cE '^h100-sxm +4 +32  disagg 50%' "$tmp/out")" = 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL capacity-share-same-split-one-row"; fi
contains capacity-share-same-split-note "$tmp/out" "disaggregated:0.55 and disaggregated:0.6 split in whole nodes: e.g. 16 of 32 h100-sxm GPUs roll out (50%)"
"$arlsim" capacity default --nodes 4 --placements disaggregated:0.55,disaggregated:0.6 --steps 10 --confirm 0 --json >"$tmp/same.json"
if [ "$(grep -c '"rollout_gpus": 16' "$tmp/same.json")" = 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL capacity-share-same-split-json"; fi
expect capacity-rack-dp 0 "$arlsim" capacity "$tmp/on-gb200.json" --nodes 32 --placements colocated --steps 10 --confirm 0
if grep -qE "^gb200 +32 +2304  colocated .* rollout tp" "$tmp/out"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL capacity-rack-dp-row"; fi
expect capacity-rack-hosts 0 "$arlsim" capacity "$tmp/on-gb200.json" --nodes 1 --placements disaggregated --steps 10 --confirm 0
if grep -qE "^gb200 +1 +72  disagg 50% .* rollout tp" "$tmp/out"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL capacity-rack-hosts-row"; fi
expect capacity-reason-errors 0 "$arlsim" capacity default --gpus l40s --nodes 2 --placements colocated --steps 10 --confirm 0
if grep -q "warning:" "$tmp/out"; then failed=$((failed + 1)); echo "FAIL capacity-reason-errors-only"; else passed=$((passed + 1)); fi
contains capacity-reason-errors-why "$tmp/out" "a cluster of 2 nodes needs a NIC bandwidth"
expect trace-gen-mean-huge 2 "$arlsim" trace gen --preset code-tool --steps 3 --response-mean 1e308 --out "$tmp/huge.jsonl"
contains trace-gen-mean-huge-why "$tmp/err" '--response-mean: expected values between 0 and 16777216, got "1e308"'

# A scenario extending another whose cluster extends a preset of its own: the cluster is that
# preset's (72 GPUs a node, GB200), not the base scenario's cluster with the preset merged under it.
cat >"$tmp/nested-extends.json" <<'EOF'
{"format": "arlsim-scenario/1", "extends": "default", "cluster": {"extends": "gb200-nvl72", "nodes": 1},
 "policy": {"train": {"dp": 36}}, "workload": {"prompts_per_step": 72, "mini_batches": 1}}
EOF
expect nested-extends 0 "$arlsim" check "$tmp/nested-extends.json" --resolved
contains nested-extends-gpu "$tmp/out" '"name": "gb200"'
contains nested-extends-node "$tmp/out" '"gpus_per_node": 72'
# ...and keeps none of default's tool pools, which the pooled tool policy then has none of.
contains nested-extends-pools "$tmp/err" "the pooled tool policy schedules tool actions on tool pools, and the cluster has none"

# A generated trace too large for memory is refused before it is drawn, with its estimate and the
# field to change; check does not try a first step that would take minutes.
expect huge-trace 2 "$arlsim" simulate default --set /workload/prompts_per_step=1000000 --max-memory 4GB
contains huge-trace-why "$tmp/err" "the generated trace alone needs about 31.41 GiB of memory"
contains huge-trace-limit "$tmp/err" "more than the 3.73 GiB of --max-memory"
contains huge-trace-field "$tmp/err" "fewer trajectories a step (/workload/prompts_per_step)"
expect huge-trace-capacity 2 "$arlsim" capacity default --set /workload/prompts_per_step=10000000
contains huge-trace-capacity-why "$tmp/err" "the generated trace alone needs about"
expect huge-trace-check 0 "$arlsim" check default --set /workload/prompts_per_step=1000000
contains huge-trace-check-note "$tmp/err" "its first step (step 1, 8000000 trajectories) is not tried here"

# Errors at the field the user gave: an uneven last stage alone, an empty system, a kind without presets.
expect last-stage-blame 2 "$arlsim" simulate default --set /policy/train/pp=4 --set /policy/train/dp=2 --set /policy/train/last_stage_layers=35
contains last-stage-blame-where "$tmp/err" "--set /policy/train/last_stage_layers=35: /policy/train/last_stage_layers:"
sed 's/"system": "gb200-nvl72"/"system": ""/' "$(dirname "$0")/../../calib/profiles/gb200.json" >"$tmp/empty-system.json"
expect empty-system 2 "$arlsim" check "$tmp/empty-system.json"
contains empty-system-why "$tmp/err" "/system: must not be empty"
printf '%s\n' '{"format": "arlsim-scenario/1", "extends": "default", "policy": {"extends": "default"}}' >"$tmp/policy-preset.json"
expect no-policy-presets 2 "$arlsim" check "$tmp/policy-preset.json"
contains no-policy-presets-why "$tmp/err" 'unknown policy preset "default" (and no such file); there are no policy presets: name a file'

# A reward model too large for its engine's GPU is an OOM in the reward stage, not a crash; a dense
# critic beside an expert-parallel actor trains data-parallel; the critic's key-value heads split
# over tp as the actor's must.
expect reward-model-oom 0 "$arlsim" simulate default --steps 1 --set '/workload/reward={"kind": "model", "model": "qwen2.5-32b"}'
contains reward-model-oom-why "$tmp/out" "STOPPED at step 1 (1 of 1): OOM in reward"
expect reward-model-check 0 "$arlsim" check default --set '/workload/reward={"kind": "model", "model": "deepseek-v3"}'
contains reward-model-check-why "$tmp/err" "step 1: reward does not fit"
expect dense-critic-ep 0 "$arlsim" simulate default --steps 1 --set /model=qwen3-30b-a3b --set /policy/train/ep=2 \
  --set /workload/algorithm=ppo --set /workload/critic=qwen3-8b
contains dense-critic-ep-stage "$tmp/out" "critic "
# Megatron refuses MoE under tp without sequence parallelism: said, and priced as with it.
expect moe-tp-no-sp 0 "$arlsim" check default --set /model=qwen3-30b-a3b --set /policy/train/ep=2 --set /policy/train/tp=2 \
  --set /policy/train/dp=8 --set /policy/train/sequence_parallel=false
contains moe-tp-no-sp-why "$tmp/err" "/policy/train/sequence_parallel: Megatron refuses a mixture-of-experts layer under tp > 1 without sequence parallelism"
expect moe-tp-no-sp-no-ep 0 "$arlsim" check default --set /model=qwen3-30b-a3b --set /policy/train/sequence_parallel=false
contains moe-tp-no-sp-no-ep-why "$tmp/err" "Megatron refuses a mixture-of-experts layer under tp > 1 without sequence parallelism"
# A training stage's tp group within a node; MoE under tp without sequence parallelism warned there too.
expect stage-tp-spans-node 2 "$arlsim" estimate scenarios/stages/train-llama-3.1-8b-h100.json --set /gpus_per_node=3 \
  --set '/layout={"tp": 4, "dp": 2}'
contains stage-tp-spans-node-why "$tmp/err" "/layout: tp = 4 spans more than the 3 GPUs of one node"
expect stage-moe-no-sp 0 "$arlsim" estimate scenarios/stages/train-llama-3.1-8b-h100.json --set /model=qwen3-30b-a3b \
  --set '/layout={"tp": 2, "dp": 4, "ep": 8}'
contains stage-moe-no-sp-why "$tmp/err" "/layout/sequence_parallel: Megatron refuses a mixture-of-experts layer under tp > 1"
expect stage-dense-ep 2 "$arlsim" estimate scenarios/stages/train-llama-3.1-8b-h100.json --set '/layout={"tp": 1, "dp": 8, "ep": 8}'
contains stage-dense-ep-why "$tmp/err" "expert parallelism (ep = 8) needs a mixture-of-experts model"
# Both ways of skipping the old-log-prob pass at once: said.
expect force-and-rollout-logprobs 0 "$arlsim" check default --set /workload/mini_batches=1 --set /workload/force_on_policy_ratio=true \
  --set /workload/use_rollout_log_probs=true
contains force-and-rollout-logprobs-why "$tmp/err" "/workload/force_on_policy_ratio: with use_rollout_log_probs too"
# A pass in its own layout keeps the training's ep over its own ranks: it must divide them.
expect moe-pass-ep 2 "$arlsim" simulate default --steps 1 --set /model=qwen3-30b-a3b --set /policy/train/ep=4 \
  --set '/policy/old_logprob={"tp": 1, "pp": 8, "dp": 2}'
contains moe-pass-ep-why "$tmp/err" "/policy/old_logprob: the training's ep = 4 must divide this pass's tp x dp x cp = 2"
expect dense-critic-ep-plan 0 "$arlsim" plan default --steps 1:1 --set /model=qwen3-30b-a3b --set /policy/train/ep=2 \
  --set /workload/algorithm=ppo --set /workload/critic=qwen3-4b --set /workload/prompts_per_step=8 --set /policy/train/zero=3 \
  --set /policy/train/offload_optimizer=true
expect reward-pools-summed 0 "$arlsim" simulate default --steps 1 --set '/workload/reward={"kind": "model", "model": "qwen3-4b"}' \
  --set '/cluster/pools=[{"name": "a", "kind": "reward_server", "gpus": 4}, {"name": "b", "kind": "reward_server", "gpus": 2}]' \
  --set '/policy/tool_policy="static"'
contains reward-pools-summed-hours "$tmp/out" "(the reward model's 6 GPUs included)"
expect critic-kv-heads 2 "$arlsim" check default --set /policy/train/tp=8 --set /policy/train/dp=2 --set /workload/algorithm=ppo \
  --set /workload/critic=qwen3-30b-a3b
contains critic-kv-heads-why "$tmp/err" "the critic's 4 key-value heads do not split over tp = 8"

# A trace prompt with no room for a response within the context limit is refused (vLLM refuses
# it; frameworks filter it), not simulated as a rollout that costs nothing; whatif with no step in
# range is refused as simulate is.
sed -n 1p traces/code-tool.jsonl >"$tmp/overlong.jsonl"
printf '%s\n' '{"step": 1, "prompt_id": 0, "sample": 0, "turns": [{"prefill_tokens": 30000, "gen_tokens": 100}]}' >>"$tmp/overlong.jsonl"
expect trace-overlong-prompt 2 "$arlsim" simulate default --trace "$tmp/overlong.jsonl" --set /trace_sets_batch=true
contains trace-overlong-prompt-why "$tmp/err" "1 trajectory's prompt leaves no room for a response within /workload/max_context_tokens (20480)"
expect whatif-no-steps 2 "$arlsim" whatif default --vary /policy/rollout/tp=1,2 --steps 9999
contains whatif-no-steps-why "$tmp/err" "the trace has no step in the requested range"

# --out: every file a command writes is checked before it runs (a folder in a file's place), and
# an empty --out is refused.
mkdir -p "$tmp/blocked/summary.json"
expect out-blocked 2 "$arlsim" simulate default --steps 1 --out "$tmp/blocked"
contains out-blocked-why "$tmp/err" "summary.json': it is a folder"
expect out-empty 2 "$arlsim" simulate default --steps 1 --out ""
contains out-empty-why "$tmp/err" "--out is empty"

# A reward model's GPUs (its reward_server pool's) are paid for the whole run: in the GPU-hours.
expect reward-gpus 0 "$arlsim" simulate default --steps 1 --set '/workload/reward={"kind": "model", "model": "qwen3-4b"}' \
  --set '/cluster/pools=[{"name": "python", "kind": "sandbox", "count": 256}, {"name": "rm", "kind": "reward_server", "gpus": 4}]'
contains reward-gpus-hours "$tmp/out" "(the reward model's 4 GPUs included)"

# Options that would change nothing are refused, not ignored; a bare --max-memory count is bytes.
expect vary-twice 2 "$arlsim" whatif default --vary /policy/rollout/tp=1,2 --vary /policy/rollout/tp=4
contains vary-twice-why "$tmp/err" "--vary /policy/rollout/tp is given twice"
expect vary-and-set 2 "$arlsim" whatif default --vary /policy/rollout/tp=1,2 --set /policy/rollout/tp=4
contains vary-and-set-why "$tmp/err" "is both set (--set) and varied (--vary)"
expect export-framework-misused 2 "$arlsim" export default --format verl --framework openrlhf
contains export-framework-misused-why "$tmp/err" "--framework chooses what a Slurm script (--format slurm) launches"
expect export-version-misused 2 "$arlsim" export default --format verl --framework-version 0.10.2
expect seed-negative 2 "$arlsim" simulate default --steps 1 --seed -3
expect seed-with-trace 2 "$arlsim" simulate default --trace traces/code-tool.jsonl --seed 5
contains seed-with-trace-why "$tmp/err" "--seed draws a generated trace"
expect timeline-without-out 2 "$arlsim" simulate default --steps 1 --timeline-steps 1
contains timeline-without-out-why "$tmp/err" "give --out"
expect check-trace-set 2 "$arlsim" check traces/earl-game.jsonl --kind trace --set /x=1
expect max-memory-bytes 0 "$arlsim" simulate default --steps 1 --max-memory 100000000000

# whatif's analytic steps end where they end (end_s), as simulated ones do.
"$arlsim" whatif default --vary /policy/rollout/tp=1,2 --steps 1 --analytic --json >"$tmp/analytic.json"
if python3 -c "import json, sys; s = json.load(open(sys.argv[1]))[0]['steps'][0]; assert s['end_s'] > 0 and abs(s['end_s'] - s['start_s'] - s['time_s']) < 1e-6" "$tmp/analytic.json"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL whatif-analytic-end"; fi

# A trace that sets the batch with a step that does not split into the mini-batches says so.
sed -n '1,12p' traces/code-tool.jsonl >"$tmp/odd.jsonl"
expect odd-mini-batches 0 "$arlsim" simulate default --trace "$tmp/odd.jsonl" --set /trace_sets_batch=true --set /workload/mini_batches=4
contains odd-mini-batches-why "$tmp/err" "1 step's trajectories do not split evenly into 4 mini-batches (the first, step 1, has 11)"

# estimate: one iteration's batch within the engine's limits; requests within the model's context.
expect estimate-seqs-limit 2 "$arlsim" estimate scenarios/stages/decode-qwen2.5-72b-h100.json --set /engine/max_num_seqs=1
contains estimate-seqs-limit-why "$tmp/err" "/batch: 32 sequences in one iteration, more than the engine's max_num_seqs (1)"
expect estimate-context 2 "$arlsim" estimate scenarios/stages/rollout-qwen3-8b-h100.json \
  --set '/requests=[{"input_tokens": 100, "output_tokens": 100000}]'
contains estimate-context-why "$tmp/err" "longer than the model's context of 40960"

# An error a file extending a preset made in the preset's fields says where to fix it.
printf '%s\n' '{"format": "arlsim-scenario/1", "extends": "default", "policy": {"train": {"tp": 1, "dp": 16}}}' >"$tmp/ext-tp1.json"
expect preset-field-fix 2 "$arlsim" check "$tmp/ext-tp1.json"
contains preset-field-fix-why "$tmp/err" "it needs tp > 1; the preset as $tmp/ext-tp1.json uses it; set the field there"

# A GPU that extends a profile of its own inside an extending document is that profile, not the
# base's GPU merged under it (no H100 price or power cap on a GB200).
printf '%s\n' "{\"format\": \"arlsim-scenario/1\", \"extends\": \"$tmp/nested-extends.json\", \"cluster\": {\"gpu\": {\"extends\": \"h100-sxm\"}}}" >"$tmp/nested-gpu.json"
expect nested-gpu 0 "$arlsim" check "$tmp/nested-gpu.json" --resolved
contains nested-gpu-name "$tmp/out" '"name": "h100-sxm"'
if grep -q '"name": "gb200"' "$tmp/out"; then failed=$((failed + 1)); echo "FAIL nested-gpu-no-gb200"; else passed=$((passed + 1)); fi
# An override that gives a part another base starts it from that base: --set /model/extends=qwen3-4b
# is Qwen3-4B, as --set /model=qwen3-4b is; the fields of the user's own files stay.
"$arlsim" simulate default --steps 1:1 --set /model/extends=qwen3-4b >"$tmp/ext4b.txt" 2>/dev/null
"$arlsim" simulate default --steps 1:1 --set /model=qwen3-4b >"$tmp/ref4b.txt" 2>/dev/null
same model-extends-override "$tmp/ext4b.txt" "$tmp/ref4b.txt"
expect cluster-extends-override 2 "$arlsim" check "$tmp/nested-extends.json" --set /cluster/extends=dgx-h100
contains cluster-extends-override-why "$tmp/err" "tp x pp x dp x cp = 2 x 1 x 36 x 1 = 72 GPUs, but training has 8"

# ...and keeps a reference the user's own file names in that part (its GPU) and the user's fields.
printf '%s\n' '{"format": "arlsim-scenario/1", "extends": "default", "cluster": {"extends": "dgx-h100", "nodes": 2, "gpu": "h200-sxm"}}' >"$tmp/user-gpu.json"
expect user-gpu-kept 0 "$arlsim" check "$tmp/user-gpu.json" --set /cluster/extends=gb200-nvl72 --set /cluster/gpus_per_node=8
contains user-gpu-kept-what "$tmp/out" "on 2 x 8 h200-sxm"

# Megatron's interleaved schedule needs a multiple of pp micro-batches: without a token budget the
# remedy is one; with one, a rank that has fewer samples than pp needs more samples.
expect vpp-few-samples 0 "$arlsim" simulate default --steps 1:1 --set /policy/train/pp=2 --set /policy/train/vpp=2 \
  --set /policy/train/dp=4 --set /policy/train/max_tokens_per_gpu=65536 --set /workload/prompts_per_step=4 \
  --set /workload/samples_per_prompt=1 --set /workload/mini_batches=1
contains vpp-few-samples-why "$tmp/out" "a data rank has 1 micro-batch in a mini-batch"
contains vpp-few-samples-remedy "$tmp/out" "fewer mini-batches or a smaller dp"

# H800: an H100 with NVLink at 200 GB/s a direction; the same step trains slower where its tensor parallelism crosses NVLink.
"$arlsim" simulate default --steps 1 --json >"$tmp/h100.json" 2>/dev/null
"$arlsim" simulate default --steps 1 --json --set '/cluster/gpu="h800-sxm"' >"$tmp/h800.json" 2>/dev/null
python3 -c "
import json, sys
a, b = (json.load(open(f))['steps'][0]['stages'] for f in sys.argv[1:])
assert b['train'] > a['train'] and b['rollout'] >= a['rollout'], (a, b)
" "$tmp/h100.json" "$tmp/h800.json" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL h800-slower-link"; }

report
