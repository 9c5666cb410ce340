// How a plan is shown: a text table (memory and time by part) and JSON (bytes, seconds).
#pragma once
#include <nlohmann/json.hpp>  // nlohmann::json
#include <string>             // std::string
#include <vector>             // std::vector

#include "plan/capacity.h"    // CapacityRow
#include "plan/cluster.h"     // Cluster
#include "plan/plan_model.h"  // PlanModel
#include "plan/planner.h"     // Plan, Evaluation

namespace trident::plan {

/// The header lines: the model, the devices and the cluster.
std::string describe_job(const PlanModel& m, const Cluster& c, int devices);

/// A table of the first `top` ranked layouts, then the sentence on the best.
std::string plan_text(const PlanModel& m, const Cluster& c, int devices, const Plan& plan, int top);

/// One layout in detail (for `trident plan --layout`), fitting or not.
std::string evaluation_text(const PlanModel& m, const Cluster& c, const Evaluation& e);

/// One layout as JSON: the layout, memory_bytes by part, time_s by part, links.
nlohmann::json evaluation_json(const PlanModel& m, const Evaluation& e);

/// The plan as JSON: model, cluster, devices, considered/too_big, layouts (first `top`), why.
nlohmann::json plan_json(const PlanModel& m, const Cluster& c, int devices, const Plan& plan,
                         int top);

/// `trident plan --memory`: the deepest model of each placement on `layout`, for a
/// machine of `memory` bytes and `disk` bytes (< 0: unbounded) shared by `ranks` ranks.
std::string capacity_text(const PlanModel& m, const Layout& layout, const Cluster& c, double memory,
                          double disk, int ranks, const std::vector<CapacityRow>& rows);
nlohmann::json capacity_json(const Cluster& c, double memory, double disk, int ranks,
                             const std::vector<CapacityRow>& rows);

}  // namespace trident::plan
