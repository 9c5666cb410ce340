// The planner's offload tier: device memory without the offloaded states (the nvme tier
// keeps its ring of buffers), the time its traffic adds to a step, and no "cpu" tier.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <stdexcept>  // std::invalid_argument
#include <string>

#include "plan/memory_model.h"  // stage_memory
#include "plan/time_model.h"    // step_time

namespace trident::plan {
namespace {

/// configs/tiny.toml's model: 218496 parameters, fp32 (K = 8 bytes per parameter).
PlanModel tiny() {
  PlanModel m;
  m.layers = 4, m.hidden = 64, m.heads = 4, m.vocab = 256, m.seq_len = 32, m.global_batch = 8;
  return m;
}

TEST(OffloadPlan, nvme_tier_takes_k_psi_over_dp_off_the_device) {
  PlanModel m = tiny();
  const Layout dp2_zero1{2, 1, 1, 1, 4, false};
  const MemoryBreakdown in_memory = stage_memory(m, dp2_zero1, 0);
  EXPECT_DOUBLE_EQ(in_memory.optimizer_states, 8.0 * 218496 / 2);
  EXPECT_DOUBLE_EQ(in_memory.offloaded, 0);

  m.offload_optimizer = "nvme";
  m.offload_buffer_count = 4, m.offload_block_size = 1 << 20;
  const MemoryBreakdown nvme = stage_memory(m, dp2_zero1, 0);
  // The ring: 4 buffers of one piece of both moments (fp32 parameters are their own master).
  EXPECT_DOUBLE_EQ(nvme.optimizer_states, 4.0 * 2 * (1 << 20));
  EXPECT_DOUBLE_EQ(nvme.offloaded, 8.0 * 218496 / 2);

  // From stage 2 on the reduced gradient shard is a plane of the tier too.
  const Layout dp2_zero2{2, 1, 1, 2, 4, false};
  m.offload_optimizer = "none";
  const MemoryBreakdown zero2 = stage_memory(m, dp2_zero2, 0);
  EXPECT_DOUBLE_EQ(zero2.gradients, 4.0 * 218496 / 2);
  m.offload_optimizer = "nvme";
  const MemoryBreakdown zero2_nvme = stage_memory(m, dp2_zero2, 0);
  EXPECT_DOUBLE_EQ(zero2_nvme.gradients, 0);
  EXPECT_DOUBLE_EQ(zero2_nvme.offloaded, (8.0 + 4.0) * 218496 / 2);
  EXPECT_DOUBLE_EQ(zero2_nvme.optimizer_states, 4.0 * 3 * (1 << 20));
}

/// The message of the std::invalid_argument stage_memory throws, or "" when it counts.
std::string refusal(const PlanModel& m, const Layout& l) {
  try {
    const MemoryBreakdown b = stage_memory(m, l, 0);
    return "none; it counted " + std::to_string(b.offloaded) + " bytes offloaded";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

// There is no cpu tier (a CPU-device run's states are in host memory already, a CUDA run
// has no pinned-host tier), so the planner must not count memory it would save.
TEST(OffloadPlan, cpu_is_no_tier_and_saves_nothing) {
  PlanModel m = tiny();
  m.offload_optimizer = "cpu";
  EXPECT_EQ(refusal(m, Layout{2, 1, 1, 1, 4, false}),
            "plan: parallel.offload_optimizer = \"cpu\" is not a tier trident runs; use "
            "\"nvme\" or \"none\"");
  m.offload_optimizer = "nvme", m.offload_params = "cpu";
  EXPECT_EQ(refusal(m, Layout{2, 1, 1, 3, 4, false}),
            "plan: parallel.offload_params = \"cpu\" is not a tier trident runs; use "
            "\"nvme\" or \"none\"");
}

TEST(OffloadPlan, stage3_params_offload_the_sharded_parameters_only) {
  PlanModel m = tiny();
  m.zero3_persist_below = 1000;  // the norms and most biases stay whole
  const Layout dp2_zero3{2, 1, 1, 3, 4, false};
  const MemoryBreakdown in_memory = stage_memory(m, dp2_zero3, 0);
  m.offload_optimizer = "nvme", m.offload_params = "nvme";
  const MemoryBreakdown both = stage_memory(m, dp2_zero3, 0);
  const double persistent = 4.0 * static_cast<double>(stage3_split(m, dp2_zero3, 0).persistent);
  EXPECT_GT(persistent, 0);
  EXPECT_DOUBLE_EQ(both.parameters, persistent);
  EXPECT_DOUBLE_EQ(both.gradients, 0);
  EXPECT_DOUBLE_EQ(both.offloaded, in_memory.optimizer_states + in_memory.gradients +
                                       in_memory.parameters - persistent);
}

TEST(OffloadPlan, nvme_tier_time_is_the_traffic_beyond_the_update) {
  PlanModel m = tiny();
  Cluster c;
  c.peak_tflops["fp32"] = 1;
  c.memory_gbps = 10;
  const Layout one{1, 1, 1, 0, 8, false};
  const TimeBreakdown in_memory = step_time(m, one, c);
  EXPECT_DOUBLE_EQ(in_memory.tier, 0);
  m.offload_optimizer = "nvme";
  c.disk_gbps = 0.001;  // 1 MB/s: slow enough that the traffic dominates the update
  const TimeBreakdown slow = step_time(m, one, c);
  const double traffic = 2.0 * 8.0 * 218496 / 1e6;  // read and write K psi once
  EXPECT_NEAR(slow.tier, traffic - slow.optimizer, 1e-12);
  EXPECT_NEAR(slow.total(), in_memory.total() + slow.tier, 1e-12);
  c.disk_gbps = 1e6;  // a disk faster than the update hides entirely
  EXPECT_DOUBLE_EQ(step_time(m, one, c).tier, 0);
}

}  // namespace
}  // namespace trident::plan
