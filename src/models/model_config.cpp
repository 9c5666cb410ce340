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

}  // namespace trident
