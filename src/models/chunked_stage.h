// A pipeline stage that holds several model chunks (interleaved 1F1B's virtual stages):
// chunk c of stage s is virtual stage c * stages + s of stages * chunks. Its parameter list
// is every chunk's, chunk by chunk, so the optimizer and checkpoints see one stage.
#pragma once
#include <memory>  // std::shared_ptr, std::unique_ptr
#include <vector>  // std::vector

#include "models/model_stage.h"  // ModelStage

namespace trident {

class ChunkedStage : public ModelStage {
 public:
  /// `chunks[c]` is virtual stage c * stages + stage, built by the model family; the
  /// first chunk of stage 0 holds the embedding, the last chunk of the last stage the head.
  ChunkedStage(std::vector<std::unique_ptr<ModelStage>> chunks, Communicator& tp, int stage,
               int stages);

  /// A chunked stage runs chunk by chunk, each where the schedule places it: calling
  /// forward on the whole stage is a logic error (throws).
  at::Tensor forward(const at::Tensor& input, const at::Tensor& targets,
                     double loss_scale) override;

  int num_chunks() const override { return static_cast<int>(chunks_.size()); }
  void take_moe_statistics(std::map<int64_t, MoeLayerStats>& into) override {
    for (auto& chunk : chunks_) chunk->take_moe_statistics(into);
  }
  void set_router_bias(const std::map<int64_t, std::vector<double>>& bias) override {
    for (auto& chunk : chunks_) chunk->set_router_bias(bias);
  }
  ModelStage& chunk(int c) override;

 private:
  std::vector<std::shared_ptr<ModelStage>> chunks_;
};

}  // namespace trident
