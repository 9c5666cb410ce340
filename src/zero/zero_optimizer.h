// ZeroOptimizer, the optimizer of every layout: parameters in flat buffers, gradients
// reduced over dp bucket by bucket while backward runs (ZeRO stages 0, 1, 2), AdamW on the
// rank's shard, updated parameters all-gathered over dp. See docs/zero.md.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor, at::ScalarType

#include <cstdint>
#include <deque>       // std::deque
#include <functional>  // std::function
#include <memory>      // std::shared_ptr, std::unique_ptr
#include <optional>    // std::optional
#include <string>
#include <utility>  // std::pair
#include <vector>

#include "common/async_io.h"            // AsyncIo, IoBackend
#include "parallel/communicator.h"      // Communicator, WorkHandle
#include "tensor_parallel/parameter.h"  // Parameter, ParamSpec
#include "zero/adamw.h"                 // AdamWOptions
#include "zero/bucket_layout.h"         // BucketLayout, Range
#include "zero/embedding_rows.h"        // EmbeddingRows
#include "zero/muon.h"                  // MuonOptions
#include "zero/nvme_tier.h"             // NvmeTier, TierRing, TierStats
#include "zero/param_gatherer.h"        // ParamGatherer
#include "zero/staging_pool.h"          // StagingPool

namespace torch::autograd {
struct Node;
}

namespace trident {
class ParallelContext;
class MuonExchange;

/// ZeRO-Infinity's nvme tier (parallel.offload_* in the config), the only tier there is: a
/// CPU-device run keeps its states in host memory already.
struct OffloadOptions {
  bool optimizer = false;        // master weights, both moments and (stages 2, 3) the
                                 // reduced gradient shard live in files under dir
  bool params = false;           // stage 3: the parameter shard too (needs optimizer)
  std::string dir;               // each rank's files: <dir>/rank<r>.buffer<b>.tier
  int buffer_count = 4;          // the ring: reads ahead, the piece being updated, writes behind
  int64_t block_size = 4 << 20;  // bytes of each state per transfer
  IoBackend backend = IoBackend::kAuto;
};

/// How gradients and optimizer state are sharded over dp.
struct ZeroOptions {
  int stage = 0;                             // 0, 1, 2 or 3
  int64_t bucket_size = 1 << 20;             // elements per reduction, at least
  at::ScalarType reduce_dtype = at::kFloat;  // stage 2/3 payload for bf16 params: fp32 or bf16
  GatherOptions gather;                      // stage 3
  int64_t persist_below = 100000;            // stage 3: smaller parameters stay whole
  OffloadOptions offload;
  /// Stage 3: the parameters came without values (ParamRegistry::defer_init) and each rank
  /// draws its shard of them from this seed (init_range), so none is ever whole in memory.
  std::optional<uint64_t> draw_seed;
  /// optimizer.name = "muon": the blocks' matrices are updated by Muon (zero/muon.h), their
  /// momentum kept where AdamW keeps its first moment.
  MuonOptions muon;
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
  at::Tensor exp_avg;     // in max(param dtype, fp32); Muon's momentum for its matrices
  at::Tensor exp_avg_sq;  // in max(param dtype, fp32); undefined for Muon's matrices
  at::Tensor param;       // the parameter's values in this range, in its own dtype
};

/// A part of a rank's optimizer state: each parameter with elements in it, and the view
/// of those elements (a sub-range of its param_state()).
using StateWindow = std::vector<std::pair<size_t, ParamStateView>>;

/// What ZeroOptimizer::visit_states hands out.
enum class StateAccess {
  kLayout,     // where the windows lie; tensors of states in the tier are meta tensors
  kRead,       // the values, read-only
  kReadWrite,  // the values, stored again after each window's visit (a load)
};

class ZeroOptimizer {
 public:
  /// AdamW runs over chunks of this many elements of a bucket's domain; the nvme tier's
  /// pieces are whole chunks, so both apply the same kernels to every element.
  static constexpr int64_t kUpdateChunk = 1 << 16;

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

  /// "muon" when Muon updates the blocks' matrices, else "adamw": what checkpoints record.
  const char* optimizer_name() const { return muon_ ? "muon" : "adamw"; }
  /// With Muon, what it updates and how its matrices meet their owners (the run's header);
  /// empty without.
  std::string muon_description() const;
  /// Whether Muon updates parameter i (then exp_avg of its state is Muon's momentum, and
  /// it has no exp_avg_sq).
  bool updated_by_muon(size_t i) const { return groups_[where_[i].first].muon; }

  /// Bytes this rank holds for parameters, gradients (with stage 2's shard and bucket
  /// buffers) and optimizer states (master weights and both moments), padding included.
  ModelStateBytes bytes() const;

