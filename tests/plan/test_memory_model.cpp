// The memory model: the ZeRO paper's model-state figure, trident's own accounting, and
// Korthikanti et al.'s activation formula on a case worked by hand.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <cmath>  // std::ceil

#include "plan/memory_model.h"  // zero_model_states, layer_activation_bytes, stage_memory

namespace trident::plan {
namespace {

constexpr double kGB = 1e9;

// ZeRO (Rajbhandari et al. 2020), figure 1: Ψ = 7.5B, N_d = 64, K = 12, mixed precision.
TEST(ZeroModelStates, paper_figure_psi_7_5b_nd_64) {
  const double psi = 7.5e9;
  const StateBytes b = zero_paper_mixed_precision();
  EXPECT_NEAR(zero_model_states(psi, 64, 0, b).total() / kGB, 120.0, 0.05);  // 16 Ψ
  EXPECT_NEAR(zero_model_states(psi, 64, 1, b).total() / kGB, 31.4, 0.05);   // 4Ψ + 12Ψ/64
  EXPECT_NEAR(zero_model_states(psi, 64, 2, b).total() / kGB, 16.6, 0.05);   // 2Ψ + 14Ψ/64
  EXPECT_NEAR(zero_model_states(psi, 64, 3, b).total() / kGB, 1.9, 0.05);    // 16Ψ/64
  // The exact values behind the rounded figure.
  EXPECT_DOUBLE_EQ(zero_model_states(psi, 64, 1, b).total(), 31.40625e9);
  EXPECT_DOUBLE_EQ(zero_model_states(psi, 64, 2, b).total(), 16.640625e9);
  EXPECT_DOUBLE_EQ(zero_model_states(psi, 64, 3, b).total(), 1.875e9);
}

TEST(ZeroModelStates, parts_by_stage) {
  const StateBytes b = zero_paper_mixed_precision();
  const ModelStates s2 = zero_model_states(1000, 4, 2, b);
  EXPECT_DOUBLE_EQ(s2.parameters, 2000);        // 2Ψ, whole
  EXPECT_DOUBLE_EQ(s2.gradients, 500);          // 2Ψ / 4
  EXPECT_DOUBLE_EQ(s2.optimizer_states, 3000);  // 12Ψ / 4
  EXPECT_THROW(zero_model_states(1000, 4, 4, b), std::invalid_argument);
}

TEST(ZeroModelStates, trident_precisions) {
  // fp32 and fp64 parameters are their own master: K = two moments.
  const StateBytes fp32 = state_bytes_for("fp32", "fp32");
  EXPECT_DOUBLE_EQ(zero_model_states(100, 1, 0, fp32).total(), 16 * 100);
  const StateBytes fp64 = state_bytes_for("fp64", "fp32");
  EXPECT_DOUBLE_EQ(zero_model_states(100, 1, 0, fp64).total(), 32 * 100);
  // bf16: 2 + 2 + 12, and the ZeRO-2 shard is kept in fp32.
  const StateBytes bf16 = state_bytes_for("bf16", "fp32");
  EXPECT_DOUBLE_EQ(zero_model_states(100, 1, 0, bf16).total(), 16 * 100);
  EXPECT_DOUBLE_EQ(zero_model_states(100, 4, 2, bf16).gradients, 4 * 100 / 4.0);
  EXPECT_THROW(state_bytes_for("fp8", "fp32"), std::invalid_argument);
}

TEST(Parameters, tiny_config_matches_the_trainer) {
  // configs/tiny.toml: 4 layers, hidden 64, vocab 256, seq 32; `trident train` reports
  // 218496 parameters and 873984 / 873984 / 1747968 model-state bytes per rank at dp 2,
  // ZeRO 0, fp32.
  PlanModel m;
  m.layers = 4, m.hidden = 64, m.heads = 4, m.vocab = 256, m.seq_len = 32, m.global_batch = 8;
  EXPECT_EQ(total_parameters(m), 218496);
  const MemoryBreakdown mem = stage_memory(m, Layout{2, 1, 1, 0, 4, false}, 0);
  EXPECT_DOUBLE_EQ(mem.parameters, 873984);
  EXPECT_DOUBLE_EQ(mem.gradients, 873984);
  EXPECT_DOUBLE_EQ(mem.optimizer_states, 1747968);
  // pp 2: the last stage holds 2 layers, the final norm and the tied embedding's copy.
  const int64_t layer = 12 * 64 * 64 + 13 * 64;
  EXPECT_EQ(stage_parameters(m, 2, 1, 0), 2 * layer + 256 * 64 + 32 * 64);
  EXPECT_EQ(stage_parameters(m, 2, 1, 1), 2 * layer + 2 * 64 + 256 * 64);
  // tp 2: sharded weights halve, norms and row-parallel biases stay whole.
  EXPECT_EQ(stage_parameters(m, 1, 2, 0),
            4 * ((12 * 64 * 64 + 7 * 64) / 2 + 6 * 64) + 128 * 64 + 32 * 64 + 2 * 64);
}

// One layer, s = 1024, b = 2, h = 1024, a = 16, worked by hand:
//   s b h = 1024 * 2 * 1024 = 2,097,152
//   no tp:     34 + 5 a s / h = 34 + 5*16*1024/1024 = 34 + 80 = 114
//              2,097,152 * 114 = 239,075,328 bytes (16-bit); fp32 doubles it: 478,150,656
//   tp = 4:    10 + 24/4 + 5 a s / (h t) = 10 + 6 + 80/4 = 36
//              2,097,152 * 36 = 75,497,472 bytes
//   recompute: 2 s b h = 4,194,304 bytes (16-bit), 8,388,608 (fp32), whatever tp is
TEST(Activations, one_layer_by_hand) {
  const ActivationShape x{1024, 2, 1024, 16};
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, 1, false, 2), 239075328.0);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, 1, false, 4), 478150656.0);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, 4, false, 2), 75497472.0);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, 1, true, 2), 4194304.0);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, 4, true, 2), 4194304.0);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, 1, true, 4), 8388608.0);
}

