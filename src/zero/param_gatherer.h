// ZeRO stage 3's parameter gathering: each parameter lives as this rank's dp shard of its
// bucket; a layer's buckets are all-gathered into fresh buffers before the layer runs and
// dropped after, counted so that a bucket two layers share is gathered once.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>
#include <vector>

#include "models/layer_scope.h"         // LayerScope
#include "parallel/communicator.h"      // Communicator, WorkHandle
#include "tensor_parallel/parameter.h"  // Parameter
#include "zero/bucket_layout.h"         // BucketLayout

namespace trident {

/// One flat buffer as the gatherer sees it: its layout, the rank's shard space (the
/// parameters' values this rank owns, bucket after bucket) and its parameters.
struct ShardedBuffer {
  const BucketLayout* layout = nullptr;
  at::Tensor shard;            // (layout.shard_space_numel()) param dtype
  std::vector<size_t> params;  // indices into the parameter list, in buffer order
};

/// Gathers and releases layers' parameters for ZeroOptimizer in stage 3. Between a
/// gather and its release a parameter's data is a view into its bucket's gathered buffer;
/// otherwise it is an empty tensor. Autograd may keep a gathered buffer alive past its
/// release through a view it saved for backward; a saved parameter itself (a leaf) is
/// read at backward time, which is why the layer's backward gathers it again.
class ParamGatherer : public LayerScope {
 public:
  /// `units`: per layer, the indices of the parameters it reads (GptStage::layer_units()).
  /// Parameters in no unit are gathered for good (nothing would gather them otherwise).
  ParamGatherer(std::vector<Parameter>& params, std::vector<ShardedBuffer> buffers,
                Communicator& dp, const std::vector<std::vector<size_t>>& units);

  void begin_forward(int unit) override { acquire_unit(unit); }
  void end_forward(int unit) override { release_unit(unit); }
  void begin_backward(int unit) override { acquire_unit(unit); }
  void end_backward(int unit) override { release_unit(unit); }

  /// Drops every gathered bucket (after a backward; before the shards change).
  void release_all();
  /// Gathers every parameter, on purpose (export, tests); release_all() undoes it.
  void gather_all();

  /// Bytes of gathered buffers this rank holds now, and the most it held since the last
  /// reset_peak(); buffers autograd keeps alive after their release are not counted.
  int64_t gathered_bytes() const { return gathered_bytes_; }
  int64_t peak_gathered_bytes() const { return peak_bytes_; }
  void reset_peak() { peak_bytes_ = gathered_bytes_; }

 private:
  struct BucketRef {
    size_t buffer, bucket;
  };
  struct BucketState {
    int refs = 0;
    int pinned = 0;   // references that release_all() keeps (parameters of no layer)
    at::Tensor data;  // (bucket.numel) param dtype, while gathered
  };
  void acquire_unit(int unit);
  void release_unit(int unit);
  void acquire(const BucketRef& r);
  void release(const BucketRef& r);
  void detach_params(const BucketRef& r);
  BucketState& state(const BucketRef& r) { return states_[r.buffer][r.bucket]; }

  std::vector<Parameter>& params_;
  std::vector<ShardedBuffer> buffers_;
  Communicator& dp_;
  std::vector<std::vector<int64_t>> shapes_;   // per parameter, its (tp-shard) shape
  std::vector<std::vector<BucketRef>> units_;  // per unit, the buckets it reads
  std::vector<std::vector<BucketState>> states_;
  int64_t gathered_bytes_ = 0, peak_bytes_ = 0;
};

}  // namespace trident
