// The training loop: builds this rank's pipeline stage of the model, its optimizer, data
// source and pipeline schedule from a validated config, and runs optimizer steps, each one
// the same computation whatever the layout.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "checkpoint/trainer_progress.h"  // TrainerProgress
#include "config/config.h"
#include "pipeline/runtime.h"
#include "pipeline/schedule.h"
#include "train/spike_guard.h"  // SpikeGuard
#include "train/validation.h"   // ValidationResult

namespace trident {
class ModelStage;
class ParallelContext;
class ZeroOptimizer;
namespace data {
class TokenSource;
class EvalSet;
}  // namespace data

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
  double ep_wait_s = 0.0;  // the experts' all-to-alls (expert parallelism)
  double cp_wait_s = 0.0;  // the ring's transfers not hidden behind attention (context parallelism)
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
  /// The most bytes this rank's host tensors held at once since it started (or since
  /// --measure's trials), as the counting CPU allocator sees them (common/memory_tracker.h):
  /// on a CPU device the live part of the resident set, which the planner's memory model
  /// predicts; 0 where the allocator is not installed.
  int64_t peak_tensor_bytes = 0;
  /// The loss or the gradient norm was not finite: the update was skipped on every rank
  /// (weights, moments and the optimizer's step count untouched).
  bool skipped = false;
  /// Skipped because the spike guard found the loss or gradient norm far above the recent
  /// steps' (finite, so not a non-finite skip); `spike_reason` says by how much.
  bool spike = false;
  std::string spike_reason;
  /// A healthy step the guard warned about (a gradient-norm jump under clipping), and why.
  std::string guard_warning;
  int64_t skipped_in_a_row = 0;  // consecutive skipped steps ending with this one
  /// Set on a step after which the run validated ([eval]): the loss over the eval set,
  /// per source, and its time (kept out of step_time_s and tokens_per_s).
  std::optional<ValidationResult> validation;
  std::vector<std::string> eval_sources;  // the names validation.loss_by_source follows
  int64_t data_batch = 0;                 // the batch of the data stream the step trained on
  /// Where the step's sequences came from, per source of the data (its names): the tokens
  /// each gave, and how many epochs of its training windows have been read after the step
  /// (token files read in epochs; 0 for synthetic data).
  std::vector<std::string> sources;
  std::vector<int64_t> tokens_by_source;
  std::vector<double> epochs_by_source;
  /// Set when the run rolled back after this step (guard.rollback_after skips in a row):
  /// the step it went back to, the checkpoint, and the batches it then left out.
  struct Rollback {
    int64_t to_step = 0;
    std::string checkpoint;
    DataWindow left_out;
  };
  std::optional<Rollback> rollback;
  /// Mixture-of-Experts layers (none in a dense model), over the step's tokens on every
  /// rank: the auxiliary losses' share of the objective (not in `loss`), the (token, expert)
  /// choices dropped at capacity, and per MoE layer the fewest and most choices an expert got.
  struct MoeLoad {
    int64_t layer = 0, min = 0, max = 0;
  };
  double moe_aux_loss = 0.0;
  int64_t moe_dropped = 0;
  std::vector<MoeLoad> moe_load;
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
  /// Resuming: the learning-rate schedule is a function of the step and the data position
  /// one of the step and the windows left out, so the step and progress() are all of the
  /// trainer's own state (the optimizer keeps its own).
  void set_completed_steps(int64_t steps) { completed_ = steps; }
  /// The windows left out and the spike guard's state as of the completed step: what a
  /// checkpoint saves, and where a loaded one is put before restore_progress().
  TrainerProgress& progress() { return progress_; }
  /// Takes up a progress() that a checkpoint just filled: its guard state, and its data
  /// windows with the config's data.skip.
  void restore_progress();
  /// Leaves the batches `window` of the data stream out from the next step on.
  void skip_data(DataWindow window);
  /// The batch of the data stream that step `step` trains on.
  int64_t data_batch(int64_t step) const;

  ModelStage& model() { return *model_; }
  ZeroOptimizer& optimizer() { return *optimizer_; }
  const TrainConfig& config() const { return config_; }
  std::optional<double> loss_floor() const;
  std::string data_description() const;
  /// Model FLOPs of one step (forward and backward, without recomputation).
  double flops_per_step() const;
  /// The records of the last step's executed instructions.
  const StepResult& last_step() const { return last_; }

  /// Whether the run validates ([eval] with a source and sequences).
  bool validates() const { return eval_set_ != nullptr; }
  /// The validation loss of the current weights over the eval set, the same on every rank
  /// and in every layout (train/validation.h). Collective; between steps.
  ValidationResult validate();
  /// One line for the log: the eval set's sources and windows.
  std::string eval_description() const;
  /// The eval set's source names, in the order of ValidationResult::loss_by_source.
  std::vector<std::string> eval_sources() const;
  /// eval.sample_tokens bytes that continue eval.sample_prompt, from the current weights:
  /// drawn at temperature 0.8 from the 40 likeliest, the draws keyed by (train.seed, step),
  /// so every layout writes the same text. Collective over the tp group.
  std::string sample(int64_t step);

 private:
  /// Micro-batch k of data batch `batch` (1-based).
  MicroBatch micro_batch(int64_t batch, int k) const;
  /// A micro-batch of the eval set's `sequences` (-1: a padding row, which counts no token).
  MicroBatch eval_micro_batch(const std::vector<int64_t>& sequences) const;
  /// Rows of T+1 tokens as a micro-batch: inputs, targets (-1 after data.eod_token and on
  /// `padding` rows), this cp rank's slice of both.
  MicroBatch to_micro_batch(std::vector<int32_t>& tokens, const std::vector<bool>& padding) const;
  /// The targets a row of T+1 tokens counts: T, or those not predicted from data.eod_token.
  int64_t counted_targets(const int32_t* row, int64_t T) const;
  /// What each token's loss of data batch `batch` is multiplied by: one over the tokens the
  /// step counts (all of the global batch's, or those not after data.eod_token).
  double loss_scale(int64_t batch) const;
  /// Fills metrics.sources, tokens_by_source and epochs_by_source for its data batch.
  void count_sources(StepMetrics& metrics) const;
  /// The step's global loss from each stage's part; the same on every rank. Collective.
  double agree_loss(double stage_loss);
  /// The step's MoE statistics summed over the world (collective; MoE models only); returns
  /// each MoE layer's load per expert (the choices it received over the step's tokens).
  std::map<int64_t, std::vector<double>> gather_moe_statistics(StepMetrics& metrics);
  /// The sigmoid router's balancing after a step: each expert's bias moves by
  /// model.moe_bias_update_rate towards the layer's mean load (DeepSeek-V3).
  void update_router_bias(const std::map<int64_t, std::vector<double>>& load);

  TrainConfig config_;
  ParallelContext& ctx_;
  std::unique_ptr<data::TokenSource> source_;
  std::unique_ptr<data::EvalSet> eval_set_;  // null: no validation
  std::unique_ptr<ModelStage> model_;
  std::unique_ptr<ZeroOptimizer> optimizer_;
  std::unique_ptr<PipelineRuntime> runtime_;
  pipeline::Schedule schedule_;
  int64_t completed_ = 0;
  int64_t skipped_in_a_row_ = 0;
  SpikeGuard guard_;
  TrainerProgress progress_;
  StepResult last_;
};

}  // namespace trident
