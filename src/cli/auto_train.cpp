// auto_overrides: the planner's choice on rank 0, broadcast as config keys.
#include "cli/auto_train.h"

#include <ATen/ATen.h>  // at::full

#include <iostream>  // std::cout
#include <sstream>   // std::istringstream

#include "cli/plan_inputs.h"        // plan_model, load_plan_cluster, auto_budget
#include "config/config.h"          // load_config
#include "config/input_error.h"     // InputError
#include "parallel/agreement.h"     // run_agreed
#include "parallel/communicator.h"  // Communicator, ReduceOp
#include "parallel/world.h"         // ranks_per_node
#include "plan/auto_config.h"       // choose_configuration, auto_choice_text, overrides_of

namespace trident::cli {

std::vector<std::string> auto_overrides(const Args& args, Communicator& job) {
  const int per_node = ranks_per_node();
  // Every node's memory counts: the choice must fit the rank that has least.
  at::Tensor least = at::full({1}, -machine_memory_per_rank(per_node), at::kDouble);
  job.all_reduce(least, ReduceOp::kMax)->wait();
  const double measured = -least.item<double>();
  std::string chosen;
  run_agreed(job, [&] {
    if (job.rank() != 0) return;
    if (!args.has("cluster"))
      throw UsageError(
          "--auto needs this machine's calibration: run `trident calibrate --out FILE "
          "--disk-dir DIR` once (under mpirun as you will train) and pass --cluster FILE");
    // Checked without a world size: the layout keys are what --auto chooses.
    const TrainConfig config = load_config(args.positional[0], args.sets, 0);
    const plan::PlanModel m = plan_model(config);
    const plan::Cluster cluster = load_plan_cluster(args, m);
    const double memory =
        config.train.device == Device::kCpu ? measured : cluster.usable_memory_bytes();
    const plan::AutoBudget budget = auto_budget(args, config, job.size(), per_node, memory);
    const plan::AutoChoice choice = plan::choose_configuration(
        m, cluster, budget, config_accepts(args.positional[0], args.sets, job.size()));
    std::cout << plan::auto_choice_text(choice, budget) << std::flush;
    if (choice.ranked.empty())
      throw InputError("trident train --auto: nothing fits on " + std::to_string(job.size()) +
                       " ranks; " + choice.suggestion);
    for (const std::string& key : plan::overrides_of(choice.ranked.front())) chosen += key + "\n";
  });
  chosen = job.broadcast_bytes(chosen, 0);
  std::vector<std::string> sets = args.sets;
  std::istringstream lines(chosen);
  for (std::string line; std::getline(lines, line);) sets.push_back(line);
  return sets;
}

}  // namespace trident::cli
