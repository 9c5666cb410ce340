// The planner: enumerates the layouts of a job on N devices, predicts memory and step time
// for each, keeps those that fit, ranks them by step time, and says why the best wins.
#pragma once
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "plan/cluster.h"       // Cluster
#include "plan/memory_model.h"  // MemoryBreakdown
#include "plan/plan_model.h"    // PlanModel, Layout
#include "plan/time_model.h"    // TimeBreakdown

namespace trident::plan {

/// What the enumeration varies.
struct SearchSpace {
  std::vector<int> zero_stages = {0, 1, 2, 3};  ///< trident runs stages 0-3
  std::vector<bool> checkpointing = {false, true};
};

/// Why `layout` cannot run `m` on `devices` devices with `devices_per_node` per node, or
/// "" when it can: dp*pp*tp = devices, tp divides heads and fits in a node, pp divides
/// layers, the global batch divides into micro_batch * dp.
std::string layout_problem(const PlanModel& m, const Layout& layout, int devices,
                           int devices_per_node);

/// Every layout with no problem. dp = 1 is listed with ZeRO stage 0 only (the stages
/// differ only by sharding over dp); micro_batch runs over the divisors of global/dp.
std::vector<Layout> enumerate_layouts(const PlanModel& m, int devices, int devices_per_node,
                                      const SearchSpace& space = {});

/// One layout's prediction.
struct Evaluation {
  Layout layout;
  MemoryBreakdown memory;
  TimeBreakdown time;
  bool fits = false;
  bool tp_inter_node = false, dp_inter_node = false, pp_inter_node = false;
  double tokens_per_s = 0;
};

Evaluation evaluate(const PlanModel& m, const Layout& layout, const Cluster& cluster);

/// The result of planning: layouts that fit, fastest first, and what was left out.
struct Plan {
  std::vector<Evaluation> ranked;  ///< those that fit, by step time (then memory)
  int considered = 0;
  int too_big = 0;      ///< considered but over the device memory
  Evaluation smallest;  ///< the least memory of all considered (when none fits)
  std::string why;      ///< a sentence on why ranked[0] wins (or why none fits)
};

/// Ranks every enumerated layout of `m` on `devices` devices of `cluster`.
Plan make_plan(const PlanModel& m, const Cluster& cluster, int devices,
               const SearchSpace& space = {});

/// "1.2 GB", "340.5 MB", "12.0 kB".
std::string bytes_text(double bytes);

/// The part of the step where `b` loses most time to `a`, and the seconds it loses there
/// (negative when `b` is faster in every part).
std::pair<std::string, double> largest_part_difference(const TimeBreakdown& a,
                                                       const TimeBreakdown& b);

/// The part of the step where `b` loses most time to `a`: "dp communication (+0.12 s)".
std::string biggest_difference(const TimeBreakdown& a, const TimeBreakdown& b);

/// A sentence on why `plan.ranked[0]` wins, e.g. "fits without checkpointing (31.2 of 72 GB);
/// tp 2 within a node; no pipeline bubble; ...".
std::string explain_best(const Plan& plan, const Cluster& cluster);

}  // namespace trident::plan
