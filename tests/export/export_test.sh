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
golden default.slurm-openrlhf.sh default --format slurm --framework openrlhf
golden disaggregated-async.slurm-slime.sh disaggregated-async --format slurm --framework slime
contains export-slurm-submit "$here/golden/default.slurm-openrlhf.sh" 'export RAY_DASHBOARD="http://$head_ip:8265"'
golden default.openrlhf.sh default --format openrlhf
golden default.openrlhf-0.10.1.sh default --format openrlhf --framework-version 0.10.1
golden disaggregated-async.openrlhf.sh disaggregated-async --format openrlhf
golden default.slime.sh default --format slime
golden disaggregated-async.slime.sh disaggregated-async --format slime
golden disaggregated-async.areal.yaml disaggregated-async --format areal
golden moe-ep-pp.slime.sh default --format slime --set /model=qwen3-30b-a3b --set /policy/train/tp=2 --set /policy/train/pp=2 \
  --set /policy/train/dp=4 --set /policy/train/ep=4 --set /policy/rollout/tp=4 --set /policy/rollout/ep=4
golden moe-ep-pp.openrlhf.sh default --format openrlhf --set /model=qwen3-30b-a3b --set /policy/train/tp=2 --set /policy/train/pp=2 \
  --set /policy/train/dp=4 --set /policy/train/ep=4 --set /policy/rollout/tp=4 --set /policy/rollout/ep=4
golden moe-ep-pp.areal.yaml disaggregated-async --format areal --set /model=qwen3-30b-a3b --set /policy/train/tp=2 \
  --set /policy/train/pp=2 --set /policy/train/dp=4 --set /policy/train/ep=4 --set /policy/rollout/tp=4
contains export-moe-slime "$here/golden/moe-ep-pp.slime.sh" "--expert-model-parallel-size 4"
contains export-moe-areal "$here/golden/moe-ep-pp.areal.yaml" 'backend: "megatron:d4p2t2c1e4"'
contains export-slime-async "$here/golden/disaggregated-async.slime.sh" "python3 train_async.py"
contains export-areal-backends "$here/golden/disaggregated-async.areal.yaml" 'backend: "megatron:d8p1t2c1e1"'
contains export-openrlhf-flat-note "$here/golden/default.openrlhf-0.10.1.sh" "--train.max_tokens_per_gpu: no flag before OpenRLHF 0.10.2"
contains export-openrlhf-async "$here/golden/disaggregated-async.openrlhf.sh" "--train.async_enable"
"$arlsim" export default --format verl --set /policy/train/tp=1 --set /policy/train/dp=16 --set /policy/train/zero=3 \
  --set /policy/train/sequence_parallel=false --set '/policy/train/grad_reduce_dtype="bf16"' >"$tmp/bf16.sh" 2>/dev/null
contains export-verl-bf16-reduction "$tmp/bf16.sh" "++actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype=bf16"
# imports_back NAME LAUNCH FRAMEWORK CHECK: imports the launch and asserts CHECK (Python, on the
# training layout `t`) of the scenario it writes.
imports_back() {
  if "$arlsim" import "$2" --from "$3" --model qwen3-8b --out "$2.json" 2>/dev/null &&
    python3 -c "import json, sys; t = json.load(open(sys.argv[1]))['policy']['train']; assert $4" "$2.json"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAIL $1"
  fi
}
imports_back import-verl-bf16-reduction "$tmp/bf16.sh" verl "t['grad_reduce_dtype'] == 'bf16'"
"$arlsim" export default --format slime --set '/policy/train/grad_reduce_dtype="fp32"' >"$tmp/fp32.sh" 2>/dev/null
contains export-slime-fp32-reduction "$tmp/fp32.sh" "--accumulate-allreduce-grads-in-fp32"
# What a framework's launch cannot carry is said, not dropped: ZeRO-3 and offloading on slime's
# Megatron-LM, speculative decoding, engines on part of the rollout GPUs; PPO takes slime's ppo
# estimator.
"$arlsim" export default --format slime --set /policy/train/zero=3 --set /policy/train/offload_optimizer=true >/dev/null 2>"$tmp/slime-z3.err"
contains export-slime-zero3-note "$tmp/slime-z3.err" "ZeRO 3: slime trains with Megatron-LM's distributed optimizer"
contains export-slime-offload-note "$tmp/slime-z3.err" "the optimizer offloaded to the CPU: pass Megatron-LM's --optimizer-cpu-offload"
"$arlsim" export default --format slime --set /workload/algorithm=ppo --set /workload/critic=qwen3-8b >"$tmp/slime-ppo.sh" 2>"$tmp/slime-ppo.err"
contains export-slime-ppo "$tmp/slime-ppo.sh" "--advantage-estimator ppo"
contains export-slime-ppo-critic "$tmp/slime-ppo.err" "PPO's critic: set slime's critic options"
"$arlsim" export default --format verl --set '/workload/engine/speculative={"mean_accepted_tokens": 2.5, "draft_tokens": 4}' \
  >/dev/null 2>"$tmp/spec.err"
contains export-speculative-note "$tmp/spec.err" "speculative decoding (4 draft tokens)"
"$arlsim" export default --format verl --set /policy/rollout/replicas=6 >/dev/null 2>"$tmp/replicas.err"
contains export-replicas-note "$tmp/replicas.err" "6 engines on 12 of the 16 rollout GPUs"

# Import: a count of 0 is refused, a key given twice is said (the last taken).
printf '%s\n' 'python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.n_gpus_per_node=8 trainer.total_training_steps=0' >"$tmp/zero.sh"
"$arlsim" import "$tmp/zero.sh" --from verl --model qwen3-8b --out "$tmp/zero.json" >/dev/null 2>"$tmp/zero.err"
contains import-zero-steps "$tmp/zero.err" "trainer.total_training_steps: expected a whole number of at least 1, got \"0\""
"$arlsim" export default --format verl >"$tmp/twice.sh" 2>/dev/null
printf '  actor_rollout_ref.rollout.tensor_model_parallel_size=1\n' >>"$tmp/twice.sh"
sed -i 's/\(trainer.resume_mode=auto\|trainer.experiment_name=[^ ]*\)$/\1 \\/' "$tmp/twice.sh"
"$arlsim" import "$tmp/twice.sh" --from verl --model qwen3-8b --out "$tmp/twice.json" >/dev/null 2>"$tmp/twice.err"
contains import-twice "$tmp/twice.err" "actor_rollout_ref.rollout.tensor_model_parallel_size: given more than once; the last is taken"

