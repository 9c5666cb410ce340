// The mapping from a TrainConfig to the model it describes.
#include "models/model_config.h"

#include <ATen/Context.h>  // at::hasCUDA
#include <torch/cuda.h>    // torch::cuda::device_count

#include <cstdlib>    // setenv
#include <stdexcept>  // std::logic_error
#include <utility>    // std::move
#include <vector>     // std::vector

#include "config/input_error.h"     // InputError
#include "models/chunked_stage.h"   // ChunkedStage
#include "parallel/nccl_backend.h"  // nccl_built

namespace trident {

at::ScalarType precision_dtype(Precision precision) {
  switch (precision) {
    case Precision::kFp64:
      return at::kDouble;
    case Precision::kFp32:
      return at::kFloat;
    case Precision::kBf16:
      return at::kBFloat16;
  }
  throw std::logic_error("precision_dtype: a precision without a dtype");
}

GptOptions gpt_options(const TrainConfig& c) {
  GptOptions o;
  o.layers = c.model.layers;
  o.hidden = c.model.hidden;
  o.heads = c.model.heads;
  o.vocab = c.model.vocab;
  o.padded_vocab = c.padded_vocab();
  o.seq_len = c.model.seq_len;
  o.seed = static_cast<uint64_t>(c.train.seed);
  o.dtype = precision_dtype(c.train.precision);
  o.sequence_parallel = c.parallel.sequence_parallel;
  o.recompute_attention =
      c.parallel.activation_checkpointing == ActivationCheckpointing::kSelective;
  return o;
}

void check_device(Device device) {
  if (device == Device::kCpu) return;
  const std::string key = "train.device = \"cuda\"";
  if (!at::hasCUDA() || !nccl_built())
    throw InputError(key + " needs a GPU build of trident, and this one was built " +
                     (at::hasCUDA() ? "without NCCL" : "with a CPU-only libtorch") +
                     ": build it on a GPU node with scripts/build.sh --cuda (docs/gpu.md), "
                     "or set train.device = \"cpu\"");
  if (torch::cuda::device_count() == 0)
    throw InputError(key +
                     ": no GPU is visible on this node (CUDA_VISIBLE_DEVICES, driver); "
                     "run on a GPU node, or set train.device = \"cpu\"");
}

at::Device run_device(Device device, int local_rank) {
  if (device == Device::kCpu) return at::kCPU;
  const int gpus = static_cast<int>(torch::cuda::device_count());
  // cuBLAS repeats its reductions only with a fixed workspace, chosen before its first use.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  return {at::kCUDA, static_cast<at::DeviceIndex>(local_rank % gpus)};
}

LlamaOptions llama_options(const TrainConfig& c) {
  LlamaOptions o;
  o.layers = c.model.layers;
  o.hidden = c.model.hidden;
  o.heads = c.model.heads;
  o.kv_heads = c.model.kv_head_count();
  o.ffn_hidden = c.model.ffn_hidden;
  o.vocab = c.model.vocab;
  o.padded_vocab = c.padded_vocab();
  o.seq_len = c.model.seq_len;
  o.rope_theta = c.model.rope_theta;
  o.norm_eps = c.model.norm_eps;
  o.tie_embeddings = c.model.tie_embeddings;
  o.seed = static_cast<uint64_t>(c.train.seed);
  o.dtype = precision_dtype(c.train.precision);
  o.sequence_parallel = c.parallel.sequence_parallel;
  o.recompute_attention =
      c.parallel.activation_checkpointing == ActivationCheckpointing::kSelective;
  o.moe.experts = c.model.moe_experts;
  o.moe.top_k = c.model.moe_top_k;
  o.moe.ffn_hidden = c.model.moe_ffn_hidden > 0 ? c.model.moe_ffn_hidden : c.model.ffn_hidden;
  o.moe.aux_loss_coeff = c.model.moe_aux_loss_coeff;
  o.moe.z_loss_coeff = c.model.moe_z_loss_coeff;
  o.moe.capacity_factor = c.model.moe_capacity_factor;
  o.moe.shared_expert = c.model.moe_shared_expert;
  o.moe.sigmoid = c.model.moe_router == MoeRouter::kSigmoid;
  o.moe_every = c.model.moe_layer_every;
  return o;
}

namespace {

std::unique_ptr<ModelStage> make_plain_stage(const TrainConfig& config, Communicator& tp, int stage,
                                             int stages, at::Device device, bool defer_init,
                                             Communicator* ep, Communicator* cp) {
  switch (config.model.arch) {
    case ModelArch::kGpt2: {
      GptOptions o = gpt_options(config);
      o.device = device;
      o.defer_init = defer_init;
      o.cp = cp;
      return std::make_unique<GptStage>(o, tp, stage, stages);
    }
    case ModelArch::kLlama: {
      LlamaOptions o = llama_options(config);
      o.device = device;
      o.defer_init = defer_init;
      o.cp = cp;
      return std::make_unique<LlamaStage>(o, tp, stage, stages, ep);
    }
  }
  throw std::logic_error("make_model_stage: a model.arch without a model");
}

}  // namespace

std::unique_ptr<ModelStage> make_model_stage(const TrainConfig& config, Communicator& tp, int stage,
                                             int stages, at::Device device, bool defer_init,
                                             Communicator* ep, Communicator* cp) {
  const int chunks = static_cast<int>(config.parallel.virtual_stages);
  if (chunks <= 1) return make_plain_stage(config, tp, stage, stages, device, defer_init, ep, cp);
  // Megatron's assignment: chunk c of stage s is virtual stage c * stages + s, so the
  // embedding goes with stage 0's first chunk and the head with the last stage's last.
  std::vector<std::unique_ptr<ModelStage>> parts;
  for (int c = 0; c < chunks; ++c)
    parts.push_back(make_plain_stage(config, tp, c * stages + stage, stages * chunks, device,
                                     defer_init, ep, cp));
  return std::make_unique<ChunkedStage>(std::move(parts), tp, stage, stages);
}

}  // namespace trident
