// Timing a measurement with every rank at once: calls repeated until a minimum time has
// passed on every rank, the median of several trials, and the ranks' mean of a figure.
#pragma once
#include <functional>  // std::function

namespace trident {
class Communicator;
}  // namespace trident

namespace trident::calibrate {

/// The mean over the ranks of `world` of each rank's `value`. Collective over `world`.
double mean_over_ranks(double value, Communicator& world);

/// Seconds per call of `fn` on this rank (after one warm-up call): the median of five
/// trials of `min_s` / 5 each — the typical time, as training's step times are medians
/// (the fastest trial misses what ranks sharing cores and memory cost each other). In each trial
/// the ranks start together and agree on every batch of calls, so a `fn` that talks to another rank
/// makes the same number of calls on both sides. Collective over `world`.
double time_per_call(const std::function<void()>& fn, double min_s, Communicator& world);

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
                      const std::function<double()>& counter);

/// Runs `measure` on the ranks of `world` where `active` is true (collective over those
/// ranks alone), while the others sleep — polling a barrier of `world` every millisecond,
/// so that they leave the cores to the measurement. Collective over `world`.
void with_others_idle(Communicator& world, bool active, const std::function<void()>& measure);

}  // namespace trident::calibrate
