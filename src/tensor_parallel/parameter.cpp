// Shard geometry and layout-free initialisation of parameters.
#include "tensor_parallel/parameter.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>  // TORCH_CHECK

#include "common/counter_rng.h"  // hash_name, normal_at

namespace trident {

namespace {

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

}  // namespace

int copies_over_tp(const ShardSpec& shard, int tp_size) {
  return shard.replicated() ? tp_size : shard.replicas;
}

bool is_primary_copy(const ShardSpec& shard, int tp_rank) {
  return shard.replicated() ? tp_rank == 0 : tp_rank % shard.replicas == 0;
}

std::vector<int64_t> local_shape(const ParamSpec& spec, int tp_size) {
  std::vector<int64_t> shape = spec.global_shape;
  if (spec.shard.replicated()) return shape;
  TORCH_CHECK(spec.shard.replicas >= 1 && tp_size % spec.shard.replicas == 0, "parameter ",
              spec.name, ": ", spec.shard.replicas, " replicas do not divide tp = ", tp_size);
  tp_size /= spec.shard.replicas;  // the number of distinct shards
  const int64_t n = shape.at(spec.shard.dim);
  TORCH_CHECK(n % (spec.shard.fused_chunks * tp_size) == 0, "parameter ", spec.name, ": dimension ",
              spec.shard.dim, " of size ", n, " does not split into ", spec.shard.fused_chunks,
              " x ", tp_size, " equal parts");
  shape[spec.shard.dim] = n / tp_size;
  return shape;
}

std::vector<ShardSlice> shard_slices(const ParamSpec& spec, int tp_rank, int tp_size) {
  if (spec.shard.replicated()) {
    const int64_t n = spec.global_shape.empty() ? 1 : spec.global_shape[0];
    return {{0, 0, n}};
  }
  // Ranks of one group of replicas hold the same shard: split over the groups.
  tp_rank /= spec.shard.replicas;
  tp_size /= spec.shard.replicas;
  const int64_t global = spec.global_shape.at(spec.shard.dim);
  const int chunks = spec.shard.fused_chunks;
  const int64_t per_chunk = global / chunks;
  const int64_t local = per_chunk / tp_size;
  std::vector<ShardSlice> slices;
  for (int c = 0; c < chunks; ++c)
    slices.push_back({c * local, c * per_chunk + tp_rank * local, local});
  return slices;
}

at::Tensor init_shard(const ParamSpec& spec, uint64_t seed, int tp_rank, int tp_size) {
  const std::vector<int64_t> shape = local_shape(spec, tp_size);
  return init_range(spec, seed, tp_rank, tp_size, 0, product(shape, 0, shape.size())).view(shape);
}

at::Tensor init_range(const ParamSpec& spec, uint64_t seed, int tp_rank, int tp_size, int64_t begin,
                      int64_t n) {
  const std::vector<int64_t> shape = local_shape(spec, tp_size);
  TORCH_CHECK(begin >= 0 && n >= 0 && begin + n <= product(shape, 0, shape.size()), "init_range: [",
              begin, ", ", begin + n, ") is outside parameter ", spec.name);
  if (spec.init == InitKind::kZeros) return at::zeros({n}, at::kDouble);
  if (spec.init == InitKind::kOnes) return at::ones({n}, at::kDouble);

  const uint64_t key = hash_name(seed, spec.name);
  at::Tensor out = at::zeros({n}, at::kDouble);
  double* dst = out.data_ptr<double>();
  const std::vector<int64_t>& g = spec.global_shape;
  const size_t dim = spec.shard.replicated() ? 0 : static_cast<size_t>(spec.shard.dim);
  // View both tensors as (outer, dim, inner) around the split dimension; a local element
  // (o, l, i) is the global element (o, the global index of l, i).
  const int64_t inner = product(g, dim + 1, g.size());
  const int64_t global_dim = g.empty() ? 1 : g[dim];
  const int64_t local_dim = shape.empty() ? 1 : shape[dim];
  const int64_t valid_rows = spec.valid_rows < 0 ? g.at(0) : spec.valid_rows;
  const std::vector<ShardSlice> slices = shard_slices(spec, tp_rank, tp_size);
  for (int64_t j = begin; j < begin + n; ++j) {
    const int64_t o = j / (local_dim * inner);
    const int64_t l = j / inner % local_dim;
    const int64_t i = j % inner;
    const ShardSlice* s = &slices.front();
    while (l >= s->local_start + s->length) ++s;  // slices are in local order
    const int64_t gd = s->global_start + l - s->local_start;
    const int64_t row = dim == 0 ? gd : o;  // the global row (dim 0 index)
    if (row >= valid_rows) continue;
    dst[j - begin] =
        spec.std * normal_at(key, static_cast<uint64_t>((o * global_dim + gd) * inner + i));
  }
  return out;
}

void place_shard(const ParamSpec& spec, int tp_rank, int tp_size, const at::Tensor& shard,
                 at::Tensor& global) {
  if (spec.shard.replicated()) {
    global.copy_(shard);
    return;
  }
  const int dim = spec.shard.dim;
  for (const ShardSlice& s : shard_slices(spec, tp_rank, tp_size))
    global.narrow(dim, s.global_start, s.length).copy_(shard.narrow(dim, s.local_start, s.length));
}

at::Tensor cut_shard(const ParamSpec& spec, int tp_rank, int tp_size, const at::Tensor& global) {
  if (spec.shard.replicated()) return global.clone();
  const int dim = spec.shard.dim;
  std::vector<at::Tensor> parts;
  for (const ShardSlice& s : shard_slices(spec, tp_rank, tp_size))
    parts.push_back(global.narrow(dim, s.global_start, s.length));
  return at::cat(parts, dim).contiguous();
}

at::Tensor ParamRegistry::create(const ParamSpec& spec) {
  const std::vector<int64_t> shape = local_shape(spec, tp_size_);
  at::Tensor t = deferred_ ? at::empty_strided(shape, std::vector<int64_t>(shape.size(), 0),
                                               at::TensorOptions().dtype(dtype_).device(device_))
                           : init_shard(spec, seed_, tp_rank_, tp_size_).to(device_, dtype_);
  t.set_requires_grad(true);
  params_.push_back({spec, t});
  return t;
}

}  // namespace trident
