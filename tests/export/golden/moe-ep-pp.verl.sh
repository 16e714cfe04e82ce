#!/usr/bin/env bash
# Exported by `arlsim export --format verl` from default (scenario default on 16 x h100-sxm, 150 steps).
# Not expressible in verl, the closest setting taken:
#   - a token budget of 15360 below the longest sequence: verl's must hold one whole sequence; raised to 20480
#   - tool policy: verl's agent loop runs each trajectory's tools itself; pooled sandboxes are the tool server's business
set -euo pipefail
MODEL_PATH=${MODEL_PATH:?set MODEL_PATH to the model (a Hugging Face name or a local folder)}
TRAIN_FILES=${TRAIN_FILES:?set TRAIN_FILES to the training parquet files}
VAL_FILES=${VAL_FILES:-$TRAIN_FILES}
TOOL_CONFIG=${TOOL_CONFIG:?set TOOL_CONFIG to the verl tool configuration file}
python3 -m verl.trainer.main_ppo \
  model_engine=megatron \
  algorithm.adv_estimator=grpo \
  data.train_files="$TRAIN_FILES" \
  data.val_files="$VAL_FILES" \
  data.train_batch_size=64 \
  data.max_prompt_length=2048 \
  data.max_response_length=16384 \
  actor_rollout_ref.model.path="$MODEL_PATH" \
  actor_rollout_ref.actor.ppo_mini_batch_size=16 \
  actor_rollout_ref.actor.ppo_epochs=1 \
  actor_rollout_ref.actor.use_kl_loss=True \
  actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
  actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \
  actor_rollout_ref.actor.megatron.context_parallel_size=1 \
  actor_rollout_ref.actor.megatron.expert_model_parallel_size=4 \
  actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1 \
  actor_rollout_ref.actor.megatron.sequence_parallel=True \
  actor_rollout_ref.actor.megatron.param_offload=False \
  actor_rollout_ref.actor.megatron.optimizer_offload=False \
  actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=selective \
  actor_rollout_ref.actor.use_dynamic_bsz=True \
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=20480 \
  actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True \
  actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=20480 \
  actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True \
  actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=20480 \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
  actor_rollout_ref.rollout.expert_parallel_size=4 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
  actor_rollout_ref.rollout.max_num_batched_tokens=8192 \
  actor_rollout_ref.rollout.max_num_seqs=256 \
  actor_rollout_ref.rollout.enable_chunked_prefill=True \
  actor_rollout_ref.rollout.enable_prefix_caching=True \
  actor_rollout_ref.rollout.max_model_len=20480 \
  actor_rollout_ref.rollout.enforce_eager=False \
  actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=512 \
  actor_rollout_ref.rollout.multi_turn.enable=True \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=16 \
  actor_rollout_ref.rollout.multi_turn.tool_config_path="$TOOL_CONFIG" \
  actor_rollout_ref.rollout.free_cache_engine=True \
  trainer.nnodes=2 \
  trainer.n_gpus_per_node=8 \
  trainer.balance_batch=True \
  trainer.total_training_steps=150 \
  trainer.project_name=arlsim \
  trainer.experiment_name=default
