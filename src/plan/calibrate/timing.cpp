// Trials of timed calls, agreed across ranks through the communicator.
#include "plan/calibrate/timing.h"

#include <ATen/ATen.h>  // at::full

#include <algorithm>  // std::nth_element
#include <chrono>     // std::chrono::steady_clock
#include <thread>     // std::this_thread::sleep_for
#include <vector>     // std::vector

#include "parallel/communicator.h"  // Communicator

namespace trident::calibrate {

namespace {

using Clock = std::chrono::steady_clock;

/// The largest of every rank's `value`.
double max_over_ranks(double value, Communicator& world) {
  at::Tensor t = at::full({1}, value, at::kDouble);
  world.all_reduce(t, ReduceOp::kMax)->wait();
  return t.item<double>();
}

/// Seconds per call over one trial, and how far `counter` grew per call: batches of calls,
/// doubling, until the slowest rank has spent `min_s`.
PerCall one_trial(const std::function<void()>& fn, double min_s, Communicator& world,
                  const std::function<double()>& counter) {
  world.barrier()->wait();
  int64_t calls = 0, batch = 1;
  const double before = counter();
  const auto start = Clock::now();
  while (true) {
    for (int64_t i = 0; i < batch; ++i) fn();
    calls += batch;
    const double mine = std::chrono::duration<double>(Clock::now() - start).count();
    const double grown = counter() - before;
    if (max_over_ranks(mine, world) >= min_s) {
      const auto n = static_cast<double>(calls);
      return {mine / n, grown / n};
    }
    batch *= 2;
  }
}

}  // namespace

double mean_over_ranks(double value, Communicator& world) {
  at::Tensor t = at::full({1}, value, at::kDouble);
  world.all_reduce(t, ReduceOp::kSum)->wait();
  return t.item<double>() / world.size();
}

double time_per_call(const std::function<void()>& fn, double min_s, Communicator& world) {
  return time_per_call(fn, min_s, world, [] { return 0.0; }).seconds;
}

PerCall time_per_call(const std::function<void()>& fn, double min_s, Communicator& world,
                      const std::function<double()>& counter) {
  fn();
  std::vector<PerCall> trials;
  for (int t = 0; t < 5; ++t) trials.push_back(one_trial(fn, min_s / 5, world, counter));
  std::nth_element(trials.begin(), trials.begin() + 2, trials.end(),
                   [](const PerCall& a, const PerCall& b) { return a.seconds < b.seconds; });
  return trials[2];
}

void with_others_idle(Communicator& world, bool active, const std::function<void()>& measure) {
  world.barrier()->wait();
  if (active) measure();
  WorkHandle done = world.barrier();
  while (!done->test()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace trident::calibrate
