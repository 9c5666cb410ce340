// auto_overrides: the planner's choice on rank 0, broadcast as config keys; with --measure,
// the fastest measured of its best few.
#include "cli/auto_train.h"

#include <ATen/ATen.h>  // at::full

#include <algorithm>  // std::max
#include <iostream>   // std::cout
#include <sstream>    // std::istringstream

#include "cli/auto_measure.h"       // measure_fastest
#include "cli/plan_inputs.h"        // plan_model, load_plan_cluster, auto_budget
#include "config/config.h"          // load_config
#include "config/input_error.h"     // InputError
#include "parallel/agreement.h"     // run_agreed
#include "parallel/communicator.h"  // Communicator, ReduceOp
#include "parallel/world.h"         // ranks_per_node
#include "plan/auto_config.h"       // choose_configuration, auto_choice_text, overrides_of

namespace trident::cli {

namespace {

/// The candidates as text, one block each: name, predicted seconds, then its keys.
std::string encode(const std::vector<plan::AutoCandidate>& ranked, size_t count) {
  std::ostringstream out;
  out.precision(17);
  for (size_t i = 0; i < std::min(count, ranked.size()); ++i) {
    out << ranked[i].name() << "\n" << ranked[i].evaluation.time.total() << "\n";
    for (const std::string& key : plan::overrides_of(ranked[i])) out << key << "\n";
    out << "\n";
  }
  return out.str();
}

std::vector<MeasuredCandidate> decode(const std::string& text,
                                      const std::vector<std::string>& sets) {
  std::vector<MeasuredCandidate> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    MeasuredCandidate c;
    c.name = line;
    std::getline(lines, line);
    c.predicted_s = std::stod(line);
    c.sets = sets;
    // A resolved run chooses nothing again.
    c.sets.emplace_back("parallel.auto=false");
    while (std::getline(lines, line) && !line.empty()) c.sets.push_back(line);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

bool auto_requested(const Args& args, Communicator& job) {
  if (args.has("auto")) return true;
  bool automatic = false;
  // Checked without a world size: the layout keys may be what parallel.auto chooses.
  run_agreed(job,
             [&] { automatic = load_config(args.positional[0], args.sets, 0).parallel.automatic; });
  return automatic;
}

std::vector<std::string> auto_overrides(const Args& args, Communicator& job) {
  const int per_node = ranks_per_node();
  const int measure = static_cast<int>(args.get_int("measure", 0));
  if (args.has("measure") && measure < 1)
    throw UsageError("--measure expects a positive number of configurations to time, got '" +
                     args.get("measure") + "'");
  // Every node's memory counts: the choice must fit the rank that has least.
  at::Tensor least = at::full({1}, -machine_memory_per_rank(per_node), at::kDouble);
  job.all_reduce(least, ReduceOp::kMax)->wait();
  const double measured = -least.item<double>();
  std::string chosen;
  run_agreed(job, [&] {
    if (job.rank() != 0) return;
    if (!args.has("cluster"))
      throw UsageError(
          "--auto (or parallel.auto = true) needs this machine's calibration: run `trident "
          "calibrate --out FILE --disk-dir DIR` once (under mpirun as you will train) and pass "
          "--cluster FILE");
    const TrainConfig config = load_config(args.positional[0], args.sets, 0);
    const plan::PlanModel m = plan_model(config);
    const plan::Cluster cluster = load_plan_cluster(args, m);
    const double memory =
        config.train.device == Device::kCpu ? measured : cluster.usable_memory_bytes();
    const plan::AutoBudget budget = auto_budget(args, config, job.size(), per_node, memory);
    const size_t keep = std::max<size_t>(2, static_cast<size_t>(measure));
    const plan::AutoChoice choice = plan::choose_configuration(
        m, cluster, budget, config_accepts(args.positional[0], args.sets, job.size()), keep);
    std::cout << plan::auto_choice_text(choice, budget, measure > 0) << std::flush;
    if (choice.ranked.empty())
      throw InputError("trident train --auto: nothing fits on " + std::to_string(job.size()) +
                       " ranks; " + choice.suggestion);
    chosen = encode(choice.ranked, measure > 0 ? static_cast<size_t>(measure) : 1);
  });
  std::vector<MeasuredCandidate> candidates = decode(job.broadcast_bytes(chosen, 0), args.sets);
  if (measure == 0) return candidates.front().sets;
  const size_t best = measure_fastest(args.positional[0], candidates, job);
  return candidates[best].sets;
}

}  // namespace trident::cli
