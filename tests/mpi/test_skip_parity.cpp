// A step with a non-finite loss is skipped alike in every layout: the dp2 x pp2 x tp2 ZeRO-2
// run and the single process both skip it (weights, moments and step count untouched) and
// then continue to the same losses and weights (fp64, relative 1e-10).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <vector>

#include "models/gpt.h"
#include "mpi_cases.h"  // register_mpi_cases
#include "parity_harness.h"
#include "zero/zero_optimizer.h"

namespace trident::testing {
namespace {

constexpr int kSteps = 5;
constexpr int kPoisoned = 3;  // the step whose loss is made NaN

/// This rank's shard of the position embedding, if it holds one.
at::Tensor* wpe_of(Trainer& trainer) {
  for (auto& p : trainer.model().params().params())
    if (p.spec.name == "wpe.weight") return &p.tensor;
  return nullptr;
}

/// Runs kSteps steps; before step kPoisoned the position embedding is NaN (so the loss
/// is), and it is put back after. Checks on this rank that the skipped step left the
/// optimizer state as it was, bit for bit.
std::vector<StepMetrics> run_with_poisoned_step(Trainer& trainer) {
  std::vector<StepMetrics> out;
  for (int s = 1; s <= kSteps; ++s) {
    if (s != kPoisoned) {
      out.push_back(trainer.step());
      continue;
    }
    at::Tensor* wpe = wpe_of(trainer);
    at::Tensor saved = wpe ? wpe->detach().clone() : at::Tensor();
    if (wpe) wpe->detach().fill_(NAN);
    std::vector<at::Tensor> moments;
    ZeroOptimizer& opt = trainer.optimizer();
    for (size_t i = 0; i < opt.num_params(); ++i)
      moments.push_back(opt.param_state(i).exp_avg.clone());
    const int64_t count = opt.step_count();
    out.push_back(trainer.step());
    if (wpe) wpe->detach().copy_(saved);
    EXPECT_EQ(opt.step_count(), count);
    for (size_t i = 0; i < opt.num_params(); ++i)
      EXPECT_TRUE(at::equal(opt.param_state(i).exp_avg, moments[i])) << "moment " << i;
  }
  return out;
}

TEST(SkipParity, dp2_pp2_tp2_zero2_skips_a_nonfinite_step_like_one_process) {
  const Layout layout{"dp2_pp2_tp2_1f1b_ckpt_zero2", 2, 2, 2, 2, "1f1b", true, 2};
  ParallelContext ctx(MPI_COMM_WORLD, 2, 2, 2, 120.0);
  Trainer trainer(layout_config(layout, kSteps), ctx);
  const std::vector<StepMetrics> got = run_with_poisoned_step(trainer);

  const Layout single{"single", 1, 1, 1, 0, "1f1b", false, 2};
  ParallelContext solo(MPI_COMM_SELF, 1, 1, 1, 120.0);
  Trainer reference(layout_config(single, kSteps), solo);
  const std::vector<StepMetrics> want = run_with_poisoned_step(reference);

  for (int s = 0; s < kSteps; ++s) {
    const bool poisoned = s + 1 == kPoisoned;
    EXPECT_EQ(got[s].skipped, poisoned) << "step " << s + 1;
    EXPECT_EQ(want[s].skipped, poisoned) << "step " << s + 1;
    if (poisoned) {
      EXPECT_FALSE(std::isfinite(got[s].loss));
      EXPECT_EQ(got[s].skipped_in_a_row, 1);
      continue;
    }
    EXPECT_LE(relative_difference(got[s].loss, want[s].loss), 1e-10) << "step " << s + 1;
  }
  EXPECT_EQ(trainer.optimizer().step_count(), kSteps - 1);
  EXPECT_LE(max_weight_difference(trainer, ctx, reference, WeightMetric::kMaxElement), 1e-10);
}

const bool kRegistered =
    register_mpi_cases({{"skip_parity_dp2_pp2_tp2_zero2", 8,
                         "SkipParity.dp2_pp2_tp2_zero2_skips_a_nonfinite_step_like_one_process"}});

}  // namespace
}  // namespace trident::testing
