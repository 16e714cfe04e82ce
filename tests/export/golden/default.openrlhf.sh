#!/usr/bin/env bash
# Exported by `arlsim export --format openrlhf` from default (scenario default on 16 x h100-sxm, OpenRLHF dotted options, 0.10.2 and later).
# Not expressible in OpenRLHF, the closest setting taken:
#   - fused kernels: OpenRLHF fuses with Liger (--ds.use_liger_kernel), which needs the liger-kernel package and a model it patches
#   - multi-turn agents: OpenRLHF runs them through its agent function (--train.agent_path); not set here
#   - selective recompute: OpenRLHF checkpoints whole layers; exported as gradient checkpointing
#   - tensor, pipeline or expert parallelism in training: OpenRLHF trains with DeepSpeed (data parallelism with ZeRO); exported as data parallelism over the same GPUs
#   - the run's length follows the dataset (episodes x prompts), not a step count: arlsim's 150 steps are 150 rollout batches of 64 prompts
set -euo pipefail
MODEL_PATH=${MODEL_PATH:?set MODEL_PATH to the model (a Hugging Face name or a local folder)}
TRAIN_FILES=${TRAIN_FILES:?set TRAIN_FILES to the prompt dataset}
ray job submit --address="${RAY_DASHBOARD:-http://127.0.0.1:8265}" -- python3 -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path "$MODEL_PATH" \
  --data.prompt_dataset "$TRAIN_FILES" \
  --actor.num_nodes 2 \
  --actor.num_gpus_per_node 8 \
  --ref.num_nodes 2 \
  --ref.num_gpus_per_node 8 \
  --vllm.num_engines 8 \
  --vllm.tensor_parallel_size 2 \
  --vllm.gpu_memory_utilization 0.6 \
  --train.colocate_all \
  --vllm.enable_sleep \
  --ds.enable_sleep \
  --ds.zero_stage 1 \
  --ds.packing_samples \
  --ds.use_liger_kernel \
  --actor.gradient_checkpointing_enable \
  --rollout.batch_size 64 \
  --rollout.n_samples_per_prompt 8 \
  --train.batch_size 128 \
  --train.micro_batch_size 1 \
  --train.dynamic_batch_enable \
  --train.max_tokens_per_gpu 15360 \
  --train.max_epochs 1 \
  --data.max_len 20480 \
  --rollout.max_new_tokens 16384 \
  --algo.advantage.estimator group_norm
