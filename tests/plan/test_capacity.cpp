// trident plan --memory/--disk: the deepest model of a width each placement of the state
// fits, against the memory model it searches (one layer more must not fit), and which
// budget stops it.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <vector>

#include "plan/capacity.h"      // largest_models
#include "plan/memory_model.h"  // device_memory

namespace trident::plan {
namespace {

/// The working-set benchmark's width: GPT layers of width 1024, fp32, one rank.
PlanModel wide() {
  PlanModel m;
  m.hidden = 1024, m.heads = 16, m.vocab = 256, m.seq_len = 64, m.global_batch = 4;
  return m;
}

Cluster calibrated() {
  Cluster c;
  c.peak_tflops["fp32"] = 0.15;
  c.memory_gbps = 20;
  c.disk_gbps = 1;
  c.process_base_gb = 0.2;
  return c;
}

/// The row's answer against the memory model: its depth fits both budgets, one step
/// deeper does not.
void expect_deepest(const PlanModel& base, Layout l, const Cluster& c, const CapacityRow& r,
                    double memory, double disk) {
  PlanModel m = base;
  m.offload_optimizer = r.placement.optimizer ? "nvme" : "none";
  m.offload_params = r.placement.params ? "nvme" : "none";
  l.zero = r.placement.zero;
  l.checkpointing = true;
  auto fits = [&](int64_t layers) {
    m.layers = layers;
    const MemoryBreakdown mem = device_memory(m, l);
    return mem.total() + c.process_base_gb * 1e9 <= memory && mem.offloaded <= disk;
  };
  ASSERT_GT(r.layers, 0) << r.placement.name;
  EXPECT_TRUE(fits(r.layers)) << r.placement.name;
  EXPECT_FALSE(fits(r.layers + l.pp)) << r.placement.name;
}

TEST(Capacity, each_placement_gets_the_deepest_model_that_fits_and_names_its_limit) {
  const PlanModel m = wide();
  const Cluster c = calibrated();
  const Layout one{1, 1, 1, 0, 4, true};
  const double memory = 2e9, disk = 50e9;
  const std::vector<CapacityRow> rows = largest_models(m, one, c, memory, disk);
  ASSERT_EQ(rows.size(), 3u);
  for (const CapacityRow& r : rows) expect_deepest(m, one, c, r, memory, disk);
  // In memory 16 bytes a parameter bound the depth by memory; with everything in the tier
  // the working set stays flat and the disk (16 bytes a parameter) sets the limit.
  EXPECT_EQ(rows[0].limit, "memory");
  EXPECT_EQ(rows[2].limit, "disk");
  EXPECT_LT(rows[0].layers, rows[1].layers);
  EXPECT_LT(rows[1].layers, rows[2].layers);
  const double layer = 12.0 * 1024 * 1024 + 13 * 1024;
  EXPECT_NEAR(static_cast<double>(rows[2].layers), disk / (16 * layer), 1.0);
  EXPECT_LE(rows[2].tier_bytes, disk);
  EXPECT_LE(rows[2].peak_rss, memory);
  EXPECT_GT(rows[2].step_s, rows[0].step_s);  // deeper, and waiting for the disk
}

TEST(Capacity, pipeline_depths_are_multiples_of_pp_and_a_budget_below_the_base_fits_nothing) {
  const PlanModel m = wide();
  const Cluster c = calibrated();
  const Layout pp2{1, 2, 1, 0, 4, true};
  for (const CapacityRow& r : largest_models(m, pp2, c, 2e9, 50e9)) {
    EXPECT_EQ(r.layers % 2, 0) << r.placement.name;
    expect_deepest(m, pp2, c, r, 2e9, 50e9);
  }
  for (const CapacityRow& r : largest_models(m, Layout{1, 1, 1, 0, 4, true}, c, 0.1e9, 50e9)) {
    EXPECT_EQ(r.layers, 0) << r.placement.name;
    EXPECT_EQ(r.limit, "memory") << r.placement.name;
  }
}

}  // namespace
}  // namespace trident::plan
