// Activation memory of one GPT block per micro-batch, measured by the counting allocator,
// against Korthikanti et al. 2022's formula (plan/memory_model.h) without its dropout
// terms (trident's model has none): no recomputation, selective recomputation of
// attention's core, and full recomputation, each with tp alone and with sequence
// parallelism. The only bytes the formula leaves out are each layer norm's mean and
// reciprocal deviation (2 s b / t elements each); the causal mask is added by the scores'
// product itself and kept by nothing. The same
// for a Llama block against the planner's Llama formula. And the pipeline's traffic, which sequence
// parallelism divides by tp.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/memory_tracker.h"
#include "kept_bytes.h"  // testing::kept_bytes
#include "models/gpt.h"
#include "models/llama.h"
#include "mpi_cases.h"  // register_mpi_cases
#include "parallel/parallel_context.h"
#include "pipeline/runtime.h"
#include "pipeline/schedule.h"
#include "plan/memory_model.h"
#include "tensor_parallel/parameter.h"

namespace trident {
namespace {

const bool kRegistered = testing::register_mpi_cases(
    {{"activation_memory_tp2", 2, "ActivationMemory.*"},
     {"sequence_parallel_pp_traffic_pp2_tp2", 4, "SequenceParallelTraffic.*"}});

constexpr int64_t kBatch = 2, kSeq = 32, kHidden = 64, kHeads = 4;

/// testing::kept_bytes of `block` over (kBatch, rows, kHidden), recomputed as `recompute`.
template <class Block>
int64_t kept_bytes(Block& block, int64_t rows, plan::Recompute recompute) {
  return testing::kept_bytes(block, kBatch, rows, kHidden, recompute != plan::Recompute::kFull);
}

/// A layout a block is measured in.
struct Case {
  const char* name;
  ParallelContext* ctx;
  bool sp;
  plan::Recompute recompute;
};

/// tp 1 and tp 2, tp 2 also with sequence parallelism, each with no, selective and full
/// recomputation.
std::vector<Case> layout_cases(ParallelContext& solo, ParallelContext& tp2) {
  using plan::Recompute;
  return {
      {"tp1 none", &solo, false, Recompute::kNone},
      {"tp1 selective", &solo, false, Recompute::kSelective},
      {"tp1 full", &solo, false, Recompute::kFull},
      {"tp2 none", &tp2, false, Recompute::kNone},
      {"tp2 selective", &tp2, false, Recompute::kSelective},
      {"tp2 full", &tp2, false, Recompute::kFull},
      {"tp2 sp none", &tp2, true, Recompute::kNone},
      {"tp2 sp selective", &tp2, true, Recompute::kSelective},
      {"tp2 sp full", &tp2, true, Recompute::kFull},
  };
}

/// The planner's bytes for `shape` in the case's layout, in fp32 (trident has no dropout).
double formula_bytes(const plan::ActivationShape& shape, const Case& c) {
  plan::ActivationOptions options;
  options.tp = c.ctx->grid().tp();
  options.sequence_parallel = c.sp;
  options.recompute = c.recompute;
  options.dropout = false;
  return plan::layer_activation_bytes(shape, options, 4.0);
}

/// One process alone and the whole world (2 ranks) as one tp group, the tracker installed.
class ActivationMemory : public ::testing::Test {
 protected:
  ActivationMemory() { install_memory_tracker(); }
  static int world_size() {
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    return world;
  }
  int rank = [] {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }();
  ParallelContext solo{MPI_COMM_SELF, 1, 1, 1, 60.0};
  ParallelContext tp2{MPI_COMM_WORLD, 1, 1, world_size(), 60.0};
};

/// A GPT block's options: hidden kHidden, kHeads heads, fp32, sequences of `seq`.
GptOptions gpt_options(int64_t seq, bool sequence_parallel, plan::Recompute recompute) {
  GptOptions o;
  o.layers = 2;
  o.hidden = kHidden;
  o.heads = kHeads;
  o.vocab = 64;
  o.padded_vocab = 64;
  o.seq_len = seq;
  o.dtype = at::kFloat;
  o.sequence_parallel = sequence_parallel;
  o.recompute_attention = recompute == plan::Recompute::kSelective;
  return o;
}

/// kept_bytes of a GPT block.
int64_t block_bytes(Communicator& tp, bool sequence_parallel, plan::Recompute recompute) {
  const GptOptions o = gpt_options(kSeq, sequence_parallel, recompute);
  ParamRegistry params(5, tp.rank(), tp.size(), o.dtype);
  GptBlock block(params, tp, o, 0);
  return kept_bytes(block, sequence_parallel ? kSeq / tp.size() : kSeq, recompute);
}

TEST_F(ActivationMemory, gpt_block_matches_korthikanti_without_dropout) {
  const plan::ActivationShape shape{kSeq, kBatch, kHidden, kHeads};
  using plan::Recompute;
  for (const Case& c : layout_cases(solo, tp2)) {
    const int t = c.ctx->grid().tp();
    const double formula = formula_bytes(shape, c);
    const double measured = static_cast<double>(block_bytes(c.ctx->tp(), c.sp, c.recompute));
    // What the formula leaves out: two layer norms' statistics (mean, 1/std: 2 s b / t
    // elements each, over the rows this rank normalises).
    const double norm_rows = static_cast<double>(c.sp ? kSeq / t : kSeq) * kBatch;
    const double extra = c.recompute == Recompute::kFull ? 0.0 : 2.0 * 2.0 * norm_rows * 4.0;
    if (rank == 0)
      std::printf("%-17s measured %8.0f bytes, formula %8.0f + norms %5.0f: ratio %.4f\n", c.name,
                  measured, formula, extra, measured / formula);
    EXPECT_DOUBLE_EQ(measured, formula + extra) << c.name;
  }
}

/// A Llama block's shape: SwiGLU widths apart from 4 h, grouped-query and multi-query.
struct LlamaShape {
  int64_t seq, heads, kv_heads, ffn;
};

/// A Llama block's options: hidden kHidden, fp32, the rest from `shape`.
LlamaOptions llama_options(const LlamaShape& shape, bool sequence_parallel,
                           plan::Recompute recompute) {
  LlamaOptions o;
  o.layers = 2;
  o.hidden = kHidden;
  o.heads = shape.heads;
  o.kv_heads = shape.kv_heads;
  o.ffn_hidden = shape.ffn;
  o.vocab = 64;
  o.padded_vocab = 64;
  o.seq_len = shape.seq;
  o.dtype = at::kFloat;
  o.sequence_parallel = sequence_parallel;
  o.recompute_attention = recompute == plan::Recompute::kSelective;
  return o;
}

/// kept_bytes of a Llama block (RMSNorm, RoPE, grouped-query attention, SwiGLU).
int64_t llama_block_bytes(Communicator& tp, const LlamaShape& shape, bool sequence_parallel,
                          plan::Recompute recompute) {
  const LlamaOptions o = llama_options(shape, sequence_parallel, recompute);
  const RopeTables rope = rope_tables(shape.seq, o.head_dim(), o.rope_theta, o.dtype);
  ParamRegistry params(5, tp.rank(), tp.size(), o.dtype);
  LlamaBlock block(params, tp, nullptr, o, 0, rope);
  return kept_bytes(block, sequence_parallel ? shape.seq / tp.size() : shape.seq, recompute);
}

// The Llama block against the planner's Llama formula, which counts what SwiGLU keeps (the
// gate's output and its silu, the up projection, their product: 4 f / t elements a token
// where the GPT's MLP keeps 8 h / t) and what RMSNorm keeps (the square of its input, its
// normalised input, its output: 3 h a token, twice). Its keys and values are kept after
// their repetition to the query heads, so grouped-query attention keeps as much as full
// attention. Left out: the norms' statistics (one reciprocal root mean square a row,
// 2 s b / t elements) and the repetition's two indices (one
// int64 a local query head each). Two shapes: the formula's terms were read off the first
// at tp 1; the second (multi-query, 8 heads, f = 2.5 h, s = 48) was not looked at.
TEST_F(ActivationMemory, llama_block_matches_the_swiglu_formula) {
  using plan::Recompute;
  for (const LlamaShape& ls : {LlamaShape{32, 4, 2, 96}, LlamaShape{48, 8, 1, 160}}) {
    const plan::ActivationShape shape{ls.seq, kBatch, kHidden, ls.heads, /*llama=*/true, ls.ffn};
    for (const Case& c : layout_cases(solo, tp2)) {
      const int t = c.ctx->grid().tp();
      const double formula = formula_bytes(shape, c);
      const double measured =
          static_cast<double>(llama_block_bytes(c.ctx->tp(), ls, c.sp, c.recompute));
      const double norm_rows = static_cast<double>(c.sp ? ls.seq / t : ls.seq) * kBatch;
      const double extra =
          c.recompute == Recompute::kFull
              ? 0.0
              : 2.0 * norm_rows * 4.0 + 2.0 * static_cast<double>(ls.heads / t) * 8.0;
      if (rank == 0)
        std::printf(
            "llama s%lld a%lld kv%lld f%lld %-17s measured %8.0f bytes, formula %8.0f + "
            "norms %5.0f: ratio %.4f\n",
            static_cast<long long>(ls.seq), static_cast<long long>(ls.heads),
            static_cast<long long>(ls.kv_heads), static_cast<long long>(ls.ffn), c.name, measured,
            formula, extra, measured / formula);
      EXPECT_DOUBLE_EQ(measured, formula + extra) << c.name << ", heads " << ls.heads;
    }
  }
}

/// An MoE layer's shape: experts, top k, an expert's width, a shared expert.
struct MoeShape {
  int64_t experts, top_k, ffn;
  bool shared;
};

/// kept_bytes of a Llama block whose MLP is an MoE layer (ep 1), dropless.
int64_t moe_block_bytes(Communicator& tp, const MoeShape& shape, bool sequence_parallel,
                        plan::Recompute recompute) {
  LlamaOptions o = llama_options(LlamaShape{kSeq, kHeads, 2, 96}, sequence_parallel, recompute);
  o.moe.experts = shape.experts;
  o.moe.top_k = shape.top_k;
  o.moe.ffn_hidden = shape.ffn;
  o.moe.shared_expert = shape.shared;
  const RopeTables rope = rope_tables(kSeq, o.head_dim(), o.rope_theta, o.dtype);
  ParamRegistry params(5, tp.rank(), tp.size(), o.dtype);
  LlamaBlock block(params, tp, nullptr, o, 0, rope);
  at::manual_seed(11);  // the same input on every tp rank: they must route alike
  return kept_bytes(block, sequence_parallel ? kSeq / tp.size() : kSeq, recompute);
}

// The MoE block against the planner's MoE formula (plan::moe_layer_activation_bytes), which
// takes the dense formula's SwiGLU out and counts what the router, the dispatch, the experts
// and the combine keep. Dropless routing sends exactly k rows a token whatever the router
// chooses, so the bytes do not depend on the weights. Left out, as for the dense Llama
// block: the norms' statistics and the key repetition's indices; and the
// layer's load statistics for the metrics (E floats). The
// formula's terms were read off the first shape at tp 1; the second (8 experts, top 1,
// f_e = 80, a shared expert) and the tp 2 rows were not looked at; the sequence-parallel
// rows' gathered-sequence term was read off the first shape, the second matched it.
TEST_F(ActivationMemory, moe_block_matches_the_moe_formula) {
  using plan::Recompute;
  for (const MoeShape& ms : {MoeShape{4, 2, 48, false}, MoeShape{8, 1, 80, true}}) {
    plan::ActivationShape shape{kSeq, kBatch, kHidden, kHeads, /*llama=*/true, 96};
    shape.experts = ms.experts;
    shape.top_k = ms.top_k;
    shape.expert_ffn = ms.ffn;
    shape.shared_expert = ms.shared;
    for (const Case& c : layout_cases(solo, tp2)) {
      const int t = c.ctx->grid().tp();
      plan::ActivationOptions options;
      options.tp = t;
      options.sequence_parallel = c.sp;
      options.recompute = c.recompute;
      options.dropout = false;
      const double formula = plan::moe_layer_activation_bytes(shape, options, 4.0);
      const double measured =
          static_cast<double>(moe_block_bytes(c.ctx->tp(), ms, c.sp, c.recompute));
      const double norm_rows = static_cast<double>(c.sp ? kSeq / t : kSeq) * kBatch;
      const double extra = c.recompute == Recompute::kFull
                               ? 0.0
                               : 2.0 * norm_rows * 4.0 +
                                     2.0 * static_cast<double>(kHeads / t) * 8.0 +
                                     static_cast<double>(ms.experts) * 4.0;
      if (rank == 0)
        std::printf(
            "moe E%lld k%lld f%lld%s %-17s measured %8.0f bytes, formula %8.0f + "
            "norms %5.0f: ratio %.4f\n",
            static_cast<long long>(ms.experts), static_cast<long long>(ms.top_k),
            static_cast<long long>(ms.ffn), ms.shared ? " shared" : "", c.name, measured, formula,
            extra, measured / (formula + extra));
      EXPECT_DOUBLE_EQ(measured, formula + extra) << c.name << ", experts " << ms.experts;
    }
  }
}

struct PipelineStep {
  int64_t sent_bytes = 0;  // what this rank sent to its neighbouring stage
  double loss = 0;         // the last stage's summed micro-batch losses
};

/// One 1F1B step of a pp 2 x tp 2 GPT (fp64, 4 micro-batches of 2), sequence parallel or not.
PipelineStep pipeline_step(ParallelContext& ctx, bool sequence_parallel) {
  GptOptions o;
  o.layers = 2;
  o.hidden = 32;
  o.heads = 4;
  o.vocab = 64;
  o.padded_vocab = 64;
  o.seq_len = 16;
  o.dtype = at::kDouble;
  o.sequence_parallel = sequence_parallel;
  GptStage stage(o, ctx.tp(), ctx.coord().pp, 2);
  PipelineRuntime runtime(stage, ctx, RuntimeOptions{false, 2, at::kDouble});
  const int m = 4;
  auto batch = [&](int k) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(200 + k);
    at::Tensor ids = at::randint(64, {2, 17}, gen, at::kLong);
    return MicroBatch{ids.narrow(1, 0, 16).contiguous(), ids.narrow(1, 1, 16).contiguous()};
  };
  StepHooks hooks;
  ctx.pp().reset_counters();
  const StepResult r = runtime.run(pipeline::make_schedule("1f1b", 2, ctx.coord().pp, m), batch,
                                   1.0 / (2 * 16 * m), hooks);
  return {ctx.pp().counter(CommKind::kSend).bytes, r.loss};
}

/// block_memory of a GPT or Llama block of hidden kHidden, heads kHeads (Llama: 2 kv heads,
/// SwiGLU 96) over (kBatch, seq, kHidden).
testing::BlockMemory long_block_memory(Communicator& tp, bool llama, int64_t seq,
                                       plan::Recompute recompute) {
  if (llama) {
    const LlamaOptions o = llama_options(LlamaShape{seq, kHeads, 2, 96}, false, recompute);
    const RopeTables rope = rope_tables(seq, o.head_dim(), o.rope_theta, o.dtype);
    ParamRegistry params(5, tp.rank(), tp.size(), o.dtype);
    LlamaBlock block(params, tp, nullptr, o, 0, rope);
    return testing::block_memory(block, kBatch, seq, kHidden);
  }
  const GptOptions o = gpt_options(seq, false, recompute);
  ParamRegistry params(5, tp.rank(), tp.size(), o.dtype);
  GptBlock block(params, tp, o, 0);
  return testing::block_memory(block, kBatch, seq, kHidden);
}

// At long sequences a block's peak is its kept bytes and attention's score tensors in
// flight (plan::attention_scores_in_flight: two of b a / t s^2 elements, three when the
// probabilities are rebuilt by selective recomputation), which the planner adds to a
// device's peak. Measured as the most bytes allocated during the block's forward and
// backward beyond what its forward keeps, at s = 256 and 512 (a score tensor is 32 and 64
// token rows of s b h elements), tp 1 and 2, GPT and Llama: the formula's s^2 term is what
// the two lengths measure (within 3%), and it exceeds the measured bytes by less than 10
// token rows, what the layer's MLP and norms keep and free before attention's backward.
TEST_F(ActivationMemory, attention_scores_in_flight_are_the_peak_beyond_the_kept_bytes) {
  using plan::Recompute;
  for (const bool llama : {false, true})
    for (ParallelContext* ctx : {&solo, &tp2})
      for (const Recompute recompute : {Recompute::kNone, Recompute::kSelective}) {
        const int t = ctx->grid().tp();
        double formula[2] = {0, 0}, in_flight[2] = {0, 0}, row[2] = {0, 0};
        for (const int i : {0, 1}) {
          const int64_t seq = 256 << i;
          plan::PlanModel m;
          m.seq_len = seq;
          m.heads = kHeads;
          m.hidden = kHidden;
          m.precision = "fp32";
          plan::Layout l;
          l.tp = t;
          l.micro_batch = kBatch;
          l.selective = recompute == Recompute::kSelective;
          formula[i] = plan::attention_scores_in_flight(m, l);
          const testing::BlockMemory measured = long_block_memory(ctx->tp(), llama, seq, recompute);
          in_flight[i] = static_cast<double>(measured.peak - measured.kept);
          row[i] = static_cast<double>(kBatch * seq * kHidden) * 4.0;
          const std::string name = std::string(llama ? "llama" : "gpt") + " s" +
                                   std::to_string(seq) + " tp" + std::to_string(t) +
                                   (l.selective ? " selective" : " none");
          if (rank == 0)
            std::printf("%-22s in flight %9.0f bytes, formula %9.0f: %+.2f token rows\n",
                        name.c_str(), in_flight[i], formula[i],
                        (in_flight[i] - formula[i]) / row[i]);
          EXPECT_LE(in_flight[i], formula[i]) << name;
          EXPECT_LT(formula[i] - in_flight[i], 10 * row[i]) << name;
        }
        // in flight = alpha formula + beta rows at both lengths; rows double, formula x4.
        const double alpha = (in_flight[1] - 2 * in_flight[0]) / (formula[1] - 2 * formula[0]);
        EXPECT_NEAR(alpha, 1.0, 0.03) << (llama ? "llama" : "gpt") << " tp" << t;
      }
}

TEST(SequenceParallelTraffic, pipeline_sends_sequence_slices) {
  ParallelContext ctx(MPI_COMM_WORLD, 1, 2, 2, 60.0);
  const PipelineStep plain = pipeline_step(ctx, false);
  const PipelineStep sp = pipeline_step(ctx, true);
  // 4 micro-batches of (2, 16, 32) float64 activations forward (stage 0) or gradients
  // backward (stage 1); with sequence parallelism each tp rank sends its (2, 8, 32) slice.
  const int64_t whole = 4 * 2 * 16 * 32 * 8;
  EXPECT_EQ(plain.sent_bytes, whole);
  EXPECT_EQ(sp.sent_bytes, whole / 2);
  // The same model either way.
  if (ctx.coord().pp == 1) {
    EXPECT_GT(plain.loss, 0.0);
    EXPECT_NEAR(sp.loss, plain.loss, 1e-12 * plain.loss);
  }
}

}  // namespace
}  // namespace trident
