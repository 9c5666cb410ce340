// The planner's offload tier: device memory without the offloaded states (the nvme tier
// keeps its ring of buffers), the time its traffic adds to a step, and no "cpu" tier.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <stdexcept>  // std::invalid_argument
#include <string>

#include "plan/memory_model.h"  // stage_memory
#include "plan/tier_model.h"    // tier_traffic, tier_wait_s
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
  // K psi read once and written once, the two directions at once: 8 bytes a parameter.
  const double traffic = 8.0 * 218496 / 1e6;
  EXPECT_NEAR(slow.tier, traffic - slow.optimizer, 1e-12);
  // Writes at half the rate: they take twice as long, and the stream with them.
  c.disk_write_gbps = 0.0005;
  EXPECT_NEAR(step_time(m, one, c).tier, 2 * traffic - slow.optimizer, 1e-12);
  c.disk_write_gbps = 0;
  EXPECT_NEAR(slow.total(), in_memory.total() + slow.tier, 1e-12);
  c.disk_gbps = 1e6;  // a disk faster than the update hides entirely
  EXPECT_DOUBLE_EQ(step_time(m, one, c).tier, 0);
}

// Stage 3 with parameters, gradients and optimizer states in the tier, dp 2, 2 micro-
// batches: the bytes zero/zero_offload.cpp moves, plane by plane.
TEST(OffloadPlan, stage3_tier_traffic_counts_every_plane_each_pass_moves) {
  PlanModel m = tiny();
  m.offload_optimizer = m.offload_params = "nvme";
  const Layout l{2, 1, 1, 3, 2, true};  // dp 2, micro-batch 2 of the global 8: m = 2
  ASSERT_EQ(l.micro_batches(m), 2);
  const TierTraffic t = tier_traffic(m, l, 0);
  const double domain = 218496.0 / 2;  // every parameter's optimizer state, sharded
  const Stage3Split split = stage3_split(m, l, 0);
  const double param = 4.0 * static_cast<double>(218496 - split.persistent) / 2;
  ASSERT_GT(split.persistent, 0);
  // The step reads both moments, the gradient and the parameter shard, and writes all
  // but the gradient back.
  EXPECT_DOUBLE_EQ(t.stream_read, domain * 4 * 3 + param);
  EXPECT_DOUBLE_EQ(t.stream_write, domain * 4 * 2 + param);
  // Each micro-batch writes its sum; the second reads the first's.
  EXPECT_DOUBLE_EQ(t.grad_write, 2 * domain * 4);
  EXPECT_DOUBLE_EQ(t.grad_read, domain * 4);
  // Forward and backward gather each layer once per micro-batch (the recomputation with
  // its backward); layers kept gathered all step read the shard once.
  EXPECT_EQ(t.gathers, 4);
  EXPECT_DOUBLE_EQ(t.gather_read, 4 * param);
  m.zero3_reshard_after_forward = false;
  EXPECT_DOUBLE_EQ(tier_traffic(m, l, 0).gather_read, param);
  // Without offload_params only the optimizer's planes and the gradient move.
  m.offload_params = "none";
  const TierTraffic opt = tier_traffic(m, l, 0);
  EXPECT_DOUBLE_EQ(opt.gather_read, 0);
  EXPECT_DOUBLE_EQ(opt.stream_read, domain * 4 * 3);
  m.offload_optimizer = "none";
  EXPECT_DOUBLE_EQ(tier_traffic(m, l, 0).total(), 0);
}