# A launch that makes no valid scenario: each problem at the launch's words that set the field, a
# field the launch did not set by its place in the scenario that was not written.
cat >"$tmp/badtp.sh" <<'LAUNCH'
python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=256 \
  data.max_prompt_length=1024 data.max_response_length=2048 actor_rollout_ref.actor.ppo_mini_batch_size=64 \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=3 \
  trainer.n_gpus_per_node=8 trainer.nnodes=1
LAUNCH
expect import-bad-scenario 2 "$arlsim" import "$tmp/badtp.sh" --from verl --model qwen3-8b --out "$tmp/badtp.json"
contains import-bad-scenario-at-word "$tmp/err" "$tmp/badtp.sh:4: actor_rollout_ref.rollout.tensor_model_parallel_size=3: /policy/rollout/tp: the model's 32 attention heads do not split over tp = 3"
contains import-bad-scenario-parent "$tmp/err" "$tmp/badtp.sh:4: actor_rollout_ref.rollout.tensor_model_parallel_size=3: /policy/rollout: rollout's 8 GPUs"
if grep -q "badtp.json:[0-9]" "$tmp/err"; then failed=$((failed + 1)); echo "FAIL import-bad-scenario-no-unwritten-lines"; else passed=$((passed + 1)); fi
printf '%s\n' 'python3 -m openrlhf.cli.train_ppo_ray --actor.num_nodes 1 --actor.num_gpus_per_node 8 --vllm.num_engines 8 \' \
  '  --vllm.tensor_parallel_size 2 --rollout.batch_size 64 --rollout.n_samples_per_prompt 8 --train.batch_size 256 \' \
  '  --data.max_len 4096 --rollout.max_new_tokens 2048 --train.colocate_all' >"$tmp/engines.sh"
expect import-bad-engines 2 "$arlsim" import "$tmp/engines.sh" --from openrlhf --model qwen3-8b --out "$tmp/engines.json"
contains import-bad-engines-at-word "$tmp/err" "$tmp/engines.sh:1: --vllm.num_engines 8: /policy/rollout/replicas: 8 engines of 2 GPUs need 16 GPUs, but rollout has 8"
# A data-parallel size the launch leaves to its GPUs is blamed on the words that set them.
sed 's/trainer.n_gpus_per_node=8 trainer.nnodes=1/trainer.n_gpus_per_node=6 trainer.nnodes=2/; s/tensor_model_parallel_size=3/tensor_model_parallel_size=2/' "$tmp/badtp.sh" >"$tmp/dp.sh"
expect import-bad-dp 2 "$arlsim" import "$tmp/dp.sh" --from verl --model qwen3-8b --out "$tmp/dp.json"
contains import-bad-dp-at-words "$tmp/err" "trainer.nnodes=2 and $tmp/dp.sh:5: trainer.n_gpus_per_node=6: /policy/train/dp:"

# A key one or two letters from one the reader knows is listed with what it may be a slip of.
sed 's/data.max_response_length=2048/data.max_response_lenght=2048/' "$tmp/badtp.sh" >"$tmp/typo.sh"
"$arlsim" import "$tmp/typo.sh" --from verl --model qwen3-8b --out "$tmp/typo.json" >/dev/null 2>"$tmp/typo.err"
contains import-typo-verl "$tmp/typo.err" "data.max_response_lenght: not modelled by arlsim; did you mean data.max_response_length?"
sed 's/--actor.num_nodes 1/--actor.num_node 1/' "$tmp/engines.sh" >"$tmp/typo2.sh"
"$arlsim" import "$tmp/typo2.sh" --from openrlhf --model qwen3-8b --out "$tmp/typo2.json" >/dev/null 2>"$tmp/typo2.err"
contains import-typo-openrlhf "$tmp/typo2.err" "--actor.num_node: not modelled by arlsim; did you mean --actor.num_nodes?"
printf '%s\n' 'python3 train.py --actor-num-nodes 1 --actor-num-gpus-per-node 8 --tensor-model-paralel-size 2' >"$tmp/typo3.sh"
"$arlsim" import "$tmp/typo3.sh" --from slime --model qwen3-8b --out "$tmp/typo3.json" >/dev/null 2>"$tmp/typo3.err"
contains import-typo-slime "$tmp/typo3.err" "--tensor-model-paralel-size: not modelled by arlsim; did you mean --tensor-model-parallel-size?"
printf '%s\n' 'python3 train.py --actor-num-nodes 1 --use-wandb' >"$tmp/far.sh"
"$arlsim" import "$tmp/far.sh" --from slime --model qwen3-8b --out "$tmp/far.json" >/dev/null 2>"$tmp/far.err"
if grep -q "use-wandb.*did you mean" "$tmp/far.err"; then failed=$((failed + 1)); echo "FAIL import-no-far-guess"; else passed=$((passed + 1)); fi

