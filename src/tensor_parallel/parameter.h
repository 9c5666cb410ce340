// Layout-free parameters: each has a global name and shape, knows how tensor parallelism
// splits it, and is initialised as a pure function of (seed, name, global element index),
// so a tp shard is, bit for bit, a slice of the unsharded tensor.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>
#include <string>
#include <vector>

namespace trident {

enum class InitKind { kNormal, kZeros, kOnes };

/// How tp splits a parameter: `dim` < 0 means replicated on every tp rank. A fused
/// parameter (QKV) is `fused_chunks` blocks along `dim`, each split over tp separately.
/// With `replicas` > 1, groups of that many consecutive tp ranks hold the same shard
/// (Llama's kv heads when tp > kv_heads): the split is over tp / replicas parts.
struct ShardSpec {
  int dim = -1;
  int fused_chunks = 1;
  int replicas = 1;
  bool replicated() const { return dim < 0; }
};

/// How many tp ranks hold each element of a parameter split as `shard`.
int copies_over_tp(const ShardSpec& shard, int tp_size);
/// Whether tp rank `tp_rank` holds the copy that checkpoints store and the gradient norm
/// counts: the first rank of its group of copies.
bool is_primary_copy(const ShardSpec& shard, int tp_rank);

struct ParamSpec {
  std::string name;                   // layout-free, e.g. "h.3.attn.qkv.weight"
  std::vector<int64_t> global_shape;  // the unsharded shape
  ShardSpec shard;
  InitKind init = InitKind::kNormal;
  double std = 0.02;
  int64_t valid_rows = -1;    // rows at and beyond it (vocabulary padding) start at zero
  bool weight_decay = false;  // AdamW decays matrices only
  bool tied_copy = false;     // the last stage's copy of the token embedding
  /// A routed expert's: held by one rank of each ep group, so its gradient is reduced (and
  /// its ZeRO shards cut) over the expert-dp group instead of dp.
  bool expert = false;
};

/// One contiguous run of a shard along the split dimension.
struct ShardSlice {
  int64_t local_start;
  int64_t global_start;
  int64_t length;
};

std::vector<int64_t> local_shape(const ParamSpec& spec, int tp_size);
/// The runs that make up tp rank `tp_rank`'s shard (one for a plain split, one per chunk
/// for a fused one, one covering everything for a replicated parameter).
std::vector<ShardSlice> shard_slices(const ParamSpec& spec, int tp_rank, int tp_size);

/// The initial value of tp rank `tp_rank`'s shard, in float64.
at::Tensor init_shard(const ParamSpec& spec, uint64_t seed, int tp_rank, int tp_size);
/// Elements [begin, begin + n) of init_shard's value flattened, drawn alone (float64, (n)):
/// how ZeRO stage 3 initialises its shard of a parameter that never exists whole.
at::Tensor init_range(const ParamSpec& spec, uint64_t seed, int tp_rank, int tp_size, int64_t begin,
                      int64_t n);

/// Copies a shard into its place in the global tensor (`global` has the global shape).
void place_shard(const ParamSpec& spec, int tp_rank, int tp_size, const at::Tensor& shard,
                 at::Tensor& global);
/// Cuts tp rank `tp_rank`'s shard out of the global tensor.
at::Tensor cut_shard(const ParamSpec& spec, int tp_rank, int tp_size, const at::Tensor& global);

struct Parameter {
  ParamSpec spec;
  at::Tensor tensor;  // this rank's shard; requires grad
};

/// Creates and remembers a model's parameters in construction order.
class ParamRegistry {
 public:
  /// Parameters in `dtype` on `device`; their values are drawn on the host in float64 (the
  /// same numbers on every device and layout) and then moved there.
  ParamRegistry(uint64_t seed, int tp_rank, int tp_size, at::ScalarType dtype,
                at::Device device = at::kCPU)
      : seed_(seed), tp_rank_(tp_rank), tp_size_(tp_size), dtype_(dtype), device_(device) {}

  /// From now on create() returns parameters without values: tensors of the shard's shape
  /// over a single element (all strides zero) that whoever takes them over fills with
  /// init_range() (ZeRO stage 3, which holds only its dp shard of each parameter).
  void defer_init() { deferred_ = true; }

  /// This rank's shard of `spec`, initialised (unless deferred), requiring grad.
  at::Tensor create(const ParamSpec& spec);
  std::vector<Parameter>& params() { return params_; }
  const std::vector<Parameter>& params() const { return params_; }
  int tp_rank() const { return tp_rank_; }
  int tp_size() const { return tp_size_; }
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }

 private:
  uint64_t seed_;
  int tp_rank_, tp_size_;
  at::ScalarType dtype_;
  at::Device device_;
  bool deferred_ = false;
  std::vector<Parameter> params_;
};

}  // namespace trident