// The same layer by Korthikanti's table 2 (16-bit bytes, s b h = 2,097,152, a s / h = 16):
//   tp 4 + sequence parallel: (34 + 5*16) / 4 = 28.5      -> 59,768,832
//   tp 4 selective:           10 + 24/4 = 16              -> 33,554,432
//   tp 4 + sp, selective:     34 / 4 = 8.5                -> 17,825,792
//   tp 4 + sp, full:          2 / 4 = 0.5                 ->  1,048,576
//   no dropout, tp 4 + sp:    (32 + 2*16) / 4 = 16        -> 33,554,432
TEST(Activations, sequence_parallel_and_selective_by_hand) {
  const ActivationShape x{1024, 2, 1024, 16};
  auto bytes = [&](bool sp, Recompute r, bool dropout = true) {
    ActivationOptions o;
    o.tp = 4;
    o.sequence_parallel = sp;
    o.recompute = r;
    o.dropout = dropout;
    return layer_activation_bytes(x, o, 2);
  };
  EXPECT_DOUBLE_EQ(bytes(false, Recompute::kNone), layer_activation_bytes(x, 4, false, 2));
  EXPECT_DOUBLE_EQ(bytes(false, Recompute::kFull), layer_activation_bytes(x, 4, true, 2));
  EXPECT_DOUBLE_EQ(bytes(true, Recompute::kNone), 59768832.0);
  EXPECT_DOUBLE_EQ(bytes(false, Recompute::kSelective), 33554432.0);
  EXPECT_DOUBLE_EQ(bytes(true, Recompute::kSelective), 17825792.0);
  EXPECT_DOUBLE_EQ(bytes(true, Recompute::kFull), 1048576.0);
  EXPECT_DOUBLE_EQ(bytes(true, Recompute::kNone, /*dropout=*/false), 33554432.0);
}

