// Compute measurements on libtorch: matmuls, a stream kernel, a chain of weights, the
// AdamW update, and trident's GPT-2 and Llama blocks and GPT-2 stage built as training
// builds them.
#include "plan/calibrate/compute.h"

#include <ATen/ATen.h>                     // at::matmul_out, at::add_out, at::randn
#include <torch/csrc/autograd/autograd.h>  // torch::autograd::backward

#include <algorithm>  // std::max
#include <cmath>      // std::cbrt
#include <fstream>    // std::ifstream
#include <memory>     // std::make_shared
#include <string>     // std::string
#include <utility>    // std::pair
#include <vector>     // std::vector

#include "models/gpt.h"                 // GptBlock, GptStage, GptOptions
#include "models/llama.h"               // LlamaBlock, LlamaOptions
#include "models/llama_ops.h"           // RopeTables, rope_tables
#include "parallel/communicator.h"      // Communicator
#include "plan/calibrate/timing.h"      // time_per_call, mean_over_ranks
#include "plan/memory_model.h"          // layer_activation_bytes
#include "plan/plan_model.h"            // PlanModel, layer_forward_flops_per_token
#include "tensor_parallel/parameter.h"  // ParamRegistry
#include "zero/adamw.h"                 // AdamWOptions, adam_update_chunks
#include "zero/zero_optimizer.h"        // ZeroOptimizer::kUpdateChunk

