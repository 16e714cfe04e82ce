#!/usr/bin/env bash
#SBATCH --job-name=earl-testbed
#SBATCH --nodes=16
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
# Exported by `arlsim export --format slurm` from earl-testbed (scenario earl-testbed on 128 x h100-sxm, 60 steps).
# Not expressible in verl, the closest setting taken:
#   - REINFORCE: verl has no plain REINFORCE estimator; reinforce_plus_plus is the closest
set -euo pipefail
MODEL_PATH=${MODEL_PATH:?set MODEL_PATH to the model (a Hugging Face name or a local folder)}
TRAIN_FILES=${TRAIN_FILES:?set TRAIN_FILES to the training parquet files}
VAL_FILES=${VAL_FILES:-$TRAIN_FILES}
TOOL_CONFIG=${TOOL_CONFIG:?set TOOL_CONFIG to the verl tool configuration file}
nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
head=${nodes[0]}
head_ip=$(srun --nodes=1 --ntasks=1 -w "$head" hostname --ip-address | awk '{print $1}')
srun --nodes=1 --ntasks=1 -w "$head" ray start --head --node-ip-address="$head_ip" --port=6379 --num-gpus=8 --block &
sleep 10
for node in "${nodes[@]:1}"; do
  srun --nodes=1 --ntasks=1 -w "$node" ray start --address "$head_ip:6379" --num-gpus=8 --block &
  sleep 5
done
export RAY_ADDRESS="$head_ip:6379"
python3 -m verl.trainer.main_ppo \
  model_engine=megatron \
  algorithm.adv_estimator=reinforce_plus_plus \
  data.train_files="$TRAIN_FILES" \
  data.val_files="$VAL_FILES" \
  data.train_batch_size=64 \
  data.max_prompt_length=1024 \
  data.max_response_length=31744 \
  actor_rollout_ref.model.path="$MODEL_PATH" \
  actor_rollout_ref.actor.ppo_mini_batch_size=16 \
  actor_rollout_ref.actor.ppo_epochs=1 \
  actor_rollout_ref.actor.use_kl_loss=True \
  actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8 \
  actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=4 \
  actor_rollout_ref.actor.megatron.context_parallel_size=1 \
  actor_rollout_ref.actor.megatron.sequence_parallel=True \
  actor_rollout_ref.actor.megatron.param_offload=False \
  actor_rollout_ref.actor.megatron.optimizer_offload=False \
  actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full \
  actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform \
  actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=1 \
  actor_rollout_ref.actor.use_dynamic_bsz=True \
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=32768 \
  actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True \
  actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=32768 \
  actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True \
  actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=32768 \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.85 \
  actor_rollout_ref.rollout.max_num_batched_tokens=8192 \
  actor_rollout_ref.rollout.max_num_seqs=256 \
  actor_rollout_ref.rollout.enable_chunked_prefill=True \
  actor_rollout_ref.rollout.enable_prefix_caching=True \
  actor_rollout_ref.rollout.max_model_len=32768 \
  actor_rollout_ref.rollout.enforce_eager=False \
  actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=512 \
  actor_rollout_ref.rollout.multi_turn.enable=True \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=16 \
  actor_rollout_ref.rollout.multi_turn.tool_config_path="$TOOL_CONFIG" \
  actor_rollout_ref.rollout.free_cache_engine=True \
  trainer.nnodes=16 \
  trainer.n_gpus_per_node=8 \
  trainer.balance_batch=True \
  trainer.total_training_steps=60 \
  trainer.project_name=arlsim \
  trainer.experiment_name=earl-testbed
