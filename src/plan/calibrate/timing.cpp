// Trials of timed calls, agreed across ranks through the communicator.
#include "plan/calibrate/timing.h"

#include <ATen/ATen.h>  // at::full

#include <algorithm>  // std::nth_element
#include <chrono>     // std::chrono::steady_clock, std::chrono::milliseconds
#include <thread>     // std::this_thread::sleep_for
#include <vector>     // std::vector

#include "parallel/communicator.h"  // Communicator

namespace trident::calibrate {

namespace {

/// The largest of every rank's `value`.
double max_over_ranks(double value, Communicator& world) {
  at::Tensor t = at::full({1}, value, at::kDouble);
  world.all_reduce(t, ReduceOp::kMax)->wait();
  return t.item<double>();
}

/// Seconds per call over one trial, and how far `counter` grew per call: batches of calls,
/// doubling, until the slowest rank has spent `min_s`.
PerCall one_trial(const std::function<void()>& fn, double min_s, Communicator& world,
                  const std::function<double()>& counter, const Clock& clock) {
  world.barrier()->wait();
  int64_t calls = 0, batch = 1;
  const double before = counter();
  const double start = clock.seconds();
  while (true) {
    for (int64_t i = 0; i < batch; ++i) fn();
    calls += batch;
    const double mine = clock.seconds() - start;
    const double grown = counter() - before;
    if (max_over_ranks(mine, world) >= min_s) {
      const auto n = static_cast<double>(calls);
      return {mine / n, grown / n};
    }
    batch *= 2;
  }
}

/// A measurement: what to call, the time its trials take together, and the counter read
/// around each trial.
struct Timed {
  std::function<void()> fn;
  double min_s;
  std::function<double()> counter;
};

/// Each of `timed` after one warm-up call: five trials of its min_s / 5, taken in turn —
/// every measurement's first trial, then every one's second, and so on — and of each the
/// trial whose time is the median.
std::vector<PerCall> in_turn(const std::vector<Timed>& timed, Communicator& world,
                             const Clock& clock) {
  constexpr int kTrials = 5;
  for (const Timed& t : timed) t.fn();
  std::vector<std::vector<PerCall>> trials(timed.size());
  for (int k = 0; k < kTrials; ++k)
    for (size_t i = 0; i < timed.size(); ++i)
      trials[i].push_back(
          one_trial(timed[i].fn, timed[i].min_s / kTrials, world, timed[i].counter, clock));
  std::vector<PerCall> out;
  for (std::vector<PerCall>& v : trials) {
    std::nth_element(v.begin(), v.begin() + kTrials / 2, v.end(),
                     [](const PerCall& a, const PerCall& b) { return a.seconds < b.seconds; });
    out.push_back(v[kTrials / 2]);
  }
  return out;
}

}  // namespace

Clock Clock::steady() {
  return Clock{[] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }};
}

double mean_over_ranks(double value, Communicator& world) {
  at::Tensor t = at::full({1}, value, at::kDouble);
  world.all_reduce(t, ReduceOp::kSum)->wait();
  return t.item<double>() / world.size();
}

double time_per_call(const std::function<void()>& fn, double min_s, Communicator& world,
                     const Clock& clock) {
  return time_per_call(
             fn, min_s, world, [] { return 0.0; }, clock)
      .seconds;
}

PerCall time_per_call(const std::function<void()>& fn, double min_s, Communicator& world,
                      const std::function<double()>& counter, const Clock& clock) {
  return in_turn({Timed{fn, min_s, counter}}, world, clock).front();
}

std::vector<double> times_per_call_in_turn(const std::vector<std::function<void()>>& fns,
                                           const std::vector<double>& min_s, Communicator& world,
                                           const Clock& clock) {
  std::vector<Timed> timed;
  for (size_t i = 0; i < fns.size(); ++i)
    timed.push_back({fns[i], min_s.at(i), [] { return 0.0; }});
  std::vector<double> seconds;
  for (const PerCall& p : in_turn(timed, world, clock)) seconds.push_back(p.seconds);
  return seconds;
}

void with_others_idle(Communicator& world, bool active, const std::function<void()>& measure) {
  world.barrier()->wait();
  if (active) measure();
  WorkHandle done = world.barrier();
  while (!done->test()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace trident::calibrate
