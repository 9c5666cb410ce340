// The planner's list of the parameters ZeRO buckets (plan::stage_bucketed_numels) against
// the models trident builds, stage by stage at tp 2: the same element counts in the same
// order, so that ZeRO-2's bucket buffers are predicted from the optimizer's own layout.
#include <ATen/ATen.h>    // at::kFloat
#include <gtest/gtest.h>  // TEST, EXPECT_*
#include <mpi.h>          // MPI_COMM_WORLD

#include <memory>  // std::unique_ptr
#include <vector>  // std::vector

#include "models/gpt.h"                 // GptStage, GptOptions
#include "models/llama.h"               // LlamaStage, LlamaOptions
#include "mpi_cases.h"                  // register_mpi_cases
#include "mpi_test_util.h"              // tiny_gpt
#include "parallel/parallel_context.h"  // ParallelContext
#include "plan/plan_model.h"            // stage_bucketed_numels, stage_parameters
#include "zero/buffer_assignment.h"     // buffer_of, kEmbeddingBuffer

namespace trident {
namespace {

const bool kRegistered =
    testing::register_mpi_cases({{"plan_bucketed_parameters_tp2", 2, "PlanBuckets.*"}});

/// The planner's view of a Llama's options.
plan::PlanModel plan_of(const LlamaOptions& o) {
  plan::PlanModel m;
  m.llama = true;
  m.layers = o.layers;
  m.hidden = o.hidden;
  m.heads = o.heads;
  m.kv_heads = o.kv_heads;
  m.ffn_hidden = o.ffn_hidden;
  m.vocab = o.vocab;
  m.seq_len = o.seq_len;
  m.tied = o.tie_embeddings;
  m.moe_experts = o.moe.experts;
  m.moe_top_k = o.moe.top_k;
  m.moe_ffn_hidden = o.moe.ffn_hidden;
  m.moe_layer_every = o.moe_every;
  m.moe_shared_expert = o.moe.shared_expert;
  return m;
}

constexpr int kTp = 2;

/// The element counts of the stage's parameters outside the embedding's own buffer and
/// the routed experts' buffer.
std::vector<int64_t> bucketed(const std::vector<Parameter>& params) {
  std::vector<int64_t> out;
  for (const Parameter& p : params) {
    const size_t buffer = buffer_of(p.spec, p.tensor.numel(), 2, 0);
    if (buffer != kEmbeddingBuffer && !is_expert_buffer(buffer)) out.push_back(p.tensor.numel());
  }
  return out;
}

/// The element counts of the routed experts' buffer.
std::vector<int64_t> experts(const std::vector<Parameter>& params) {
  std::vector<int64_t> out;
  for (const Parameter& p : params)
    if (is_expert_buffer(buffer_of(p.spec, p.tensor.numel(), 2, 0)))
      out.push_back(p.tensor.numel());
  return out;
}

int64_t total(const std::vector<Parameter>& params) {
  int64_t n = 0;
  for (const Parameter& p : params) n += p.tensor.numel();
  return n;
}

TEST(PlanBuckets, GptStagesMatchTheModel) {
  ParallelContext ctx(MPI_COMM_WORLD, 1, 1, kTp, 120.0);
  GptOptions o = testing::tiny_gpt(at::kFloat);
  o.layers = 4;  // pp 4 takes one layer a stage
  plan::PlanModel m;
  m.layers = o.layers;
  m.hidden = o.hidden;
  m.heads = o.heads;
  m.vocab = o.vocab;
  m.seq_len = o.seq_len;
  for (int pp : {1, 2, 4}) {
    for (int s = 0; s < pp; ++s) {
      GptStage stage(o, ctx.tp(), s, pp);
      EXPECT_EQ(plan::stage_bucketed_numels(m, pp, kTp, s), bucketed(stage.params().params()))
          << "pp " << pp << " stage " << s;
      EXPECT_EQ(plan::stage_parameters(m, pp, kTp, s), total(stage.params().params()))
          << "pp " << pp << " stage " << s;
    }
  }
}

TEST(PlanBuckets, LlamaStagesMatchTheModel) {
  ParallelContext ctx(MPI_COMM_WORLD, 1, 1, kTp, 120.0);
  for (const bool tied : {false, true}) {
    for (const int64_t kv : {1, 2, 4}) {  // kv 1 < tp: k and v replicated over tp
      LlamaOptions o;
      o.layers = 2;
      o.hidden = 32;
      o.heads = 4;
      o.kv_heads = kv;
      o.ffn_hidden = 48;
      o.vocab = o.padded_vocab = 50;
      o.seq_len = 16;
      o.tie_embeddings = tied;
      plan::PlanModel m;
      m.llama = true;
      m.layers = o.layers;
      m.hidden = o.hidden;
      m.heads = o.heads;
      m.kv_heads = kv;
      m.ffn_hidden = o.ffn_hidden;
      m.vocab = o.vocab;
      m.seq_len = o.seq_len;
      m.tied = tied;
      for (int pp : {1, 2}) {
        for (int s = 0; s < pp; ++s) {
          LlamaStage stage(o, ctx.tp(), s, pp);
          EXPECT_EQ(plan::stage_bucketed_numels(m, pp, kTp, s), bucketed(stage.params().params()))
              << "tied " << tied << " kv " << kv << " pp " << pp << " stage " << s;
          EXPECT_EQ(plan::stage_parameters(m, pp, kTp, s), total(stage.params().params()))
              << "tied " << tied << " kv " << kv << " pp " << pp << " stage " << s;
        }
      }
    }
  }
}

// MoE layers (every second one, a shared expert) at tp 2 and at ep 2 (dp 2): the router
// and the shared expert in the dp buffer, the rank's own experts in theirs.
TEST(PlanBuckets, MoeStagesMatchTheModel) {
  LlamaOptions o;
  o.layers = 4;
  o.hidden = 32;
  o.heads = 4;
  o.kv_heads = 2;
  o.ffn_hidden = 48;
  o.vocab = o.padded_vocab = 50;
  o.seq_len = 16;
  o.moe.experts = 4;
  o.moe.top_k = 2;
  o.moe.ffn_hidden = 40;
  o.moe.shared_expert = true;
  o.moe_every = 2;
  const plan::PlanModel m = plan_of(o);
  ParallelContext tp2(MPI_COMM_WORLD, 1, 1, kTp, 120.0);
  ParallelContext ep2(MPI_COMM_WORLD, 2, 1, 1, 120.0, /*ep=*/2);
  struct Row {
    ParallelContext* ctx;
    int tp, ep;
  };
  for (const Row& r : {Row{&tp2, kTp, 1}, Row{&ep2, 1, 2}}) {
    for (int pp : {1, 2}) {
      for (int s = 0; s < pp; ++s) {
        LlamaStage stage(o, r.ctx->tp(), s, pp, r.ep > 1 ? &r.ctx->ep() : nullptr);
        const std::vector<Parameter>& params = stage.params().params();
        const std::string where = "tp " + std::to_string(r.tp) + " ep " + std::to_string(r.ep) +
                                  " pp " + std::to_string(pp) + " stage " + std::to_string(s);
        EXPECT_EQ(plan::stage_bucketed_numels(m, pp, r.tp, s), bucketed(params)) << where;
        EXPECT_EQ(plan::stage_expert_numels(m, pp, r.tp, r.ep, s), experts(params)) << where;
        EXPECT_EQ(plan::stage_parameters(m, pp, r.tp, s, r.ep), total(params)) << where;
        EXPECT_FALSE(experts(params).empty()) << where;
      }
    }
  }
}

}  // namespace
}  // namespace trident
