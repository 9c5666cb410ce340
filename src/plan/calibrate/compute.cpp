// Compute measurements on libtorch: matmuls, a stream kernel, and trident's GPT block and
// stage built as training builds them.
#include "plan/calibrate/compute.h"

#include <ATen/ATen.h>                     // at::matmul_out, at::add_out, at::randn
#include <torch/csrc/autograd/autograd.h>  // torch::autograd::backward

#include <cmath>    // std::cbrt
#include <fstream>  // std::ifstream
#include <memory>   // std::make_shared
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "models/gpt.h"                 // GptBlock, GptStage, GptOptions
#include "parallel/communicator.h"      // Communicator
#include "plan/calibrate/timing.h"      // time_per_call, mean_over_ranks
#include "plan/memory_model.h"          // layer_activation_bytes
#include "plan/plan_model.h"            // PlanModel, layer_forward_flops_per_token
#include "tensor_parallel/parameter.h"  // ParamRegistry

namespace trident::calibrate {

double matmul_tflops(int64_t n, at::ScalarType dtype, Communicator& world, double budget) {
  const auto opts = at::TensorOptions().dtype(dtype);
  at::Tensor a = at::randn({n, n}, opts), b = at::randn({n, n}, opts), c = at::empty({n, n}, opts);
  const double s = time_per_call([&] { at::matmul_out(c, a, b); }, 0.5 * budget, world);
  return mean_over_ranks(2.0 * n * n * n / s / 1e12, world);
}

double memory_gbps(Communicator& world, double budget) {
  const int64_t n = 16 << 20;
  at::Tensor a = at::ones({n}), b = at::ones({n}), c = at::empty({n});
  const double s = time_per_call([&] { at::add_out(c, a, b); }, 0.5 * budget, world);
  return mean_over_ranks(3.0 * n * 4 / s / 1e9, world);
}

double weight_gbps(Communicator& world, double budget) {
  // Eight 4 MB weights: 32 MB, more than a core's share of the caches, as a stage's are.
  const int64_t k = 1024, count = 8;
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
  const double small = seconds(16), large = seconds(512);
  const double intercept = (small * 512.0 - large * 16.0) / (512.0 - 16.0);
  return intercept > 0 ? static_cast<double>(count * k * k) * 4.0 / intercept / 1e9 : 0.0;
}

namespace {

/// Seconds of one of trident's GPT blocks' forward and backward on `shape` (with ring
/// attention over `cp`, this rank's seq / cp tokens of each sequence), and of them the
/// seconds spent inside `waited`'s operations; per call, the ranks' mean.
std::pair<double, double> time_block(const BlockShape& shape, Communicator& tp, Communicator* cp,
                                     Communicator& waited, Communicator& world, double budget) {
  GptOptions o;
  o.hidden = shape.hidden;
  o.heads = shape.heads;
  o.seq_len = shape.seq;
  o.cp = cp;
  ParamRegistry params(o.seed, tp.rank(), tp.size(), at::kFloat);
  GptBlock block(params, tp, o, 0);
  const int64_t tokens = shape.seq / (cp != nullptr ? cp->size() : 1);
  at::Tensor x = at::randn({shape.batch, tokens, shape.hidden}).requires_grad_();  // (B, T, C)
  int64_t calls = 0;
  auto step = [&] {
    block.forward(x).sum().backward();
    ++calls;
  };
  const double wait_before = waited.total_wait_seconds();
  const double seconds = time_per_call(step, 1.0 * budget, world);
  const double wait = (waited.total_wait_seconds() - wait_before) / static_cast<double>(calls);
  return {mean_over_ranks(seconds, world), mean_over_ranks(wait, world)};
}

}  // namespace

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
  GptOptions o;
  o.hidden = shape.hidden;
  o.heads = shape.heads;
  o.seq_len = shape.seq;
  auto params = std::make_shared<ParamRegistry>(o.seed, tp.rank(), tp.size(), at::kFloat);
  auto block = std::make_shared<GptBlock>(*params, tp, o, 0);
  at::Tensor x = at::randn({shape.batch, shape.seq, shape.hidden}).requires_grad_();
  return [params, block, x] { block->forward(x).sum().backward(); };
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
  plan::PlanModel m;
  m.hidden = x.hidden;
  m.seq_len = x.seq;
  const double tokens = static_cast<double>(x.batch * x.seq);
  const double h = static_cast<double>(x.hidden);
  const double size = std::cbrt(tokens * h * 4.0 * h);
  const double weights_s = c.weight_gbps > 0 ? 12.0 * h * h * 4.0 / (c.weight_gbps * 1e9) : 0.0;
  return 3.0 * tokens * plan::layer_forward_flops_per_token(m) / c.matmul_flops("fp32", size) +
         weights_s + c.layer_overhead_us * 1e-6;
}

double block_activation_bytes(const BlockShape& x) {
  return plan::layer_activation_bytes({x.seq, x.batch, x.hidden, x.heads}, 1, false, 4.0);
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
