// How much of a gradient reduction hides behind backward on this machine: trident's
// communicator polled from the weights' gradient hooks, as ZeroOptimizer polls it.
#pragma once
#include <cstdint>  // int64_t

#include "plan/calibrate/compute.h"  // BlockShape
#include "plan/calibrate/timing.h"   // Clock

namespace trident {
class Communicator;
}  // namespace trident

namespace trident::calibrate {

/// The block's forward and backward alone, a reduction of buckets of `bucket` fp32
/// elements over `dp` alone, and both: the forward, then every bucket launched, then the
/// backward with each weight's gradient hook testing the oldest reductions in flight
/// (ZeroOptimizer::poll), then the wait for the rest. Taken in turn, every rank of `world`
/// at once; seconds per call, the ranks' mean. `scatter`: reduce-scatters (ZeRO 1-3),
/// else all-reduces (ZeRO 0). The reduction is `most_buckets` buckets, or as few as take
/// twice the block alone where that many would take longer (a slow link).
struct OverlapTiming {
  double block_s = 0, reduce_s = 0, both_s = 0;
  int64_t buckets = 0;  ///< the reduction's buckets
  /// The share of the reduction the backward hid: (block + reduce - both) over the
  /// reduction, or over the backward (2/3 of the block) when that is shorter; in [0, 1].
  double overlap() const;
};
OverlapTiming overlap_timing(const BlockShape& shape, int64_t most_buckets, int64_t bucket,
                             bool scatter, Communicator& dp, Communicator& alone,
                             Communicator& world, double budget,
                             const Clock& clock = Clock::steady());

}  // namespace trident::calibrate
