// The gradient reduction beside a block's backward, polled as training polls it.
#include "plan/calibrate/overlap.h"

#include <ATen/ATen.h>                     // at::randn, at::empty
#include <torch/csrc/autograd/autograd.h>  // torch::autograd::backward

#include <algorithm>  // std::clamp, std::min
#include <cmath>      // std::ceil
#include <deque>      // std::deque
#include <vector>     // std::vector

#include "parallel/communicator.h"  // Communicator, WorkHandle
#include "plan/calibrate/timing.h"  // time_per_call, times_per_call_in_turn, mean_over_ranks

namespace trident::calibrate {

double OverlapTiming::overlap() const {
  const double window = std::min(reduce_s, block_s * 2.0 / 3.0);
  if (window <= 0) return 0;
  return std::clamp((block_s + reduce_s - both_s) / window, 0.0, 1.0);
}

OverlapTiming overlap_timing(const BlockShape& shape, int64_t most_buckets, int64_t bucket,
                             bool scatter, Communicator& dp, Communicator& alone,
                             Communicator& world, double budget, const Clock& clock) {
  const int64_t n = dp.size();
  const int64_t part = bucket / n;  // each rank's share of a bucket, reduce-scattered
  at::Tensor grads = at::randn({most_buckets * part * n});
  std::vector<at::Tensor> shares;
  for (int64_t b = 0; b < most_buckets; ++b) shares.push_back(at::empty({part}));
  std::deque<WorkHandle> pending;
  auto launch = [&](int64_t buckets) {
    for (int64_t b = 0; b < buckets; ++b) {
      at::Tensor in = grads.narrow(0, b * part * n, part * n);
      // The average keeps the all-reduced buffer's values where they are, call after call.
      pending.push_back(scatter ? dp.reduce_scatter(shares[b], in, ReduceOp::kSum)
                                : dp.all_reduce(in, ReduceOp::kAverage));
    }
  };
  auto poll = [&pending] {
    while (!pending.empty() && pending.front()->test()) pending.pop_front();
  };
  auto wait_all = [&pending] {
    for (; !pending.empty(); pending.pop_front()) pending.front()->wait();
  };
  BlockPasses block = block_passes(shape, alone);
  std::vector<unsigned> hooks;
  for (at::Tensor& w : block.weights)
    hooks.push_back(w.register_hook([&poll](const at::Tensor&) { poll(); }));
  auto backward = [&block](const at::Tensor& y) { torch::autograd::backward({y}, {block.grad}); };
  auto block_alone = [&] { backward(block.forward()); };
  auto reduction_alone = [&](int64_t buckets) {
    launch(buckets);
    wait_all();
  };
  // The reduction's size: `most_buckets`, or fewer where that many would take over twice
  // the block's forward and backward (three times the backward), as across a slow link
  // between nodes (on one 1 Gbit/s link, 64 MiB over 4 ranks took 12 times the block). The
  // backward, the shorter, is then what overlap() divides by: what hides of any longer
  // reduction is what the backward can carry, and the trials need not wait seconds a call
  // for the rest. Sized on one bucket's reduction alone and the block alone, a call each
  // after a warm-up one, the ranks' mean (so that every rank takes the same count).
  const double once = 1e-9;  // one call a trial
  const double block_s = mean_over_ranks(time_per_call(block_alone, once, world, clock), world);
  const double bucket_s =
      mean_over_ranks(time_per_call([&] { reduction_alone(1); }, once, world, clock), world);
  const int64_t buckets = std::clamp(static_cast<int64_t>(std::ceil(2.0 * block_s / bucket_s)),
                                     int64_t{1}, most_buckets);
  const std::vector<double> t =
      times_per_call_in_turn({block_alone, [&] { reduction_alone(buckets); },
                              [&] {
                                const at::Tensor y = block.forward();
                                launch(buckets);
                                backward(y);
                                wait_all();
                              }},
                             {1.0 * budget, 0.5 * budget, 1.0 * budget}, world, clock);
  for (size_t i = 0; i < hooks.size(); ++i) block.weights[i].remove_hook(hooks[i]);
  return {mean_over_ranks(t[0], world), mean_over_ranks(t[1], world), mean_over_ranks(t[2], world),
          buckets};
}

}  // namespace trident::calibrate
