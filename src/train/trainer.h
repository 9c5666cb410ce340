// The training loop: builds this rank's pipeline stage of the model, its optimizer, data
// source and pipeline schedule from a validated config, and runs optimizer steps, each one
// the same computation whatever the layout.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "pipeline/runtime.h"
#include "pipeline/schedule.h"

namespace trident {
class ModelStage;
class ParallelContext;
class ZeroOptimizer;
namespace data {
class TokenSource;
}

/// What one optimizer step did; identical on every rank.
struct StepMetrics {
  int64_t step = 0;  // 1-based number of the update
  double loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;
  double step_time_s = 0.0;
  double tokens_per_s = 0.0;
  double tflops = 0.0;  // achieved model FLOP/s, in units of 1e12
  /// Seconds this rank spent inside each group's communication during the step (posting,
  /// testing, waiting): the part not hidden behind computation (pp's includes the bubble).
  double dp_wait_s = 0.0;
  double tp_wait_s = 0.0;
  double pp_wait_s = 0.0;
  /// The same waits summed over this rank's groups that span nodes, and over the others.
  double inter_node_wait_s = 0.0;
  double intra_node_wait_s = 0.0;
  /// The nvme tier (this rank): seconds blocked on its transfers, seconds of its streamed
  /// update (transfers and AdamW together), and the bytes it read and wrote in the step.
  double tier_wait_s = 0.0;
  double tier_stream_s = 0.0;
  int64_t tier_bytes = 0;
  /// This rank's peak resident set since it started, as the kernel counts it (ru_maxrss).
  int64_t peak_rss_bytes = 0;
  /// The loss or the gradient norm was not finite: the update was skipped on every rank
  /// (weights, moments and the optimizer's step count untouched).
  bool skipped = false;
  int64_t skipped_in_a_row = 0;  // consecutive skipped steps ending with this one
};

class Trainer {
 public:
  /// May throw on bad input (data file, layout); run it inside run_agreed so that every
  /// rank stops with the same message.
  Trainer(const TrainConfig& config, ParallelContext& ctx);
  ~Trainer();

  /// Runs the next optimizer step.
  StepMetrics step();
  int64_t completed_steps() const { return completed_; }
  /// Resuming: the data position and the learning-rate schedule are functions of the
  /// step, so the step is all of the trainer's own state (the optimizer keeps its own).
  void set_completed_steps(int64_t steps) { completed_ = steps; }

  ModelStage& model() { return *model_; }
  ZeroOptimizer& optimizer() { return *optimizer_; }
  const TrainConfig& config() const { return config_; }
  std::optional<double> loss_floor() const;
  std::string data_description() const;
  /// Model FLOPs of one step (forward and backward, without recomputation).
  double flops_per_step() const;
  /// The records of the last step's executed instructions.
  const StepResult& last_step() const { return last_; }

 private:
  MicroBatch micro_batch(int64_t step, int k) const;
  /// The step's global loss from each stage's part; the same on every rank. Collective.
  double agree_loss(double stage_loss);

  TrainConfig config_;
  ParallelContext& ctx_;
  std::unique_ptr<data::TokenSource> source_;
  std::unique_ptr<ModelStage> model_;
  std::unique_ptr<ZeroOptimizer> optimizer_;
  std::unique_ptr<PipelineRuntime> runtime_;
  pipeline::Schedule schedule_;
  int64_t completed_ = 0;
  int64_t skipped_in_a_row_ = 0;
  StepResult last_;
};

}  // namespace trident
