// Timing a measurement with every rank at once: calls repeated until a minimum time has
// passed on every rank, the median of several trials, and the ranks' mean of a figure.
#pragma once
#include <functional>  // std::function
#include <vector>      // std::vector

namespace trident {
class Communicator;
}  // namespace trident

namespace trident::calibrate {

/// The time a measurement reads, in seconds: the steady clock's, or a test's own, which
/// advances as the calls it times say, so that a test asserts counts and times exactly.
struct Clock {
  std::function<double()> seconds;
  /// std::chrono::steady_clock's.
  static Clock steady();
};

/// The mean over the ranks of `world` of each rank's `value`. Collective over `world`.
double mean_over_ranks(double value, Communicator& world);

/// Seconds per call of `fn` on this rank (after one warm-up call): the median of five
/// trials of `min_s` / 5 each — the typical time, as training's step times are medians
/// (the fastest trial misses what ranks sharing cores and memory cost each other). In each trial
/// the ranks start together and agree on every batch of calls, so a `fn` that talks to another rank
/// makes the same number of calls on both sides. Collective over `world`.
double time_per_call(const std::function<void()>& fn, double min_s, Communicator& world,
                     const Clock& clock = Clock::steady());

/// A call's time and a figure read around it, from the same trial.
struct PerCall {
  double seconds = 0;  ///< as time_per_call
  double figure = 0;   ///< the growth of `counter` over the median trial, per call
};
/// time_per_call, also reading `counter` (a running total, such as a communicator's
/// seconds spent waiting) before and after each trial: the figure comes from the trial
/// whose time is the median, so that both describe the same calls, the warm-up call in
/// neither. Collective over `world`.
PerCall time_per_call(const std::function<void()>& fn, double min_s, Communicator& world,
                      const std::function<double()>& counter, const Clock& clock = Clock::steady());

/// Seconds per call of each of `fns` on this rank, each as time_per_call with its
/// `min_s`, but their trials taken in turn — the first trial of each, then the second of
/// each, and so on — so that a spell of the machine running slower or faster falls on
/// every one alike, and each one's median trial is taken from every part of the
/// measurement. Figures compared with each other (a table over sizes, a block against the
/// matmuls inside it) are measured so. Collective over `world`.
std::vector<double> times_per_call_in_turn(const std::vector<std::function<void()>>& fns,
                                           const std::vector<double>& min_s, Communicator& world,
                                           const Clock& clock = Clock::steady());

/// Runs `measure` on the ranks of `world` where `active` is true (collective over those
/// ranks alone), while the others sleep — polling a barrier of `world` every millisecond,
/// so that they leave the cores to the measurement. Collective over `world`.
void with_others_idle(Communicator& world, bool active, const std::function<void()>& measure);

}  // namespace trident::calibrate
