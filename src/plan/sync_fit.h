// The wait of a collective between ranks that compute in between, from two calibrated
// blocks: a fixed part and a part that grows with the compute since the previous one.
#pragma once

namespace trident::plan {

/// One block's measurement: seconds of compute between two of its collectives, and the
/// seconds a rank spent inside one beyond its messages.
struct SyncPoint {
  double segment_s = 0, wait_s = 0;
};

/// What Cluster::sync_us and Cluster::sync_fraction hold.
struct SyncFit {
  double sync_us = 0, sync_fraction = 0;
};

/// The line through two blocks' points, the larger block second: its slope is the
/// fraction, its intercept the fixed wait, each over `share` (ranks per core: the others
/// compute during most of a wait, and the step loses 1/share of it). A falling line gives
/// no fraction, a negative intercept no fixed wait; neither is ever negative.
SyncFit fit_sync(const SyncPoint& small, const SyncPoint& large, double share);

}  // namespace trident::plan
