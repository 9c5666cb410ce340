// Generation with a KV cache against recomputing the whole sequence at every token, for the
// GPT-2 and Llama (GQA, tied and untied, MoE) stages in float64: the same tokens, greedy and
// sampled, and logits equal to 1e-12; the decode path's logits give the training forward's
// loss. Sampling: greedy ties, top-k, top-p and the draws against the probabilities.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <vector>

#include "common/counter_rng.h"           // uniform_at
#include "models/gpt.h"                   // GptStage
#include "models/llama.h"                 // LlamaStage
#include "parallel/local_communicator.h"  // LocalCommunicator
#include "train/generate.h"               // generate
#include "train/sampling.h"               // sample_token

namespace trident {
namespace {

constexpr int64_t kVocab = 61, kPositions = 24;
const std::vector<int64_t> kPrompt = {3, 1, 4, 1, 5, 9};

std::unique_ptr<ModelStage> gpt(Communicator& tp) {
  GptOptions o;
  o.layers = 2;
  o.hidden = 32;
  o.heads = 4;
  o.vocab = kVocab;
  o.padded_vocab = 64;
  o.seq_len = kPositions;
  o.seed = 11;
  o.dtype = at::kDouble;
  return std::make_unique<GptStage>(o, tp, 0, 1);
}

std::unique_ptr<ModelStage> llama(Communicator& tp, bool tied, int64_t experts) {
  LlamaOptions o;
  o.layers = 2;
  o.hidden = 32;
  o.heads = 4;
  o.kv_heads = 2;
  o.ffn_hidden = 40;
  o.vocab = kVocab;
  o.padded_vocab = 64;
  o.seq_len = kPositions;
  o.rope_theta = 500.0;
  o.tie_embeddings = tied;
  o.seed = 12;
  o.dtype = at::kDouble;
  o.moe.experts = experts;
  o.moe.ffn_hidden = 24;
  return std::make_unique<LlamaStage>(o, tp, 0, 1);
}

/// Random weights of 0.02 give logits too flat to tell tokens apart: scale every
/// parameter so that the model prefers some tokens strongly.
void sharpen(ModelStage& model) {
  at::NoGradGuard no_grad;
  for (auto& p : model.parameters()) p.mul_(8.0);
}

void expect_cache_matches_recompute(ModelStage& model, Communicator& tp) {
  sharpen(model);
  for (double temperature : {0.0, 0.9}) {
    GenerateOptions o;
    o.tokens = kPositions - static_cast<int64_t>(kPrompt.size());
    o.sampling.temperature = temperature;
    o.sampling.top_k = 40;
    o.sampling.top_p = 0.95;
    o.sampling.seed = 5;
    o.keep_logits = true;
    const Generation cached = generate(model, tp, kPrompt, o);
    o.kv_cache = false;
    const Generation whole = generate(model, tp, kPrompt, o);
    EXPECT_EQ(cached.tokens, whole.tokens) << "temperature " << temperature;
    ASSERT_EQ(cached.logits.size(), whole.logits.size());
    double worst = 0.0;
    for (size_t i = 0; i < cached.logits.size(); ++i)
      worst = std::max(worst, (cached.logits[i] - whole.logits[i]).abs().max().item<double>());
    EXPECT_LT(worst, 1e-12) << "temperature " << temperature;
    // Not a constant sequence: the comparison has something to compare.
    EXPECT_GT(std::set<int64_t>(cached.tokens.begin(), cached.tokens.end()).size(), 2u);
  }
}

TEST(GenerateKvCache, gpt2_fp64_cache_equals_recompute) {
  LocalCommunicator tp("tp", 0);
  expect_cache_matches_recompute(*gpt(tp), tp);
}

TEST(GenerateKvCache, llama_gqa_untied_and_tied_fp64_cache_equals_recompute) {
  LocalCommunicator tp("tp", 0);
  expect_cache_matches_recompute(*llama(tp, false, 0), tp);
  expect_cache_matches_recompute(*llama(tp, true, 0), tp);
}

TEST(GenerateKvCache, mixtral_fp64_cache_equals_recompute) {
  LocalCommunicator tp("tp", 0);
  expect_cache_matches_recompute(*llama(tp, false, 4), tp);
}

/// The mean next-token loss of `ids` from the decode path's logits, and from training's
/// forward.
void expect_decode_gives_the_training_loss(ModelStage& model) {
  const at::Tensor ids =
      at::arange(kPositions + 1, at::kLong).mul(7).remainder(kVocab).view({1, -1});
  const at::Tensor input = ids.narrow(1, 0, kPositions), targets = ids.narrow(1, 1, kPositions);
  KvCache cache;
  const at::Tensor logits = model.decode(input, cache).narrow(2, 0, kVocab).squeeze(0);
  const double from_decode = at::cross_entropy_loss(logits, targets.squeeze(0)).item<double>();
  at::NoGradGuard no_grad;
  const double from_forward =
      model.forward(input, targets, 1.0 / static_cast<double>(kPositions)).item<double>();
  EXPECT_NEAR(from_decode, from_forward, 1e-12 * std::abs(from_forward));
  EXPECT_EQ(cache.length, kPositions);
}

TEST(GenerateKvCache, decode_logits_give_the_training_forward_loss) {
  LocalCommunicator tp("tp", 0);
  expect_decode_gives_the_training_loss(*gpt(tp));
  expect_decode_gives_the_training_loss(*llama(tp, false, 0));
  expect_decode_gives_the_training_loss(*llama(tp, true, 4));
}

TEST(GenerateKvCache, refuses_more_positions_than_the_model_has) {
  LocalCommunicator tp("tp", 0);
  const auto model = gpt(tp);
  GenerateOptions o;
  o.tokens = kPositions - static_cast<int64_t>(kPrompt.size()) + 1;
  EXPECT_THROW(generate(*model, tp, kPrompt, o), c10::Error);
}

TEST(Sampling, greedy_takes_the_highest_and_the_lower_id_on_a_tie) {
  const SamplingOptions greedy;
  EXPECT_EQ(sample_token({0.1, 2.0, -1.0, 2.0}, greedy, 0), 1);
  EXPECT_EQ(sample_token({5.0}, greedy, 3), 0);
  // top_k = 1 and a tiny nucleus are greedy at any temperature.
  SamplingOptions one{1.0, 1, 1.0, 9};
  SamplingOptions nucleus{1.0, 0, 1e-9, 9};
  for (int64_t position = 0; position < 50; ++position) {
    EXPECT_EQ(sample_token({0.1, 2.0, -1.0, 1.9}, one, position), 1);
    EXPECT_EQ(sample_token({0.1, 2.0, -1.0, 1.9}, nucleus, position), 1);
  }
}

TEST(Sampling, the_draw_is_a_function_of_seed_and_position) {
  // log-probabilities of 0.5, 0.3, 0.2 at temperature 1: token = first cumulative > u.
  const std::vector<double> logits = {std::log(0.5), std::log(0.3), std::log(0.2)};
  const SamplingOptions o{1.0, 0, 1.0, 17};
  for (int64_t position = 0; position < 20; ++position) {
    const double u = uniform_at(17, static_cast<uint64_t>(position));
    const int64_t want = u < 0.5 ? 0 : u < 0.8 ? 1 : 2;
    EXPECT_EQ(sample_token(logits, o, position), want) << "u = " << u;
  }
}

TEST(Sampling, shares_follow_the_probabilities_after_top_k_and_top_p) {
  // Probabilities 0.4, 0.3, 0.2, 0.1 (temperature 1).
  const std::vector<double> logits = {std::log(0.4), std::log(0.3), std::log(0.2), std::log(0.1)};
  auto shares = [&](const SamplingOptions& o) {
    std::vector<double> count(4, 0.0);
    const int n = 40000;
    for (int64_t i = 0; i < n; ++i) count[sample_token(logits, o, i)] += 1.0 / n;
    return count;
  };
  // Binomial standard deviations are below 0.0025 at n = 40000: 0.01 is four of them.
  const std::vector<double> all = shares({1.0, 0, 1.0, 3});
  const std::vector<double> want_all = {0.4, 0.3, 0.2, 0.1};
  // top_k = 2: 0.4 and 0.3 renormalised.
  const std::vector<double> two = shares({1.0, 2, 1.0, 3});
  const std::vector<double> want_two = {4.0 / 7, 3.0 / 7, 0, 0};
  // top_p = 0.8: the fewest whose mass reaches 0.8 are the first three (0.9).
  const std::vector<double> nucleus = shares({1.0, 0, 0.8, 3});
  const std::vector<double> want_nucleus = {4.0 / 9, 3.0 / 9, 2.0 / 9, 0};
  // Temperature 0.5 squares the probabilities: 16, 9, 4, 1 over 30.
  const std::vector<double> cold = shares({0.5, 0, 1.0, 3});
  const std::vector<double> want_cold = {16.0 / 30, 9.0 / 30, 4.0 / 30, 1.0 / 30};
  for (size_t t = 0; t < 4; ++t) {
    EXPECT_NEAR(all[t], want_all[t], 0.01) << t;
    EXPECT_NEAR(two[t], want_two[t], 0.01) << t;
    EXPECT_NEAR(nucleus[t], want_nucleus[t], 0.01) << t;
    EXPECT_NEAR(cold[t], want_cold[t], 0.01) << t;
  }
  EXPECT_EQ(two[2] + two[3], 0.0);
  EXPECT_EQ(nucleus[3], 0.0);
}

}  // namespace
}  // namespace trident
