// The largest model of a shape family that trains on a machine: for a memory and a disk
// budget, the most layers of the config's width that fit with the states in memory, with
// the optimizer's states and gradients in the nvme tier, and with everything there.
#pragma once
#include <cstdint>  // int64_t
#include <string>
#include <vector>

#include "plan/cluster.h"     // Cluster
#include "plan/plan_model.h"  // PlanModel, Layout

namespace trident::plan {

/// Where the model state lives for one row of the answer.
struct Placement {
  std::string name;        ///< "in memory", "optimizer states in the tier", ...
  int zero = 0;            ///< the ZeRO stage it needs
  bool optimizer = false;  ///< offload_optimizer = "nvme"
  bool params = false;     ///< offload_params = "nvme"
};

/// The deepest model a placement fits, and its figures at that depth.
struct CapacityRow {
  Placement placement;
  int64_t layers = 0;      ///< 0: not even pp layers fit
  int64_t parameters = 0;  ///< of the whole model
  double peak_rss = 0;     ///< predicted peak RSS of the fullest rank, bytes
  double tier_bytes = 0;   ///< that rank's tier files, bytes
  double step_s = 0;       ///< predicted step time
  std::string limit;       ///< what one more layer would exceed: "memory" or "disk"
};

/// The placements compared: in memory (the layout's ZeRO stage), the optimizer's states
/// and gradients in the tier (ZeRO 2 at least), everything in the tier (ZeRO 3).
std::vector<Placement> capacity_placements(int zero);

/// For each placement, the most layers (a multiple of layout.pp) of `m`'s width that
/// train on `layout` with full recomputation within `memory_bytes` of peak RSS per rank
/// (the device's total and the cluster's process base) and `disk_bytes` of tier files
/// per rank; the search stops at `max_layers`.
std::vector<CapacityRow> largest_models(const PlanModel& m, Layout layout, const Cluster& cluster,
                                        double memory_bytes, double disk_bytes,
                                        int64_t max_layers = 1 << 16);

}  // namespace trident::plan
