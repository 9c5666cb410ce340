// init_range draws any run of a parameter's tp shard alone: ZeRO stage 3 initialises its dp
// shard with it, so it must give exactly the elements of the whole tensor, cut as tp cuts.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/counter_rng.h"         // hash_name, normal_at
#include "tensor_parallel/parameter.h"  // init_range, cut_shard

namespace trident {
namespace {

constexpr uint64_t kSeed = 1234;

/// The whole parameter from its definition: std x the normal at each global index, zero
/// in the rows at and beyond valid_rows.
at::Tensor reference_global(const ParamSpec& spec) {
  at::Tensor t = at::zeros(spec.global_shape, at::kDouble);
  const int64_t cols = t.numel() / spec.global_shape.at(0);
  const int64_t rows = spec.valid_rows < 0 ? spec.global_shape.at(0) : spec.valid_rows;
  double* p = t.data_ptr<double>();
  const uint64_t key = hash_name(kSeed, spec.name);
  for (int64_t i = 0; i < rows * cols; ++i)
    p[i] = spec.std * normal_at(key, static_cast<uint64_t>(i));
  return t;
}

std::vector<ParamSpec> specs() {
  ParamSpec replicated{"ln.weight", {6, 5}};
  ParamSpec rows{"wte", {16, 6}, ShardSpec{0}};
  rows.valid_rows = 13;  // vocabulary padding
  ParamSpec cols{"fc.weight", {12, 8}, ShardSpec{1}};
  ParamSpec fused{"qkv.weight", {24, 5}, ShardSpec{0, 3}};
  ParamSpec kv{"k.weight", {8, 3}, ShardSpec{0, 1, 2}};  // replicated over pairs of tp ranks
  ParamSpec bias{"fc.bias", {12}, ShardSpec{0}};
  return {replicated, rows, cols, fused, kv, bias};
}

TEST(InitRange, every_run_of_every_tp_shard_is_the_cut_of_the_whole_tensor) {
  for (const ParamSpec& spec : specs()) {
    const at::Tensor global = reference_global(spec);
    for (int tp : {1, 2, 4}) {
      if (tp % spec.shard.replicas != 0) continue;
      for (int rank = 0; rank < tp; ++rank) {
        const at::Tensor want = cut_shard(spec, rank, tp, global).reshape({-1});
        const int64_t n = want.numel();
        EXPECT_TRUE(at::equal(init_shard(spec, kSeed, rank, tp).reshape({-1}), want))
            << spec.name << " tp " << tp << " rank " << rank;
        for (int64_t begin : {int64_t{0}, int64_t{1}, n / 3, n - 1})
          for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{7}, n - begin}) {
            if (begin + len > n) continue;
            EXPECT_TRUE(at::equal(init_range(spec, kSeed, rank, tp, begin, len),
                                  want.narrow(0, begin, len)))
                << spec.name << " tp " << tp << " rank " << rank << " [" << begin << ", "
                << begin + len << ")";
          }
      }
    }
  }
}

TEST(InitRange, refuses_a_run_outside_the_shard) {
  const ParamSpec spec{"fc.weight", {12, 8}, ShardSpec{1}};
  EXPECT_THROW(init_range(spec, kSeed, 0, 2, 40, 9), c10::Error);
  EXPECT_THROW(init_range(spec, kSeed, 0, 2, -1, 2), c10::Error);
}

TEST(InitRange, a_deferred_registry_hands_out_shapes_without_values) {
  ParamRegistry registry(kSeed, 1, 2, at::kFloat);
  registry.defer_init();
  const at::Tensor t = registry.create({"fc.weight", {12, 8}, ShardSpec{1}});
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{12, 4}));
  EXPECT_TRUE(t.requires_grad());
  EXPECT_EQ(t.storage().nbytes(), sizeof(float));  // one element, whatever the shape
}

}  // namespace
}  // namespace trident
