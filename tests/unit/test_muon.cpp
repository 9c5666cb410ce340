// Muon's arithmetic alone: Newton-Schulz's orthogonalisation, the update's scales, which
// parameters Muon takes, and the exchange on one rank (owners spread by cost).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>  // std::max_element
#include <cmath>      // std::sqrt

#include "parallel/local_communicator.h"  // LocalCommunicator
#include "zero/muon.h"
#include "zero/muon_exchange.h"

namespace trident {
namespace {

at::Tensor random_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  at::manual_seed(seed);
  return at::randn({rows, cols}, at::kDouble);
}

TEST(NewtonSchulz, brings_every_singular_value_near_one) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{32, 96}, {96, 32}, {48, 48}}) {
    // Singular values spread over four decades: the iteration must lift the small ones.
    at::Tensor g = random_matrix(rows, cols, 7);
    const auto [u, s, vh] = at::linalg_svd(g, false);
    const at::Tensor spread = at::logspace(0, -4, s.numel(), 10.0, at::kDouble);
    g = u.mm(at::diag(spread)).mm(vh);
    const at::Tensor o = newton_schulz(g, 5);
    ASSERT_EQ(o.sizes(), g.sizes());
    const at::Tensor sv = at::linalg_svdvals(o);
    // Keller Jordan's coefficients leave singular values in about [0.7, 1.2] after five
    // iterations for inputs above about 1e-3 of the largest; smaller ones still grow.
    const int64_t above = (spread > 2e-3).sum().item<int64_t>();
    const at::Tensor kept = sv.narrow(0, 0, above);
    EXPECT_GT(kept.min().item<double>(), 0.6) << rows << "x" << cols;
    EXPECT_LT(sv.max().item<double>(), 1.25) << rows << "x" << cols;
    // The singular vectors stay: o is close to u v^T on the kept directions.
    const at::Tensor aligned = u.t().mm(o).mm(vh.t()).diagonal();
    EXPECT_GT(aligned.narrow(0, 0, above).min().item<double>(), 0.6);
  }
}

TEST(NewtonSchulz, transposing_the_input_transposes_the_output) {
  const at::Tensor g = random_matrix(24, 40, 3);
  const at::Tensor o = newton_schulz(g, 5);
  EXPECT_LT((newton_schulz(g.t().contiguous(), 5) - o.t()).abs().max().item<double>(), 1e-14);
  EXPECT_GT(o.abs().max().item<double>(), 0.05);
}

TEST(NewtonSchulz, ignores_the_scale_of_its_input) {
  const at::Tensor g = random_matrix(16, 24, 5);
  const double d = (newton_schulz(g * 1000.0, 5) - newton_schulz(g, 5)).abs().max().item<double>();
  EXPECT_LT(d, 1e-7);
  EXPECT_GT(newton_schulz(g, 5).abs().max().item<double>(), 0.05);
}

TEST(MuonScale, moonlight_and_spectral) {
  EXPECT_DOUBLE_EQ(muon_scale(768, 3072, false), 0.2 * std::sqrt(3072.0));
  EXPECT_DOUBLE_EQ(muon_scale(3072, 768, false), 0.2 * std::sqrt(3072.0));
  EXPECT_DOUBLE_EQ(muon_scale(3072, 768, true), 2.0);
  EXPECT_DOUBLE_EQ(muon_scale(768, 3072, true), 1.0);
}

TEST(MuonMatrices, the_blocks_matrices_and_not_the_rest) {
  auto spec = [](std::string name, std::vector<int64_t> shape) {
    ParamSpec s;
    s.name = std::move(name);
    s.global_shape = std::move(shape);
    return s;
  };
  EXPECT_TRUE(is_muon_matrix(spec("h.0.attn.qkv.weight", {48, 16})));
  EXPECT_TRUE(is_muon_matrix(spec("h.11.mlp.down.weight", {16, 64})));
  EXPECT_TRUE(is_muon_matrix(spec("h.1.moe.experts.3.gate.weight", {24, 16})));
  EXPECT_FALSE(is_muon_matrix(spec("h.1.moe.router.weight", {4, 16})));
  EXPECT_FALSE(is_muon_matrix(spec("h.0.ln_1.weight", {16})));
  EXPECT_FALSE(is_muon_matrix(spec("h.0.attn.qkv.bias", {48})));
  EXPECT_FALSE(is_muon_matrix(spec("wte.weight", {64, 16})));
  EXPECT_FALSE(is_muon_matrix(spec("lm_head.weight", {64, 16})));
}