TEST(Activations, in_flight_micro_batches) {
  EXPECT_EQ(in_flight_micro_batches("1f1b", 4, 0, 8), 4);  // first stage: pp
  EXPECT_EQ(in_flight_micro_batches("1f1b", 4, 3, 8), 1);  // last stage: one
  EXPECT_EQ(in_flight_micro_batches("1f1b", 4, 0, 2), 2);  // never more than m
  EXPECT_EQ(in_flight_micro_batches("gpipe", 4, 3, 8), 8);
  // As the schedule checker measures them at pp 4, m 8: ZB-H1's deferred weight halves
  // keep every stage at pp; interleaved 1F1B (v 2) counts chunk-micro-batches.
  EXPECT_EQ(in_flight_micro_batches("zb-h1", 4, 3, 8), 4);
  EXPECT_EQ(in_flight_micro_batches("zb-h1", 4, 0, 2), 2);
  EXPECT_EQ(in_flight_micro_batches("interleaved-1f1b", 4, 0, 8, 2), 11);
  EXPECT_EQ(in_flight_micro_batches("interleaved-1f1b", 4, 3, 8, 2), 5);
  EXPECT_EQ(in_flight_micro_batches("interleaved-1f1b", 4, 1, 4, 2), 8);  // m == pp: all
}

TEST(Activations, first_stage_of_pp2_holds_two_micro_batches) {
  // 4 layers on 2 stages, m = 4 micro-batches of 1 sequence, 1F1B, fp32.
  PlanModel m;
  m.layers = 4, m.hidden = 64, m.heads = 4, m.vocab = 256, m.seq_len = 32, m.global_batch = 4;
  const ActivationShape x{32, 1, 64, 4};
  const double layer = layer_activation_bytes(x, 1, false, 4);
  // s b h (34 + 5 a s / h) * 2 = 2048 * (34 + 10) * 2 = 180,224 bytes per layer.
  EXPECT_DOUBLE_EQ(layer, 180224.0);
  const MemoryBreakdown first = stage_memory(m, Layout{1, 2, 1, 0, 1, false}, 0);
  EXPECT_DOUBLE_EQ(first.activations, 2 * 2 * layer);  // 2 in flight x 2 layers
  // Checkpointing keeps, per micro-batch in flight, each layer's input (s b h) and the
  // token ids (input and targets, int64), and rebuilds one layer at a time.
  const MemoryBreakdown ckpt = stage_memory(m, Layout{1, 2, 1, 0, 1, true}, 0);
  EXPECT_DOUBLE_EQ(ckpt.activations, 2 * (2 * 32 * 64 * 4.0 + 2 * 32 * 8.0) + layer);
  // ... but under ZB-H1, whose two backward halves share one graph, the stage keeps its
  // token ids alone and rebuilds a micro-batch's whole stage.
  PlanModel zb = m;
  zb.schedule = "zb-h1";
  const MemoryBreakdown zb_ckpt = stage_memory(zb, Layout{1, 2, 1, 0, 1, true}, 0);
  EXPECT_DOUBLE_EQ(zb_ckpt.activations, 2 * (2 * 32 * 8.0) + 2 * layer);
  // The last stage: one micro-batch, its layers plus norm outputs and logits with softmax.
  const MemoryBreakdown last = stage_memory(m, Layout{1, 2, 1, 0, 1, false}, 1);
  EXPECT_DOUBLE_EQ(last.activations, 2 * layer + (2 * 32 * 64 + 2 * 32 * 256) * 4.0);
}

TEST(Activations, stage_with_tp2_sequence_parallel_and_selective) {
  // The model above at tp 2 on 2 stages: s b h = 2048, a s / h = 2 (16-bit constants, fp32).
  PlanModel m;
  m.layers = 4, m.hidden = 64, m.heads = 4, m.vocab = 256, m.seq_len = 32, m.global_batch = 4;
  Layout l{1, 2, 2, 0, 1, false};
  const double plain = stage_memory(m, l, 0).activations;
  // tp only: 2048 * (10 + 24/2 + 5*2/2) * 2 = 110,592 per layer, 2 layers, 2 in flight.
  EXPECT_DOUBLE_EQ(plain, 2 * 2 * 110592.0);
  l.sequence_parallel = true;
  // sp: 2048 * (34 + 10) / 2 * 2 = 90,112 per layer.
  EXPECT_DOUBLE_EQ(stage_memory(m, l, 0).activations, 2 * 2 * 90112.0);
  l.selective = true;
  // sp and selective: 2048 * 34 / 2 * 2 = 69,632 per layer.
  EXPECT_DOUBLE_EQ(stage_memory(m, l, 0).activations, 2 * 2 * 69632.0);
  // The pipeline receives this rank's slice of the sequence: (B, T/2, C) twice.
  EXPECT_DOUBLE_EQ(stage_memory(m, l, 0).communication, 2 * (32 * 64 / 2) * 4.0);
}