# verl's FSDP engine computes padded tensors unless use_remove_padding (False by default): import
# says so per model; the Megatron engine packs.
padding_is() {  # padding_is NAME SCENARIO PYTHON-ASSERTION (on p, the workload's padding)
  if python3 -c "import json, sys; p = json.load(open(sys.argv[1]))['workload']['padding']; assert $3, p" "$2"; then
    passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1"; fi
}
sed 's/tensor_model_parallel_size=3/tensor_model_parallel_size=2/' "$tmp/badtp.sh" >"$tmp/pad.sh"
"$arlsim" import "$tmp/pad.sh" --from verl --model qwen3-8b --out "$tmp/pad.json" >/dev/null 2>"$tmp/pad.err"
contains import-padding-default-note "$tmp/pad.err" "use_remove_padding: not given; verl's default (False) computes every sequence padded"
padding_is import-padding-default "$tmp/pad.json" "p == {'policy': 'limits'}"
with_words() {  # with_words NAME BASE WORDS: BASE's launch with WORDS added, into $tmp/NAME.sh, imported (status in $tmp/NAME.status)
  sed "s/trainer.nnodes=1/trainer.nnodes=1 $3/" "$2" >"$tmp/$1.sh"
  "$arlsim" import "$tmp/$1.sh" --from verl --model qwen3-8b --out "$tmp/$1.json" >/dev/null 2>"$tmp/$1.err"
  echo $? >"$tmp/$1.status"
}
with_words packed "$tmp/pad.sh" actor_rollout_ref.model.use_remove_padding=True
padding_is import-padding-removed "$tmp/packed.json" "p['policy'] == 'removed'"
if grep -q "use_remove_padding" "$tmp/packed.err"; then failed=$((failed + 1)); echo "FAIL import-padding-no-note"; else passed=$((passed + 1)); fi
# PPO (GAE, verl's default estimator) pads its critic by its own key; Ulysses needs padding removed.
sed 's/algorithm.adv_estimator=grpo/algorithm.adv_estimator=gae/' "$tmp/packed.sh" >"$tmp/ppo.sh"
"$arlsim" import "$tmp/ppo.sh" --from verl --model qwen3-8b --out "$tmp/ppo.json" >/dev/null 2>"$tmp/ppo.err"
contains import-padding-critic-note "$tmp/ppo.err" "critic.model.use_remove_padding: not given; verl's default (False)"
padding_is import-padding-critic "$tmp/ppo.json" "p == {'policy': 'removed', 'critic': 'limits'}"
with_words ulysses "$tmp/pad.sh" actor_rollout_ref.actor.ulysses_sequence_parallel_size=2
contains import-ulysses-padded-status "$tmp/ulysses.status" "2"
contains import-ulysses-padded-why "$tmp/ulysses.err" "verl refuses Ulysses sequence parallelism without actor_rollout_ref.model.use_remove_padding=True"
printf '%s\n' 'python3 -m verl.trainer.main_ppo trainer.nnodes=1 critic.ppo_mini_batch_sise=16' >"$tmp/critic-typo.sh"
"$arlsim" import "$tmp/critic-typo.sh" --from verl --model qwen3-8b --out "$tmp/critic-typo.json" >/dev/null 2>"$tmp/critic-typo.err"
contains import-typo-critic "$tmp/critic-typo.err" "critic.ppo_mini_batch_sise: not modelled by arlsim; did you mean critic.ppo_mini_batch_size?"

# verl's token budget: its default where dynamic batching has none, refused at 0, unused without
# dynamic batching; strategy=megatron is the Megatron engine.
with_words dyn "$tmp/pad.sh" actor_rollout_ref.actor.use_dynamic_bsz=True
contains import-budget-default "$tmp/dyn.err" "ppo_max_token_len_per_gpu: not given with dynamic batching; verl's default 16384 taken"
with_words zero-budget "$tmp/dyn.sh" actor_rollout_ref.actor.ppo_max_token_len_per_gpu=0
contains import-budget-zero-status "$tmp/zero-budget.status" "2"
contains import-budget-zero-why "$tmp/zero-budget.err" "ppo_max_token_len_per_gpu: expected a whole number of at least 1"
with_words unused-budget "$tmp/pad.sh" actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192
contains import-budget-unused "$tmp/unused-budget.err" "not used: use_dynamic_bsz is off"
# A bad expert tensor parallelism is an error, not also "not given"; a critic key given twice is said unused once.
with_words etp-bad "$tmp/dyn.sh" "actor_rollout_ref.actor.megatron.expert_model_parallel_size=2 actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=0"
contains import-etp-bad-status "$tmp/etp-bad.status" "2"
if grep -q "expert_tensor_parallel_size: not given" "$tmp/etp-bad.err"; then failed=$((failed + 1)); echo "FAIL import-etp-bad-not-given"; else
  passed=$((passed + 1)); fi
with_words critic-twice "$tmp/dyn.sh" "critic.model.path=a critic.model.path=b"
if [ "$(grep -c 'critic.model.path: not used' "$tmp/critic-twice.err")" = 1 ]; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL import-critic-twice-once"; fi
# AReaL says what it does with the old policy's log-probabilities taken without a pass.
"$arlsim" export disaggregated-async --format areal --set /workload/mini_batches=1 --set /workload/force_on_policy_ratio=true \
  >/dev/null 2>"$tmp/areal-force.err"
contains export-areal-force "$tmp/areal-force.err" "AReaL computes them with the actor"
# An estimator arlsim does not model is taken as GRPO, as the message says (no critic).
sed 's/algorithm.adv_estimator=grpo/algorithm.adv_estimator=remax/' "$tmp/dyn.sh" >"$tmp/remax.sh"
"$arlsim" import "$tmp/remax.sh" --from verl --model qwen3-8b --out "$tmp/remax.json" >/dev/null 2>"$tmp/remax.err"
contains import-remax-why "$tmp/remax.err" 'estimator "remax" is not one arlsim models; grpo assumed'
if python3 -c "import json, sys; w = json.load(open(sys.argv[1]))['workload']; assert w['algorithm'] == 'grpo' and 'critic' not in w, w" "$tmp/remax.json"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL import-remax-grpo"; fi
# A critic's keys in a launch without one (GRPO) are said unused, and its budget not taken.
with_words grpo-critic "$tmp/dyn.sh" "critic.ppo_max_token_len_per_gpu=32768 critic.model.path=Qwen\/Qwen3-8B"
contains import-grpo-critic-budget "$tmp/grpo-critic.err" "critic.ppo_max_token_len_per_gpu: not used: grpo has no critic"
contains import-grpo-critic-path "$tmp/grpo-critic.err" "critic.model.path: not used: grpo has no critic"
if python3 -c "import json, sys; t = json.load(open(sys.argv[1]))['policy']['train']; assert 'critic_max_tokens_per_gpu' not in t, t" "$tmp/grpo-critic.json"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL import-grpo-critic-no-budget"; fi
# The experts' tensor parallelism: arlsim prices them whole on each rank under ep (expert tp 1),
# which Megatron takes only when told (its default is the tp size).
sed 's/pipeline_model_parallel_size=2/pipeline_model_parallel_size=2 actor_rollout_ref.actor.megatron.expert_model_parallel_size=4/' \
  "$here/launches/verl-megatron.sh" >"$tmp/etp.sh"
