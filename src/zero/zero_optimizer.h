// ZeroOptimizer, the optimizer of every layout: parameters in flat buffers, gradients
// reduced over dp bucket by bucket while backward runs (ZeRO stages 0, 1, 2), AdamW on the
// rank's shard, updated parameters all-gathered over dp. See docs/zero.md.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor, at::ScalarType

#include <cstdint>
#include <deque>       // std::deque
#include <functional>  // std::function
#include <memory>      // std::shared_ptr, std::unique_ptr
#include <utility>     // std::pair
#include <vector>

#include "parallel/communicator.h"      // Communicator, WorkHandle
#include "tensor_parallel/parameter.h"  // Parameter, ParamSpec
#include "zero/bucket_layout.h"         // BucketLayout, Range
#include "zero/param_gatherer.h"        // ParamGatherer

namespace torch::autograd {
struct Node;
}

namespace trident {
class ParallelContext;

/// How gradients and optimizer state are sharded over dp.
struct ZeroOptions {
  int stage = 0;                             // 0, 1, 2 or 3
  int64_t bucket_size = 1 << 20;             // elements per reduction, at least
  at::ScalarType reduce_dtype = at::kFloat;  // stage 2/3 payload for bf16 params: fp32 or bf16
  GatherOptions gather;                      // stage 3
  int64_t persist_below = 100000;            // stage 3: smaller parameters stay whole
};

/// AdamW's hyper-parameters; the learning rate comes with each step.
struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
};

/// Bytes of model state a rank holds between steps.
struct ModelStateBytes {
  int64_t parameters = 0, gradients = 0, optimizer_states = 0;
  int64_t total() const { return parameters + gradients + optimizer_states; }
};

/// The optimizer state of one parameter restricted to what this rank owns: elements
/// [start, start + length) of the flattened local (tp-shard) tensor. Stage 0 owns the whole
/// parameter on every dp rank (identical copies); stages 1 and 2 own disjoint ranges whose
/// union over the dp group is the parameter. The tensors are writable views of `length`
/// elements (empty when length == 0): loading a checkpoint is `view.copy_(saved)`.
struct ParamStateView {
  int64_t start = 0;
  int64_t length = 0;
  at::Tensor master;      // fp32 for bf16 params; for fp32/fp64 params, the parameter itself
  at::Tensor exp_avg;     // in max(param dtype, fp32)
  at::Tensor exp_avg_sq;  // in max(param dtype, fp32)
  at::Tensor param;       // the parameter's values in this range, in its own dtype
};

class ZeroOptimizer {
 public:
  /// `params`: this rank's parameters (its pipeline stage, its tp shard) in construction
  /// order. Their data and (stages 0/1) their grads become views into flat buffers. In
  /// stage 3 `units` lists each layer's parameters (ModelStage::layer_units()): the
  /// parameters become shards, gathered per layer through layer_scope().
  ZeroOptimizer(std::vector<Parameter>& params, ParallelContext& ctx, const ZeroOptions& zero,
                const AdamWOptions& adamw, const std::vector<std::vector<size_t>>& units = {});
  ~ZeroOptimizer();
  ZeroOptimizer(const ZeroOptimizer&) = delete;
  ZeroOptimizer& operator=(const ZeroOptimizer&) = delete;

  /// Called before each micro-batch's backward; `last` = the step's last micro-batch here.
  void begin_backward(bool last);
  /// Called after each micro-batch's backward: launches any reduction not yet launched.
  void end_backward();
  /// Waits for every dp reduction, then sums the tied embedding's gradient over the
  /// embedding group (first and last pipeline stage). Gradients still held by parameters
  /// (a backward run outside begin/end_backward) are reduced here first.
  void reduce_gradients();
  /// Global L2 norm of the whole model's gradient, each element counted once. Collective
  /// over the world group; call after reduce_gradients().
  double grad_norm();
  /// AdamW with learning rate `lr` on the gradients times `grad_scale`, then (stages 1, 2)
  /// the updated parameters all-gathered over dp; gradients reset to zero.
  void step(double lr, double grad_scale);
  /// Drops this step's gradients without an update (a step skipped for a non-finite loss or
  /// gradient): parameters, moments and the step count stay as they were.
  void skip_step();

  /// Bytes this rank holds for parameters, gradients (with stage 2's shard and bucket
  /// buffers) and optimizer states (master weights and both moments), padding included.
  ModelStateBytes bytes() const;

