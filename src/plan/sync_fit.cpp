// The line through two calibrated blocks' waits.
#include "plan/sync_fit.h"

#include <algorithm>  // std::max

namespace trident::plan {

SyncFit fit_sync(const SyncPoint& small, const SyncPoint& large, double share) {
  const double slope =
      large.segment_s > small.segment_s
          ? std::max(0.0, (large.wait_s - small.wait_s) / (large.segment_s - small.segment_s))
          : 0.0;
  SyncFit f;
  f.sync_fraction = slope / share;
  f.sync_us = std::max(0.0, small.wait_s - slope * small.segment_s) / share * 1e6;
  return f;
}

}  // namespace trident::plan