namespace trident::calibrate {

std::function<void()> matmul_call(int64_t n, at::ScalarType dtype) {
  const auto opts = at::TensorOptions().dtype(dtype);
  at::Tensor a = at::randn({n, n}, opts), b = at::randn({n, n}, opts), c = at::empty({n, n}, opts);
  return [a, b, c]() mutable { at::matmul_out(c, a, b); };
}

double memory_gbps(Communicator& world, double budget) {
  const int64_t n = 16 << 20;
  at::Tensor a = at::ones({n}), b = at::ones({n}), c = at::empty({n});
  const double s = time_per_call([&] { at::add_out(c, a, b); }, 0.5 * budget, world);
  return mean_over_ranks(3.0 * n * 4 / s / 1e9, world);
}

double weight_gbps(Communicator& world, double budget) {
  // Eight 4 MB weights: 32 MB, more than a core's share of the caches, as a stage's are.
  const int64_t k = 1024, count = 8, few = 16, many = 512;  // tokens: few, many
  std::vector<at::Tensor> weights;
  for (int64_t i = 0; i < count; ++i)
    weights.push_back((at::randn({k, k}) / std::sqrt(static_cast<double>(k))).requires_grad_());
  auto seconds = [&](int64_t tokens) {
    const at::Tensor x = at::randn({tokens, k}).requires_grad_();
    const at::Tensor grad = at::randn({tokens, k});
    auto step = [&] {
      at::Tensor y = x;
      for (const at::Tensor& w : weights) y = at::matmul(y, w);
      torch::autograd::backward({y}, {grad});
    };
    return mean_over_ranks(time_per_call(step, 0.5 * budget, world), world);
  };
  const double t_few = seconds(few), t_many = seconds(many);
  const double intercept = (t_few * many - t_many * few) / static_cast<double>(many - few);
  return intercept > 0 ? static_cast<double>(count * k * k) * 4.0 / intercept / 1e9 : 0.0;
}

void adamw_update(at::Tensor param, const at::Tensor& grad, at::Tensor exp_avg,
                  at::Tensor exp_avg_sq) {
  const AdamWOptions o;
  const double lr = 1e-3;
  param.mul_(1.0 - lr * o.weight_decay);
  adam_update_chunks(param, grad, exp_avg, exp_avg_sq, lr, /*step=*/10, /*grad_scale=*/1.0, o,
                     ZeroOptimizer::kUpdateChunk);
}

double adamw_ns_per_element(Communicator& world, double budget) {
  const int64_t n = 4 << 20;
  at::Tensor param = at::full({n}, 0.5f), grad = at::full({n}, 0.25f),
             exp_avg = at::full({n}, 0.25f), exp_avg_sq = at::full({n}, 0.25f);
  const double s =
      time_per_call([&] { adamw_update(param, grad, exp_avg, exp_avg_sq); }, 0.5 * budget, world);
  return mean_over_ranks(s / static_cast<double>(n) * 1e9, world);
}

namespace {

/// The planner's model of the block of `x`.
plan::PlanModel block_model(const BlockShape& x) {
  plan::PlanModel m;
  m.hidden = x.hidden;
  m.heads = x.heads;
  m.seq_len = x.seq;
  if (x.llama) {
    m.llama = true;
    m.kv_heads = std::max<int64_t>(1, x.heads / 2);
    m.ffn_hidden = (8 * x.hidden / 3 + 31) / 32 * 32;
  }
  return m;
}

/// One forward and backward of the block of `shape` (GPT-2 or Llama) per call, on an
/// input with a gradient, backward from a dense gradient of the output.
std::function<void()> block_call(const BlockShape& shape, Communicator& tp, Communicator* cp) {
  BlockPasses block = block_passes(shape, tp, cp);
  return [block] { torch::autograd::backward({block.forward()}, {block.grad}); };
}

/// Seconds of one of trident's blocks' forward and backward on `shape` (with ring
/// attention over `cp`, this rank's seq / cp tokens of each sequence), and of them the
/// seconds spent inside `waited`'s operations, both from the median trial; per call, the
/// ranks' mean.
std::pair<double, double> time_block(const BlockShape& shape, Communicator& tp, Communicator* cp,
                                     Communicator& waited, Communicator& world, double budget) {
  const PerCall timed = time_per_call(block_call(shape, tp, cp), 1.0 * budget, world,
                                      [&waited] { return waited.total_wait_seconds(); });
  return {mean_over_ranks(timed.seconds, world), mean_over_ranks(timed.figure, world)};
}

}  // namespace

BlockPasses block_passes(const BlockShape& shape, Communicator& tp, Communicator* cp) {
  auto params =
      std::make_shared<ParamRegistry>(GptOptions{}.seed, tp.rank(), tp.size(), at::kFloat);
  const int64_t tokens = shape.seq / (cp != nullptr ? cp->size() : 1);
  at::Tensor x = at::randn({shape.batch, tokens, shape.hidden}).requires_grad_();  // (B, T, C)
  BlockPasses out;
  out.grad = at::randn({shape.batch, tokens, shape.hidden});
  if (shape.llama) {
    const plan::PlanModel m = block_model(shape);
    LlamaOptions o;
    o.hidden = m.hidden;
    o.heads = m.heads;
    o.kv_heads = m.kv_heads;
    o.ffn_hidden = m.ffn_hidden;
    o.seq_len = m.seq_len;
    o.cp = cp;
    auto rope = std::make_shared<RopeTables>(
        rope_tables(o.seq_len, o.head_dim(), o.rope_theta, at::kFloat));
    auto block = std::make_shared<LlamaBlock>(*params, tp, nullptr, o, 0, *rope);
    out.forward = [params, rope, block, x] { return block->forward(x); };
  } else {
    GptOptions o;
    o.hidden = shape.hidden;
    o.heads = shape.heads;
    o.seq_len = shape.seq;
    o.cp = cp;
    auto block = std::make_shared<GptBlock>(*params, tp, o, 0);
    out.forward = [params, block, x] { return block->forward(x); };
  }
  for (const Parameter& p : params->params()) out.weights.push_back(p.tensor);
  return out;
}

TpBlockTiming tp_block_timing(const BlockShape& shape, Communicator& tp, Communicator& world,
                              double budget) {
  const auto [seconds, wait] = time_block(shape, tp, nullptr, tp, world, budget);
  return {seconds, wait};
}

RingBlockTiming ring_block_timing(const BlockShape& shape, Communicator& cp, Communicator& tp,
                                  Communicator& world, double budget) {
  const auto [seconds, wait] = time_block(shape, tp, &cp, cp, world, budget);
  return {seconds, wait};
}

std::function<void()> block_step(const BlockShape& shape, Communicator& tp) {
  return block_call(shape, tp, nullptr);
}

double block_s(const BlockShape& shape, Communicator& tp, Communicator& world, double budget) {
  return tp_block_timing(shape, tp, world, budget).seconds;
}

double stage_s(const BlockShape& shape, Communicator& tp, Communicator& world, double budget) {
  GptOptions o;
  o.layers = 1;
  o.hidden = shape.hidden;
  o.heads = shape.heads;
  o.seq_len = shape.seq;
  o.vocab = o.padded_vocab = 64;
  GptStage stage(o, tp, 0, 1);
  const at::Tensor ids = at::randint(o.vocab, {shape.batch, shape.seq + 1}, at::kLong);
  const at::Tensor input = ids.narrow(1, 0, shape.seq), targets = ids.narrow(1, 1, shape.seq);
  auto step = [&] { stage.forward(input, targets, 1.0).backward(); };
  return mean_over_ranks(time_per_call(step, 1.0 * budget, world), world);
}

double block_matmul_s(const BlockShape& x, const plan::Cluster& c) {
  const plan::PlanModel m = block_model(x);
  const double tokens = static_cast<double>(x.batch * x.seq);
  const double h = static_cast<double>(x.hidden);
  const double size = std::cbrt(tokens * h * 4.0 * h);  // as the time model takes the rate
  const double weights_s =
      c.weight_gbps > 0 ? static_cast<double>(m.layer_matrix_params()) * 4.0 / (c.weight_gbps * 1e9)
                        : 0.0;
  const double overhead_us = c.layer_calls_us(x.llama, false);
  return 3.0 * tokens * plan::layer_forward_flops_per_token(m) / c.matmul_flops("fp32", size) +
         weights_s + overhead_us * 1e-6;
}

double block_activation_bytes(const BlockShape& x) {
  return plan::layer_activation_bytes(plan::activation_shape(block_model(x), x.batch), 1, false,
                                      4.0);
}

double mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (in >> key >> kb) {
    if (key == "MemTotal:") return kb * 1024;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

}  // namespace trident::calibrate
