// The planner's Mixture-of-Experts model: parameters and active parameters, the routed
// experts' states sharded over dp / ep, their FLOPs and all-to-alls, and the layouts that
// vary ep. That the element counts are the model's own is checked against the model itself
// (tests/mpi/test_plan_buckets.cpp), the activation bytes against the counting allocator
// (tests/mpi/test_activation_memory.cpp).
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <set>     // std::set
#include <string>  // std::string

#include "plan/auto_config.h"   // choose_configuration, AutoBudget
#include "plan/memory_model.h"  // stage_memory
#include "plan/plan_model.h"    // PlanModel, total_parameters, active_parameters
#include "plan/planner.h"       // enumerate_layouts, layout_problem
#include "plan/time_model.h"    // step_time, all_to_all_s

namespace trident::plan {
namespace {

/// A Llama with 4 layers of width 256, every second one MoE: 8 experts of width 512, top 2.
PlanModel moe_model() {
  PlanModel m;
  m.llama = true;
  m.layers = 4, m.hidden = 256, m.heads = 8, m.kv_heads = 4, m.ffn_hidden = 688;
  m.vocab = 1024, m.seq_len = 128, m.global_batch = 16;
  m.tied = false;
  m.moe_experts = 8, m.moe_top_k = 2, m.moe_ffn_hidden = 512, m.moe_layer_every = 2;
  return m;
}

Cluster machine() {
  Cluster c;
  c.devices_per_node = 8;
  c.peak_tflops["fp32"] = 0.15;
  c.memory_gbps = 20;
  c.intra_node_gbps = 10;
  return c;
}

TEST(MoePlan, parameters_count_every_expert_and_active_ones_only_the_top_k) {
  const PlanModel m = moe_model();
  PlanModel dense = m;
  dense.moe_experts = 0;
  const int64_t h = 256, expert = 3 * h * 512;
  // Two MoE layers replace their dense MLPs (3 h f) by a router (E h) and 8 experts.
  EXPECT_EQ(total_parameters(m), total_parameters(dense) + 2 * (8 * h + 8 * expert - 3 * h * 688));
  EXPECT_EQ(active_parameters(m), total_parameters(m) - 2 * 6 * expert);
  EXPECT_EQ(active_parameters(dense), total_parameters(dense));
  // FLOPs: an MoE layer's token meets attention, the router and two experts.
  EXPECT_DOUBLE_EQ(moe_layer_forward_flops_per_token(m) - layer_forward_flops_per_token(m),
                   2.0 * (8 * h + 2 * expert - 3 * h * 688));
  EXPECT_DOUBLE_EQ(layers_forward_flops_per_token(m, 0, 4),
                   2 * layer_forward_flops_per_token(m) + 2 * moe_layer_forward_flops_per_token(m));
  // ep rank 0 holds E / ep of each MoE layer's experts; the pipeline's second stage holds
  // layers 2 and 3, of which layer 3 is MoE.
  EXPECT_EQ(stage_expert_parameters(m, 1, 1, 2, 0), 2 * 4 * expert);
  EXPECT_EQ(stage_expert_parameters(m, 2, 2, 4, 1), 1 * 2 * expert / 2);
  EXPECT_EQ(stage_parameters(m, 1, 1, 0, 1) - stage_parameters(m, 1, 1, 0, 2), 2 * 4 * expert);
}

TEST(MoePlan, the_experts_states_are_sharded_over_dp_over_ep) {
  const PlanModel m = moe_model();
  const double psi = static_cast<double>(stage_parameters(m, 1, 1, 0, 2));
  const double experts = static_cast<double>(stage_expert_parameters(m, 1, 1, 2, 0));
  const StateBytes b = state_bytes_for("fp32", "fp32");
  Layout l{4, 1, 1, 1, 1, false};
  l.ep = 2;
  // ZeRO 1 at dp 4, ep 2: the dense states over 4 ranks, the experts' over 2.
  const MemoryBreakdown z1 = stage_memory(m, l, 0);
  EXPECT_DOUBLE_EQ(z1.parameters, b.param * psi);
  EXPECT_DOUBLE_EQ(z1.optimizer_states, b.optimizer * ((psi - experts) / 4 + experts / 2));
  // Whatever ep, a rank's share of the experts' optimizer states is E / dp of them.
  Layout ep1 = l, ep4 = l;
  ep1.ep = 1;
  ep4.ep = 4;
  EXPECT_NEAR(stage_memory(m, ep1, 0).optimizer_states, z1.optimizer_states, 1e-6);
  EXPECT_NEAR(stage_memory(m, ep4, 0).optimizer_states, z1.optimizer_states, 1e-6);
  // ... while the parameters and gradients a rank keeps whole shrink with ep.
  EXPECT_GT(stage_memory(m, ep1, 0).parameters, z1.parameters);
  EXPECT_GT(z1.parameters, stage_memory(m, ep4, 0).parameters);
  // ZeRO 3: everything sharded, experts over dp / ep; a gather brings in a layer with
  // only its ep rank's experts.
  Layout z3 = l;
  z3.zero = 3;
  const Stage3Split split = stage3_split(m, z3, 0);
  EXPECT_EQ(split.expert_sharded, stage_expert_parameters(m, 1, 1, 2, 0));
  Layout z3_ep1 = z3;
  z3_ep1.ep = 1;
  EXPECT_GT(stage3_split(m, z3_ep1, 0).largest_layer, split.largest_layer);
}

TEST(MoePlan, the_all_to_all_costs_at_ep_above_one_only) {
  PlanModel m = moe_model();
  m.moe_load_cv = 0;  // balanced experts: the all-to-alls alone
  const Cluster c = machine();
  Layout l{4, 1, 1, 1, 2, false};
  const TimeBreakdown ep1 = step_time(m, l, c);
  EXPECT_EQ(ep1.ep, 0.0);
  l.ep = 2;
  const TimeBreakdown ep2 = step_time(m, l, c);
  // Per micro-batch and MoE layer: two row exchanges forward, two backward, one of counts.
  const double rows = 2.0 * 128 * 2 * 256 * 4.0;  // mb 2, seq 128, top 2, h 256, fp32
  Link link = link_for(c, l, Dim::kEp);
  const double per_layer = 4 * all_to_all_s(rows, 2, link) + all_to_all_s(8 * 8.0, 2, link);
  EXPECT_DOUBLE_EQ(ep2.ep, 2 /* micro-batches */ * 2 /* MoE layers */ * per_layer);
  EXPECT_GT(ep2.ep, 0.0);
  // What a rank sends: half of each exchange goes to the other rank.
  EXPECT_DOUBLE_EQ(ep2.all_to_all_bytes, 2 * 2 * (4 * rows + 8 * 8.0) / 2);
  EXPECT_EQ(ep1.all_to_all_bytes, 0.0);
  // n - 1 exchanges of bytes / n.
  EXPECT_DOUBLE_EQ(all_to_all_s(4e6, 4, link), 3 * link.exchange_s(1e6) + link.sync_s);
  EXPECT_EQ(all_to_all_s(4e6, 1, link), 0.0);
  // The same FLOPs: balanced routing gives each rank k choices a token whatever ep.
  EXPECT_DOUBLE_EQ(ep2.flops, ep1.flops);
  // Spread loads: the others wait for the busiest rank's experts, in the all-to-all.
  m.moe_load_cv = 0.5;
  const TimeBreakdown spread = step_time(m, l, c);
  EXPECT_GT(spread.ep, ep2.ep);
  EXPECT_DOUBLE_EQ(spread.compute, ep2.compute);
}

TEST(MoePlan, the_busiest_ep_rank_is_further_above_the_mean_with_more_ranks_and_fewer_experts) {
  EXPECT_EQ(expected_max_of_normals(1), 0.0);
  EXPECT_NEAR(expected_max_of_normals(2), 0.5642, 1e-4);  // 1 / sqrt(pi)
  // Blom's approximation against the expectations integrated numerically: within 0.03.
  EXPECT_NEAR(expected_max_of_normals(4), 1.0294, 0.02);
  EXPECT_NEAR(expected_max_of_normals(8), 1.4236, 0.02);
  EXPECT_NEAR(expected_max_of_normals(64), 2.3437, 0.03);
  EXPECT_EQ(expert_imbalance(0.5, 8, 1), 0.0);
  // 8 experts over 2 ranks: 4 each, a rank's load spreads by 0.5 / 2.
  EXPECT_NEAR(expert_imbalance(0.5, 8, 2), 0.25 * 0.5642, 1e-4);
  EXPECT_GT(expert_imbalance(0.5, 8, 4), expert_imbalance(0.5, 8, 2));
  EXPECT_GT(expert_imbalance(0.5, 8, 2), expert_imbalance(0.5, 64, 2));
}

TEST(MoePlan, layouts_vary_ep_over_the_divisors_of_dp_and_the_experts) {
  PlanModel m = moe_model();
  m.moe_experts = 6;  // 6 experts on dp 4: ep 1 or 2, not 4
  std::set<int> eps;
  for (const Layout& l : enumerate_layouts(m, 4, 8, SearchSpace{}))
    if (l.dp == 4) eps.insert(l.ep);
  EXPECT_EQ(eps, (std::set<int>{1, 2}));
  Layout l{4, 1, 1, 1, 1, false};
  l.ep = 4;
  EXPECT_NE(layout_problem(m, l, 4, 8).find("ep 4 must divide"), std::string::npos);
  PlanModel dense = m;
  dense.moe_experts = 0;
  l.ep = 2;
  EXPECT_NE(layout_problem(dense, l, 4, 8).find("needs MoE layers"), std::string::npos);
  for (const Layout& d : enumerate_layouts(dense, 4, 8, SearchSpace{})) EXPECT_EQ(d.ep, 1);
}

TEST(MoePlan, auto_chooses_expert_parallelism_where_it_is_faster) {
  // A model that is mostly experts: 16 experts of width 2048 in every layer. At ep 1 each
  // rank holds all of them and reduces their gradients over dp; at ep e it holds 16 / e
  // and reduces theirs over dp / e, and sends its tokens to them instead.
  PlanModel m = moe_model();
  m.moe_experts = 16, m.moe_ffn_hidden = 2048, m.moe_layer_every = 1;
  m.releases_host_memory = true;
  Cluster c = machine();
  c.process_base_gb = 0.2;
  // One device a node (no tp), nodes linked at 1 GB/s: moving all the experts' gradients
  // costs more than moving the tokens to them.
  c.devices_per_node = 1;
  c.inter_node_gbps = 1;
  AutoBudget b;
  b.ranks = 4;
  b.ranks_per_node = 1;
  b.memory_per_rank = 4e9;
  const AutoChoice choice = choose_configuration(m, c, b);
  ASSERT_FALSE(choice.ranked.empty()) << choice.suggestion;
  const AutoCandidate& best = choice.ranked.front();
  ASSERT_GT(best.layout.ep, 1) << best.name();
  EXPECT_EQ(overrides_of(best).back(), "parallel.ep=" + std::to_string(best.layout.ep));
  // Its twin at ep 1 moves more over dp than the all-to-all costs.
  Layout twin = best.layout;
  twin.ep = 1;
  const TimeBreakdown at_ep1 = step_time(m, twin, c), chosen = best.evaluation.time;
  EXPECT_GT(at_ep1.total(), chosen.total());
  EXPECT_GT(at_ep1.dp - chosen.dp, chosen.ep);
  EXPECT_GT(chosen.ep, 0.0);
}

}  // namespace
}  // namespace trident::plan
