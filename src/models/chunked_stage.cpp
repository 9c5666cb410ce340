// The parameters and layers of a stage's model chunks, gathered into one stage.
#include "models/chunked_stage.h"

#include <c10/util/Exception.h>  // TORCH_CHECK

#include <string>   // std::to_string
#include <utility>  // std::move

namespace trident {

ChunkedStage::ChunkedStage(std::vector<std::unique_ptr<ModelStage>> chunks, Communicator& tp,
                           int stage, int stages)
    : ModelStage(chunks.at(0)->dims(), /*seed=*/0, tp, stage, stages) {
  for (size_t c = 0; c < chunks.size(); ++c) {
    chunks_.push_back(register_module("chunk" + std::to_string(c),
                                      std::shared_ptr<ModelStage>(std::move(chunks[c]))));
    // The same tensors (one TensorImpl each), so the optimizer's flat buffers, which it
    // installs with set_data, are what the chunks compute with.
    const size_t offset = params_.params().size();
    for (const Parameter& p : chunks_.back()->params().params()) params_.params().push_back(p);
    for (const std::vector<size_t>& unit : chunks_.back()->layer_units()) {
      std::vector<size_t> shifted;
      for (size_t i : unit) shifted.push_back(offset + i);
      units_.push_back(shifted);
    }
  }
}

at::Tensor ChunkedStage::forward(const at::Tensor&, const at::Tensor&, double) {
  TORCH_CHECK(false, "ChunkedStage::forward: a stage with ", chunks_.size(),
              " model chunks runs each chunk where the schedule places it; call chunk(c)");
}

ModelStage& ChunkedStage::chunk(int c) {
  TORCH_CHECK(c >= 0 && c < num_chunks(), "ChunkedStage: chunk ", c, " is out of range for ",
              num_chunks(), " chunks");
  return *chunks_[c];
}

}  // namespace trident
