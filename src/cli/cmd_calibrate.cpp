// `trident calibrate`: measures this machine as the planner sees a cluster (matmul rate by
// size and precision, memory bandwidth, bandwidth and latency between ranks) with every
// rank measuring at once (plan/calibrate/), and writes a cluster TOML for it.
#include <ATen/Parallel.h>  // at::set_num_threads

#include <algorithm>  // std::max
#include <chrono>     // std::chrono::seconds
#include <cstdio>     // std::snprintf
#include <fstream>    // std::ofstream
#include <iostream>   // std::cout
#include <memory>     // std::unique_ptr
#include <sstream>    // std::ostringstream
#include <thread>     // std::thread::hardware_concurrency
#include <vector>     // std::vector

#include "cli/args.h"                // Args, UsageError
#include "cli/commands.h"            // cmd_calibrate
#include "parallel/world.h"          // world_communicator
#include "plan/calibrate/measure.h"  // measure_once, median_of: the measurements
#include "plan/cluster.h"            // Cluster, cluster_to_toml

namespace trident::cli {

namespace {

/// --merge: the median of each figure over cluster files `trident calibrate` wrote.
int merge_calibrations(const Args& args) {
  const std::vector<std::string>& files = args.lists.at("merge");
  if (files.empty()) throw UsageError("--merge needs at least one cluster file");
  std::vector<plan::Cluster> rounds;
  for (const std::string& file : files) rounds.push_back(plan::load_cluster(file, {}));
  for (const plan::Cluster& c : rounds) {
    if (c.devices_per_node != rounds[0].devices_per_node ||
        c.machine_cores != rounds[0].machine_cores || c.cores_per_node != rounds[0].cores_per_node)
      throw UsageError("--merge: " + files[0] +
                       " and the other files describe different machines " +
                       "(devices_per_node, cores); merge calibrations of one cluster only");
  }
  plan::Cluster c = calibrate::median_of(rounds);
  c.name = args.get("name", rounds[0].name);
  std::string comment = "The median of each figure over " + std::to_string(files.size()) +
                        " calibrations by `trident calibrate`:";
  for (const std::string& file : files) comment += "\n  " + file;
  const std::string toml = plan::cluster_to_toml(c, comment + "\n");
  if (!args.has("out")) {
    std::cout << toml;
    return 0;
  }
  std::ofstream out(args.get("out"));
  out << toml;
  if (!out) throw UsageError("--out: cannot write " + args.get("out"));
  std::cout << "# wrote " << args.get("out") << " (the median of " << files.size()
            << " calibrations)\n";
  return 0;
}

}  // namespace

int cmd_calibrate(const Args& args) {
  if (args.has("merge")) return merge_calibrations(args);
  const std::unique_ptr<Communicator> world = world_communicator();
  const int size = world->size();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = static_cast<int>(args.get_int("threads", std::max(1, cores / size)));
  if (threads < 1) throw UsageError("--threads must be at least 1");
  at::set_num_threads(threads);
  const bool root = world->rank() == 0;
  std::ostringstream log;  // the measurements, as comment lines
  auto say = [&](const std::string& line) {
    if (root) std::cout << "# " << line << std::endl;
    log << line << "\n";
  };
  say("calibrating with " + std::to_string(size) + " ranks x " + std::to_string(threads) +
      " threads on " + std::to_string(cores) + " cores");

  const int rounds = static_cast<int>(args.get_int("rounds", 2));
  if (rounds < 1) throw UsageError("--rounds must be at least 1");
  // --quick: each figure timed for a fifth as long, rougher, for trying the tools.
  const double budget = args.has("quick") ? 0.2 : 1.0;
  std::vector<plan::Cluster> measured;
  for (int r = 0; r < rounds; ++r) {
    say("round " + std::to_string(r + 1) + " of " + std::to_string(rounds));
    const std::string disk = args.get("disk-dir", "/tmp");
    measured.push_back(
        calibrate::measure_once(*world, cores, say, disk == "none" ? "" : disk, budget));
    if (r + 1 < rounds) std::this_thread::sleep_for(std::chrono::seconds(5));  // spread out
  }
  plan::Cluster c = calibrate::median_of(measured);
  c.name = args.get("name", "here");
  char line[200];
  std::snprintf(line, sizeof line,
                "kept, of %d rounds, the median of each figure: %.1f GFLOP/s fp32 at 256, "
                "layer %.1f us, tp layer %.1f us, ends %.1f us, memory %.2f GB/s, disk %.2f GB/s",
                rounds, c.matmul_flops("fp32", 256) / 1e9, c.layer_overhead_us,
                c.layer_overhead_tp_us, c.ends_overhead_us, c.memory_gbps, c.disk_gbps);
  say(line);

  const std::string toml = plan::cluster_to_toml(
      c, "Measured by `trident calibrate` with " + std::to_string(size) + " ranks x " +
             std::to_string(threads) + " threads.\n" + log.str());
  if (!root) return 0;
  if (args.has("out")) {
    std::ofstream out(args.get("out"));
    out << toml;
    if (!out) throw UsageError("--out: cannot write " + args.get("out"));
    std::cout << "# wrote " << args.get("out") << "\n";
  } else {
    std::cout << toml;
  }
  return 0;
}

}  // namespace trident::cli