"$arlsim" import "$tmp/etp.sh" --from verl --model qwen3-30b-a3b --out "$tmp/etp.json" >/dev/null 2>"$tmp/etp.err"
contains import-etp-default "$tmp/etp.err" "expert_tensor_parallel_size: not given: Megatron's default is the tensor-parallel size (4)"
sed 's/expert_model_parallel_size=4/expert_model_parallel_size=4 actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=4/' \
  "$tmp/etp.sh" >"$tmp/etp4.sh"
"$arlsim" import "$tmp/etp4.sh" --from verl --model qwen3-30b-a3b --out "$tmp/etp4.json" >/dev/null 2>"$tmp/etp4.err"
contains import-etp-unmodelled "$tmp/etp4.err" "expert_tensor_parallel_size: 4 under expert parallelism: arlsim prices each rank's experts whole"
sed 's/expert_model_parallel_size=4/expert_model_parallel_size=4 actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1/' \
  "$tmp/etp.sh" >"$tmp/etp1.sh"
"$arlsim" import "$tmp/etp1.sh" --from verl --model qwen3-30b-a3b --out "$tmp/etp1.json" >/dev/null 2>"$tmp/etp1.err"
if grep -q expert_tensor "$tmp/etp1.err"; then failed=$((failed + 1)); echo "FAIL import-etp-one-silent"; else passed=$((passed + 1)); fi
# The engines' log-probabilities for the old policy: slime's switch, out and back in.
"$arlsim" export default --format slime --set /workload/use_rollout_log_probs=true >"$tmp/rlp.slime.sh" 2>/dev/null
contains export-slime-rollout-logprobs "$tmp/rlp.slime.sh" "--use-rollout-logprobs"
"$arlsim" import "$tmp/rlp.slime.sh" --from slime --model qwen3-8b --out "$tmp/rlp.json" >/dev/null 2>&1
if python3 -c "import json, sys; assert json.load(open(sys.argv[1]))['workload']['use_rollout_log_probs'] is True" "$tmp/rlp.json"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL import-slime-rollout-logprobs"; fi
# Booleans as OmegaConf reads them, in any case.
with_words upper "$tmp/pad.sh" actor_rollout_ref.model.use_remove_padding=TRUE
padding_is import-boolean-upper "$tmp/upper.json" "p['policy'] == 'removed'"
with_words yes "$tmp/pad.sh" actor_rollout_ref.model.use_remove_padding=yes
padding_is import-boolean-yes "$tmp/yes.json" "p['policy'] == 'removed'"
with_words megatron "$tmp/pad.sh" actor_rollout_ref.actor.strategy=megatron
if python3 -c "import json, sys; s = json.load(open(sys.argv[1])); t = s['policy']['train']; assert t['zero'] == 1 and t['kernels'] == 'fused' and 'padding' not in s['workload'], s" "$tmp/megatron.json"; then
  passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL import-strategy-megatron"; fi
# A critic budget below one sequence is raised for verl, and said.
"$arlsim" export default --format verl --set '/workload/algorithm="ppo"' --set '/workload/critic="qwen3-4b"' \
  --set /policy/train/critic_max_tokens_per_gpu=12345 >/dev/null 2>"$tmp/critic-budget.err"
contains export-critic-budget-raised "$tmp/critic-budget.err" "a critic token budget of 12345 below the longest sequence"

# Uneven pipeline stages go to slime as Megatron-LM's flags, and come back on import.
"$arlsim" export default --format slime --set /policy/train/pp=4 --set /policy/train/dp=2 \
  --set /policy/train/first_stage_layers=12 --set /policy/train/last_stage_layers=12 >"$tmp/uneven.sh" 2>/dev/null
contains export-slime-first-stage "$tmp/uneven.sh" "--decoder-first-pipeline-num-layers 12"
contains export-slime-last-stage "$tmp/uneven.sh" "--decoder-last-pipeline-num-layers 12"
imports_back import-slime-uneven-stages "$tmp/uneven.sh" slime "(t['first_stage_layers'], t['last_stage_layers']) == (12, 12)"
"$arlsim" export default --format openrlhf --set '/policy/train/grad_reduce_dtype="fp32"' >/dev/null 2>"$tmp/fp32.err"
contains export-openrlhf-fp32-note "$tmp/fp32.err" "gradients reduced in fp32: DeepSpeed reduces them in bf16"
"$arlsim" export default --format verl --set '/policy/reference_weights="swapped"' >/dev/null 2>"$tmp/ref.err"
contains export-reference-note "$tmp/ref.err" "reference weights kept in host memory and swapped in"
contains export-notes-stderr "$tmp/disaggregated-async.verl.sh.err" "note: not expressible in verl: dispatch decentralized"
contains export-notes-header "$here/golden/disaggregated-async.verl.sh" "# Not expressible in verl, the closest setting taken:"

