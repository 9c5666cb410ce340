// The planner's context parallelism: each rank's activations follow its seq_len / cp tokens,
// the ring's traffic is counted from the kv heads, and a sequence too long for one rank's
// memory is planned across cp ranks.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include "plan/memory_model.h"  // device_memory
#include "plan/planner.h"       // make_plan, enumerate_layouts
#include "plan/time_model.h"    // step_time

namespace trident::plan {
namespace {

/// A Llama of 4 layers over a long sequence: 8 heads over 2 kv heads.
PlanModel long_llama() {
  PlanModel m;
  m.layers = 4, m.hidden = 256, m.heads = 8, m.vocab = 512, m.seq_len = 8192;
  m.global_batch = 4, m.llama = true, m.kv_heads = 2, m.ffn_hidden = 704, m.tied = false;
  return m;
}

Cluster node(double memory_gb) {
  Cluster c;
  c.devices_per_node = 4;
  c.memory_per_device_gb = memory_gb;
  c.peak_tflops = {{"fp32", 100.0}};
  c.efficiency = 0.5;
  c.intra_node_gbps = 300;
  c.inter_node_gbps = 25;
  c.latency_us = 5;
  c.memory_gbps = 2000;
  return c;
}

TEST(ContextPlan, activations_follow_the_ranks_tokens) {
  const PlanModel m = long_llama();
  Layout whole{4, 1, 1, 0, 1, false};
  Layout ring = whole;
  ring.dp = 1;
  ring.cp = 4;
  const MemoryBreakdown a = device_memory(m, whole), b = device_memory(m, ring);
  // One rank's layer at cp 4: the selective layer (no scores) of s / 4 tokens, plus the
  // ring's output and row statistics, and the kv heads kept unrepeated.
  ActivationShape quarter{m.seq_len / 4, 1, m.hidden, m.heads, true, m.ffn_hidden, m.kv_heads};
  ActivationOptions options;
  options.ring = true;
  const double layer = layer_activation_bytes(quarter, options, 4.0);
  const double head = (2.0 * (m.seq_len / 4) * m.hidden + 2.0 * (m.seq_len / 4) * m.vocab) * 4.0;
  EXPECT_DOUBLE_EQ(b.activations, 4.0 * layer + head);
  // Whole sequences keep the s x s scores: cp 4 holds far less than a quarter of it.
  EXPECT_LT(b.activations, a.activations / 4.0);
  // The same model states: ZeRO shards over the dp x cp ranks alike.
  Layout zero1 = whole, ring1 = ring;
  zero1.zero = ring1.zero = 1;
  EXPECT_DOUBLE_EQ(device_memory(m, zero1).optimizer_states,
                   device_memory(m, ring1).optimizer_states);
}

TEST(ContextPlan, the_ring_sends_the_kv_heads) {
  const PlanModel m = long_llama();
  Layout ring{1, 1, 1, 0, 1, false};
  ring.cp = 4;
  const TimeBreakdown t = step_time(m, ring, node(80));
  // Per layer and micro-batch: keys and values (2 kv heads of 32) of the rank's 2048 tokens
  // go 3 steps forward, 3 back and their gradients 4: 10 transfers of 2 * 2048 * 64 floats.
  const double kv = 2.0 * 2048 * 2 * 32 * 4.0;
  EXPECT_DOUBLE_EQ(t.ring_bytes, 4.0 /*micro-batches*/ * 4.0 /*layers*/ * 10.0 * kv);
  EXPECT_GT(t.cp, 0.0);  // the gradients' last step has nothing to hide behind
}

TEST(ContextPlan, each_transfer_waits_the_calibrated_ring_sync) {
  const PlanModel m = long_llama();
  Layout ring{1, 1, 1, 0, 1, false};
  ring.cp = 4;
  Cluster c = node(80);
  c.dp_overlap = 0;  // nothing hides: each transfer's wait is the step's
  c.sync_us = 50;    // a collective's wait, which the ring's no longer takes
  const TimeBreakdown collective = step_time(m, ring, c);
  c.ring_sync_us = 700;
  const TimeBreakdown calibrated = step_time(m, ring, c);
  // 4 micro-batches x 4 layers x 10 transfers, each 700 us where it was 50 us.
  EXPECT_NEAR(calibrated.cp - collective.cp, 4.0 * 4.0 * 10.0 * (700.0 - 50.0) * 1e-6, 1e-12);
  EXPECT_DOUBLE_EQ(calibrated.compute, collective.compute);
}

TEST(ContextPlan, a_sequence_too_long_for_one_rank_is_split) {
  const PlanModel m = long_llama();
  // 1.5 GB a device: one 8192-token sequence keeps about 2 GB of scores a layer whole.
  const Plan plan = make_plan(m, node(1.5), 4);
  ASSERT_FALSE(plan.ranked.empty());
  for (const Evaluation& e : plan.ranked)
    if (e.layout.cp == 1) EXPECT_TRUE(e.layout.checkpointing || e.layout.selective || !e.fits);
  const Evaluation& best = plan.ranked.front();
  EXPECT_TRUE(best.fits);
  EXPECT_GT(best.layout.cp, 1) << best.layout.name();
  // Every layout that splits the sequence keeps at most its share of one whole-sequence
  // layout's activations, whatever the recomputation.
  const Layout whole{4, 1, 1, 0, 1, false};
  EXPECT_LT(best.memory.activations, device_memory(m, whole).activations / best.layout.cp);
}

}  // namespace
}  // namespace trident::plan
