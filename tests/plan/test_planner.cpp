// Enumeration of layouts (counts, constraints) and ranking (cases whose best is known).
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <set>  // std::set

#include "plan/planner.h"  // enumerate_layouts, layout_problem, make_plan

namespace trident::plan {
namespace {

PlanModel four_layers() {
  PlanModel m;
  m.layers = 4, m.hidden = 64, m.heads = 4, m.vocab = 256, m.seq_len = 32, m.global_batch = 8;
  return m;
}

Cluster fast_node(int per_node) {
  Cluster c;
  c.devices_per_node = per_node;
  c.memory_per_device_gb = 80;
  c.peak_tflops = {{"fp32", 100.0}, {"bf16", 800.0}};
  c.efficiency = 0.5;
  c.intra_node_gbps = 300;
  c.inter_node_gbps = 25;
  c.latency_us = 5;
  c.memory_gbps = 2000;
  return c;
}

TEST(Enumerate, counts_for_four_devices) {
  // (dp, pp, tp) with tp | 4 heads, pp | 4 layers: (4,1,1) (2,2,1) (1,4,1) (2,1,2) (1,2,2)
  // (1,1,4). Micro-batches divide 8 / dp: 2, 3, 4, 3, 4, 4 sizes. ZeRO 0-3 when dp > 1,
  // checkpointing on or off: 2*(4*2 + 4*3 + 4 + 4*3 + 4 + 4) = 88. Context parallelism
  // (the sequence of 32 cuts into 2 cp chunks for cp 2 and 4) adds dp2 cp2 and dp1 cp4 at
  // pp = tp = 1 and dp1 cp2 at (pp, tp) = (2, 1) and (1, 2), with ZeRO 0-3 over dp x cp:
  // 2*4*(3 + 4 + 4 + 4) = 120 more.
  const auto layouts = enumerate_layouts(four_layers(), 4, 8);
  EXPECT_EQ(layouts.size(), 208u);
  std::set<std::string> names;
  for (const Layout& l : layouts) {
    names.insert(l.name());
    EXPECT_EQ(l.world(), 4) << l.name();
    EXPECT_EQ(4 % l.tp, 0) << l.name();
    EXPECT_EQ(4 % l.pp, 0) << l.name();
    EXPECT_EQ(8 % (l.micro_batch * l.dp), 0) << l.name();
    EXPECT_TRUE(l.replicas() > 1 || l.zero == 0) << l.name();
    EXPECT_EQ(layout_problem(four_layers(), l, 4, 8), "") << l.name();
  }
  EXPECT_EQ(names.size(), layouts.size());  // no duplicates
}

TEST(Enumerate, tp_stays_within_a_node) {
  for (const Layout& l : enumerate_layouts(four_layers(), 4, 2)) EXPECT_LE(l.tp, 2) << l.name();
  // On 3 devices nothing works: 3 divides neither the heads nor the layers, and dp 3
  // times any micro-batch does not divide the global batch of 8.
  EXPECT_TRUE(enumerate_layouts(four_layers(), 3, 8).empty());
}

TEST(LayoutProblem, names_the_constraint) {
  const PlanModel m = four_layers();
  EXPECT_NE(layout_problem(m, Layout{1, 1, 3}, 3, 8).find("heads"), std::string::npos);
  EXPECT_NE(layout_problem(m, Layout{1, 3, 1}, 3, 8).find("layers"), std::string::npos);
  EXPECT_NE(layout_problem(m, Layout{1, 1, 4}, 4, 2).find("node"), std::string::npos);
  EXPECT_NE(layout_problem(m, Layout{2, 1, 1, 0, 3}, 2, 8).find("global batch"), std::string::npos);
  EXPECT_NE(layout_problem(m, Layout{2, 1, 1}, 4, 8).find("devices"), std::string::npos);
}

TEST(Rank, model_that_fits_everywhere_runs_pure_dp) {
  // 350M parameters in bf16 fit one 80 GB device with room for activations: splitting
  // the model only adds traffic and bubble. (ZeRO-1 may win over 0: its gather costs less
  // than the 7/8 of AdamW's pass it saves.) Splitting the sequence may win (ring attention
  // skips the blocks the causal mask hides, which whole attention computes): every rank
  // still holds the whole model.
  PlanModel m;
  m.layers = 24, m.hidden = 1024, m.heads = 16, m.vocab = 50304, m.seq_len = 1024;
  m.global_batch = 64, m.precision = "bf16";
  const Plan plan = make_plan(m, fast_node(8), 8);
  ASSERT_FALSE(plan.ranked.empty());
  const Layout& best = plan.ranked.front().layout;
  EXPECT_EQ(best.replicas(), 8);
  EXPECT_EQ(best.pp * best.tp, 1);
  EXPECT_FALSE(best.checkpointing);
  // Without ZeRO-3, micro-batch sizes tie on time at a fixed matmul rate and the least
  // memory wins the tie; ZeRO-3 gathers the parameters for every micro-batch, so its
  // fastest layout has the fewest (the largest micro-batch).
  // (Among whole sequences: the ring's last step, per micro-batch, favours fewer.)
  for (const auto& ranked : plan.ranked) {
    if (ranked.layout.zero == 3 || ranked.layout.cp > 1) continue;
    EXPECT_EQ(ranked.layout.micro_batch, 1) << ranked.layout.name();
    break;
  }
  for (const auto& ranked : plan.ranked) {
    if (ranked.layout.zero != 3 || ranked.layout.cp > 1) continue;
    EXPECT_EQ(ranked.layout.micro_batch, 8) << ranked.layout.name();
    break;
  }
  EXPECT_NE(plan.why.find("fits without checkpointing"), std::string::npos) << plan.why;
  for (size_t i = 1; i < plan.ranked.size(); ++i)
    EXPECT_LE(plan.ranked[i - 1].time.total(), plan.ranked[i].time.total());
}

TEST(Rank, tp_within_a_node_beats_tp_across_nodes) {
  // 12 devices on nodes of 6: tp 4 leaves a tp group straddling two nodes, tp 3 and tp 2
  // do not. A model whose tp traffic matters, too big for one device without tp or pp.
  PlanModel m;
  m.layers = 12, m.hidden = 6144, m.heads = 48, m.vocab = 50304, m.seq_len = 2048;
  m.global_batch = 48, m.precision = "bf16";
  Cluster c = fast_node(6);
  const Evaluation straddling = evaluate(m, Layout{3, 1, 4, 1, 1, false}, c);
  const Evaluation within = evaluate(m, Layout{4, 1, 3, 1, 1, false}, c);
  EXPECT_TRUE(straddling.tp_inter_node);
  EXPECT_FALSE(within.tp_inter_node);
  EXPECT_LT(within.time.tp, straddling.time.tp);
  EXPECT_LT(within.time.total(), straddling.time.total());
  const Plan plan = make_plan(m, c, 12);
  ASSERT_FALSE(plan.ranked.empty());
  EXPECT_FALSE(plan.ranked.front().tp_inter_node) << plan.ranked.front().layout.name();
  EXPECT_NE(plan.why.find("within a node"), std::string::npos) << plan.why;
}

TEST(Rank, memory_decides_when_tight) {
  // ~1.3B parameters in bf16: 16 bytes each is 21 GB of model states, over a 16 GB
  // device; ZeRO shards it over 8 and the plan says so.
  PlanModel m;
  m.layers = 24, m.hidden = 2048, m.heads = 16, m.vocab = 50304, m.seq_len = 1024;
  m.global_batch = 64, m.precision = "bf16";
  Cluster c = fast_node(8);
  c.memory_per_device_gb = 16;
  const Plan plan = make_plan(m, c, 8);
  ASSERT_FALSE(plan.ranked.empty());
  EXPECT_GT(plan.too_big, 0);
  for (const Evaluation& e : plan.ranked) {
    EXPECT_TRUE(e.fits);
    EXPECT_LE(e.memory.total(), 16e9);
    EXPECT_TRUE(e.layout.zero > 0 || e.layout.pp > 1 || e.layout.tp > 1) << e.layout.name();
  }
  c.memory_per_device_gb = 1;
  const Plan none = make_plan(m, c, 8);
  EXPECT_TRUE(none.ranked.empty());
  EXPECT_NE(none.why.find("nothing fits"), std::string::npos) << none.why;
}

}  // namespace
}  // namespace trident::plan
