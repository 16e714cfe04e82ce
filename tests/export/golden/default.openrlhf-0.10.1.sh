#!/usr/bin/env bash
# Exported by `arlsim export --format openrlhf --framework-version 0.10.1` from default (scenario default on 16 x h100-sxm, OpenRLHF flat options, before 0.10.2).
# Not expressible in OpenRLHF, the closest setting taken:
#   - --train.max_tokens_per_gpu: no flag before OpenRLHF 0.10.2; left out
#   - fused kernels: OpenRLHF fuses with Liger (--ds.use_liger_kernel), which needs the liger-kernel package and a model it patches
#   - multi-turn agents: OpenRLHF runs them through its agent function (--train.agent_path); not set here
#   - selective recompute: OpenRLHF checkpoints whole layers; exported as gradient checkpointing
#   - tensor, pipeline or expert parallelism in training: OpenRLHF trains with DeepSpeed (data parallelism with ZeRO); exported as data parallelism over the same GPUs
#   - the run's length follows the dataset (episodes x prompts), not a step count: arlsim's 150 steps are 150 rollout batches of 64 prompts
set -euo pipefail
MODEL_PATH=${MODEL_PATH:?set MODEL_PATH to the model (a Hugging Face name or a local folder)}
TRAIN_FILES=${TRAIN_FILES:?set TRAIN_FILES to the prompt dataset}
ray job submit --address="${RAY_DASHBOARD:-http://127.0.0.1:8265}" -- python3 -m openrlhf.cli.train_ppo_ray \
  --pretrain "$MODEL_PATH" \
  --prompt_data "$TRAIN_FILES" \
  --actor_num_nodes 2 \
  --actor_num_gpus_per_node 8 \
  --ref_num_nodes 2 \
  --ref_num_gpus_per_node 8 \
  --vllm_num_engines 8 \
  --vllm_tensor_parallel_size 2 \
  --vllm_gpu_memory_utilization 0.6 \
  --colocate_all_models \
  --vllm_enable_sleep \
  --deepspeed_enable_sleep \
  --zero_stage 1 \
  --packing_samples \
  --use_liger_kernel \
  --gradient_checkpointing \
  --rollout_batch_size 64 \
  --n_samples_per_prompt 8 \
  --train_batch_size 128 \
  --micro_train_batch_size 1 \
  --use_dynamic_batch \
  --max_epochs 1 \
  --max_len 20480 \
  --max_new_tokens 16384 \
  --advantage_estimator group_norm