  /// Checkpoint access, per parameter in construction order.
  size_t num_params() const { return params_.size(); }
  ParamStateView param_state(size_t i) const;
  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t step) { step_count_ = step; }

  /// Every element of param_state() of every parameter, window after window, without ever
  /// holding the nvme tier's states whole: in memory, one window of all parameters in
  /// construction order; in the tier, one window per piece of the tier, streamed through
  /// its ring (the next pieces read while one is visited). Checkpoints save and load
  /// through it. Only between steps.
  void visit_states(const std::function<void(const StateWindow&)>& visit, StateAccess access);

  /// Offload: whether the states live in the nvme tier (param_state() cannot view them;
  /// visit_states() reads them window by window).
  bool states_in_tier() const { return states_in_tier_; }
  /// "nvme (io_uring, O_DIRECT, ...)": how the states are kept, for the run's header.
  std::string offload_description() const;
  /// The nvme tier's traffic and waits since construction, summed over its files.
  TierStats tier_stats() const;

  /// Stages 1 and 2: where a stage holding both ends of the tied embedding sends its
  /// lookup's gradient rows (ModelStage::set_row_grad_sink), so that the embedding's bucket
  /// is reduced as soon as the head's share is final; reduce_gradients() folds the rows in.
  /// Stage 0 at dp 1 too (nothing to reduce: the rows only spare a dense gradient).
  /// nullptr in stage 3, in stage 0 at dp > 1 and without an embedding.
  RowGradSink* row_grad_sink() { return embedding_rows_.get(); }
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
    bool muon = false;           // Muon's matrices: one state (exp_avg, the momentum)
    Communicator* dp = nullptr;  // the ranks it is reduced and sharded over: dp, or the
                                 // expert-dp group for the experts' buffers
    BucketLayout layout;
    at::Tensor data;                 // stages 0-2: (numel) param dtype
    at::Tensor param_shard;          // stage 3: (shard space) param dtype
    at::Tensor grad;                 // stages 0/1: (numel) param dtype
    at::Tensor grad_shard;           // stage 2: (domain) state dtype
    at::Tensor master;               // bf16 params: (domain) fp32
    at::Tensor exp_avg, exp_avg_sq;  // (domain) state dtype
    std::vector<bool> launched;      // per bucket, in the current reduction round
    std::vector<int> ready;          // per bucket: parameters whose gradient is final
    // The nvme tier: the domain of each bucket cut into pieces of at most the block size
    // (whole kChunks, so the update runs over the same chunks as in memory).
    struct Piece {
      size_t bucket = 0;
      int64_t begin = 0, length = 0;  // within the bucket's domain
    };
    std::vector<Piece> pieces;
    std::vector<size_t> first_piece;  // per bucket
    std::unique_ptr<NvmeTier> tier;
    int master_plane = -1, exp_avg_plane = -1, exp_avg_sq_plane = -1, param_plane = -1;
    int grad_plane = -1;            // stages 2, 3: the reduced gradient shard
    std::vector<bool> grad_stored;  // per bucket: the plane holds this step's gradient
    /// Per bucket of the tier's gradient plane: Σ g² of the step's final gradient (what
    /// grad_norm counts), taken when the last micro-batch's sum was written; undefined
    /// before.
    std::vector<at::Tensor> grad_sq;
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