// ZeRO 3 holds more than its live layers at its peak (ZeRO 2 more than its model state):
// the gradients of the largest bucket before its reduction, the tied embedding's gradient
// the head starts in backward, and with the gradient in the tier the bucket buffer. A
// released layer kept for reuse is not among them: the next prefetch takes it before the
// live bound is reached again.
TEST(OffloadPlan, stage3_transient_memory_names_each_buffer_beyond_the_live_layers) {
  PlanModel m = tiny();
  const Layout l{2, 1, 1, 3, 2, true};
  const double embedding = 256.0 * 64;
  // The model is smaller than one bucket: the largest bucket is all of it but the tied
  // embedding (256 x 64, in its own buffer), its shard half of that (dp 2).
  const double rest = 218496.0 - 256 * 64;
  const MemoryBreakdown in_memory = stage_memory(m, l, 0);
  EXPECT_DOUBLE_EQ(in_memory.transient, 4 * rest + 4 * embedding);
  m.offload_optimizer = m.offload_params = "nvme";
  const MemoryBreakdown tier = stage_memory(m, l, 0);
  EXPECT_DOUBLE_EQ(tier.transient, in_memory.transient + 4 * rest / 2);
  EXPECT_DOUBLE_EQ(tier.total() - tier.transient, tier.parameters + tier.gradients +
                                                      tier.optimizer_states + tier.activations +
                                                      tier.communication + tier.scores);
  // Stage 2 reduces its gradients by the same buckets, so it holds the same, and with the
  // gradient in the tier the same buffer; stage 1's gradients are views of one flat
  // buffer, counted whole.
  EXPECT_DOUBLE_EQ(stage_memory(m, Layout{2, 1, 1, 2, 2, true}, 0).transient, tier.transient);
  EXPECT_DOUBLE_EQ(stage_memory(m, Layout{2, 1, 1, 1, 2, true}, 0).transient, 0);
}

// The wait: the stream beyond the AdamW step it overlaps, the gathers' and gradients'
// traffic beyond the compute it overlaps, and each direction's first layer unprefetched;
// reads and writes are in flight at once, so each part takes its slower direction.
TEST(OffloadPlan, tier_wait_is_the_traffic_each_part_does_not_hide) {
  TierTraffic t;
  t.stream_read = 3e9, t.stream_write = 2e9;  // 3 s of reads, 2 s of writes at 1 GB/s
  t.gather_read = 2e9, t.grad_write = 1e9;    // 2 s and 1 s during compute
  t.layer_read = 0.1e9, t.gathers = 2;        // 0.2 s never hidden
  const DiskRates one{1.0, 1.0};
  auto windows = [](double optimizer, double compute) {
    return TierWindows{optimizer, compute, compute};  // no dp group: the writes hide in backward
  };
  EXPECT_NEAR(tier_wait_s(t, one, windows(1.0, 10.0)), 2.0 + 0.2, 1e-12);
  EXPECT_NEAR(tier_wait_s(t, one, windows(6.0, 1.0)), 1.0 + 0.2, 1e-12);
  EXPECT_NEAR(tier_wait_s(t, one, windows(1.0, 1.0)), 2.0 + 1.0 + 0.2, 1e-12);
  // Slow writes: the stream's 2 GB take 4 s, the gradient's 1 GB 2 s.
  EXPECT_NEAR(tier_wait_s(t, DiskRates{2.0, 0.5}, windows(1.0, 1.0)), 3.0 + 1.0 + 0.1, 1e-12);
  // With a dp group whose reductions complete only as backward ends (dp_overlap 0), the
  // gradient's 1 s of writes hides behind nothing; the read of the previous micro-batch's
  // sum (0.5 s) never does.
  t.grad_read = 0.5e9;
  EXPECT_NEAR(tier_wait_s(t, one, TierWindows{1.0, 10.0, 0.0}), 2.0 + 0.5 + 1.0 + 0.2, 1e-12);
  EXPECT_NEAR(tier_wait_s(t, one, windows(1.0, 10.0)), 2.0 + 0.5 + 0.2, 1e-12);
  // A disk whose transfers take half their time from the cores hides half of what fits.
  const DiskRates half{1.0, 1.0, 0.5};
  EXPECT_NEAR(tier_wait_s(t, half, windows(1.0, 10.0)),
              (3.0 - 0.5) + (2.0 - 1.0) + 0.5 + (1.0 - 0.5) + 0.2, 1e-12);
  // A calibrated stream: its 5 GB at 0.3 s a GB, whatever the AdamW step; the rest as
  // before.
  EXPECT_NEAR(tier_wait_s(t, DiskRates{1.0, 1.0, 0.5, 0.3}, windows(1.0, 10.0)),
              1.5 + (2.0 - 1.0) + 0.5 + (1.0 - 0.5) + 0.2, 1e-12);
  EXPECT_NEAR(tier_wait_s(t, DiskRates{1.0, 1.0, 0.5, 0.3}, windows(6.0, 10.0)),
              1.5 + (2.0 - 1.0) + 0.5 + (1.0 - 0.5) + 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(tier_wait_s(t, DiskRates{0.0, 1.0}, windows(1.0, 1.0)), 0.0);  // not modelled
}

}  // namespace
}  // namespace trident::plan
