#!/usr/bin/env bash
# Exported by `arlsim export --format slime` from default (scenario default on 16 x h100-sxm, 150 rollouts).
# Not expressible in slime, the closest setting taken:
#   - multi-turn agents: slime runs them through a custom rollout function (--custom-generate-function-path); not set here
#   - the engines are SGLang's: the engine settings other than its memory share (batched tokens, sequences, chunked prefill, prefix caching) are SGLang's own
#   - the engines' pipeline or expert parallelism: slime gives an engine its GPUs; set SGLang's own split with --sglang-* flags
set -euo pipefail
MODEL_PATH=${MODEL_PATH:?set MODEL_PATH to the Hugging Face checkpoint}
REF_LOAD=${REF_LOAD:?set REF_LOAD to the Megatron (torch_dist) checkpoint of the reference model}
TRAIN_FILES=${TRAIN_FILES:?set TRAIN_FILES to the prompt data}
# The model's architecture as Megatron-LM flags: slime's scripts/models/<model>.sh defines MODEL_ARGS.
source "${MODEL_ARGS_FILE:?set MODEL_ARGS_FILE to the slime model script scripts/models/<model>.sh}"
ray job submit --address="${RAY_DASHBOARD:-http://127.0.0.1:8265}" -- python3 train.py \
  "${MODEL_ARGS[@]}" \
  --hf-checkpoint "$MODEL_PATH" \
  --ref-load "$REF_LOAD" \
  --prompt-data "$TRAIN_FILES" \
  --actor-num-nodes 2 \
  --actor-num-gpus-per-node 8 \
  --num-gpus-per-node 8 \
  --rollout-num-gpus 16 \
  --rollout-num-gpus-per-engine 4 \
  --colocate \
  --tensor-model-parallel-size 2 \
  --sequence-parallel \
  --pipeline-model-parallel-size 2 \
  --context-parallel-size 1 \
  --expert-model-parallel-size 4 \
  --expert-tensor-parallel-size 1 \
  --recompute-granularity selective \
  --use-dynamic-batch-size \
  --max-tokens-per-gpu 15360 \
  --log-probs-max-tokens-per-gpu 15360 \
  --balance-data \
  --advantage-estimator grpo \
  --rollout-batch-size 64 \
  --n-samples-per-prompt 8 \
  --global-batch-size 128 \
  --num-steps-per-rollout 4 \
  --num-rollout 150 \
  --rollout-max-response-len 16384 \
  --rollout-max-context-len 20480 \
  --update-weight-buffer-size 536870912 \
  --sglang-mem-fraction-static 0.6
