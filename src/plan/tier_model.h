// The nvme tier's traffic per step and what of it a step waits for: the bytes each part
// of training moves between a rank's memory and its tier files (zero/zero_offload.cpp),
// and their time at the calibrated disk bandwidth.
#pragma once
#include "plan/plan_model.h"  // PlanModel, Layout

namespace trident::plan {

/// Bytes the tier moves per step on the device of pipeline stage `stage`.
struct TierTraffic {
  double stream_read = 0, stream_write = 0;  ///< the streamed AdamW step, once
  double gather_read = 0;                    ///< stage 3's gathers reading the parameter shard
  double grad_read = 0, grad_write = 0;      ///< the reduced gradient shard, per micro-batch
  double layer_read = 0;  ///< one gather of the largest layer: what no prefetch hides
  int64_t gathers = 0;    ///< passes over the layers a step: 2 per micro-batch (forward,
                          ///< backward), each starting with one layer read unprefetched
  double total() const { return stream_read + stream_write + gather_read + grad_read + grad_write; }
};

/// The planes (docs/offload.md): both moments and a 16-bit run's fp32 master for the
/// rank's domain (Ψ/dp, every parameter), the reduced gradient shard from ZeRO 2 on, the
/// parameter shard of stage 3's sharded parameters with offload_params. The AdamW step
/// reads every plane and writes back all but the gradient; each micro-batch writes the
/// gradient shard (reading it first after the first micro-batch); each gather reads the
/// parameter shard: forward and backward per micro-batch (a recomputation gathers with
/// its backward), once a step when layers stay gathered. Zero without an nvme tier.
TierTraffic tier_traffic(const PlanModel& m, const Layout& layout, int stage);

/// The disk's sequential O_DIRECT rates, GB/s, each direction on its own.
struct DiskRates {
  double read_gbps = 0, write_gbps = 0;
  /// The fraction of the tier's transfer time that hides behind computation
  /// (Cluster::disk_overlap): 1 where the disk moves the bytes while the cores compute,
  /// less where the transfers take CPU time the ranks' compute would have used.
  double overlap = 1.0;
  /// Seconds per 1e9 bytes the stream takes beyond its AdamW step, as calibrated
  /// (Cluster::tier_stream_s_per_gb); negative: priced from the rates and `overlap`.
  double stream_s_per_gb = -1.0;
};

/// What the tier's transfers can hide behind, in seconds of the step.
struct TierWindows {
  double optimizer_s = 0;  ///< the AdamW step, which the stream overlaps
  double compute_s = 0;    ///< forward and backward, which stage 3's prefetched gathers overlap
  /// What the gradient's writes overlap: backward from each bucket's reduction to the
  /// next's (zero/zero_optimizer.cpp writes a bucket's shard behind and waits for it
  /// before the next): all of backward without a dp group, as far as the reductions
  /// complete during backward with one (dp_overlap; on a CPU, at its end).
  double gradient_s = 0;
};

/// Seconds the step waits for the tier beyond what it hides behind (`w`). The ring keeps
/// the stream's reads ahead and writes behind in flight at once, so the stream takes as
/// long as its slower direction; the gradient's read of the previous micro-batch's sum is
/// synchronous; of the rest the disk's overlap fraction hides behind the work beside it.
/// The stream, where its own cost was calibrated, is (stream_read + stream_write) x
/// stream_s_per_gb; else
///   io_s - overlap x min(io_s, optimizer),  io_s = max(stream_read / read, stream_write / write)
///   + io_g - overlap x min(io_g, compute),  io_g = gather_read / read
///   + grad_read / read + io_w - overlap x min(io_w, gradient),  io_w = grad_write / write
///   + gathers x layer_read / read   (each direction's first layer is read unprefetched)
/// Zero when either rate is unknown (0).
double tier_wait_s(const TierTraffic& t, const DiskRates& disk, const TierWindows& w);

}  // namespace trident::plan
