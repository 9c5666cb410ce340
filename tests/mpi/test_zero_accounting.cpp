// Multi-rank tests of what ZeroOptimizer holds and moves on dp = 4: the bytes of model
// state per stage and dtype against docs/zero.md's formulas, and the dp group's
// communication counters after one step of m micro-batches against the analytic volume.
#include <ATen/ATen.h>    // tensors
#include <gtest/gtest.h>  // TEST, EXPECT_*
#include <mpi.h>          // MPI_COMM_WORLD, MPI_COMM_SELF

#include <algorithm>  // std::max
#include <cstdio>     // std::printf
#include <memory>     // std::unique_ptr

#include "common/counter_rng.h"         // random_u64
#include "models/gpt.h"                 // GptStage, GptOptions
#include "mpi_cases.h"                  // register_mpi_cases
#include "mpi_test_util.h"              // tiny_gpt
#include "parallel/parallel_context.h"  // ParallelContext
#include "zero/muon.h"                  // is_muon_matrix
#include "zero/zero_optimizer.h"        // ZeroOptimizer

namespace trident {
namespace {

const bool kRegistered = testing::register_mpi_cases(
    {{"zero_dp4_memory_and_communication", 4, "ZeroMemory.*:ZeroComm.*"}});

constexpr int kDp = 4;
constexpr int kMicroBatches = 2;
constexpr int64_t kOneBucket = 1 << 20;  // larger than the model: one bucket per buffer

/// Sizes chosen so that both buffers need padding on dp = 4: the embedding has 31 * 6 =
/// 186 elements (padded to 188), the rest 570 (padded to 572).
GptOptions tiny_model(at::ScalarType dtype) {
  GptOptions o = testing::tiny_gpt(dtype);
  o.layers = 1;
  o.hidden = 6;
  o.vocab = 31;
  o.padded_vocab = 31;
  return o;
}

std::unique_ptr<ParallelContext> dp4() {
  return std::make_unique<ParallelContext>(MPI_COMM_WORLD, kDp, 1, 1, 120.0);
}

int64_t round_up(int64_t n, int64_t k) { return (n + k - 1) / k * k; }
int64_t element_bytes(at::ScalarType t) { return static_cast<int64_t>(c10::elementSize(t)); }

/// Ψ of the model split the way the optimizer splits it: the token embedding, the rest.
struct Counts {
  int64_t embedding = 0, rest = 0;
  int64_t psi() const { return embedding + rest; }
  /// One bucket per buffer, each padded to a multiple of dp.
  int64_t padded() const { return round_up(embedding, kDp) + round_up(rest, kDp); }
  /// The largest bucket of several parameters, the size of stage 2's bucket buffers (a
  /// bucket of one parameter, here the embedding, is sent from its own gradient).
  int64_t staged_bucket() const { return round_up(rest, kDp); }
};

Counts count(const std::vector<Parameter>& params) {
  Counts c;
  for (const Parameter& p : params)
    (p.spec.name == "wte.weight" ? c.embedding : c.rest) += p.tensor.numel();
  return c;
}

/// One optimizer step of m micro-batches of random tokens (the values do not matter here).
void one_step(ParallelContext& ctx, GptStage& model, ZeroOptimizer& opt) {
  const GptOptions& o = model.options();
  for (int j = 0; j < kMicroBatches; ++j) {
    at::Tensor ids = at::empty({1, o.seq_len + 1}, at::kLong);
    for (int64_t i = 0; i < ids.numel(); ++i)
      ids.data_ptr<int64_t>()[i] =
          static_cast<int64_t>(random_u64(3, ctx.rank() * 10 + j, i) % o.vocab);
    at::Tensor loss = model.forward(ids.narrow(1, 0, o.seq_len).contiguous(),
                                    ids.narrow(1, 1, o.seq_len).contiguous(), 1.0 / 64);
    opt.begin_backward(j == kMicroBatches - 1);
    loss.backward();
    opt.end_backward();
  }
  opt.reduce_gradients();
  opt.grad_norm();
  opt.step(1e-3, 1.0);
}

/// docs/zero.md: per-rank bytes of model state, with Ψ the rank's parameter elements
/// (padded), N_d = dp, k = 2 (bf16), 4 (fp32) or 8 (fp64) bytes per parameter, master
/// weights only for bf16, moments in max(param dtype, fp32).
ModelStateBytes formula(int stage, at::ScalarType dtype, const Counts& c,
                        at::ScalarType transport) {
  const int64_t psi = c.padded();
  const int64_t k = element_bytes(dtype);
  const int64_t state = dtype == at::kDouble ? 8 : 4;
  const int64_t master = dtype == at::kBFloat16 ? 4 : 0;
  const int64_t opt = (master + 2 * state) * psi;
  ModelStateBytes b;
  b.parameters = k * psi;
  if (stage == 0) {
    b.gradients = k * psi;
    b.optimizer_states = opt;
  } else if (stage == 1) {
    b.gradients = k * psi;
    b.optimizer_states = opt / kDp;
  } else {
    // The gradient shard in the state dtype, plus two bucket buffers and their outputs.
    const int64_t t = element_bytes(transport);
    b.gradients = state * psi / kDp + 2 * (c.staged_bucket() + c.staged_bucket() / kDp) * t;
    b.optimizer_states = opt / kDp;
  }
  return b;
}

TEST(ZeroMemory, dp4_bytes_match_the_formulas_for_every_stage_and_dtype) {
  auto ctx = dp4();
  for (at::ScalarType dtype : {at::kBFloat16, at::kFloat, at::kDouble}) {
    for (int stage = 0; stage <= 2; ++stage) {
      GptStage model(tiny_model(dtype), ctx->tp(), 0, 1);
      const Counts c = count(model.params().params());
      ZeroOptimizer opt(model.params().params(), *ctx, ZeroOptions{stage, kOneBucket},
                        AdamWOptions{});
      const ModelStateBytes got = opt.bytes();
      const ModelStateBytes want = formula(stage, dtype, c, opt.transport_dtype());
      const std::string what =
          std::string(c10::toString(dtype)) + " stage " + std::to_string(stage);
      EXPECT_EQ(opt.numel(), c.psi()) << what;
      EXPECT_EQ(opt.padded_numel(), c.padded()) << what;
      EXPECT_GT(c.padded(), c.psi()) << what;
      EXPECT_LT(c.padded() - c.psi(), 2 * kDp) << what;  // one pad per buffer, < dp each
      EXPECT_EQ(got.parameters, want.parameters) << what;
      EXPECT_EQ(got.gradients, want.gradients) << what;
      EXPECT_EQ(got.optimizer_states, want.optimizer_states) << what;
      if (ctx->rank() == 0)
        std::printf(
            "[zero memory] dp4 %-8s stage %d  psi %lld (padded %lld): params %lld  grads %lld  "
            "optimizer %lld  total %lld bytes\n",
            c10::toString(dtype), stage, static_cast<long long>(c.psi()),
            static_cast<long long>(c.padded()), static_cast<long long>(got.parameters),
            static_cast<long long>(got.gradients), static_cast<long long>(got.optimizer_states),
            static_cast<long long>(got.total()));
    }
  }
}

TEST(ZeroMemory, muon_keeps_one_state_of_its_matrices) {
  // Muon's matrices (the block's four, 432 elements) in a buffer of their own, padded to
  // dp like the others, with the momentum alone; AdamW's two moments for the embedding and
  // the rest (138 elements).
  auto ctx = dp4();
  for (int stage = 0; stage <= 3; ++stage) {
    GptStage model(tiny_model(at::kFloat), ctx->tp(), 0, 1);
    int64_t embedding = 0, matrices = 0, rest = 0;
    for (const Parameter& p : model.params().params())
      (p.spec.name == "wte.weight" ? embedding
       : is_muon_matrix(p.spec)    ? matrices
                                   : rest) += p.tensor.numel();
    ASSERT_EQ(matrices, 432);
    ZeroOptions zero{stage, kOneBucket};
    zero.persist_below = 0;  // stage 3 shards everything
    zero.muon.enabled = true;
    ZeroOptimizer opt(model.params().params(), *ctx, zero, AdamWOptions{});
    const int64_t adamw = round_up(embedding, kDp) + round_up(rest, kDp);
    const int64_t muon = round_up(matrices, kDp);
    const int64_t per_rank = stage == 0 ? 1 : kDp;
    EXPECT_EQ(opt.bytes().optimizer_states, 4 * (2 * adamw + muon) / per_rank) << "stage " << stage;
    if (stage == 3) continue;  // stepping needs the model to gather through the optimizer
    one_step(*ctx, model, opt);
    EXPECT_EQ(opt.step_count(), 1);
  }
}

struct CommCase {
  at::ScalarType dtype;
  int stage;
  at::ScalarType reduce_dtype;
};

TEST(ZeroComm, dp4_one_step_moves_the_analytic_bytes) {
  auto ctx = dp4();
  const CommCase cases[] = {
      {at::kDouble, 0, at::kFloat},      {at::kDouble, 1, at::kFloat},
      {at::kDouble, 2, at::kFloat},      {at::kBFloat16, 0, at::kFloat},
      {at::kBFloat16, 1, at::kFloat},    {at::kBFloat16, 2, at::kFloat},
      {at::kBFloat16, 2, at::kBFloat16},
  };
  for (const CommCase& cc : cases) {
    GptStage model(tiny_model(cc.dtype), ctx->tp(), 0, 1);
    const Counts c = count(model.params().params());
    ZeroOptimizer opt(model.params().params(), *ctx,
                      ZeroOptions{cc.stage, kOneBucket, cc.reduce_dtype}, AdamWOptions{});
    Communicator& dp = ctx->dp();
    dp.reset_counters();
    one_step(*ctx, model, opt);
    // Payload per call as the communicator counts it: the bucket (all-reduce,
    // reduce-scatter input, all-gather output), in the dtype handed to the call.
    const int64_t p = c.padded();
    const int64_t k = element_bytes(cc.dtype);
    const int64_t t = element_bytes(opt.transport_dtype());
    const int64_t buckets = 2;
    int64_t ar = 0, rs = 0, ag = 0, rs_calls = 0, ag_calls = 0, ar_calls = 0;
    if (cc.stage == 0) {
      ar = p * k;
      ar_calls = buckets;
    } else if (cc.stage == 1) {
      rs = p * k;
      ag = p * k;
      rs_calls = ag_calls = buckets;
    } else {
      rs = kMicroBatches * p * t;
      rs_calls = kMicroBatches * buckets;
      ag = p * k;
      ag_calls = buckets;
    }
    const std::string what = std::string(c10::toString(cc.dtype)) + " stage " +
                             std::to_string(cc.stage) + " reduce " + c10::toString(cc.reduce_dtype);
    EXPECT_EQ(dp.counter(CommKind::kAllReduce).bytes, ar) << what;
    EXPECT_EQ(dp.counter(CommKind::kAllReduce).calls, ar_calls) << what;
    EXPECT_EQ(dp.counter(CommKind::kReduceScatter).bytes, rs) << what;
    EXPECT_EQ(dp.counter(CommKind::kReduceScatter).calls, rs_calls) << what;
    EXPECT_EQ(dp.counter(CommKind::kAllGather).bytes, ag) << what;
    EXPECT_EQ(dp.counter(CommKind::kAllGather).calls, ag_calls) << what;
    EXPECT_EQ(dp.total_bytes(), ar + rs + ag) << what;
    if (ctx->rank() == 0)
      std::printf(
          "[zero comm] dp4 m=%d %-30s all_reduce %lld  reduce_scatter %lld  all_gather %lld "
          "bytes\n",
          kMicroBatches, what.c_str(), static_cast<long long>(ar), static_cast<long long>(rs),
          static_cast<long long>(ag));

    // After the step every dp replica holds the same parameters.
    for (const Parameter& prm : model.params().params()) {
      at::Tensor mine = prm.tensor.detach().to(at::kDouble).contiguous();
      at::Tensor max = mine.clone(), min = mine.neg();
      dp.all_reduce(max, ReduceOp::kMax)->wait();
      dp.all_reduce(min, ReduceOp::kMax)->wait();
      EXPECT_TRUE(at::equal(max, mine) && at::equal(min.neg(), mine))
          << what << " " << prm.spec.name;
      EXPECT_TRUE(at::isfinite(mine).all().item<bool>()) << what << " " << prm.spec.name;
    }
  }
}

/// Several buckets: the volume is the padded buffer, whatever the bucketing.
TEST(ZeroComm, dp4_small_buckets_move_the_padded_buffer) {
  auto ctx = dp4();
  GptStage model(tiny_model(at::kDouble), ctx->tp(), 0, 1);
  const Counts c = count(model.params().params());
  ZeroOptimizer opt(model.params().params(), *ctx, ZeroOptions{2, 100}, AdamWOptions{});
  ctx->dp().reset_counters();
  one_step(*ctx, model, opt);
  const int64_t p = opt.padded_numel();
  EXPECT_GE(p, c.psi());
  EXPECT_LT(p - c.psi(), kDp * (c.psi() / 100 + 2));
  EXPECT_EQ(ctx->dp().counter(CommKind::kReduceScatter).bytes, kMicroBatches * p * 8);
  EXPECT_GT(ctx->dp().counter(CommKind::kReduceScatter).calls, kMicroBatches * 4);
  EXPECT_EQ(ctx->dp().counter(CommKind::kAllGather).bytes, p * 8);
  EXPECT_EQ(opt.bytes().optimizer_states, 2 * 8 * p / kDp);
}

}  // namespace
}  // namespace trident