  /// Checkpoint access, per parameter in construction order.
  size_t num_params() const { return params_.size(); }
  ParamStateView param_state(size_t i) const;
  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t step) { step_count_ = step; }
  /// Re-reads the master weights from the parameters (bf16 training, after loading model
  /// weights without optimizer state); a no-op when the parameters are the master.
  void reload_master_from_params();

  /// Stage 3: what the model reports its layers to (gathers and releases parameters);
  /// nullptr in stages 0-2, where every parameter is always whole.
  ParamGatherer* layer_scope() { return gatherer_.get(); }
  /// Stage 3: makes every parameter whole on this rank, on purpose (export, tests), until
  /// release_params(); a no-op in stages 0-2. Collective over dp.
  void gather_params();
  void release_params();

  /// Parameter elements of this rank, without and with the flat buffers' padding.
  int64_t numel() const;
  int64_t padded_numel() const;
  /// The dtypes: of the optimizer state (and stage 2's gradient shard), and of the
  /// payload of stage 2's reduce-scatters.
  at::ScalarType state_dtype() const { return state_dtype_; }
  at::ScalarType transport_dtype() const { return transport_dtype_; }
  const ZeroOptions& options() const { return zero_; }

 private:
  friend class GradReadyHook;

  /// One flat buffer and the tensors laid out like it.
  struct Group {
    std::vector<size_t> params;  // indices into params_, in buffer order
    BucketLayout layout;
    at::Tensor data;                 // stages 0-2: (numel) param dtype
    at::Tensor param_shard;          // stage 3: (shard space) param dtype
    at::Tensor grad;                 // stages 0/1: (numel) param dtype
    at::Tensor grad_shard;           // stage 2: (domain) state dtype
    at::Tensor master;               // bf16 params: (domain) fp32
    at::Tensor exp_avg, exp_avg_sq;  // (domain) state dtype
    std::vector<bool> launched;      // per bucket, in the current reduction round
    std::vector<int> ready;          // per bucket: parameters whose gradient is final
  };
  /// An operation in flight and what to do once it completes.
  struct Pending {
    WorkHandle work;
    std::function<void()> on_done;
    int slot = -1;  // stage 2's bucket buffer it reads, or -1
  };
  struct Slot {
    at::Tensor input, output;  // (max bucket), (max bucket / dp) in the transport dtype
  };

  void build_group(Group& g, const ZeroOptions& zero);
  void on_grad_ready(size_t param);
  void launch(size_t group, size_t bucket);
  void launch_sharded_grads(Group& g, size_t b);
  void launch_single_param(Group& g, size_t b, at::Tensor shard);
  void attach_grad_views_of(Group& g);
  void reload_master_from_params_of(Group& g);
  int acquire_slot();
  void retire_front();
  void poll();
  void wait_pending();
  /// Zeroes the gradients (and stage 2's shard) and marks every bucket unlaunched.
  void reset_gradients();
  void reduce_tied_embedding();
  /// Bucket b's domain: what this rank updates (the whole bucket in stage 0, else its
  /// shard), in buffer coordinates, and its offset in the state tensors.
  Range domain(const Group& g, size_t b) const;
  int64_t state_offset(const Group& g, size_t b) const;
  void update_bucket(Group& g, size_t b, double lr, double grad_scale);
  void all_gather_params();
  void shard_params(const std::vector<std::vector<size_t>>& units);
  /// The parameters' values in bucket b's domain (stage 3: the rank's shard of them).
  at::Tensor params_in_domain(Group& g, size_t b) const;
  bool shards_grads() const { return zero_.stage >= 2; }

  std::vector<Parameter>& params_;
  ParallelContext& ctx_;
  ZeroOptions zero_;
  AdamWOptions adamw_;
  at::ScalarType param_dtype_, state_dtype_, transport_dtype_;
  at::Device device_{at::kCPU};  // the parameters', and so every buffer's
  std::vector<Group> groups_;    // [0]: the tied token embedding (may be empty), [1]: the rest
  std::vector<std::pair<size_t, size_t>> where_;  // per param: (group, index in group)
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hook_keys_;
  std::vector<bool> seen_;          // per param: its gradient arrived in this backward
  std::deque<Pending> pending_;     // in posting order
  static constexpr int kSlots = 2;  // stage 2's bucket buffers (double buffering)
  std::vector<Slot> slots_;
  int next_slot_ = 0;
  bool in_backward_ = false;
  bool reduce_in_backward_ = false;
  int64_t step_count_ = 0;
  std::unique_ptr<ParamGatherer> gatherer_;  // stage 3
};

}  // namespace trident
