// The mapping from a TrainConfig to the model it describes.
#include "models/model_config.h"

#include <stdexcept>  // std::logic_error

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
  return o;
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
  return o;
}

std::unique_ptr<ModelStage> make_model_stage(const TrainConfig& config, Communicator& tp, int stage,
                                             int stages) {
  switch (config.model.arch) {
    case ModelArch::kGpt2:
      return std::make_unique<GptStage>(gpt_options(config), tp, stage, stages);
    case ModelArch::kLlama:
      return std::make_unique<LlamaStage>(llama_options(config), tp, stage, stages);
  }
  throw std::logic_error("make_model_stage: a model.arch without a model");
}

}  // namespace trident
