// The planner's offload tiers: device memory without the offloaded states (the nvme tier
// keeps its ring of buffers), and the time the nvme tier's traffic adds to a step.
#include <gtest/gtest.h>  // TEST, EXPECT_*

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

TEST(OffloadPlan, optimizer_tiers_take_k_psi_over_dp_off_the_device) {
  PlanModel m = tiny();
  const Layout dp2_zero1{2, 1, 1, 1, 4, false};
  const MemoryBreakdown in_memory = stage_memory(m, dp2_zero1, 0);
  EXPECT_DOUBLE_EQ(in_memory.optimizer_states, 8.0 * 218496 / 2);
  EXPECT_DOUBLE_EQ(in_memory.offloaded, 0);

  m.offload_optimizer = "cpu";
  const MemoryBreakdown cpu = stage_memory(m, dp2_zero1, 0);
  EXPECT_DOUBLE_EQ(cpu.optimizer_states, 0);
  EXPECT_DOUBLE_EQ(cpu.offloaded, 8.0 * 218496 / 2);
  EXPECT_DOUBLE_EQ(cpu.parameters, in_memory.parameters);

  m.offload_optimizer = "nvme";
  m.offload_buffer_count = 4, m.offload_block_size = 1 << 20;
  const MemoryBreakdown nvme = stage_memory(m, dp2_zero1, 0);
  EXPECT_DOUBLE_EQ(nvme.optimizer_states, 4.0 * 3 * (1 << 20));  // the ring
  EXPECT_DOUBLE_EQ(nvme.offloaded, 8.0 * 218496 / 2);
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
  EXPECT_DOUBLE_EQ(both.offloaded, in_memory.optimizer_states + in_memory.parameters - persistent);
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
