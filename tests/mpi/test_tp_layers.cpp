// Tensor-parallel layers against the unsharded layer built from the gathered weights:
// forward and backward, the vocab-parallel cross-entropy against plain cross-entropy,
// and layout-free initialisation (a shard is a slice of the tp = 1 tensor, bit for bit).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include "models/gpt.h"
#include "mpi_cases.h"  // register_mpi_cases
#include "parallel/mpi_communicator.h"
#include "parallel/parallel_context.h"
#include "tensor_parallel/cross_entropy.h"
#include "tensor_parallel/layers.h"
#include "tensor_parallel/mappings.h"

namespace trident {
namespace {

const bool kRegistered =
    testing::register_mpi_cases({{"tp_layers_tp4", 4, "TpInit.*:TpLayers.*:TpModel.*"}});

/// tp = world size (4: see kRegistered), dp = pp = 1.
std::unique_ptr<ParallelContext> tp_world() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::make_unique<ParallelContext>(MPI_COMM_WORLD, 1, 1, size, 60.0);
}

/// The full tensor of a parameter, gathered from every tp rank's shard.
at::Tensor gather_param(const Parameter& p, Communicator& tp) {
  at::Tensor shard = p.tensor.detach().contiguous();
  at::Tensor all = at::empty({tp.size() * shard.numel()}, shard.options());
  tp.all_gather(all, shard.view({-1}))->wait();
  at::Tensor global = at::empty(p.spec.global_shape, shard.options());
  for (int r = 0; r < tp.size(); ++r)
    place_shard(p.spec, r, tp.size(),
                all.narrow(0, r * shard.numel(), shard.numel()).view(shard.sizes()), global);
  return global;
}

at::Tensor gather_grad(const Parameter& p, Communicator& tp) {
  Parameter g{p.spec, p.tensor.grad()};
  return gather_param(g, tp);
}

at::Tensor fixed_random(std::vector<int64_t> shape, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(shape, gen, at::TensorOptions().dtype(at::kDouble));
}

TEST(TpInit, every_gpt_shard_is_a_slice_of_the_tp1_tensor) {
  auto ctx = tp_world();
  GptOptions o{2, 16, 4, 30, 32, 8, 77, at::kDouble};
  GptStage sharded(o, ctx->tp(), 0, 1);
  MpiCommunicator solo(MPI_COMM_SELF, "self", {ctx->rank()}, 60.0);
  GptStage whole(o, solo, 0, 1);
  const auto& a = sharded.params().params();
  const auto& b = whole.params().params();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].spec.name, b[i].spec.name);
    EXPECT_TRUE(at::equal(gather_param(a[i], ctx->tp()), b[i].tensor.detach())) << a[i].spec.name;
  }
  // Vocabulary padding rows start at zero; the QKV shard holds this rank's q, k and v heads.
  EXPECT_EQ(b[0].tensor.narrow(0, 30, 2).abs().sum().item<double>(), 0.0);
}