# Every shell script parses (bash -n).
for script in "$here"/golden/*.sh; do
  if bash -n "$script" 2>"$tmp/syntax"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL export-syntax $(basename "$script")"; cat "$tmp/syntax"; fi
done

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

# Round trip: import(export(plan)) exports the same launch again (layouts, batch and engine settings).
round_trip() {  # round_trip NAME MODEL EXPORT-ARGS...
  local name="$1" model="$2"
  shift 2
  "$arlsim" export "$@" --format verl >"$tmp/rt-a.sh" 2>/dev/null
  if ! "$arlsim" import "$tmp/rt-a.sh" --from verl --model "$model" --out "$tmp/rt.json" 2>"$tmp/rt.err"; then
    failed=$((failed + 1)); echo "FAIL import-$name"; head -5 "$tmp/rt.err"; return
  fi
  "$arlsim" export "$tmp/rt.json" --format verl >"$tmp/rt-b.sh" 2>/dev/null
  sed -n '/^set -euo/,$p' "$tmp/rt-a.sh" >"$tmp/rt-a.body"
  sed -n '/^set -euo/,$p' "$tmp/rt-b.sh" >"$tmp/rt-b.body"
  same "round-trip-$name" "$tmp/rt-a.body" "$tmp/rt-b.body"
}
round_trip default qwen3-8b default
round_trip disaggregated-async qwen3-8b disaggregated-async
round_trip moe qwen3-30b-a3b default --set /model=qwen3-30b-a3b --set /policy/train/tp=2 --set /policy/train/pp=2 \
  --set /policy/train/dp=4 --set /policy/train/ep=4 --set /policy/rollout/tp=4 --set /policy/rollout/ep=4
round_trip schedule qwen3-8b "$tmp/plan.json"
round_trip to-cpu qwen3-8b default --set '/policy/weight_sync={"state": "to-cpu"}'
round_trip offloaded qwen3-8b default --set /policy/train/offload_optimizer=true
# The same for OpenRLHF (dotted and flat options) and slime (train.py and train_async.py).
round_trip_as() {  # round_trip_as FRAMEWORK NAME EXPORT-ARGS...
  local fw="$1" name="$2"
  shift 2
  "$arlsim" export "$@" --format "$fw" >"$tmp/rt-a.sh" 2>/dev/null
  if ! "$arlsim" import "$tmp/rt-a.sh" --from "$fw" --model qwen3-8b --out "$tmp/rt.json" 2>"$tmp/rt.err"; then
    failed=$((failed + 1)); echo "FAIL import-$fw-$name"; head -5 "$tmp/rt.err"; return
  fi
  local version=()
  if grep -q -- "--framework-version" "$tmp/rt-a.sh"; then version=(--framework-version 0.10.1); fi
  "$arlsim" export "$tmp/rt.json" --format "$fw" "${version[@]}" >"$tmp/rt-b.sh" 2>/dev/null
  sed -n '/^set -euo/,$p' "$tmp/rt-a.sh" >"$tmp/rt-a.body"
  sed -n '/^set -euo/,$p' "$tmp/rt-b.sh" >"$tmp/rt-b.body"
  same "round-trip-$fw-$name" "$tmp/rt-a.body" "$tmp/rt-b.body"
}
round_trip_as openrlhf default default
round_trip_as openrlhf flat default --framework-version 0.10.1
round_trip_as openrlhf disaggregated-async disaggregated-async
round_trip_as slime default default
round_trip_as slime disaggregated-async disaggregated-async
# AReaL's YAML: the configuration from experiment_name on.
"$arlsim" export disaggregated-async --format areal >"$tmp/rt-a.yaml" 2>/dev/null
if "$arlsim" import "$tmp/rt-a.yaml" --from areal --model qwen3-8b --out "$tmp/rt.json" 2>"$tmp/rt.err"; then
  "$arlsim" export "$tmp/rt.json" --format areal >"$tmp/rt-b.yaml" 2>/dev/null
  sed -n '/^experiment_name/,$p' "$tmp/rt-a.yaml" >"$tmp/rt-a.body"
  sed -n '/^experiment_name/,$p' "$tmp/rt-b.yaml" >"$tmp/rt-b.body"
  same round-trip-areal "$tmp/rt-a.body" "$tmp/rt-b.body"
else
  failed=$((failed + 1)); echo "FAIL import-areal"; head -5 "$tmp/rt.err"
fi

# Launches written as the frameworks' examples are: the expected scenario comes out, and simulates.
expect_scenario() {  # expect_scenario NAME FRAMEWORK LAUNCH PYTHON-ASSERTIONS
  local name="$1" fw="$2" launch="$3" assertions="$4"
  if ! "$arlsim" import "$here/launches/$launch" --from "$fw" --model qwen3-8b --out "$tmp/$name.json" 2>"$tmp/$name.err"; then
    failed=$((failed + 1)); echo "FAIL import-$name"; head -5 "$tmp/$name.err"; return
  fi
  if python3 -c "import json, sys; s = json.load(open(sys.argv[1])); w, p = s['workload'], s['policy']; $assertions" "$tmp/$name.json"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAIL import-$name-scenario"; cat "$tmp/$name.json" | head -40
  fi
  expect "import-$name-simulates" 0 "$arlsim" simulate "$tmp/$name.json" --set /steps=1
}
expect_scenario verl-megatron verl verl-megatron.sh \
  "assert (p['train']['tp'], p['train']['pp'], p['train']['dp'], p['train']['recompute']) == (4, 2, 2, 'full'); \
   assert (w['prompts_per_step'], w['samples_per_prompt'], w['mini_batches']) == (256, 5, 4); \
   assert p['rollout']['tp'] == 2 and p['placement'] == 'colocated' and s['steps'] == 20 and p['train']['max_tokens_per_gpu'] == 16384; \
   assert p['weight_sync']['gather'] == 'full-model' and p['train']['kernels'] == 'fused'"
# Fused kernels on verl's FSDP engine are Liger's; eager kernels on Megatron engines are noted.
expect export-verl-liger 0 "$arlsim" export default --format verl --set /policy/train/tp=1 --set /policy/train/dp=16 \
  --set /policy/train/zero=3 --set /policy/train/sequence_parallel=false --set '/policy/train/kernels="fused"'
contains export-verl-liger-key "$tmp/out" "actor_rollout_ref.model.use_liger=True"
expect export-slime-eager 0 "$arlsim" export default --format slime --set '/policy/train/kernels="eager"'
contains export-slime-eager-note "$tmp/out" "eager kernels (a Hugging Face model in eager PyTorch): slime trains with Megatron-LM's fused kernels"
# Continuous generation: AReaL always generates so, slime's train_async.py never does; each notes the other.
expect export-areal-whole-steps 0 "$arlsim" export disaggregated-async --format areal --set /policy/sync/staleness=2
contains export-areal-whole-steps-note "$tmp/out" "AReaL's engines generate continuously, max_head_offpolicyness + 1 = 3 batches in flight; the plan generates whole steps"
expect export-slime-continuous 0 "$arlsim" export disaggregated-async --format slime --set /policy/sync/staleness=2 \
  --set /policy/sync/continuous=true
contains export-slime-continuous-note "$tmp/out" "continuous generation: train_async.py generates each step's rollout whole"
# verl's FSDP engine trains a Hugging Face model in eager PyTorch, unless Liger's kernels are patched in.
kernels_of() {  # kernels_of LAUNCH: the imported scenario's training kernels
  "$arlsim" import "$1" --from verl --model qwen3-8b --out "$tmp/kernels.json" 2>/dev/null &&
    python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['policy']['train']['kernels'])" "$tmp/kernels.json"
}
sed 's/trainer.experiment_name=default/trainer.experiment_name=default \\\n  actor_rollout_ref.model.use_liger=True/' \
  "$here/golden/fsdp-ulysses.verl.sh" > "$tmp/liger.sh"
if [ "$(kernels_of "$here/golden/fsdp-ulysses.verl.sh")" = eager ] && [ "$(kernels_of "$tmp/liger.sh")" = fused ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL import-verl-fsdp-kernels"
fi
contains import-verl-unmodelled "$tmp/verl-megatron.err" "verl-megatron.sh:19: actor_rollout_ref.actor.kl_loss_coef: not modelled by arlsim"
# verl's actor offload moves its state to host memory between phases with Adam on the GPU: the
# to-cpu swap, not ZeRO-Offload; and the swap exports as those two flags.
sed 's/actor_rollout_ref.actor.use_kl_loss=True/actor_rollout_ref.actor.megatron.param_offload=True actor_rollout_ref.actor.megatron.optimizer_offload=True actor_rollout_ref.actor.use_kl_loss=True/' \
  "$here/launches/verl-megatron.sh" >"$tmp/verl-offload.sh"
if "$arlsim" import "$tmp/verl-offload.sh" --from verl --model qwen3-8b --out "$tmp/verl-offload.json" 2>"$tmp/verl-offload.err" &&
  python3 -c "import json, sys; p = json.load(open(sys.argv[1]))['policy']; \
    assert p['weight_sync']['state'] == 'to-cpu' and 'offload_optimizer' not in p['train'] and 'offload_params' not in p['train']" \
    "$tmp/verl-offload.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL import-verl-offload"; head -5 "$tmp/verl-offload.err"
fi
contains import-verl-offload-note "$tmp/verl-offload.err" 'priced as weight_sync state "to-cpu"'
"$arlsim" export "$tmp/verl-offload.json" --format verl >"$tmp/verl-offload-out.sh" 2>/dev/null
contains export-verl-to-cpu "$tmp/verl-offload-out.sh" "actor_rollout_ref.actor.megatron.optimizer_offload=True"
contains export-verl-to-cpu-params "$tmp/verl-offload-out.sh" "actor_rollout_ref.actor.megatron.param_offload=True"
# On a GPU whose profile gives no rates for pageable memory the swap stays pinned, and the note says so.
if "$arlsim" import "$tmp/verl-offload.sh" --from verl --model qwen3-8b --cluster dgx-a100 --out "$tmp/verl-a100.json" \
  2>"$tmp/verl-a100.err" && python3 -c "import json, sys; p = json.load(open(sys.argv[1]))['policy']; \
    assert 'state' not in p.get('weight_sync', {})" "$tmp/verl-a100.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL import-verl-offload-a100"; head -5 "$tmp/verl-a100.err"
fi
contains import-verl-offload-a100-note "$tmp/verl-a100.err" "gives no host_pageable rates for it: priced as a pinned swap"
expect import-verl-offload-a100-simulates 0 "$arlsim" simulate "$tmp/verl-a100.json" --set /steps=1
expect_scenario openrlhf openrlhf openrlhf.sh \
  "assert (p['train']['dp'], p['train']['zero'], p['train']['recompute']) == (8, 3, 'full'); \
   assert (w['prompts_per_step'], w['samples_per_prompt'], w['mini_batches'], w['max_prompt_tokens']) == (128, 8, 4, 1024); \
   assert p['rollout'] == {'tp': 2, 'replicas': 4} and p['placement'] == 'colocated' and w['algorithm'] == 'grpo'; \
   assert p['train']['grad_reduce_dtype'] == 'bf16' and p['weight_sync']['gather'] == 'full-model'; \
   assert p['train']['shard_dtype'] == 'bf16' and p['train']['kernels'] == 'eager'"
contains import-openrlhf-unmodelled "$tmp/openrlhf.err" "openrlhf.sh:15: --actor.adam.lr: not modelled by arlsim"
expect_scenario slime slime slime.sh \
  "assert (p['placement'], p['rollout_gpus'], p['rollout']['tp'], p['sync']['staleness']) == ('disaggregated', 8, 2, 1); \
   assert (p['train']['tp'], p['train']['dp'], p['train']['recompute'], p['train']['max_tokens_per_gpu']) == (2, 4, 'full', 9216); \
   assert (w['prompts_per_step'], w['samples_per_prompt'], w['mini_batches'], s['steps']) == (32, 8, 1, 30); \
   assert p['train']['grad_reduce_dtype'] == 'fp32' and 'gather' not in p.get('weight_sync', {}); \
   assert 'continuous' not in p['sync']"
contains import-slime-unmodelled "$tmp/slime.err" "slime.sh:14: --eps-clip: not modelled by arlsim"
expect_scenario areal areal areal.yaml \
  "assert (p['placement'], p['rollout_gpus'], p['rollout'], p['sync']['staleness']) == ('disaggregated', 8, {'replicas': 4, 'tp': 2}, 2); \
   assert (p['train']['dp'], p['train']['pp'], p['train']['tp'], p['train']['recompute'], p['train']['max_tokens_per_gpu']) == (2, 2, 2, 'full', 10240); \
   assert (w['prompts_per_step'], w['samples_per_prompt'], w['mini_batches'], w['max_prompt_tokens']) == (64, 8, 4, 1024); \
   assert p['train']['packing'] == 'fit' and p['sync']['continuous'] == 3"
contains import-areal-unmodelled "$tmp/areal.err" "areal.yaml:20: gconfig.temperature: not modelled by arlsim"
sed 's/megatron:d2p2t2c1e1/megatron:two-by-two/' "$here/launches/areal.yaml" >"$tmp/bad.yaml"
expect import-areal-bad 2 "$arlsim" import "$tmp/bad.yaml" --from areal --model qwen3-8b --out "$tmp/bad.json"
contains import-areal-bad-where "$tmp/err" 'bad.yaml:22: actor.backend: expected a backend string such as "megatron:d2p2t2c1e4", got "megatron:two-by-two"'

# Import: what arlsim does not model is listed with its line; what it cannot parse is an error.
cat >"$tmp/launch.sh" <<'LAUNCH'
#!/usr/bin/env bash
python3 -m verl.trainer.main_ppo \
  data.train_batch_size=32 \
  data.max_prompt_length=1024 data.max_response_length=4096 \
  actor_rollout_ref.actor.ppo_mini_batch_size=8 \
  actor_rollout_ref.rollout.n=4 \
  actor_rollout_ref.actor.optim.lr=1e-6 \
  trainer.nnodes=1 \
  trainer.n_gpus_per_node=8
LAUNCH
expect import-unmodelled 0 "$arlsim" import "$tmp/launch.sh" --from verl --model qwen3-8b --out "$tmp/imported.json"
contains import-unmodelled-line "$tmp/err" "launch.sh:7: actor_rollout_ref.actor.optim.lr: not modelled by arlsim"
expect import-checks 0 "$arlsim" check "$tmp/imported.json"
sed -i 's/trainer.nnodes=1/trainer.nnodes=one/' "$tmp/launch.sh"
expect import-bad-value 2 "$arlsim" import "$tmp/launch.sh" --from verl --model qwen3-8b --out "$tmp/bad.json"
contains import-bad-value-where "$tmp/err" 'launch.sh:8: trainer.nnodes: expected a whole number of at least 0, got "one"'
sed -i 's/trainer.nnodes=one/trainer.nnodes=1/; /data.max_prompt_length/d' "$tmp/launch.sh"
expect import-required 2 "$arlsim" import "$tmp/launch.sh" --from verl --model qwen3-8b --out "$tmp/bad.json"
contains import-required-why "$tmp/err" "data.max_prompt_length and data.max_response_length are required"
expect import-no-launch 2 "$arlsim" import "$here/../lib/checks.sh" --from verl --model qwen3-8b --out "$tmp/bad.json"
expect import-bad-from 2 "$arlsim" import "$tmp/launch.sh" --from megatron --model qwen3-8b --out "$tmp/bad.json"
contains import-bad-from-why "$tmp/err" 'unknown framework "megatron"; valid: verl, openrlhf, slime, areal'
if [ -e "$tmp/bad.json" ]; then failed=$((failed + 1)); echo "FAIL import-no-file"; else passed=$((passed + 1)); fi

# Odd input: never a crash (exit 1), always a located reason (exit 2) or a scenario.
odd() {  # odd NAME STATUS FRAMEWORK FILE [TEXT]
  local name="$1" want="$2" fw="$3" file="$4"
  expect "odd-$name" "$want" "$arlsim" import "$file" --from "$fw" --model qwen3-8b --out "$tmp/odd.json"
}
printf 'experiment_name: x\ncluster: {n_nodes: 1, n_gpus_per_node: 8}\n' >"$tmp/no-backend.yaml"
odd areal-no-backend 2 areal "$tmp/no-backend.yaml"
contains odd-areal-no-backend-why "$tmp/err" "rollout.backend and actor.backend are required"
sed 's/sglang:d4p1t2/sglang:d99999999999999999999p1t2/' "$here/launches/areal.yaml" >"$tmp/huge.yaml"
odd areal-huge 2 areal "$tmp/huge.yaml"
contains odd-areal-huge-why "$tmp/err" "huge.yaml:13: rollout.backend: dimension d must be a whole number of at least 1"
printf '? [a, b]\n: 1\n' >"$tmp/complex.yaml"
odd areal-complex-key 2 areal "$tmp/complex.yaml"
printf 'cluster: [\n' >"$tmp/broken.yaml"
odd areal-not-yaml 2 areal "$tmp/broken.yaml"
sed 's/ppo_n_minibatches: 4/ppo_n_minibatches: 0/' "$here/launches/areal.yaml" >"$tmp/zero.yaml"
odd areal-zero-minibatches 2 areal "$tmp/zero.yaml"
contains odd-areal-zero-why "$tmp/err" "actor.ppo_n_minibatches: must be at least 1, got 0"
sed 's/batch_size: 64/batch_size: 0/' "$here/launches/areal.yaml" >"$tmp/zero-batch.yaml"
odd areal-zero-batch 2 areal "$tmp/zero-batch.yaml"
contains odd-areal-zero-batch-why "$tmp/err" "zero-batch.yaml:10: train_dataset.batch_size: expected a whole number of at least 1, got 0"
printf 'cluster:\n  n_nodes: [2]\n  n_gpus_per_node: 8\n  n_nodes: 3\n' >"$tmp/twice.yaml"
odd areal-twice 2 areal "$tmp/twice.yaml"
contains odd-areal-list-why "$tmp/err" "twice.yaml:2: cluster.n_nodes: expected a whole number, got a list"
contains odd-areal-twice-why "$tmp/err" "twice.yaml:4: cluster.n_nodes: given twice"
sed 's/max_tokens_per_mb: 10240/max_tokens_per_mb: {x: 1}/' "$here/launches/areal.yaml" >"$tmp/map.yaml"
odd areal-map-value 2 areal "$tmp/map.yaml"
contains odd-areal-map-why "$tmp/err" "map.yaml:26: actor.mb_spec.max_tokens_per_mb: expected a whole number, got a mapping"
# A key one slip from one the reader knows is named; a scenario the configuration cannot make is
# reported at the configuration's lines (each line once, though a backend string sets a layout).
sed 's/n_samples: 8/n_sample: 8/' "$here/launches/areal.yaml" >"$tmp/slip.yaml"
odd areal-slip 0 areal "$tmp/slip.yaml"
contains odd-areal-slip-why "$tmp/err" "slip.yaml:17: gconfig.n_sample: not modelled by arlsim; did you mean gconfig.n_samples?"
sed 's/sglang:d4p1t2/sglang:d4p1t3/' "$here/launches/areal.yaml" >"$tmp/tp3.yaml"
odd areal-invalid-scenario 2 areal "$tmp/tp3.yaml"
contains odd-areal-invalid-at-line "$tmp/err" "tp3.yaml:13: rollout.backend: sglang:d4p1t3: /policy/rollout/tp: the model's 32 attention heads do not split over tp = 3"
if [ "$(grep -o 'actor.backend: megatron:d2p2t2c1e1' "$tmp/err" | wc -l)" = 1 ]; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL odd-areal-origin-once"; fi
# Training's GPU count is what the engines leave: the rollout line is cited beside the actor's,
# and only the lines of the fields the message names (not the actor's token budget).
contains odd-areal-train-gpus-at-rollout "$tmp/err" "tp3.yaml:13: rollout.backend: sglang:d4p1t3: /policy/train: tp x pp x dp x cp"
if grep "/policy/train: tp x pp" "$tmp/err" | grep -q max_tokens_per_mb; then failed=$((failed + 1)); echo "FAIL odd-areal-train-named-only"; else
  passed=$((passed + 1)); fi
# One node: the rollout engines' GPUs and the actor's side by side.
printf 'cluster: {n_nodes: 1, n_gpus_per_node: 8}\ntrain_dataset: {batch_size: 32}\nrollout: {backend: "sglang:d4p1t1"}\nactor: {backend: "fsdp:d4p1t1", ppo_n_minibatches: 2}\ngconfig: {n_samples: 4, max_new_tokens: 2048, max_tokens: 3072}\n' >"$tmp/one-node.yaml"
odd areal-one-node 0 areal "$tmp/one-node.yaml"
expect odd-areal-one-node-checks 0 "$arlsim" check "$tmp/odd.json"
# A verl launch as people write it: `"$@"`, output to a log through tee, CRLF line ends.
printf 'python3 -m verl.trainer.main_ppo \\\r\n data.train_batch_size=32 data.max_prompt_length=512 \\\r\n data.max_response_length=1024 actor_rollout_ref.actor.ppo_mini_batch_size=8 \\\r\n trainer.nnodes=1 trainer.n_gpus_per_node=8 "$@" 2>&1 | tee log.txt\r\n' >"$tmp/crlf.sh"
odd verl-crlf-tee 0 verl "$tmp/crlf.sh"
printf 'python3 -m verl.trainer.main_ppo data.train_batch_size=32 trainer.experiment_name="unclosed\n' >"$tmp/quote.sh"
odd verl-unclosed-quote 2 verl "$tmp/quote.sh"
contains odd-verl-unclosed-quote-why "$tmp/err" "quote.sh:1: a quote opened here is never closed"
printf 'python3 -m openrlhf.cli.train_ppo_ray --rollout.batch_size\n' >"$tmp/flag-at-end.sh"
odd openrlhf-flag-at-end 2 openrlhf "$tmp/flag-at-end.sh"
contains odd-openrlhf-flag-at-end-why "$tmp/err" 'flag-at-end.sh:1: --rollout.batch_size: expected a whole number of at least 0, got ""'
printf '' >"$tmp/empty.sh"
odd verl-empty 2 verl "$tmp/empty.sh"

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
# --framework-version takes a release number; a typo would silently pick the older options.
expect framework-version-typo 2 "$arlsim" export default --format openrlhf --framework-version abc
contains framework-version-typo-why "$tmp/err" 'expected a release number such as 0.10.2, got "abc"'
expect framework-version-tag 0 "$arlsim" export default --format openrlhf --framework-version v0.10.1
contains framework-version-tag-flat "$tmp/out" "--framework-version v0.10.1"
# A packing the framework does not do is noted, not silently dropped.
expect export-fit-note 0 "$arlsim" export default --format verl --set '/policy/train/packing="fit"'
contains export-fit-note-why "$tmp/err" "micro-batches packed first fit decreasing into bins of the token budget"
# verl's max_assistant_turns as given: 1 is one turn, 0 an error.
verl_turns=(python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.n_gpus_per_node=8 data.train_batch_size=64
  actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.rollout.n=8 data.max_prompt_length=512
  data.max_response_length=1024 actor_rollout_ref.rollout.multi_turn.enable=True)
echo "${verl_turns[*]} actor_rollout_ref.rollout.multi_turn.max_assistant_turns=1" >"$tmp/turns1.sh"
expect verl-one-turn 0 "$arlsim" import "$tmp/turns1.sh" --from verl --model qwen3-8b --out "$tmp/turns1.json"
contains verl-one-turn-kept "$tmp/turns1.json" '"max_turns": 1'
echo "${verl_turns[*]} actor_rollout_ref.rollout.multi_turn.max_assistant_turns=0" >"$tmp/turns0.sh"
expect verl-zero-turns 2 "$arlsim" import "$tmp/turns0.sh" --from verl --model qwen3-8b --out "$tmp/turns0.json"
contains verl-zero-turns-why "$tmp/err" "max_assistant_turns: must be at least 1, got 0"
report
