// ZeroOptimizer against the single-process reference: stages 0-2 over dp (with tp, pp where
// named) give one process's losses, grad norms and weights in fp64; the reference itself
// is checked against AdamW written out by hand.
#include <ATen/ATen.h>    // tensors
#include <gtest/gtest.h>  // TEST, EXPECT_*
#include <mpi.h>          // MPI_COMM_WORLD, MPI_COMM_SELF

#include <algorithm>  // std::max, std::min
#include <cmath>      // std::abs, std::sqrt
#include <cstdio>     // std::printf
#include <map>
#include <memory>
#include <string>

#include "common/counter_rng.h"         // random_u64
#include "models/gpt.h"                 // GptStage, GptOptions
#include "mpi_cases.h"                  // register_mpi_cases
#include "mpi_test_util.h"              // Layout, relative_difference, tiny_gpt
#include "parallel/parallel_context.h"  // ParallelContext
#include "zero/zero_optimizer.h"        // ZeroOptimizer

namespace trident {
namespace {

using testing::Layout;
using testing::relative_difference;
using testing::tiny_gpt;

// One mpirun per rank count: each layout's own run is shorter than the start of its ranks.
const bool kRegistered = testing::register_mpi_cases({
    {"zero_reference_dp1", 1, "ZeroReference.*"},
    testing::grouped_case("zero_dp2_stage0_1_2", 2,
                          {"ZeroParity.dp2_zero0", "ZeroParity.dp2_zero1", "ZeroParity.dp2_zero2"}),
    testing::grouped_case(
        "zero_np4_dp4_dp2_tp2_dp2_pp2", 4,
        {"ZeroParity.dp4_zero0", "ZeroParity.dp4_zero1", "ZeroParity.dp4_zero2*",
         "ZeroParity.dp2_tp2_zero2", "ZeroParity.dp2_pp2_zero0", "ZeroParity.dp2_pp2_zero2"}),
    testing::grouped_case("zero_dp2_pp2_tp2_stage1_2", 8,
                          {"ZeroParity.dp2_pp2_tp2_zero1", "ZeroParity.dp2_pp2_tp2_zero2"}),
});

constexpr int kGlobalBatch = 8;  // sequences per step
constexpr int kSteps = 3;
constexpr double kLr = 1e-2;
constexpr double kMaxNorm = 0.05;  // below the first steps' norms: clipping is exercised
constexpr uint64_t kDataKey = 0x5eed;

/// Step `step`'s global batch: (kGlobalBatch, seq_len + 1) token ids, a pure function of
/// (step, index).
at::Tensor global_batch(int step, const GptOptions& o) {
  at::Tensor t = at::empty({kGlobalBatch, o.seq_len + 1}, at::kLong);
  int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<int64_t>(random_u64(kDataKey, step, i) % o.vocab);
  return t;
}

double clip_scale(double norm) { return std::min(1.0, kMaxNorm / (norm + 1e-6)); }

/// What every rank of a run agrees on.
struct Trace {
  std::vector<double> losses, norms;
};

/// Trains kSteps steps: dp rank d takes micro-batches d*m .. d*m+m-1 of the global batch
/// (`micro_batches` = m). With pp == 2, each micro-batch goes forward through stage 0,
/// then stage 1, and back (activations and their gradients over the pp group).
Trace train(ParallelContext& ctx, GptStage& model, ZeroOptimizer& opt, int micro_batches) {
  const GptOptions& o = model.options();
  const int dp = ctx.grid().dp();
  const int64_t mb = kGlobalBatch / (dp * micro_batches);
  const double scale = 1.0 / static_cast<double>(kGlobalBatch * o.seq_len);
  Trace trace;
  for (int s = 0; s < kSteps; ++s) {
    const at::Tensor batch = global_batch(s, o);
    double loss_sum = 0.0;
    for (int j = 0; j < micro_batches; ++j) {
      const at::Tensor rows = batch.narrow(0, (ctx.coord().dp * micro_batches + j) * mb, mb);
      const at::Tensor input = rows.narrow(1, 0, o.seq_len).contiguous();
      const at::Tensor target = rows.narrow(1, 1, o.seq_len).contiguous();
      const bool last = j == micro_batches - 1;
      if (ctx.grid().pp() == 1) {
        at::Tensor loss = model.forward(input, target, scale);
        opt.begin_backward(last);
        loss.backward();
        opt.end_backward();
        loss_sum += loss.item<double>();
      } else if (model.is_first()) {
        at::Tensor x = model.forward(input, target, scale);  // (mb, T, C)
        ctx.pp().send(x.detach().contiguous(), 1, j)->wait();
        at::Tensor grad = at::empty_like(x);
        ctx.pp().recv(grad, 1, j)->wait();
        opt.begin_backward(last);
        x.backward(grad);
        opt.end_backward();
      } else {
        at::Tensor x = at::empty(model.activation_shape(mb), at::TensorOptions().dtype(o.dtype));
        ctx.pp().recv(x, 0, j)->wait();
        x.set_requires_grad(true);
        at::Tensor loss = model.forward(x, target, scale);
        opt.begin_backward(last);
        loss.backward();
        opt.end_backward();
        ctx.pp().send(x.grad().contiguous(), 0, j)->wait();
        loss_sum += loss.item<double>();
      }
    }
    opt.reduce_gradients();
    const double norm = opt.grad_norm();
    opt.step(kLr, clip_scale(norm));
    // The step's loss: the last stage's sum over micro-batches and dp ranks (tp replicas
    // hold the same value: count tp rank 0's).
    const bool counts = model.is_last() && ctx.coord().tp == 0;
    at::Tensor loss = at::full({1}, counts ? loss_sum : 0.0, at::kDouble);
    ctx.world().all_reduce(loss)->wait();
    trace.losses.push_back(loss.item<double>());
    trace.norms.push_back(norm);
  }
  return trace;
}

/// The single-process reference: dp = pp = tp = 1, the whole global batch in one
/// micro-batch, ZeRO stage 0 (plain AdamW).
struct Reference {
  ParallelContext ctx{MPI_COMM_SELF, 1, 1, 1, 120.0};
  GptStage model;
  ZeroOptimizer opt;
  Trace trace;
  explicit Reference(const GptOptions& o)
      : model(o, ctx.tp(), 0, 1),
        opt(model.params().params(), ctx, ZeroOptions{0}, AdamWOptions{}) {
    trace = train(ctx, model, opt, 1);
  }
  const at::Tensor& param(const std::string& name) {
    for (const Parameter& p : model.params().params())
      if (p.spec.name == name) return p.tensor;
    throw std::runtime_error("no parameter " + name);
  }
};

/// A ZeroParity layout; 1000-element buckets make several buckets in the tiny model.
Layout zero_layout(int dp, int pp, int tp, int zero, int64_t bucket_size = 1000) {
  Layout l;
  l.dp = dp;
  l.pp = pp;
  l.tp = tp;
  l.zero = zero;
  l.bucket_size = bucket_size;
  return l;
}

/// Trains `layout` and the reference and compares losses, grad norms and final weights.
void expect_parity(const Layout& layout) {
  const GptOptions o = tiny_gpt();
  ParallelContext ctx(MPI_COMM_WORLD, layout.dp, layout.pp, layout.tp, 120.0);
  GptStage model(o, ctx.tp(), ctx.coord().pp, layout.pp);
  ZeroOptimizer opt(model.params().params(), ctx, ZeroOptions{layout.zero, layout.bucket_size},
                    AdamWOptions{});
  const Trace got = train(ctx, model, opt, 2);
  Reference ref(o);

  constexpr double kTol = 1e-10;
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_LT(relative_difference(got.losses[s], ref.trace.losses[s]), kTol)
        << "step " << s << " loss " << got.losses[s] << " vs " << ref.trace.losses[s];
    EXPECT_LT(relative_difference(got.norms[s], ref.trace.norms[s]), kTol)
        << "step " << s << " grad norm " << got.norms[s] << " vs " << ref.trace.norms[s];
  }
  EXPECT_GT(ref.trace.norms[0], kMaxNorm) << "clipping should be active in the first step";
  double worst = 0.0, worst_loss = 0.0, worst_norm = 0.0;
  for (int s = 0; s < kSteps; ++s) {
    worst_loss = std::max(worst_loss, relative_difference(got.losses[s], ref.trace.losses[s]));
    worst_norm = std::max(worst_norm, relative_difference(got.norms[s], ref.trace.norms[s]));
  }
  for (const Parameter& p : model.params().params()) {
    const at::Tensor expected =
        cut_shard(p.spec, ctx.coord().tp, layout.tp, ref.param(p.spec.name));
    const double scale = expected.abs().max().item<double>();
    const double diff = (p.tensor.detach() - expected).abs().max().item<double>();
    worst = std::max(worst, diff / std::max(scale, 1e-300));
    EXPECT_LT(diff, kTol * std::max(scale, 1e-300)) << p.spec.name;
  }
  ::testing::Test::RecordProperty("max_rel_weight_diff", std::to_string(worst));
  if (ctx.rank() == 0)
    std::printf(
        "[zero parity] dp%d pp%d tp%d zero%d: max relative difference of weights %.2g, "
        "losses %.2g, grad norms %.2g\n",
        layout.dp, layout.pp, layout.tp, layout.zero, worst, worst_loss, worst_norm);
}

TEST(ZeroParity, dp2_zero0) { expect_parity(zero_layout(2, 1, 1, 0)); }
TEST(ZeroParity, dp2_zero1) { expect_parity(zero_layout(2, 1, 1, 1)); }
TEST(ZeroParity, dp2_zero2) { expect_parity(zero_layout(2, 1, 1, 2)); }
TEST(ZeroParity, dp4_zero0) { expect_parity(zero_layout(4, 1, 1, 0)); }
TEST(ZeroParity, dp4_zero1) { expect_parity(zero_layout(4, 1, 1, 1)); }
TEST(ZeroParity, dp4_zero2) { expect_parity(zero_layout(4, 1, 1, 2)); }
TEST(ZeroParity, dp4_zero2_one_bucket) { expect_parity(zero_layout(4, 1, 1, 2, 1 << 20)); }
TEST(ZeroParity, dp2_tp2_zero2) { expect_parity(zero_layout(2, 1, 2, 2)); }
TEST(ZeroParity, dp2_pp2_zero0) { expect_parity(zero_layout(2, 2, 1, 0)); }
TEST(ZeroParity, dp2_pp2_zero2) { expect_parity(zero_layout(2, 2, 1, 2)); }
TEST(ZeroParity, dp2_pp2_tp2_zero1) { expect_parity(zero_layout(2, 2, 2, 1)); }
TEST(ZeroParity, dp2_pp2_tp2_zero2) { expect_parity(zero_layout(2, 2, 2, 2)); }

/// The reference's optimizer against AdamW written out per parameter, for one step; and
/// its gradient norm against the plain gradients' norm.
TEST(ZeroReference, dp1_zero0_matches_hand_written_adamw) {
  const GptOptions o = tiny_gpt();
  ParallelContext ctx(MPI_COMM_SELF, 1, 1, 1, 60.0);
  const double scale = 1.0 / static_cast<double>(kGlobalBatch * o.seq_len);
  const at::Tensor batch = global_batch(0, o);
  const at::Tensor input = batch.narrow(1, 0, o.seq_len).contiguous();
  const at::Tensor target = batch.narrow(1, 1, o.seq_len).contiguous();

  // Plain autograd: the gradients, and AdamW's first step by hand.
  GptStage plain(o, ctx.tp(), 0, 1);
  plain.forward(input, target, scale).backward();
  double sum_sq = 0.0;
  for (const Parameter& p : plain.params().params())
    sum_sq += p.tensor.grad().square().sum().item<double>();
  const double norm = std::sqrt(sum_sq);
  const double clip = clip_scale(norm);
  const AdamWOptions a;
  std::map<std::string, at::Tensor> expected;
  for (const Parameter& p : plain.params().params()) {
    const at::Tensor g = p.tensor.grad() * clip;
    const at::Tensor m = (1 - a.beta1) * g;      // m_1, from m_0 = 0
    const at::Tensor v = (1 - a.beta2) * g * g;  // v_1, from v_0 = 0
    const at::Tensor m_hat = m / (1 - a.beta1);
    const at::Tensor v_hat = v / (1 - a.beta2);
    at::Tensor w = p.tensor.detach().clone();
    if (p.spec.weight_decay) w = w * (1 - kLr * a.weight_decay);
    expected[p.spec.name] = w - kLr * m_hat / (v_hat.sqrt() + a.eps);
  }

  GptStage model(o, ctx.tp(), 0, 1);
  ZeroOptimizer opt(model.params().params(), ctx, ZeroOptions{0, 1000}, a);
  at::Tensor loss = model.forward(input, target, scale);
  opt.begin_backward(true);
  loss.backward();
  opt.end_backward();
  opt.reduce_gradients();
  const double got_norm = opt.grad_norm();
  EXPECT_LT(relative_difference(got_norm, norm), 1e-13) << got_norm << " vs " << norm;
  opt.step(kLr, clip_scale(got_norm));
  EXPECT_EQ(opt.step_count(), 1);
  for (const Parameter& p : model.params().params()) {
    const at::Tensor& e = expected.at(p.spec.name);
    const double diff = (p.tensor.detach() - e).abs().max().item<double>();
    EXPECT_LT(diff, 1e-13 * e.abs().max().item<double>()) << p.spec.name;
  }
  // Gradients are reset for the next step and stay views of the flat buffer.
  for (const Parameter& p : model.params().params())
    EXPECT_EQ(p.tensor.grad().abs().max().item<double>(), 0.0);
}

}  // namespace
}  // namespace trident
