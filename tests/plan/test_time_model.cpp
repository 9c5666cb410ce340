// The time model: collective costs, which link a group crosses, the pipeline bubble and
// the parts of a step.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <cmath>  // std::sqrt
#include <map>    // std::map

#include "plan/plan_model.h"  // stage_parameters
#include "plan/time_model.h"  // step_time, bubble_fraction, all_reduce_s, group_crosses_nodes

namespace trident::plan {
namespace {

/// A cluster where only compute costs time: 1 TFLOP/s, links infinitely fast.
Cluster compute_only() {
  Cluster c;
  c.devices_per_node = 8;
  c.peak_tflops = {{"fp32", 1.0}};
  c.efficiency = 1.0;
  c.intra_node_gbps = c.inter_node_gbps = 1e12;
  c.latency_us = 0;
  c.memory_gbps = 0;
  return c;
}

PlanModel small_model() {
  PlanModel m;
  m.layers = 8, m.hidden = 256, m.heads = 8, m.vocab = 512, m.seq_len = 128;
  m.global_batch = 64;
  return m;
}

TEST(Bubble, one_f_one_b_formula) {
  EXPECT_DOUBLE_EQ(bubble_fraction(1, 8), 0.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(2, 1), 1.0 / 2.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(4, 8), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(4, 4), 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(8, 64), 7.0 / 71.0);
}

TEST(Bubble, the_other_stages_passes_of_one_micro_batch) {
  // With free communication and a device per stage, 1F1B's last stage (the head's: the
  // slowest here) computes without a break once its first input arrives, and the others
  // idle while one micro-batch's forward reaches it and its backward returns: the bubble
  // is one micro-batch through the other stages, the whole model's time for it less the
  // last stage's. With equal stages that is (p - 1) / (m + p - 1) of the step.
  const PlanModel m = small_model();
  for (const auto& [pp, micro_batch] : {std::pair{2, 8}, {4, 4}, {4, 16}, {8, 1}}) {
    const Layout l{1, pp, 1, 0, micro_batch, false};
    const double mbs = static_cast<double>(l.micro_batches(m));
    const TimeBreakdown t = step_time(m, l, compute_only());
    const TimeBreakdown whole =
        step_time(m, Layout{1, 1, 1, 0, micro_batch, false}, compute_only());
    EXPECT_NEAR(t.bubble, (whole.compute - t.compute) / mbs, 1e-12) << l.name();
    EXPECT_LT(t.bubble_fraction(), bubble_fraction(pp, l.micro_batches(m))) << l.name();
  }
}

TEST(Bubble, zb_h1_waits_one_forward_and_interleaved_a_chunk_of_the_fill) {
  // Free communication. ZB-H1's
  // first stage has no input half and its weight half is a whole backward (F + W = 3 F,
  // less than the last stage's F + B + W), so the last stage computes from its first input
  // to the end: the bubble is the first stage's forward, a third of its 1F1B pass.
  PlanModel m = small_model();
  for (int micro_batch : {1, 2, 8}) {
    const Layout l{1, 2, 1, 0, micro_batch, false};
    const double mbs = static_cast<double>(l.micro_batches(m));
    m.schedule = "1f1b";
    const TimeBreakdown one_f_one_b = step_time(m, l, compute_only());
    const TimeBreakdown whole =
        step_time(m, Layout{1, 1, 1, 0, micro_batch, false}, compute_only());
    m.schedule = "zb-h1";
    const TimeBreakdown zb = step_time(m, l, compute_only());
    EXPECT_NEAR(zb.bubble, (whole.compute - one_f_one_b.compute) / mbs / 3.0, 1e-12) << l.name();
    // The last stage's input half: the backward's products with the weights (a forward's
    // FLOPs): four forwards a micro-batch, not 1F1B's three.
    EXPECT_NEAR(zb.compute, one_f_one_b.compute * 4.0 / 3.0, 1e-12) << l.name();
  }
  // Interleaved 1F1B with v chunks: (p - 1) / (v m + p - 1) with equal chunks
  // (test_shared_pipeline.cpp); the head on the last chunk is a larger share of a chunk
  // than of a stage, so here the fill and drain is less than that, and no less than
  // 1F1B's over v (equal to it where the stages before the last are alike).
  for (const auto& [pp, micro_batch] : {std::pair{2, 1}, {4, 1}, {4, 2}}) {
    const Layout l{1, pp, 1, 0, micro_batch, false};
    const double mbs = static_cast<double>(l.micro_batches(m));
    m.schedule = "1f1b";
    m.virtual_stages = 1;
    const double one_f_one_b = step_time(m, l, compute_only()).bubble;
    m.schedule = "interleaved-1f1b";
    m.virtual_stages = 2;
    const TimeBreakdown t = step_time(m, l, compute_only());
    EXPECT_LT(t.bubble_fraction(), (pp - 1) / (2 * mbs + pp - 1)) << l.name();
    EXPECT_LT(t.bubble, one_f_one_b) << l.name();
    EXPECT_GE(t.bubble, one_f_one_b / 2 - 1e-12) << l.name();
  }
}

TEST(Collectives, ring_costs) {
  const Link link{100e9, 0, false};
  EXPECT_DOUBLE_EQ(all_reduce_s(1e9, 4, link), 2.0 * 3 / 4 * 1e9 / 100e9);
  EXPECT_DOUBLE_EQ(reduce_scatter_s(1e9, 4, link), 3.0 / 4 * 1e9 / 100e9);
  EXPECT_DOUBLE_EQ(all_gather_s(1e9, 4, link), 3.0 / 4 * 1e9 / 100e9);
  EXPECT_DOUBLE_EQ(all_reduce_s(1e9, 1, link), 0.0);
  const Link slow{1e9, 1e-5, true};
  EXPECT_DOUBLE_EQ(send_s(1e6, slow), 1e-3 + 1e-5);
  // Latency only: recursive doubling's log2(8) = 3 rounds beat the ring's 2 * 7 and
  // Rabenseifner's 2 * 3; recursive halving's ceil(log2 5) = 3 beat the ring's 4.
  EXPECT_DOUBLE_EQ(all_reduce_s(0, 8, slow), 3 * 1e-5);
  EXPECT_DOUBLE_EQ(reduce_scatter_s(0, 5, slow), 3 * 1e-5);
  // Bandwidth and latency both: 1 MB over 4 at 1 GB/s, 10 us. Ring reduce-scatter:
  // 3 * (250 us + 10 us) = 780 us; halving: (500 + 10) + (250 + 10) = 770 us.
  EXPECT_NEAR(reduce_scatter_s(1e6, 4, slow), 770e-6, 1e-12);
  // All-reduce: twice that, 1540 us, against doubling's 2 * (1000 + 10) = 2020 us.
  EXPECT_NEAR(all_reduce_s(1e6, 4, slow), 1540e-6, 1e-12);
}

TEST(Collectives, measured_message_times) {
  // 1 kB takes 10 us, 1 MB 100 us: log-log interpolation between, the floor below,
  // the largest message's rate above.
  const std::map<double, double> table = {{1e3, 10e-6}, {1e6, 100e-6}};
  Link link{1e9, 0, false, &table};
  EXPECT_DOUBLE_EQ(link.message_s(10), 10e-6);
  EXPECT_NEAR(link.message_s(std::sqrt(1e3 * 1e6)), std::sqrt(10e-6 * 100e-6), 1e-15);
  EXPECT_DOUBLE_EQ(link.message_s(4e6), 400e-6);
  EXPECT_DOUBLE_EQ(send_s(1e6, link), 100e-6);
  EXPECT_DOUBLE_EQ(all_reduce_s(2e6, 2, link), 2 * 100e-6);  // one message of 1 MB each way
}

/// Two emulated nodes of 2 ranks with MPI collectives: 1 us + 0.01 ns per byte inside a
/// node (100 GB/s), 10 us + 0.1 ns per byte for a message between nodes with both ranks
/// of a node sending across at once (what `trident calibrate` measures), tabulated at
/// the sizes the tests ask for.
Cluster two_mpi_nodes() {
  Cluster c = compute_only();
  c.devices_per_node = 2;
  c.collectives = "mpi";
  for (double bytes : {0.25e6, 0.5e6, 1e6}) {
    c.sendrecv_seconds[bytes] = 1e-6 + bytes * 0.01e-9;
    c.inter_sendrecv_seconds[bytes] = 10e-6 + bytes * 0.1e-9;
  }
  return c;
}

TEST(Collectives, mpi_all_reduce_is_a_binomial_reduce_then_broadcast) {
  // Open MPI's in-place MPI_Iallreduce: the whole buffer in each of 2 ceil(log2 n) rounds.
  const Cluster c = two_mpi_nodes();
  const Link inside = link_for(c, Layout{1, 1, 2}, Dim::kTp);  // ranks 0, 1: node 0
  EXPECT_DOUBLE_EQ(all_reduce_s(1e6, 2, inside), 2 * inside.message_s(1e6));
  // tp 4 over the two nodes: reduce 1 -> 0 and 3 -> 2 inside, then 2 -> 0 alone on node
  // 1's link (half of the table's two messages at once); broadcast 0 -> 1 inside, then
  // 0 -> 2 and 1 -> 3 together on node 0's link.
  const Link across = link_for(c, Layout{1, 1, 4}, Dim::kTp);
  const double in = across.within->message_s(1e6);
  EXPECT_NEAR(all_reduce_s(1e6, 4, across),
              in + across.message_s(0.5e6) + in + across.message_s(1e6), 1e-15);
  EXPECT_NEAR(all_reduce_s(1e6, 4, across), 2 * 11e-6 + 60e-6 + 110e-6, 1e-12);
  // Dealt round robin (ranks 0, 2 on node 0): the first reduce round sends 1 -> 0 and
  // 3 -> 2 together from node 1, the first broadcast round 0 -> 1 alone; the second
  // rounds stay inside. The same total by another path.
  Cluster cyclic = c;
  cyclic.placement = "cyclic";
  const Link dealt = link_for(cyclic, Layout{1, 1, 4}, Dim::kTp);
  EXPECT_NEAR(all_reduce_s(1e6, 4, dealt), 110e-6 + 11e-6 + 60e-6 + 11e-6, 1e-12);
  // Reduce-scatter stays trident's ring: 3 messages of a quarter, one of a node's two
  // ranks on its link (edge 1 -> 2), half the table's two at once.
  EXPECT_EQ(across.ring_streams, 1);
  EXPECT_NEAR(reduce_scatter_s(1e6, 4, across), 3 * across.message_s(0.25e6) / 2, 1e-15);
  // NCCL's collectives on the same links keep the fastest algorithm.
  Cluster nccl = c;
  nccl.collectives = "nccl";
  EXPECT_LT(all_reduce_s(1e6, 4, link_for(nccl, Layout{1, 1, 4}, Dim::kTp)),
            all_reduce_s(1e6, 4, across));
}

TEST(Collectives, groups_crossing_a_link_share_its_rounds) {
  // tp 2 dealt round robin over two nodes: every tp pair crosses. The pairs of two dp
  // replicas, and those of two pipeline stages (busy at once in the steady state), send
  // their messages of a round from one node together: the table's two at once.
  Cluster c = two_mpi_nodes();
  c.placement = "cyclic";
  for (const Layout& l : {Layout{2, 1, 2}, Layout{1, 2, 2}}) {
    const Link link = link_for(c, l, Dim::kTp);
    ASSERT_TRUE(link.inter_node) << l.name();
    EXPECT_NEAR(all_reduce_s(1e6, 2, link), 2 * 110e-6, 1e-12) << l.name();
  }
}

TEST(Collectives, rounds_one_way_and_rings_as_exchanges_between_nodes) {
  // With a one-way table between nodes (inter_send_us), a binomial round or a pipeline
  // send is priced by it and a ring's round, a message each way at once, by the exchange
  // table: on a shaped TCP link the exchange takes longer (here made twice as long).
  Cluster c = two_mpi_nodes();
  for (const auto& [bytes, s] : c.inter_sendrecv_seconds) c.inter_send_seconds[bytes] = s / 2;
  c.placement = "cyclic";
  const Link tp = link_for(c, Layout{2, 1, 2}, Dim::kTp);
  EXPECT_NEAR(all_reduce_s(1e6, 2, tp), 2 * 55e-6, 1e-12);
  Cluster block = c;
  block.placement = "block";
  const Link pp = link_for(block, Layout{2, 2, 1}, Dim::kPp);
  EXPECT_NEAR(send_s(1e6, pp), 55e-6, 1e-12);
  // dp 4 over the two nodes in blocks: ring edges 1 -> 2 and 3 -> 0 cross, one leaving each
  // node (half the table's two); 3 rounds of a quarter each, as exchanges.
  const Link dp = link_for(block, Layout{4, 1, 1}, Dim::kDp);
  EXPECT_NEAR(reduce_scatter_s(1e6, 4, dp), 3 * (10e-6 + 0.25e6 * 0.1e-9) * 0.5, 1e-12);
}

TEST(Collectives, a_measured_ring_step_prices_rings_between_nodes) {
  // A ring step measured with one stream leaving each node (here 30 us at every size)
  // replaces the halved exchange for dp 4 over two nodes of two in blocks, whose ring puts
  // one stream on each node's link.
  Cluster c = two_mpi_nodes();
  for (const auto& [bytes, s] : c.inter_sendrecv_seconds) c.inter_ring_seconds[bytes] = 30e-6;
  const Link dp = link_for(c, Layout{4, 1, 1}, Dim::kDp);
  EXPECT_EQ(dp.ring_streams, 1);
  EXPECT_NEAR(reduce_scatter_s(1e6, 4, dp), 3 * 30e-6, 1e-12);
  // Dealt round robin, every edge of the ring crosses: both ranks of a node on its link,
  // the exchange table's condition.
  c.placement = "cyclic";
  const Link dealt = link_for(c, Layout{4, 1, 1}, Dim::kDp);
  EXPECT_EQ(dealt.ring_streams, 2);
  EXPECT_NEAR(reduce_scatter_s(1e6, 4, dealt), 3 * dealt.exchange_s(0.25e6), 1e-12);
  // Between: nodes of four in blocks, dp 4 x tp 2: each of the two dp rings leaves a node
  // once, two of its four ranks' edges on the link, a third of the way.
  c.placement = "block";
  c.devices_per_node = 4;
  const Link between = link_for(c, Layout{4, 1, 2}, Dim::kDp);
  EXPECT_EQ(between.ring_streams, 2);
  EXPECT_EQ(between.node_streams, 4);
  EXPECT_NEAR(between.ring_step_s(0.25e6), 30e-6 + (between.exchange_s(0.25e6) - 30e-6) / 3, 1e-15);
}

TEST(Collectives, mpi_all_gather_sends_every_part_across_at_once) {
  // libnbc's linear all-gather over dp 4 on two nodes of two in blocks: each rank sends
  // its quarter to the two members on the other node, four messages leaving each node at
  // once, twice the exchange table's two: an exchange of two quarters. Dealt round robin,
  // the same.
  const Cluster c = two_mpi_nodes();
  EXPECT_EQ(gather_streams_leaving_a_node(Layout{4, 1, 1}, Dim::kDp, 2, false), 4);
  EXPECT_EQ(gather_streams_leaving_a_node(Layout{4, 1, 1}, Dim::kDp, 2, true), 4);
  const Link dp = link_for(c, Layout{4, 1, 1}, Dim::kDp);
  EXPECT_NEAR(all_gather_s(1e6, 4, dp), 10e-6 + 0.5e6 * 0.1e-9, 1e-12);
  // dp 8 over four nodes of two: each rank's part to six members elsewhere.
  EXPECT_EQ(gather_streams_leaving_a_node(Layout{8, 1, 1}, Dim::kDp, 2, false), 12);
  // Groups inside a node keep the ring, and so do NCCL's collectives.
  EXPECT_EQ(gather_streams_leaving_a_node(Layout{2, 1, 2}, Dim::kDp, 4, false), 0);
  const Link inside = link_for(c, Layout{2, 1, 1}, Dim::kDp);
  EXPECT_DOUBLE_EQ(all_gather_s(1e6, 2, inside), reduce_scatter_s(1e6, 2, inside));
  Cluster nccl = c;
  nccl.collectives = "nccl";
  const Link ring = link_for(nccl, Layout{4, 1, 1}, Dim::kDp);
  EXPECT_DOUBLE_EQ(all_gather_s(1e6, 4, ring), reduce_scatter_s(1e6, 4, ring));
}

TEST(Collectives, pipeline_sends_share_a_node_link) {
  // Nodes of two in blocks. pp 4: stage 1 (rank 1, node 0) sends alone to stage 2 (rank
  // 2, node 1): half the table's two messages at once. dp 2 x pp 2: both replicas of
  // stage 0 (node 0) send to stage 1 (node 1) at once: the table's two.
  const Cluster c = two_mpi_nodes();
  EXPECT_EQ(pipeline_streams_leaving_a_node(Layout{1, 4, 1}, 2, false), 1);
  EXPECT_NEAR(send_s(1e6, link_for(c, Layout{1, 4, 1}, Dim::kPp)), 60e-6, 1e-12);
  EXPECT_EQ(pipeline_streams_leaving_a_node(Layout{2, 2, 1}, 2, false), 2);
  EXPECT_NEAR(send_s(1e6, link_for(c, Layout{2, 2, 1}, Dim::kPp)), 110e-6, 1e-12);
  // Inside a node the table is not shared: pp 2 on ranks 0, 1.
  const Link inside = link_for(c, Layout{1, 2, 1}, Dim::kPp);
  EXPECT_FALSE(inside.inter_node);
  EXPECT_NEAR(send_s(1e6, inside), 11e-6, 1e-12);
}

TEST(Links, megatron_rank_order) {
  // 16 ranks on nodes of 8; rank = tp + tp * (dp + dp * pp).
  EXPECT_FALSE(group_crosses_nodes(Layout{2, 1, 8}, Dim::kTp, 8));
  EXPECT_TRUE(group_crosses_nodes(Layout{2, 1, 8}, Dim::kDp, 8));
  EXPECT_FALSE(group_crosses_nodes(Layout{8, 1, 2}, Dim::kTp, 8));
  EXPECT_TRUE(group_crosses_nodes(Layout{8, 1, 2}, Dim::kDp, 8));
  EXPECT_FALSE(group_crosses_nodes(Layout{4, 2, 2}, Dim::kDp, 8));  // dp x tp = 8 per node
  EXPECT_TRUE(group_crosses_nodes(Layout{4, 2, 2}, Dim::kPp, 8));
  // 12 ranks on nodes of 6 with tp 4: ranks 4..7 straddle nodes 0 and 1.
  EXPECT_TRUE(group_crosses_nodes(Layout{3, 1, 4}, Dim::kTp, 6));
  EXPECT_FALSE(group_crosses_nodes(Layout{4, 1, 3}, Dim::kTp, 6));
  // Everything in one node.
  EXPECT_FALSE(group_crosses_nodes(Layout{2, 2, 2}, Dim::kPp, 8));
}

TEST(StepTime, compute_counts_recomputation) {
  const PlanModel m = small_model();
  const Cluster c = compute_only();
  const TimeBreakdown plain = step_time(m, Layout{1, 1, 1, 0, 8, false}, c);
  const TimeBreakdown ckpt = step_time(m, Layout{1, 1, 1, 0, 8, true}, c);
  // At 1 TFLOP/s the step is its FLOPs: 3 passes without recompute, 4 with.
  EXPECT_NEAR(plain.compute, model_flops_per_step(m, 1) / 1e12, 1e-12);
  EXPECT_NEAR(ckpt.compute / plain.compute, 4.0 / 3.0, 1e-12);
}

TEST(StepTime, fixed_cost_per_layer) {
  // 8 layers on one stage plus its two ends (as two layers when ends_overhead_us is 0),
  // 4 micro-batches: 10 x 4 layer costs, a third more with recomputation; tp layers cost
  // layer_overhead_tp_us.
  PlanModel m = small_model();
  m.global_batch = 4;
  Cluster c = compute_only();
  const double base = step_time(m, Layout{1, 1, 1, 0, 1, false}, c).compute;
  c.layer_overhead_us = 100;
  EXPECT_NEAR(step_time(m, Layout{1, 1, 1, 0, 1, false}, c).compute - base, 40 * 100e-6, 1e-12);
  const double ckpt = step_time(m, Layout{1, 1, 1, 0, 1, true}, c).compute -
                      step_time(m, Layout{1, 1, 1, 0, 1, true}, compute_only()).compute;
  EXPECT_NEAR(ckpt, 40 * 100e-6 * 4 / 3, 1e-12);
  c.layer_overhead_tp_us = 300;
  const double tp = step_time(m, Layout{1, 1, 2, 0, 1, false}, c).compute -
                    step_time(m, Layout{1, 1, 2, 0, 1, false}, compute_only()).compute;
  EXPECT_NEAR(tp, 40 * 300e-6, 1e-12);
  c.ends_overhead_us = 1000;
  const double ends = step_time(m, Layout{1, 1, 1, 0, 1, false}, c).compute - base;
  EXPECT_NEAR(ends, 4 * (8 * 100e-6 + 1000e-6), 1e-12);
}

TEST(StepTime, weights_cost_their_bytes_every_micro_batch) {
  // weight_gbps charges each micro-batch the stage's parameter bytes at that rate, whatever
  // the tokens: 4 micro-batches of 1 cost four times what 1 micro-batch of 4 does, and at
  // pp 2 each stage its own parameters (the slower stage sets the step's compute).
  PlanModel m = small_model();
  m.global_batch = 4;
  const Cluster plain = compute_only();
  Cluster c = compute_only();
  c.weight_gbps = 2.0;
  const double per_micro_batch =
      static_cast<double>(stage_parameters(m, 1, 1, 0)) * 4.0 / 2e9;  // fp32
  for (int64_t micro : {1, 4}) {
    const Layout l{1, 1, 1, 0, micro, false};
    EXPECT_NEAR(step_time(m, l, c).compute - step_time(m, l, plain).compute,
                static_cast<double>(4 / micro) * per_micro_batch, 1e-12);
  }
  // Full recomputation packs the weights for its forward again: a sixth more.
  const Layout ckpt{1, 1, 1, 0, 4, true};
  EXPECT_NEAR(step_time(m, ckpt, c).compute - step_time(m, ckpt, plain).compute,
              per_micro_batch * 7.0 / 6.0, 1e-12);
}

TEST(StepTime, llama_layers_use_the_llama_blocks_calibration) {
  // A Llama model's elementwise work runs at llama_elementwise_gbps and its operator calls
  // cost layer_overhead_us scaled by llama_layer_overhead_us / layer_overhead_us (its ends
  // too, which default to two layers); a GPT-2 model's keep the GPT-2 block's figures.
  PlanModel m = small_model();
  m.llama = true, m.kv_heads = 4, m.ffn_hidden = 704, m.tied = false;
  m.global_batch = 4;
  const Layout l{1, 1, 1, 0, 1, false};
  const double flops = step_time(m, l, compute_only()).compute;
  Cluster c = compute_only();
  c.elementwise_gbps = {{1.0, 10.0}};  // one entry: that rate at every size
  const double elementwise = step_time(m, l, c).compute - flops;
  c.elementwise_gbps.clear();
  c.layer_overhead_us = 100;
  const double calls = step_time(m, l, c).compute - flops;
  ASSERT_GT(elementwise, 0);
  ASSERT_GT(calls, 0);
  c.elementwise_gbps = {{1.0, 10.0}};
  c.llama_elementwise_gbps = {{1.0, 5.0}};
  c.llama_layer_overhead_us = 300;
  EXPECT_NEAR(step_time(m, l, c).compute - flops, 2.0 * elementwise + 3.0 * calls, 1e-12);
  PlanModel gpt = small_model();
  gpt.global_batch = 4;
  Cluster gpt_only = c;
  gpt_only.llama_elementwise_gbps.clear();
  gpt_only.llama_layer_overhead_us = 0;
  EXPECT_DOUBLE_EQ(step_time(gpt, l, c).compute, step_time(gpt, l, gpt_only).compute);
}

TEST(StepTime, tp_traffic_per_layer) {
  // tp 2, one micro-batch of 1: 4 all-reduces per layer, +1 embedding, +1 head, and the
  // cross-entropy's three all-reduces of a value per token.
  PlanModel m = small_model();
  m.global_batch = 1;
  Cluster c = compute_only();
  c.intra_node_gbps = 1;  // 1e9 B/s
  const TimeBreakdown t = step_time(m, Layout{1, 1, 2, 0, 1, false}, c);
  const double bytes = 128.0 * 256 * 4;  // s b h fp32
  const double loss = 3 * 128.0 * 4 / 1e9;
  EXPECT_NEAR(t.tp, (8 * 4 + 2) * (bytes / 1e9) + loss, 1e-12);  // 2(n-1)/n = 1 for n = 2
  // Llama's q, k, v, gate and up each reduce their input's gradient in backward: 2 + 5.
  m.llama = true;
  m.kv_heads = 2;
  m.ffn_hidden = 512;
  const TimeBreakdown llama = step_time(m, Layout{1, 1, 2, 0, 1, false}, c);
  EXPECT_NEAR(llama.tp, (8 * 7 + 2) * (bytes / 1e9) + loss, 1e-12);
}

TEST(StepTime, tp_ranks_drift_apart_by_a_share_of_their_compute) {
  // Cluster::sync_fraction: each tp collective waits for the rank that computed longest
  // since the previous one; over a micro-batch that is the fraction of its compute, for a
  // group of 2, and as much more for larger groups as the expected last of n normal draws
  // exceeds the last of 2. The compute itself and the runs without tp are unchanged.
  PlanModel m = small_model();
  m.global_batch = 4;
  Cluster c = compute_only();
  c.intra_node_gbps = 1;
  for (const int tp : {2, 4}) {
    const Layout l{1, 1, tp, 0, 2, false};
    const TimeBreakdown before = step_time(m, l, c);
    Cluster drifting = c;
    drifting.sync_fraction = 0.1;
    const TimeBreakdown after = step_time(m, l, drifting);
    EXPECT_DOUBLE_EQ(after.compute, before.compute);
    const double share = expected_max_of_normals(tp) / expected_max_of_normals(2);
    EXPECT_NEAR(after.tp - before.tp, 0.1 * before.compute * share, 1e-12) << "tp " << tp;
  }
  Cluster drifting = c;
  drifting.sync_fraction = 0.1;
  const Layout alone{1, 1, 1, 0, 2, false};
  EXPECT_DOUBLE_EQ(step_time(m, alone, drifting).total(), step_time(m, alone, c).total());
}

TEST(StepTime, sequence_parallel_gathers_and_scatters) {
  // tp 2 with sequence parallelism: per GPT-2 layer, forward 2 all-gathers and 2
  // reduce-scatters; backward 4 all-gathers (2 again for the weight gradients) and 2
  // reduce-scatters. Embedding: a reduce-scatter, its all-gather back. Head: the same.
  PlanModel m = small_model();
  m.global_batch = 1;
  Cluster c = compute_only();
  c.intra_node_gbps = 1;
  Layout l{1, 1, 2, 0, 1, false};
  l.sequence_parallel = true;
  const TimeBreakdown t = step_time(m, l, c);
  const double bytes = 128.0 * 256 * 4;
  const double half = (bytes / 2) / 1e9;  // a ring of 2 moves half the buffer
  const double loss = 3 * 128.0 * 4 / 1e9;
  EXPECT_NEAR(t.tp, (8 * 10 + 4) * half + loss, 1e-12);
  // On a ring, a reduce-scatter and an all-gather cost an all-reduce: only the backward's
  // second gathers are extra.
  const TimeBreakdown plain = step_time(m, Layout{1, 1, 2, 0, 1, false}, c);
  EXPECT_NEAR(t.tp - plain.tp, 8 * 2 * half, 1e-12);
  // The elementwise work shrinks: the norms and the residual stream are split.
  c.memory_gbps = 1;
  EXPECT_LT(step_time(m, l, c).compute, step_time(m, Layout{1, 1, 2, 0, 1, false}, c).compute);
}

TEST(StepTime, selective_recomputation_reruns_attention_core) {
  // Selective recomputation adds one forward of attention's two (s x s) products:
  // 4 s h FLOPs a token and layer, and nothing to the tp traffic.
  PlanModel m = small_model();
  const Cluster c = compute_only();  // 1 TFLOP/s
  Layout none{1, 1, 1, 0, 4, false};
  Layout selective = none;
  selective.selective = true;
  const double tokens = 64.0 * 128;
  const double extra = tokens * 8 * 4 * 128 * 256 / 1e12;
  EXPECT_NEAR(step_time(m, selective, c).compute - step_time(m, none, c).compute, extra, 1e-12);
  const Layout full{1, 1, 1, 0, 4, true};
  EXPECT_LT(step_time(m, selective, c).total(), step_time(m, full, c).total());
}

TEST(StepTime, dp_reduction_hides_behind_backward_except_the_last_bucket) {
  PlanModel m = small_model();
  m.bucket_size = 1 << 16;
  Cluster c = compute_only();
  c.intra_node_gbps = 10;
  const Layout l{2, 1, 1, 0, 32, false};
  const TimeBreakdown hidden = step_time(m, l, c);
  c.dp_overlap = 0;
  const TimeBreakdown exposed = step_time(m, l, c);
  const Link link{10e9, 0, false};
  const double psi = static_cast<double>(total_parameters(m));
  // Plus the one-element gradient-norm and loss all-reduces.
  const double scalars = 2 * all_reduce_s(8, 2, link);
  EXPECT_NEAR(exposed.dp, all_reduce_s(psi * 4, 2, link) + scalars, 1e-12);
  EXPECT_NEAR(hidden.dp, all_reduce_s((1 << 16) * 4.0, 2, link) + scalars, 1e-12);
}

TEST(StepTime, a_reduction_longer_than_backward_hides_its_overlap_of_the_backward) {
  // calibrate measures the overlap as what hid over the shorter of the reduction and the
  // backward; the model reads it the same way: a reduction far longer than the backward
  // with overlap 0.5 hides half the backward, not all of it.
  PlanModel m = small_model();
  m.bucket_size = 1 << 10;
  Cluster c = compute_only();
  c.intra_node_gbps = 0.001;  // the reduction takes seconds; one micro-batch's backward, ms
  const Layout l{2, 1, 1, 1, 32, false};
  c.dp_overlap = 0;
  const double none = step_time(m, l, c).dp;
  c.dp_overlap = 1;
  const double all = none - step_time(m, l, c).dp;
  c.dp_overlap = 0.5;
  const double half = none - step_time(m, l, c).dp;
  const Link link{0.001e9, 0, false};
  const double psi = static_cast<double>(total_parameters(m));
  // The whole backward hid, far less than the reduction less its last bucket.
  EXPECT_GT(all, 0);
  EXPECT_LT(all, 0.01 * reduce_scatter_s(psi * 4, 2, link));
  EXPECT_NEAR(half, 0.5 * all, 1e-12);
}

TEST(StepTime, zero0_all_reduce_hides_as_its_own_overlap_says) {
  // Calibrated on a CPU, the all-reduce (ZeRO 0) and trident's reduce-scatter (ZeRO 1-3)
  // hide differently: each is priced with its own figure.
  PlanModel m = small_model();
  m.bucket_size = 1 << 16;
  Cluster c = compute_only();
  c.intra_node_gbps = 10;
  c.dp_overlap = 0;
  const Layout zero0{2, 1, 1, 0, 32, false}, zero1{2, 1, 1, 1, 32, false};
  const TimeBreakdown unset = step_time(m, zero0, c);  // as dp_overlap when not given
  c.all_reduce_overlap = 1;
  const Link link{10e9, 0, false};
  const double psi = static_cast<double>(total_parameters(m));
  const double scalars = 2 * all_reduce_s(8, 2, link);
  EXPECT_NEAR(unset.dp, all_reduce_s(psi * 4, 2, link) + scalars, 1e-12);
  EXPECT_NEAR(step_time(m, zero0, c).dp, all_reduce_s((1 << 16) * 4.0, 2, link) + scalars, 1e-12);
  // ZeRO 1 still waits for its whole reduce-scatter, then gathers the parameters.
  EXPECT_NEAR(step_time(m, zero1, c).dp,
              reduce_scatter_s(psi * 4, 2, link) + all_gather_s(psi * 4, 2, link) + scalars, 1e-12);
}

TEST(StepTime, optimizer_priced_by_the_calibrated_adamw_update) {
  // fp32: the shard's elements at the calibrated AdamW update's time each, plus the
  // gradient norm's read of the shard and the whole gradient buffer zeroed, at
  // memory_gbps. ZeRO 1 over dp 2 updates half the elements and zeroes the whole buffer.
  PlanModel m = small_model();
  Cluster c = compute_only();
  c.memory_gbps = 10;
  c.adamw_ns_per_element = 3;
  c.peak_tflops["fp64"] = 1.0;
  const double psi = static_cast<double>(total_parameters(m));
  const Layout alone{1, 1, 1, 0, 4, false}, zero1{2, 1, 1, 1, 4, false};
  EXPECT_NEAR(step_time(m, alone, c).optimizer, psi * 3e-9 + (psi * 4 + psi * 4) / 10e9, 1e-12);
  EXPECT_NEAR(step_time(m, zero1, c).optimizer, psi / 2 * 3e-9 + (psi / 2 * 4 + psi * 4) / 10e9,
              1e-12);
  // fp64 states move twice the bytes: the update takes twice as long.
  m.precision = "fp64";
  EXPECT_NEAR(step_time(m, alone, c).optimizer, psi * 6e-9 + (psi * 8 + psi * 8) / 10e9, 1e-12);
  // Not calibrated: the update's 24 passes at memory_gbps, as if none stayed in cache.
  m.precision = "fp32";
  c.adamw_ns_per_element = 0;
  EXPECT_NEAR(step_time(m, alone, c).optimizer, psi * (25 * 4 + 4) / 10e9, 1e-12);
}

TEST(StepTime, ranks_sharing_cores_time_share_them) {
  // 4 ranks on a node of 2 cores: pure dp computes at half speed; a 4-stage pipeline
  // fills its bubble with other stages' work.
  const PlanModel m = small_model();
  Cluster c = compute_only();
  const TimeBreakdown own = step_time(m, Layout{4, 1, 1, 0, 4, false}, c);
  c.cores_per_node = 2;
  EXPECT_DOUBLE_EQ(core_share(Layout{4, 1, 1}, c), 2.0);
  EXPECT_DOUBLE_EQ(core_share(Layout{1, 1, 1}, c), 1.0);
  const TimeBreakdown shared = step_time(m, Layout{4, 1, 1, 0, 4, false}, c);
  EXPECT_NEAR(shared.compute, 2 * own.compute, 1e-12);
  // pp 4, m = 16 micro-batches of 4: dedicated, (16 + 3) stage-times; shared, the work
  // of 4 stages x 16 micro-batches on 2 cores = 32 stage-times, plus what is left of the
  // bubble where the schedule lets fewer than 2 stages run (the fill and the drain).
  const Layout pipe{1, 4, 1, 0, 4, false};
  c.cores_per_node = 0;
  const TimeBreakdown alone = step_time(m, pipe, c);
  c.cores_per_node = 2;
  const TimeBreakdown two_cores = step_time(m, pipe, c);
  EXPECT_GT(two_cores.compute, alone.compute);
  EXPECT_GT(two_cores.bubble, 0.0);
  EXPECT_LT(two_cores.bubble, alone.bubble);  // the idle stages lend their cores
  EXPECT_LT(two_cores.compute + two_cores.bubble, 2 * (alone.compute + alone.bubble));
}

}  // namespace
}  // namespace trident::plan