TEST(CommunicationBuffers, zero2_buckets_and_pipeline_receives) {
  // The default model (h 64, 2 layers) bucketed from its last parameter at 1000 elements:
  // ln_f and mlp.proj close the first bucket (64 + 64 + 64 + 16384), then the fc bias and
  // weight (256 + 16384 = 16640, the largest of several parameters), attention's
  // projection and norms (4288), qkv (12480), ... Two buffers of the largest and its shard.
  PlanModel m;
  m.bucket_size = 1000;
  const MemoryBreakdown z2 = stage_memory(m, Layout{4, 1, 1, 2, 2, false}, 0);
  EXPECT_DOUBLE_EQ(z2.communication, 2 * (16640 + 16640 / 4) * 4.0);
  // One bucket for the whole sharded buffer (everything but the tied embedding), padded
  // to a multiple of dp 4; none at dp 1, where nothing is reduced.
  m.bucket_size = 1 << 30;
  const double rest = static_cast<double>(total_parameters(m) - 256 * 64);
  const double padded = std::ceil(rest / 4) * 4;
  EXPECT_DOUBLE_EQ(stage_memory(m, Layout{4, 1, 1, 2, 2, false}, 0).communication,
                   2 * (padded + padded / 4) * 4.0);
  EXPECT_DOUBLE_EQ(stage_memory(m, Layout{1, 1, 1, 2, 2, false}, 0).communication, 0.0);
  const MemoryBreakdown pp = stage_memory(m, Layout{1, 2, 1, 0, 2, false}, 0);
  EXPECT_DOUBLE_EQ(pp.communication, 2 * (32 * 2 * 64) * 4.0);
}

// Stage 3 of the default PlanModel (h 64, 2 layers, vocab 256, seq 32, fp32) on dp 4:
// with persist_below 100 the norms and the 64-element biases stay whole, the 192- and
// 256-element biases and every matrix are sharded; the largest layer is the embeddings
// (256 x 64 + 32 x 64 = 18432 elements) against a block's 49152 + 192 + 256 = 49600.
TEST(Stage3, persistent_parameters_and_gather_buffers) {
  PlanModel m;
  m.zero3_persist_below = 100;
  const Layout l{4, 1, 1, 3, 2, false};
  const Stage3Split split = stage3_split(m, l, 0);
  EXPECT_EQ(split.persistent, 2 * (6 * 64) + 2 * 64);  // per block 4 norms + 2 biases; ln_f
  EXPECT_EQ(split.largest_layer, 12 * 64 * 64 + 3 * 64 + 4 * 64);
  const int64_t psi = stage_parameters(m, 1, 1, 0);
  const MemoryBreakdown z3 = stage_memory(m, l, 0);
  const double sharded = static_cast<double>(psi - split.persistent);
  EXPECT_DOUBLE_EQ(z3.parameters, 4.0 * (sharded / 4 + static_cast<double>(split.persistent)));
  EXPECT_DOUBLE_EQ(z3.gradients, 4.0 * static_cast<double>(psi) / 4);
  EXPECT_DOUBLE_EQ(z3.gather_buffers, 4.0 * 2 * static_cast<double>(split.largest_layer));
  EXPECT_LT(z3.gather_buffers, 4.0 * sharded);  // two layers are less than the model
  // Kept gathered through the step: the whole stage's sharded parameters.
  m.zero3_reshard_after_forward = false;
  EXPECT_DOUBLE_EQ(stage_memory(m, l, 0).gather_buffers, 4.0 * sharded);
}

}  // namespace
}  // namespace trident::plan
