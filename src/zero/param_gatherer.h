// ZeRO stage 3's parameter gathering: each parameter lives as this rank's dp shard of its
// bucket; a layer's buckets are all-gathered into fresh buffers before the layer runs (the
// next layer's prefetched meanwhile) and dropped after, counted so that a bucket two
// layers share is gathered once.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>
#include <functional>  // std::function
#include <map>         // std::map
#include <string>
#include <vector>

#include "models/layer_scope.h"         // LayerScope
#include "parallel/communicator.h"      // Communicator, WorkHandle
#include "tensor_parallel/parameter.h"  // Parameter
#include "zero/bucket_layout.h"         // BucketLayout

namespace trident {

/// How stage 3 gathers (parallel.zero3_* in the config).
struct GatherOptions {
  bool prefetch = true;               // post the next layer's gather when one begins
  int max_live_layers = 2;            // layers held at once, the prefetched one included
  bool reshard_after_forward = true;  // false: a layer stays gathered until the step ends
};

/// One flat buffer as the gatherer sees it: its layout, the rank's shard space (the
/// parameters' values this rank owns, bucket after bucket) and its parameters.
struct ShardedBuffer {
  const BucketLayout* layout = nullptr;
  at::Tensor shard;            // (layout.shard_space_numel()) param dtype
  std::vector<size_t> params;  // indices into the parameter list, in buffer order
  /// When set (the nvme tier holds the shard), starts reading bucket b's shard instead of
  /// taking it from `shard`, which is then empty and gives only the dtype; the call it
  /// returns waits for the read and gives the shard: `dst` when given (the gathered
  /// buffer, when this rank's shard is the whole bucket), else memory of the loader's. A
  /// prefetched layer's reads thus run while the layer before it computes.
  std::function<std::function<at::Tensor()>(size_t bucket, at::Tensor dst)> load;
  /// The ranks it is sharded over (the experts' buffers: the expert-dp group); null: the
  /// gatherer's dp group.
  Communicator* group = nullptr;
};

/// Gathers and releases layers' parameters for ZeroOptimizer in stage 3. Between a
/// gather and its release a parameter's data is a view into its bucket's gathered buffer;
/// otherwise it is an empty tensor. Autograd may keep views of a gathered buffer that it
/// saved for backward: a release then frees the buffer's memory but keeps its storage,
/// and the layer's backward, which gathers the layer again, gathers into that storage, so
/// those views read the parameters again (as FSDP does by resizing storage). A layer's
/// gathered weights therefore never outlive its forward, recomputation or not.
class ParamGatherer : public LayerScope {
 public:
  /// `units`: per layer, the indices of the parameters it reads (ModelStage::layer_units());
  /// parameters in none of `buffers` (kept whole elsewhere) are skipped.
  ParamGatherer(std::vector<Parameter>& params, std::vector<ShardedBuffer> buffers,
                Communicator& dp, const std::vector<std::vector<size_t>>& units,
                const GatherOptions& options);
  /// Waits for the tier's reads still in flight: they write into memory it frees.
  ~ParamGatherer() override;

  void begin_forward(int unit) override { acquire_unit(unit, +1); }
  void end_forward(int unit) override;
  void begin_backward(int unit) override { acquire_unit(unit, -1); }
  void end_backward(int unit) override;

  /// After a micro-batch's backward: drops what the backward left gathered (the first
  /// stage's embeddings), unless layers stay gathered until the step ends.
  void end_micro_batch();
  /// Drops every gathered bucket (before the shards change).
  void release_all();
  /// Gathers every parameter, on purpose (export, tests); release_all() undoes it.
  void gather_all();

