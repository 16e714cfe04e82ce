#!/usr/bin/env bash
# A slime launch (asynchronous, separate pools), written for the tests from slime's documented flags.
source scripts/models/qwen3-8B.sh
ray job submit --address="http://127.0.0.1:8265" -- python3 train_async.py \
   "${MODEL_ARGS[@]}" \
   --hf-checkpoint /root/Qwen3-8B --ref-load /root/Qwen3-8B_torch_dist \
   --actor-num-nodes 1 --actor-num-gpus-per-node 8 --num-gpus-per-node 8 \
   --rollout-num-gpus 8 --rollout-num-gpus-per-engine 2 \
   --tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 1 \
   --context-parallel-size 1 --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \
   --use-dynamic-batch-size --max-tokens-per-gpu 9216 \
   --rollout-batch-size 32 --n-samples-per-prompt 8 --global-batch-size 256 --num-steps-per-rollout 1 \
   --num-rollout 30 --rollout-max-response-len 8192 --rollout-max-context-len 10240 \
   --sglang-mem-fraction-static 0.7 --accumulate-allreduce-grads-in-fp32 --eps-clip 0.2
