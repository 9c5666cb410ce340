// plan_model: a TrainConfig as the planner's PlanModel.
#include "train/plan_of_config.h"

#include "config/choices.h"  // name_of

namespace trident {

plan::PlanModel plan_model(const TrainConfig& c) {
  plan::PlanModel m;
  m.layers = c.model.layers;
  m.hidden = c.model.hidden;
  m.heads = c.model.heads;
  m.vocab = c.model.vocab;
  m.vocab_multiple = c.model.vocab_multiple;
  m.seq_len = c.model.seq_len;
  m.global_batch = c.train.global_batch_size;
  m.precision = name_of(c.train.precision);
  m.schedule = name_of(c.parallel.schedule);
  m.virtual_stages = c.parallel.virtual_stages;
  m.grad_reduce_dtype = name_of(c.parallel.grad_reduce_dtype);
  m.bucket_size = c.parallel.bucket_size;
  m.llama = c.model.arch == ModelArch::kLlama;
  m.kv_heads = c.model.kv_head_count();
  m.ffn_hidden = m.llama ? c.model.ffn_hidden : 4 * c.model.hidden;
  m.tied = !m.llama || c.model.tie_embeddings;
  if (m.llama && c.model.moe_experts > 0) {
    m.moe_experts = c.model.moe_experts;
    m.moe_top_k = c.model.moe_top_k;
    m.moe_ffn_hidden = c.model.moe_ffn_hidden;
    m.moe_layer_every = c.model.moe_layer_every;
    m.moe_shared_expert = c.model.moe_shared_expert;
  }
  m.zero3_max_live_layers = c.parallel.zero3_max_live_layers;
  m.zero3_persist_below = c.parallel.zero3_persist_below;
  m.zero3_reshard_after_forward = c.parallel.zero3_reshard_after_forward == Toggle::kOn;
  m.offload_optimizer = name_of(c.parallel.offload_optimizer);
  m.offload_params = name_of(c.parallel.offload_params);
  m.releases_host_memory = c.releases_host_memory();
  m.allocator = name_of(c.train.allocator);
  m.offload_buffer_count = c.parallel.offload_buffer_count;
  m.offload_block_size = c.parallel.offload_block_size;
  m.muon = c.optimizer.name == OptimizerName::kMuon;
  m.muon_ns_steps = c.optimizer.muon_ns_steps;
  m.muon_exchange_mib = c.optimizer.muon_exchange_mib;
  return m;
}

}  // namespace trident