  /// `whole`: the group's parameters keep their values in memory (all but stage 3's
  /// sharded buffers).
  void build_group(Group& g, const ZeroOptions& zero, bool whole);
  /// Fills `dst` (n elements) with the initial values of elements [begin, begin + n) of
  /// bucket b's domain, drawn from ZeroOptions::draw_seed; the padding is zero.
  void draw_domain(const Group& g, size_t b, int64_t begin, int64_t n, at::Tensor dst) const;
  /// Bucket b's reduced gradient shard (state dtype): a view in memory, or a copy read
  /// from the tier (zeros when nothing was stored this step) into a buffer the next call
  /// reuses.
  at::Tensor grad_shard_of(Group& g, size_t b);
  /// Applies `change` to bucket b's gradient shard in place, in memory or through the
  /// tier (read, changed, written back).
  void change_grad_shard(Group& g, size_t b, const std::function<void(at::Tensor&)>& change);
  /// Σ g² in float64, (1), over the elements of bucket b that grad_norm counts on this
  /// rank, read from `shard` (the bucket's gradient shard; ignored in stages 0, 1).
  at::Tensor bucket_sum_of_squares(const Group& g, size_t b, const at::Tensor& shard) const;
  void on_grad_ready(size_t param);
  void launch(size_t group, size_t bucket);
  void launch_sharded_grads(size_t group, size_t b);
  void launch_single_param(size_t group, size_t b);
  void attach_grad_views_of(Group& g);
  void reload_master_from_params_of(Group& g);
  int acquire_slot();
  void retire_front();
  void poll();
  void wait_pending();
  /// Zeroes the gradients (and stage 2's shard) and marks every bucket unlaunched.
  void reset_gradients();
  void reduce_tied_embedding();
  /// Adds every dp rank's embedding rows into the reduced embedding gradient this rank owns.
  void fold_embedding_rows();
  /// Bucket b's domain: what this rank updates (the whole bucket in stage 0, else its
  /// shard), in buffer coordinates, and its offset in the state tensors.
  Range domain(const Group& g, size_t b) const;
  int64_t state_offset(const Group& g, size_t b) const;
  void update_bucket(Group& g, size_t b, double lr, double grad_scale);
  /// AdamW on elements [begin, begin + n) of bucket b's domain, with the states given.
  /// `grad`: the gradient of those elements, or undefined to take it from memory.
  void update_range(Group& g, size_t b, int64_t begin, int64_t n, at::Tensor master,
                    at::Tensor exp_avg, at::Tensor exp_avg_sq, at::Tensor param, at::Tensor grad,
                    double lr, double grad_scale);
  /// The window of group g's tier piece k: views into `planes` (the piece's planes in a
  /// ring buffer), or meta tensors when `planes` is null.
  StateWindow tier_window(Group& g, size_t k, const std::vector<at::Tensor>* planes);
  /// The nvme tier (zero_offload.cpp): files and pieces, the streamed update, stage 3's
  /// reads of a bucket's parameter shard.
  void init_tier();
  void stream_update(Group& g, double lr, double grad_scale);
  void allocate_states(Group& g);
  /// Starts reading bucket b's parameter shard from the tier (stage 3's gathers) into
  /// `dst`, or into staging memory when `dst` is undefined; the call returned waits for
  /// it and gives the shard. A `dst` at a block boundary with room for whole blocks is
  /// read into directly, any other through staging memory.
  std::function<at::Tensor()> post_param_load(size_t group, size_t bucket, at::Tensor dst);
  /// Posts the transfers of bucket b's pieces of `plane` between the tier and `memory`
  /// (the bucket's domain, block-aligned, each piece at its offset); returns the tickets.
  std::vector<uint64_t> post_bucket(Group& g, size_t b, int plane, const at::Tensor& memory,
                                    bool write);
  /// Waits for the gradient shard's writes in flight (posted by change_grad_shard).
  void finish_grad_writes();
  bool has_master() const;
  void all_gather_params();
  void shard_params(const std::vector<std::vector<size_t>>& units);
  /// The parameters' values in bucket b's domain (stage 3: the rank's shard of them).
  at::Tensor params_in_domain(Group& g, size_t b) const;
  bool shards_grads() const { return zero_.stage >= 2; }
  /// Muon (zero_muon.cpp): which parameters it updates and their exchange; the step of
  /// every Muon parameter's part on this rank.
  void init_muon();
  void muon_step(double lr, double grad_scale);
  /// One round of the exchange (MuonExchange::rounds): the momentum and contribution of
  /// the round's matrices, their exchange, and their update.
  void muon_round(int round, double lr, double grad_scale);
  /// Parameter i's gradient over its part of this rank's domain (param_state(i)'s range).
  at::Tensor grad_in_domain(size_t i);

  std::vector<Parameter>& params_;
  ParallelContext& ctx_;
  ZeroOptions zero_;
  AdamWOptions adamw_;
  at::ScalarType param_dtype_, state_dtype_, transport_dtype_;
  at::Device device_{at::kCPU};  // the parameters', and so every buffer's
  std::vector<Group> groups_;    // indexed by ZeroBuffer (zero/buffer_assignment.h)
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
  bool last_backward_ = false;  // the current (or latest) backward is the step's last
  int64_t step_count_ = 0;
  std::unique_ptr<ParamGatherer> gatherer_;        // stage 3
  std::unique_ptr<EmbeddingRows> embedding_rows_;  // stages 1, 2 (0 at dp 1), with an embedding
  std::unique_ptr<AsyncIo> io_;                    // the nvme tier's
  std::shared_ptr<TierRing> ring_;
  /// The tier's transfer memory: gathers' parameter shards, the gradient shard's buffer.
  std::shared_ptr<StagingPool> staging_;
  at::Tensor grad_staging_;  // grad_shard_of's buffer for a bucket read from the tier
  /// The writes of grad_staging_ to the tier in flight: they land while backward goes on,
  /// and the next use of the buffer (or of the plane) waits for them.
  std::vector<std::pair<NvmeTier*, uint64_t>> grad_writes_;
  bool states_in_tier_ = false;
  std::vector<bool> is_muon_;      // per param, when Muon is on
  std::vector<size_t> muon_held_;  // the params Muon updates, in construction order
  std::unique_ptr<MuonExchange> muon_;
};

}  // namespace trident
