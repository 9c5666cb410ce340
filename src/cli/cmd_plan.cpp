// `trident plan CONFIG --devices N`: predicts memory per device and step time of every
// layout of CONFIG's model on N devices of a cluster, and ranks those that fit; with
// --layout it evaluates exactly one layout.
#include <algorithm>  // std::min
#include <climits>    // INT_MAX
#include <iostream>   // std::cout
#include <sstream>    // std::istringstream

#include "cli/args.h"          // Args, UsageError
#include "cli/commands.h"      // cmd_plan
#include "cli/plan_inputs.h"   // plan_model, load_plan_cluster, auto_budget
#include "config/config.h"     // load_config, TrainConfig
#include "plan/auto_config.h"  // choose_configuration, auto_choice_text, overrides_of
#include "plan/capacity.h"     // largest_models
#include "plan/cluster.h"      // load_cluster, ClusterError
#include "plan/plan_report.h"  // plan_text, plan_json, evaluation_text, evaluation_json
#include "plan/planner.h"      // make_plan, evaluate, layout_problem

namespace trident::cli {

namespace {

std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text,
                                    std::vector<std::string>* words = nullptr) {
  std::vector<int64_t> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      size_t used = 0;
      out.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      if (!words) throw UsageError("--" + option + ": '" + item + "' is not an integer");
      words->push_back(item);
      out.push_back(-1);
    }
  }
  return out;
}

plan::Layout parse_layout(const std::string& text, const TrainConfig& c) {
  std::vector<std::string> words;
  const std::vector<int64_t> v = parse_int_list("layout", text, &words);
  if (v.size() < 3 || v.size() > 6)
    throw UsageError("--layout expects dp,pp,tp[,zero[,micro[,ckpt]]], got '" + text + "'");
  plan::Layout l;
  for (size_t i = 0; i < std::min<size_t>(v.size(), 5); ++i)
    if (v[i] < 0)
      throw UsageError("--layout: field " + std::to_string(i + 1) + " of '" + text +
                       "' must be a non-negative integer");
  l.dp = static_cast<int>(v[0]);
  l.pp = static_cast<int>(v[1]);
  l.tp = static_cast<int>(v[2]);
  l.zero = v.size() > 3 ? static_cast<int>(v[3]) : static_cast<int>(c.parallel.zero_stage);
  l.micro_batch = v.size() > 4 ? v[4] : c.train.micro_batch_size;
  l.checkpointing = c.parallel.activation_checkpointing == ActivationCheckpointing::kFull;
  l.selective = c.parallel.activation_checkpointing == ActivationCheckpointing::kSelective;
  l.sequence_parallel = c.parallel.sequence_parallel && l.tp > 1;
  l.ep = static_cast<int>(c.parallel.ep);  // the config's: --layout has no field for it
  l.cp = static_cast<int>(c.parallel.cp);  // likewise
  if (v.size() > 5) {
    const std::string ckpt = words.empty() ? std::to_string(v[5]) : words.back();
    if (ckpt == "full" || ckpt == "1")
      l.checkpointing = true;
    else if (ckpt == "none" || ckpt == "0")
      l.checkpointing = false;
    else
      throw UsageError("--layout: ckpt must be none or full, got '" + ckpt + "'");
  }
  return l;
}

int run_one_layout(const Args& args, const TrainConfig& config, const plan::PlanModel& m,
                   const plan::Cluster& cluster) {
  const plan::Layout l = parse_layout(args.get("layout"), config);
  const int devices = static_cast<int>(args.get_int("devices", l.world()));
  // Here a tp group may leave its node: the user asked for this layout.
  const std::string problem = plan::layout_problem(m, l, devices, INT_MAX);
  if (!problem.empty()) throw UsageError("--layout " + args.get("layout") + ": " + problem);
  const plan::Evaluation e = plan::evaluate(m, l, cluster);
  if (args.has("json")) {
    nlohmann::json out = plan::plan_json(m, cluster, devices, plan::Plan{}, 0);
    out["considered"] = 1;
    out["too_big"] = e.fits ? 0 : 1;
    out["layouts"] = nlohmann::json::array({plan::evaluation_json(m, e)});
    out["why"] = e.fits ? "the layout asked for" : "the layout asked for does not fit";
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << plan::evaluation_text(m, cluster, e);
  }
  return 0;
}

