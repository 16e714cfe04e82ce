#!/usr/bin/env bash
# An OpenRLHF GRPO launch (dotted options), written for the tests from OpenRLHF's documented flags.
ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"working_dir": "/openrlhf"}' \
   -- python3 -m openrlhf.cli.train_ppo_ray \
   --ref.num_nodes 1 --ref.num_gpus_per_node 8 \
   --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
   --vllm.num_engines 4 --vllm.tensor_parallel_size 2 --vllm.gpu_memory_utilization 0.5 \
   --train.colocate_all --vllm.enable_sleep --ds.enable_sleep \
   --actor.model_name_or_path Qwen/Qwen3-8B \
   --rollout.batch_size 128 --rollout.n_samples_per_prompt 8 \
   --train.batch_size 256 --train.micro_batch_size 2 \
   --data.max_len 9216 --rollout.max_new_tokens 8192 \
   --ds.zero_stage 3 --ds.packing_samples --actor.gradient_checkpointing_enable \
   --algo.advantage.estimator group_norm --actor.adam.lr 5e-7
