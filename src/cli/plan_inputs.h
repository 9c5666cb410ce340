// What the planner is given by the commands that use it (`trident plan`, `trident train
// --auto`): the config's model as a PlanModel, the cluster file or preset with the command
// line's overrides, and this machine's memory and disk budgets per rank.
#pragma once
#include <string>  // std::string
#include <vector>  // std::vector

#include "cli/args.h"              // Args
#include "config/config.h"         // TrainConfig
#include "plan/auto_config.h"      // AutoBudget
#include "plan/cluster.h"          // Cluster
#include "plan/plan_model.h"       // PlanModel
#include "train/plan_of_config.h"  // plan_model

namespace trident::cli {

/// --cluster (a file or a preset name; default `fallback`), --devices-per-node and
/// --placement; throws UsageError naming what is wrong.
plan::Cluster load_plan_cluster(const Args& args, const plan::PlanModel& m,
                                const std::string& fallback = "h100");

/// Bytes of memory this machine gives each of its `ranks_on_node` ranks: the memory
/// cgroup's limit (v1 or v2) or MemAvailable, whichever is smaller, divided among them.
double machine_memory_per_rank(int ranks_on_node);

/// Bytes free on the file system of `dir` (its nearest existing ancestor), divided among
/// `ranks_on_node` ranks.
double disk_per_rank(const std::string& dir, int ranks_on_node);

/// The budget of `--auto`: --memory-per-rank GB (else `memory`), and the tier's disk when
/// the config names parallel.nvme_path (--disk-per-rank GB, else its free space) and
/// trains on the CPU (the only device the nvme tier serves).
plan::AutoBudget auto_budget(const Args& args, const TrainConfig& config, int ranks,
                             int ranks_on_node, double memory);

/// The check `--auto` gives the search: the config at `path` with `sets` and a candidate's
/// keys must pass the config's own validation for `world` ranks.
plan::CandidateCheck config_accepts(const std::string& path, const std::vector<std::string>& sets,
                                    int world);

}  // namespace trident::cli
