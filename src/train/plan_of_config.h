// The config's model, batch and the keys the planner reads, as a PlanModel: what `trident
// plan` and `--auto` plan, and what the trainer counts its FLOPs by.
#pragma once
#include "config/config.h"    // TrainConfig
#include "plan/plan_model.h"  // PlanModel

namespace trident {

plan::PlanModel plan_model(const TrainConfig& c);

}  // namespace trident