TEST(TpLayers, column_then_row_parallel_match_the_unsharded_mlp) {
  auto ctx = tp_world();
  Communicator& tp = ctx->tp();
  ParamRegistry reg(5, tp.rank(), tp.size(), at::kDouble);
  ColumnParallelLinear fc(reg, tp, "fc", {8, 16, 0.3});
  RowParallelLinear proj(reg, tp, "proj", {16, 8, 0.3});
  // Non-zero biases so that the bias paths are tested too.
  for (auto& p : reg.params()) {
    at::NoGradGuard no_grad;
    if (p.spec.name.find("bias") != std::string::npos)
      p.tensor.copy_(cut_shard(p.spec, tp.rank(), tp.size(), fixed_random(p.spec.global_shape, 9)));
  }
  at::Tensor x = fixed_random({3, 5, 8}, 1).requires_grad_(true);
  at::Tensor r = fixed_random({3, 5, 8}, 2);
  at::Tensor y = proj.forward(at::gelu(fc.forward(x), "tanh"));
  (y * r).sum().backward();

  // The reference from gathered weights.
  std::vector<at::Tensor> w;
  for (auto& p : reg.params()) w.push_back(gather_param(p, tp).requires_grad_(true));
  at::Tensor x_ref = x.detach().clone().requires_grad_(true);
  at::Tensor y_ref = at::linear(at::gelu(at::linear(x_ref, w[0], w[1]), "tanh"), w[2], w[3]);
  (y_ref * r).sum().backward();

  EXPECT_TRUE(at::allclose(y, y_ref, 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(x.grad(), x_ref.grad(), 1e-12, 1e-12));
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_TRUE(at::allclose(gather_grad(reg.params()[i], tp), w[i].grad(), 1e-12, 1e-12))
        << reg.params()[i].spec.name;
}

TEST(TpLayers, vocab_parallel_embedding_matches_a_lookup) {
  auto ctx = tp_world();
  Communicator& tp = ctx->tp();
  ParamRegistry reg(6, tp.rank(), tp.size(), at::kDouble);
  VocabParallelEmbedding emb(reg, tp, "wte", 10, 12, 4, false);
  at::Tensor ids = at::tensor({0, 3, 9, 5, 7, 1}, at::kLong).view({2, 3});
  at::Tensor r = fixed_random({2, 3, 4}, 3);
  (emb.forward(ids) * r).sum().backward();
  at::Tensor w = gather_param(reg.params()[0], tp).requires_grad_(true);
  at::Tensor ref = at::embedding(w, ids);
  (ref * r).sum().backward();
  EXPECT_TRUE(at::allclose(emb.forward(ids), ref, 0, 0));
  EXPECT_TRUE(at::allclose(gather_grad(reg.params()[0], tp), w.grad(), 1e-14, 1e-14));
}

TEST(TpLayers, vocab_parallel_cross_entropy_matches_cross_entropy_and_ignores_padding) {
  auto ctx = tp_world();
  Communicator& tp = ctx->tp();
  const int64_t vocab = 10, padded = 12, per_rank = padded / tp.size();
  at::Tensor full = fixed_random({6, padded}, 4) * 3;
  at::Tensor targets = at::tensor({0, 9, 4, 2, 7, 9}, at::kLong);
  at::Tensor local = full.narrow(1, tp.rank() * per_rank, per_rank).clone().requires_grad_(true);
  at::Tensor r = fixed_random({6}, 5);
  at::Tensor loss = vocab_parallel_cross_entropy(local, targets, tp, tp.rank() * per_rank, vocab);
  (loss * r).sum().backward();

  at::Tensor logits = full.narrow(1, 0, vocab).clone().requires_grad_(true);
  at::Tensor ref = at::cross_entropy_loss(logits, targets, {}, at::Reduction::None);
  (ref * r).sum().backward();
  EXPECT_TRUE(at::allclose(loss, ref, 1e-13, 1e-13)) << loss << ref;
  // Gradient: this rank's columns of the reference, zero on padding columns.
  at::Tensor ref_grad = at::zeros({6, padded}, at::kDouble);
  ref_grad.narrow(1, 0, vocab).copy_(logits.grad());
  EXPECT_TRUE(
      at::allclose(local.grad(), ref_grad.narrow(1, tp.rank() * per_rank, per_rank), 1e-13, 1e-13));
}

TEST(TpModel, gpt_loss_and_gradients_match_tp1) {
  auto ctx = tp_world();
  GptOptions o{2, 16, 4, 30, 32, 8, 77, at::kDouble};
  GptStage sharded(o, ctx->tp(), 0, 1);
  MpiCommunicator solo(MPI_COMM_SELF, "self", {ctx->rank()}, 60.0);
  GptStage whole(o, solo, 0, 1);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  at::Tensor ids = at::randint(30, {2, 9}, gen, at::kLong);
  at::Tensor in = ids.narrow(1, 0, 8), tgt = ids.narrow(1, 1, 8);
  at::Tensor a = sharded.forward(in, tgt, 1.0 / 16);
  at::Tensor b = whole.forward(in, tgt, 1.0 / 16);
  a.backward();
  b.backward();
  EXPECT_NEAR(a.item<double>(), b.item<double>(), 1e-12 * b.item<double>());
  // GPT-2 at init predicts near-uniformly: the loss is close to log(vocab).
  EXPECT_NEAR(b.item<double>(), std::log(30.0), 0.1);
  const auto& pa = sharded.params().params();
  const auto& pb = whole.params().params();
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(at::allclose(gather_grad(pa[i], ctx->tp()), pb[i].tensor.grad(), 1e-10, 1e-13))
        << pa[i].spec.name;
}

}  // namespace
}  // namespace trident
