// The fused AdamW pass against AdamW's tensor ops (adam_update), element by element the same
// wherever a range is cut; and the float64 sum of squares against a plain sum, the same for
// any number of threads.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>  // at::get_num_threads, at::set_num_threads
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>  // std::pair

#include "zero/adamw.h"  // adam_update, adam_update_chunks, sum_of_squares

namespace trident {
namespace {

constexpr int64_t kElements = 100003;  // not a multiple of any vector width
constexpr double kLr = 3e-3, kScale = 0.37;
constexpr int64_t kStep = 4;

struct States {
  at::Tensor param, grad, exp_avg, exp_avg_sq;
  States clone() const {
    return {param.clone(), grad.clone(), exp_avg.clone(), exp_avg_sq.clone()};
  }
};

States random_states(at::ScalarType dtype) {
  at::manual_seed(5);
  const auto opts = at::TensorOptions().dtype(dtype);
  return {at::randn({kElements}, opts), at::randn({kElements}, opts) * 1e-2,
          at::randn({kElements}, opts) * 1e-3, at::rand({kElements}, opts) * 1e-5};
}

/// The largest difference over the largest magnitude: a moment that cancels to near zero
/// differs by a rounding of its terms, not of itself (tensor ops may fuse a multiply-add).
double max_relative(const at::Tensor& got, const at::Tensor& want) {
  return (got - want).abs().max().item<double>() / want.abs().max().item<double>();
}

void expect_fused_matches_tensor_ops(at::ScalarType dtype, double tolerance) {
  const AdamWOptions o;
  States fused = random_states(dtype), ops = fused.clone();
  adam_update_chunks(fused.param, fused.grad, fused.exp_avg, fused.exp_avg_sq, kLr, kStep, kScale,
                     o, /*chunk=*/1 << 16);
  const at::Tensor scaled = ops.grad * kScale;
  adam_update(ops.param, scaled, ops.exp_avg, ops.exp_avg_sq, kLr, kStep, o);
  EXPECT_LT(max_relative(fused.param, ops.param), tolerance);
  EXPECT_LT(max_relative(fused.exp_avg, ops.exp_avg), tolerance);
  EXPECT_LT(max_relative(fused.exp_avg_sq, ops.exp_avg_sq), tolerance);
  EXPECT_FALSE(at::equal(fused.param, random_states(dtype).param));  // it moved
}

TEST(AdamW, fused_pass_matches_the_tensor_ops_fp64) {
  expect_fused_matches_tensor_ops(at::kDouble, 1e-15);
}

TEST(AdamW, fused_pass_matches_the_tensor_ops_fp32) {
  expect_fused_matches_tensor_ops(at::kFloat, 1e-6);
}

TEST(AdamW, an_element_gets_the_same_bits_wherever_its_range_starts) {
  const AdamWOptions o;
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    States whole = random_states(dtype), cut = whole.clone();
    adam_update_chunks(whole.param, whole.grad, whole.exp_avg, whole.exp_avg_sq, kLr, kStep, kScale,
                       o, 1 << 16);
    // Two ranges, the second starting at an odd offset (as a dp shard or a tier piece may).
    for (const auto& [from, n] : {std::pair<int64_t, int64_t>{0, 12345},
                                  std::pair<int64_t, int64_t>{12345, kElements - 12345}})
      adam_update_chunks(cut.param.narrow(0, from, n), cut.grad.narrow(0, from, n),
                         cut.exp_avg.narrow(0, from, n), cut.exp_avg_sq.narrow(0, from, n), kLr,
                         kStep, kScale, o, 1 << 16);
    EXPECT_TRUE(at::equal(whole.param, cut.param)) << dtype;
    EXPECT_TRUE(at::equal(whole.exp_avg, cut.exp_avg)) << dtype;
    EXPECT_TRUE(at::equal(whole.exp_avg_sq, cut.exp_avg_sq)) << dtype;
  }
}

TEST(AdamW, sum_of_squares_in_float64_whatever_the_threads) {
  at::manual_seed(9);
  const at::Tensor x = at::randn({3 * kSquaresBlock + 17});
  const double want = x.to(at::kDouble).square().sum().item<double>();
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const double one = sum_of_squares(x);
  at::set_num_threads(2);
  const double two = sum_of_squares(x);
  at::set_num_threads(threads);
  EXPECT_NEAR(one, want, 1e-12 * want);
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace trident