/// `--memory GB [--disk GB]`: the deepest model of the config's width that trains on one
/// machine of the cluster, for each placement of the model state.
int run_capacity(const Args& args, const TrainConfig& config, const plan::PlanModel& m,
                 const plan::Cluster& cluster) {
  plan::Layout l;
  if (args.has("layout")) {
    l = parse_layout(args.get("layout"), config);
  } else {
    l.dp = static_cast<int>(config.parallel.dp);
    l.pp = static_cast<int>(config.parallel.pp);
    l.tp = static_cast<int>(config.parallel.tp);
    l.zero = static_cast<int>(config.parallel.zero_stage);
    l.micro_batch = config.train.micro_batch_size;
    l.sequence_parallel = config.parallel.sequence_parallel && l.tp > 1;
    l.ep = static_cast<int>(config.parallel.ep);
    l.cp = static_cast<int>(config.parallel.cp);
  }
  const double memory = args.get_positive_double("memory", 1.0) * 1e9;
  const bool disk_given = args.has("disk");
  const double disk = disk_given ? args.get_positive_double("disk", 1.0) * 1e9 : 1e300;
  // The budgets are a machine's: its ranks share them.
  const int ranks = std::max(1, std::min(l.world(), cluster.devices_per_node));
  const std::vector<plan::CapacityRow> rows =
      plan::largest_models(m, l, cluster, memory / ranks, disk / ranks);
  if (args.has("json"))
    std::cout << plan::capacity_json(cluster, memory, disk_given ? disk : -1, ranks, rows).dump(2)
              << "\n";
  else
    std::cout << plan::capacity_text(m, l, cluster, memory, disk_given ? disk : -1, ranks, rows);
  return rows.back().layers > 0 ? 0 : 1;
}

/// `--auto`: the configuration `trident train --auto` would choose on --devices ranks.
int run_auto(const Args& args, const TrainConfig& config, const plan::PlanModel& m,
             const plan::Cluster& cluster) {
  if (!args.has("devices")) throw UsageError("--auto needs --devices N");
  const int devices = static_cast<int>(args.get_int("devices", 0));
  if (devices < 1) throw UsageError("--devices must be at least 1");
  const plan::AutoBudget budget =
      auto_budget(args, config, devices, std::min(devices, cluster.devices_per_node),
                  cluster.usable_memory_bytes());
  // --top K: the K best the config accepts, which a measurement of the choice compares.
  const size_t top = static_cast<size_t>(std::max<int64_t>(2, args.get_int("top", 2)));
  const plan::AutoChoice choice = plan::choose_configuration(
      m, cluster, budget, config_accepts(args.positional[0], args.sets, devices), top);
  std::cout << plan::auto_choice_text(choice, budget);
  if (choice.ranked.empty()) return 1;
  if (args.has("top")) {
    for (size_t i = 0; i < std::min(top, choice.ranked.size()); ++i) {
      const plan::AutoCandidate& c = choice.ranked[i];
      // The peak holds with the allocator the candidate's keys set: one picked from this
      // list by hand needs it too.
      std::cout << "auto: #" << i + 1 << " " << c.name() << ": predicted step "
                << c.evaluation.time.total() << " s, peak " << c.peak / 1e9 << " GB"
                << plan::release_note(c) << "\n";
    }
  }
  std::cout << "auto: the choice as config keys:";
  for (const std::string& key : plan::overrides_of(choice.ranked.front()))
    std::cout << " --set " << key;
  std::cout << "\n";
  return 0;
}

}  // namespace

int cmd_plan(const Args& args) {
  const TrainConfig config = load_config(args.positional[0], args.sets, 0);
  const plan::PlanModel m = plan_model(config);
  const plan::Cluster cluster = load_plan_cluster(args, m);
  if (args.has("auto")) return run_auto(args, config, m, cluster);
  if (args.has("memory")) return run_capacity(args, config, m, cluster);
  if (args.has("disk")) throw UsageError("--disk GB goes with --memory GB");
  if (args.has("layout")) return run_one_layout(args, config, m, cluster);

  if (!args.has("devices")) throw UsageError("--devices N is required (or give --layout)");
  const int devices = static_cast<int>(args.get_int("devices", 0));
  if (devices < 1) throw UsageError("--devices must be at least 1");
  const int top = static_cast<int>(args.get_int("top", 10));
  if (top < 1) throw UsageError("--top must be at least 1");
  plan::SearchSpace space;
  if (args.has("zero-stages")) {
    space.zero_stages.clear();
    for (int64_t s : parse_int_list("zero-stages", args.get("zero-stages"))) {
      if (s < 0 || s > 3)
        throw UsageError("--zero-stages: stage " + std::to_string(s) +
                         " does not exist; use 0, 1, 2 or 3");
      space.zero_stages.push_back(static_cast<int>(s));
    }
  }
  const plan::Plan plan = plan::make_plan(m, cluster, devices, space);
  if (args.has("json"))
    std::cout << plan::plan_json(m, cluster, devices, plan, top).dump(2) << "\n";
  else
    std::cout << plan::plan_text(m, cluster, devices, plan, top);
  return plan.ranked.empty() ? 1 : 0;
}

}  // namespace trident::cli