  /// Bytes of gathered buffers this rank holds now, and the most it held since the last
  /// reset_peak(); buffers autograd keeps alive after their release are not counted.
  int64_t gathered_bytes() const { return gathered_bytes_; }
  int64_t peak_gathered_bytes() const { return peak_bytes_; }
  void reset_peak() { peak_bytes_ = gathered_bytes_; }
  /// The bytes of unit `unit`'s buckets, gathered.
  int64_t unit_bytes(int unit) const;
  int num_units() const { return static_cast<int>(units_.size()); }
  /// Gathers (all-gather calls of a layer) since construction.
  int64_t unit_gathers() const { return unit_gathers_; }

 private:
  struct BucketRef {
    size_t buffer, bucket;
  };
  struct BucketState {
    int refs = 0;
    int pinned = 0;   // references release_all() keeps (parameters of no layer)
    at::Tensor data;  // (bucket.numel) param dtype, while gathered
    WorkHandle work;  // the all-gather filling `data`, until it is waited on
    /// The tier's read of this rank's shard, until make_ready() (or a release) waits for it.
    std::function<at::Tensor()> loading;
    /// A released buffer that autograd still references, its memory freed; the next
    /// gather of the bucket refills it.
    at::Tensor hollow;
  };
  void acquire_unit(int unit, int direction);
  /// Holds `unit` and posts its gathers; `verified`: checks the order first (blocking),
  /// otherwise (a prefetch) the check travels with the gathers and is verified on use.
  void hold_unit(int unit, bool verified);
  void release_unit(int unit);
  /// Posts the order check of a gather of `unit` (before its buckets' all-gathers, so it
  /// completes whatever those pair with); verify_order() waits for it and compares.
  void post_order_check(int unit);
  void verify_order(int unit);
  void acquire(const BucketRef& r);
  /// Fills bucket r's gathered buffer from this rank's shard `mine` (an all-gather over dp).
  void gather_from(const BucketRef& r, const at::Tensor& mine);
  void make_ready(const BucketRef& r);
  void release(const BucketRef& r);
  void detach_params(const BucketRef& r);
  BucketState& state(const BucketRef& r) { return states_[r.buffer][r.bucket]; }
  int live_units() const;
  /// The memory a gathered buffer of bucket r takes (its bytes, rounded up to whole
  /// blocks on the host), and a unit's buffers together: the units spares are counted in.
  size_t buffer_memory(const BucketRef& r) const;
  int64_t unit_memory(int unit) const;
  /// The memory of a gathered buffer: a spare of that size, else the device's allocator.
  at::DataPtr take_memory(size_t nbytes, at::Device device);
  /// Keeps a released buffer's memory as a spare while gathered and spare bytes together
  /// stay within spare_limit_ (the live bound plus one layer); frees it otherwise.
  void give_memory(at::DataPtr memory, size_t nbytes);

  std::vector<Parameter>& params_;
  std::vector<ShardedBuffer> buffers_;
  Communicator& dp_;
  /// The group a buffer's buckets are gathered over.
  Communicator& group_of(const ShardedBuffer& b) const { return b.group ? *b.group : dp_; }
  GatherOptions options_;
  std::vector<std::vector<int64_t>> shapes_;   // per parameter, its (tp-shard) shape
  std::vector<std::vector<BucketRef>> units_;  // per unit, the buckets it reads
  std::vector<std::string> unit_names_;        // per unit, its first parameter's name
  std::vector<int> holds_;                     // per unit: acquisitions not yet released
  std::vector<bool> prefetched_;               // per unit: held by a prefetch, not yet used
  struct OrderCheck {
    WorkHandle work;
    at::Tensor mine, all;  // (1), (dp) int64: the unit index of every dp rank
  };
  std::vector<OrderCheck> checks_;  // per unit, while its gather's check is in flight
  std::vector<std::vector<BucketState>> states_;
  int64_t gathered_bytes_ = 0, peak_bytes_ = 0, unit_gathers_ = 0;
  std::map<size_t, std::vector<at::DataPtr>> spares_;  // by size in bytes
  int64_t spare_bytes_ = 0, spare_limit_ = 0;
};

}  // namespace trident