TEST(MuonMatrices, a_fused_parameter_is_its_chunks) {
  ParamSpec qkv;
  qkv.name = "h.0.attn.qkv.weight";
  qkv.global_shape = {48, 16};
  qkv.shard = ShardSpec{0, 3};
  const at::Tensor w = at::arange(48 * 16, at::kDouble).view({48, 16});
  const std::vector<at::Tensor> m = logical_matrices(qkv, w);
  ASSERT_EQ(m.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(at::equal(m[k], w.narrow(0, 16 * k, 16)));
}

TEST(MuonOwners, longest_first_to_the_least_loaded) {
  // 8, 7, 6, 5, 4 over 2 ranks: {8, 5, 4} and {7, 6}: 17 against 13.
  EXPECT_EQ(assign_owners({5, 8, 4, 7, 6}, 2), (std::vector<int>{0, 0, 0, 1, 1}));
  // Many equal matrices spread evenly; a single huge one goes alone.
  const std::vector<int> even = assign_owners(std::vector<double>(12, 1.0), 4);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(std::count(even.begin(), even.end(), r), 3);
  const std::vector<int> huge = assign_owners({100, 1, 1, 1}, 2);
  EXPECT_EQ(huge, (std::vector<int>{0, 1, 1, 1}));
}

TEST(MuonExchange, one_rank_orthogonalises_each_logical_matrix) {
  std::vector<Parameter> params(2);
  params[0].spec.name = "h.0.attn.qkv.weight";
  params[0].spec.global_shape = {24, 8};
  params[0].spec.shard = ShardSpec{0, 3};
  params[1].spec.name = "h.0.mlp.proj.weight";
  params[1].spec.global_shape = {8, 32};
  LocalCommunicator stage("stage", 0);
  MuonOptions o;
  const at::Tensor qkv = random_matrix(24, 8, 11), proj = random_matrix(8, 32, 12);
  // Both in one round, and in a round each when the buffer holds one matrix.
  for (int64_t round_elements : {int64_t{1000}, int64_t{500}}) {
    MuonExchange exchange(params, {0, 1}, stage, o, at::TensorOptions().dtype(at::kDouble),
                          round_elements);
    EXPECT_EQ(exchange.rounds(), round_elements == 1000 ? 1 : 2);  // (1 + 1) x 448, or x 256
    at::Tensor got_qkv, got_proj;
    for (int r = 0; r < exchange.rounds(); ++r) {
      exchange.begin(r);
      if (exchange.round_of(0) == r) exchange.slot(0).copy_(qkv);
      if (exchange.round_of(1) == r) exchange.slot(1).copy_(proj);
      exchange.run(r);
      if (exchange.round_of(0) == r) got_qkv = exchange.slot(0).clone();
      if (exchange.round_of(1) == r) got_proj = exchange.slot(1).clone();
    }
    for (int k = 0; k < 3; ++k) {
      const at::Tensor want = newton_schulz(qkv.narrow(0, 8 * k, 8), 5) * muon_scale(8, 8, false);
      EXPECT_TRUE(at::allclose(got_qkv.narrow(0, 8 * k, 8), want, 0, 1e-15)) << k;
    }
    EXPECT_TRUE(
        at::allclose(got_proj, newton_schulz(proj, 5) * muon_scale(8, 32, false), 0, 1e-15));
    EXPECT_EQ(exchange.imbalance(), 1.0);
  }
}

}  // namespace
}  // namespace trident
