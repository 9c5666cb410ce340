// Context parallelism divides a layer's activations by cp: a GPT block's forward over its
// seq_len / cp tokens keeps 1 / cp of what one process keeps for the whole sequence, and
// ring attention keeps no score matrix at any cp. Measured by the counting allocator on 4
// ranks: one process alone, two cp groups of 2, one cp group of 4.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "common/memory_tracker.h"
#include "kept_bytes.h"  // testing::kept_bytes
#include "models/gpt.h"
#include "models/llama.h"
#include "mpi_cases.h"  // register_mpi_cases
#include "parallel/parallel_context.h"
#include "plan/memory_model.h"
#include "tensor_parallel/parameter.h"

namespace trident {
namespace {

const bool kRegistered =
    testing::register_mpi_cases({{"context_activation_memory_cp4", 4, "ContextMemory.*"}});

constexpr int64_t kBatch = 2, kSeq = 64, kHidden = 64, kHeads = 4;

/// kept_bytes of a GPT block over this rank's kSeq / cp tokens; `selective` recomputes
/// attention's core in backward.
int64_t block_bytes(ParallelContext& ctx, bool selective) {
  GptOptions o;
  o.layers = 2;
  o.hidden = kHidden;
  o.heads = kHeads;
  o.vocab = 64;
  o.padded_vocab = 64;
  o.seq_len = kSeq;
  o.dtype = at::kFloat;
  o.recompute_attention = selective;
  o.cp = &ctx.cp();
  ParamRegistry params(5, 0, 1, o.dtype);
  GptBlock block(params, ctx.tp(), o, 0);
  return testing::kept_bytes(block, kBatch, kSeq / ctx.grid().cp(), kHidden);
}

/// kept_bytes of a Llama block (8 heads over 2 kv heads, SwiGLU of 96) over this rank's
/// tokens.
int64_t llama_block_bytes(ParallelContext& ctx) {
  LlamaOptions o;
  o.layers = 2;
  o.hidden = kHidden;
  o.heads = 8;
  o.kv_heads = 2;
  o.ffn_hidden = 96;
  o.vocab = 64;
  o.padded_vocab = 64;
  o.seq_len = kSeq;
  o.dtype = at::kFloat;
  o.cp = &ctx.cp();
  const RopeTables rope = rope_tables(kSeq, o.head_dim(), o.rope_theta, o.dtype);
  ParamRegistry params(5, 0, 1, o.dtype);
  LlamaBlock block(params, ctx.tp(), nullptr, o, 0, rope);
  return testing::kept_bytes(block, kBatch, kSeq / ctx.grid().cp(), kHidden);
}

/// The planner's bytes for a layer of this rank's tokens with ring attention, in fp32.
double ring_formula(int cp, bool llama) {
  plan::ActivationShape shape{kSeq / cp, kBatch,         kHidden,      llama ? 8 : kHeads,
                              llama,     llama ? 96 : 0, llama ? 2 : 0};
  plan::ActivationOptions options;
  options.dropout = false;
  options.ring = true;
  return plan::layer_activation_bytes(shape, options, 4.0);
}

TEST(ContextMemory, gpt_block_keeps_one_cpth_of_the_activations) {
  install_memory_tracker();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm pairs = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pairs);
  ParallelContext solo(MPI_COMM_SELF, 1, 1, 1, 60.0);
  ParallelContext cp2(pairs, 1, 1, 1, 60.0, /*ep=*/1, /*cp=*/2);
  ParallelContext cp4(MPI_COMM_WORLD, 1, 1, 1, 60.0, /*ep=*/1, /*cp=*/4);

  // One process: without recomputation it keeps the (b, a, s, s) probabilities (the causal
  // mask is added inside the scores' product and kept by nothing); with selective
  // recomputation, as ring attention, not those either.
  const double whole = static_cast<double>(block_bytes(solo, /*selective=*/false));
  const double selective = static_cast<double>(block_bytes(solo, /*selective=*/true));
  EXPECT_DOUBLE_EQ(whole - selective, kBatch * kHeads * kSeq * kSeq * 4.0);
  for (ParallelContext* ctx : {&cp2, &cp4}) {
    const int cp = ctx->grid().cp();
    const double measured = static_cast<double>(block_bytes(*ctx, /*selective=*/false));
    // Ring attention keeps what selective recomputation keeps of its rows, plus its output
    // (b, a, s/cp, d) in the heads' layout and each row's log-sum-exp (b, a, s/cp): both
    // grow with the rank's tokens, so the whole is still one cp-th.
    const double ring = (kBatch * (kSeq / cp) * kHidden + kBatch * kHeads * (kSeq / cp)) * 4.0;
    if (rank == 0)
      std::printf(
          "cp%d: measured %8.0f bytes a rank; one process %8.0f (selective %8.0f), / cp = "
          "%8.0f, + the ring's output and row statistics %6.0f\n",
          cp, measured, whole, selective, selective / cp, ring);
    EXPECT_DOUBLE_EQ(measured, selective / cp + ring) << "cp " << cp;
    EXPECT_LT(measured, whole / cp) << "cp " << cp;
    // The planner's formula (plan/memory_model.h) leaves out the two layer norms' statistics
    // (mean and 1/std, 2 s b / cp elements each), as for whole sequences.
    const double norms = 2.0 * 2.0 * (kSeq / cp) * kBatch * 4.0;
    EXPECT_DOUBLE_EQ(measured, ring_formula(cp, false) + norms) << "cp " << cp;
    // The Llama with grouped-query attention: its keys and values kept unrepeated. The
    // formula leaves out the RMSNorms' statistics (one a row each). Its ring terms were
    // read off the GPT; the Llama rows were not looked at.
    const double llama = static_cast<double>(llama_block_bytes(*ctx));
    const double llama_norms = 2.0 * (kSeq / cp) * kBatch * 4.0;
    if (rank == 0)
      std::printf("cp%d llama: measured %8.0f bytes, formula %8.0f + norms %5.0f\n", cp, llama,
                  ring_formula(cp, true), llama_norms);
    EXPECT_DOUBLE_EQ(llama, ring_formula(cp, true) + llama_norms) << "cp " << cp;
  }
  MPI_Comm_free(&pairs);
}

}  // namespace
}  // namespace trident
